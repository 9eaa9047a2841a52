"""make_dataset(skip_corrupt=True) and its CorruptionReport."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from helpers import pipeline as P
from helpers.features import (
    image_example,
    serialize_example,
)
from helpers.manifest import Manifest, ShardEntry, write_manifest_file
from helpers.util import sha256_file

from .support import (
    IMAGE_SIZE,
    NUM_SHARDS,
    PER_SHARD,
    _collect,
    _encode,
    _frame_offsets,
    _write_shard,
)
from .test_schema import _label_shard


def _damaged_copy(dataset_dir: dict, tmp_path: Path) -> tuple[Path, int]:
    """Shard 0: byte flipped inside record 2; shard 1: cut inside record 5.

    Returns the directory and the number of records TF's reader can no longer
    deliver (ignore_errors stops a file at its first bad record).
    """
    root = tmp_path / "damaged"
    root.mkdir()
    for p in dataset_dir["dir"].iterdir():
        (root / p.name).write_bytes(p.read_bytes())
    payloads = dataset_dir["payloads"]
    s0 = root / "train-00000-of-00003.tfrecord"
    data = bytearray(s0.read_bytes())
    data[_frame_offsets(payloads[0])[2] + 12 + 20] ^= 0xFF
    s0.write_bytes(bytes(data))
    s1 = root / "train-00001-of-00003.tfrecord"
    cut = _frame_offsets(payloads[1])[5] + 30
    s1.write_bytes(s1.read_bytes()[:cut])
    return root, (PER_SHARD - 2) + (PER_SHARD - 5)


def test_corruption_fails_loudly_by_default(dataset_dir: dict, tmp_path: Path) -> None:
    root, _ = _damaged_copy(dataset_dir, tmp_path)
    with pytest.raises(ValueError, match="train-00001-of-00003.tfrecord.*manifest says"):
        P.make_dataset(root, 4, IMAGE_SIZE)  # truncated: size differs from manifest
    # the flipped byte keeps the size: the reader raises while iterating
    ds = P.make_dataset(root / "train-00000-of-00003.tfrecord", 1, IMAGE_SIZE, num_classes=3)
    with pytest.raises(tf.errors.DataLossError):
        list(ds)


def test_skip_corrupt_reports_lost_records_exactly(
    dataset_dir: dict, tmp_path: Path, caplog
) -> None:
    root, lost = _damaged_copy(dataset_dir, tmp_path)
    report = P.CorruptionReport()
    with caplog.at_level(logging.WARNING, logger="helpers.pipeline"):
        ds = P.make_dataset(
            root, 4, IMAGE_SIZE, skip_corrupt=True, corruption_report=report, drop_remainder=False
        )
        x, _ = _collect(ds)
    total = NUM_SHARDS * PER_SHARD
    assert x.shape[0] == total - lost == 15
    assert report.complete
    assert report.lost == lost == 9
    assert report.delivered_total == total - lost
    by_shard = {Path(k).name: v for k, v in report.lost_by_shard().items()}
    assert by_shard == {
        "train-00000-of-00003.tfrecord": 6,
        "train-00001-of-00003.tfrecord": 3,
        "train-00002-of-00003.tfrecord": 0,
    }
    assert "6 lost" in caplog.text and "3 lost" in caplog.text
    assert "9 lost" in report.summary()


def test_skip_corrupt_counts_undecodable_image(tmp_path: Path) -> None:
    good = _encode(np.full((8, 8, 3), 90, np.uint8))
    payloads = [
        serialize_example(image_example(good if i != 1 else b"not an image", 0, "c", f"{i}", 8, 8))
        for i in range(4)
    ]
    root = tmp_path / "set"
    root.mkdir()
    _write_shard(root / "train-00000-of-00001.tfrecord", payloads)
    size = (root / "train-00000-of-00001.tfrecord").stat().st_size
    shard = root / "train-00000-of-00001.tfrecord"
    entry = ShardEntry(shard.name, 4, size, sha256_file(shard), {"c": 4})
    write_manifest_file(Manifest("train", str(root), ["c"], {}, {}, [entry]), root)
    report = P.CorruptionReport()
    ds = P.make_dataset(root, 1, 16, skip_corrupt=True, corruption_report=report, training=False)
    assert len(list(ds)) == 3  # a bad image drops only itself (a map error)
    assert report.lost == 1


def test_skip_corrupt_without_manifest_says_unknown(dataset_dir: dict) -> None:
    report = P.CorruptionReport()
    files = [str(dataset_dir["dir"] / "train-00002-of-00003.tfrecord")]
    ds = P.make_dataset(
        files, 4, IMAGE_SIZE, num_classes=3, skip_corrupt=True, corruption_report=report
    )
    assert len(list(ds)) == 2
    assert report.lost == 0 and report.delivered_total == PER_SHARD
    assert "expected count unknown" in report.summary()


def test_skip_corrupt_still_refuses_bad_labels(tmp_path: Path) -> None:
    path = _label_shard(tmp_path, [0, 7])
    ds = P.make_dataset(path, 1, 16, num_classes=3, skip_corrupt=True, training=False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="label out of range"):
        list(ds)
