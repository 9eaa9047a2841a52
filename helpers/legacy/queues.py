"""TF1 queue pipelines: queues filled by threads inside the graph, a Coordinator to stop them."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from helpers.legacy.digits import decode_digit
from helpers.legacy.graph import graph_mode, quiet, v1


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
