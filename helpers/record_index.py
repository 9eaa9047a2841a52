"""Offset indexes and random access: read record N without reading the ones before it.

An index is a text file beside its shard with one ``offset length`` line per
record (``length`` counts the whole framed record, 16 bytes more than the
payload): the layout of NVIDIA DALI's ``tfrecord2idx`` and of the ``tfrecord``
package's ``create_index``, so their readers use the converter's indexes as they
are. :class:`RecordSource` serves the i-th record of a converted dataset through
them, in the random-access protocol Grain uses. Nothing here imports TensorFlow.
"""

from __future__ import annotations

import bisect
import contextlib
import operator
import os
import threading
from array import array
from typing import Any, SupportsIndex

from helpers.records import (
    _HEADER,
    LFS_POINTER_PREFIX,
    LFS_POINTER_SHARD,
    RecordError,
    _read_exact,
    index_name,
    is_lfs_pointer,
    masked_crc,
)
from helpers.util import atomic_write

__all__ = ["RecordSource", "read_index", "scan_spans", "write_index"]


def read_index(path: str | os.PathLike) -> list[tuple[int, int]]:
    """Parse an offset index: one ``offset length`` line per record (DALI / ``tfrecord`` layout).

    Raises:
      ValueError: a line that is not two non-negative integers (names the file and line).
    """
    spans = []
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            if len(parts) != 2 or not all(p.isdigit() for p in parts):
                raise ValueError(
                    f"{os.fspath(path)}: line {n} is not 'offset length': {line[:40]!r}"
                )
            spans.append((int(parts[0]), int(parts[1])))
    return spans


def scan_spans(path: str | os.PathLike) -> list[tuple[int, int]]:
    """Each record's ``(offset, framed length)``, from the headers only (data is skipped).

    Raises:
      RecordError: a header is cut or its CRC is wrong, or the file is a git-LFS pointer.
    """
    name, spans, offset = os.fspath(path), [], 0
    size = os.path.getsize(name)
    with open(name, "rb") as f:
        while True:
            header = _read_exact(f, _HEADER.size)
            if not header:
                return spans
            if offset == 0 and is_lfs_pointer(header + f.read(len(LFS_POINTER_PREFIX) - 12)):
                raise RecordError(name, 0, 0, LFS_POINTER_SHARD)
            if len(header) < _HEADER.size:
                raise RecordError(
                    name, len(spans), offset, f"truncated header ({len(header)} of 12 bytes)"
                )
            length, length_crc = _HEADER.unpack(header)
            if masked_crc(header[:8]) != length_crc:
                raise RecordError(name, len(spans), offset, "length CRC mismatch")
            if offset + length + 16 > size:
                raise RecordError(
                    name, len(spans), offset, "truncated record (the file ends inside it)"
                )
            spans.append((offset, length + 16))
            offset += length + 16
            f.seek(offset)


def write_index(shard: str | os.PathLike) -> str:
    """Write ``shard``'s offset index beside it (see :func:`index_name`); returns its path.

    Raises:
      RecordError: the shard is damaged (nothing is written). ValueError: a GZIP shard.
    """
    name = os.fspath(shard)
    if name.endswith((".gz", ".gzip", ".zlib")):
        raise ValueError(f"{name}: a compressed shard has no byte offsets to index; decompress it")
    spans = scan_spans(name)
    target = index_name(name)
    atomic_write(target, "".join(f"{o} {n}\n" for o, n in spans))
    return target


