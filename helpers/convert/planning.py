"""Phase 2, plan: the deterministic record order and the shard boundaries, before any write.

Records are ordered by a keyed hash of their relative path (a deterministic
shuffle that mixes the classes in every shard and keeps a file's position
independent of which other files exist). A shard takes records until the next
image's bytes would push its sum of image bytes past ``size_per_record`` (a
single larger image gets a shard of its own), so the ``-of-NNNNN`` total is
known up front and the same input always gives the same shards.

A :class:`Plan` is plain, picklable data: every :class:`ShardTask` can be written
by :func:`helpers.convert.write_shard` anywhere, in any order, by any engine.
"""

from __future__ import annotations

import hashlib
import json
import os
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from helpers.convert.scanning import ScanResult
from helpers.convert.settings import ConvertError, Settings, display_name, shard_name
from helpers.convert.table import FileTable

__all__ = ["Plan", "ShardTask", "order_key", "plan", "record_order", "shard_bounds"]


@dataclass(frozen=True)
class ShardTask:
    """One shard to write: its index, file name and records (a :class:`FileTable`), in order."""

    index: int
    name: str
    files: FileTable
    max_pixels: int

    @property
    def image_bytes(self) -> int:
        """Sum of the planned files' sizes (what ``size_per_record`` bounds)."""
        return self.files.total_size


@dataclass(frozen=True)
class Plan:
    """Everything a conversion will write, decided before anything is written.

    Attributes:
      settings: the conversion settings.
      scan: the scan result the plan was made from (classes, skipped, ignored).
      tasks: one task per shard, in shard order.
      fingerprint: sha256 over the settings, the classes, the listing fingerprint
        (every listed file's path, size and modification time) and every shard's
        files: a rerun with the same fingerprint may keep the shards an interrupted
        run completed.
    """

    settings: Settings
    scan: ScanResult
    tasks: tuple[ShardTask, ...]
    fingerprint: str

    @property
    def shard_names(self) -> list[str]:
        return [t.name for t in self.tasks]

    @property
    def num_files(self) -> int:
        return sum(len(t.files) for t in self.tasks)


def order_key(seed: int, rel: str) -> bytes:
    """The sort key of a record: sha256 of the seed and its relative path's bytes."""
    return hashlib.sha256(f"{seed}\0".encode() + os.fsencode(rel)).digest()


def record_order(rels: Sequence[str], seed: int) -> array:
    """Row numbers of ``rels`` sorted by :func:`order_key` (``array('I')``).

    Keeps 12 bytes per file, never a digest or an object per file: the keys' first
    8 bytes in an array, rows put in 256 buckets by the first byte, each bucket
    sorted on its own. Rows whose 8-byte prefixes tie (about one pair in 10^9 at
    ImageNet size) are put in full-key order, so the result is exactly the order of
    the full keys.
    """
    if len(rels) >= 2**32:
        raise ConvertError(f"{len(rels)} files is more than one conversion can order (2**32)")
    prefixes = array("Q", (int.from_bytes(order_key(seed, rel)[:8], "big") for rel in rels))
    buckets = [array("I") for _ in range(256)]
    for row, prefix in enumerate(prefixes):
        buckets[prefix >> 56].append(row)
    order = array("I")
    for bucket in buckets:
        rows = sorted(bucket, key=prefixes.__getitem__)
        start = 0
        for end in range(1, len(rows) + 1):
            if end == len(rows) or prefixes[rows[end]] != prefixes[rows[start]]:
                if end - start > 1:
                    rows[start:end] = sorted(
                        rows[start:end], key=lambda r: order_key(seed, rels[r])
                    )
                start = end
        order.extend(rows)
    return order


def shard_bounds(sizes: Iterable[int], size_per_record: int) -> list[tuple[int, int]]:
    """Greedy size-based shard boundaries ``(start, stop)`` over sizes in record order.

    A shard takes records until the next one would push its sum past
    ``size_per_record``; a single larger record gets a shard of its own.
    """
    bounds: list[tuple[int, int]] = []
    start = total = count = 0
    for count, size in enumerate(sizes, 1):
        row = count - 1
        if row > start and total + size > size_per_record:
            bounds.append((start, row))
            start, total = row, 0
        total += size
    if count > start:
        bounds.append((start, count))
    return bounds


def _fingerprint(settings: Settings, scan: ScanResult, tasks: tuple[ShardTask, ...]) -> str:
    digest = hashlib.sha256()
    head = {
        "settings": settings.as_manifest() | settings.as_dict(),
        "classes": scan.classes,
        "listing": scan.listing_fingerprint,  # every listed file's size and mtime
    }
    digest.update(json.dumps(head, sort_keys=True).encode())
    for task in tasks:
        digest.update(f"\nshard {task.index}\n".encode())
        for rel, size in zip(task.files.rels, task.files.sizes, strict=True):
            digest.update(f"{display_name(rel)}\0{size}\n".encode())
    return digest.hexdigest()


def plan(scan: ScanResult, settings: Settings) -> Plan:
    """Order the scanned files and cut them into shards: phase 2 of a conversion.

    Args:
      scan: the result of :func:`helpers.convert.scan`.
      settings: size per shard, seed, split name, pixel limit.

    Returns:
      The :class:`Plan`; the same scan and settings always give the same plan.
    """
    files = scan.files
    order = record_order(files.rels, settings.seed)
    bounds = shard_bounds((files.sizes[r] for r in order), settings.size_per_record)
    tasks = tuple(
        ShardTask(
            i, shard_name(settings.split_name, i, len(bounds)), files.take(order[start:stop]),
            settings.max_pixels,
        )
        for i, (start, stop) in enumerate(bounds)
    )  # fmt: skip
    return Plan(settings, scan, tasks, _fingerprint(settings, scan, tasks))
