"""Stage builder, throughput meter and memory estimate."""

from __future__ import annotations

import pytest
import tensorflow as tf

from helpers import pipeline as P
from helpers.pipeline.storage import _sleep_transformation

from .support import IMAGE_SIZE


def test_make_stages_builds_each_stage_in_order(dataset_dir: dict) -> None:
    stages = P.make_stages(dataset_dir["dir"], 4, IMAGE_SIZE, cycle_length=2, seed=0)
    names = list(stages)
    assert names[0].startswith("1") and names[-1].endswith("prefetch") and len(names) == 6
    assert [n.split(" + ")[-1] for n in names[1:]] == [
        "interleave",
        "parallel map",
        "cache",
        "shuffle",
        "prefetch",
    ]
    for ds in stages.values():
        assert sum(int(x.shape[0]) for x, _ in ds) == 24
    options = P.pipeline_stages()
    assert options["1 read + map, one file at a time"]["interleave_parallel_calls"] is None
    assert options["6 + prefetch"]["prefetch"] == P.AUTOTUNE


def test_measure_throughput_counts_images_after_warmup() -> None:
    ds = tf.data.Dataset.from_tensor_slices(tf.zeros((40, 8, 8, 3))).batch(4)
    stats = P.measure_throughput(ds, warmup=1)
    assert stats["batches"] == 9 and stats["images"] == 36 and stats["warmup_batches"] == 1
    assert stats["images_per_s"] > 0 and stats["seconds"] > 0
    assert P.measure_throughput(ds, steps=3, warmup=0)["images"] == 12
    pairs = tf.data.Dataset.from_tensor_slices((tf.zeros((10, 8, 8, 3)), tf.zeros(10)))
    assert P.measure_throughput(pairs, warmup=0)["images"] == 10  # unbatched: 1 per element
    with pytest.raises(ValueError, match="no batches left"):
        P.measure_throughput(ds, warmup=20)


def test_measure_throughput_sees_a_slow_pipeline() -> None:
    ds = tf.data.Dataset.range(4).apply(_sleep_transformation(tf.constant(50_000, tf.int64)))
    stats = P.measure_throughput(ds, warmup=0, images_per_element=1)
    assert stats["seconds"] >= 4 * 0.05 and stats["images_per_s"] <= 1 / 0.05


def test_estimate_pipeline_memory_numbers() -> None:
    mem = P.estimate_pipeline_memory(224, 32, shuffle_buffer=1000, cache_images=100, cycle_length=4)
    assert mem["element"] == 224 * 224 * 3 * 4 == 602_112
    assert mem["shuffle_buffer"] == 1000 * 602_112  # with a cache the buffer holds decoded images
    assert mem["cache"] == 100 * 602_112
    assert mem["interleave_buffers"] == 4 * 256 * 1024
    assert mem["batch"] == 32 * 602_112
    assert mem["total"] == sum(v for k, v in mem.items() if k not in ("element", "total"))


def test_estimate_pipeline_memory_shuffles_records_without_cache() -> None:
    """make_dataset shuffles serialized records when it does not cache: so does the estimate."""
    mem = P.estimate_pipeline_memory(224, 32, shuffle_buffer=1000, record_bytes=100_000)
    assert mem["cache"] == 0
    assert mem["shuffle_buffer"] == 1000 * 100_000
    forced = P.estimate_pipeline_memory(224, 32, shuffle_buffer=1000, shuffle_decoded=True)
    assert forced["shuffle_buffer"] == 1000 * 602_112


def test_estimate_matches_where_make_dataset_puts_the_shuffle(dataset_dir: dict) -> None:
    """The estimate's rule (records without cache, images with it) is make_dataset's order."""
    from helpers.stages import stage_chain

    for cache in (False, True):
        ds = P.make_dataset(dataset_dir["dir"], 4, 24, cache=cache, shuffle_buffer=8)
        chain = stage_chain(ds)
        record_shuffle = len(chain) - 1 - chain[::-1].index("shuffle")  # not the file list's
        before_map = record_shuffle < chain.index("map")
        mem = P.estimate_pipeline_memory(24, 4, shuffle_buffer=8, cache_images=24 if cache else 0)
        holds_images = mem["shuffle_buffer"] == 8 * mem["element"]
        assert before_map is not holds_images, (cache, chain)
