"""TF1 queue-based input pipelines, run through ``tf.compat.v1`` in graph mode.

Before ``tf.data`` (TF 1.4, November 2017) a TensorFlow input pipeline was a
chain of queues living *inside* the graph, kept full by Python threads::

    filenames ──string_input_producer──▶ [filename queue]
        ──TFRecordReader.read──▶ parse_single_example ──▶ decode_raw
        ──shuffle_batch──▶ [RandomShuffleQueue] ──dequeue_many──▶ model

Each ``*_producer`` / ``*batch`` call adds a queue plus a ``QueueRunner`` (the
recipe for the threads that fill it) to the graph. Nothing moves until
``start_queue_runners`` starts those threads; a ``Coordinator`` stops them;
the end of the data arrives as ``tf.errors.OutOfRangeError`` once the
filename queue has handed out ``num_epochs`` epochs and every queue behind it
is drained.

Everything here builds its own ``tf.Graph`` (see :func:`graph_mode`) and runs
it in a ``tf.compat.v1.Session``; eager execution stays on for everything
else in the process. TensorFlow's deprecation warnings for these APIs are
silenced inside :func:`graph_mode`; :func:`deprecation_note` shows what they
say, and :data:`QUEUE_TO_DATA` maps every queue API to its ``tf.data``
replacement.

CLI::

    python -m helpers.legacy table                 # the queue API -> tf.data table
    python -m helpers.legacy train [--epochs N]    # softmax regression on the digits, both ways
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from helpers.features import serialize_example

v1 = tf.compat.v1

__all__ = [
    "DIGIT_SPEC",
    "QUEUE_TO_DATA",
    "QueueRun",
    "TrainResult",
    "dataset_batches",
    "decode_digit",
    "deprecation_note",
    "evaluate_softmax",
    "expected_batches",
    "graph_mode",
    "main",
    "min_after_dequeue_blocks",
    "queue_batches",
    "queue_runner_shuffle",
    "quiet",
    "run_queue_pipeline",
    "steps_until_out_of_range",
    "threaded_producers",
    "train_softmax_dataset",
    "train_softmax_queue",
    "write_digit_records",
]

#: The parsing spec of the digit records written by :func:`write_digit_records`.
DIGIT_SPEC: dict[str, Any] = {
    "height": tf.io.FixedLenFeature([], tf.int64),
    "width": tf.io.FixedLenFeature([], tf.int64),
    "depth": tf.io.FixedLenFeature([], tf.int64),
    "label": tf.io.FixedLenFeature([], tf.int64),
    "image_raw": tf.io.FixedLenFeature([], tf.string),
}

#: Queue API (TF1) -> its tf.data replacement -> what to watch out for.
QUEUE_TO_DATA: list[tuple[str, str, str]] = [
    (
        "tf.train.string_input_producer(files, num_epochs=N, shuffle=True)",
        "tf.data.Dataset.from_tensor_slices(files).shuffle(len(files)).repeat(N)",
        "num_epochs needs local_variables_initializer(); repeat(N) needs nothing",
    ),
    (
        "tf.TFRecordReader().read(filename_queue)",
        "tf.data.TFRecordDataset(files)",
        "reads one file after the other, as one reader did; files.interleave(...) reads "
        "several at once (lesson 05)",
    ),
    (
        "tf.parse_single_example(serialized, spec)",
        "dataset.map(lambda s: tf.io.parse_single_example(s, spec))",
        "the same op; batch first and use tf.io.parse_example to parse whole batches",
    ),
    (
        "tf.decode_raw(bytes, tf.uint8)",
        "tf.io.decode_raw(bytes, tf.uint8) inside map()",
        "the same op; set the static shape with tf.reshape",
    ),
    (
        "tf.train.batch(t, batch_size)",
        "dataset.batch(batch_size, drop_remainder=True)",
        "the queue drops the last partial batch unless allow_smaller_final_batch=True",
    ),
    (
        "tf.train.shuffle_batch(t, batch_size, capacity, min_after_dequeue)",
        "dataset.shuffle(min_after_dequeue).batch(batch_size)",
        "shuffle(buffer_size) keeps a buffer, as min_after_dequeue did; seed it to repeat a run",
    ),
    (
        "num_threads=k in shuffle_batch / batch",
        "dataset.map(f, num_parallel_calls=tf.data.AUTOTUNE)",
        "k threads each ran the whole reader/decoder chain",
    ),
    (
        "tf.FIFOQueue / tf.RandomShuffleQueue + tf.train.QueueRunner",
        "dataset.prefetch(tf.data.AUTOTUNE)",
        "the dataset is the queue; prefetch is the buffer between producer and consumer, "
        "with no threads of yours to start or stop",
    ),
    (
        "tf.train.start_queue_runners(sess, coord) + tf.train.Coordinator",
        "for images, labels in dataset: ...",
        "iterating starts the pipeline, leaving the loop stops it; model.fit(dataset) too",
    ),
    (
        "except tf.errors.OutOfRangeError:",
        "(nothing: the for loop ends)",
        "after repeat(N) the dataset ends; next(iterator) by hand raises StopIteration",
    ),
]


@contextlib.contextmanager
def graph_mode(seed: int | None = 0, silence: bool = True) -> Iterator[tf.Graph]:
    """A fresh ``tf.Graph`` as the default graph, eager execution untouched outside it.

    Args:
      seed: graph-level random seed (``tf.compat.v1.set_random_seed``); ``None`` for none.
      silence: run the block under :func:`quiet` (no deprecation warnings).

    Yields:
      The graph; build ops inside the ``with`` block and run them in
      ``tf.compat.v1.Session(graph=graph)``.
    """
    graph = tf.Graph()
    hush = quiet() if silence else contextlib.nullcontext()
    with graph.as_default(), hush:
        if seed is not None:
            v1.set_random_seed(seed)
        yield graph


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Hide TensorFlow's chatter about the queue APIs while the block runs.

    Two kinds: deprecation warnings (printed on first *use* of each API, e.g.
    ``start_queue_runners``) and the ``INFO`` line plus traceback that a
    ``Coordinator`` logs when a thread reports an error (the error itself is
    still re-raised by ``coord.join``). In a notebook TensorFlow's Python
    logger writes to stdout, so without this the cell output would change
    with line numbers and thread timing.
    """
    from tensorflow.python.util import deprecation

    logger = tf.get_logger()
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with deprecation.silence():
            yield
    finally:
        logger.setLevel(level)


