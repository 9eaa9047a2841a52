"""helpers.legacy: TF1 queue pipelines in graph mode, and their tf.data translations."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from helpers import legacy
from helpers.features import example_to_dict
from helpers.fixture import load_digits

v1 = tf.compat.v1


@pytest.fixture(scope="module")
def digits():
    return load_digits(split="train"), load_digits(split="test")


@pytest.fixture(scope="module")
def shards(tmp_path_factory, digits):
    (x, y), _ = digits
    folder = tmp_path_factory.mktemp("digits")
    paths = []
    for i, rows in enumerate(np.array_split(np.arange(300), 2)):
        path = folder / f"part-{i}.tfrecord"
        assert legacy.write_digit_records(path, x[rows], y[rows]) == len(rows)
        paths.append(str(path))
    return paths, x[:300], y[:300]


def test_graph_mode_leaves_eager_execution_on_outside():
    assert tf.executing_eagerly()
    with legacy.graph_mode() as graph:
        assert not tf.executing_eagerly()
        assert tf.constant(1).graph is graph
    assert tf.executing_eagerly()


def test_queue_batches_refuses_eager_mode(shards):
    with pytest.raises(RuntimeError, match="graph mode"):
        legacy.queue_batches(shards[0], batch_size=4, num_epochs=1)


def test_digit_records_hold_raw_pixels_and_shape(shards):
    paths, x, y = shards
    first = next(iter(tf.data.TFRecordDataset(paths[0]))).numpy()
    record = example_to_dict(first)
    assert record["height"] == [8] and record["width"] == [8] and record["depth"] == [1]
    assert record["label"] == [int(y[0])]
    assert np.array_equal(np.frombuffer(record["image_raw"][0], np.uint8).reshape(8, 8), x[0])
    image, label = legacy.decode_digit(tf.constant(first))
    assert image.dtype == tf.float32 and image.shape == (64,) and int(label) == int(y[0])
    np.testing.assert_allclose(image.numpy(), x[0].reshape(-1) / 255.0, atol=1e-7)


def test_write_digit_records_refuses_non_pixels(tmp_path):
    with pytest.raises(TypeError, match="uint8"):
        legacy.write_digit_records(tmp_path / "x", np.zeros((2, 8, 8), np.float32), [0, 1])
    with pytest.raises(ValueError, match="labels"):
        legacy.write_digit_records(tmp_path / "x", np.zeros((2, 8, 8), np.uint8), [0])


def test_unshuffled_queue_dataset_and_numpy_agree_batch_for_batch(shards):
    paths, x, y = shards
    with legacy.graph_mode() as graph:
        images, labels = legacy.queue_batches(paths, batch_size=32, num_epochs=2, shuffle=False)
    run = legacy.run_queue_pipeline(graph, [images, labels], on_step=lambda s, b: b)
    expected = legacy.expected_batches(x, y, batch_size=32, num_epochs=2)
    from_data = [
        (a.numpy(), b.numpy())
        for a, b in legacy.dataset_batches(paths, batch_size=32, num_epochs=2)
    ]
    assert run.stopped_by == "OutOfRangeError"
    assert run.steps == len(expected) == len(from_data) == 600 // 32
    for (qx, qy), (ex, ey), (dx, dy) in zip(run.results, expected, from_data, strict=True):
        assert np.array_equal(qy, ey) and np.array_equal(dy, ey)
        np.testing.assert_allclose(qx, ex, atol=1e-6)  # graph mode may round x/255 differently
        np.testing.assert_array_equal(dx, ex)


def test_allow_smaller_final_batch_keeps_the_remainder(shards):
    paths, x, y = shards
    with legacy.graph_mode() as graph:
        _, labels = legacy.queue_batches(
            paths, batch_size=64, num_epochs=1, shuffle=False, allow_smaller_final_batch=True
        )
    run = legacy.run_queue_pipeline(graph, labels, on_step=lambda s, b: len(b))
    assert run.results == [64] * 4 + [300 - 256]
    assert (
        len(
            legacy.expected_batches(
                x, y, batch_size=64, num_epochs=1, allow_smaller_final_batch=True
            )
        )
        == 5
    )


def test_run_queue_pipeline_joins_its_threads_and_honours_max_steps(shards):
    paths, _, _ = shards
    with legacy.graph_mode() as graph:
        _, labels = legacy.queue_batches(paths, batch_size=10, num_epochs=None, shuffle=True)
    run = legacy.run_queue_pipeline(graph, labels, max_steps=7)
    assert run.steps == 7 and run.stopped_by == "max_steps"
    assert run.threads_alive_after_join == 0
    assert any("input_producer" in name for name in run.threads)
    assert any("shuffle_batch" in name for name in run.threads)


def test_missing_local_initializer_is_reraised_by_join(shards):
    paths, _, _ = shards
    with legacy.graph_mode() as graph:
        _, labels = legacy.queue_batches(paths, batch_size=10, num_epochs=1)
        only_global = [v1.global_variables_initializer()]
    with pytest.raises(tf.errors.OpError, match="limit_epochs"):
        legacy.run_queue_pipeline(graph, labels, init_ops=only_global)


def test_separate_loss_run_halves_the_training(shards):
    paths, _, _ = shards
    one = legacy.steps_until_out_of_range(paths, num_epochs=1, batch_size=20, runs_per_step=1)
    two = legacy.steps_until_out_of_range(paths, num_epochs=1, batch_size=20, runs_per_step=2)
    assert one == {"steps": 15, "batches": 15, "examples_trained": 300}
    assert two["steps"] == 7 and two["batches"] == 15 and two["examples_trained"] == 140


def test_threaded_producers_deliver_everything_in_per_thread_order():
    run = legacy.threaded_producers(num_threads=3, items_per_thread=12, capacity=4)
    assert sorted(run["items"]) == [(t, j) for t in range(3) for j in range(12)]
    assert run["per_thread"] == {0: 12, 1: 12, 2: 12}
    assert run["fifo_per_thread"] and run["alive_after_join"] == 0 and run["error"] is None


def test_coordinator_reraises_a_producer_error():
    run = legacy.threaded_producers(num_threads=3, items_per_thread=10, capacity=4, fail_thread=2)
    assert run["error"] == "ValueError: producer 2 failed at item 5"
    assert run["alive_after_join"] == 0
    assert len(run["items"]) < 30


def test_min_after_dequeue_holds_items_back_until_close():
    out = legacy.min_after_dequeue_blocks(enqueued=6, min_after_dequeue=4, seed=1)
    assert len(out["before_close"]) == 2 and out["blocked_at_size"] == 4
    assert sorted(out["before_close"] + out["after_close"]) == list(range(6))
    assert out["end"] == "OutOfRangeError"
    assert legacy.min_after_dequeue_blocks(enqueued=6, min_after_dequeue=4, seed=1) == out


def test_queue_runner_shuffle_is_complete_and_mixes_more_with_a_bigger_pool():
    small = legacy.queue_runner_shuffle(n=300, min_after_dequeue=0, capacity=10)
    large = legacy.queue_runner_shuffle(n=300, min_after_dequeue=250, capacity=290)
    assert small["complete"] and large["complete"]
    assert len(small["threads"]) == 3  # two enqueue threads + close_on_stop
    assert large["mean_displacement"] > 2 * small["mean_displacement"]


def test_softmax_trains_the_same_number_of_steps_both_ways(shards, digits):
    paths, _, _ = shards
    _, (x_test, y_test) = digits
    lines = []
    queue = legacy.train_softmax_queue(
        paths,
        num_epochs=4,
        batch_size=16,
        min_after_dequeue=100,
        log_every=25,
        print_fn=lines.append,
    )
    data = legacy.train_softmax_dataset(
        paths, num_epochs=4, batch_size=16, shuffle_buffer=100, log_every=25, print_fn=None
    )
    assert queue.steps == data.steps == 4 * 300 // 16
    assert queue.examples == data.examples == queue.steps * 16
    assert [s for s, _ in queue.losses] == [s for s, _ in data.losses] == [25, 50, 75]
    assert lines[-1].startswith("[queues] OutOfRangeError after 75 steps")
    assert queue.extra["stopped_by"] == "OutOfRangeError"
    for result in (queue, data):
        assert result.losses[-1][1] < result.losses[0][1] < np.log(10)
        assert legacy.evaluate_softmax(result, x_test, y_test) > 0.7


def test_tf_data_training_is_reproducible(shards):
    paths, _, _ = shards
    runs = [
        legacy.train_softmax_dataset(
            paths, num_epochs=2, batch_size=16, log_every=10, print_fn=None
        )
        for _ in range(2)
    ]
    assert runs[0].losses == runs[1].losses
    assert np.array_equal(runs[0].weights, runs[1].weights)


def test_deprecation_notes_name_the_tf_data_replacement():
    assert "Dataset.shuffle(min_after_dequeue)" in legacy.deprecation_note(v1.train.shuffle_batch)
    assert "TFRecordDataset" in legacy.deprecation_note(v1.TFRecordReader)
    assert legacy.deprecation_note(v1.train.Coordinator) is None


def test_table_covers_every_queue_api_of_the_lesson():
    apis = " ".join(api for api, _, _ in legacy.QUEUE_TO_DATA)
    for name in (
        "string_input_producer",
        "TFRecordReader",
        "parse_single_example",
        "decode_raw",
        "shuffle_batch",
        "tf.train.batch",
        "FIFOQueue",
        "RandomShuffleQueue",
        "QueueRunner",
        "start_queue_runners",
        "Coordinator",
        "OutOfRangeError",
    ):
        assert name in apis, name
    assert all(new and note for _, new, note in legacy.QUEUE_TO_DATA)


def test_quiet_restores_the_logger_level():
    logger = tf.get_logger()
    before = logger.level
    with legacy.quiet():
        assert logger.level >= 40
    assert logger.level == before


def test_cli_prints_the_table(capsys):
    assert legacy.main(["table"]) == 0
    out = capsys.readouterr().out
    assert "shuffle_batch" in out and "-> dataset.shuffle(min_after_dequeue)" in out


def test_cli_trains_both_ways(tmp_path, capsys):
    assert legacy.main(["train", "--epochs", "2", "--work-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "queues: 93 steps" in out and "tf.data: 93 steps" in out


def test_each_queue_maps_to_its_own_replacement():
    table = {api: new for api, new, _ in legacy.QUEUE_TO_DATA}
    shuffle_queue = next(api for api in table if "RandomShuffleQueue" in api)
    fifo_queue = next(api for api in table if "FIFOQueue" in api)
    assert "shuffle(" in table[shuffle_queue] and "prefetch" not in table[shuffle_queue]
    assert "prefetch" in table[fifo_queue] and "RandomShuffleQueue" not in fifo_queue
