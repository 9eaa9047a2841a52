"""Lesson 05's measurements: the pipeline stage by stage, three readers, memory costs.

Built on :mod:`helpers.pipeline` (the datasets, the slow-storage simulation and
the throughput meter); this module only decides *what* to measure and how to
report it, so the notebook stays short:

* :func:`measure_stages` -- images/s of each cumulative stage of
  :func:`helpers.pipeline.make_stages` (sequential read -> + interleave ->
  + parallel map -> + cache -> + shuffle -> + prefetch);
* :func:`measure_cycle_lengths` -- the same pipeline for several
  ``interleave`` cycle lengths (sequential, AUTOTUNE, 2, 4, 8...);
* :func:`compare_readers` -- the same images through a Python generator
  (PIL), a one-file-per-image tf.data pipeline and TFRecord shards, on local
  disk or under a :class:`helpers.pipeline.SimulatedSlowStorage`;
* :func:`memory_costs` / :func:`format_bytes` -- what ``cycle_length``,
  ``shuffle`` buffers, ``cache`` and ``prefetch`` hold in memory, for the
  fixture and for ImageNet, float32 vs uint8;
* :func:`rss_bytes` -- this process's resident memory, to check an estimate.

Throughput figures depend on the machine and its load: compare ratios measured
in the same run, never absolute numbers across machines.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "STAGES",
    "StageResult",
    "compare_readers",
    "format_bytes",
    "memory_costs",
    "measure_cycle_lengths",
    "measure_stages",
    "rss_bytes",
    "stage_chain",
]


@dataclass(frozen=True)
class StageResult:
    """One measured pipeline.

    Attributes:
      name: what was measured (e.g. ``"3 + parallel map"``).
      images_per_s: images delivered per second (timed part only).
      images: images timed.
      seconds: timed seconds.
    """

    name: str
    images_per_s: float
    images: int
    seconds: float


def _measure(name: str, dataset: Any, warmup_epochs: int = 0, repeats: int = 1) -> StageResult:
    """Best of ``repeats`` timed passes (a busy machine slows single passes down at random)."""
    from helpers.pipeline import measure_throughput

    best: StageResult | None = None
    for i in range(max(1, repeats)):
        result = measure_throughput(dataset, warmup=1, warmup_epochs=warmup_epochs if i == 0 else 0)
        current = StageResult(
            name, result["images_per_s"], int(result["images"]), result["seconds"]
        )
        if best is None or current.images_per_s > best.images_per_s:
            best = current
    assert best is not None
    return best


def measure_stages(
    source: str | os.PathLike | Sequence[str | os.PathLike],
    batch_size: int = 32,
    image_size: int = 224,
    *,
    epochs: int = 3,
    cycle_length: int | None = None,
    shuffle_buffer: int = 1000,
    seed: int | None = 0,
    first: int | None = None,
    repeats: int = 1,
    **kwargs: Any,
) -> list[StageResult]:
    """Measure each cumulative stage of the TFRecord pipeline, one after another.

    Every stage reads ``epochs`` passes over the shards (``repeat``) and
    batches with ``drop_remainder=True``, so the rates compare like with like.
    A stage with ``cache`` is measured after one untimed pass has filled the
    cache (a cache pays from the second epoch on); the other stages after one
    untimed batch (start-up, tracing).

    Args:
      source: converter output directory, manifest, or shard list.
      batch_size: images per batch.
      image_size: output image side.
      epochs: passes timed per stage.
      cycle_length: interleave cycle length from the interleave stage on
        (``None`` = AUTOTUNE = the number of CPU cores).
      shuffle_buffer: shuffle buffer of the shuffle stage.
      seed: shuffle seed.
      first: measure only the first ``first`` stages (``None`` = all).
      repeats: time each stage this many times and keep the best rate.
      **kwargs: more :func:`helpers.pipeline.make_dataset` arguments for every
        stage (``num_classes``, ``storage``, ...).

    Returns:
      One :class:`StageResult` per stage, in pipeline order.
    """
    from helpers.pipeline import make_stages, pipeline_stages

    options = pipeline_stages(cycle_length, shuffle_buffer)
    stages = make_stages(
        source,
        batch_size,
        image_size,
        cycle_length=cycle_length,
        shuffle_buffer=shuffle_buffer,
        seed=seed,
        repeat=epochs,
        **kwargs,
    )
    results = []
    for name, dataset in list(stages.items())[:first]:
        cached = bool(options[name].get("cache"))
        results.append(_measure(name, dataset, 1 if cached else 0, repeats))
    return results


def measure_cycle_lengths(
    source: str | os.PathLike | Sequence[str | os.PathLike],
    batch_size: int = 32,
    image_size: int = 224,
    cycle_lengths: Sequence[int | None] = (1, None, 2, 4, 8),
    *,
    epochs: int = 1,
    repeats: int = 1,
    **kwargs: Any,
) -> list[StageResult]:
    """Throughput of the TFRecord pipeline for several ``interleave`` cycle lengths.

    ``1`` reads the shards one after another (no parallel calls); ``None``
    means ``cycle_length=AUTOTUNE`` and ``num_parallel_calls=AUTOTUNE`` (which
    tf.data sizes by CPU cores); any other ``n`` keeps ``n`` shards open, read
    by ``n`` threads. Decoding is a parallel ``map`` in every case; no cache,
    no shuffle.

    Args:
      source: converter output directory, manifest, or shard list.
      batch_size: images per batch.
      image_size: output image side.
      cycle_lengths: the settings to measure, in order.
      epochs: passes timed per setting.
      repeats: time each setting this many times and keep the best rate.
      **kwargs: more :func:`helpers.pipeline.make_dataset` arguments
        (``num_classes``, ``storage``, ...).

    Returns:
      One :class:`StageResult` per setting, named ``"cycle_length=..."``.
    """
    from helpers.pipeline import AUTOTUNE, make_dataset

    results = []
    for cycle in cycle_lengths:
        if cycle is None:
            name, options = "cycle_length=AUTOTUNE", {"interleave_parallel_calls": AUTOTUNE}
        elif int(cycle) == 1:
            name, options = "cycle_length=1 (sequential)", {"interleave_parallel_calls": None}
        else:
            name, options = f"cycle_length={int(cycle)}", {"interleave_parallel_calls": int(cycle)}
        dataset = make_dataset(
            source,
            batch_size,
            image_size,
            training=False,
            cycle_length=cycle,
            repeat=epochs,
            **options,
            **kwargs,
        )
        results.append(_measure(name, dataset, repeats=repeats))
    return results


def compare_readers(
    image_paths: Sequence[str | os.PathLike],
    labels: Sequence[int],
    shards: str | os.PathLike | Sequence[str | os.PathLike],
    num_classes: int,
    *,
    batch_size: int = 32,
    image_size: int = 224,
    epochs: int = 1,
    storage: Any = None,
    parallel: int = 8,
    generator: bool = True,
    generator_limit: int | None = None,
    repeats: int = 1,
) -> dict[str, StageResult]:
    """The same images read three ways, no cache, no shuffle: which reader is fastest?

    * ``"Python generator (PIL)"``: one image at a time in Python (a common tutorial's baseline);
    * ``"tf.data, one file per image"``: ``read_file`` + decode in a parallel
      map (under ``storage``: ``parallel`` concurrent reads);
    * ``"tf.data, TFRecord shards"``: ``interleave`` over the shards with
      ``cycle_length=parallel`` shards open, read by ``parallel`` threads, then
      the same parallel decode.

    All three decode, resize to ``image_size``, scale to ``[-1, 1]``, one-hot
    and batch the same way.

    Args:
      image_paths: the image files (the ones converted into ``shards``).
      labels: their labels.
      shards: the TFRecord shards of the same images.
      num_classes: one-hot depth.
      batch_size: images per batch.
      image_size: output side.
      epochs: passes timed.
      storage: ``None`` (local disk) or a
        :class:`helpers.pipeline.SimulatedSlowStorage` -- a simulation.
      parallel: concurrent reads for the tf.data readers (file reads for the
        per-file pipeline, open shards for TFRecord).
      generator: also measure the (slow) generator.
      generator_limit: time the generator on the first ``generator_limit``
        images only, in batches of at most half of them (a rate per image does
        not need them all, and the generator under slow storage takes minutes).
      repeats: time the tf.data readers this many times and keep the best rate
        (the generator is timed once).

    Returns:
      reader name -> :class:`StageResult`.
    """
    from helpers.pipeline import generator_dataset, make_dataset, per_file_dataset

    common = {"batch_size": batch_size, "image_size": image_size, "num_classes": num_classes}
    out: dict[str, StageResult] = {}
    if generator:
        paths, labs = list(image_paths)[:generator_limit], list(labels)[:generator_limit]
        # at least two batches: the first one is the untimed warm-up
        gen_batch = max(1, min(batch_size, len(paths) // 2))
        gen = generator_dataset(
            paths,
            labs,
            storage=storage,
            batch_size=gen_batch,
            image_size=image_size,
            num_classes=num_classes,
        )
        name = "Python generator (PIL)"
        out[name] = _measure(name, gen.repeat(epochs) if epochs > 1 else gen)
    name = "tf.data, one file per image"
    per_file = per_file_dataset(
        image_paths,
        labels,
        storage=storage,
        parallel_reads=parallel,
        repeat=epochs,
        **common,
    )
    out[name] = _measure(name, per_file, repeats=repeats)
    name = "tf.data, TFRecord shards"
    records = make_dataset(
        shards,
        training=False,
        cycle_length=parallel,
        interleave_parallel_calls=parallel,
        storage=storage,
        repeat=epochs,
        **common,
    )
    out[name] = _measure(name, records, repeats=repeats)
    return out


def format_bytes(n: float) -> str:
    """``1536`` -> ``"1.5 KiB"``; binary units up to TiB.

    Args:
      n: a number of bytes.

    Returns:
      A short human-readable size.
    """
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def memory_costs(scenarios: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Estimate the buffers of several pipelines, one row per scenario.

    Each scenario is a set of :func:`helpers.pipeline.estimate_pipeline_memory`
    arguments (``image_size``, ``batch_size``, ``shuffle_buffer``,
    ``cache_images``, ``cycle_length``, ``bytes_per_value`` ...).

    Args:
      scenarios: scenario name -> arguments.

    Returns:
      Rows ``{"scenario", "element", "shuffle_buffer", "cache",
      "interleave_buffers", "map_in_flight", "batch", "prefetch", "total"}`` in bytes.
    """
    from helpers.pipeline import estimate_pipeline_memory

    rows = []
    for name, options in scenarios.items():
        rows.append({"scenario": name, **estimate_pipeline_memory(**dict(options))})
    return rows


def rss_bytes() -> int:
    """This process's resident set size in bytes (``psutil``).

    Returns:
      Bytes of physical memory the process uses now.
    """
    import psutil

    return int(psutil.Process().memory_info().rss)


_STAGE_OF_CLASS = {
    "_ParallelInterleaveDataset": "interleave",
    "ParallelInterleaveDataset": "interleave",  # TFRecordDataset(num_parallel_reads=...)
    "_InterleaveDataset": "interleave (sequential)",
    "_FlatMapDataset": "flat_map",
    "_ParallelMapDataset": "map",
    "_MapDataset": "map (sequential)",
    "CacheDataset": "cache",
    "_CacheDataset": "cache",
    "_ShuffleDataset": "shuffle",
    "_BatchDataset": "batch",
    "_ParallelBatchDataset": "batch",
    "_PaddedBatchDataset": "padded_batch",
    "_PrefetchDataset": "prefetch",
    "_RepeatDataset": "repeat",
    "_TakeDataset": "take",
}
#: A common tutorial's pipeline after the file list, in order.
STAGES = ["interleave", "map", "cache", "shuffle", "batch", "prefetch"]
_SOURCES = (
    "_TensorSliceDataset",
    "_TensorDataset",
    "_OptionsDataset",
    "DatasetV2Adapter",
    "TFRecordDatasetV2",
    "_TFRecordDataset",
)


def stage_chain(dataset: Any) -> list[str]:
    """The transformations of a dataset, from the source to the output.

    Walks ``_input_dataset`` links (TensorFlow internals; an unknown class is
    listed by its class name).

    Args:
      dataset: a ``tf.data.Dataset``.

    Returns:
      Stage names such as ``["interleave", "map", "cache", ...]``.
    """
    chain = []
    node = dataset
    seen = 0
    while node is not None and seen < 100:
        name = type(node).__name__
        if name in _STAGE_OF_CLASS:
            chain.append(_STAGE_OF_CLASS[name])
        elif name not in _SOURCES:
            chain.append(name.lstrip("_"))
        # TFRecordDataset(files, num_parallel_reads=...) wraps its interleave in ``_impl``
        node = getattr(node, "_input_dataset", None) or getattr(node, "_impl", None)
        seen += 1
    return chain[::-1]
