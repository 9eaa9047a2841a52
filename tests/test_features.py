"""helpers.features: the type-mapping table, Example builders and spec inference."""

import enum

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import features as F


class Color(enum.IntEnum):
    RED = 1
    BLUE = 7


@pytest.mark.parametrize(
    ("value", "kind", "stored"),
    [
        (True, "int64_list", [1]),
        (Color.BLUE, "int64_list", [7]),
        (np.int32(-5), "int64_list", [-5]),
        (np.uint32(2**32 - 1), "int64_list", [2**32 - 1]),
        (np.int64(-(2**63)), "int64_list", [-(2**63)]),
        (np.uint64(2**63 - 1), "int64_list", [2**63 - 1]),
        (np.float32(0.5), "float_list", [0.5]),
        (np.float64(0.25), "float_list", [0.25]),
        ("café", "bytes_list", ["café".encode()]),
        (b"\x00\xff", "bytes_list", [b"\x00\xff"]),
        ([1, 2, 3], "int64_list", [1, 2, 3]),
        (np.arange(6, dtype=np.uint8).reshape(2, 3), "int64_list", [0, 1, 2, 3, 4, 5]),
        ([1, 2.5], "float_list", [1.0, 2.5]),
    ],
)
def test_type_mapping_table(value, kind, stored):
    feature = F.to_feature(value, "x")
    assert F.feature_kind(feature) == kind
    assert list(getattr(feature, kind).value) == stored


def test_every_table_row_is_covered_by_a_test_value():
    assert set(F.TYPE_MAPPING) == {
        "bool", "enum", "int32", "uint32", "int64", "uint64", "float32", "float64", "str", "bytes",
    }  # fmt: skip


def test_uint64_beyond_int64_is_refused_with_the_feature_name():
    with pytest.raises(F.FeatureTypeError, match=r"feature 'id'.*does not fit in int64"):
        F.to_feature(np.uint64(2**64 - 1), "id")


def test_float64_precision_loss_is_real_and_strict_mode_refuses_it():
    stored = F.float_feature(0.1).float_list.value[0]
    assert stored != 0.1 and stored == pytest.approx(0.1, rel=1e-7)
    with pytest.raises(F.FeatureTypeError, match="changes to"):
        F.float_feature(0.1, "price", strict_float=True)
    F.float_feature(0.5, "price", strict_float=True)  # exactly representable: fine


def test_eager_tensors_become_bytes():
    feature = F.bytes_feature(tf.constant(b"abc"))
    assert list(feature.bytes_list.value) == [b"abc"]
    feature = F.to_feature(tf.constant([1, 2]))
    assert list(feature.int64_list.value) == [1, 2]


def test_floats_are_not_silently_truncated_to_ints():
    with pytest.raises(F.FeatureTypeError, match=r"feature 'label'.*float"):
        F.int64_feature(2.7, "label")


@pytest.mark.parametrize("value", [[], object(), {"a": 1}, [1, "a"]])
def test_unmappable_values_name_the_feature(value):
    with pytest.raises(F.FeatureTypeError, match="feature 'bad'"):
        F.to_feature(value, "bad")


def test_serialize_example_is_deterministic_and_parses_in_tensorflow():
    values = {"b": b"x", "a": 3, "c": [0.5, 1.5], "z": "ü"}
    data = F.serialize_example(values)
    assert data == F.serialize_example(dict(reversed(list(values.items()))))
    parsed = tf.io.parse_single_example(data, F.infer_spec([data]))
    assert parsed["a"].numpy() == 3
    assert parsed["c"].numpy().tolist() == [0.5, 1.5]
    assert parsed["z"].numpy().decode() == "ü"


