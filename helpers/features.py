"""Python / NumPy values -> ``tf.train.Feature``, Example builders, spec inference.

``tf.train.Example`` stores exactly three kinds of list:

=================  ===========================================================
``BytesList``      ``bytes``, ``str`` (UTF-8 encoded), scalar string tensors
``FloatList``      ``float`` / ``np.float32`` / ``np.float64`` (stored as float32!)
``Int64List``      ``bool``, ``enum.IntEnum``, ``int``, ``np.int8..int64``,
                   ``np.uint8..uint32``, ``np.uint64`` only up to 2**63 - 1
=================  ===========================================================

The helpers below convert a value (or a list / array of values) to the right
``Feature`` and refuse, with a message that names the feature, anything that
would be silently mangled (a uint64 beyond int64, a float64 that loses
precision when ``strict_float=True``, a non-scalar tensor passed as bytes).

This module deliberately imports TensorFlow lazily: protobuf classes come from
``tensorflow.core.example`` which is cheap, and tensors are recognised by duck
typing (``.numpy()``), so pure-Python tools can use it quickly.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from tensorflow.core.example import example_pb2, feature_pb2

from helpers.image_keys import IMAGE_KEYS

Example = example_pb2.Example
Feature = feature_pb2.Feature

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

__all__ = [
    "TYPE_MAPPING",
    "Example",
    "Feature",
    "FeatureTypeError",
    "IMAGE_KEYS",
    "image_example",
    "bytes_feature",
    "example_from_dict",
    "example_to_dict",
    "feature_kind",
    "float_feature",
    "infer_spec",
    "int64_feature",
    "serialize_example",
    "to_feature",
]


class FeatureTypeError(TypeError, ValueError):
    """A value that cannot be stored in the requested feature kind without loss."""


# The type-mapping table of the course (lesson 02): Python / NumPy type -> list kind.
TYPE_MAPPING: dict[str, str] = {
    "bool": "int64_list",
    "enum": "int64_list",
    "int32": "int64_list",
    "uint32": "int64_list",
    "int64": "int64_list",
    "uint64": "int64_list (values <= 2**63-1 only)",
    "float32": "float_list",
    "float64": "float_list (rounded to float32)",
    "str": "bytes_list (UTF-8)",
    "bytes": "bytes_list",
}


def _name(name: str | None) -> str:
    return f"feature {name!r}" if name else "value"


def _unwrap_tensor(value: Any) -> Any:
    """EagerTensor / tf.Variable -> NumPy (BytesList will not unpack a tensor)."""
    if hasattr(value, "numpy") and callable(value.numpy) and not isinstance(value, np.ndarray):
        return value.numpy()
    return value


def _as_list(value: Any) -> list[Any]:
    """A scalar becomes a one-element list; lists, tuples and arrays are flattened."""
    value = _unwrap_tensor(value)
    if isinstance(value, np.ndarray):
        return (
            list(value.reshape(-1))
            if value.ndim
            else [value.item() if value.dtype.kind != "S" else value.tobytes()]
        )
    if isinstance(value, (bytes, bytearray, str)):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, Mapping):
        return [_unwrap_tensor(v) for v in value]
    return [value]


def _to_bytes(value: Any, name: str | None) -> bytes:
    value = _unwrap_tensor(value)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, np.bytes_):
        return bytes(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (str, np.str_)):
        return str(value).encode("utf-8")
    raise FeatureTypeError(
        f"{_name(name)}: cannot store {type(value).__name__} in a BytesList; pass bytes or str "
        "(for an array use tf.io.serialize_tensor(x).numpy() or x.tobytes())"
    )


def _to_int(value: Any, name: str | None) -> int:
    value = _unwrap_tensor(value)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, (float, np.floating)):
        raise FeatureTypeError(
            f"{_name(name)}: {value!r} is a float; use float_feature, or round it yourself "
            "if an integer is really meant"
        )
    if not isinstance(value, (int, np.integer)):
        raise FeatureTypeError(
            f"{_name(name)}: cannot store {type(value).__name__} in an Int64List"
        )
    value = int(value)
    if not INT64_MIN <= value <= INT64_MAX:
        raise FeatureTypeError(
            f"{_name(name)}: {value} does not fit in int64 (Int64List holds -2**63..2**63-1); "
            "store a uint64 above 2**63-1 as bytes or split it into two int64 values"
        )
    return value


def _to_float(value: Any, name: str | None, strict: bool) -> float:
    value = _unwrap_tensor(value)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise FeatureTypeError(f"{_name(name)}: cannot store {type(value).__name__} in a FloatList")
    value = float(value)
    if strict and np.isfinite(value) and float(np.float32(value)) != value:
        raise FeatureTypeError(
            f"{_name(name)}: {value!r} changes to {float(np.float32(value))!r} in a FloatList "
            "(float32); store it as bytes (np.float64(x).tobytes()) to keep float64 precision"
        )
    return value


def bytes_feature(value: Any, name: str | None = None) -> Feature:
    """A ``Feature`` holding a ``BytesList``.

    Args:
      value: bytes, str (UTF-8 encoded), a scalar string tensor, or a list of them.
      name: feature name, used in error messages only.

    Returns:
      ``tf.train.Feature(bytes_list=...)``.
    """
    return Feature(
        bytes_list=feature_pb2.BytesList(value=[_to_bytes(v, name) for v in _as_list(value)])
    )


def int64_feature(value: Any, name: str | None = None) -> Feature:
    """A ``Feature`` holding an ``Int64List`` (bool, enum, int8..int64, uint8..uint64 <= 2**63-1).

    Args:
      value: an integer-like scalar, or a list / array of them.
      name: feature name, used in error messages only.

    Returns:
      ``tf.train.Feature(int64_list=...)``.

    Raises:
      FeatureTypeError: a float, or an integer outside int64 (e.g. uint64 2**64-1).
    """
    return Feature(
        int64_list=feature_pb2.Int64List(value=[_to_int(v, name) for v in _as_list(value)])
    )


def float_feature(value: Any, name: str | None = None, strict_float: bool = False) -> Feature:
    """A ``Feature`` holding a ``FloatList`` (values are stored as float32).

    Args:
      value: a float-like scalar, or a list / array of them.
      name: feature name, used in error messages only.
      strict_float: refuse values that float32 cannot represent exactly.

    Returns:
      ``tf.train.Feature(float_list=...)``.
    """
    return Feature(
        float_list=feature_pb2.FloatList(
            value=[_to_float(v, name, strict_float) for v in _as_list(value)]
        )
    )


def _kind_of(value: Any) -> str:
    """Pick the list kind for a Python / NumPy value (the type-mapping table)."""
    value = _unwrap_tensor(value)
    if isinstance(value, np.ndarray):
        kind = value.dtype.kind
        if kind in "biu":
            return "int64_list"
        if kind == "f":
            return "float_list"
        if kind in "SUO":
            return "bytes_list"
        raise FeatureTypeError(f"no Example list kind for dtype {value.dtype}")
    if isinstance(value, (bytes, bytearray, memoryview, str, np.bytes_, np.str_)):
        return "bytes_list"
    if isinstance(value, (bool, np.bool_, int, np.integer, enum.Enum)):
        return "int64_list"
    if isinstance(value, (float, np.floating)):
        return "float_list"
    if isinstance(value, Sequence):
        if not value:
            raise FeatureTypeError(
                "an empty list has no type: call bytes/int64/float_feature directly"
            )
        kinds = {_kind_of(v) for v in value}
        if kinds == {"int64_list", "float_list"}:
            return "float_list"
        if len(kinds) != 1:
            raise FeatureTypeError(f"a list mixing {sorted(kinds)} cannot be one feature")
        return kinds.pop()
    raise FeatureTypeError(f"no Example list kind for {type(value).__name__}")


def to_feature(value: Any, name: str | None = None) -> Feature:
    """Convert any value the type-mapping table covers to the right ``Feature``.

    Args:
      value: scalar, list, NumPy array or eager tensor.
      name: feature name, used in error messages only.

    Returns:
      A ``tf.train.Feature`` with the list kind chosen from the value's type.
    """
    if isinstance(value, Feature):
        return value
    try:
        kind = _kind_of(value)
    except FeatureTypeError as err:
        raise FeatureTypeError(f"{_name(name)}: {err}") from None
    if kind == "bytes_list":
        return bytes_feature(value, name)
    if kind == "int64_list":
        return int64_feature(value, name)
    return float_feature(value, name)


def example_from_dict(values: Mapping[str, Any]) -> Example:
    """Build a ``tf.train.Example`` from ``{name: value}`` using :func:`to_feature`.

    Args:
      values: feature name -> value (or a ready ``tf.train.Feature``).

    Returns:
      The Example.
    """
    example = Example()
    for key, value in values.items():
        example.features.feature[key].CopyFrom(to_feature(value, key))
    return example


def serialize_example(values: Mapping[str, Any] | Example) -> bytes:
    """Serialize deterministically (map fields sorted), so bytes match across processes.

    Args:
      values: an Example or a dict accepted by :func:`example_from_dict`.

    Returns:
      The wire-format bytes.
    """
    example = values if isinstance(values, Example) else example_from_dict(values)
    return example.SerializeToString(deterministic=True)


def feature_kind(feature: Feature) -> str | None:
    """``'bytes_list'``, ``'float_list'``, ``'int64_list'`` or ``None`` for an empty Feature."""
    return feature.WhichOneof("kind")


def example_to_dict(example: Example | bytes) -> dict[str, list[Any]]:
    """Decode an Example (or its bytes) to ``{name: list of Python values}``.

    Args:
      example: a parsed Example or serialized bytes.

    Returns:
      Plain lists: bytes for BytesList, float for FloatList, int for Int64List.
    """
    if isinstance(example, (bytes, bytearray)):
        parsed = Example()
        parsed.ParseFromString(bytes(example))
        example = parsed
    out: dict[str, list[Any]] = {}
    for key in sorted(example.features.feature):
        feature = example.features.feature[key]
        kind = feature_kind(feature)
        out[key] = list(getattr(feature, kind).value) if kind else []
    return out


_DTYPE_NAMES = {"bytes_list": "string", "float_list": "float32", "int64_list": "int64"}


def infer_spec(records: Iterable[bytes | Example], as_tf: bool = True) -> dict[str, Any]:
    """Infer a parsing spec for ``tf.io.parse_example`` from existing records.

    A feature with the same length in every record becomes ``FixedLenFeature``
    (shape ``[]`` for length 1, ``[n]`` otherwise); a feature whose length
    varies, or that is missing from some records, becomes ``VarLenFeature``.

    Args:
      records: serialized Examples (e.g. a ``TFRecordDataset`` as NumPy) or Examples.
      as_tf: return ``tf.io.*Feature`` objects; else plain dicts
        ``{"kind": "fixed"|"varlen", "dtype": "int64"|..., "shape": [...]}``.

    Returns:
      feature name -> spec.

    Raises:
      ValueError: no records, or a feature whose kind differs between records.
    """
    kinds: dict[str, str] = {}
    lengths: dict[str, set[int]] = {}
    present: dict[str, int] = {}
    count = 0
    for record in records:
        record = _unwrap_tensor(record)
        if isinstance(record, (bytes, bytearray)):
            example = Example()
            example.ParseFromString(bytes(record))
        else:
            example = record
        count += 1
        for key, feature in example.features.feature.items():
            present[key] = present.get(key, 0) + 1
            kind = feature_kind(feature)
            if kind is None:
                lengths.setdefault(key, set()).add(0)
                continue
            if kinds.setdefault(key, kind) != kind:
                raise ValueError(
                    f"feature {key!r} is {kinds[key]} in one record and {kind} in another"
                )
            lengths.setdefault(key, set()).add(len(getattr(feature, kind).value))
    if count == 0:
        raise ValueError("no records to infer a spec from")
    spec: dict[str, Any] = {}
    for key in sorted(lengths):
        dtype = _DTYPE_NAMES[kinds.get(key, "bytes_list")]
        seen = lengths[key]
        if present[key] == count and len(seen) == 1 and 0 not in seen:
            (n,) = seen
            spec[key] = {"kind": "fixed", "dtype": dtype, "shape": [] if n == 1 else [n]}
        else:
            spec[key] = {"kind": "varlen", "dtype": dtype, "shape": None}
    if not as_tf:
        return spec
    import tensorflow as tf

    tf_spec: dict[str, Any] = {}
    for key, info in spec.items():
        dtype = getattr(tf, info["dtype"])
        if info["kind"] == "fixed":
            tf_spec[key] = tf.io.FixedLenFeature(info["shape"], dtype)
        else:
            tf_spec[key] = tf.io.VarLenFeature(dtype)
    return tf_spec


# The image record schema shared by helpers.convert (writer) and helpers.pipeline
# (reader): IMAGE_KEYS, defined in helpers.image_keys and imported above.


def image_example(
    encoded: bytes,
    label: int,
    class_name: str,
    filename: str,
    height: int,
    width: int,
    image_format: str = "jpeg",
) -> Example:
    """The course's image record: encoded bytes plus label, class name, name and size.

    Args:
      encoded: the encoded image bytes (copied, never re-encoded here).
      label: integer label in ``[0, num_classes)``.
      class_name: the class folder name.
      filename: the file's path relative to the dataset root.
      height: image height in pixels.
      width: image width in pixels.
      image_format: ``"jpeg"`` or ``"png"``.

    Returns:
      The Example; serialize it with :func:`serialize_example` for stable bytes.
    """
    if int(label) < 0:
        raise FeatureTypeError(f"feature {IMAGE_KEYS['label']!r}: label {label} is negative")
    return example_from_dict(
        {
            IMAGE_KEYS["encoded"]: bytes_feature(encoded, IMAGE_KEYS["encoded"]),
            IMAGE_KEYS["format"]: bytes_feature(image_format, IMAGE_KEYS["format"]),
            IMAGE_KEYS["label"]: int64_feature(label, IMAGE_KEYS["label"]),
            IMAGE_KEYS["text"]: bytes_feature(class_name, IMAGE_KEYS["text"]),
            IMAGE_KEYS["filename"]: bytes_feature(filename, IMAGE_KEYS["filename"]),
            IMAGE_KEYS["height"]: int64_feature(height, IMAGE_KEYS["height"]),
            IMAGE_KEYS["width"]: int64_feature(width, IMAGE_KEYS["width"]),
        }
    )
