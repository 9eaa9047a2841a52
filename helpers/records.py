"""The TFRecord container format, in plain Python.

A TFRecord file is a sequence of records, each framed as::

    uint64  length              (little endian)
    uint32  masked_crc32c(length bytes)
    byte    data[length]
    uint32  masked_crc32c(data)

where ``masked_crc(x) = ((crc >> 15 | crc << 17) + 0xa282ead8) mod 2**32`` and
CRC32C is the Castagnoli CRC. Nothing else: no header, no index, no footer.
That is why a file cut exactly at a record boundary looks like a clean,
shorter file, why :func:`verify` compares counts against a manifest, and why the
converter writes an offset index beside each shard (:mod:`helpers.record_index`).

This module holds the framing (CRCs, reader, writer) and the file-name rules;
``verify`` (:mod:`helpers.verify`), the index and ``RecordSource``
(:mod:`helpers.record_index`) and the CLI (:mod:`helpers.records_cli`) build on it
and are importable from here too. CLI::

    python -m helpers.records verify PATH... [--manifest manifest.json]
    python -m helpers.records inspect PATH [--limit N]
    python -m helpers.records count DIR
    python -m helpers.records index SHARD...
"""

from __future__ import annotations

import gzip
import os
import struct
import sys
import types
from collections.abc import Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any, BinaryIO

from helpers.util import sha256_file

__all__ = [
    "INDEX_SUFFIX",
    "LFS_POINTER_PREFIX",
    "RecordError",
    "RecordSource",
    "ShardReport",
    "crc32c",
    "crc32c_py",
    "frame_record",
    "index_name",
    "inspect_shard",
    "is_lfs_pointer",
    "is_shard_name",
    "load_features",
    "main",
    "masked_crc",
    "read_index",
    "read_records",
    "scan_spans",
    "sha256_file",
    "unmask_crc",
    "verify",
    "verify_paths",
    "write_index",
    "write_records",
]

if TYPE_CHECKING:  # defined in the modules that build on this one (see __getattr__)
    from helpers.record_index import RecordSource, read_index, scan_spans, write_index
    from helpers.records_cli import inspect_shard, main
    from helpers.verify import ShardReport, verify, verify_paths

    inspect = inspect_shard

# Defined in the modules that build on this one, importable from here as before.
_ELSEWHERE = {
    "ShardReport": "helpers.verify",
    "verify": "helpers.verify",
    "verify_paths": "helpers.verify",
    "RecordSource": "helpers.record_index",
    "read_index": "helpers.record_index",
    "scan_spans": "helpers.record_index",
    "write_index": "helpers.record_index",
    "inspect_shard": "helpers.records_cli",
    "main": "helpers.records_cli",
}


def __getattr__(name: str) -> Any:
    if name == "inspect":  # the old name; it shadowed the stdlib module in ``import *``
        name = "inspect_shard"
    if name in _ELSEWHERE:
        import importlib

        return getattr(importlib.import_module(_ELSEWHERE[name]), name)
    raise AttributeError(f"module 'helpers.records' has no attribute {name!r}")


_MASK_DELTA = 0xA282EAD8
_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")


class RecordError(ValueError):
    """A framing problem: names the file, the record index and the byte offset."""

    def __init__(self, path: str, index: int, offset: int, problem: str):
        self.path, self.index, self.offset, self.problem = path, index, offset, problem
        super().__init__(f"{path}: record {index} at byte {offset}: {problem}")


#: The first line of a git-LFS pointer file: what a clone without ``git lfs pull`` holds
#: in place of each large file (a common cause of "corrupted" images and shards).
LFS_POINTER_PREFIX = b"version https://git-lfs.github.com/spec/v1"
INDEX_SUFFIX = ".idx"
LFS_POINTER_SHARD = (
    "a git-LFS pointer file, not the shard (the repository was cloned without the LFS "
    "objects: run `git lfs pull`)"
)


