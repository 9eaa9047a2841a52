"""Lesson 05 exercises: the solutions pass, stubs fail, planted mistakes are named."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from helpers import exercises as ex
from helpers.exercises import CheckFailed
from helpers.stages import STAGES, stage_chain
from lesson_suite import exercise_suite

AUTOTUNE = tf.data.AUTOTUNE


# -- the solutions, as in solutions/05_interleave_autotune.ipynb ---------------


def fast_reader(files, open_shard):
    return tf.data.Dataset.from_tensor_slices(files).interleave(
        open_shard,
        cycle_length=len(files),
        num_parallel_calls=len(files),
        deterministic=False,
    )


def make_pipeline(files, parse, batch_size, shuffle_buffer):
    return (
        tf.data.Dataset.from_tensor_slices(files)
        .interleave(
            tf.data.TFRecordDataset,
            cycle_length=4,
            num_parallel_calls=AUTOTUNE,
            deterministic=False,
        )
        .map(parse, num_parallel_calls=AUTOTUNE)
        .cache()
        .shuffle(shuffle_buffer)
        .batch(batch_size, drop_remainder=True)
        .prefetch(AUTOTUNE)
    )


def fixed_pipeline(dataset, batch_size, buffer_size):
    return dataset.shuffle(buffer_size).batch(batch_size, drop_remainder=True)


SOLUTIONS = {
    "05.fast_reader": fast_reader,
    "05.make_pipeline": make_pipeline,
    "05.shuffle_then_batch": fixed_pipeline,
}


test_lesson_has_its_exercises_in_order, test_solution_passes_on_fresh_inputs, test_stub_fails = (
    exercise_suite("05", SOLUTIONS)
)


def test_other_spellings_pass():
    def via_list_files(files, parse, batch_size, shuffle_buffer):
        return (
            tf.data.Dataset.list_files(files)
            .interleave(tf.data.TFRecordDataset, num_parallel_calls=AUTOTUNE, deterministic=False)
            .map(parse, num_parallel_calls=AUTOTUNE)
            .cache()
            .shuffle(shuffle_buffer)
            .batch(batch_size, drop_remainder=True)
            .prefetch(AUTOTUNE)
        )

    ex.check("05.make_pipeline", via_list_files, seed=3)

    def explicit_parallel(files, open_shard):
        return tf.data.Dataset.from_tensor_slices(files).interleave(
            open_shard, cycle_length=16, num_parallel_calls=16
        )

    ex.check("05.fast_reader", explicit_parallel, seed=3)


def test_stage_chain_names_the_stages():
    files = tf.data.Dataset.from_tensor_slices(["a"])
    built = (
        files.interleave(tf.data.TFRecordDataset, num_parallel_calls=AUTOTUNE)
        .map(lambda x: x, num_parallel_calls=AUTOTUNE)
        .cache()
        .shuffle(4)
        .batch(2)
        .prefetch(1)
    )
    assert stage_chain(built) == STAGES
    assert stage_chain(tf.data.TFRecordDataset(["a"])) == ["flat_map"]
    assert stage_chain(tf.data.TFRecordDataset(["a"], num_parallel_reads=4)) == ["interleave"]


# -- 05.fast_reader -------------------------------------------------------------


def _sequential(files, open_shard):
    return tf.data.Dataset.from_tensor_slices(files).flat_map(open_shard)


def _interleave_without_parallel_calls(files, open_shard):
    return tf.data.Dataset.from_tensor_slices(files).interleave(open_shard, cycle_length=len(files))


def _first_shard_missing(files, open_shard):
    return fast_reader(files[1:], open_shard)


def _returns_list(files, open_shard):
    return list(fast_reader(files, open_shard))


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_sequential, r"at most 1 shard\(s\) opening at the same time"),
        (_interleave_without_parallel_calls, r"at most 1 shard\(s\) opening"),
        (_first_shard_missing, "missing"),
        (_returns_list, "not a tf.data.Dataset"),
    ],
)
def test_fast_reader_mistakes_are_named(mistake, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("05.fast_reader", mistake, seed=4)


# -- 05.make_pipeline -----------------------------------------------------------


def _pipeline(files, parse, batch_size, shuffle_buffer, order, **options):
    ds = tf.data.Dataset.from_tensor_slices(files)
    ds = ds.interleave(
        tf.data.TFRecordDataset,
        num_parallel_calls=options.get("interleave_calls", AUTOTUNE),
        deterministic=False,
    )
    for stage in order:
        if stage == "map":
            ds = ds.map(parse, num_parallel_calls=options.get("map_calls", AUTOTUNE))
        elif stage == "cache":
            ds = ds.cache()
        elif stage == "shuffle":
            ds = ds.shuffle(shuffle_buffer)
        elif stage == "batch":
            ds = ds.batch(batch_size, drop_remainder=options.get("drop", True))
        elif stage == "prefetch":
            ds = ds.prefetch(AUTOTUNE)
    return ds


def _mistake(order, **options):
    def build(files, parse, batch_size, shuffle_buffer):
        return _pipeline(files, parse, batch_size, shuffle_buffer, order, **options)

    return build


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_mistake(["map", "shuffle", "cache", "batch", "prefetch"]), "before cache"),
        (_mistake(["cache", "map", "shuffle", "batch", "prefetch"]), "not cached"),
        (_mistake(["map", "shuffle", "batch", "prefetch"]), "not cached"),
        (_mistake(["map", "cache", "batch", "shuffle", "prefetch"]), "shuffle after batch"),
        (_mistake(["map", "cache", "shuffle", "batch", "prefetch"], drop=False), "exactly"),
        (_mistake(["map", "cache", "shuffle", "batch"]), "missing prefetch"),
        (_mistake(["map", "cache", "shuffle", "prefetch", "batch"]), "wrong order"),
        (_mistake(["map", "cache", "shuffle", "batch", "prefetch"], map_calls=None), "one thread"),
        (
            _mistake(["map", "cache", "shuffle", "batch", "prefetch"], interleave_calls=None),
            "one at a time",
        ),
    ],
)
def test_make_pipeline_mistakes_are_named(mistake, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("05.make_pipeline", mistake, seed=5)


def test_make_pipeline_without_interleave_is_named():
    def plain(files, parse, batch_size, shuffle_buffer):
        return (
            tf.data.TFRecordDataset(files)
            .map(parse, num_parallel_calls=AUTOTUNE)
            .cache()
            .shuffle(shuffle_buffer)
            .batch(batch_size, drop_remainder=True)
            .prefetch(AUTOTUNE)
        )

    with pytest.raises(CheckFailed, match="one at a time"):
        ex.check("05.make_pipeline", plain, seed=6)


# -- 05.shuffle_then_batch ------------------------------------------------------


def _broken(dataset, batch_size, buffer_size):
    return dataset.batch(batch_size, drop_remainder=True).shuffle(buffer_size)


def _no_shuffle(dataset, batch_size, buffer_size):
    return dataset.batch(batch_size, drop_remainder=True)


def _tiny_buffer(dataset, batch_size, buffer_size):
    return dataset.shuffle(2).batch(batch_size, drop_remainder=True)


def _same_every_epoch(dataset, batch_size, buffer_size):
    return dataset.shuffle(buffer_size, seed=1, reshuffle_each_iteration=False).batch(
        batch_size, drop_remainder=True
    )


def _keeps_remainder(dataset, batch_size, buffer_size):
    return dataset.shuffle(buffer_size).batch(batch_size)


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_broken, "batched before they are shuffled"),
        (_no_shuffle, "batched before they are shuffled"),
        (_tiny_buffer, "buffer is too small|batched before they are shuffled"),
        (_same_every_epoch, "identical batches"),
        (_keeps_remainder, "batches of sizes"),
    ],
)
def test_fixed_pipeline_mistakes_are_named(mistake, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("05.shuffle_then_batch", mistake, seed=7)


# -- issue 13/17: judged by concurrent opens through open_shard, not by speed -------


def _parallel_reads_without_open_shard(files, open_shard):
    return tf.data.TFRecordDataset(files, num_parallel_reads=len(files))


def _autotune_everything(files, open_shard):
    return tf.data.Dataset.from_tensor_slices(files).interleave(
        open_shard, cycle_length=AUTOTUNE, num_parallel_calls=AUTOTUNE, deterministic=False
    )


def test_parallel_reads_that_skip_open_shard_fail():
    with pytest.raises(CheckFailed, match=r"opened 0 of \d+ shards through open_shard"):
        ex.check("05.fast_reader", _parallel_reads_without_open_shard, seed=5)


def test_autotune_fails_whatever_the_number_of_cores():
    # AUTOTUNE resolves to the core count (2 here, 16 elsewhere): the check reads the
    # dataset's settings instead of timing it, so the verdict is the same on any machine.
    with pytest.raises(CheckFailed, match="cycle_length and num_parallel_calls to AUTOTUNE"):
        ex.check("05.fast_reader", _autotune_everything, seed=2)


def test_no_timing_is_reported_or_trusted():
    exercise = ex.get("05.fast_reader")
    cases = exercise.make_cases(np.random.default_rng(0), Path(tempfile.mkdtemp()))
    answer = ex.run_cases(exercise, fast_reader, cases[:1])[0]["ok"]
    decoded = ex.from_jsonable(answer)
    assert "seconds" not in decoded and "baseline_seconds" not in decoded
    assert decoded["peak"] >= 8 and decoded["opens"] == len(cases[0]["files"])
    forged = dict(decoded, records=decoded["records"][:-1])
    with pytest.raises(CheckFailed, match="missing"):
        exercise.verify(cases[0], forged)


def test_rewritten_shards_do_not_change_what_is_expected():
    from helpers.records import write_records

    def rewrites_then_reads(files, open_shard):
        for f in files:
            write_records(f, [b"made-up"])
        return fast_reader(files, open_shard)

    with pytest.raises(CheckFailed, match="every record of every shard"):
        ex.check("05.fast_reader", rewrites_then_reads, seed=1)