def deprecation_note(api: Any) -> str | None:
    """The "Instructions for updating" paragraph TensorFlow attaches to a deprecated API.

    Args:
      api: e.g. ``tf.compat.v1.train.shuffle_batch`` or ``tf.compat.v1.TFRecordReader``.

    Returns:
      The note as one line, or ``None`` if the API carries none.
    """
    for obj in (api, getattr(api, "__init__", None)):
        doc = getattr(obj, "__doc__", None) or ""
        start = doc.find("Instructions for updating:")
        if start < 0:
            continue
        body = doc[start + len("Instructions for updating:") :].strip()
        return " ".join(body.split("\n\n")[0].split())
    return None


# ---------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------


def write_digit_records(
    path: str | os.PathLike, images: np.ndarray, labels: Sequence[int] | np.ndarray
) -> int:
    """Write raw-pixel images as ``tf.train.Example`` records.

    Each record holds ``height``, ``width``, ``depth``, ``label`` (int64) and
    ``image_raw`` (the ``uint8`` pixels as bytes), the layout of the MNIST
    TFRecords in "Learning TensorFlow" (seed 004).

    Args:
      path: output ``.tfrecord`` file.
      images: ``uint8`` array ``(N, height, width)`` or ``(N, height, width, depth)``.
      labels: ``N`` integer labels.

    Returns:
      The number of records written.
    """
    images = np.asarray(images)
    if images.dtype != np.uint8:
        raise TypeError(f"images must be uint8 (raw pixels), got {images.dtype}")
    if images.ndim == 3:
        images = images[..., None]
    if images.ndim != 4 or len(images) != len(labels):
        raise ValueError(
            f"need images (N, H, W[, D]) and N labels, got {images.shape} and {len(labels)}"
        )
    _, height, width, depth = images.shape
    with tf.io.TFRecordWriter(os.fspath(path)) as writer:
        for image, label in zip(images, labels, strict=True):
            writer.write(
                serialize_example(
                    {
                        "height": height,
                        "width": width,
                        "depth": depth,
                        "label": int(label),
                        "image_raw": image.tobytes(),
                    }
                )
            )
    return len(images)


