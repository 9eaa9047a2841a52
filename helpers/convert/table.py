"""The files a conversion holds in memory: one row type, one column store.

Between the scan and the last shard the converter holds every file of the dataset
(1.28 M for ImageNet). As one small object per file that cost about 550 bytes each;
as columns it is the relative path's bytes plus 20 (its end offset, a label and a
size, in packed arrays). :class:`Strings` keeps the paths as one byte buffer and end
offsets, about 40 bytes less per path than a list of ``str``. :class:`FileTable` is a read-only sequence of :class:`FileRecord`
rows made on demand, so the phases still read as "for each file"; a slice or a
:meth:`FileTable.take` is a smaller table, and pickles as columns (what a worker
process or another engine receives for one shard).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

__all__ = ["FileRecord", "FileTable", "Strings"]


@dataclass(frozen=True, slots=True)
class FileRecord:
    """One file, as a phase sees it.

    Attributes:
      path: absolute path (may hold surrogate-escaped bytes of a non-UTF-8 name).
      rel: ``class/file`` relative to the dataset folder (``image/filename``).
      label: the class index.
      class_text: the class name as shown (``image/class/text``).
      ext: lower-case extension (only tells "bad image" from "not an image").
      size: bytes on disk when probed (0 before the probe); the plan's shard sizes use it.
    """

    path: str
    rel: str
    label: int
    class_text: str
    ext: str
    size: int


class Strings(Sequence[str]):
    """A read-only list of file names in one ``bytearray`` (their ``os.fsencode`` bytes).

    ``strings[i]`` decodes name ``i`` again (surrogate escapes round-trip, so a
    non-UTF-8 name comes back exactly); a slice or :meth:`take` is a new ``Strings``.
    """

    __slots__ = ("_blob", "_ends")

    def __init__(self, names: Iterable[str] = ()):
        self._blob = bytearray()
        self._ends = array("Q")
        for name in names:
            self.append(name)

    def append(self, name: str) -> None:
        self._blob += os.fsencode(name)
        self._ends.append(len(self._blob))

    def __len__(self) -> int:
        return len(self._ends)

    def _span(self, i: int) -> tuple[int, int]:
        if i < 0:
            i += len(self._ends)
        if not 0 <= i < len(self._ends):
            raise IndexError("Strings index out of range")
        return (self._ends[i - 1] if i else 0), self._ends[i]

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> Strings: ...

    def __getitem__(self, i: int | slice) -> str | Strings:
        if isinstance(i, slice):
            return self.take(range(*i.indices(len(self))))
        start, end = self._span(i)
        return os.fsdecode(bytes(self._blob[start:end]))

    def __iter__(self) -> Iterator[str]:
        start = 0
        for end in self._ends:
            yield os.fsdecode(bytes(self._blob[start:end]))
            start = end

    def take(self, rows: Iterable[int]) -> Strings:
        """A new ``Strings`` of the given rows, in the given order."""
        out = Strings()
        for r in rows:
            start, end = self._span(r)
            out._blob += self._blob[start:end]
            out._ends.append(len(out._blob))
        return out

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Strings):
            return self._ends == other._ends and self._blob == other._blob
        if isinstance(other, Sequence) and not isinstance(other, str):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Strings({list(self)!r})"

    def __getstate__(self) -> tuple[Any, ...]:
        return (bytes(self._blob), self._ends)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        blob, self._ends = state
        self._blob = bytearray(blob)


def extension(rel: str) -> str:
    """The lower-case extension of a relative path (``.jpg``), or ``""``."""
    return os.path.splitext(rel)[1].lower()


@dataclass(frozen=True, eq=False)
class FileTable(Sequence[FileRecord]):
    """Files as columns: ``rels[i]``, ``labels[i]`` and ``sizes[i]`` describe row ``i``.

    Attributes:
      root: the dataset folder (a row's path is ``root/rel``).
      class_texts: display name of each class (label = index).
      rels: relative paths, ``class/file`` (:class:`Strings`).
      labels: class index per row (``array('i')``).
      sizes: bytes on disk per row (``array('q')``; zeros until probed).
    """

    root: str
    class_texts: tuple[str, ...]
    rels: Strings
    labels: array
    sizes: array

    @classmethod
    def empty(cls, root: str, class_texts: Iterable[str] = ()) -> FileTable:
        return cls(root, tuple(class_texts), Strings(), array("i"), array("q"))

    def append(self, rel: str, label: int, size: int = 0) -> None:
        """Add a row (only while the table is being built by the listing)."""
        self.rels.append(rel)
        self.labels.append(label)
        self.sizes.append(size)

    def __len__(self) -> int:
        return len(self.rels)

    @overload
    def __getitem__(self, i: int) -> FileRecord: ...

    @overload
    def __getitem__(self, i: slice) -> FileTable: ...

    def __getitem__(self, i: int | slice) -> FileRecord | FileTable:
        if isinstance(i, slice):
            return FileTable(
                self.root, self.class_texts, self.rels[i], self.labels[i], self.sizes[i]
            )
        rel, label = self.rels[i], self.labels[i]
        return FileRecord(
            os.path.join(self.root, rel), rel, label, self.class_texts[label], extension(rel),
            self.sizes[i],
        )  # fmt: skip

    def __iter__(self) -> Iterator[FileRecord]:
        for i in range(len(self.rels)):
            yield self[i]

    def take(self, rows: Iterable[int]) -> FileTable:
        """A new table of the given rows, in the given order."""
        rows = rows if isinstance(rows, (array, list, range)) else list(rows)
        return FileTable(
            self.root,
            self.class_texts,
            self.rels.take(rows),
            array("i", (self.labels[r] for r in rows)),
            array("q", (self.sizes[r] for r in rows)),
        )

    @property
    def total_size(self) -> int:
        return sum(self.sizes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FileTable):
            return NotImplemented
        return (self.root, self.class_texts, self.rels, self.labels, self.sizes) == (
            other.root, other.class_texts, other.rels, other.labels, other.sizes
        )  # fmt: skip

    __hash__ = None  # type: ignore[assignment]
