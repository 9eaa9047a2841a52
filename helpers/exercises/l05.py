"""Lesson 05 exercises: a reader that opens shards concurrently on (simulated) slow
storage, the stages of the classic interleave pipeline in the right order, and a pipeline
that shuffled after batching, fixed.

Nothing here is judged by speed (which depends on the machine and its load):
``05.fast_reader`` hands the student an ``open_shard`` whose every open waits,
and counts itself how many opens are in flight at once; the other two
exercises are checked by behaviour (which elements, in which batches, how
often ``parse`` ran) and by the dataset's stage chain. The records each shard
holds follow from its file name, so the checker never reads back a file the
student's code could have changed.

These counts are made by the checker's code, but inside the student's process:
in grading, an exercise with ``self_reported=True`` depends on what the kernel
reports (see :class:`helpers.exercises.Exercise`).
"""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from helpers.exercises import CheckFailed, Exercise, register
from helpers.records import write_records
from helpers.stages import STAGES, stage_chain

#: Seconds every open of a shard waits in 05.fast_reader (simulated storage latency).
OPEN_DELAY_S = 0.25
#: Shards that must be opening at the same time for 05.fast_reader to pass (or all of them).
MIN_CONCURRENT_OPENS = 8

_SHARD = re.compile(r"-(\d+)-(\d+)\.tfrecord$")

# ---------------------------------------------------------------------------
# 05.fast_reader
# ---------------------------------------------------------------------------


def _write_shards(
    rng: np.random.Generator, workdir: Path, prefix: str, shards: int, per_shard: tuple[int, int]
) -> list[str]:
    """Shards of records ``b"0"``, ``b"1"``, ...; each name ends with its first id and count."""
    files = []
    next_id = 0
    for s in range(shards):
        n = int(rng.integers(*per_shard))
        records = [f"{next_id + j}".encode() for j in range(n)]
        path = workdir / f"{prefix}-{s:05d}-of-{shards:05d}-{next_id}-{n}.tfrecord"
        next_id += n
        write_records(path, records)
        files.append(os.fspath(path))
    return files


def _shard_records(files: list[str]) -> list[bytes]:
    """What the checker-made shards hold, from their names (the files are not read)."""
    records = []
    for name in files:
        match = _SHARD.search(name)
        if match is None:
            raise ValueError(f"not a checker-made shard: {name}")
        first, count = int(match.group(1)), int(match.group(2))
        records.extend(f"{first + j}".encode() for j in range(count))
    return records


def _reader_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    cases = []
    for i in range(2):
        files = _write_shards(rng, workdir, f"slow{i}", int(rng.integers(8, 12)), (3, 12))
        cases.append({"files": files})
    return cases


class _OpenCounter:
    """Slow storage that counts, by itself, how many opens were in flight at once.

    Every open is TensorFlow's own sleep op (so parallel readers overlap it; a
    ``time.sleep`` in a py_function would not overlap beyond the core count),
    followed by a quick py_function that notes when the open finished. An open
    finishing at ``t`` was in flight during ``[t - OPEN_DELAY_S, t]``.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.finished: list[float] = []

    def _done(self, filename: Any) -> Any:
        with self.lock:
            self.finished.append(time.monotonic())
        return filename

    @property
    def opens(self) -> int:
        return len(self.finished)

    @property
    def peak(self) -> int:
        """The most opens whose waits overlapped."""
        ends = sorted(self.finished)
        best, first = 0, 0
        for last, end in enumerate(ends):
            while ends[first] < end - OPEN_DELAY_S:
                first += 1
            best = max(best, last - first + 1)
        return best

    def open_shard(self, filename: Any) -> Any:
        """The shard's records, after an open that waits :data:`OPEN_DELAY_S`."""
        import tensorflow as tf
        from tensorflow.python.data.experimental.ops import testing

        def done(name: Any) -> Any:
            out = tf.py_function(self._done, [name], tf.string)
            out.set_shape([])
            return out

        return (
            tf.data.Dataset.from_tensors(filename)
            .apply(testing.sleep(int(OPEN_DELAY_S * 1e6)))
            .take(1)  # SleepDataset also sleeps on the call that finds the end
            .map(done)
            .flat_map(tf.data.TFRecordDataset)
        )


def _autotuned(dataset: Any) -> list[str]:
    """Which interleave settings of the dataset are AUTOTUNE (TensorFlow internals)."""
    found, node, seen = [], dataset, 0
    while node is not None and seen < 100:
        for attr in ("_cycle_length", "_num_parallel_calls"):
            value = getattr(node, attr, None)
            try:
                if value is not None and int(value) == -1:
                    found.append(attr.lstrip("_"))
            except (TypeError, ValueError):
                pass
        node = getattr(node, "_input_dataset", None) or getattr(node, "_impl", None)
        seen += 1
    return sorted(set(found))


def _reader_call(func: Any, case: dict[str, Any]) -> Any:
    import tensorflow as tf

    counter = _OpenCounter()
    dataset = func(list(case["files"]), counter.open_shard)
    if not isinstance(dataset, tf.data.Dataset):
        return {"type": type(dataset).__name__}
    records = [bytes(r) for r in dataset.as_numpy_iterator()]
    return {
        "records": records,
        "opens": counter.opens,
        "peak": counter.peak,
        "autotuned": _autotuned(dataset),
    }


def _reader_verify(case: dict[str, Any], result: Any) -> None:
    files = case["files"]
    call = f"fast_reader(<{len(files)} shards>, open_shard)"
    if "type" in result:
        raise CheckFailed(
            f"{call} returned a {result['type']}, not a tf.data.Dataset",
            "start from tf.data.Dataset.from_tensor_slices(files)",
        )
    expected = sorted(_shard_records(files))
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
    if result["opens"] < len(files):
        raise CheckFailed(
            f"{call} opened {result['opens']} of {len(files)} shards through open_shard: the "
            "files were read some other way (e.g. TFRecordDataset(files, num_parallel_reads=...)), "
            "which skips the storage the exercise is about",
            "interleave(open_shard, ...): every shard is opened by open_shard",
        )
    if result["autotuned"]:
        raise CheckFailed(
            f"{call} sets {' and '.join(result['autotuned'])} to AUTOTUNE: tf.data sizes that "
            "by the number of CPU cores (so the same code is fast on one machine and slow on "
            "another), but waiting for storage is not CPU work",
            "give cycle_length and num_parallel_calls explicit numbers, e.g. len(files)",
        )
    need = min(len(files), MIN_CONCURRENT_OPENS)
    if result["peak"] < need:
        raise CheckFailed(
            f"{call} had at most {result['peak']} shard(s) opening at the same time; each open "
            f"waits {OPEN_DELAY_S * 1e3:.0f} ms, so at least {need} must be in flight at once",
            "interleave(open_shard, cycle_length=len(files), num_parallel_calls=len(files), "
            "deterministic=False)",
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
        self_reported=True,
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
    n = len(_shard_records(case["files"]))
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
        self_reported=True,
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
