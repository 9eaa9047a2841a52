"""helpers.pipeline.schema: parsing, schema errors naming the feature, checked labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from helpers import pipeline as P
from helpers.features import (
    IMAGE_KEYS,
    bytes_feature,
    example_from_dict,
    float_feature,
    image_example,
    int64_feature,
    serialize_example,
)

from .support import _encode, _write_shard


def test_parse_single_roundtrip() -> None:
    encoded = _encode(np.zeros((5, 7, 3), np.uint8), "PNG")
    raw = serialize_example(image_example(encoded, 2, "cat", "cat/a.png", 5, 7, "png"))
    parsed = P.parse_single(raw)
    assert parsed[IMAGE_KEYS["encoded"]].numpy() == encoded
    assert int(parsed[IMAGE_KEYS["label"]]) == 2
    assert parsed[IMAGE_KEYS["text"]].numpy() == b"cat"
    assert parsed[IMAGE_KEYS["filename"]].numpy() == b"cat/a.png"
    assert (int(parsed[IMAGE_KEYS["height"]]), int(parsed[IMAGE_KEYS["width"]])) == (5, 7)
    assert parsed[IMAGE_KEYS["format"]].numpy() == b"png"


def test_parse_batch_roundtrip_and_optional_defaults() -> None:
    full = serialize_example(image_example(b"x", 1, "a", "a/1.jpg", 3, 4))
    minimal = serialize_example(
        {IMAGE_KEYS["encoded"]: b"y", IMAGE_KEYS["label"]: 0}
    )  # only the required features
    parsed = P.parse_batch([full, minimal])
    assert parsed[IMAGE_KEYS["label"]].numpy().tolist() == [1, 0]
    assert parsed[IMAGE_KEYS["encoded"]].numpy().tolist() == [b"x", b"y"]
    assert parsed[IMAGE_KEYS["height"]].numpy().tolist() == [3, -1]
    assert parsed[IMAGE_KEYS["filename"]].numpy().tolist() == [b"a/1.jpg", b""]


def test_custom_keys_parse_a_converter_scripts_schema() -> None:
    raw = serialize_example({"name": b"n.jpg", "category": 4, "data": b"img"})
    spec = P.image_feature_spec({"encoded": "data", "label": "category", "filename": "name"})
    parsed = P.parse_single(raw, spec)
    assert int(parsed["category"]) == 4 and parsed["data"].numpy() == b"img"
    with pytest.raises(ValueError, match="unknown logical"):
        P.image_feature_spec({"pixels": "x"})


def test_missing_feature_error_names_the_feature(tmp_path: Path) -> None:
    raw = serialize_example({IMAGE_KEYS["encoded"]: b"img"})  # no label
    with pytest.raises(P.SchemaError, match="image/class/label") as err:
        P.parse_single(raw)
    assert "missing" in str(err.value)
    with pytest.raises(P.SchemaError, match="image/class/label"):
        P.parse_batch([raw])
    _write_shard(tmp_path / "x.tfrecord", [raw])
    with pytest.raises(P.SchemaError, match="image/class/label") as err:
        P.check_schema(tmp_path / "x.tfrecord")
    assert err.value.feature == "image/class/label" and err.value.record == 0
    assert "x.tfrecord" in str(err.value)
    with pytest.raises(P.SchemaError, match="image/class/label"):
        P.make_dataset(tmp_path / "x.tfrecord", 1, 32, num_classes=2)


def test_wrong_dtype_error_names_the_feature(tmp_path: Path) -> None:
    raw = serialize_example(
        example_from_dict(
            {
                IMAGE_KEYS["encoded"]: bytes_feature(b"img"),
                IMAGE_KEYS["label"]: float_feature(1.0),
            }
        )
    )
    with pytest.raises(P.SchemaError, match="image/class/label") as err:
        P.parse_single(raw)
    assert "float" in str(err.value)
    _write_shard(tmp_path / "x.tfrecord", [raw])
    with pytest.raises(P.SchemaError, match="image/class/label.*float_list"):
        P.check_schema(tmp_path / "x.tfrecord")
    wrong_len = serialize_example(
        example_from_dict(
            {
                IMAGE_KEYS["encoded"]: bytes_feature(b"img"),
                IMAGE_KEYS["label"]: int64_feature([1, 2]),
            }
        )
    )
    _write_shard(tmp_path / "y.tfrecord", [wrong_len])
    with pytest.raises(P.SchemaError, match="image/class/label.*2 value"):
        P.check_schema(tmp_path / "y.tfrecord")


def test_check_schema_passes_on_converter_records(dataset_dir: dict) -> None:
    found = P.check_schema(dataset_dir["dir"] / "train-00000-of-00003.tfrecord", num_records=3)
    assert found[IMAGE_KEYS["label"]] == "int64_list"
    assert found[IMAGE_KEYS["encoded"]] == "bytes_list"


# --------------------------------------------------------------------------- labels


def test_tf_one_hot_silently_zeroes_and_checked_version_refuses() -> None:
    # The pitfall itself (a typical converter script's): no error, an all-zero target.
    assert tf.one_hot(10, depth=5).numpy().tolist() == [0.0] * 5
    assert tf.one_hot(-1, depth=5).numpy().tolist() == [0.0] * 5
    assert P.one_hot_checked(4, 5).numpy().tolist() == [0, 0, 0, 0, 1]
    for bad in (10, 5, -1):
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"label out of range.*\[0, 5\)"):
            P.one_hot_checked(bad, 5)
    with pytest.raises(tf.errors.InvalidArgumentError, match="num_classes"):
        P.check_label(tf.constant([0, 1, 3]), 3, record="a.jpg")
    with pytest.raises(TypeError):
        P.check_label(tf.constant(1.0), 3)


def _label_shard(tmp_path: Path, labels: list[int]) -> Path:
    payloads = []
    for i, label in enumerate(labels):
        feats = {
            IMAGE_KEYS["encoded"]: _encode(np.full((8, 8, 3), 50, np.uint8)),
            IMAGE_KEYS["label"]: label,
            IMAGE_KEYS["filename"]: f"img_{i}.jpg",
        }
        payloads.append(serialize_example(feats))
    path = tmp_path / "labels.tfrecord"
    _write_shard(path, payloads)
    return path


@pytest.mark.parametrize("bad", [3, -1])
@pytest.mark.parametrize("one_hot", [True, False])
def test_dataset_refuses_out_of_range_labels(tmp_path: Path, bad: int, one_hot: bool) -> None:
    path = _label_shard(tmp_path, [0, 1, 2, bad])
    ds = P.make_dataset(path, 4, 32, num_classes=3, training=False, one_hot=one_hot)
    with pytest.raises(tf.errors.InvalidArgumentError, match="label out of range") as err:
        list(ds)
    assert "img_3.jpg" in str(err.value)  # the record is named


def test_one_based_labels_refused(tmp_path: Path) -> None:
    path = _label_shard(tmp_path, [1, 2, 3])  # 1-based, 3 classes
    ds = P.make_dataset(path, 1, 32, num_classes=3, training=False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="1-based"):
        list(ds)


def test_unknown_num_classes_is_an_error(tmp_path: Path) -> None:
    path = _label_shard(tmp_path, [0, 1])
    with pytest.raises(ValueError, match="num_classes"):
        P.make_dataset(path, 1, 32)
    ds = P.make_dataset(path, 2, 32, one_hot=False, training=False)
    _, y = next(iter(ds))
    assert y.dtype == tf.int32 and sorted(y.numpy().tolist()) == [0, 1]
