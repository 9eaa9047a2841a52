"""Lesson 07 exercises: legacy TF1 queue pipelines and their tf.data translation.

The record files an exercise reads are generated from a seed that is part of
their file name, so the checker recomputes what they hold without trusting
(or even reading) the files the student's code touched.

Queue code has two ways to never return: a pipeline without ``num_epochs``
never raises ``OutOfRangeError``, and producers block forever on a full queue
that nobody drains. The ``call`` of these exercises therefore runs the
student's function in a watchdog thread; after :data:`TIMEOUT_SECONDS` it
closes every ``tf.compat.v1.Session`` the function opened (which cancels the
blocked or endless ``run``) and reports the timeout with its likely cause;
the function's remaining cases are then not run again (a fixed function is a
new object and gets a fresh start).
"""

from __future__ import annotations

import os
import re
import threading
import weakref
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from helpers.exercises import CheckFailed, Exercise, register

#: Seconds a student's queue function may run before the watchdog stops it.
TIMEOUT_SECONDS = 20.0
#: Batches read from a student's dataset at most (a dataset that never ends is cut here).
MAX_BATCHES = 200

_NAME = re.compile(r"digits_(\d+)_(\d+)\.tfrecord$")
# Functions that already hit the watchdog: their other cases are not run again.
_TIMED_OUT: weakref.WeakSet[Any] = weakref.WeakSet()
_PIXELS = 64


# ---------------------------------------------------------------------------
# Record files whose contents follow from their names
# ---------------------------------------------------------------------------


def _file_contents(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 13))
    images = rng.integers(0, 256, size=(n, 8, 8), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n).astype(np.int64)
    return images, labels


def _write_files(rng: np.random.Generator, workdir: Path, count: int) -> list[str]:
    from helpers.legacy import write_digit_records

    workdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        seed = int(rng.integers(0, 2**31 - 1))
        path = workdir / f"digits_{i}_{seed}.tfrecord"
        images, labels = _file_contents(seed)
        write_digit_records(path, images, labels)
        paths.append(os.fspath(path))
    return paths


