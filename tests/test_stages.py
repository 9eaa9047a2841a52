"""helpers.stages: lesson 05's measurement runners, memory arithmetic and stage chains."""

from __future__ import annotations

import shutil

import pytest
import tensorflow as tf

from helpers import pipeline as pl
from helpers import stages
from helpers.convert import convert
from helpers.fixture import CLASSES, DATA_DIR
from helpers.pipeline import memory as pl_memory


@pytest.fixture(scope="module")
def small_set(tmp_path_factory):
    """Two fixture classes, six images each, converted into a few shards."""
    root = tmp_path_factory.mktemp("small")
    images = root / "images"
    for name in CLASSES[:2]:
        (images / name).mkdir(parents=True)
        for src in sorted((DATA_DIR / "images" / name).glob("*.jpg"))[:6]:
            shutil.copy(src, images / name / src.name)
    shards = root / "shards"
    convert(images, shards, size_per_record=40_000, workers=1, progress=False)
    return images, shards


def test_measure_stages_measures_every_stage_in_order(small_set):
    _, shards = small_set
    results = stages.measure_stages(
        shards, batch_size=4, image_size=32, epochs=2, cycle_length=2, shuffle_buffer=16
    )
    assert [r.name for r in results] == list(pl.pipeline_stages())
    for r in results:
        assert r.images > 0 and r.seconds > 0 and r.images_per_s > 0
        assert r.images % 4 == 0  # whole batches only


def test_measure_stages_first_limits_the_stages(small_set):
    _, shards = small_set
    results = stages.measure_stages(shards, batch_size=4, image_size=32, epochs=1, first=2)
    assert [r.name for r in results] == list(pl.pipeline_stages())[:2]


def test_compare_readers_reads_the_same_images_three_ways(small_set):
    images, shards = small_set
    folder = pl.list_image_folder(images)
    out = stages.compare_readers(
        folder.paths,
        folder.labels,
        shards,
        num_classes=2,
        batch_size=4,
        image_size=32,
        storage=pl.slow_open(0.001, 0.0),
        parallel=4,
        generator_limit=8,
    )
    assert list(out) == [
        "Python generator (PIL)",
        "tf.data, one file per image",
        "tf.data, TFRecord shards",
    ]
    assert out["Python generator (PIL)"].images == 4  # 8 images in batches of 4, one warm-up
    assert out["tf.data, one file per image"].images == 8
    assert all(r.images_per_s > 0 for r in out.values())
    no_gen = stages.compare_readers(
        folder.paths, folder.labels, shards, 2, batch_size=4, image_size=32, generator=False
    )
    assert "Python generator (PIL)" not in no_gen


def test_memory_costs_use_the_pipeline_estimate():
    rows = stages.memory_costs(
        {"a": {"image_size": 224, "shuffle_buffer": 10, "cache_images": 0}, "b": {}}
    )
    assert [r["scenario"] for r in rows] == ["a", "b"]
    assert rows[0]["element"] == 224 * 224 * 3 * 4
    # no cache: make_dataset shuffles serialized records, not decoded images
    assert rows[0]["shuffle_buffer"] == 10 * pl_memory.IMAGENET_RECORD_BYTES
    assert rows[0]["total"] == sum(
        rows[0][k]
        for k in (
            "shuffle_buffer",
            "cache",
            "interleave_buffers",
            "map_in_flight",
            "batch",
            "prefetch",
        )
    )


@pytest.mark.parametrize(
    ("n", "text"),
    [(0, "0 B"), (1023, "1023 B"), (1536, "1.5 KiB"), (3 * 2**20, "3.0 MiB"), (2**41, "2.0 TiB")],
)
def test_format_bytes(n, text):
    assert stages.format_bytes(n) == text


def test_rss_bytes_is_positive():
    assert stages.rss_bytes() > 10 * 2**20


def test_stage_chain_names_stages_from_source_to_output():
    files = tf.data.Dataset.from_tensor_slices(["a", "b"])
    ds = (
        files.interleave(tf.data.TFRecordDataset, num_parallel_calls=2)
        .map(lambda x: x, num_parallel_calls=2)
        .cache()
        .shuffle(4)
        .batch(2, drop_remainder=True)
        .prefetch(1)
    )
    assert stages.stage_chain(ds) == stages.STAGES
    sequential = files.interleave(tf.data.TFRecordDataset, cycle_length=1).map(lambda x: x)
    assert stages.stage_chain(sequential) == ["interleave (sequential)", "map (sequential)"]
    assert stages.stage_chain(tf.data.TFRecordDataset(["a"])) == ["flat_map"]
    assert stages.stage_chain(tf.data.TFRecordDataset(["a"], num_parallel_reads=2)) == [
        "interleave"
    ]
    assert stages.stage_chain(files.take(1).repeat(2)) == ["take", "repeat"]


def test_measure_cycle_lengths_names_each_setting(small_set):
    _, shards = small_set
    results = stages.measure_cycle_lengths(
        shards,
        batch_size=4,
        image_size=32,
        cycle_lengths=(1, None, 3),
        repeats=2,
        storage=pl.slow_open(0.001, 0.0),
    )
    assert [r.name for r in results] == [
        "cycle_length=1 (sequential)",
        "cycle_length=AUTOTUNE",
        "cycle_length=3",
    ]
    assert all(r.images == 8 for r in results)  # 12 images, batches of 4, one warm-up batch
