"""The digits as raw-byte records (height, width, depth, label, image_raw), as the classic MNIST tutorial wrote them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from helpers.features import serialize_example

#: The parsing spec of the digit records written by :func:`write_digit_records`.
DIGIT_SPEC: dict[str, Any] = {
    "height": tf.io.FixedLenFeature([], tf.int64),
    "width": tf.io.FixedLenFeature([], tf.int64),
    "depth": tf.io.FixedLenFeature([], tf.int64),
    "label": tf.io.FixedLenFeature([], tf.int64),
    "image_raw": tf.io.FixedLenFeature([], tf.string),
}


def write_digit_records(
    path: str | os.PathLike, images: np.ndarray, labels: Sequence[int] | np.ndarray
) -> int:
    """Write raw-pixel images as ``tf.train.Example`` records.

    Each record holds ``height``, ``width``, ``depth``, ``label`` (int64) and
    ``image_raw`` (the ``uint8`` pixels as bytes), the layout of the MNIST
    TFRecords in the classic MNIST-as-raw-bytes tutorial.

    Args:
      path: output ``.tfrecord`` file.
      images: ``uint8`` array ``(N, height, width)`` or ``(N, height, width, depth)``.
      labels: ``N`` integer labels.

    Returns:
      The number of records written.
    """
    images = np.asarray(images)
    if images.dtype != np.uint8:
        raise TypeError(f"images must be uint8 (raw pixels), got {images.dtype}")
    if images.ndim == 3:
        images = images[..., None]
    if images.ndim != 4 or len(images) != len(labels):
        raise ValueError(
            f"need images (N, H, W[, D]) and N labels, got {images.shape} and {len(labels)}"
        )
    _, height, width, depth = images.shape
    with tf.io.TFRecordWriter(os.fspath(path)) as writer:
        for image, label in zip(images, labels, strict=True):
            writer.write(
                serialize_example(
                    {
                        "height": height,
                        "width": width,
                        "depth": depth,
                        "label": int(label),
                        "image_raw": image.tobytes(),
                    }
                )
            )
    return len(images)


def decode_digit(serialized: tf.Tensor, pixels: int = 64) -> tuple[tf.Tensor, tf.Tensor]:
    """One serialized digit record -> (``float32`` pixels in [0, 1], ``int32`` label).

    The same function serves the queue pipeline (graph mode) and ``Dataset.map``:
    ``parse_single_example`` and ``decode_raw`` are the same ops in both.

    Args:
      serialized: a scalar string tensor (one record).
      pixels: ``height * width * depth``; fixes the static shape for batching.

    Returns:
      ``(image, label)``: ``float32 [pixels]`` and ``int32 []``.
    """
    features = tf.io.parse_single_example(serialized, DIGIT_SPEC)
    image = tf.io.decode_raw(features["image_raw"], tf.uint8)
    image = tf.reshape(image, [pixels])
    image = tf.cast(image, tf.float32) / 255.0
    return image, tf.cast(features["label"], tf.int32)
