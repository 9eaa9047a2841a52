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
from dataclasses import dataclass

from helpers.convert.scanning import FileRecord, ScanResult
from helpers.convert.settings import Settings, display_name, shard_name

__all__ = ["Plan", "ShardTask", "order_key", "plan", "split_by_size"]


@dataclass(frozen=True)
class ShardTask:
    """One shard to write: its index, file name and records, in order."""

    index: int
    name: str
    files: tuple[FileRecord, ...]
    max_pixels: int

    @property
    def image_bytes(self) -> int:
        """Sum of the planned files' sizes (what ``size_per_record`` bounds)."""
        return sum(f.size for f in self.files)


@dataclass(frozen=True)
class Plan:
    """Everything a conversion will write, decided before anything is written.

    Attributes:
      settings: the conversion settings.
      scan: the scan result the plan was made from (classes, skipped, ignored).
      tasks: one task per shard, in shard order.
      fingerprint: sha256 over the settings, the classes and every planned file's
        relative path, size and modification time: a rerun with the same
        fingerprint may keep the shards an interrupted run completed.
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


def split_by_size(files: list[FileRecord], size_per_record: int) -> list[list[FileRecord]]:
    """Greedy size-based shard boundaries over files already in record order."""
    shards: list[list[FileRecord]] = []
    current: list[FileRecord] = []
    total = 0
    for item in files:
        if current and total + item.size > size_per_record:
            shards.append(current)
            current, total = [], 0
        current.append(item)
        total += item.size
    if current:
        shards.append(current)
    return shards


def _fingerprint(settings: Settings, scan: ScanResult, groups: list[list[FileRecord]]) -> str:
    digest = hashlib.sha256()
    head = {"settings": settings.as_manifest() | settings.as_dict(), "classes": scan.classes}
    digest.update(json.dumps(head, sort_keys=True).encode())
    for i, group in enumerate(groups):
        digest.update(f"\nshard {i}\n".encode())
        for f in group:
            digest.update(f"{display_name(f.rel)}\0{f.size}\0{f.mtime_ns}\n".encode())
    return digest.hexdigest()


def plan(scan: ScanResult, settings: Settings) -> Plan:
    """Order the scanned files and cut them into shards: phase 2 of a conversion.

    Args:
      scan: the result of :func:`helpers.convert.scan`.
      settings: size per shard, seed, split name, pixel limit.

    Returns:
      The :class:`Plan`; the same scan and settings always give the same plan.
    """
    ordered = sorted(scan.files, key=lambda f: order_key(settings.seed, f.rel))
    groups = split_by_size(ordered, settings.size_per_record)
    tasks = tuple(
        ShardTask(i, shard_name(settings.split_name, i, len(groups)), tuple(g), settings.max_pixels)
        for i, g in enumerate(groups)
    )
    return Plan(settings, scan, tasks, _fingerprint(settings, scan, groups))
