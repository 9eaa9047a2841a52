"""Lesson 02 exercises: the solutions pass, stubs fail, planted mistakes are named."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from helpers import exercises as ex
from helpers import features as hf
from helpers.exercises import CheckFailed
from lesson_suite import exercise_suite

# -- the solutions, as in solutions/02_example_feature_types.ipynb ------------


def bytes_feature(value):
    if isinstance(value, type(tf.constant(0))):
        value = value.numpy()
    if isinstance(value, str):
        value = value.encode("utf-8")
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def record_to_example(record):
    feature = {
        "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[record["id"]])),
        "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[record["name"].encode()])),
        "score": tf.train.Feature(float_list=tf.train.FloatList(value=[record["score"]])),
        "tags": tf.train.Feature(
            bytes_list=tf.train.BytesList(value=[t.encode() for t in record["tags"]])
        ),
        "verified": tf.train.Feature(
            int64_list=tf.train.Int64List(value=[int(record["verified"])])
        ),
        "taken_at_ms": tf.train.Feature(
            int64_list=tf.train.Int64List(value=[round(record["taken_at"] * 1000)])
        ),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature))


def uint64_feature(values):
    as_int64 = np.asarray(values, dtype=np.uint64).view(np.int64)
    return tf.train.Feature(int64_list=tf.train.Int64List(value=as_int64.tolist()))


def tensor_feature(array):
    data = tf.io.serialize_tensor(array).numpy()
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[data]))


SOLUTIONS = {
    "02.bytes_feature": bytes_feature,
    "02.record_to_example": record_to_example,
    "02.uint64_feature": uint64_feature,
    "02.tensor_feature": tensor_feature,
}


test_lesson_has_its_exercises_in_order, test_solution_passes_on_fresh_inputs, test_stub_fails = (
    exercise_suite("02", SOLUTIONS)
)


@pytest.mark.parametrize("seed", range(4))
def test_solutions_pass_on_many_draws(seed):
    for key, func in SOLUTIONS.items():
        ex.check(key, func, seed=seed)


def test_helpers_features_passes_the_plain_exercises():
    ex.check("02.bytes_feature", hf.bytes_feature)


# -- planted mistakes ---------------------------------------------------------


def bytes_no_numpy(value):
    if isinstance(value, str):
        value = value.encode("utf-8")
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def bytes_no_encode(value):
    if isinstance(value, type(tf.constant(0))):
        value = value.numpy()
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def bytes_latin1(value):
    if isinstance(value, type(tf.constant(0))):
        value = value.numpy()
    if isinstance(value, str):
        value = value.encode("utf-16-le")
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def bytes_unwrapped_list(value):
    value = bytes_feature(value).bytes_list.value[0]
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[bytes([b]) for b in value]))


def bytes_returns_list(value):
    return bytes_feature(value).bytes_list


@pytest.mark.parametrize(
    "func, message",
    [
        (bytes_no_numpy, r"does not unpack an EagerTensor.*numpy"),
        (bytes_no_encode, r"holds bytes only; encode a str"),
        (bytes_latin1, "UTF-8"),
        (bytes_unwrapped_list, "one-element list"),
        (bytes_returns_list, "not a tf.train.Feature"),
    ],
)
def test_bytes_feature_mistakes_are_named(func, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("02.bytes_feature", func)


def record_float_timestamp(record):
    example = record_to_example(record)
    del example.features.feature["taken_at_ms"]
    example.features.feature["taken_at"].float_list.value.append(record["taken_at"])
    return example


def record_truncated_ms(record):
    example = record_to_example(record)
    ms = example.features.feature["taken_at_ms"].int64_list
    ms.value[0] = int(record["taken_at"] * 1000)
    if ms.value[0] == round(record["taken_at"] * 1000):
        ms.value[0] -= 1  # make the truncation visible on every draw
    return example


def record_score_as_int(record):
    example = record_to_example(record)
    example.features.feature["score"].CopyFrom(
        tf.train.Feature(int64_list=tf.train.Int64List(value=[int(record["score"])]))
    )
    return example


def record_via_helper(record):
    return hf.example_from_dict(record)


@pytest.mark.parametrize(
    "func, message",
    [
        (record_float_timestamp, "'taken_at_ms' is missing and 'taken_at' is there"),
        (record_truncated_ms, "round"),
        (record_score_as_int, "feature 'score' is a int64_list; a float belongs in a FloatList"),
        (record_via_helper, "no tags: an empty list has no type"),
        (lambda r: record_to_example(r).SerializeToString(), "not a tf.train.Example"),
    ],
)
def test_record_mistakes_are_named(func, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("02.record_to_example", func)


def uint64_raw(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def uint64_clipped(values):
    return tf.train.Feature(
        int64_list=tf.train.Int64List(value=[min(v, 2**63 - 1) for v in values])
    )


def uint64_halved(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[v % 2**63 for v in values]))


def uint64_as_bytes(values):
    return tf.train.Feature(
        bytes_list=tf.train.BytesList(value=[np.asarray(values, np.uint64).tobytes()])
    )


@pytest.mark.parametrize(
    "func, message",
    [
        (uint64_raw, r"raised ValueError.*refuses values above 2\*\*63-1"),
        (uint64_clipped, "clipping"),
        (uint64_halved, "reads back as"),
        (uint64_as_bytes, "must be an int64_list"),
    ],
)
def test_uint64_mistakes_are_named(func, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("02.uint64_feature", func)


def tensor_tobytes(array):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[array.tobytes()]))


def tensor_flat_floats(array):
    return tf.train.Feature(float_list=tf.train.FloatList(value=array.reshape(-1).tolist()))


def tensor_no_numpy(array):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[tf.io.serialize_tensor(array)]))


def tensor_cast(array):
    return tensor_feature(array.astype(np.float32))


def tensor_flattened(array):
    return tensor_feature(array.reshape(-1))


@pytest.mark.parametrize(
    "func, message",
    [
        (tensor_tobytes, r"array.tobytes\(\)"),
        (tensor_flat_floats, "a flat list loses the shape"),
        (tensor_no_numpy, r"raised TypeError(?s:.*)numpy\(\)"),
        (tensor_cast, "the stored tensor is float32"),
        (tensor_flattened, "do not flatten"),
    ],
)
def test_tensor_mistakes_are_named(func, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("02.tensor_feature", func)


# -- issue 13: truncation vs rounding, the empty-tags message ----------------------


def _truncating(record):
    example = record_to_example(record)
    example.features.feature["taken_at_ms"].int64_list.value[0] = int(record["taken_at"] * 1000)
    return example


@pytest.mark.parametrize("seed", [0, 1, 2, 3, None])
def test_truncating_milliseconds_fails_on_every_draw(seed):
    with pytest.raises(
        CheckFailed, match=r"round\(\) to the nearest millisecond, int\(\) truncates"
    ):
        ex.check("02.record_to_example", _truncating, seed=seed)


def test_taken_at_values_tell_rounding_from_truncation():
    cases = ex.get("02.record_to_example").make_cases(np.random.default_rng(5), None)
    differ = [
        c
        for c in cases
        if int(c["record"]["taken_at"] * 1000) != round(c["record"]["taken_at"] * 1000)
    ]
    assert len(differ) >= 3


def test_the_empty_tags_note_only_when_empty_tags_are_the_cause():
    def breaks_on_scores(record):
        if record["score"] == record["score"]:  # always: a mistake unrelated to tags
            raise TypeError("score went wrong")
        return record_to_example(record)

    with pytest.raises(CheckFailed) as info:
        ex.check("02.record_to_example", breaks_on_scores, seed=0)
    assert "score went wrong" in str(info.value) and "no tags" not in str(info.value)

    def infers_from_first_tag(record):
        kind = type(record["tags"][0])  # IndexError on an empty list
        assert kind is str
        return record_to_example(record)

    with pytest.raises(CheckFailed, match=r"IndexError.*this record has no tags"):
        ex.check("02.record_to_example", infers_from_first_tag, seed=0)
