"""A TensorBoard profile of a few training steps (the input-pipeline analysis)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from helpers.train.loop import timed_step


def profile_steps(
    logdir: str | os.PathLike,
    model: keras.Model,
    dataset: Iterable[Any],
    steps: int = 5,
    warmup: int = 2,
) -> list[str]:
    """Capture a TensorBoard profile of ``steps`` training steps into ``logdir``.

    Uses ``tf.profiler.experimental.start / stop`` with a ``Trace`` per step
    (``step_num`` lets the profiler's input-pipeline page compute the input
    share). Works on CPU; writing needs only TensorFlow. To *view* it install
    ``tensorboard`` and ``tensorboard-plugin-profile`` and run
    ``tensorboard --logdir LOGDIR`` (Profile tab). With ``model.fit`` the same
    is ``keras.callbacks.TensorBoard(log_dir, profile_batch=(10, 15))``.

    Args:
      logdir: output directory (created).
      model: a compiled Keras model.
      dataset: ``(images, labels)`` batches (at least ``warmup + steps``).
      steps: profiled steps.
      warmup: untraced steps first (tracing, buffer fill).

    Returns:
      The files written under ``logdir/plugins/profile/`` (``*.xplane.pb``).

    Raises:
      RuntimeError: a profiler session is already running.
    """
    logdir = os.fspath(logdir)
    os.makedirs(logdir, exist_ok=True)
    iterator = iter(dataset)
    for _ in range(warmup):
        if timed_step(model, iterator, True) is None:
            break
    try:
        tf.profiler.experimental.start(logdir)
    except (tf.errors.AlreadyExistsError, tf.errors.UnavailableError) as err:
        raise RuntimeError(
            f"cannot start the profiler ({err.message}); stop the other session first "
            "(tf.profiler.experimental.stop())"
        ) from None
    try:
        for step in range(steps):
            with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
                if timed_step(model, iterator, True) is None:
                    break
    finally:
        tf.profiler.experimental.stop()
    root = Path(logdir) / "plugins" / "profile"
    return sorted(str(p) for p in root.rglob("*") if p.is_file()) if root.exists() else []
