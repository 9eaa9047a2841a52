"""Lesson 07 exercises: the solutions pass, stubs fail, planted mistakes are named."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
import tensorflow as tf

from helpers import exercises as ex
from helpers import legacy
from helpers.exercises import CheckFailed, l07
from lesson_suite import exercise_suite

v1 = tf.compat.v1


@pytest.fixture
def short_timeout(monkeypatch):
    monkeypatch.setattr(l07, "TIMEOUT_SECONDS", 2.0)


# -- the solutions, as in solutions/07_legacy_queues.ipynb --------------------


def _label_pipeline(paths, num_epochs, *, pass_epochs=True):
    with legacy.graph_mode() as graph:
        kwargs = {"num_epochs": num_epochs} if pass_epochs else {}
        filename_queue = v1.train.string_input_producer(paths, **kwargs)
        _, serialized = v1.TFRecordReader().read(filename_queue)
        label = v1.parse_single_example(serialized, {"label": v1.FixedLenFeature([], tf.int64)})[
            "label"
        ]
    return graph, label


def _read(graph, label, *, local_init=True, catch=True):
    with graph.as_default():
        init = [v1.global_variables_initializer()]
        if local_init:
            init.append(v1.local_variables_initializer())
    labels = []
    with v1.Session(graph=graph) as sess:
        sess.run(init)
        coord = v1.train.Coordinator()
        threads = v1.train.start_queue_runners(sess=sess, coord=coord)
        try:
            while not coord.should_stop():
                labels.append(int(sess.run(label)))
        except tf.errors.OutOfRangeError:
            if not catch:
                raise
        finally:
            coord.request_stop()
        coord.join(threads)
    return labels


def read_labels(paths, num_epochs):
    return _read(*_label_pipeline(paths, num_epochs))


def _producer_graph(capacity, shuffle=False):
    with legacy.graph_mode() as graph:
        if shuffle:
            q = v1.RandomShuffleQueue(capacity, 0, [tf.int32, tf.int32], shapes=[[], []])
        else:
            q = v1.FIFOQueue(capacity, [tf.int32, tf.int32], shapes=[[], []])
        who, seq = v1.placeholder(tf.int32, []), v1.placeholder(tf.int32, [])
        return graph, q.enqueue([who, seq]), q.dequeue(), who, seq


def produce_and_collect(
    num_threads, items_per_thread, capacity, *, late_binding=False, shuffle=False, fewer=0
):
    graph, enqueue, dequeue, who, seq = _producer_graph(capacity, shuffle)
    items = []
    with v1.Session(graph=graph) as sess:
        coord = v1.train.Coordinator()

        def produce(t):
            with coord.stop_on_exception():
                for j in range(items_per_thread - fewer):
                    if coord.should_stop():
                        break
                    sess.run(enqueue, feed_dict={who: t, seq: j})

        if late_binding:
            targets = []
            for t in range(num_threads):
                targets.append(lambda: produce(t))  # noqa: B023 - the planted mistake
            threads = [threading.Thread(target=f) for f in targets]
        else:
            threads = [threading.Thread(target=produce, args=(t,)) for t in range(num_threads)]
        for thread in threads:
            thread.start()
        for _ in range(num_threads * items_per_thread):
            t, j = sess.run(dequeue)
            items.append((int(t), int(j)))
        coord.request_stop()
        coord.join(threads)
    return items


def to_dataset(paths, num_epochs, batch_size):
    dataset = tf.data.TFRecordDataset(paths).repeat(num_epochs)
    dataset = dataset.map(legacy.decode_digit)
    return dataset.batch(batch_size, drop_remainder=True)


SOLUTIONS = {
    "07.read_epochs": read_labels,
    "07.coordinated_producers": produce_and_collect,
    "07.to_dataset": to_dataset,
}


test_lesson_has_its_exercises_in_order, test_solution_passes_on_fresh_inputs, test_stub_fails = (
    exercise_suite("07", SOLUTIONS)
)


# -- 07.read_epochs -------------------------------------------------------------


def test_read_epochs_names_the_missing_local_initializer():
    def no_local(paths, num_epochs):
        return _read(*_label_pipeline(paths, num_epochs), local_init=False)

    with pytest.raises(CheckFailed, match=r"(?s)local.*local_variables_initializer"):
        ex.check("07.read_epochs", no_local, seed=3)


def test_read_epochs_names_an_escaped_out_of_range_error():
    def no_catch(paths, num_epochs):
        return _read(*_label_pipeline(paths, num_epochs), catch=False)

    with pytest.raises(CheckFailed, match="OutOfRangeError escaped"):
        ex.check("07.read_epochs", no_catch, seed=3)


def test_read_epochs_counts_epochs():
    def one_epoch(paths, num_epochs):
        return read_labels(paths, 1)

    # seed 5 draws num_epochs > 1 for at least one case
    with pytest.raises(CheckFailed, match=r"read \d+ records = 1 epoch\(s\)"):
        ex.check("07.read_epochs", one_epoch, seed=5)


def test_read_epochs_wants_every_file():
    def first_file(paths, num_epochs):
        return read_labels(paths[:1], num_epochs)

    with pytest.raises(CheckFailed, match="read every file"):
        ex.check("07.read_epochs", first_file, seed=4)


def test_read_epochs_stops_a_pipeline_without_num_epochs(short_timeout):
    def forever(paths, num_epochs):
        return _read(*_label_pipeline(paths, num_epochs, pass_epochs=False))

    with pytest.raises(CheckFailed, match=r"(?s)still running after 2 s.*without num_epochs"):
        ex.check("07.read_epochs", forever, seed=3)
    # the watchdog closed the session: no thread of that function is left spinning
    assert not [t for t in threading.enumerate() if t.name == "exercise-07"]


# -- 07.coordinated_producers ---------------------------------------------------


def test_producers_name_the_late_binding_mistake():
    def late(num_threads, items_per_thread, capacity):
        return produce_and_collect(num_threads, items_per_thread, capacity, late_binding=True)

    with pytest.raises(CheckFailed, match=r"(?s)came from thread \d.*args=\(t,\)"):
        ex.check("07.coordinated_producers", late, seed=1)


def test_producers_want_fifo_order_per_thread():
    def shuffled(num_threads, items_per_thread, capacity):
        return produce_and_collect(num_threads, items_per_thread, capacity, shuffle=True)

    # a RandomShuffleQueue is no FIFOQueue; a FIFO answer out of order per producer is named
    with pytest.raises(CheckFailed, match="did not pass through a tf.compat.v1.FIFOQueue"):
        ex.check("07.coordinated_producers", shuffled, seed=1)

    from helpers.exercises import l07

    answer = {
        "value": [[0, 1], [0, 0]],
        "ops": ["FIFOQueueV2", "QueueEnqueueV2"],
        "dequeued": [[0, 1], [0, 0]],
    }
    with pytest.raises(CheckFailed, match="keeps each producer's order"):
        l07._producers_verify({"num_threads": 1, "items_per_thread": 2, "capacity": 1}, answer)


def test_producers_missing_items_time_out_with_the_reason(short_timeout):
    def fewer(num_threads, items_per_thread, capacity):
        return produce_and_collect(num_threads, items_per_thread, capacity, fewer=1)

    with pytest.raises(CheckFailed, match="still running after 2 s"):
        ex.check("07.coordinated_producers", fewer, seed=1)


def test_producers_that_enqueue_everything_first_deadlock_and_are_stopped(short_timeout):
    def sequential(num_threads, items_per_thread, capacity):
        graph, enqueue, dequeue, who, seq = _producer_graph(capacity)
        with v1.Session(graph=graph) as sess:
            for t in range(num_threads):
                for j in range(items_per_thread):
                    sess.run(enqueue, feed_dict={who: t, seq: j})
            return [tuple(int(v) for v in sess.run(dequeue)) for _ in range(num_threads)]

    with pytest.raises(CheckFailed, match=r"(?s)still running.*block once it is full"):
        ex.check("07.coordinated_producers", sequential, seed=1)


def test_producers_count_items():
    def one_less(num_threads, items_per_thread, capacity):
        return produce_and_collect(num_threads, items_per_thread, capacity)[:-1]

    with pytest.raises(CheckFailed, match=r"got \d+ items; \d+ threads x \d+ items"):
        ex.check("07.coordinated_producers", one_less, seed=1)


# -- 07.to_dataset ----------------------------------------------------------------


def _variant(*, batch_first=False, drop=True, shuffle=False, scale=True, label_dtype=tf.int32):
    def decode(serialized):
        features = tf.io.parse_single_example(serialized, legacy.DIGIT_SPEC)
        image = tf.cast(
            tf.reshape(tf.io.decode_raw(features["image_raw"], tf.uint8), [64]), tf.float32
        )
        if scale:
            image = image / 255.0
        return image, tf.cast(features["label"], label_dtype)

    def build(paths, num_epochs, batch_size):
        ds = tf.data.TFRecordDataset(paths)
        if shuffle:
            ds = ds.shuffle(100, seed=1)
        ds = ds.map(decode)
        if batch_first:
            return ds.batch(batch_size, drop_remainder=drop).repeat(num_epochs)
        return ds.repeat(num_epochs).batch(batch_size, drop_remainder=drop)

    return build


@pytest.mark.parametrize(
    ("variant", "message"),
    [
        (_variant(batch_first=True, drop=False), "repeat\\(num_epochs\\) before batch"),
        (_variant(drop=False), "drops the final partial batch"),
        (_variant(shuffle=True), "no shuffling"),
        (_variant(scale=False), "not scaled to \\[0, 1\\]"),
        (_variant(label_dtype=tf.int64), "labels are int64"),
        (lambda paths, num_epochs, batch_size: [1, 2], "not a tf.data.Dataset"),
        (
            lambda paths, num_epochs, batch_size: to_dataset(paths, None, batch_size),
            "still going after",
        ),
    ],
    ids=[
        "batch-before-repeat",
        "no-drop-remainder",
        "shuffled",
        "unscaled",
        "int64",
        "list",
        "forever",
    ],
)
def test_to_dataset_names_the_planted_mistake(variant, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("07.to_dataset", variant, seed=2)


def test_to_dataset_check_recomputes_contents_from_file_names(tmp_path):
    """A student who rewrites the files cannot move the expected answer."""
    cases = l07._dataset_cases(np.random.default_rng(0), tmp_path)
    for case in cases:
        for path in case["paths"]:
            with open(path, "wb") as f:
                f.write(b"")  # empty every file: the student's dataset is now empty
    answers = ex.run_cases(ex.get("07.to_dataset"), to_dataset, cases)
    passed, detail = ex.verify_answers(ex.get("07.to_dataset"), cases, answers)
    assert not passed and "batches" in detail


def test_answers_cross_the_grader_boundary_as_json(tmp_path):
    for key, func in SOLUTIONS.items():
        exercise = ex.get(key)
        cases = exercise.make_cases(np.random.default_rng(7), tmp_path / key)
        answers = json.loads(json.dumps(ex.run_cases(exercise, func, cases)))
        passed, detail = ex.verify_answers(exercise, cases, answers)
        assert passed, (key, detail)


# -- issue 13: queues required, FIFO order watched, oracles off, batch-then-repeat ---


def _read_labels_with_tf_data(paths, num_epochs):
    ds = tf.data.TFRecordDataset(paths).repeat(num_epochs)
    return [int(tf.io.parse_single_example(r, legacy.DIGIT_SPEC)["label"]) for r in ds]


def test_a_pure_tf_data_answer_to_the_queue_exercise_fails():
    with pytest.raises(CheckFailed, match=r"did not come out of a queue pipeline"):
        ex.check("07.read_epochs", _read_labels_with_tf_data, seed=1)


def _producers_with_python_queue(num_threads, items_per_thread, capacity):
    import queue

    q = queue.Queue(capacity)
    threads = [
        threading.Thread(target=lambda t=t: [q.put((t, j)) for j in range(items_per_thread)])
        for t in range(num_threads)
    ]
    for thread in threads:
        thread.start()
    items = [q.get() for _ in range(num_threads * items_per_thread)]
    for thread in threads:
        thread.join()
    return items


def test_producers_without_a_fifo_queue_fail():
    with pytest.raises(CheckFailed, match=r"did not pass through a tf.compat.v1.FIFOQueue"):
        ex.check("07.coordinated_producers", _producers_with_python_queue, seed=1)


def test_sorting_what_a_shuffle_queue_gave_does_not_pass_the_fifo_check():
    def sorted_shuffle(num_threads, items_per_thread, capacity):
        graph, enqueue, dequeue, who, seq = _producer_graph(capacity, shuffle=True)
        with graph.as_default():
            v1.FIFOQueue(1, [tf.int32])  # a decoy FIFOQueue op in the graph, never used
        items = []
        with v1.Session(graph=graph) as sess:
            threads = [
                threading.Thread(
                    target=lambda t=t: [
                        sess.run(enqueue, feed_dict={who: t, seq: j})
                        for j in range(items_per_thread)
                    ]
                )
                for t in range(num_threads)
            ]
            for thread in threads:
                thread.start()
            for _ in range(num_threads * items_per_thread):
                t, j = sess.run(dequeue)
                items.append((int(t), int(j)))
            for thread in threads:
                thread.join()
        return sorted(items)

    with pytest.raises(CheckFailed, match=r"another order than the queue delivered them"):
        ex.check("07.coordinated_producers", sorted_shuffle, seed=3)


def test_sorting_the_fifo_result_is_caught():
    def sorts(num_threads, items_per_thread, capacity):
        return sorted(produce_and_collect(num_threads, items_per_thread, capacity))

    # FIFO with concurrent producers interleaves threads, so sorting changes the order
    # on at least one of the cases (they have 2-4 threads and a capacity below the total).
    with pytest.raises(CheckFailed, match=r"another order than the queue delivered them"):
        for seed in range(4):
            ex.check("07.coordinated_producers", sorts, seed=seed)


def test_wrapping_the_course_translation_is_not_an_answer():
    def to_dataset(paths, num_epochs, batch_size):
        return legacy.dataset_batches(paths, batch_size=batch_size, num_epochs=num_epochs)

    with pytest.raises(CheckFailed, match=r"dataset_batches is switched off.*use your own code"):
        ex.check("07.to_dataset", to_dataset, seed=2)


def test_batch_then_repeat_is_told_so_not_no_shuffling():
    found = 0
    for seed in range(6):
        try:
            ex.check("07.to_dataset", _variant(batch_first=True, drop=True), seed=seed)
        except CheckFailed as err:
            assert "no shuffling" not in str(err)
            assert "batch then repeat is not repeat then batch" in str(err)
            found += 1
    assert found >= 3
