"""Shards, manifests and images the pipeline tests share."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import numpy as np
import tensorflow as tf
from PIL import Image

from helpers.features import (
    image_example,
    serialize_example,
)
from helpers.manifest import Manifest, ShardEntry, write_manifest_file
from helpers.util import sha256_file

NUM_CLASSES = 3
PER_SHARD = 8
NUM_SHARDS = 3
IMAGE_SIZE = 24


def _encode(array: np.ndarray, fmt: str = "JPEG") -> bytes:
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, fmt)
    return buf.getvalue()


def _image(rng: np.random.Generator, label: int) -> np.ndarray:
    """A smooth image whose colour depends on the label (JPEG-friendly)."""
    h, w = (int(v) for v in rng.integers(16, 48, size=2))
    base = np.array([[200, 40, 40], [40, 200, 40], [40, 40, 200]][label], np.float32)
    ramp = np.linspace(0, 50, w, dtype=np.float32)[None, :, None]
    return np.clip(base + ramp + rng.normal(0, 5, (h, w, 3)), 0, 255).astype(np.uint8)


def _frame_offsets(payloads: list[bytes]) -> list[int]:
    offsets, pos = [], 0
    for p in payloads:
        offsets.append(pos)
        pos += 8 + 4 + len(p) + 4
    return offsets


def _write_shard(path: Path, payloads: list[bytes], compression: str | None = None) -> None:
    options = tf.io.TFRecordOptions(compression_type=compression or "")
    with tf.io.TFRecordWriter(str(path), options) as writer:
        for p in payloads:
            writer.write(p)


def _make_set(root: Path, seed: int = 0, image_dir: Path | None = None) -> dict:
    """Shards + manifest like helpers.convert's; optionally the same images as files."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    shards, payloads_by_shard, files, labels = [], [], [], []
    n = 0
    for s in range(NUM_SHARDS):
        payloads = []
        for _ in range(PER_SHARD):
            label = n % NUM_CLASSES
            array = _image(rng, label)
            encoded = _encode(array)
            name = f"c{label}/img_{n:03d}.jpg"
            if image_dir is not None:
                target = image_dir / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(encoded)
                files.append(str(target))
                labels.append(label)
            ex = image_example(encoded, label, f"c{label}", name, *array.shape[:2])
            payloads.append(serialize_example(ex))
            n += 1
        shard = f"train-{s:05d}-of-{NUM_SHARDS:05d}.tfrecord"
        _write_shard(root / shard, payloads)
        counts = Counter(f"c{(n - len(payloads) + i) % NUM_CLASSES}" for i in range(len(payloads)))
        size, digest = (root / shard).stat().st_size, sha256_file(root / shard)
        shards.append(ShardEntry(shard, len(payloads), size, digest, dict(sorted(counts.items()))))
        payloads_by_shard.append(payloads)
    classes = [f"c{i}" for i in range(NUM_CLASSES)]
    write_manifest_file(Manifest("train", str(root), classes, {}, {}, shards), root)
    return {"dir": root, "payloads": payloads_by_shard, "files": files, "labels": labels}


def _collect(ds: tf.data.Dataset) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    for x, y in ds:
        xs.append(x.numpy())
        ys.append(y.numpy())
    return np.concatenate(xs), np.concatenate(ys)
