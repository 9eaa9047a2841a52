"""helpers.pipeline.make_dataset: shapes, order, knobs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from helpers import pipeline as P

from .support import IMAGE_SIZE, NUM_CLASSES, NUM_SHARDS, PER_SHARD, _collect


@pytest.mark.parametrize(("drop", "batches", "last"), [(True, 5, 4), (False, 6, 4)])
def test_make_dataset_shapes_dtypes_and_drop_remainder(
    dataset_dir: dict, drop: bool, batches: int, last: int
) -> None:
    ds = P.make_dataset(
        dataset_dir["dir"], 5 if drop else 4, IMAGE_SIZE, drop_remainder=drop, seed=0
    )
    if drop:
        assert ds.element_spec[0].shape.as_list() == [5, IMAGE_SIZE, IMAGE_SIZE, 3]
        assert ds.element_spec[1].shape.as_list() == [5, NUM_CLASSES]  # from the manifest
    got = list(ds)
    assert len(got) == (4 if drop else 6)  # 24 images: 4 batches of 5 / 6 batches of 4
    for x, y in got:
        assert x.dtype == tf.float32 and y.dtype == tf.float32
        assert x.shape[1:] == (IMAGE_SIZE, IMAGE_SIZE, 3)
        assert -1.0 <= float(tf.reduce_min(x)) and float(tf.reduce_max(x)) <= 1.0
        np.testing.assert_allclose(tf.reduce_sum(y, axis=1).numpy(), 1.0)


def test_make_dataset_every_record_once_and_labels_match_images(dataset_dir: dict) -> None:
    ds = P.make_dataset(dataset_dir["dir"], 4, IMAGE_SIZE, training=True, augment=True, seed=1)
    x, y = _collect(ds)
    assert x.shape[0] == NUM_SHARDS * PER_SHARD
    assert np.bincount(y.argmax(1)).tolist() == [8, 8, 8]
    # images were drawn with a dominant channel equal to the label
    dominant = x.reshape(len(x), -1, 3).mean(1).argmax(1)
    np.testing.assert_array_equal(dominant, y.argmax(1))


def test_deterministic_order_is_reproducible(dataset_dir: dict) -> None:
    def run() -> tuple[np.ndarray, np.ndarray]:
        return _collect(
            P.make_dataset(
                dataset_dir["dir"],
                4,
                IMAGE_SIZE,
                training=True,
                deterministic=True,
                seed=7,
                cycle_length=2,
                shuffle_buffer=10,
                augment=True,
            )
        )

    x1, y1 = run()
    x2, y2 = run()
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_array_equal(x1, x2)


def test_options_cache_repeat_prefetch_off(dataset_dir: dict, tmp_path: Path) -> None:
    kw = dict(training=False, prefetch=None, num_parallel_calls=None)
    ds = P.make_dataset(dataset_dir["dir"], 8, IMAGE_SIZE, cache=True, repeat=2, **kw)
    assert len(list(ds)) == 6
    file_cache = P.make_dataset(
        dataset_dir["dir"], 8, IMAGE_SIZE, cache=str(tmp_path / "cache"), **kw
    )
    first, again = _collect(file_cache), _collect(file_cache)
    np.testing.assert_array_equal(first[1], again[1])
    assert any(p.name.startswith("cache") for p in tmp_path.iterdir())
    blocks = P.make_dataset(
        dataset_dir["dir"],
        8,
        IMAGE_SIZE,
        cycle_length=2,
        block_length=4,
        read_buffer_bytes=1 << 20,
        deterministic=True,
        **kw,
    )
    plain = P.make_dataset(dataset_dir["dir"], 8, IMAGE_SIZE, cycle_length=1, **kw)
    # block_length=4: four records of shard 0, four of shard 1, then shard 0 again
    np.testing.assert_array_equal(_collect(blocks)[0][:4], _collect(plain)[0][:4])
    np.testing.assert_array_equal(_collect(blocks)[0][4:8], _collect(plain)[0][8:12])


def test_options_groups_and_flat_knobs_build_the_same_pipeline(dataset_dir: dict) -> None:
    from helpers.stages import stage_chain

    opts = P.DatasetOptions(
        read=P.ReadOptions(cycle_length=2),
        decode=P.DecodeOptions(num_parallel_calls=None),
        feed=P.FeedOptions(training=False, prefetch=None, deterministic=True),
    )
    grouped = P.make_dataset(dataset_dir["dir"], 4, IMAGE_SIZE, options=opts)
    flat = P.make_dataset(
        dataset_dir["dir"],
        4,
        IMAGE_SIZE,
        cycle_length=2,
        num_parallel_calls=None,
        training=False,
        prefetch=None,
        deterministic=True,
    )
    assert stage_chain(grouped) == stage_chain(flat)
    np.testing.assert_array_equal(_collect(grouped)[1], _collect(flat)[1])
    # a flat knob overrides the options object
    overridden = P.make_dataset(dataset_dir["dir"], 4, IMAGE_SIZE, options=opts, prefetch=2)
    assert stage_chain(overridden)[-1] == "prefetch" and stage_chain(grouped)[-1] == "batch"


def test_unknown_knob_is_a_type_error_listing_the_knobs(dataset_dir: dict) -> None:
    with pytest.raises(TypeError, match="cycle_lenght.*cycle_length"):
        P.make_dataset(dataset_dir["dir"], 4, IMAGE_SIZE, cycle_lenght=2)
