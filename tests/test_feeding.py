"""helpers.feeding: the three ways to feed a model, timed side by side."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from helpers import feeding
from helpers.fixture import DATA_DIR, load_digits


@pytest.fixture(scope="module")
def digits():
    x, y = load_digits(split="train")
    return x[:320], y[:320]


@pytest.fixture(scope="module")
def images():
    from helpers.pipeline import list_image_folder

    folder = list_image_folder(DATA_DIR / "images")
    return folder.paths[::20], folder.labels[::20]  # 12 images, every class


def test_array_batches_slice_scale_and_wrap(digits):
    x, y = digits
    next_batch = feeding.array_batches(x, y, batch_size=100)
    xb, yb = next_batch(0)
    assert xb.dtype == np.float32 and xb.shape == (100, 8, 8) and yb.dtype == np.int32
    np.testing.assert_allclose(xb, x[:100] / 255.0, rtol=1e-6)
    # 320 examples: 3 full batches per epoch, the 20 left over are skipped
    assert np.array_equal(next_batch(3)[1], y[:100])
    with pytest.raises(ValueError, match="cannot fill one batch"):
        feeding.array_batches(x[:5], y[:5], batch_size=10)


def test_jpeg_batches_and_decode_images_agree(images):
    paths, labels = images
    next_batch = feeding.jpeg_batches(paths, labels, batch_size=4, image_size=16)
    xb, yb = next_batch(1)
    assert xb.shape == (4, 16, 16, 3) and xb.dtype == np.float32
    assert -1.0 <= xb.min() and xb.max() <= 1.0
    assert yb.tolist() == list(labels[4:8])
    everything = feeding.decode_images(paths, 16)
    assert everything.shape == (12, 16, 16, 3)
    np.testing.assert_array_equal(everything[4:8], xb)


def test_softmax_regression_learns(digits):
    x, y = digits
    model = feeding.SoftmaxRegression(64, 10, learning_rate=0.5)
    next_batch = feeding.array_batches(x, y, 32)
    losses = [float(model.train_step(*next_batch(step))) for step in range(60)]
    assert losses[0] == pytest.approx(np.log(10), rel=1e-5)  # zero weights: uniform guess
    assert np.mean(losses[-10:]) < 0.6 * losses[0]


def test_the_three_ways_train_identically_on_the_same_batches(digits):
    """Same data, same order, same model: only the delivery differs, so the loss matches."""
    x, y = digits
    xf = x.astype(np.float32) / np.float32(255.0)
    steps, batch = 25, 32

    # each runs one untimed warm-up step on batch 0, then batches 1..steps
    python = feeding.feed_python(
        feeding.SoftmaxRegression(64, 10, 0.5), feeding.array_batches(x, y, batch), steps
    )
    dataset = tf.data.Dataset.from_tensor_slices((xf, y.astype(np.int32)))
    dataset = dataset.batch(batch, drop_remainder=True).repeat()
    pipeline = feeding.feed_pipeline(feeding.SoftmaxRegression(64, 10, 0.5), dataset, steps)
    preloaded = feeding.feed_preloaded(feeding.SoftmaxRegression(64, 10, 0.5), xf, y, batch, steps)
    assert python.final_loss == pytest.approx(pipeline.final_loss, rel=1e-5)
    assert preloaded.final_loss == pytest.approx(python.final_loss, rel=1e-5)
    assert python.final_loss < np.log(10)


def test_feed_results_report_time_share_and_memory(digits):
    x, y = digits
    xf = x.astype(np.float32) / 255.0
    results = [
        feeding.feed_python(feeding.SoftmaxRegression(64, 10), feeding.array_batches(x, y, 32), 10),
        feeding.feed_pipeline(
            feeding.SoftmaxRegression(64, 10),
            tf.data.Dataset.from_tensor_slices((xf, y)).batch(32).repeat().prefetch(2),
            10,
        ),
        feeding.feed_preloaded(feeding.SoftmaxRegression(64, 10), lambda: xf, y, 32, 10),
    ]
    assert [r.how for r in results] == ["feeding", "input pipeline", "preloaded"]
    for r in results:
        assert r.steps == 10 and r.seconds > 0 and r.ms_per_step > 0 and np.isfinite(r.final_loss)
    for r in results[:2]:
        assert 0 <= r.input_share <= 1 and r.held_bytes == 0
    assert results[2].input_share is None and results[2].wait_seconds is None
    assert results[2].held_bytes == xf.nbytes + 4 * len(y)
    assert results[2].setup_seconds > 0
    table = feeding.results_table(results)
    assert table.count("\n") == 4 and "in-graph slice" in table and "0.1 MB" in table


def test_feed_pipeline_says_when_the_dataset_is_too_short(digits):
    x, y = digits
    short = tf.data.Dataset.from_tensor_slices((x.astype(np.float32), y)).batch(100)
    with pytest.raises(ValueError, match="repeat"):
        feeding.feed_pipeline(feeding.SoftmaxRegression(64, 10), short, steps=10)


def test_cli_prints_the_three_ways(tmp_path, capsys):
    argv = ["--image-size", "8", "--steps", "3", "--work-dir", str(tmp_path)]
    assert feeding.main(argv) == 0
    out = capsys.readouterr().out
    assert "240 images" in out
    for way in ("| feeding |", "| input pipeline |", "| preloaded |"):
        assert way in out
