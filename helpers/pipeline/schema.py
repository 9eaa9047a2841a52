"""The image record's parsing spec, and errors that name the feature or label at fault.

A missing feature or a wrong dtype raises :class:`SchemaError` naming the
feature (``check_schema`` runs on the first record before a dataset is
built); a label outside ``[0, num_classes)`` raises at parse time instead of
becoming ``tf.one_hot``'s all-zero vector.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from helpers.features import IMAGE_KEYS, Example, feature_kind

logger = logging.getLogger(__name__)

_KIND_OF_DTYPE = {tf.string: "bytes_list", tf.int64: "int64_list", tf.float32: "float_list"}
_DTYPE_OF_KIND = {"bytes_list": "string", "int64_list": "int64", "float_list": "float32"}


class SchemaError(ValueError):
    """A record does not match the parsing spec; ``feature`` names the culprit."""

    def __init__(
        self, feature: str, problem: str, path: str | None = None, record: int | None = None
    ):
        self.feature, self.problem, self.path, self.record = feature, problem, path, record
        where = ""
        if path is not None:
            where = f" (in {path}" + (f", record {record}" if record is not None else "") + ")"
        super().__init__(f"feature {feature!r}: {problem}{where}")


def feature_keys(keys: Mapping[str, str] | None) -> dict[str, str]:
    merged = dict(IMAGE_KEYS)
    if keys:
        unknown = sorted(set(keys) - set(IMAGE_KEYS))
        if unknown:
            raise ValueError(
                f"unknown logical feature name(s) {unknown}; use some of {sorted(IMAGE_KEYS)}"
            )
        merged.update(keys)
    return merged


def image_feature_spec(keys: Mapping[str, str] | None = None) -> dict[str, tf.io.FixedLenFeature]:
    """The parsing spec of the course's image record (written by :mod:`helpers.convert`).

    ``image/encoded`` and ``image/class/label`` are required; format, class
    text, filename, height and width are optional (defaults ``b""`` and -1) so
    hand-made records with just an image and a label parse too. A feature that
    is present with the wrong type is still an error.

    Args:
      keys: override feature names by logical name, e.g. a typical converter script's schema
        ``{"encoded": "data", "label": "category", "filename": "name"}``.

    Returns:
      feature name -> ``tf.io.FixedLenFeature``, for ``tf.io.parse_*example``.
    """
    k = feature_keys(keys)
    return {
        k["encoded"]: tf.io.FixedLenFeature([], tf.string),
        k["label"]: tf.io.FixedLenFeature([], tf.int64),
        k["format"]: tf.io.FixedLenFeature([], tf.string, default_value=b""),
        k["text"]: tf.io.FixedLenFeature([], tf.string, default_value=b""),
        k["filename"]: tf.io.FixedLenFeature([], tf.string, default_value=b""),
        k["height"]: tf.io.FixedLenFeature([], tf.int64, default_value=-1),
        k["width"]: tf.io.FixedLenFeature([], tf.int64, default_value=-1),
    }


def _check_example(
    example: Example, spec: Mapping[str, Any], path: str | None, index: int | None
) -> None:
    features = example.features.feature
    for key, fspec in spec.items():
        expected = _KIND_OF_DTYPE.get(tf.as_dtype(fspec.dtype))
        present = key in features and feature_kind(features[key]) is not None
        if not present:
            required = isinstance(fspec, tf.io.FixedLenFeature) and fspec.default_value is None
            if required:
                have = ", ".join(sorted(features)) or "none"
                raise SchemaError(
                    key,
                    f"missing: the spec requires it ({tf.as_dtype(fspec.dtype).name}, shape "
                    f"{list(fspec.shape)}) and gives no default. Features in the record: {have}. "
                    "Was it written by a different converter? Pass keys={...} to map names.",
                    path,
                    index,
                )
            continue
        kind = feature_kind(features[key])
        if kind != expected:
            raise SchemaError(
                key,
                f"wrong type: the record stores a {kind} ({_DTYPE_OF_KIND[kind]}) but the spec "
                f"expects {expected} ({tf.as_dtype(fspec.dtype).name}). Fix the writer or the spec.",
                path,
                index,
            )
        if isinstance(fspec, tf.io.FixedLenFeature) and None not in list(fspec.shape):
            n = len(getattr(features[key], kind).value)
            want = int(np.prod(fspec.shape)) if len(fspec.shape) else 1
            if n != want:
                raise SchemaError(
                    key,
                    f"has {n} value(s) but the spec's shape {list(fspec.shape)} needs {want}; "
                    "use tf.io.VarLenFeature for lists whose length varies",
                    path,
                    index,
                )


def check_schema(
    path: str | os.PathLike,
    spec: Mapping[str, Any] | None = None,
    num_records: int = 1,
    compression: str | None = None,
) -> dict[str, str]:
    """Check the first records of a TFRecord file against a parsing spec, in Python.

    TensorFlow reports a schema mismatch only when the pipeline runs, deep in a
    graph trace; this check runs before and says which feature is wrong.

    Args:
      path: a TFRecord file.
      spec: parsing spec; default :func:`image_feature_spec`.
      num_records: how many leading records to check.
      compression: ``None``, ``"GZIP"`` or ``"ZLIB"``.

    Returns:
      feature name -> list kind (``"bytes_list"`` ...) found in the first record;
      ``{}`` for an empty file.

    Raises:
      SchemaError: a missing required feature, a wrong type or a wrong length,
        naming the feature, the file and the record index.
      ValueError: the file cannot be read as TFRecords at all.
    """
    spec = image_feature_spec() if spec is None else spec
    name = os.fspath(path)
    found: dict[str, str] = {}
    dataset = tf.data.TFRecordDataset(name, compression_type=compression or "").take(num_records)
    try:
        for index, raw in enumerate(dataset):
            example = Example()
            try:
                example.ParseFromString(raw.numpy())
            except Exception as err:  # protobuf DecodeError
                raise SchemaError(
                    "(whole record)", f"not a tf.train.Example ({err})", name, index
                ) from None
            _check_example(example, spec, name, index)
            if index == 0:
                found = {k: feature_kind(v) or "empty" for k, v in example.features.feature.items()}
    except tf.errors.OpError as err:
        raise ValueError(
            f"{name}: cannot read its first record(s): {err.message.splitlines()[-1]} "
            "(wrong compression, or a corrupted file: try `python -m helpers.records verify`)"
        ) from None
    return found


_MISSING_RE = re.compile(r"Feature: (.+?) \(data type: (\w+)\) is required but could not be found")
_DTYPE_RE = re.compile(
    r"Key: (.+?)\.\s+Data types don't match\. Data type: (\w+) but expected type: (\w+)"
)
_KEY_RE = re.compile(r"Key: (.+?)\.\s+(.+?)(?:\s+\[Op:|\n|$)")


def _schema_error_from(err: tf.errors.OpError) -> Exception:
    message = err.message
    if m := _MISSING_RE.search(message):
        return SchemaError(m[1], f"missing: the spec requires it ({m[2]}) and gives no default")
    if m := _DTYPE_RE.search(message):
        return SchemaError(
            m[1], f"wrong type: the record stores {m[2]} but the spec expects {m[3]}"
        )
    if m := _KEY_RE.search(message):
        return SchemaError(m[1], m[2].strip())
    return ValueError(f"cannot parse the record(s): {message.strip().splitlines()[-1]}")


def parse_single(
    serialized: tf.Tensor | bytes, spec: Mapping[str, Any] | None = None
) -> dict[str, tf.Tensor]:
    """``tf.io.parse_single_example`` with errors that name the feature (when eager).

    Args:
      serialized: one serialized ``tf.train.Example`` (scalar string).
      spec: parsing spec; default :func:`image_feature_spec`.

    Returns:
      feature name -> tensor.

    Raises:
      SchemaError: eagerly, a missing feature or wrong dtype, naming the feature.
        Inside ``Dataset.map`` errors surface when iterating; ``make_dataset``
        runs :func:`check_schema` first for that reason.
    """
    return _parse(tf.io.parse_single_example, serialized, spec)


def parse_batch(
    serialized_batch: tf.Tensor | Sequence[bytes], spec: Mapping[str, Any] | None = None
) -> dict[str, tf.Tensor]:
    """Vectorised ``tf.io.parse_example`` on a batch of records (map after ``batch``).

    Args:
      serialized_batch: a 1-D string tensor (or list) of serialized Examples.
      spec: parsing spec; default :func:`image_feature_spec`.

    Returns:
      feature name -> tensor with a leading batch dimension.

    Raises:
      SchemaError: eagerly, a missing feature or wrong dtype, naming the feature.
    """
    return _parse(tf.io.parse_example, serialized_batch, spec)


def _parse(
    parse: Callable[[Any, Mapping[str, Any]], dict[str, tf.Tensor]],
    data: Any,
    spec: Mapping[str, Any] | None,
) -> dict[str, tf.Tensor]:
    """``parse(data, spec)``; eagerly, TF's parse error becomes a :class:`SchemaError`."""
    spec = image_feature_spec() if spec is None else spec
    if not tf.executing_eagerly():
        return parse(data, spec)
    try:
        return parse(data, spec)
    except tf.errors.InvalidArgumentError as err:
        raise _schema_error_from(err) from None


