"""How fast a dataset delivers images, without a model: :func:`measure_throughput`."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import tensorflow as tf


def _images_in(element: Any, images_per_element: int | None) -> int:
    if images_per_element is not None:
        return images_per_element
    first = tf.nest.flatten(element)[0]
    shape = getattr(first, "shape", ())
    return int(shape[0]) if len(shape) >= 4 else 1


def measure_throughput(
    dataset: tf.data.Dataset | Iterable[Any],
    steps: int | None = None,
    warmup: int = 1,
    *,
    warmup_epochs: int = 0,
    images_per_element: int | None = None,
) -> dict[str, float]:
    """Time how fast a dataset delivers images (no model: the input pipeline alone).

    Args:
      dataset: any iterable of batches (``(images, labels)`` or images).
      steps: batches to time after warm-up; ``None`` = to the end.
      warmup: batches pulled before the clock starts (pipeline start-up,
        tracing, the first fill of prefetch buffers).
      warmup_epochs: full passes before timing (fills a ``cache``; finite
        datasets only).
      images_per_element: images per element; default: the leading dimension
        of the first tensor when it is 4-D (a batch), else 1.

    Returns:
      ``images_per_s``, ``batches_per_s``, ``images``, ``batches``, ``seconds``
      (timed part), ``warmup_seconds``, ``warmup_batches``.

    Raises:
      ValueError: nothing was left to time after warm-up.
    """
    for _ in range(warmup_epochs):
        for _ in dataset:
            pass
    iterator = iter(dataset)
    start = time.perf_counter()
    warmed = 0
    for _ in range(warmup):
        try:
            next(iterator)
        except StopIteration:
            break
        warmed += 1
    timed_start = time.perf_counter()
    batches = images = 0
    while steps is None or batches < steps:
        try:
            element = next(iterator)
        except StopIteration:
            break
        batches += 1
        images += _images_in(element, images_per_element)
    seconds = time.perf_counter() - timed_start
    if batches == 0:
        raise ValueError(
            f"no batches left to time after {warmed} warm-up batch(es): use a smaller "
            "warmup, more data or repeat=True"
        )
    return {
        "images_per_s": images / seconds if seconds > 0 else float("inf"),
        "batches_per_s": batches / seconds if seconds > 0 else float("inf"),
        "images": float(images),
        "batches": float(batches),
        "seconds": seconds,
        "warmup_seconds": timed_start - start,
        "warmup_batches": float(warmed),
    }
