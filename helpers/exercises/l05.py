"""Lesson 05 exercises: a reader that beats sequential reading on (simulated) slow
storage, the stages of the classic interleave pipeline in the right order, and a pipeline
that shuffled after batching, fixed.

Timing is measured where it can be trusted on a busy machine: the slow storage
is a *simulation* whose delays are sleeps (:class:`helpers.pipeline.SimulatedSlowStorage`),
so reading shards in parallel wins by a large factor whatever the CPU load,
and the baseline (the same shards read one after another) is timed in the same
call. The other two exercises are checked by behaviour (which elements, in
which batches, how often ``parse`` ran) and by the dataset's stage chain.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from helpers.exercises import CheckFailed, Exercise, register
from helpers.records import read_records, write_records
from helpers.stages import STAGES, stage_chain

#: 05.fast_reader must be at least this many times faster than sequential reading.
MIN_SPEEDUP = 3.0

# ---------------------------------------------------------------------------
# 05.fast_reader
# ---------------------------------------------------------------------------


def _write_shards(
    rng: np.random.Generator, workdir: Path, prefix: str, shards: int, per_shard: tuple[int, int]
) -> list[str]:
    files = []
    next_id = 0
    for s in range(shards):
        n = int(rng.integers(*per_shard))
        records = [f"{next_id + j}".encode() for j in range(n)]
        next_id += n
        path = workdir / f"{prefix}-{s:05d}-of-{shards:05d}.tfrecord"
        write_records(path, records)
        files.append(os.fspath(path))
    return files


def _reader_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    cases = []
    for i in range(2):
        files = _write_shards(rng, workdir, f"slow{i}", int(rng.integers(8, 12)), (3, 12))
        cases.append({"files": files, "delay_per_open_s": 0.15})
    return cases


def _reader_call(func: Any, case: dict[str, Any]) -> Any:
    import tensorflow as tf

    from helpers.pipeline import SimulatedSlowStorage

    storage = SimulatedSlowStorage(delay_per_open_s=case["delay_per_open_s"])
    zero = tf.constant(0, tf.int64)

    def open_shard(filename: Any) -> Any:
        return storage.tfrecord_dataset(filename, zero)

    files = list(case["files"])
    # Warm tf.data and the sleep op up so that neither timing pays for first use.
    no_delay = SimulatedSlowStorage()
    warm = tf.data.Dataset.from_tensor_slices(files[:2]).interleave(
        lambda f: no_delay.tfrecord_dataset(f, zero), cycle_length=2, num_parallel_calls=2
    )
    for _ in warm:
        pass
    dataset = func(files, open_shard)
    if not isinstance(dataset, tf.data.Dataset):
        return {"type": type(dataset).__name__}
    # Best of two passes (a busy machine can stall one); the baseline is one long pass.
    times, records = [], []
    for _ in range(2):
        start = time.perf_counter()
        records = [bytes(r) for r in dataset.as_numpy_iterator()]
        times.append(time.perf_counter() - start)
    seconds = min(times)
    baseline = tf.data.Dataset.from_tensor_slices(files).flat_map(open_shard)
    start = time.perf_counter()
    for _ in baseline:
        pass
    baseline_seconds = time.perf_counter() - start
    return {"records": records, "seconds": seconds, "baseline_seconds": baseline_seconds}


def _reader_verify(case: dict[str, Any], result: Any) -> None:
    files = case["files"]
    call = f"fast_reader(<{len(files)} shards>, open_shard)"
    if "type" in result:
        raise CheckFailed(
            f"{call} returned a {result['type']}, not a tf.data.Dataset",
            "start from tf.data.Dataset.from_tensor_slices(files)",
        )
    expected = sorted(r for f in files for r in read_records(f))
    got = sorted(result["records"])
    if got != expected:
        missing = len(set(expected) - set(got))
        extra = len(got) - len(expected)
        raise CheckFailed(
            f"{call} delivered {len(got)} records, the shards hold {len(expected)} "
            f"({missing} missing, {'+' if extra >= 0 else ''}{extra} in total): every record "
            "of every shard must come out exactly once",
            "interleave(open_shard, ...) over the file names: no take(), no repeat()",
        )
    ratio = result["baseline_seconds"] / max(result["seconds"], 1e-9)
    if ratio < MIN_SPEEDUP:
        raise CheckFailed(
            f"{call} took {result['seconds']:.2f} s, reading the shards one after another took "
            f"{result['baseline_seconds']:.2f} s: only {ratio:.1f}x faster, at least "
            f"{MIN_SPEEDUP:.0f}x is needed (each shard open waits "
            f"{case['delay_per_open_s'] * 1e3:.0f} ms)",
            "open many shards at once: interleave(open_shard, cycle_length=len(files), "
            "num_parallel_calls=len(files), deterministic=False). AUTOTUNE sizes both by "
            "CPU cores, but waiting for storage is not CPU work",
        )


register(
    Exercise(
        key="05.fast_reader",
        target="fast_reader",
        title="read shards in parallel from (simulated) slow storage",
        make_cases=_reader_cases,
        verify=_reader_verify,
        hint="keep many shards opening at once: interleave with an explicit cycle_length and "
        "num_parallel_calls (AUTOTUNE stays within the CPU budget); the order may change",
        call=_reader_call,
    )
)


# ---------------------------------------------------------------------------
# 05.make_pipeline
# ---------------------------------------------------------------------------


def _pipeline_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    cases = []
    for i in range(2):
        files = _write_shards(rng, workdir, f"stage{i}", int(rng.integers(3, 7)), (8, 25))
        cases.append(
            {
                "files": files,
                "batch_size": int(rng.integers(3, 9)),
                "shuffle_buffer": int(rng.integers(200, 1000)),
            }
        )
    return cases


def _pipeline_call(func: Any, case: dict[str, Any]) -> Any:
    import tensorflow as tf

    calls = [0]
    lock = threading.Lock()

    def _parse_py(serialized: Any) -> np.int64:
        with lock:
            calls[0] += 1
        return np.int64(int(serialized.numpy()))

    def parse(serialized: Any) -> tuple[Any, Any]:
        """A record -> (image, id); counts how often it runs."""
        ident = tf.py_function(_parse_py, [serialized], tf.int64)
        ident.set_shape([])
        image = tf.fill([2, 2, 3], tf.cast(ident, tf.float32))
        return image, ident

    dataset = func(list(case["files"]), parse, case["batch_size"], case["shuffle_buffer"])
    if not isinstance(dataset, tf.data.Dataset):
        return {"type": type(dataset).__name__}
    epochs = []
    for _ in range(2):
        batches = []
        for element in dataset.as_numpy_iterator():
            if not isinstance(element, tuple) or len(element) != 2:
                return {"structure": str(type(element).__name__)}
            batches.append([int(v) for v in np.asarray(element[1]).reshape(-1)])
        epochs.append(batches)
    try:
        chain = stage_chain(dataset)
    except Exception:  # noqa: BLE001 - internals moved: behaviour checks still apply
        chain = None
    return {"epochs": epochs, "parse_calls": calls[0], "chain": chain}


def _pipeline_verify(case: dict[str, Any], result: Any) -> None:
    bs = case["batch_size"]
    n = sum(1 for f in case["files"] for _ in read_records(f))
    call = f"make_pipeline(<{len(case['files'])} shards, {n} records>, parse, batch_size={bs})"
    if "type" in result:
        raise CheckFailed(f"{call} returned a {result['type']}, not a tf.data.Dataset")
    if "structure" in result:
        raise CheckFailed(
            f"{call} yields {result['structure']} elements; batches of parse's (image, id) "
            "pairs were expected",
            "map(parse) and keep its output as it is",
        )
    chain = result["chain"]
    for k, batches in enumerate(result["epochs"], start=1):
        sizes = {len(b) for b in batches}
        if sizes - {bs}:
            raise CheckFailed(
                f"{call}: epoch {k} has batches of sizes {sorted(sizes)}; every batch must hold "
                f"exactly {bs} images",
                "batch(batch_size, drop_remainder=True)",
            )
        ids = [i for b in batches for i in b]
        if len(set(ids)) != len(ids):
            raise CheckFailed(f"{call}: epoch {k} delivers some records twice (repeat()?)")
        if len(ids) != n - n % bs:
            raise CheckFailed(
                f"{call}: epoch {k} delivers {len(ids)} records, expected {n - n % bs} "
                f"({n} records in full batches of {bs})"
            )
    if result["parse_calls"] > n:
        raise CheckFailed(
            f"{call}: parse ran {result['parse_calls']} times in two epochs over {n} records: "
            "the decoded records are not cached",
            "put cache() right after map(parse): the second epoch then reads the cache",
        )
    first, second = result["epochs"]
    if first == second:
        raise CheckFailed(
            f"{call}: both epochs give the same batches in the same order: shuffle is missing "
            "or comes before cache (the cache then replays the first epoch's order)",
            "cache() first, then shuffle(shuffle_buffer): reshuffled every epoch",
        )
    if {tuple(sorted(b)) for b in first} == {tuple(sorted(b)) for b in second}:
        raise CheckFailed(
            f"{call}: the same records end up together in both epochs (only the batch order "
            "changes): shuffle after batch moves whole batches",
            "shuffle the records, then batch",
        )
    if chain is None:
        return
    stages = [s for s in chain if s not in ("repeat",)]
    readers = [i for i, s in enumerate(stages) if s.startswith("interleave") or s == "flat_map"]
    if not readers:
        raise CheckFailed(
            f"{call}: no interleave over the shards ({' -> '.join(chain) or 'a bare source'})",
            "files -> interleave(tf.data.TFRecordDataset, num_parallel_calls=AUTOTUNE, ...)",
        )
    stages = stages[readers[0] :]  # a shuffle of the file list before it is fine
    if "interleave (sequential)" in stages or "flat_map" in stages:
        raise CheckFailed(
            f"{call} reads the shards one at a time ({' -> '.join(chain)})",
            "interleave(tf.data.TFRecordDataset, cycle_length=..., "
            "num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)",
        )
    if "map (sequential)" in stages:
        raise CheckFailed(
            f"{call} decodes on one thread ({' -> '.join(chain)})",
            "map(parse, num_parallel_calls=tf.data.AUTOTUNE)",
        )
    wanted = [s for s in stages if s in STAGES]
    if wanted != STAGES:
        missing = [s for s in STAGES if s not in wanted]
        detail = f"missing {', '.join(missing)}" if missing else "in the wrong order"
        raise CheckFailed(
            f"{call}: stages {' -> '.join(chain)}; {detail}. Expected {' -> '.join(STAGES)}",
            "interleave -> map -> cache -> shuffle -> batch -> prefetch",
        )


register(
    Exercise(
        key="05.make_pipeline",
        target="make_pipeline",
        title="the classic interleave pipeline, stages in the right order",
        make_cases=_pipeline_cases,
        verify=_pipeline_verify,
        hint="start from section 1's core chain; cache after the expensive map and before "
        "anything random, shuffle after the cache and before batch, prefetch last",
        call=_pipeline_call,
    )
)


# ---------------------------------------------------------------------------
# 05.shuffle_then_batch
# ---------------------------------------------------------------------------


def _fix_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    cases = []
    for _ in range(3):
        n = int(rng.integers(60, 240))
        cases.append({"n": n, "batch_size": int(rng.integers(4, 17)), "buffer_size": n})
    return cases


def _fix_call(func: Any, case: dict[str, Any]) -> Any:
    import tensorflow as tf

    dataset = func(tf.data.Dataset.range(case["n"]), case["batch_size"], case["buffer_size"])
    if not isinstance(dataset, tf.data.Dataset):
        return {"type": type(dataset).__name__}
    epochs = []
    for _ in range(2):
        epochs.append([np.asarray(b).reshape(-1).tolist() for b in dataset.as_numpy_iterator()])
    return {"epochs": epochs}


def _fix_verify(case: dict[str, Any], result: Any) -> None:
    n, bs = case["n"], case["batch_size"]
    call = f"fixed_pipeline(range({n}), batch_size={bs}, buffer_size={case['buffer_size']})"
    if "type" in result:
        raise CheckFailed(f"{call} returned a {result['type']}, not a tf.data.Dataset")
    for k, batches in enumerate(result["epochs"], start=1):
        sizes = sorted({len(b) for b in batches})
        if sizes != [bs]:
            raise CheckFailed(
                f"{call}: epoch {k} has batches of sizes {sizes}; all must hold {bs}",
                "batch(batch_size, drop_remainder=True)",
            )
        ids = [i for b in batches for i in b]
        if len(ids) != len(set(ids)) or len(ids) != n - n % bs:
            raise CheckFailed(
                f"{call}: epoch {k} delivers {len(ids)} elements ({len(set(ids))} distinct); "
                f"expected {n - n % bs} distinct elements in full batches"
            )
        aligned = sum(1 for b in batches if sorted(b) == list(range(min(b), min(b) + bs)))
        if aligned > len(batches) // 2:
            raise CheckFailed(
                f"{call}: in epoch {k}, {aligned} of {len(batches)} batches are runs of "
                "consecutive elements, e.g. "
                f"{sorted(next(b for b in batches if sorted(b) == list(range(min(b), min(b) + bs))))}: "
                "the elements are batched before they are shuffled (or not shuffled at all, or "
                "through a tiny shuffle buffer)",
                "shuffle(buffer_size) first, then batch(batch_size, drop_remainder=True)",
            )
        span = float(np.mean([max(b) - min(b) for b in batches]))
        if span < n / 4:
            raise CheckFailed(
                f"{call}: in epoch {k} a batch spans only {span:.0f} neighbouring elements on "
                f"average (of {n}): the shuffle buffer is too small to mix the data",
                "use the buffer_size you are given",
            )
    first, second = result["epochs"]
    if first == second:
        raise CheckFailed(
            f"{call}: both epochs give identical batches: the order must change every epoch",
            "keep shuffle's default reshuffle_each_iteration=True",
        )


register(
    Exercise(
        key="05.shuffle_then_batch",
        target="fixed_pipeline",
        title="fix a pipeline that shuffles after batching",
        make_cases=_fix_cases,
        verify=_fix_verify,
        hint="dataset.shuffle(buffer_size).batch(batch_size, drop_remainder=True)",
        call=_fix_call,
    )
)
