"""Lesson 05's stage-by-stage pipelines: each stage adds one ``make_dataset`` knob."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from helpers.pipeline.dataset import make_dataset
from helpers.pipeline.preprocess import AUTOTUNE, ImageSize


def pipeline_stages(
    cycle_length: int | None = None, shuffle_buffer: int = 1000
) -> OrderedDict[str, dict[str, Any]]:
    """The ``make_dataset`` arguments of each cumulative stage of lesson 05.

    Every stage batches (so images/s compare like with like); each adds one
    thing to the previous one.

    Args:
      cycle_length: the interleave cycle length from stage 2 on (``None`` = AUTOTUNE).
      shuffle_buffer: the shuffle buffer of the shuffle stage.

    Returns:
      stage name -> keyword arguments for :func:`make_dataset`.
    """
    stage: dict[str, Any] = {
        "cycle_length": 1,
        "interleave_parallel_calls": None,
        "num_parallel_calls": None,
        "cache": False,
        "training": False,
        "shuffle_buffer": 0,
        "prefetch": None,
    }
    stages: OrderedDict[str, dict[str, Any]] = OrderedDict()
    stages["1 read + map, one file at a time"] = dict(stage)
    stage.update(cycle_length=cycle_length, interleave_parallel_calls=AUTOTUNE)
    stages["2 + interleave"] = dict(stage)
    stage.update(num_parallel_calls=AUTOTUNE)
    stages["3 + parallel map"] = dict(stage)
    stage.update(cache=True)
    stages["4 + cache"] = dict(stage)
    stage.update(training=True, shuffle_buffer=shuffle_buffer)
    stages["5 + shuffle"] = dict(stage)
    stage.update(prefetch=AUTOTUNE)
    stages["6 + prefetch"] = dict(stage)
    return stages


def make_stages(
    source: str | os.PathLike | Sequence[str | os.PathLike],
    batch_size: int = 32,
    image_size: ImageSize = 224,
    *,
    cycle_length: int | None = None,
    shuffle_buffer: int = 1000,
    **kwargs: Any,
) -> OrderedDict[str, tf.data.Dataset]:
    """One dataset per cumulative stage (see :func:`pipeline_stages`), to measure in turn.

    The cache stage only pays off from the second pass: measure it with
    ``measure_throughput(ds, warmup_epochs=1)``.

    Args:
      source: as for :func:`make_dataset`.
      batch_size: images per batch.
      image_size: output size.
      cycle_length: interleave cycle length of stages 2+.
      shuffle_buffer: shuffle buffer of stages 5+.
      **kwargs: more :func:`make_dataset` arguments for every stage
        (``num_classes``, ``storage``, ``seed``, ``deterministic``...).

    Returns:
      stage name -> dataset, in pipeline order.
    """
    out: OrderedDict[str, tf.data.Dataset] = OrderedDict()
    for name, options in pipeline_stages(cycle_length, shuffle_buffer).items():
        out[name] = make_dataset(source, batch_size, image_size, **{**kwargs, **options})
    return out
