"""Lesson 04 exercises: the solutions pass, stubs fail, planted mistakes are named."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import tensorflow as tf

from helpers import exercises as ex
from helpers.exercises import CheckFailed
from helpers.exercises.l04 import reference_boundaries
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


def test_reference_boundaries_match_the_converter_rule():
    assert reference_boundaries([5, 5, 5, 5], 10) == [[0, 2], [2, 4]]
    assert reference_boundaries([30, 1, 1], 10) == [[0, 1], [1, 3]]
    assert reference_boundaries([1, 30, 1], 10) == [[0, 1], [1, 2], [2, 3]]
    assert reference_boundaries([], 10) == []


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
        (_skips_first, "exactly once|has classes"),
        (_returns_list, "returned a list"),
    ],
)
def test_count_per_class_mistakes_are_named(mistake, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("04.count_per_class", mistake, seed=6)
