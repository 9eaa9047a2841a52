"""The manifest's size at ImageNet's shape, from synthetic shard results: a bench figure.

1,024 shards x 1,000 classes x 1,250 records per shard (about 700 classes in each
shard) go through the converter's finish phase (:func:`helpers.convert.write_manifest`)
without a single image: only the shard results are made up. What is measured is the
size of ``manifest.json`` (which every ``make_dataset`` call parses; the target is
under 1 MB whatever the record count) and of the ``class_counts.json`` sidecar that
holds the per-shard class counts since format version 3. The baseline is the same
manifest with those counts inline, as format version 2 wrote it.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from typing import Any

import numpy as np

from helpers.convert.finish import write_manifest
from helpers.convert.planning import Plan, ShardTask
from helpers.convert.scanning import ScanResult
from helpers.convert.settings import Settings, shard_name
from helpers.convert.shards import ShardResult
from helpers.convert.table import FileTable
from helpers.manifest import Manifest
from helpers.records import index_name

__all__ = ["IMAGENET_SHAPE", "inline_size", "measure_manifest_size", "synthetic_conversion"]

#: shards, classes and records per shard of an ImageNet-sized conversion (~100 MB shards)
IMAGENET_SHAPE = {"shards": 1024, "classes": 1000, "records_per_shard": 1250}


def synthetic_conversion(
    shards: int, classes: int, records_per_shard: int, seed: int = 0
) -> tuple[Plan, list[ShardResult]]:
    """A plan and one result per shard, as if every shard had been written.

    Each shard's records are spread over the classes uniformly at random (the
    converter's hashed order mixes classes the same way), so a shard of 1,250
    records holds about 700 of 1,000 classes. Names, digests and sizes look real.
    """
    rng = np.random.default_rng(seed)
    names = [f"n{1440764 + 997 * i:08d}" for i in range(classes)]  # WordNet-id-like, sorted
    settings = Settings(size_per_record=100 * 10**6, split_name="train")
    scan = ScanResult(
        dataset_path="/data/imagenet/train", classes=names,
        files=FileTable.empty("/data/imagenet/train", names), skipped=[], ignored=[],
        non_utf8_names=[],
    )  # fmt: skip
    tasks = tuple(
        ShardTask(i, shard_name("train", i, shards), scan.files, settings.max_pixels)
        for i in range(shards)
    )
    results = []
    for task in tasks:
        counts = rng.multinomial(records_per_shard, np.full(classes, 1 / classes))
        results.append(
            ShardResult(
                task.index,
                task.name,
                records=records_per_shard,
                bytes=records_per_shard * 110_000 + int(rng.integers(0, 10**6)),
                sha256=rng.bytes(32).hex(),
                class_counts={names[j]: int(counts[j]) for j in np.flatnonzero(counts)},
                index_name=index_name(task.name),
                index_sha256=rng.bytes(32).hex(),
            )
        )
    return Plan(settings, scan, tasks, fingerprint="0" * 64), results


def inline_size(manifest: Manifest) -> int:
    """Bytes of the same manifest written as format version 2 (per-shard counts inline)."""
    per_shard = manifest.shard_class_counts()
    shards = [dataclasses.replace(s, class_counts=per_shard[s.file]) for s in manifest.shards]
    old = dataclasses.replace(manifest, format_version=2, shards=shards, shard_counts=None)
    return len(old.to_json().encode("utf-8"))


def measure_manifest_size(
    workdir: str | None = None, baseline: bool = True, **shape: int
) -> dict[str, Any]:
    """Write the finish phase's files for a synthetic conversion and measure them.

    Args:
      workdir: where the temporary output folder goes (default: the system's).
      baseline: also measure the format-2 manifest (:func:`inline_size`).
      shape: ``shards``, ``classes``, ``records_per_shard`` (default
        :data:`IMAGENET_SHAPE`).

    Returns:
      ``manifest_bytes``, ``class_counts_bytes``, ``inline_manifest_bytes`` (or
      ``None``), ``records``, ``write_s`` and the shape.
    """
    shape = {**IMAGENET_SHAPE, **shape}
    plan, results = synthetic_conversion(**shape)
    with tempfile.TemporaryDirectory(dir=workdir) as out:
        start = time.perf_counter()
        manifest = write_manifest(plan, results, out)
        seconds = time.perf_counter() - start
        sizes = {name: os.path.getsize(os.path.join(out, name)) for name in os.listdir(out)}
    return {
        **shape,
        "records": manifest.num_records,
        "manifest_bytes": sizes["manifest.json"],
        "class_counts_bytes": sizes[manifest.class_counts_file],
        "inline_manifest_bytes": inline_size(manifest) if baseline else None,
        "write_s": seconds,
    }
