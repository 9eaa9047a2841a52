"""Input wait vs compute: a training loop that times ``next(iterator)`` apart from the step.

Keras' ``fit`` runs whole steps inside a ``tf.function``, so callbacks cannot tell input
wait from compute; here the loop pulls the batch in Python, then calls
``train_on_batch``, which returns NumPy logs and so waits for the step to finish.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import keras
import tensorflow as tf

from helpers.util import progress_bar

# TensorBoard profiler's input-pipeline analysis: share of step time waiting for input.
HIGHLY_INPUT_BOUND = 0.20
MODERATELY_INPUT_BOUND = 0.05


def classify_input_bound(share: float) -> str:
    """The TensorBoard profiler's verdict for a share of step time spent waiting for input.

    Args:
      share: input wait / step time, in ``[0, 1]``.

    Returns:
      ``"highly input-bound"`` (>= 20%), ``"moderately input-bound"``
      (5-20%) or ``"not input-bound"`` (< 5%).
    """
    if not 0.0 <= share <= 1.0 or share != share:
        raise ValueError(f"share must be in [0, 1], got {share}")
    if share >= HIGHLY_INPUT_BOUND:
        return "highly input-bound"
    if share >= MODERATELY_INPUT_BOUND:
        return "moderately input-bound"
    return "not input-bound"


def _split(batch: Any) -> tuple[Any, Any]:
    if isinstance(batch, (tuple, list)) and len(batch) >= 2:
        return batch[0], batch[1]
    raise ValueError("the dataset must yield (images, labels) pairs")


def _batch_size(x: Any) -> int:
    return int(tf.nest.flatten(x)[0].shape[0])


@dataclass
class _Timing:
    wait: float = 0.0
    compute: float = 0.0
    steps: int = 0
    images: int = 0

    def add(self, wait: float, compute: float, images: int) -> None:
        self.wait += wait
        self.compute += compute
        self.steps += 1
        self.images += images

    @property
    def share(self) -> float:
        total = self.wait + self.compute
        return self.wait / total if total > 0 else 0.0


def timed_step(
    model: keras.Model, iterator: Iterator[Any], train_step: bool
) -> tuple[float, float, int, dict[str, float]] | None:
    t0 = time.perf_counter()
    try:
        batch = next(iterator)
    except StopIteration:
        return None
    t1 = time.perf_counter()
    x, y = _split(batch)
    if train_step:
        logs = model.train_on_batch(x, y, return_dict=True)
    else:
        logs = model.test_on_batch(x, y, return_dict=True)
    t2 = time.perf_counter()  # logs are NumPy: the step has finished
    return t1 - t0, t2 - t1, _batch_size(x), {k: float(v) for k, v in logs.items()}


def measure_input_wait(
    model: keras.Model,
    dataset: Iterable[Any],
    steps: int = 20,
    warmup: int = 2,
    *,
    train_step: bool = True,
) -> dict[str, Any]:
    """Share of step time spent waiting for the next batch, over ``steps`` steps.

    Each step: ``next(iterator)`` (input wait), then ``train_on_batch`` (compute,
    synchronous). Warm-up steps (tracing, first buffer fill) are not counted.
    Note ``train_step=True`` updates the model's weights.

    Args:
      model: a compiled Keras model.
      dataset: an iterable of ``(images, labels)`` batches.
      steps: steps to time.
      warmup: steps run first and not timed.
      train_step: time training steps (default) or forward-only test steps.

    Returns:
      ``input_wait_share``, ``verdict`` (:func:`classify_input_bound`),
      ``steps``, ``wait_seconds``, ``compute_seconds``, ``mean_wait_ms``,
      ``mean_step_ms`` (wait + compute), ``images_per_s``.

    Raises:
      ValueError: no step left to time after warm-up.
    """
    iterator = iter(dataset)
    for _ in range(warmup):
        if timed_step(model, iterator, train_step) is None:
            break
    timing = _Timing()
    while timing.steps < steps:
        result = timed_step(model, iterator, train_step)
        if result is None:
            break
        timing.add(*result[:3])
    if timing.steps == 0:
        raise ValueError(
            "the dataset ran out before any timed step: use repeat=True or fewer warmup"
        )
    total = timing.wait + timing.compute
    return {
        "input_wait_share": timing.share,
        "verdict": classify_input_bound(timing.share),
        "steps": timing.steps,
        "wait_seconds": timing.wait,
        "compute_seconds": timing.compute,
        "mean_wait_ms": 1e3 * timing.wait / timing.steps,
        "mean_step_ms": 1e3 * total / timing.steps,
        "images_per_s": timing.images / total if total > 0 else float("inf"),
    }


def evaluate(
    model: keras.Model, dataset: Iterable[Any], steps: int | None = None
) -> dict[str, float]:
    """Loss and metrics over a dataset, weighted by batch size (exact, and quiet).

    Unlike ``model.evaluate`` it prints nothing (no "input ran out of data"
    warning for datasets of unknown length, which would change notebook output).

    Args:
      model: a compiled Keras model.
      dataset: ``(images, labels)`` batches.
      steps: batches to use (``None`` = all).

    Returns:
      metric name -> mean over all examples (``loss``, ``accuracy``...).

    Raises:
      ValueError: the dataset is empty.
    """
    sums: dict[str, float] = {}
    seen = 0
    for index, batch in enumerate(dataset):
        if steps is not None and index >= steps:
            break
        x, y = _split(batch)
        images = _batch_size(x)
        for key, value in model.test_on_batch(x, y, return_dict=True).items():
            sums[key] = sums.get(key, 0.0) + float(value) * images
        seen += images
    if seen == 0:
        raise ValueError("the evaluation dataset yielded no batches")
    return {key: value / seen for key, value in sums.items()}


def train(
    model: keras.Model,
    train_ds: Iterable[Any],
    val_ds: Iterable[Any] | None = None,
    epochs: int = 1,
    *,
    steps_per_epoch: int | None = None,
    validation_steps: int | None = None,
    warmup_steps: int = 1,
    progress: bool = True,
) -> dict[str, list[Any]]:
    """A small training loop that also measures how long each step waited for input.

    Per epoch: iterate ``train_ds`` (or ``steps_per_epoch`` batches of it),
    timing ``next(iterator)`` and ``train_on_batch`` separately; then evaluate
    on ``val_ds``. The first ``warmup_steps`` steps of the first epoch (graph
    tracing) are trained on but left out of the timing.

    Args:
      model: a compiled Keras model (e.g. :func:`build_mobilenet`).
      train_ds: ``(images, labels)`` batches; re-iterated every epoch.
      val_ds: validation batches, or ``None``.
      epochs: number of epochs.
      steps_per_epoch: batches per epoch (needed for a repeating dataset).
      validation_steps: batches per validation run (``None`` = all).
      warmup_steps: untimed steps at the start of training.
      progress: show a tqdm bar per epoch.

    Returns:
      A history dict of per-epoch lists: ``loss``, ``accuracy`` (means over
      the epoch's batches), ``val_loss``, ``val_accuracy`` (if ``val_ds``),
      ``input_wait_share``, ``input_bound`` (the verdict), ``epoch_seconds``,
      ``images_per_s``, ``steps``.
    """
    history: dict[str, list[Any]] = {
        key: []
        for key in (
            "loss",
            "accuracy",
            "input_wait_share",
            "input_bound",
            "epoch_seconds",
            "images_per_s",
            "steps",
        )
    }
    if val_ds is not None:
        history["val_loss"], history["val_accuracy"] = [], []
    untimed = warmup_steps
    for epoch in range(epochs):
        start = time.perf_counter()
        timing = _Timing()
        sums: dict[str, float] = {}
        seen = 0
        bar = progress_bar(
            steps_per_epoch, f"epoch {epoch + 1}/{epochs}", enabled=progress, leave=True
        )
        iterator = iter(train_ds)
        step = 0
        while steps_per_epoch is None or step < steps_per_epoch:
            result = timed_step(model, iterator, True)
            if result is None:
                break
            wait, compute, images, logs = result
            step += 1
            if untimed > 0:
                untimed -= 1
            else:
                timing.add(wait, compute, images)
            for key, value in logs.items():
                sums[key] = sums.get(key, 0.0) + value * images
            seen += images
            bar.update(1)
            if progress:
                bar.set_postfix(
                    loss=f"{sums.get('loss', 0.0) / seen:.3f}",
                    acc=f"{sums.get('accuracy', 0.0) / seen:.3f}",
                    wait=f"{timing.share:.0%}",
                )
        bar.close()
        if step == 0:
            raise ValueError(f"epoch {epoch + 1}: the training dataset yielded no batches")
        history["loss"].append(sums.get("loss", float("nan")) / seen)
        history["accuracy"].append(sums.get("accuracy", float("nan")) / seen)
        history["input_wait_share"].append(timing.share)
        history["input_bound"].append(classify_input_bound(timing.share))
        history["steps"].append(step)
        history["images_per_s"].append(
            timing.images / (timing.wait + timing.compute) if timing.steps else float("nan")
        )
        if val_ds is not None:
            logs = evaluate(model, val_ds, steps=validation_steps)
            history["val_loss"].append(logs["loss"])
            history["val_accuracy"].append(logs.get("accuracy", float("nan")))
        history["epoch_seconds"].append(time.perf_counter() - start)
    return history