def check_num_classes(num_classes: int) -> int:
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)):
        raise TypeError(f"num_classes must be an int, got {type(num_classes).__name__}")
    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1, got {num_classes}")
    return int(num_classes)


def check_label(
    label: tf.Tensor | int, num_classes: int, record: tf.Tensor | str | None = None
) -> tf.Tensor:
    """Return ``label`` unchanged if every value is in ``[0, num_classes)``, else fail.

    Works eagerly and inside ``Dataset.map`` (the check is an op that fails the
    iteration with ``InvalidArgumentError``).

    Args:
      label: integer label(s), any shape.
      num_classes: the number of classes N (the one-hot depth).
      record: optional record name (e.g. the image filename) put in the message.

    Returns:
      ``label`` (same tensor value), after the check.

    Raises:
      tf.errors.InvalidArgumentError: a label < 0 or >= N; the message names the
        label value, the depth and the record.
      TypeError: a float label.
    """
    num_classes = check_num_classes(num_classes)
    label = tf.convert_to_tensor(label)
    if not label.dtype.is_integer:
        raise TypeError(
            f"labels must be integers in [0, {num_classes}), got dtype {label.dtype.name}"
        )
    in_range = tf.reduce_all(tf.logical_and(label >= 0, label < tf.cast(num_classes, label.dtype)))
    message = (
        f"label out of range: labels must be integers in [0, {num_classes}) for "
        f"num_classes (one-hot depth) = {num_classes}. tf.one_hot would silently give an "
        "all-zero target (categorical cross-entropy 0: the sample vanishes). Fix the label "
        "map (1-based labels, e.g. ImageNet's background=0 scripts, need label - 1) or pass "
        "the right num_classes. label ="
    )
    data: list[Any] = [message, label]
    if record is not None:
        data += ["record =", record]
    check = tf.debugging.Assert(in_range, data, summarize=10)
    with tf.control_dependencies([check]):
        return tf.identity(label)


