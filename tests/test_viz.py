"""helpers.viz: image grids, bar charts and training curves return figures with the data."""

from __future__ import annotations

import shutil

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from helpers import viz  # noqa: E402
from helpers.convert import convert  # noqa: E402
from helpers.fixture import CLASSES, DATA_DIR  # noqa: E402


def _images(n, size=(20, 30)):
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, size=(*size, 3), dtype=np.uint8) for _ in range(n)]


def test_image_grid_shows_every_image_with_its_title():
    fig = viz.image_grid(_images(7), titles=[f"t{i}" for i in range(7)], ncols=3)
    shown = [ax for ax in fig.axes if ax.images]
    assert len(shown) == 7 and len(fig.axes) == 9
    assert [ax.get_title() for ax in shown] == [f"t{i}" for i in range(7)]


def test_image_grid_accepts_mobilenet_range_and_grey():
    mobilenet = np.linspace(-1, 1, 48, dtype=np.float32).reshape(4, 4, 3)
    grey = np.zeros((5, 5, 1), np.float32)
    fig = viz.image_grid([mobilenet, grey])
    arrays = [ax.images[0].get_array() for ax in fig.axes if ax.images]
    assert arrays[0].dtype == np.uint8 and arrays[0].min() == 0 and arrays[0].max() == 255
    assert arrays[1].shape == (5, 5)


def test_image_grid_refuses_bad_input():
    with pytest.raises(ValueError, match="no images"):
        viz.image_grid([])
    with pytest.raises(ValueError, match="titles"):
        viz.image_grid(_images(2), titles=["one"])


def test_class_grid_has_one_row_per_class():
    fig = viz.class_grid({"a": _images(3), "b": _images(2)}, suptitle="x")
    labels = [ax.get_ylabel() for ax in fig.axes if ax.get_ylabel()]
    assert labels == ["a", "b"]
    assert sum(1 for ax in fig.axes if ax.images) == 5


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    root = tmp_path_factory.mktemp("viz")
    for name in CLASSES[:3]:
        (root / "images" / name).mkdir(parents=True)
        for src in sorted((DATA_DIR / "images" / name).glob("*.jpg"))[:4]:
            shutil.copy(src, root / "images" / name / src.name)
    convert(root / "images", root / "shards", size_per_record=30_000, workers=1, progress=False)
    return root / "shards"


def test_samples_per_class_reads_decoded_images_per_class(shards):
    samples = viz.samples_per_class(shards, per_class=2)
    assert list(samples) == sorted(CLASSES[:3])  # label order = sorted folder names
    for images in samples.values():
        assert len(images) == 2
        assert all(im.dtype == np.uint8 and im.ndim == 3 and im.shape[2] == 3 for im in images)
    more = viz.samples_per_class(shards, per_class=10)
    assert all(len(v) == 4 for v in more.values())  # only 4 per class exist


def test_throughput_bars_label_ratios_against_the_baseline():
    fig = viz.throughput_bars({"slow": 100.0, "fast": 250.0}, title="t", baseline="slow")
    ax = fig.axes[0]
    assert [p.get_width() for p in ax.patches] == [100.0, 250.0]
    texts = [t.get_text() for t in ax.texts]
    assert "100 (x1.0)" in texts and "250 (x2.5)" in texts
    with pytest.raises(ValueError, match="baseline"):
        viz.throughput_bars({"a": 1.0}, baseline="b")


def test_grouped_bars_one_bar_per_method_and_condition():
    fig = viz.grouped_bars({"local": {"a": 10, "b": 20}, "slow": {"a": 1, "b": 15}})
    ax = fig.axes[0]
    assert sorted(p.get_height() for p in ax.patches) == [1, 10, 15, 20]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["local", "slow"]


def test_training_curves_plot_train_and_validation_and_chance():
    history = {
        "loss": [2, 1],
        "accuracy": [0.3, 0.6],
        "val_loss": [2, 1.5],
        "val_accuracy": [0.2, 0.5],
    }
    fig = viz.training_curves(history, chance=1 / 6)
    left, right = fig.axes
    assert len(left.lines) == 2 and len(right.lines) == 3
    assert list(right.lines[1].get_ydata()) == [0.2, 0.5]
    with pytest.raises(ValueError, match="loss"):
        viz.training_curves({})
