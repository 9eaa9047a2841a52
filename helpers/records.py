"""The TFRecord container format, in plain Python.

A TFRecord file is a sequence of records, each framed as::

    uint64  length              (little endian)
    uint32  masked_crc32c(length bytes)
    byte    data[length]
    uint32  masked_crc32c(data)

where ``masked_crc(x) = ((crc >> 15 | crc << 17) + 0xa282ead8) mod 2**32`` and
CRC32C is the Castagnoli CRC. Nothing else: no header, no index, no footer.
That is why a file cut exactly at a record boundary looks like a clean,
shorter file, and why :func:`verify` compares counts against a manifest.

CLI::

    python -m helpers.records verify PATH... [--manifest manifest.json]
    python -m helpers.records inspect PATH [--limit N]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import struct
import sys
import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO

__all__ = [
    "RecordError",
    "ShardReport",
    "crc32c",
    "crc32c_py",
    "frame_record",
    "inspect",
    "load_features",
    "main",
    "masked_crc",
    "read_records",
    "unmask_crc",
    "verify",
    "verify_paths",
    "write_records",
]

_MASK_DELTA = 0xA282EAD8
_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")


class RecordError(ValueError):
    """A framing problem: names the file, the record index and the byte offset."""

    def __init__(self, path: str, index: int, offset: int, problem: str):
        self.path, self.index, self.offset, self.problem = path, index, offset, problem
        super().__init__(f"{path}: record {index} at byte {offset}: {problem}")


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


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


@dataclass
class ShardReport:
    """The result of verifying one shard."""

    path: str
    records: int = 0
    bytes: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def verify(
    path: str | os.PathLike,
    expected: dict[str, Any] | None = None,
    compression: str | None = None,
) -> ShardReport:
    """Read a whole shard, check every CRC and, if given, its manifest entry.

    Args:
      path: the shard.
      expected: the shard's manifest entry (keys ``records``, ``bytes``,
        ``sha256`` and optionally ``record_sha256``: a list with one hex digest
        per record, which catches a flipped bit that still decodes).
      compression: ``None`` or ``"GZIP"``.

    Returns:
      A :class:`ShardReport`; ``report.errors`` names every problem found.
    """
    report = ShardReport(path=os.fspath(path))
    if not os.path.exists(path):
        report.errors.append(f"{path}: missing")
        return report
    report.bytes = os.path.getsize(path)
    record_hashes = (expected or {}).get("record_sha256")
    try:
        for i, data in enumerate(read_records(path, compression=compression)):
            if record_hashes is not None and i < len(record_hashes):
                if hashlib.sha256(data).hexdigest() != record_hashes[i]:
                    report.errors.append(
                        f"{path}: record {i}: payload differs from the manifest's sha256"
                    )
            report.records += 1
    except RecordError as err:
        report.errors.append(str(err))
    if expected:
        if "records" in expected and expected["records"] != report.records:
            hint = ""
            if not report.errors and report.records < expected["records"]:
                # TF's reader is silent here: the file simply looks shorter.
                hint = (
                    f" (the file ends cleanly after record {report.records - 1}: cut at a "
                    "record boundary?)"
                )
            report.errors.append(
                f"{path}: {report.records} records readable, manifest says "
                f"{expected['records']}{hint}"
            )
        if "bytes" in expected and expected["bytes"] != report.bytes:
            report.errors.append(f"{path}: {report.bytes} bytes, manifest says {expected['bytes']}")
        if "sha256" in expected and not report.errors and sha256_file(path) != expected["sha256"]:
            report.errors.append(f"{path}: sha256 differs from the manifest")
    return report


def verify_paths(
    paths: list[str], manifest: str | os.PathLike | None = None, compression: str | None = None
) -> list[ShardReport]:
    """Verify shards; with a manifest also check for missing and stray shards.

    Args:
      paths: shard files or directories (a directory means every shard the
        manifest lists, plus any ``*.tfrecord*`` file in it).
      manifest: ``manifest.json`` written by :mod:`helpers.convert`; when
        ``None`` and a directory holding one is given, that one is used.
      compression: ``None`` or ``"GZIP"``.

    Returns:
      One report per shard (plus pseudo-reports for missing / stray shards).
    """
    files: list[Path] = []
    manifest_data: dict[str, Any] | None = None
    for p in map(Path, paths):
        if p.is_dir():
            if manifest is None and (p / "manifest.json").exists():
                manifest = p / "manifest.json"
            files.extend(
                sorted(
                    q for q in p.iterdir() if ".tfrecord" in q.name and not q.name.startswith(".")
                )
            )
        else:
            files.append(p)
    if manifest is not None:
        manifest_data = json.loads(Path(manifest).read_text())
        compression = compression or manifest_data.get("compression")
    entries = {s["file"]: s for s in (manifest_data or {}).get("shards", [])}
    reports: list[ShardReport] = []
    seen = set()
    for f in files:
        seen.add(f.name)
        entry = entries.get(f.name)
        if manifest_data is not None and entry is None:
            reports.append(
                ShardReport(str(f), errors=[f"{f}: not listed in the manifest (a stray shard?)"])
            )
            continue
        reports.append(verify(f, entry, compression))
    if manifest_data is not None:
        base = Path(manifest).parent
        for name in entries:
            if name not in seen:
                reports.append(
                    ShardReport(
                        str(base / name),
                        errors=[f"{base / name}: listed in the manifest but missing"],
                    )
                )
    return reports


def _describe_value(kind: str | None, values: list[Any]) -> str:
    if kind is None:
        return "(empty)"
    shown = []
    for v in values[:4]:
        if isinstance(v, bytes):
            shown.append(repr(v[:24]) + (f"... ({len(v)} bytes)" if len(v) > 24 else ""))
        else:
            shown.append(repr(v))
    more = f" ... ({len(values)} values)" if len(values) > 4 else ""
    return "[" + ", ".join(shown) + "]" + more


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
    ``tests/test_convert.py`` checks it.

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


def inspect(
    path: str | os.PathLike, limit: int = 1, compression: str | None = None
) -> dict[str, Any]:
    """Summarise a shard: record count, feature names / kinds / lengths, sample values.

    Args:
      path: the shard.
      limit: how many sample records to describe.
      compression: ``None`` or ``"GZIP"``.

    Returns:
      ``{"path", "records", "bytes", "features": {name: {"kind", "lengths"}}, "samples": [...]}``.
    """
    features = load_features(light=_LIGHT)
    Example, feature_kind = features.Example, features.feature_kind

    features: dict[str, dict[str, Any]] = {}
    samples: list[dict[str, str]] = []
    count = 0
    for data in read_records(path, compression=compression):
        example = Example()
        example.ParseFromString(data)
        sample = {}
        for key, feat in sorted(example.features.feature.items()):
            kind = feature_kind(feat)
            values = list(getattr(feat, kind).value) if kind else []
            info = features.setdefault(key, {"kind": kind, "lengths": set()})
            info["lengths"].add(len(values))
            if count < limit:
                sample[key] = _describe_value(kind, values)
        if count < limit:
            samples.append(sample)
        count += 1
    for info in features.values():
        info["lengths"] = sorted(info["lengths"])
    return {
        "path": os.fspath(path),
        "records": count,
        "bytes": os.path.getsize(path),
        "features": features,
        "samples": samples,
    }


def _guess_compression(path: str, given: str | None) -> str | None:
    if given:
        return None if given.lower() == "none" else given.upper()
    return "GZIP" if path.endswith((".gz", ".gzip")) else None


_LIGHT = False  # True when run as ``python -m helpers.records`` (never needs the TF runtime)


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m helpers.records", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser("verify", help="check every CRC (and the manifest's counts/checksums)")
    v.add_argument("paths", nargs="+", help="shard files or a converter output directory")
    v.add_argument("--manifest", help="manifest.json (default: the one in a given directory)")
    v.add_argument(
        "--compression", help="GZIP or none (default: from the manifest or the file name)"
    )
    i = sub.add_parser("inspect", help="record count, feature names/types and a sample")
    i.add_argument("path")
    i.add_argument("--limit", type=int, default=1, help="sample records to show (default 1)")
    i.add_argument("--compression", help="GZIP or none (default: from the file name)")
    args = parser.parse_args(argv)

    if args.command == "verify":
        comp = (
            args.compression.upper()
            if args.compression and args.compression.lower() != "none"
            else None
        )
        try:
            reports = verify_paths(args.paths, args.manifest, comp)
        except (OSError, json.JSONDecodeError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        if not reports:
            print("error: no shards found in " + " ".join(args.paths), file=sys.stderr)
            return 2
        bad = [r for r in reports if not r.ok]
        for r in reports:
            status = "ok " if r.ok else "BAD"
            print(f"{status} {r.path}: {r.records} records, {r.bytes} bytes")
            for e in r.errors:
                print(f"    {e}")
        total = sum(r.records for r in reports)
        print(f"{len(reports)} shards, {total} records, {len(bad)} with problems")
        return 1 if bad else 0

    path = args.path
    try:
        info = inspect(path, args.limit, _guess_compression(path, args.compression))
    except (OSError, RecordError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    out = io.StringIO()
    print(f"{info['path']}: {info['records']} records, {info['bytes']} bytes", file=out)
    for key, feat in sorted(info["features"].items()):
        print(f"  {key:<24} {str(feat['kind']):<11} lengths {feat['lengths']}", file=out)
    for n, sample in enumerate(info["samples"]):
        print(f"record {n}:", file=out)
        for key, desc in sample.items():
            print(f"  {key} = {desc}", file=out)
    print(out.getvalue(), end="")
    return 0


if __name__ == "__main__":
    _LIGHT = True
    sys.exit(main())
