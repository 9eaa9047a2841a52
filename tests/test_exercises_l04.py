"""Lesson 04 exercises: the solutions pass, stubs fail, planted mistakes are named."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import tensorflow as tf

from helpers import exercises as ex
from helpers.exercises import CheckFailed
from lesson_suite import exercise_suite


def _feature(kind, values):
    return tf.train.Feature(
        **{kind: getattr(tf.train, kind.title().replace("_", ""))(value=values)}
    )


# -- the solutions, as in solutions/04_converter_sharding.ipynb ---------------


def make_example(name, category, data, num_classes):
    if not 0 <= category < num_classes:
        raise ValueError(f"category {category} is outside [0, {num_classes})")
    feature = {
        "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[name.encode("utf-8")])),
        "category": tf.train.Feature(int64_list=tf.train.Int64List(value=[category])),
        "data": tf.train.Feature(bytes_list=tf.train.BytesList(value=[data])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature))


def shard_boundaries(sizes, size_per_record):
    bounds, start, total = [], 0, 0
    for i, size in enumerate(sizes):
        if i > start and total + size > size_per_record:
            bounds.append((start, i))
            start, total = i, 0
        total += size
    if sizes:
        bounds.append((start, len(sizes)))
    return bounds


def count_per_class(path):
    spec = {"image/class/text": tf.io.FixedLenFeature([], tf.string)}
    counts = collections.Counter()
    for record in tf.data.TFRecordDataset(path):
        text = tf.io.parse_single_example(record, spec)["image/class/text"]
        counts[text.numpy().decode("utf-8")] += 1
    return dict(counts)


SOLUTIONS = {
    "04.make_example": make_example,
    "04.shard_boundaries": shard_boundaries,
    "04.count_per_class": count_per_class,
}


test_lesson_has_its_exercises_in_order, test_solution_passes_on_fresh_inputs, test_stub_fails = (
    exercise_suite("04", SOLUTIONS)
)


# -- 04.make_example -----------------------------------------------------------


def _no_range_check(name, category, data, num_classes):
    return make_example(name, category, data, num_classes + 10**6)


def _float_category(name, category, data, num_classes):
    example = make_example(name, category, data, num_classes)
    example.features.feature["category"].CopyFrom(_feature("float_list", [float(category)]))
    return example


def _str_data(name, category, data, num_classes):
    example = make_example(name, category, data, num_classes)
    example.features.feature["data"].CopyFrom(_feature("bytes_list", [str(data).encode()]))
    return example


def _serialized(name, category, data, num_classes):
    return make_example(name, category, data, num_classes).SerializeToString()


def _renamed(name, category, data, num_classes):
    example = make_example(name, category, data, num_classes)
    example.features.feature["label"].CopyFrom(example.features.feature.pop("category"))
    return example


def _upper_bound_only(name, category, data, num_classes):
    if category >= num_classes:
        raise ValueError("too big")
    return make_example(name, max(category, 0), data, num_classes)


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_no_range_check, "silently be all zeros"),
        (_upper_bound_only, "category -1, which is outside"),
        (_float_category, "'category' is a float_list"),
        (_str_data, "feature 'data' holds"),
        (_serialized, "returned bytes"),
        (_renamed, "exactly"),
    ],
)
def test_make_example_mistakes_are_named(mistake, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("04.make_example", mistake, seed=3)


# -- 04.shard_boundaries ---------------------------------------------------------


def _seed_rule(sizes, size_per_record):
    bounds, start, total = [], 0, 0
    for i, size in enumerate(sizes):
        total += size
        if total >= size_per_record:
            bounds.append((start, i + 1))
            start, total = i + 1, 0
    if start < len(sizes):
        bounds.append((start, len(sizes)))
    return bounds


def _drops_last(sizes, size_per_record):
    bounds = shard_boundaries(sizes, size_per_record)
    return bounds[:-1] if len(bounds) > 1 else bounds


def _strict_less(sizes, size_per_record):
    bounds, start, total = [], 0, 0
    for i, size in enumerate(sizes):
        if i > start and total + size >= size_per_record:
            bounds.append((start, i))
            start, total = i, 0
        total += size
    if sizes:
        bounds.append((start, len(sizes)))
    return bounds


def _empty_first_shard(sizes, size_per_record):
    bounds, start, total = [], 0, 0
    for i, size in enumerate(sizes):
        if total + size > size_per_record:
            bounds.append((start, i))
            start, total = i, 0
        total += size
    bounds.append((start, len(sizes)))
    return bounds


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_seed_rule, "typical converter script's"),
        (_drops_last, "last, partly filled shard was dropped"),
        (_strict_less, "closed early"),
        (_empty_first_shard, "empty shard"),
    ],
)
def test_shard_boundaries_mistakes_are_named(mistake, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("04.shard_boundaries", mistake, seed=4)


def test_shard_boundaries_pass_on_the_converter_rule_with_tuples_or_lists():
    ex.check(
        "04.shard_boundaries",
        lambda sizes, size_per_record: [list(p) for p in shard_boundaries(sizes, size_per_record)],
        seed=8,
    )


def test_no_reference_answer_ships_as_a_callable():
    from helpers.exercises import l04

    assert not hasattr(l04, "reference_boundaries")
    public = [n for n in dir(l04) if not n.startswith("_") and callable(getattr(l04, n))]
    assert "shard_boundaries" not in public and "count_per_class" not in public


# -- 04.count_per_class ----------------------------------------------------------


def _by_label(path):
    spec = {"image/class/label": tf.io.FixedLenFeature([], tf.int64)}
    counts = collections.Counter()
    for record in tf.data.TFRecordDataset(path):
        counts[str(int(tf.io.parse_single_example(record, spec)["image/class/label"]))] += 1
    return dict(counts)


def _skips_first(path):
    counts = collections.Counter()
    spec = {"image/class/text": tf.io.FixedLenFeature([], tf.string)}
    for record in tf.data.TFRecordDataset(path).skip(1):
        counts[tf.io.parse_single_example(record, spec)["image/class/text"].numpy().decode()] += 1
    return dict(counts)


def _returns_list(path):
    return sorted(count_per_class(path).items())


def test_count_per_class_accepts_bytes_keys_and_numpy_counts():
    def bytes_keys(path):
        return {k.encode(): np.int64(v) for k, v in count_per_class(path).items()}

    ex.check("04.count_per_class", bytes_keys, seed=5)


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_by_label, "keyed by integer label"),
        (_skips_first, "exactly once"),
        (_returns_list, "returned a list"),
    ],
)
def test_count_per_class_mistakes_are_named(mistake, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("04.count_per_class", mistake, seed=6)


# -- issue 13/17: the kernel's own reports, the skipped-record message -------------


def test_emptying_the_shard_and_reporting_nothing_fails():
    def empties_it(path):
        open(path, "wb").close()  # the shard lives where the student's code can write
        return count_per_class(path)

    with pytest.raises(CheckFailed, match=r"counted 0 of the shard's \d+ records"):
        ex.check("04.count_per_class", empties_it, seed=2)


def test_rewriting_the_shard_to_match_a_made_up_answer_fails():
    from helpers.features import image_example, serialize_example
    from helpers.records import write_records

    def rewrites_it(path):
        records = [serialize_example(image_example(b"x", 0, "tench", "t.jpg", 1, 1))]
        write_records(path, records)
        return {"tench": 1}

    with pytest.raises(CheckFailed):
        ex.check("04.count_per_class", rewrites_it, seed=2)


@pytest.mark.parametrize("seed", [0, 3, None])
def test_skipping_the_first_record_is_not_told_to_decode_utf8(seed):
    with pytest.raises(CheckFailed) as info:
        ex.check("04.count_per_class", _skips_first, seed=seed)
    assert "exactly once" in str(info.value) and "utf-8" not in str(info.value)


def test_assert_instead_of_value_error_gets_the_hint():
    def make_example_with_assert(name, category, data, num_classes):
        assert 0 <= category < num_classes, "bad category"
        return make_example(name, category, data, num_classes)

    with pytest.raises(
        CheckFailed,
        match=r"(?s)AssertionError: bad category.*Hint: refuse bad input with `raise ValueError",
    ):
        ex.check("04.make_example", make_example_with_assert, seed=1)