def one_hot_checked(
    label: tf.Tensor | int, num_classes: int, record: tf.Tensor | str | None = None
) -> tf.Tensor:
    """``tf.one_hot(label, num_classes)`` that refuses out-of-range labels.

    ``tf.one_hot(10, depth=5)`` and ``tf.one_hot(-1, depth=5)`` both return
    ``[0, 0, 0, 0, 0]`` without a warning (a typical converter script's pitfall); this raises.

    Args:
      label: integer label(s).
      num_classes: the one-hot depth N.
      record: optional record name for the error message.

    Returns:
      float32 one-hot tensor with a trailing dimension N.

    Raises:
      tf.errors.InvalidArgumentError: a label outside ``[0, N)``.
    """
    return tf.one_hot(check_label(label, num_classes, record), num_classes, dtype=tf.float32)


def label_fn(num_classes: int | None, one_hot: bool) -> Callable[[tf.Tensor, tf.Tensor], tf.Tensor]:
    def label_out(label: tf.Tensor, record: tf.Tensor) -> tf.Tensor:
        if num_classes is None:
            check = tf.debugging.Assert(
                label >= 0,
                [
                    "label out of range: labels must be integers >= 0. label =",
                    label,
                    "record =",
                    record,
                ],
            )
            with tf.control_dependencies([check]):
                return tf.cast(label, tf.int32)
        if one_hot:
            return one_hot_checked(label, num_classes, record)
        return tf.cast(check_label(label, num_classes, record), tf.int32)

    return label_out