def test_infer_spec_fixed_varlen_and_missing():
    records = [
        F.serialize_example({"label": 1, "tags": [1, 2], "box": [0.0, 0.0, 1.0, 1.0], "opt": b"x"}),
        F.serialize_example({"label": 2, "tags": [3], "box": [0.1, 0.1, 0.9, 0.9]}),
    ]
    spec = F.infer_spec(records, as_tf=False)
    assert spec["label"] == {"kind": "fixed", "dtype": "int64", "shape": []}
    assert spec["box"] == {"kind": "fixed", "dtype": "float32", "shape": [4]}
    assert spec["tags"]["kind"] == "varlen"
    assert spec["opt"]["kind"] == "varlen"  # missing from one record
    parsed = tf.io.parse_example(tf.constant(records), F.infer_spec(records))
    assert parsed["box"].shape == (2, 4)
    assert tf.sparse.to_dense(parsed["tags"]).numpy().tolist() == [[1, 2], [3, 0]]


def test_infer_spec_refuses_empty_and_conflicting_records():
    with pytest.raises(ValueError, match="no records"):
        F.infer_spec([])
    with pytest.raises(ValueError, match="feature 'x'"):
        F.infer_spec([F.serialize_example({"x": 1}), F.serialize_example({"x": b"a"})])


def test_image_example_schema():
    ex = F.image_example(b"jpegbytes", 4, "cat", "cat/1.jpg", 10, 20)
    d = F.example_to_dict(ex)
    assert d[F.IMAGE_KEYS["label"]] == [4]
    assert d[F.IMAGE_KEYS["text"]] == [b"cat"]
    assert d[F.IMAGE_KEYS["height"]] == [10] and d[F.IMAGE_KEYS["width"]] == [20]
    with pytest.raises(F.FeatureTypeError, match="negative"):
        F.image_example(b"x", -1, "cat", "cat/1.jpg", 1, 1)


# --- property-based round trips (issue 8, case 21) ---------------------------------

int64s = st.integers(min_value=F.INT64_MIN, max_value=F.INT64_MAX)
floats32 = st.floats(width=32, allow_nan=True, allow_infinity=True)
byte_values = st.binary(max_size=4096)


def _round_trip(values):
    data = F.serialize_example(values)
    return F.example_to_dict(data)


@settings(max_examples=60, deadline=None)
@given(st.lists(int64s, max_size=20))
def test_int64_lists_round_trip(values):
    assert _round_trip({"v": F.int64_feature(values)})["v"] == values


@settings(max_examples=60, deadline=None)
@given(st.lists(floats32, max_size=20))
def test_float32_lists_round_trip_including_nan_and_inf(values):
    back = _round_trip({"v": F.float_feature(values)})["v"]
    np.testing.assert_array_equal(np.array(back, np.float32), np.array(values, np.float32))


@settings(max_examples=40, deadline=None)
@given(st.lists(byte_values, max_size=5), st.text(max_size=50))
def test_bytes_and_text_round_trip(blobs, text):
    back = _round_trip({"b": F.bytes_feature(blobs), "t": F.bytes_feature(text)})
    assert back["b"] == blobs and back["t"] == [text.encode()]


@settings(max_examples=5, deadline=None)
@given(st.integers(min_value=1 << 20, max_value=8 << 20), st.binary(min_size=1, max_size=64))
def test_large_bytes_round_trip(size, pattern):
    blob = (pattern * (size // len(pattern) + 1))[:size]
    assert _round_trip({"b": blob})["b"] == [blob]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=10), st.sampled_from(list(Color)))
def test_bools_and_enums_become_ints(bools, color):
    back = _round_trip({"b": bools, "e": color})
    assert back["b"] == [int(b) for b in bools] and back["e"] == [int(color)]


@settings(max_examples=30, deadline=None)
@given(st.lists(int64s, min_size=1, max_size=8))
def test_round_trip_through_tensorflow_parser(values):
    data = F.serialize_example({"v": values})
    parsed = tf.io.parse_single_example(data, {"v": tf.io.FixedLenFeature([len(values)], tf.int64)})
    assert parsed["v"].numpy().tolist() == values