def _contents(paths: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """What the files named in ``paths`` hold, recomputed from their names."""
    images, labels = [], []
    for path in paths:
        match = _NAME.search(os.path.basename(path))
        if match is None:
            raise ValueError(f"not a checker-made file: {path}")
        x, y = _file_contents(int(match.group(2)))
        images.append(x)
        labels.append(y)
    return np.concatenate(images), np.concatenate(labels)


# ---------------------------------------------------------------------------
# The watchdog call
# ---------------------------------------------------------------------------


def _guarded_call(func: Any, case: dict[str, Any], encode: Any = None) -> dict[str, Any]:
    """Run ``func(**case)`` in a thread; stop its sessions after :data:`TIMEOUT_SECONDS`.

    Returns:
      ``{"value": ...}``, ``{"raised": name, "message": text}`` for TensorFlow's
      errors (so the verifier can explain them), or ``{"timeout": seconds}``.
      Any other exception (``NotImplementedError`` included) propagates.
    """
    import tensorflow as tf

    try:
        if func in _TIMED_OUT:  # one endless run per check is enough
            return {"timeout": TIMEOUT_SECONDS}
    except TypeError:  # not weak-referenceable: just run it
        pass
    session_cls = tf.compat.v1.Session
    original_init, original_run = session_cls.__init__, session_cls.run
    opened: list[Any] = []
    dequeued: list[list[Any]] = []

    def tracking_init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        opened.append(self)

    def tracking_run(self: Any, fetches: Any, *args: Any, **kwargs: Any) -> Any:
        result = original_run(self, fetches, *args, **kwargs)
        _note_dequeues(fetches, result, dequeued)
        return result

    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            value = func(**case)
            outcome["ops"] = _queue_ops(opened)
            outcome["dequeued"] = [[int(v) for v in item] for item in _items(dequeued)]
            outcome["value"] = encode(value) if encode else value
        except tf.errors.OpError as err:
            outcome["raised"] = type(err).__name__
            outcome["message"] = (err.message or str(err)).strip()[:500]
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread
            outcome["exception"] = err

    from helpers.legacy import quiet

    session_cls.__init__, session_cls.run = tracking_init, tracking_run
    try:
        with quiet():  # no deprecation or coordinator chatter in the check's output
            worker = threading.Thread(target=target, name="exercise-07", daemon=True)
            worker.start()
            worker.join(TIMEOUT_SECONDS)
    finally:
        session_cls.__init__, session_cls.run = original_init, original_run
    if worker.is_alive():
        for sess in opened:
            try:
                sess.close()
            except Exception:  # noqa: BLE001, S110 - best effort: we only want it stopped
                pass
        worker.join(10)
        try:
            _TIMED_OUT.add(func)
        except TypeError:
            pass
        return {"timeout": TIMEOUT_SECONDS}
    if "exception" in outcome:
        raise outcome["exception"]
    return outcome


def _note_dequeues(fetches: Any, result: Any, dequeued: list[list[Any]]) -> None:
    """Remember what a ``Session.run`` took out of a queue (watched by the checker)."""
    import tensorflow as tf

    try:
        flat_fetches, flat_results = tf.nest.flatten(fetches), tf.nest.flatten(result)
    except (TypeError, ValueError):
        return
    if len(flat_fetches) != len(flat_results):
        return
    taken = [
        value
        for fetch, value in zip(flat_fetches, flat_results, strict=True)
        if getattr(getattr(fetch, "op", None), "type", "").startswith("QueueDequeue")
    ]
    if taken:
        dequeued.append(taken)


def _items(dequeued: list[list[Any]]) -> list[tuple[Any, ...]]:
    """Dequeued components -> one tuple per item (``dequeue_many`` rows split up)."""
    items: list[tuple[Any, ...]] = []
    for components in dequeued:
        arrays = [np.asarray(c) for c in components]
        if all(a.ndim == 0 for a in arrays):
            items.append(tuple(a.item() for a in arrays))
        elif all(a.ndim >= 1 for a in arrays):
            items.extend(zip(*[a.tolist() for a in arrays], strict=False))
    return items


def _queue_ops(sessions: list[Any]) -> list[str]:
    """The queue and reader op types in the graphs the function ran."""
    found: set[str] = set()
    for sess in sessions:
        try:
            found.update(op.type for op in sess.graph.get_operations())
        except Exception:  # noqa: BLE001, S112 - a graph we cannot read shows no queue ops
            continue
    return sorted(t for t in found if "Queue" in t or "Reader" in t)


def _explain_failure(answer: dict[str, Any], timeout_cause: str) -> None:
    """Raise :class:`CheckFailed` for a watchdog timeout or a TensorFlow error."""
    if not isinstance(answer, dict):
        raise CheckFailed(f"malformed answer {answer!r}")
    if "timeout" in answer:
        raise CheckFailed(
            f"your function was still running after {answer['timeout']:.0f} s "
            f"(the checker closed its session to stop it): {timeout_cause}"
        )
    if "raised" in answer:
        name, message = answer["raised"], answer.get("message", "")
        if "limit_epochs" in message or (
            name in ("FailedPreconditionError", "NotFoundError")
            and ("uninitialized" in message.lower() or "Could not find resource" in message)
        ):
            raise CheckFailed(
                f"{name}: the epoch counter that string_input_producer(num_epochs=...) adds "
                "(input_producer/limit_epochs/epochs) is a *local* variable and was never "
                "initialised",
                "run tf.compat.v1.local_variables_initializer() (as well as the global one) "
                "before start_queue_runners",
            )
        if name == "OutOfRangeError":
            raise CheckFailed(
                "OutOfRangeError escaped your function: that error is how the queues say "
                "'num_epochs done', it is the normal way out of the loop",
                "wrap the loop in try / except tf.errors.OutOfRangeError, and return what "
                "you collected",
            )
        if name == "CancelledError":
            raise CheckFailed(
                f"CancelledError: {message[:200]} (a queue was closed while your code "
                "still used it: request_stop / close only after the main loop is done)"
            )
        raise CheckFailed(f"your function raised {name}: {message[:300]}")
    if "value" not in answer:
        raise CheckFailed("your function returned nothing the checker could read")


# ---------------------------------------------------------------------------
# 07.read_epochs
# ---------------------------------------------------------------------------


def _epochs_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    cases = []
    for i in range(3):
        paths = _write_files(rng, workdir / f"case{i}", int(rng.integers(1, 4)))
        cases.append({"paths": paths, "num_epochs": int(rng.integers(1, 5))})
    return cases


def _epochs_call(func: Any, case: dict[str, Any]) -> dict[str, Any]:
    def encode(value: Any) -> Any:
        try:
            return [int(v) for v in value]
        except TypeError:
            return repr(value)[:200]

    return _guarded_call(func, case, encode)


def _epochs_verify(case: dict[str, Any], answer: Any) -> None:
    _explain_failure(
        answer,
        "a string_input_producer without num_epochs hands out file names forever, so "
        "OutOfRangeError never comes",
    )
    labels = answer["value"]
    if not isinstance(labels, list):
        raise CheckFailed(f"read_labels should return a list of labels, got {labels!r}")
    ops = answer.get("ops", [])
    if "TFRecordReaderV2" not in ops or not any(op.startswith("FIFOQueue") for op in ops):
        raise CheckFailed(
            "the labels did not come out of a queue pipeline (the checker found no "
            f"FIFOQueue and TFRecordReader in the graph your session ran: {ops or 'no queue ops'}); "
            "this exercise is about the TF1 queues, tf.data is the next one",
            "string_input_producer(paths, num_epochs=...) -> tf.compat.v1.TFRecordReader().read "
            "-> parse_single_example, run in a tf.compat.v1.Session with queue runners",
        )
    _, expected = _contents(case["paths"])
    epochs, per_epoch = case["num_epochs"], len(expected)
    want = epochs * per_epoch
    if len(labels) != want:
        detail = ""
        if per_epoch and len(labels) % per_epoch == 0:
            detail = f" = {len(labels) // per_epoch} epoch(s)"
        raise CheckFailed(
            f"read {len(labels)} records{detail}; {len(case['paths'])} file(s) with "
            f"{per_epoch} records for num_epochs={epochs} is {want}",
            "pass num_epochs=num_epochs to string_input_producer and read until "
            "OutOfRangeError; read every file (all paths), one record per sess.run",
        )
    got, wanted = Counter(labels), Counter({k: v * epochs for k, v in Counter(expected).items()})
    if got != wanted:
        extra = dict(got - wanted)
        missing = dict(wanted - got)
        raise CheckFailed(
            f"the labels read are not {epochs} x the files' labels: extra {extra}, "
            f"missing {missing}",
            "parse the 'label' feature (tf.io.FixedLenFeature([], tf.int64)) of each record",
        )


register(
    Exercise(
        key="07.read_epochs",
        target="read_labels",
        title="a queue pipeline that stops cleanly after num_epochs",
        make_cases=_epochs_cases,
        verify=_epochs_verify,
        call=_epochs_call,
        self_reported=True,
        hint=(
            "string_input_producer(paths, num_epochs=num_epochs) -> TFRecordReader().read -> "
            "parse_single_example -> label; initialise global and local variables, start the "
            "queue runners with a Coordinator, sess.run the label until OutOfRangeError"
        ),
    )
)


# ---------------------------------------------------------------------------
# 07.coordinated_producers
# ---------------------------------------------------------------------------


def _producers_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    cases = []
    for _ in range(3):
        threads = int(rng.integers(2, 5))
        items = int(rng.integers(3, 9))
        capacity = int(rng.integers(2, min(6, threads * items)))
        cases.append({"num_threads": threads, "items_per_thread": items, "capacity": capacity})
    return cases


def _producers_call(func: Any, case: dict[str, Any]) -> dict[str, Any]:
    def encode(value: Any) -> Any:
        try:
            return [[int(t), int(j)] for t, j in value]
        except (TypeError, ValueError):
            return repr(value)[:200]

    return _guarded_call(func, case, encode)


def _producers_verify(case: dict[str, Any], answer: Any) -> None:
    _explain_failure(
        answer,
        f"the queue holds only {case['capacity']} items, so producers block once it is full; "
        "start the producer threads first, then dequeue in the main thread while they run",
    )
    items = answer["value"]
    if not isinstance(items, list):
        raise CheckFailed(f"return a list of (thread, seq) pairs, got {items!r}")
    n, k = case["num_threads"], case["items_per_thread"]
    pairs = [tuple(p) for p in items]
    ops = answer.get("ops", [])
    if "FIFOQueueV2" not in ops or not any(op.startswith("QueueEnqueue") for op in ops):
        raise CheckFailed(
            "the items did not pass through a tf.compat.v1.FIFOQueue (the checker found "
            f"{ops or 'no queue ops'} in the graph your session ran): Python's queue.Queue, a "
            "list or a tf.data pipeline does not teach the queue + Coordinator pattern",
            "FIFOQueue(capacity, [tf.int32, tf.int32], shapes=[[], []]) with an enqueue op "
            "run by each producer thread and a dequeue op run by the main thread",
        )
    if len(pairs) != n * k:
        raise CheckFailed(
            f"got {len(pairs)} items; {n} threads x {k} items is {n * k}",
            "dequeue exactly num_threads * items_per_thread items, then request_stop and join",
        )
    threads_seen = Counter(t for t, _ in pairs)
    if len(threads_seen) == 1 and n > 1:
        only = next(iter(threads_seen))
        raise CheckFailed(
            f"every item says it came from thread {only}: the threads share one variable "
            "(a lambda or closure created in a loop sees the loop variable's last value)",
            "pass the thread number as an argument: threading.Thread(target=produce, args=(t,))",
        )
    duplicates = [p for p, c in Counter(pairs).items() if c > 1]
    missing = sorted(set((t, j) for t in range(n) for j in range(k)) - set(pairs))
    if duplicates or missing:
        raise CheckFailed(
            f"items {missing[:3]} never arrived"
            + (f" and {duplicates[:3]} arrived more than once" if duplicates else ""),
            "thread t must enqueue (t, 0), (t, 1), ..., (t, items_per_thread - 1) once each",
        )
    delivered = [tuple(p) for p in answer.get("dequeued", [])]
    if delivered != pairs and sorted(delivered) == sorted(pairs):
        raise CheckFailed(
            "you returned the items in another order than the queue delivered them (the "
            f"checker watched every dequeue: it began {delivered[:4]}, you returned "
            f"{pairs[:4]}): the order a FIFOQueue gives is the point of the exercise",
            "append each item as you dequeue it and return that list: no sorting",
        )
    for t in range(n):
        order = [j for tt, j in pairs if tt == t]
        if order != sorted(order):
            raise CheckFailed(
                f"thread {t}'s items came out as {order}: a FIFOQueue keeps each producer's "
                "order, so they should be ascending",
                "use tf.compat.v1.FIFOQueue and return the items in the order you dequeued "
                "them (no RandomShuffleQueue, no sorting or shuffling afterwards)",
            )


register(
    Exercise(
        key="07.coordinated_producers",
        target="produce_and_collect",
        title="Python threads, a FIFOQueue and a Coordinator",
        make_cases=_producers_cases,
        verify=_producers_verify,
        call=_producers_call,
        self_reported=True,
        hint=(
            "FIFOQueue(capacity, [tf.int32, tf.int32], shapes=[[], []]); one enqueue op fed "
            "through placeholders; threading.Thread(target=produce, args=(t,)) per producer; "
            "the main thread dequeues every item, then coord.request_stop() and coord.join()"
        ),
    )
)


# ---------------------------------------------------------------------------
# 07.to_dataset
# ---------------------------------------------------------------------------


def _dataset_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    cases = []
    for i in range(3):
        paths = _write_files(rng, workdir / f"case{i}", int(rng.integers(2, 4)))
        cases.append(
            {
                "paths": paths,
                "num_epochs": int(rng.integers(1, 4)),
                "batch_size": int(rng.integers(3, 8)),
            }
        )
    return cases


def _dataset_call(func: Any, case: dict[str, Any]) -> Any:
    import tensorflow as tf

    dataset = func(**case)
    if not isinstance(dataset, tf.data.Dataset):
        return {"not_dataset": f"{type(dataset).__module__}.{type(dataset).__name__}"}
    batches = []
    for element in dataset.take(MAX_BATCHES + 1):
        if not isinstance(element, (tuple, list)) or len(element) != 2:
            return {"bad_element": repr(tf.nest.map_structure(lambda t: t.shape, element))[:200]}
        images, labels = element
        batches.append([np.asarray(images), np.asarray(labels)])
    return {"batches": batches}


def _check_batch_boundaries(
    case: dict[str, Any], batches: list[Any], want: list[Any], images: Any, labels: Any
) -> None:
    """Batches run across epochs, the last partial batch is dropped, and the count matches."""
    from helpers.legacy import expected_batches

    bs = case["batch_size"]
    per_epoch = expected_batches(images, labels, batch_size=bs, num_epochs=1)
    batched_first = [y for _ in range(case["num_epochs"]) for _, y in per_epoch]
    got_labels = [np.asarray(y).astype(np.int64).tolist() for _, y in batches]
    if (
        case["num_epochs"] > 1
        and got_labels == [y.tolist() for y in batched_first]
        and [y.tolist() for _, y in want] != got_labels
    ):
        raise CheckFailed(
            f"you gave {len(batches)} batches made epoch by epoch (each epoch drops its own "
            f"last partial batch); the queue pipeline's batches run across epoch boundaries, "
            f"giving {len(want)}: batch then repeat is not repeat then batch",
            "repeat(num_epochs) first, then batch(batch_size, drop_remainder=True)",
        )
    sizes = [len(np.atleast_1d(y)) for _, y in batches]
    short = [i for i, s in enumerate(sizes[:-1]) if s != bs]
    if short:
        raise CheckFailed(
            f"batch {short[0] + 1} holds {sizes[short[0]]} examples, not {bs}: the queue's "
            "batches run across epoch boundaries",
            "repeat(num_epochs) before batch(...): batching first leaves a short batch at "
            "the end of every epoch",
        )
    if len(batches) == len(want) + 1 and sizes and sizes[-1] < bs:
        raise CheckFailed(
            f"you gave {len(batches)} batches, the last with {sizes[-1]} examples; the queue "
            f"pipeline gives {len(want)}: tf.train.batch drops the final partial batch "
            "(allow_smaller_final_batch=False)",
            "batch(batch_size, drop_remainder=True)",
        )
    if len(batches) != len(want):
        raise CheckFailed(
            f"you gave {len(batches)} batches, the queue pipeline gives {len(want)} "
            f"({len(labels)} records x {case['num_epochs']} epochs in batches of {bs})",
            "from the files, repeat(num_epochs), map(decode), batch(batch_size, "
            "drop_remainder=True)",
        )


def _check_batch(i: int, x: Any, y: Any, wx: np.ndarray, wy: np.ndarray) -> None:
    """Batch ``i``'s labels and images equal the queue pipeline's, with its dtypes and scaling."""
    y = np.asarray(y)
    if y.shape != wy.shape or not np.array_equal(y.astype(np.int64), wy):
        raise CheckFailed(
            f"batch {i} has labels {y.tolist()}, the queue pipeline's has {wy.tolist()}",
            "no shuffling: the queue pipeline (shuffle=False, one thread) reads the files "
            "in the order given, epoch after epoch",
        )
    if y.dtype != np.int32:
        raise CheckFailed(
            f"labels are {y.dtype}, the queue pipeline's are int32",
            "tf.cast(label, tf.int32)",
        )
    x = np.asarray(x)
    if x.shape != wx.shape:
        raise CheckFailed(
            f"batch {i} images have shape {x.shape}, expected {wx.shape} (batch, {_PIXELS} pixels)",
            "tf.reshape(tf.io.decode_raw(image_raw, tf.uint8), [64])",
        )
    if x.dtype != np.float32:
        raise CheckFailed(
            f"images are {x.dtype}, expected float32 in [0, 1]",
            "tf.cast(pixels, tf.float32) / 255.0",
        )
    if x.max(initial=0) > 1.5:
        raise CheckFailed(
            f"batch {i} pixels go up to {x.max():.0f}: they are not scaled to [0, 1]",
            "divide by 255.0 after casting to float32",
        )
    if not np.allclose(x, wx, atol=1e-6):
        raise CheckFailed(
            f"batch {i} images differ from the queue pipeline's (largest difference "
            f"{np.abs(x - wx).max():.3g})",
            "decode with tf.io.decode_raw(features['image_raw'], tf.uint8), reshape to "
            "[64], cast to float32 and divide by 255",
        )


def _dataset_verify(case: dict[str, Any], answer: Any) -> None:
    from helpers.legacy import expected_batches

    if "not_dataset" in answer:
        raise CheckFailed(f"to_dataset returned a {answer['not_dataset']}, not a tf.data.Dataset")
    if "bad_element" in answer:
        raise CheckFailed(
            f"each element should be a pair (images, labels), got {answer['bad_element']}",
            "map a function that returns (image, label)",
        )
    batches = answer["batches"]
    images, labels = _contents(case["paths"])
    want = expected_batches(
        images, labels, batch_size=case["batch_size"], num_epochs=case["num_epochs"]
    )
    if len(batches) > MAX_BATCHES:
        raise CheckFailed(
            f"your dataset was still going after {MAX_BATCHES} batches; the queue pipeline "
            f"gives {len(want)}",
            "repeat(num_epochs), not repeat(): the queue stopped after num_epochs",
        )
    _check_batch_boundaries(case, batches, want, images, labels)
    for i, ((x, y), (wx, wy)) in enumerate(zip(batches, want, strict=True), start=1):
        _check_batch(i, x, y, wx, wy)


register(
    Exercise(
        key="07.to_dataset",
        target="to_dataset",
        title="translate a queue pipeline to tf.data, batch for batch",
        make_cases=_dataset_cases,
        verify=_dataset_verify,
        call=_dataset_call,
        hint=(
            "tf.data.TFRecordDataset(paths).repeat(num_epochs).map(decode)"
            ".batch(batch_size, drop_remainder=True), with decode giving "
            "(float32 [64] in [0, 1], int32 label)"
        ),
        unavailable=("helpers.legacy.dataset_batches",),
    )
)
