"""helpers.pipeline.storage: the simulated slow storage."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import tensorflow as tf

from helpers import pipeline as P

from .support import IMAGE_SIZE, NUM_SHARDS, _collect


def _seconds(ds: tf.data.Dataset) -> float:
    start = time.perf_counter()
    for _ in ds:
        pass
    return time.perf_counter() - start


def test_simulated_storage_validates_and_describes_itself() -> None:
    storage = P.slow_open(0.01, 0.02)
    assert "SIMULATED" in str(storage)
    assert storage.delay_s(2_000_000) == pytest.approx(0.05)
    with pytest.raises(ValueError, match="delay_per_open_s"):
        P.slow_open(-1, 0)


def test_slow_storage_delays_each_shard_open_and_interleave_overlaps(dataset_dir: dict) -> None:
    # Semantics, not speed: the sleeps give hard lower bounds; overlapping three 0.5 s
    # opens saves at least a second, far more than scheduling noise on a busy machine.
    storage = P.slow_open(delay_per_open_s=0.5, delay_per_mb_s=0.0)
    kw = dict(training=False, storage=storage, prefetch=None)
    sequential = P.make_dataset(
        dataset_dir["dir"], 4, IMAGE_SIZE, cycle_length=1, interleave_parallel_calls=None, **kw
    )
    parallel = P.make_dataset(
        dataset_dir["dir"], 4, IMAGE_SIZE, cycle_length=3, interleave_parallel_calls=3, **kw
    )
    t_seq = _seconds(sequential)
    t_par = _seconds(parallel)
    assert t_seq >= NUM_SHARDS * 0.5  # one delay per shard, one after another
    assert t_par < t_seq - 0.5  # cycle_length=3 overlaps the opens


def test_slow_storage_per_image_for_per_file_and_generator(dataset_dir: dict) -> None:
    storage = P.slow_open(delay_per_open_s=0.05, delay_per_mb_s=0.0)
    files, labels = dataset_dir["files"][:6], dataset_dir["labels"][:6]
    per_file = P.per_file_dataset(
        files, labels, 3, 16, num_classes=3, storage=storage, parallel_reads=1, prefetch=None
    )
    generator = P.generator_dataset(files, labels, 3, 16, num_classes=3, storage=storage)
    assert _seconds(per_file) >= 6 * 0.05
    assert _seconds(generator) >= 6 * 0.05
    x, y = _collect(per_file)
    assert x.shape == (6, 16, 16, 3) and y.shape == (6, 3)


def test_per_mb_delay_scales_with_bytes(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(b"\0" * 2_000_000)
    storage = P.slow_open(delay_per_open_s=0.0, delay_per_mb_s=0.1)
    start = time.perf_counter()
    assert len(storage.read_bytes(big)) == 2_000_000
    assert time.perf_counter() - start >= 0.2
    ds = storage.read_file_dataset(tf.constant(str(big)), tf.constant(2_000_000, tf.int64))
    assert _seconds(ds) >= 0.2
