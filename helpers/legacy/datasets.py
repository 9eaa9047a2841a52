"""The ``tf.data`` equivalents of the queue pipelines, and the batches they must give."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from helpers.legacy.digits import decode_digit


def dataset_batches(
    paths: Sequence[str | os.PathLike],
    *,
    batch_size: int,
    num_epochs: int | None,
    shuffle_buffer: int | None = None,
    drop_remainder: bool = True,
    pixels: int = 64,
    seed: int | None = 0,
) -> tf.data.Dataset:
    """The ``tf.data`` translation of :func:`queue_batches`.

    ``shuffle_buffer=None`` is the translation of ``shuffle=False`` +
    ``tf.train.batch`` and gives exactly the same batches as the queue
    pipeline with one thread. With a buffer it mirrors ``shuffle_batch``
    (file names shuffled per epoch, then a ``shuffle(shuffle_buffer)``).

    Args:
      paths: TFRecord files of digit records.
      batch_size: examples per batch.
      num_epochs: passes over the files; ``None`` repeats forever.
      shuffle_buffer: ``min_after_dequeue`` of the queue version; ``None``: no shuffling.
      drop_remainder: drop the last partial batch, as ``tf.train.batch`` does by default.
      pixels: ``height * width * depth`` of the records.
      seed: shuffling seed.

    Returns:
      A dataset of ``(images float32 [batch, pixels], labels int32 [batch])``.
    """
    files = tf.data.Dataset.from_tensor_slices([os.fspath(p) for p in paths])
    if shuffle_buffer:
        files = files.shuffle(len(paths), seed=seed, reshuffle_each_iteration=True)
    ds = files.repeat(num_epochs).flat_map(tf.data.TFRecordDataset)
    ds = ds.map(lambda s: decode_digit(s, pixels), num_parallel_calls=tf.data.AUTOTUNE)
    if shuffle_buffer:
        ds = ds.shuffle(shuffle_buffer, seed=seed)
    return ds.batch(batch_size, drop_remainder=drop_remainder).prefetch(tf.data.AUTOTUNE)


def expected_batches(
    images: np.ndarray,
    labels: np.ndarray,
    *,
    batch_size: int,
    num_epochs: int,
    allow_smaller_final_batch: bool = False,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """What an unshuffled one-thread queue pipeline yields, computed with NumPy alone.

    Args:
      images: ``uint8`` raw pixels in file order (all files concatenated).
      labels: their labels.
      batch_size: examples per batch.
      num_epochs: passes over the data.
      allow_smaller_final_batch: keep the last partial batch.

    Returns:
      ``[(float32 [batch, pixels] in [0, 1], int32 [batch]), ...]``.
    """
    x = np.asarray(images).reshape(len(images), -1).astype(np.float32) / np.float32(255.0)
    y = np.asarray(labels).astype(np.int32)
    x, y = np.concatenate([x] * num_epochs), np.concatenate([y] * num_epochs)
    stop = len(y) if allow_smaller_final_batch else len(y) - len(y) % batch_size
    return [(x[i : i + batch_size], y[i : i + batch_size]) for i in range(0, stop, batch_size)]
