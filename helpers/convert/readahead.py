"""Ask the kernel to start reading the next input files while this one is encoded.

A shard's writer reads a file, encodes a record and writes it, one file after the
other. On data that is not in the page cache (the rerun of an interrupted
conversion, a dataset larger than memory) each read waits for the disk while the
CPU idles. ``posix_fadvise(POSIX_FADV_WILLNEED)`` on the files a few places ahead
starts their reads in the background, so the disk and the CPU work at the same
time; the writer's own ``read`` then finds the bytes in memory. Where the call does
not exist (macOS, Windows) the files are simply read in order.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Protocol, TypeVar

__all__ = ["WINDOW", "read_ahead"]

#: files hinted ahead of the one being encoded (about 2 MB of typical photos)
WINDOW = 16


class _HasPath(Protocol):
    path: str


T = TypeVar("T", bound=_HasPath)


def read_ahead(items: Sequence[T], window: int = WINDOW) -> Iterator[T]:
    """Yield ``items`` in order, hinting each one's file ``window`` items before its turn."""
    if not hasattr(os, "posix_fadvise") or window < 1:
        yield from items
        return
    for item in items[:window]:
        _will_need(item.path)
    for i, item in enumerate(items):
        if i + window < len(items):
            _will_need(items[i + window].path)
        yield item


def _will_need(path: str) -> None:
    """Start reading ``path`` into the page cache (errors are the reader's to report)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
    except OSError:
        pass
    finally:
        os.close(fd)
