"""Probes run in child processes: peak memory of the default pipeline, input wait while training."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from helpers.bench.machine import write_proc_file
from helpers.bench.settings import BATCH_SIZE, IMAGE_SIZE, MB


def reference_memory(
    record_bytes: float,
    *,
    shuffle_buffer: int = 1000,
    batch_size: int = BATCH_SIZE,
    image_size: int = IMAGE_SIZE,
    batches_in_flight: int = 3,
    images_in_flight: int = 2,
) -> dict[str, float]:
    """What the default training pipeline needs to hold, in MB (the memory figure's yardstick).

    :func:`helpers.pipeline.estimate_pipeline_memory` (the course's one
    estimator, which shuffles serialized records as ``make_dataset`` does
    without ``cache``) for the defaults, with ``images_in_flight`` cores:
    one shuffle buffer of records, the decoded batches in flight (prefetched
    ones plus the one being assembled), the images being decoded, and one read
    buffer per open shard.

    Args:
      record_bytes: mean serialized record size in bytes.
      shuffle_buffer: records in the shuffle buffer.
      batch_size, image_size: batch shape.
      batches_in_flight: decoded batches held at once (>= 1: the one being assembled).
      images_in_flight: parallel map calls and open shards (AUTOTUNE: the cores).

    Returns:
      ``shuffle_buffer_mb``, ``batches_mb``, ``decode_mb``, ``read_buffers_mb``,
      ``total_mb`` and the size of one decoded image (``image_mb``).
    """
    from helpers.pipeline import estimate_pipeline_memory

    est = estimate_pipeline_memory(
        image_size,
        batch_size,
        shuffle_buffer=shuffle_buffer,
        record_bytes=record_bytes,
        prefetch_batches=max(batches_in_flight - 1, 0),
        parallel_calls=images_in_flight,
        cycle_length=images_in_flight,
    )
    parts = {
        "shuffle_buffer_mb": est["shuffle_buffer"] / MB,
        "batches_mb": (est["batch"] + est["prefetch"]) / MB,
        "decode_mb": est["map_in_flight"] / MB,
        "read_buffers_mb": est["interleave_buffers"] / MB,
    }
    return {**parts, "total_mb": est["total"] / MB, "image_mb": est["element"] / MB}


def _rss_sampler(interval: float = 0.005) -> tuple[Callable[[], int], threading.Event]:
    import psutil

    proc = psutil.Process()
    peak = [proc.memory_info().rss]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            with contextlib.suppress(Exception):
                peak[0] = max(peak[0], proc.memory_info().rss)
            stop.wait(interval)

    threading.Thread(target=sample, daemon=True).start()
    return (lambda: peak[0]), stop


def _vm_hwm() -> int | None:
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    return None


def _reset_hwm() -> bool:
    """Reset this process's peak RSS (``VmHWM``); False when the kernel does not allow it."""
    return write_proc_file("/proc/self/clear_refs", "5\n")


def memory_probe(shards: str, epochs: int = 1) -> dict[str, Any]:
    """(subprocess) Peak RSS growth while the default training pipeline runs."""
    import gc

    import psutil
    import tensorflow as tf

    from helpers import pipeline

    proc = psutil.Process()
    # Warm TF up with the same ops (kernels, thread pools), then take the base line.
    for _ in pipeline.make_dataset(shards, batch_size=2, training=False, prefetch=None).take(2):
        pass
    dataset = pipeline.make_dataset(shards, batch_size=BATCH_SIZE, image_size=IMAGE_SIZE)
    gc.collect()
    base = proc.memory_info().rss
    hwm_reset = _reset_hwm()
    peak_fn, stop = _rss_sampler()
    images = 0
    started = time.perf_counter()
    for _ in range(epochs):
        for x, _y in dataset:
            images += int(x.shape[0])
    seconds = time.perf_counter() - started
    stop.set()
    sampled = peak_fn()
    hwm = _vm_hwm() if hwm_reset else None
    peak = max(sampled, hwm or 0)
    return {
        "base_rss_mb": base / MB,
        "peak_rss_mb": peak / MB,
        "sampled_peak_mb": sampled / MB,
        "vm_hwm_mb": None if hwm is None else hwm / MB,
        "growth_mb": (peak - base) / MB,
        "images": images,
        "seconds": seconds,
        "tensorflow": tf.__version__,
    }


def train_probe(
    shards: str, steps: int, windows: int, alpha: float, image_size: int, warmup: int
) -> dict[str, Any]:
    """(subprocess) Input-wait share of lesson 06's MobileNet over ``windows`` windows."""
    import tensorflow as tf

    from helpers import pipeline, train

    tf.keras.utils.set_random_seed(0)
    manifest = pipeline.read_manifest(shards)
    num_classes = int(manifest["num_classes"])
    model = train.build_mobilenet(num_classes, image_size=image_size, alpha=alpha)
    dataset = pipeline.make_dataset(
        shards, batch_size=BATCH_SIZE, image_size=image_size, training=True, repeat=True, seed=0
    )
    iterator = iter(dataset)
    results = []
    for w in range(windows):
        results.append(
            train.measure_input_wait(model, iterator, steps=steps, warmup=warmup if w == 0 else 0)
        )
    return {
        "shares": [r["input_wait_share"] for r in results],
        "mean_step_ms": [r["mean_step_ms"] for r in results],
        "mean_wait_ms": [r["mean_wait_ms"] for r in results],
        "images_per_s": [r["images_per_s"] for r in results],
        "verdicts": [r["verdict"] for r in results],
        "alpha": alpha,
        "image_size": image_size,
        "steps_per_window": steps,
        "device": train.choose_device().name,
    }