class RecordSource:
    """The i-th serialized record of a converted dataset, read through the offset indexes.

    Implements the random-access data source protocol Grain uses (``__len__`` and
    ``__getitem__``), so ``grain.MapDataset.source(RecordSource(DIR))`` shuffles
    globally and resumes at any step. Reading record ``i`` reads only its bytes
    (one ``os.pread``, no shared file position, so threads can share the source);
    both CRCs are checked. The source pickles without its open files (worker
    processes reopen them). Nothing here imports TensorFlow.

    Args:
      source: a converter output folder (or its ``manifest.json``): the shards it
        lists, in its order; or a list of shard paths, each with its ``.idx`` file.
      check_crc: verify each record's length and data CRCs.

    Raises:
      FileNotFoundError: a shard or its index is missing (the message says how to
        build the index). ValueError: an index that disagrees with the manifest.
    """

    def __init__(self, source: str | os.PathLike | list[str | os.PathLike], check_crc: bool = True):
        self.check_crc = check_crc
        self.paths, expected = _shards_of(source)
        starts, spans = [0], []
        for path, records in zip(self.paths, expected, strict=True):
            pairs = _load_index(path, records)  # flat (offset, length) pairs: 16 bytes a record
            spans.append(array("q", [v for pair in pairs for v in pair]))
            starts.append(starts[-1] + len(pairs))
        self._starts = starts
        self._spans = spans
        self._files: dict[int, int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._starts[-1]

    def __repr__(self) -> str:
        return f"RecordSource({len(self.paths)} shards, {len(self)} records)"

    def __getitem__(self, i: SupportsIndex) -> bytes:
        n = operator.index(i)
        if n < 0:
            n += len(self)
        if not 0 <= n < len(self):
            raise IndexError(f"record {operator.index(i)} out of range for {len(self)} records")
        shard = bisect.bisect_right(self._starts, n) - 1
        local = n - self._starts[shard]
        spans = self._spans[shard]
        offset, length = spans[2 * local], spans[2 * local + 1]
        framed = os.pread(self._fd(shard), length, offset)
        return self._payload(shard, local, offset, framed)

    def _payload(self, shard: int, local: int, offset: int, framed: bytes) -> bytes:
        path = self.paths[shard]
        if offset == 0 and is_lfs_pointer(framed[: len(LFS_POINTER_PREFIX)]):
            raise RecordError(path, local, offset, LFS_POINTER_SHARD)
        if len(framed) < 16:
            raise RecordError(path, local, offset, "truncated record (the file ends inside it)")
        length, length_crc = _HEADER.unpack_from(framed)
        if length + 16 != len(framed):
            raise RecordError(
                path, local, offset, f"the index says {len(framed)} bytes, the header {length + 16}"
            )
        data = framed[12 : 12 + length]
        if self.check_crc:
            if masked_crc(framed[:8]) != length_crc:
                raise RecordError(path, local, offset, "length CRC mismatch")
            if masked_crc(data) != int.from_bytes(framed[-4:], "little"):
                raise RecordError(
                    path, local, offset, "data CRC mismatch (the record is corrupted)"
                )
        return data

    def _fd(self, shard: int) -> int:
        fd = self._files.get(shard)
        if fd is None:
            with self._lock:
                fd = self._files.get(shard)
                if fd is None:
                    fd = self._files[shard] = os.open(self.paths[shard], os.O_RDONLY)
        return fd

    def close(self) -> None:
        """Close the open shard files (they reopen on the next read)."""
        with self._lock:
            files, self._files = self._files, {}
        for fd in files.values():
            os.close(fd)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_files"], state["_lock"] = {}, None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def _shards_of(
    source: str | os.PathLike | list[str | os.PathLike],
) -> tuple[list[str], list[int | None]]:
    """Shard paths and their manifest record counts (``None`` without a manifest)."""
    if isinstance(source, (str, os.PathLike)):
        from helpers.manifest import manifest_path, read_manifest

        name = manifest_path(source)
        manifest = read_manifest(name)
        base = os.path.dirname(name)
        return [os.path.join(base, s.file) for s in manifest.shards], [
            s.records for s in manifest.shards
        ]
    paths = [os.path.expanduser(os.fspath(p)) for p in source]
    return paths, [None] * len(paths)


def _load_index(path: str, records: int | None) -> list[tuple[int, int]]:
    index = index_name(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: missing shard")
    if not os.path.exists(index):
        raise FileNotFoundError(
            f"{index}: no offset index for {os.path.basename(path)}; write it with "
            f"`python -m helpers.records index {path}`"
        )
    spans = read_index(index)
    if records is not None and len(spans) != records:
        raise ValueError(
            f"{index}: {len(spans)} records, the manifest says {records}; rebuild it with "
            f"`python -m helpers.records index {path}`"
        )
    return spans
