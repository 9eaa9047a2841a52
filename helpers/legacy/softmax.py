"""Softmax regression on the digits, trained from queues and from ``tf.data``."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tensorflow as tf

from helpers.legacy.datasets import dataset_batches
from helpers.legacy.graph import graph_mode, v1
from helpers.legacy.queues import queue_batches, run_queue_pipeline


@dataclass
class TrainResult:
    """A softmax-regression run.

    Attributes:
      steps: optimiser steps taken.
      examples: examples seen (``steps * batch_size`` with full batches).
      losses: ``(step, loss)`` every ``log_every`` steps.
      weights: ``W [pixels, classes]``.
      bias: ``b [classes]``.
      seconds: wall time of the training loop.
      how: ``"queues"`` or ``"tf.data"``.
    """

    steps: int
    examples: int
    losses: list[tuple[int, float]]
    weights: np.ndarray
    bias: np.ndarray
    seconds: float
    how: str
    extra: dict[str, Any] = field(default_factory=dict)


def _log(print_fn: Callable[[str], None] | None, how: str, step: int, loss: float) -> None:
    if print_fn is not None:
        print_fn(f"[{how}] step {step:4d}  loss {loss:.4f}")


def train_softmax_queue(
    paths: Sequence[str | os.PathLike],
    *,
    num_epochs: int = 5,
    batch_size: int = 32,
    learning_rate: float = 0.5,
    min_after_dequeue: int = 500,
    capacity: int | None = None,
    num_threads: int = 1,
    classes: int = 10,
    pixels: int = 64,
    log_every: int = 50,
    seed: int = 0,
    print_fn: Callable[[str], None] | None = print,
) -> TrainResult:
    """Softmax regression fed by ``shuffle_batch``, trained until ``OutOfRangeError``.

    ``logits = x @ W + b`` with zero-initialised ``W`` and ``b``, sparse softmax
    cross-entropy, plain gradient descent. The train op and the loss are
    fetched in the same ``sess.run`` so each step dequeues exactly one batch.

    Args:
      paths: TFRecord files of digit records.
      num_epochs: epochs handed out by ``string_input_producer``.
      batch_size, learning_rate, min_after_dequeue, capacity, num_threads: as named.
      classes, pixels: model shape.
      log_every: record (and print) the loss every this many steps.
      seed: graph seed.
      print_fn: where the loss lines go (``None``: silent).

    Returns:
      A :class:`TrainResult` (``how="queues"``).
    """
    with graph_mode(seed) as graph:
        images, labels = queue_batches(
            paths,
            batch_size=batch_size,
            num_epochs=num_epochs,
            shuffle=True,
            capacity=capacity,
            min_after_dequeue=min_after_dequeue,
            num_threads=num_threads,
            pixels=pixels,
            seed=seed,
        )
        weights = v1.get_variable("W", [pixels, classes], initializer=v1.zeros_initializer())
        bias = v1.get_variable("b", [classes], initializer=v1.zeros_initializer())
        logits = tf.matmul(images, weights) + bias
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        )
        train_op = v1.train.GradientDescentOptimizer(learning_rate).minimize(loss)
        init = [v1.global_variables_initializer(), v1.local_variables_initializer()]
    losses: list[tuple[int, float]] = []
    final: dict[str, np.ndarray] = {}

    def on_step(step: int, fetched: Any) -> None:
        _, loss_value, w, b = fetched
        final["W"], final["b"] = w, b
        if step % log_every == 0:
            losses.append((step, float(loss_value)))
            _log(print_fn, "queues", step, float(loss_value))

    # Fetching W and b every step costs a copy; at 64x10 that is nothing.
    run = run_queue_pipeline(graph, [train_op, loss, weights, bias], on_step=on_step, init_ops=init)
    if print_fn is not None:
        print_fn(f"[queues] OutOfRangeError after {run.steps} steps: {num_epochs} epochs done")
    return TrainResult(
        steps=run.steps,
        examples=run.steps * batch_size,
        losses=losses,
        weights=final.get("W", np.zeros((pixels, classes), np.float32)),
        bias=final.get("b", np.zeros(classes, np.float32)),
        seconds=run.seconds,
        how="queues",
        extra={"threads": run.threads, "stopped_by": run.stopped_by},
    )


def train_softmax_dataset(
    paths: Sequence[str | os.PathLike],
    *,
    num_epochs: int = 5,
    batch_size: int = 32,
    learning_rate: float = 0.5,
    shuffle_buffer: int = 500,
    classes: int = 10,
    pixels: int = 64,
    log_every: int = 50,
    seed: int = 0,
    print_fn: Callable[[str], None] | None = print,
) -> TrainResult:
    """The same softmax regression, fed by :func:`dataset_batches` in eager mode.

    Same zero initialisation, loss and plain gradient-descent update as
    :func:`train_softmax_queue`; the step is a ``tf.function``. The loop ends
    when the dataset does: no threads, no coordinator, no ``OutOfRangeError``.

    Returns:
      A :class:`TrainResult` (``how="tf.data"``).
    """
    weights = tf.Variable(tf.zeros([pixels, classes]))
    bias = tf.Variable(tf.zeros([classes]))

    @tf.function
    def step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            logits = tf.matmul(x, weights) + bias
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            )
        grad_w, grad_b = tape.gradient(loss, [weights, bias])
        weights.assign_sub(learning_rate * grad_w)
        bias.assign_sub(learning_rate * grad_b)
        return loss

    ds = dataset_batches(
        paths,
        batch_size=batch_size,
        num_epochs=num_epochs,
        shuffle_buffer=shuffle_buffer,
        pixels=pixels,
        seed=seed,
    )
    losses: list[tuple[int, float]] = []
    steps = 0
    start = time.perf_counter()
    for x, y in ds:
        loss = step(x, y)
        steps += 1
        if steps % log_every == 0:
            losses.append((steps, float(loss)))
            _log(print_fn, "tf.data", steps, float(loss))
    seconds = time.perf_counter() - start
    if print_fn is not None:
        print_fn(f"[tf.data] dataset ended after {steps} steps: {num_epochs} epochs done")
    return TrainResult(
        steps=steps,
        examples=steps * batch_size,
        losses=losses,
        weights=weights.numpy(),
        bias=bias.numpy(),
        seconds=seconds,
        how="tf.data",
    )


def evaluate_softmax(result: TrainResult, images: np.ndarray, labels: np.ndarray) -> float:
    """Accuracy of a trained softmax regression on raw ``uint8`` images.

    Returns:
      The fraction of ``images`` whose arg-max class equals the label.
    """
    x = np.asarray(images).reshape(len(images), -1).astype(np.float32) / np.float32(255.0)
    predicted = np.argmax(x @ result.weights + result.bias, axis=1)
    return float(np.mean(predicted == np.asarray(labels)))