def is_lfs_pointer(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a git-LFS pointer, not the real content."""
    return head.startswith(LFS_POINTER_PREFIX)


def is_shard_name(name: str) -> bool:
    """Whether a file name is a TFRecord shard: ``*.tfrecord*``, not hidden, not a temporary.

    The one test used by the converter, ``verify`` and the pipeline (an index file,
    ``*.idx``, never contains ``.tfrecord``; see :func:`index_name`).
    """
    return (
        ".tfrecord" in name
        and not name.startswith(".")
        and not name.endswith((".tmp", ".partial", INDEX_SUFFIX))
    )


def index_name(shard: str) -> str:
    """The offset index's file name for a shard: ``.tfrecord`` dropped, ``.idx`` appended.

    ``train-00000-of-00004.tfrecord`` -> ``train-00000-of-00004.idx``, so the pair
    matches the ``tfrecord`` package's ``data_pattern="{}.tfrecord"`` /
    ``index_pattern="{}.idx"`` and the index is never mistaken for a shard.
    """
    folder, name = os.path.split(os.fspath(shard))
    stem = name.replace(".tfrecord", "", 1)
    return os.path.join(folder, stem + INDEX_SUFFIX)


def _make_table() -> list[int]:
    poly = 0x82F63B78  # CRC-32C (Castagnoli), reflected
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _make_table()


def crc32c_py(data: bytes) -> int:
    """CRC-32C of ``data``, one table lookup per byte (slow: for teaching and fallback).

    Args:
      data: the bytes to checksum.

    Returns:
      The CRC as an unsigned 32-bit integer.
    """
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


try:  # the C implementation (hardware-accelerated when the CPU has SSE4.2)
    import google_crc32c as _gcrc

    def crc32c(data: bytes) -> int:
        """CRC-32C of ``data`` (C implementation)."""
        return _gcrc.value(bytes(data))

except ImportError:  # pragma: no cover - exercised only without the wheel
    crc32c = crc32c_py


def masked_crc(data: bytes) -> int:
    """The masked CRC-32C that TFRecord stores (masking protects CRCs of CRCs)."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def unmask_crc(masked: int) -> int:
    """Invert :func:`masked_crc`'s masking step."""
    rot = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


def frame_record(data: bytes) -> bytes:
    """One record's bytes on disk: header, data and footer.

    Args:
      data: the payload (usually a serialized ``tf.train.Example``).

    Returns:
      ``len(data) + 16`` bytes.
    """
    length = struct.pack("<Q", len(data))
    # One join copies the (possibly 100 KB) payload once; chained "+" copies it twice.
    return b"".join(
        (length, struct.pack("<I", masked_crc(length)), data, struct.pack("<I", masked_crc(data)))
    )


def _open(path: str | os.PathLike, mode: str, compression: str | None) -> IO[bytes]:
    if compression in (None, ""):
        return open(path, mode)  # noqa: SIM115
    if compression.upper() == "GZIP":
        return gzip.open(path, mode)
    raise ValueError(f"compression must be None or 'GZIP', got {compression!r}")


def write_records(
    path: str | os.PathLike, records: Iterable[bytes], compression: str | None = None
) -> int:
    """Write records with the TFRecord framing (readable by ``tf.data.TFRecordDataset``).

    Args:
      path: output file.
      records: payloads.
      compression: ``None`` or ``"GZIP"``.

    Returns:
      The number of records written.
    """
    count = 0
    with _open(path, "wb", compression) as f:
        for data in records:
            f.write(frame_record(bytes(data)))
            count += 1
    return count


def _read_exact(f: BinaryIO, n: int) -> bytes:
    chunks = []
    while n:
        chunk = f.read(n)
        if not chunk:
            break
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_records(
    path: str | os.PathLike,
    compression: str | None = None,
    check_crc: bool = True,
    fileobj: BinaryIO | None = None,
) -> Iterator[bytes]:
    """Yield each record's payload, checking both CRCs.

    Args:
      path: the TFRecord file (also used in error messages when ``fileobj`` is given).
      compression: ``None`` or ``"GZIP"``.
      check_crc: verify the length and data CRCs.
      fileobj: read from this open binary file instead of opening ``path``.

    Yields:
      Record payloads, in file order.

    Raises:
      RecordError: truncated header / data / footer or a CRC mismatch, naming the
        file, the record index and its byte offset.
    """
    name = os.fspath(path)
    f = fileobj if fileobj is not None else _open(path, "rb", compression)
    try:
        index = offset = 0
        while True:
            try:
                header = _read_exact(f, _HEADER.size)
            except (OSError, EOFError, gzip.BadGzipFile) as err:
                raise RecordError(
                    name, index, offset, f"cannot read ({err}); is the compression right?"
                ) from None
            if not header:
                return
            if len(header) < _HEADER.size:
                raise RecordError(
                    name, index, offset, f"truncated header ({len(header)} of 12 bytes)"
                )
            length, length_crc = _HEADER.unpack(header)
            if check_crc and masked_crc(header[:8]) != length_crc:
                hint = ""
                if header[:2] == b"\x1f\x8b":
                    hint = " (this looks like a GZIP file: read it with compression='GZIP')"
                raise RecordError(name, index, offset, f"length CRC mismatch{hint}")
            data = _read_exact(f, length)
            if len(data) < length:
                raise RecordError(
                    name, index, offset, f"truncated data ({len(data)} of {length} bytes)"
                )
            footer = _read_exact(f, 4)
            if len(footer) < 4:
                raise RecordError(name, index, offset, "truncated data CRC")
            if check_crc and masked_crc(data) != _FOOTER.unpack(footer)[0]:
                raise RecordError(
                    name, index, offset, "data CRC mismatch (the record is corrupted)"
                )
            yield data
            index += 1
            offset += length + 16
    finally:
        if fileobj is None:
            f.close()


def load_features(light: bool = False) -> types.ModuleType:
    """Import :mod:`helpers.features`, optionally without the TensorFlow runtime.

    ``helpers.features`` needs only TensorFlow's generated protobuf modules
    (``tensorflow/core/example/*_pb2.py``), but importing them normally runs
    ``tensorflow/__init__.py``, which costs seconds and hundreds of MB. With
    ``light=True`` (only for processes that never import TensorFlow itself:
    converter workers, the ``helpers.records`` / ``helpers.convert`` CLIs) the
    parent packages ``tensorflow`` and ``tensorflow.core`` are registered as
    plain namespace modules first, so only the protobuf files load. The bytes
    produced are identical (same modules, same protobuf runtime); a test in
    ``tests/convert/test_encode.py`` checks it.

    Args:
      light: skip ``tensorflow/__init__.py`` if TensorFlow is not imported yet.
        Never use it in a process that may import TensorFlow later (a notebook):
        ``import tensorflow`` would then find the placeholder module.

    Returns:
      The :mod:`helpers.features` module.
    """
    if "helpers.features" in sys.modules:
        return sys.modules["helpers.features"]
    if light and "tensorflow" not in sys.modules:
        import importlib.util

        spec = importlib.util.find_spec("tensorflow")
        locations = list(spec.submodule_search_locations or []) if spec else []
        if locations:
            base = locations[0]
            for name, sub in (("tensorflow", ""), ("tensorflow.core", "core")):
                module = types.ModuleType(name)
                module.__path__ = [os.path.join(base, sub) if sub else base]
                sys.modules[name] = module
    import helpers.features as features

    return features


if __name__ == "__main__":
    import helpers.records_cli as _cli

    _cli.LIGHT = True  # this process never needs the TensorFlow runtime
    sys.exit(_cli.main())