def decode_digit(serialized: tf.Tensor, pixels: int = 64) -> tuple[tf.Tensor, tf.Tensor]:
    """One serialized digit record -> (``float32`` pixels in [0, 1], ``int32`` label).

    The same function serves the queue pipeline (graph mode) and ``Dataset.map``:
    ``parse_single_example`` and ``decode_raw`` are the same ops in both.

    Args:
      serialized: a scalar string tensor (one record).
      pixels: ``height * width * depth``; fixes the static shape for batching.

    Returns:
      ``(image, label)``: ``float32 [pixels]`` and ``int32 []``.
    """
    features = tf.io.parse_single_example(serialized, DIGIT_SPEC)
    image = tf.io.decode_raw(features["image_raw"], tf.uint8)
    image = tf.reshape(image, [pixels])
    image = tf.cast(image, tf.float32) / 255.0
    return image, tf.cast(features["label"], tf.int32)


# ---------------------------------------------------------------------------
# Queues
# ---------------------------------------------------------------------------


def queue_batches(
    paths: Sequence[str | os.PathLike],
    *,
    batch_size: int,
    num_epochs: int | None,
    shuffle: bool = True,
    capacity: int | None = None,
    min_after_dequeue: int | None = None,
    num_threads: int = 1,
    allow_smaller_final_batch: bool = False,
    pixels: int = 64,
    seed: int | None = 0,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Build the classic queue pipeline in the current (graph-mode) default graph.

    ``string_input_producer(num_epochs) -> TFRecordReader -> parse_single_example
    -> decode_raw -> shuffle_batch`` (or ``batch`` when ``shuffle=False``).

    Args:
      paths: TFRecord files of digit records.
      batch_size: examples per batch.
      num_epochs: epochs before ``OutOfRangeError``; ``None`` reads forever.
      shuffle: shuffle file names and examples (``shuffle_batch``); ``False``
        keeps file order (``batch``), which is deterministic with one thread.
      capacity: queue capacity; default ``min_after_dequeue + 3 * batch_size``.
      min_after_dequeue: examples kept in the shuffle queue; default ``4 * batch_size``.
      num_threads: enqueueing threads (each runs reader + decoder).
      allow_smaller_final_batch: emit the last partial batch instead of dropping it.
      pixels: ``height * width * depth`` of the records.
      seed: op seed for file-name and example shuffling.

    Returns:
      ``(images, labels)`` batch tensors; run them in a session after
      :func:`run_queue_pipeline` has started the queue runners.
    """
    if tf.executing_eagerly():
        raise RuntimeError("queue pipelines need graph mode: build them inside graph_mode()")
    files = [os.fspath(p) for p in paths]
    filename_queue = v1.train.string_input_producer(
        files, num_epochs=num_epochs, shuffle=shuffle, seed=seed
    )
    reader = v1.TFRecordReader()
    _, serialized = reader.read(filename_queue)
    image, label = decode_digit(serialized, pixels)
    if min_after_dequeue is None:
        min_after_dequeue = 4 * batch_size
    if capacity is None:
        capacity = min_after_dequeue + 3 * batch_size
    if shuffle:
        return v1.train.shuffle_batch(
            [image, label],
            batch_size=batch_size,
            capacity=capacity,
            min_after_dequeue=min_after_dequeue,
            num_threads=num_threads,
            seed=seed,
            allow_smaller_final_batch=allow_smaller_final_batch,
        )
    return v1.train.batch(
        [image, label],
        batch_size=batch_size,
        capacity=capacity,
        num_threads=num_threads,
        allow_smaller_final_batch=allow_smaller_final_batch,
    )


@dataclass
class QueueRun:
    """What :func:`run_queue_pipeline` saw.

    Attributes:
      steps: ``sess.run`` calls that returned.
      results: what ``on_step`` returned for each step (``None`` entries dropped).
      stopped_by: ``"OutOfRangeError"`` (the data ended) or ``"max_steps"``.
      threads: names of the queue-runner threads that were started.
      threads_alive_after_join: threads still running after ``coord.join`` (should be 0).
      seconds: wall time of the loop.
    """

    steps: int
    results: list[Any]
    stopped_by: str
    threads: list[str]
    threads_alive_after_join: int
    seconds: float


def run_queue_pipeline(
    graph: tf.Graph,
    fetches: Any,
    *,
    on_step: Callable[[int, Any], Any] | None = None,
    max_steps: int | None = None,
    init_ops: Sequence[Any] | None = None,
) -> QueueRun:
    """Run ``fetches`` until the input queues raise ``OutOfRangeError``: the TF1 training loop.

    The loop every queue-based program wrote by hand::

        sess.run([global_variables_initializer(), local_variables_initializer()])
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        try:
            while not coord.should_stop():
                sess.run(fetches)
        except tf.errors.OutOfRangeError:
            pass                       # num_epochs reached: the normal way out
        finally:
            coord.request_stop()
        coord.join(threads)

    Args:
      graph: the graph that holds the pipeline and ``fetches``.
      fetches: anything ``Session.run`` accepts; fetch the train op *and* the
        loss in one call (a second ``run`` would dequeue a second batch).
      on_step: ``(step, fetched) -> value`` called after every step (step counts from 1).
      max_steps: stop early (a safety net for ``num_epochs=None``).
      init_ops: defaults to global and local variable initialisers; the local
        one is what creates ``string_input_producer``'s epoch counter.

    Returns:
      A :class:`QueueRun`.

    Raises:
      tf.errors.OpError: an error in a queue-runner thread, re-raised by
        ``coord.join`` (e.g. ``NotFoundError`` for
        ``input_producer/limit_epochs/epochs`` when the local variables were
        not initialised).
    """
    results: list[Any] = []
    with graph.as_default():
        if init_ops is None:
            init_ops = [v1.global_variables_initializer(), v1.local_variables_initializer()]
    start = time.perf_counter()
    with quiet(), v1.Session(graph=graph) as sess:
        if init_ops:
            sess.run(list(init_ops))
        coord = v1.train.Coordinator()
        threads = v1.train.start_queue_runners(sess=sess, coord=coord)
        steps, stopped_by = 0, "max_steps"
        try:
            while not coord.should_stop():
                if max_steps is not None and steps >= max_steps:
                    break
                fetched = sess.run(fetches)
                steps += 1
                if on_step is not None:
                    value = on_step(steps, fetched)
                    if value is not None:
                        results.append(value)
        except tf.errors.OutOfRangeError:
            stopped_by = "OutOfRangeError"
        finally:
            coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
    return QueueRun(
        steps=steps,
        results=results,
        stopped_by=stopped_by,
        threads=[t.name for t in threads],
        threads_alive_after_join=sum(t.is_alive() for t in threads),
        seconds=time.perf_counter() - start,
    )


def steps_until_out_of_range(
    paths: Sequence[str | os.PathLike],
    *,
    num_epochs: int,
    batch_size: int,
    runs_per_step: int = 1,
) -> dict[str, int]:
    """Count loop steps until ``OutOfRangeError`` when each step calls ``sess.run`` k times.

    Every ``sess.run`` that touches the batch tensors dequeues a *new* batch.
    A loop that runs the train op and then, separately, the loss
    (``runs_per_step=2``) trains on only every other batch and ends after half
    the steps. Fetch ``[train_op, loss]`` in one call instead.

    Args:
      paths: TFRecord files of digit records.
      num_epochs: epochs of the filename queue.
      batch_size: examples per batch (``tf.train.batch``, no shuffling).
      runs_per_step: ``sess.run`` calls on the batch per loop step.

    Returns:
      ``steps`` (complete loop steps), ``batches`` (batches dequeued) and
      ``examples_trained`` (examples the *first* run of each step saw).
    """
    with graph_mode() as graph:
        _, labels = queue_batches(
            paths, batch_size=batch_size, num_epochs=num_epochs, shuffle=False
        )
        init = [v1.global_variables_initializer(), v1.local_variables_initializer()]
    steps = batches = 0
    with quiet(), v1.Session(graph=graph) as sess:
        sess.run(init)
        coord = v1.train.Coordinator()
        threads = v1.train.start_queue_runners(sess=sess, coord=coord)
        try:
            while not coord.should_stop():
                for _ in range(runs_per_step):
                    sess.run(labels)
                    batches += 1
                steps += 1
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
        coord.join(threads)
    return {"steps": steps, "batches": batches, "examples_trained": steps * batch_size}


def threaded_producers(
    num_threads: int = 4,
    items_per_thread: int = 25,
    capacity: int = 10,
    fail_thread: int | None = None,
) -> dict[str, Any]:
    """Python threads enqueue into one ``FIFOQueue`` while the main thread dequeues.

    Thread ``t`` enqueues ``(t, 0), (t, 1), ...`` via a placeholder feed and
    checks ``coord.should_stop()`` before each item. The queue holds only
    ``capacity`` items, so producers block until the main thread dequeues. When
    the main thread has all ``num_threads * items_per_thread`` items it calls
    ``coord.request_stop()``, closes the queue with
    ``cancel_pending_enqueues=True`` (a blocked producer never sees
    ``should_stop`` otherwise) and ``coord.join()`` s the threads.

    With ``fail_thread`` set, that producer raises ``ValueError`` half-way; the
    ``coord.stop_on_exception()`` block reports it to the coordinator, every
    other thread stops, and ``coord.join`` re-raises it in the main thread.

    Returns:
      ``items`` (``(thread, seq)`` in dequeue order), ``per_thread`` counts,
      ``fifo_per_thread`` (each producer's items came out in its own order),
      ``alive_after_join`` and ``error`` (the re-raised exception's text or ``None``).
    """
    total = num_threads * items_per_thread
    with graph_mode() as graph:
        q = v1.FIFOQueue(capacity, dtypes=[tf.int32, tf.int32], shapes=[[], []])
        thread_id = v1.placeholder(tf.int32, [])
        seq = v1.placeholder(tf.int32, [])
        enqueue = q.enqueue([thread_id, seq])
        dequeue = q.dequeue()
        close = q.close(cancel_pending_enqueues=True)
    items: list[tuple[int, int]] = []
    error: str | None = None
    with quiet(), v1.Session(graph=graph) as sess:
        coord = v1.train.Coordinator()

        def produce(t: int) -> None:
            with coord.stop_on_exception():
                for j in range(items_per_thread):
                    if coord.should_stop():
                        return
                    if t == fail_thread and j == items_per_thread // 2:
                        raise ValueError(f"producer {t} failed at item {j}")
                    try:
                        sess.run(enqueue, feed_dict={thread_id: t, seq: j})
                    except tf.errors.CancelledError:
                        return  # the queue was closed while we were blocked

        threads = [
            threading.Thread(target=produce, args=(t,), name=f"producer-{t}")
            for t in range(num_threads)
        ]
        for th in threads:
            th.start()
        try:
            while len(items) < total and not coord.should_stop():
                try:
                    t, j = sess.run(dequeue, options=v1.RunOptions(timeout_in_ms=500))
                except tf.errors.DeadlineExceededError:
                    continue  # nothing arrived in time: check should_stop again
                items.append((int(t), int(j)))
        finally:
            coord.request_stop()
            sess.run(close)
        try:
            coord.join(threads, stop_grace_period_secs=10)
        except Exception as err:  # noqa: BLE001 - the producer's error, re-raised by join
            error = f"{type(err).__name__}: {err}"
    per_thread = {t: sum(1 for i, _ in items if i == t) for t in range(num_threads)}
    fifo = all(
        [j for i, j in items if i == t] == sorted(j for i, j in items if i == t)
        for t in range(num_threads)
    )
    return {
        "items": items,
        "per_thread": per_thread,
        "fifo_per_thread": fifo,
        "alive_after_join": sum(th.is_alive() for th in threads),
        "error": error,
    }


def min_after_dequeue_blocks(
    enqueued: int = 5, min_after_dequeue: int = 3, seed: int = 0
) -> dict[str, Any]:
    """Show when a ``RandomShuffleQueue`` lets items out.

    Enqueues ``0 .. enqueued-1``, then dequeues one at a time with a 200 ms
    deadline: a dequeue that would leave fewer than ``min_after_dequeue``
    items behind waits (here: hits the deadline). Closing the queue lifts the
    minimum and the rest drains, then ``OutOfRangeError`` ends it.

    Returns:
      ``before_close`` (values dequeued before a dequeue blocked),
      ``blocked_at_size`` (queue size when it blocked), ``after_close``
      (values drained after ``close()``) and ``end`` (the error that ended it).
    """
    with graph_mode(seed) as graph:
        q = v1.RandomShuffleQueue(
            capacity=enqueued + 1,
            min_after_dequeue=min_after_dequeue,
            dtypes=[tf.int32],
            shapes=[[]],
            seed=seed,
        )
        enqueue = q.enqueue_many([tf.range(enqueued)])
        dequeue = q.dequeue()
        size = q.size()
        close = q.close()
    options = v1.RunOptions(timeout_in_ms=200)
    before, after = [], []
    with v1.Session(graph=graph) as sess:
        sess.run(enqueue)
        while True:
            try:
                before.append(int(sess.run(dequeue, options=options)))
            except tf.errors.DeadlineExceededError:
                break
        blocked_at = int(sess.run(size))
        sess.run(close)
        try:
            while True:
                after.append(int(sess.run(dequeue)))
        except tf.errors.OutOfRangeError as err:
            end = type(err).__name__
    return {
        "before_close": before,
        "blocked_at_size": blocked_at,
        "after_close": after,
        "end": end,
    }


def queue_runner_shuffle(
    n: int = 500,
    min_after_dequeue: int = 100,
    capacity: int | None = None,
    num_threads: int = 2,
    seed: int = 0,
) -> dict[str, Any]:
    """Feed ``0 .. n-1`` through a ``QueueRunner`` into a ``RandomShuffleQueue``.

    A source ``FIFOQueue`` holds the numbers in order and is closed. A
    ``QueueRunner`` with ``num_threads`` copies of ``shuffle_q.enqueue(source.dequeue())``
    moves them across; when the source runs dry every runner thread hits
    ``OutOfRangeError`` and the runner closes the shuffle queue, which ends the
    main thread's ``dequeue`` loop with ``OutOfRangeError`` in turn. That is
    exactly how ``shuffle_batch`` is wired.

    Returns:
      ``order`` (values in dequeue order), ``threads`` (runner thread names),
      ``complete`` (every value exactly once) and ``mean_displacement``
      (mean ``|position - value|``: 0 for no shuffling, about ``n / 3`` for a
      perfect shuffle).
    """
    if capacity is None:
        capacity = min_after_dequeue + 50
    with graph_mode(seed) as graph:
        source = v1.FIFOQueue(n, dtypes=[tf.int32], shapes=[[]])
        fill = source.enqueue_many([tf.range(n)])
        close_source = source.close()
        shuffled = v1.RandomShuffleQueue(
            capacity=capacity,
            min_after_dequeue=min_after_dequeue,
            dtypes=[tf.int32],
            shapes=[[]],
            seed=seed,
        )
        runner = v1.train.QueueRunner(shuffled, [shuffled.enqueue(source.dequeue())] * num_threads)
        v1.train.add_queue_runner(runner)
        dequeue = shuffled.dequeue()
    order: list[int] = []
    with quiet(), v1.Session(graph=graph) as sess:
        sess.run(fill)
        sess.run(close_source)
        coord = v1.train.Coordinator()
        threads = v1.train.start_queue_runners(sess=sess, coord=coord)
        try:
            while not coord.should_stop():
                order.append(int(sess.run(dequeue)))
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
        coord.join(threads)
    positions = np.arange(len(order))
    return {
        "order": order,
        "threads": [t.name for t in threads],
        "complete": sorted(order) == list(range(n)),
        "mean_displacement": float(np.mean(np.abs(positions - np.asarray(order))))
        if order
        else 0.0,
    }


# ---------------------------------------------------------------------------
# tf.data equivalents and the reference answer
# ---------------------------------------------------------------------------


def dataset_batches(
    paths: Sequence[str | os.PathLike],
    *,
    batch_size: int,
    num_epochs: int | None,
    shuffle_buffer: int | None = None,
    drop_remainder: bool = True,
    pixels: int = 64,
    seed: int | None = 0,
) -> tf.data.Dataset:
    """The ``tf.data`` translation of :func:`queue_batches`.

    ``shuffle_buffer=None`` is the translation of ``shuffle=False`` +
    ``tf.train.batch`` and gives exactly the same batches as the queue
    pipeline with one thread. With a buffer it mirrors ``shuffle_batch``
    (file names shuffled per epoch, then a ``shuffle(shuffle_buffer)``).

    Args:
      paths: TFRecord files of digit records.
      batch_size: examples per batch.
      num_epochs: passes over the files; ``None`` repeats forever.
      shuffle_buffer: ``min_after_dequeue`` of the queue version; ``None``: no shuffling.
      drop_remainder: drop the last partial batch, as ``tf.train.batch`` does by default.
      pixels: ``height * width * depth`` of the records.
      seed: shuffling seed.

    Returns:
      A dataset of ``(images float32 [batch, pixels], labels int32 [batch])``.
    """
    files = tf.data.Dataset.from_tensor_slices([os.fspath(p) for p in paths])
    if shuffle_buffer:
        files = files.shuffle(len(paths), seed=seed, reshuffle_each_iteration=True)
    ds = files.repeat(num_epochs).flat_map(tf.data.TFRecordDataset)
    ds = ds.map(lambda s: decode_digit(s, pixels), num_parallel_calls=tf.data.AUTOTUNE)
    if shuffle_buffer:
        ds = ds.shuffle(shuffle_buffer, seed=seed)
    return ds.batch(batch_size, drop_remainder=drop_remainder).prefetch(tf.data.AUTOTUNE)


def expected_batches(
    images: np.ndarray,
    labels: np.ndarray,
    *,
    batch_size: int,
    num_epochs: int,
    allow_smaller_final_batch: bool = False,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """What an unshuffled one-thread queue pipeline yields, computed with NumPy alone.

    Args:
      images: ``uint8`` raw pixels in file order (all files concatenated).
      labels: their labels.
      batch_size: examples per batch.
      num_epochs: passes over the data.
      allow_smaller_final_batch: keep the last partial batch.

    Returns:
      ``[(float32 [batch, pixels] in [0, 1], int32 [batch]), ...]``.
    """
    x = np.asarray(images).reshape(len(images), -1).astype(np.float32) / np.float32(255.0)
    y = np.asarray(labels).astype(np.int32)
    x, y = np.concatenate([x] * num_epochs), np.concatenate([y] * num_epochs)
    stop = len(y) if allow_smaller_final_batch else len(y) - len(y) % batch_size
    return [(x[i : i + batch_size], y[i : i + batch_size]) for i in range(0, stop, batch_size)]


# ---------------------------------------------------------------------------
# Softmax regression, trained both ways
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.legacy",
        description="TF1 queue pipelines (tf.compat.v1) and their tf.data replacements.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("table", help="print the queue API -> tf.data table")
    train = sub.add_parser("train", help="softmax regression on the fixture digits, both ways")
    train.add_argument("--epochs", type=int, default=5)
    train.add_argument("--batch-size", type=int, default=32)
    train.add_argument("--work-dir", type=Path, default=Path("build/legacy"))
    args = parser.parse_args(argv)

    if args.command == "table":
        for api, replacement, note in QUEUE_TO_DATA:
            print(f"{api}\n    -> {replacement}\n       ({note})")
        return 0

    from helpers.fixture import load_digits

    args.work_dir.mkdir(parents=True, exist_ok=True)
    x_train, y_train = load_digits(split="train")
    x_test, y_test = load_digits(split="test")
    path = args.work_dir / "digits_train.tfrecord"
    write_digit_records(path, x_train, y_train)
    for trainer in (train_softmax_queue, train_softmax_dataset):
        result = trainer([path], num_epochs=args.epochs, batch_size=args.batch_size)
        accuracy = evaluate_softmax(result, x_test, y_test)
        print(
            f"{result.how}: {result.steps} steps in {result.seconds:.2f} s, "
            f"test accuracy {accuracy:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
