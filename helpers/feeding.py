"""Three ways to feed a model, timed side by side (lesson 00).

TensorFlow's documentation of the TF1 era named three ways to get data into a
model, and they still describe the trade-off today:

=================  =========================================================
feeding            Python produces every batch and hands it over, step by
                   step (TF1: ``sess.run(train_op, feed_dict={x: batch})``;
                   TF2: calling a ``tf.function`` with NumPy arrays). Simple;
                   the Python work runs *between* training steps.
input pipeline     TensorFlow reads, decodes and batches in its own threads,
                   ahead of the model (TF1: queues, lesson 07; TF2:
                   ``tf.data``). Input work overlaps with training.
preloaded data     the whole dataset sits in memory as tensors (TF1: a
                   constant or variable in the graph); each step slices it
                   inside the graph. Fastest per step, costs RAM and a one-off
                   load, so only for data that fits.
=================  =========================================================

:func:`feed_python`, :func:`feed_pipeline` and :func:`feed_preloaded` train
the same :class:`SoftmaxRegression` the three ways and return a
:class:`FeedResult` each: seconds per step, the share of step time spent
waiting for input, the one-off setup cost and the bytes held in memory.

CLI (an image folder in ImageNet layout; default: the course fixture)::

    python -m helpers.feeding [--images DIR] [--image-size 32] [--batch-size 32]
        [--steps 28] [--work-dir build/feeding]
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tensorflow as tf

__all__ = [
    "FeedResult",
    "SoftmaxRegression",
    "array_batches",
    "decode_images",
    "feed_pipeline",
    "feed_preloaded",
    "feed_python",
    "jpeg_batches",
    "main",
    "results_table",
]

Batch = tuple[np.ndarray, np.ndarray]


@dataclass
class FeedResult:
    """One way of feeding, timed.

    Attributes:
      how: ``"feeding"``, ``"input pipeline"`` or ``"preloaded"``.
      steps: training steps run.
      seconds: wall time of the training loop.
      wait_seconds: part of ``seconds`` spent getting the next batch; ``None``
        for preloaded data, where slicing happens inside the step.
      setup_seconds: one-off cost before the first step (e.g. decoding every
        image to preload it).
      held_bytes: data kept in memory for feeding (the preloaded tensors).
      final_loss: the loss of the last step.
    """

    how: str
    steps: int
    seconds: float
    wait_seconds: float | None
    setup_seconds: float
    held_bytes: int
    final_loss: float

    @property
    def ms_per_step(self) -> float:
        """Milliseconds per training step (loop wall time / steps)."""
        return 1e3 * self.seconds / self.steps if self.steps else float("nan")

    @property
    def input_share(self) -> float | None:
        """Share of step time spent waiting for input (``None`` when not separable)."""
        if self.wait_seconds is None or self.seconds <= 0:
            return None
        return self.wait_seconds / self.seconds


class SoftmaxRegression(tf.Module):
    """``logits = flatten(x) @ W + b``, zero-initialised, plain gradient descent.

    A deliberately tiny model: a step costs little compute, so how the data
    arrives decides the step time.

    Args:
      features: inputs per example after flattening.
      classes: output classes.
      learning_rate: gradient-descent step size.
    """

    def __init__(self, features: int, classes: int, learning_rate: float = 0.1):
        super().__init__()
        self.features = int(features)
        self.weights = tf.Variable(tf.zeros([features, classes]))
        self.bias = tf.Variable(tf.zeros([classes]))
        self.learning_rate = float(learning_rate)

    @tf.function(reduce_retracing=True)
    def train_step(self, x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        """One gradient-descent step on a batch; returns the batch loss."""
        x = tf.reshape(tf.cast(x, tf.float32), [-1, self.features])
        with tf.GradientTape() as tape:
            logits = tf.matmul(x, self.weights) + self.bias
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=tf.cast(y, tf.int32), logits=logits
                )
            )
        grad_w, grad_b = tape.gradient(loss, [self.weights, self.bias])
        self.weights.assign_sub(self.learning_rate * grad_w)
        self.bias.assign_sub(self.learning_rate * grad_b)
        return loss


# ---------------------------------------------------------------------------
# Batch producers for Python feeding
# ---------------------------------------------------------------------------


def array_batches(
    x: np.ndarray, y: np.ndarray, batch_size: int, scale: float = 1.0 / 255.0
) -> Callable[[int], Batch]:
    """``next_batch(step)`` slicing in-memory arrays (cheap Python feeding).

    Args:
      x: examples (any shape per example), e.g. ``uint8`` pixels.
      y: integer labels.
      batch_size: examples per batch; the epoch's last partial batch is skipped.
      scale: multiply ``x`` (as float32) by this.

    Returns:
      A function of the step number giving ``(float32 x, int32 y)``.
    """
    per_epoch = len(x) // batch_size
    if per_epoch == 0:
        raise ValueError(f"{len(x)} examples cannot fill one batch of {batch_size}")

    def next_batch(step: int) -> Batch:
        i = (step % per_epoch) * batch_size
        xb = x[i : i + batch_size].astype(np.float32) * np.float32(scale)
        return xb, y[i : i + batch_size].astype(np.int32)

    return next_batch


def _load_image(path: str, image_size: int) -> np.ndarray:
    from PIL import Image

    with open(path, "rb") as f:
        data = f.read()
    with Image.open(io.BytesIO(data)) as img:
        img = img.convert("RGB").resize((image_size, image_size), Image.Resampling.BILINEAR)
        return np.asarray(img, dtype=np.float32) / 127.5 - 1.0


def jpeg_batches(
    paths: Sequence[str | os.PathLike],
    labels: Sequence[int],
    batch_size: int,
    image_size: int,
) -> Callable[[int], Batch]:
    """``next_batch(step)`` that opens, decodes (PIL) and resizes each image in Python.

    The way a hand-written loop over an image folder feeds a model: every step
    reads ``batch_size`` files and decodes them, one after the other, while
    the model waits.

    Args:
      paths: image files.
      labels: their integer labels.
      batch_size: images per batch (the epoch's last partial batch is skipped).
      image_size: output side; pixels scaled to ``[-1, 1]``.

    Returns:
      A function of the step number giving ``(float32 [b, s, s, 3], int32 [b])``.
    """
    files = [os.fspath(p) for p in paths]
    targets = np.asarray(labels, dtype=np.int32)
    per_epoch = len(files) // batch_size
    if per_epoch == 0:
        raise ValueError(f"{len(files)} images cannot fill one batch of {batch_size}")

    def next_batch(step: int) -> Batch:
        i = (step % per_epoch) * batch_size
        images = np.stack([_load_image(p, image_size) for p in files[i : i + batch_size]])
        return images, targets[i : i + batch_size]

    return next_batch


def decode_images(paths: Sequence[str | os.PathLike], image_size: int) -> np.ndarray:
    """Decode and resize every image once (PIL), for preloading.

    Args:
      paths: image files.
      image_size: output side; pixels scaled to ``[-1, 1]``.

    Returns:
      ``float32 [n, image_size, image_size, 3]``.
    """
    return np.stack([_load_image(os.fspath(p), image_size) for p in paths])


# ---------------------------------------------------------------------------
# The three ways
# ---------------------------------------------------------------------------


def feed_python(
    model: SoftmaxRegression, next_batch: Callable[[int], Batch], steps: int, warmup: int = 1
) -> FeedResult:
    """Feeding: Python makes each batch, then the step runs; nothing overlaps.

    Args:
      model: the model to train.
      next_batch: ``step -> (x, y)`` NumPy batch (see :func:`array_batches`,
        :func:`jpeg_batches`).
      steps: timed steps.
      warmup: untimed steps first (``tf.function`` tracing).

    Returns:
      A :class:`FeedResult` (``how="feeding"``).
    """
    for step in range(warmup):
        model.train_step(*next_batch(step)).numpy()
    wait = 0.0
    loss = float("nan")
    start = time.perf_counter()
    for step in range(warmup, warmup + steps):
        t0 = time.perf_counter()
        x, y = next_batch(step)
        wait += time.perf_counter() - t0
        loss = float(model.train_step(x, y))  # float() waits for the step to finish
    seconds = time.perf_counter() - start
    return FeedResult("feeding", steps, seconds, wait, 0.0, 0, loss)


def feed_pipeline(
    model: SoftmaxRegression, dataset: Iterable[Batch], steps: int, warmup: int = 1
) -> FeedResult:
    """Input pipeline: batches come from a (prefetching) ``tf.data`` dataset.

    Args:
      model: the model to train.
      dataset: yields ``(x, y)`` batches; repeat it if ``warmup + steps``
        exceeds one epoch.
      steps: timed steps.
      warmup: untimed steps first (tracing, pipeline start-up).

    Returns:
      A :class:`FeedResult` (``how="input pipeline"``).

    Raises:
      ValueError: the dataset ended before ``warmup + steps`` batches.
    """
    iterator = iter(dataset)
    setup_start = time.perf_counter()
    for _ in range(warmup):
        model.train_step(*next(iterator)).numpy()
    setup = time.perf_counter() - setup_start
    wait = 0.0
    loss = float("nan")
    start = time.perf_counter()
    for done in range(steps):
        t0 = time.perf_counter()
        try:
            x, y = next(iterator)
        except StopIteration:
            raise ValueError(
                f"the dataset ended after {warmup + done} batches; repeat() it"
            ) from None
        wait += time.perf_counter() - t0
        loss = float(model.train_step(x, y))
    seconds = time.perf_counter() - start
    return FeedResult("input pipeline", steps, seconds, wait, setup, 0, loss)


def feed_preloaded(
    model: SoftmaxRegression,
    x: np.ndarray | Callable[[], np.ndarray],
    y: np.ndarray,
    batch_size: int,
    steps: int,
) -> FeedResult:
    """Preloaded data: the dataset is one in-memory tensor, sliced inside the graph.

    All ``steps`` run inside a single ``tf.function`` call: no Python between
    steps at all. The setup (building ``x`` if a function is given, copying
    it into a tensor, tracing) is timed separately.

    Args:
      model: the model to train.
      x: all examples (``float32``), or a function that produces them (its
        run time counts as setup, e.g. :func:`decode_images`).
      y: all integer labels.
      batch_size: examples per step; the epoch's last partial batch is skipped.
      steps: timed steps.

    Returns:
      A :class:`FeedResult` (``how="preloaded"``, ``wait_seconds=None``,
      ``held_bytes`` = bytes of the preloaded tensors).
    """
    setup_start = time.perf_counter()
    array = x() if callable(x) else x
    data_x = tf.constant(np.asarray(array, dtype=np.float32))
    data_y = tf.constant(np.asarray(y, dtype=np.int32))
    per_epoch = int(data_x.shape[0]) // batch_size
    if per_epoch == 0:
        raise ValueError(f"{data_x.shape[0]} examples cannot fill one batch of {batch_size}")

    @tf.function
    def run(first: tf.Tensor, n: tf.Tensor) -> tf.Tensor:
        loss = tf.constant(float("nan"))
        for step in tf.range(first, first + n):
            i = (step % per_epoch) * batch_size
            loss = model.train_step(data_x[i : i + batch_size], data_y[i : i + batch_size])
        return loss

    # Trace with one untimed step (batch 0), like the others' warm-up; then steps 1..steps.
    run(tf.constant(0), tf.constant(1)).numpy()
    setup = time.perf_counter() - setup_start
    start = time.perf_counter()
    loss = float(run(tf.constant(1), tf.constant(steps)))
    seconds = time.perf_counter() - start
    held = int(data_x.numpy().nbytes + data_y.numpy().nbytes)
    return FeedResult("preloaded", steps, seconds, None, setup, held, loss)


def results_table(results: Sequence[FeedResult]) -> str:
    """A Markdown table of feeding results (ms per step, input share, setup, memory).

    Returns:
      The table as Markdown text (``IPython.display.Markdown`` renders it).
    """
    rows = [
        "| way | ms per step | waiting for input | one-off setup | data held in memory |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in results:
        share = "in-graph slice" if r.input_share is None else f"{r.input_share:.0%}"
        held = f"{r.held_bytes / 1e6:.1f} MB" if r.held_bytes else "batches only"
        rows.append(
            f"| {r.how} | {r.ms_per_step:.2f} | {share} | {r.setup_seconds:.2f} s | {held} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Compare the three ways of feeding on an image folder; print the table."""
    parser = argparse.ArgumentParser(
        prog="python -m helpers.feeding",
        description="Feeding vs input pipeline vs preloaded data, on one image folder.",
    )
    parser.add_argument("--images", type=Path, default=None, help="class folders of images")
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=28)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--work-dir", type=Path, default=Path("build/feeding"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from helpers import convert, pipeline
    from helpers.fixture import DATA_DIR

    images = args.images or DATA_DIR / "images"
    folder = pipeline.list_image_folder(images)
    order = np.random.default_rng(args.seed).permutation(len(folder.paths))
    paths = [folder.paths[i] for i in order]
    labels = [folder.labels[i] for i in order]
    shards = args.work_dir / "shards"
    convert.convert(images, shards, workers=1, overwrite=True, progress=False)
    size, batch = args.image_size, args.batch_size
    features, classes = size * size * 3, len(folder.classes)

    def model() -> SoftmaxRegression:
        return SoftmaxRegression(features, classes, args.learning_rate)

    dataset = pipeline.make_dataset(shards, batch, size, one_hot=False, seed=args.seed, repeat=True)
    results = [
        feed_python(model(), jpeg_batches(paths, labels, batch, size), args.steps),
        feed_pipeline(model(), dataset, args.steps),
        feed_preloaded(model(), lambda: decode_images(paths, size), labels, batch, args.steps),
    ]
    print(f"{len(paths)} images from {images}, {size}x{size}, batches of {batch}")
    print(results_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
