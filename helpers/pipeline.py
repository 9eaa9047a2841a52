"""tf.data input pipelines for the course's image records (lessons 04-06).

The reading side of :mod:`helpers.convert`: parse the image record schema of
:data:`helpers.features.IMAGE_KEYS`, decode / resize / normalise for MobileNet,
and build the pipeline seed 003 describes, with every knob an argument::

    list_files -> interleave(TFRecordDataset, cycle_length, AUTOTUNE, deterministic)
               -> map(parse + decode + resize + normalise + checked label, AUTOTUNE)
               -> cache -> shuffle -> [repeat] -> [augment] -> batch(drop_remainder) -> prefetch

(without ``cache`` the shuffle moves before the map: it then holds serialized
records, ~100 KB each, instead of decoded float32 images, 602 KB each at 224 px)

Also here, for lesson 05's comparisons on the same images: a one-file-per-image
tf.data pipeline (:func:`per_file_dataset`), a Python-generator baseline with PIL
decoding (:func:`generator_dataset`, seed 001's slow baseline), a stage-by-stage
builder (:func:`make_stages`), a **simulated** slow storage
(:class:`SimulatedSlowStorage`) and a throughput meter
(:func:`measure_throughput`).

Failure modes this module refuses to hide (issue 8):

* a missing feature or a wrong dtype raises :class:`SchemaError` naming the
  feature (``check_schema`` runs on the first record before a dataset is built);
* a label outside ``[0, num_classes)`` (10 with 5 classes, -1, 1-based labels)
  raises at parse time instead of becoming ``tf.one_hot``'s all-zero vector;
* a GZIP shard read as uncompressed, a missing shard, a shard whose size differs
  from the manifest, and a stray shard not in the manifest are reported when
  the dataset is built;
* ``skip_corrupt=True`` uses ``ignore_errors``, which silently drops the rest of
  a file after one bad record -- so the pipeline counts what each shard
  delivered and a :class:`CorruptionReport` says exactly how many records were
  lost against the manifest.
"""

from __future__ import annotations

import io
import json
import logging
import math
import os
import re
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tensorflow as tf

from helpers.features import IMAGE_KEYS, Example, feature_kind
from helpers.records import masked_crc

__all__ = [
    "AUTOTUNE",
    "IMAGE_EXTENSIONS",
    "CorruptionReport",
    "ImageFolder",
    "SchemaError",
    "ShardSet",
    "SimulatedSlowStorage",
    "augment",
    "check_label",
    "check_schema",
    "decode_image",
    "denormalize_mobilenet",
    "estimate_pipeline_memory",
    "generator_dataset",
    "image_feature_spec",
    "list_image_folder",
    "make_dataset",
    "make_stages",
    "measure_throughput",
    "normalize_mobilenet",
    "one_hot_checked",
    "parse_batch",
    "parse_single",
    "per_file_dataset",
    "pipeline_stages",
    "preprocess_image",
    "read_manifest",
    "resize",
    "resolve_shards",
    "slow_open",
]

AUTOTUNE = tf.data.AUTOTUNE
logger = logging.getLogger(__name__)

ImageSize = int | tuple[int, int] | Sequence[int]

# ---------------------------------------------------------------------------
# Schema: the parsing spec and errors that name the feature
# ---------------------------------------------------------------------------

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


def _feature_keys(keys: Mapping[str, str] | None) -> dict[str, str]:
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
      keys: override feature names by logical name, e.g. seed 000's schema
        ``{"encoded": "data", "label": "category", "filename": "name"}``.

    Returns:
      feature name -> ``tf.io.FixedLenFeature``, for ``tf.io.parse_*example``.
    """
    k = _feature_keys(keys)
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
    spec = image_feature_spec() if spec is None else spec
    if not tf.executing_eagerly():
        return tf.io.parse_single_example(serialized, spec)
    try:
        return tf.io.parse_single_example(serialized, spec)
    except tf.errors.InvalidArgumentError as err:
        raise _schema_error_from(err) from None


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
    spec = image_feature_spec() if spec is None else spec
    if not tf.executing_eagerly():
        return tf.io.parse_example(serialized_batch, spec)
    try:
        return tf.io.parse_example(serialized_batch, spec)
    except tf.errors.InvalidArgumentError as err:
        raise _schema_error_from(err) from None


# ---------------------------------------------------------------------------
# Labels: refuse what tf.one_hot would silently zero
# ---------------------------------------------------------------------------


def _check_num_classes(num_classes: int) -> int:
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
    num_classes = _check_num_classes(num_classes)
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
    ``[0, 0, 0, 0, 0]`` without a warning (seed 000's pitfall); this raises.

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


# ---------------------------------------------------------------------------
# Images: decode, resize, normalise, augment
# ---------------------------------------------------------------------------


def _size_pair(image_size: ImageSize) -> tuple[int, int]:
    if isinstance(image_size, (int, np.integer)):
        h = w = int(image_size)
    else:
        h, w = (int(v) for v in image_size)
    if h < 1 or w < 1:
        raise ValueError(f"image_size must be positive, got {image_size!r}")
    return h, w


def decode_image(encoded: tf.Tensor | bytes, channels: int = 3) -> tf.Tensor:
    """Decode JPEG / PNG / GIF / BMP / WebP bytes to one ``(H, W, channels)`` uint8 image.

    ``tf.io.decode_image(..., expand_animations=False)`` picks the decoder from
    the content (not the file name), returns the first frame of an animation
    (``decode_jpeg`` would return 4-D for WebP), converts 16-bit PNG to uint8
    and grey / RGBA to ``channels``. The static shape is set so later ops know
    the rank.

    Args:
      encoded: scalar string tensor with the encoded image.
      channels: 3 for RGB (MobileNet), 1 for grey.

    Returns:
      uint8 tensor ``(H, W, channels)``.
    """
    image = tf.io.decode_image(encoded, channels=channels, expand_animations=False, dtype=tf.uint8)
    image.set_shape([None, None, channels])
    return image


def resize(
    image: tf.Tensor, image_size: ImageSize = 224, method: str = "bilinear", antialias: bool = False
) -> tf.Tensor:
    """Resize to ``image_size`` (stretching; aspect ratio not kept), as float32.

    Args:
      image: ``(H, W, C)`` or ``(B, H, W, C)`` tensor, any numeric dtype.
      image_size: an int (square) or ``(height, width)``.
      method: a ``tf.image.ResizeMethod`` name (``"bilinear"``, ``"area"``...).
      antialias: filter when downsampling (closer to PIL, a bit slower).

    Returns:
      float32 tensor with values in the input's range (0..255 for uint8 input).
    """
    h, w = _size_pair(image_size)
    out = tf.image.resize(image, [h, w], method=method, antialias=antialias)
    return tf.cast(out, tf.float32)


def normalize_mobilenet(image: tf.Tensor) -> tf.Tensor:
    """Scale 0..255 pixels to MobileNet's ``[-1, 1]`` (``x / 127.5 - 1``), clipped.

    Args:
      image: a uint8 or float tensor with values in 0..255.

    Returns:
      float32 tensor in ``[-1, 1]``.
    """
    image = tf.cast(image, tf.float32) / 127.5 - 1.0
    return tf.clip_by_value(image, -1.0, 1.0)


def denormalize_mobilenet(image: tf.Tensor | np.ndarray) -> np.ndarray:
    """Undo :func:`normalize_mobilenet` for display: ``[-1, 1]`` -> uint8 NumPy.

    Args:
      image: float image(s) in ``[-1, 1]``.

    Returns:
      uint8 NumPy array, same shape.
    """
    array = np.asarray(image, dtype=np.float32)
    return np.clip(np.rint((array + 1.0) * 127.5), 0, 255).astype(np.uint8)


def preprocess_image(
    encoded: tf.Tensor | bytes, image_size: ImageSize = 224, method: str = "bilinear"
) -> tf.Tensor:
    """decode -> resize -> normalise to ``[-1, 1]``: the MobileNet input recipe (seed 000).

    Args:
      encoded: encoded image bytes.
      image_size: output size (int or ``(h, w)``).
      method: resize method.

    Returns:
      float32 ``(h, w, 3)`` in ``[-1, 1]``.
    """
    h, w = _size_pair(image_size)
    image = normalize_mobilenet(resize(decode_image(encoded), (h, w), method=method))
    image.set_shape([h, w, 3])
    return image


def augment(
    image: tf.Tensor,
    seed: tf.Tensor | Sequence[int],
    *,
    flip: bool = True,
    crop_fraction: float = 0.875,
    brightness: float = 0.2,
    value_range: tuple[float, float] = (-1.0, 1.0),
) -> tf.Tensor:
    """Random flip, random crop (resized back) and random brightness, reproducibly.

    Uses stateless random ops: the same ``seed`` gives the same augmentation,
    so a pipeline with a seed is reproducible (``make_dataset`` feeds a fresh
    seed per element from ``tf.data.Dataset.random(seed)``).

    Args:
      image: float ``(H, W, C)`` image (static H, W).
      seed: shape ``[2]`` int32/int64 seed.
      flip: random left-right flip.
      crop_fraction: side of the random crop as a fraction of the image side,
        then resized back to ``(H, W)``; 1.0 disables cropping.
      brightness: max brightness delta in the image's units (0.2 on ``[-1, 1]``
        is +-10% of the range); 0 disables it.
      value_range: the image's value range, used to clip after brightness.

    Returns:
      The augmented image, same shape and dtype (float32).
    """
    if not 0.0 < crop_fraction <= 1.0:
        raise ValueError(f"crop_fraction must be in (0, 1], got {crop_fraction}")
    image = tf.convert_to_tensor(image, tf.float32)
    seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), num=3)
    static_shape = image.shape
    if flip:
        image = tf.image.stateless_random_flip_left_right(image, seeds[0])
    if crop_fraction < 1.0:
        shape = tf.shape(image)
        h, w, c = shape[0], shape[1], shape[2]
        crop_h = tf.maximum(1, tf.cast(tf.round(tf.cast(h, tf.float32) * crop_fraction), tf.int32))
        crop_w = tf.maximum(1, tf.cast(tf.round(tf.cast(w, tf.float32) * crop_fraction), tf.int32))
        image = tf.image.stateless_random_crop(image, tf.stack([crop_h, crop_w, c]), seeds[1])
        image = tf.image.resize(image, tf.stack([h, w]))
    if brightness > 0:
        image = tf.image.stateless_random_brightness(image, brightness, seeds[2])
        image = tf.clip_by_value(image, value_range[0], value_range[1])
    image.set_shape(static_shape)
    return image


# ---------------------------------------------------------------------------
# Simulated slow storage (lesson 05)
# ---------------------------------------------------------------------------


def _sleep_transformation(micros: tf.Tensor) -> Callable[[tf.data.Dataset], tf.data.Dataset]:
    """A dataset transformation that sleeps ``micros`` before each element.

    Uses TF's own ``SleepDataset`` op (a C++ sleep on the thread that pulls the
    element), so parallel ``interleave`` workers overlap their delays. A
    ``tf.py_function`` that calls ``time.sleep`` does not: measured on TF 2.21,
    such sleeps never overlapped more than the number of CPU cores, whatever
    ``num_parallel_calls`` said. The py_function version is only a fallback.
    """
    try:
        from tensorflow.python.data.experimental.ops import testing as tf_data_testing

        return tf_data_testing.sleep(micros)
    except (ImportError, AttributeError):  # pragma: no cover - future TF without the op
        logger.warning("SleepDataset unavailable: simulated delays will not overlap in parallel")

        def apply(dataset: tf.data.Dataset) -> tf.data.Dataset:
            def sleep_then(*element: Any) -> Any:
                def _sleep(us: Any) -> np.int64:
                    time.sleep(float(us) / 1e6)
                    return np.int64(0)

                done = tf.py_function(_sleep, [micros], tf.int64)
                with tf.control_dependencies([done]):
                    out = tuple(tf.identity(e) for e in element)
                return out if len(out) > 1 else out[0]

            return dataset.map(sleep_then)

        return apply


@dataclass(frozen=True)
class SimulatedSlowStorage:
    """A SIMULATION of slow storage (network file system, HDD): it sleeps, it does no I/O.

    Every file read costs ``delay_per_open_s`` (the latency of opening a file,
    paid once per image for one-file-per-image reading, once per shard for
    TFRecords) plus ``delay_per_mb_s`` for each MB (10**6 bytes) of the file,
    charged when the file is opened, as if it were fetched whole. Each reader
    is delayed independently: aggregate bandwidth is not capped, so parallel
    readers (``interleave`` workers, parallel reads) overlap their delays,
    which is what makes ``cycle_length`` matter on such storage.

    Note ``cycle_length=AUTOTUNE`` resolves to the number of CPU cores: a sleep
    (like real I/O latency) is not CPU work, so on slow storage set
    ``cycle_length`` / ``interleave_parallel_calls`` explicitly (8-16).

    Attributes:
      delay_per_open_s: seconds per file open.
      delay_per_mb_s: seconds per MB read.
    """

    delay_per_open_s: float = 0.0
    delay_per_mb_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("delay_per_open_s", "delay_per_mb_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0 seconds, got {value!r}")

    def __str__(self) -> str:
        return (
            f"SIMULATED slow storage: {self.delay_per_open_s * 1e3:g} ms per file open + "
            f"{self.delay_per_mb_s * 1e3:g} ms per MB (sleeps, not real I/O)"
        )

    def delay_s(self, nbytes: int) -> float:
        """Simulated seconds to open and read a file of ``nbytes`` bytes."""
        return self.delay_per_open_s + self.delay_per_mb_s * nbytes / 1e6

    def _delay_us(self, nbytes: tf.Tensor) -> tf.Tensor:
        per_byte_us = self.delay_per_mb_s  # seconds per 1e6 bytes == microseconds per byte
        micros = self.delay_per_open_s * 1e6 + tf.cast(nbytes, tf.float64) * per_byte_us
        return tf.cast(tf.round(micros), tf.int64)

    def _delayed(self, value: Any, nbytes: tf.Tensor) -> tf.data.Dataset:
        # take(1): SleepDataset also sleeps on the call that finds the end of its input.
        return (
            tf.data.Dataset.from_tensors(value)
            .apply(_sleep_transformation(self._delay_us(nbytes)))
            .take(1)
        )

    def tfrecord_dataset(
        self,
        filename: tf.Tensor,
        nbytes: tf.Tensor,
        compression: str | None = None,
        buffer_size: int | None = None,
    ) -> tf.data.Dataset:
        """A ``TFRecordDataset`` for one shard whose open costs the simulated delay.

        Call it inside ``interleave`` so parallel cycle elements overlap delays.

        Args:
          filename: scalar string tensor.
          nbytes: scalar int64 tensor, the file size.
          compression: ``None``, ``"GZIP"`` or ``"ZLIB"``.
          buffer_size: ``TFRecordDataset`` read buffer in bytes (``None``: TF's default).

        Returns:
          The shard's records, after one simulated open + transfer delay.
        """
        compression_type = compression or ""

        def open_shard(name: tf.Tensor) -> tf.data.Dataset:
            return tf.data.TFRecordDataset(
                name, compression_type=compression_type, buffer_size=buffer_size
            )

        return self._delayed(filename, nbytes).flat_map(open_shard)

    def read_file_dataset(self, path: tf.Tensor, nbytes: tf.Tensor) -> tf.data.Dataset:
        """A one-element dataset with ``tf.io.read_file(path)``, after the simulated delay.

        Args:
          path: scalar string tensor.
          nbytes: scalar int64 tensor, the file size.

        Returns:
          A dataset of one scalar string (the file contents).
        """
        return self._delayed(path, nbytes).map(tf.io.read_file)

    def read_bytes(self, path: str | os.PathLike) -> bytes:
        """Python read with the simulated delay (``time.sleep``), for generators.

        Args:
          path: a file.

        Returns:
          The file's bytes.
        """
        with open(path, "rb") as f:
            data = f.read()
        time.sleep(self.delay_s(len(data)))
        return data


def slow_open(delay_per_open_s: float = 0.01, delay_per_mb_s: float = 0.01) -> SimulatedSlowStorage:
    """A :class:`SimulatedSlowStorage` (default: 10 ms per open, 10 ms per MB ~ 100 MB/s).

    Pass it as ``storage=`` to :func:`make_dataset`, :func:`per_file_dataset` or
    :func:`generator_dataset`. It is a simulation (sleeps): label charts with
    ``str(storage)``.

    Args:
      delay_per_open_s: seconds per file open.
      delay_per_mb_s: seconds per MB (10**6 bytes) read.

    Returns:
      The storage simulation.
    """
    return SimulatedSlowStorage(float(delay_per_open_s), float(delay_per_mb_s))


# ---------------------------------------------------------------------------
# Shards, manifest and pre-flight checks
# ---------------------------------------------------------------------------


@dataclass
class ShardSet:
    """The TFRecord files a pipeline reads, with what the manifest says about them.

    Attributes:
      files: shard paths, in manifest (or sorted) order.
      records: per file, the manifest's record count (``None`` if unknown).
      sizes: per file, the manifest's byte count (``None`` if unknown).
      classes: class names from the manifest (index = label), or ``None``.
      compression: ``None``, ``"GZIP"`` or ``"ZLIB"``.
      manifest_path: the manifest read, or ``None``.
    """

    files: list[str]
    records: list[int | None]
    sizes: list[int | None]
    classes: list[str] | None = None
    compression: str | None = None
    manifest_path: str | None = None

    @property
    def num_records(self) -> int | None:
        """Total records per the manifest, or ``None`` if any count is unknown."""
        if any(r is None for r in self.records):
            return None
        return int(sum(r for r in self.records if r is not None))

    @property
    def num_classes(self) -> int | None:
        """Number of classes per the manifest, or ``None``."""
        return None if self.classes is None else len(self.classes)


def read_manifest(path: str | os.PathLike) -> dict[str, Any]:
    """Load ``manifest.json`` (a path to it, or to the converter's output directory).

    Args:
      path: the manifest file or its directory.

    Returns:
      The parsed JSON object.

    Raises:
      FileNotFoundError / ValueError: missing file, invalid JSON, or no ``shards`` list.
    """
    name = os.fspath(path)
    if tf.io.gfile.isdir(name):
        name = os.path.join(name, "manifest.json")
    if not tf.io.gfile.exists(name):
        raise FileNotFoundError(f"{name}: no manifest.json (was the conversion finished?)")
    with tf.io.gfile.GFile(name, "r") as f:
        try:
            manifest = json.load(f)
        except json.JSONDecodeError as err:
            raise ValueError(f"{name}: not valid JSON ({err}); rerun the converter") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("shards"), list):
        raise ValueError(f"{name}: expected an object with a 'shards' list")
    return manifest


def _classes_from(manifest: Mapping[str, Any]) -> list[str] | None:
    classes = manifest.get("classes")
    if classes is None:
        return None
    if isinstance(classes, Mapping):  # name -> label
        return [name for name, _ in sorted(classes.items(), key=lambda kv: int(kv[1]))]
    return [str(c) for c in classes]


def _is_shard_name(name: str) -> bool:
    return (
        ".tfrecord" in name and not name.startswith(".") and not name.endswith((".tmp", ".partial"))
    )


def resolve_shards(
    source: str | os.PathLike | Sequence[str | os.PathLike], compression: str | None = None
) -> ShardSet:
    """Turn a converter output directory, a manifest, a glob pattern or a file list into files.

    * a directory with ``manifest.json``: the shards it lists, in its order
      (a missing one is an error; a ``*.tfrecord*`` file it does not list is
      reported and ignored);
    * a directory without a manifest: its ``*.tfrecord*`` files, sorted (listed,
      not globbed, so ``[`` in names is literal);
    * a path to ``manifest.json``: as its directory;
    * an existing file: that file; otherwise a glob pattern (``tf.io.gfile.glob``);
    * a list of paths: those files.

    Args:
      source: see above.
      compression: overrides the manifest's ``compression`` entry.

    Returns:
      A :class:`ShardSet`.

    Raises:
      FileNotFoundError: nothing matches, or a listed shard is missing.
    """
    if isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)
        if name.endswith("manifest.json") and tf.io.gfile.exists(name):
            name = os.path.dirname(name) or "."
        if tf.io.gfile.isdir(name):
            return _resolve_dir(name, compression)
        if tf.io.gfile.exists(name):
            return ShardSet([name], [None], [None], compression=compression)
        matches = sorted(tf.io.gfile.glob(name)) if any(c in name for c in "*?[") else []
        if not matches:
            raise FileNotFoundError(
                f"{name}: no such file or directory, and no file matches it as a glob pattern"
            )
        return ShardSet(
            matches, [None] * len(matches), [None] * len(matches), compression=compression
        )
    files = [os.fspath(p) for p in source]
    if not files:
        raise ValueError("an empty list of files: nothing to read")
    for f in files:
        if not tf.io.gfile.exists(f):
            raise FileNotFoundError(f"{f}: no such file")
    return ShardSet(files, [None] * len(files), [None] * len(files), compression=compression)


def _resolve_dir(directory: str, compression: str | None) -> ShardSet:
    listed = sorted(n for n in tf.io.gfile.listdir(directory) if _is_shard_name(n.rstrip("/")))
    manifest_file = os.path.join(directory, "manifest.json")
    if not tf.io.gfile.exists(manifest_file):
        if not listed:
            raise FileNotFoundError(f"{directory}: no manifest.json and no *.tfrecord* files")
        files = [os.path.join(directory, n) for n in listed]
        return ShardSet(files, [None] * len(files), [None] * len(files), compression=compression)
    manifest = read_manifest(manifest_file)
    files, records, sizes = [], [], []
    for entry in manifest["shards"]:
        name = entry["file"]
        path = os.path.join(directory, name)
        if not tf.io.gfile.exists(path):
            raise FileNotFoundError(
                f"{path}: listed in {manifest_file} but missing (an interrupted copy or "
                "conversion?); `python -m helpers.records verify` checks the whole set"
            )
        files.append(path)
        records.append(entry.get("records"))
        sizes.append(entry.get("bytes"))
    in_manifest = {os.path.basename(f) for f in files}
    stray = [n for n in listed if n not in in_manifest]
    if stray:
        logger.warning(
            "%s: %d shard file(s) not in manifest.json, ignored (stray or from another run): %s",
            directory,
            len(stray),
            ", ".join(stray[:5]) + (" ..." if len(stray) > 5 else ""),
        )
    if not files:
        raise FileNotFoundError(f"{manifest_file}: lists no shards (an empty dataset?)")
    return ShardSet(
        files,
        records,
        sizes,
        classes=_classes_from(manifest),
        compression=compression if compression is not None else manifest.get("compression"),
        manifest_path=manifest_file,
    )


_GZIP_MAGIC = b"\x1f\x8b"


def _file_size(path: str) -> int:
    return int(tf.io.gfile.stat(path).length)


def _preflight(shards: ShardSet, strict: bool) -> list[int]:
    """Cheap checks before reading: size vs manifest, TFRecord vs GZIP framing.

    Returns the file sizes. In strict mode problems raise; otherwise they are logged.
    """
    sizes = []
    compression = (shards.compression or "").upper()
    for path, expected in zip(shards.files, shards.sizes, strict=True):
        size = _file_size(path)
        sizes.append(size)
        problem = None
        if expected is not None and size != expected:
            problem = (
                f"{path}: {size} bytes but the manifest says {expected}: truncated or "
                "replaced; run `python -m helpers.records verify`"
                + (
                    " (or skip_corrupt=True to read what survives, with a report of what is lost)"
                    if strict
                    else "; skip_corrupt=True: records lost will be counted in the report"
                )
            )
        elif size:
            with tf.io.gfile.GFile(path, "rb") as f:
                head = f.read(12)
            if compression == "":
                framed = (
                    len(head) == 12 and masked_crc(head[:8]) == struct.unpack("<I", head[8:])[0]
                )
                if not framed and head[:2] == _GZIP_MAGIC:
                    problem = f"{path}: looks GZIP-compressed; pass compression='GZIP'"
                elif not framed:
                    problem = (
                        f"{path}: not a TFRecord file (the first record's length CRC does not "
                        "match); wrong file or corrupted from byte 0"
                    )
            elif compression == "GZIP" and head[:2] != _GZIP_MAGIC:
                problem = f"{path}: compression='GZIP' but the file is not GZIP data"
        if problem:
            if strict:
                raise ValueError(problem)
            logger.warning(problem)
    return sizes


# ---------------------------------------------------------------------------
# Corruption report (skip_corrupt=True)
# ---------------------------------------------------------------------------


@dataclass
class CorruptionReport:
    """What ``make_dataset(skip_corrupt=True)`` delivered per shard vs the manifest.

    TF's ``ignore_errors`` drops the rest of a file after its first bad record,
    silently; the pipeline counts the images each shard actually delivered and
    records the count here when the shard is finished. ``lost`` is exact for
    shards whose record count the manifest gives; without a manifest the
    expected count is unknown (run ``python -m helpers.records verify``).

    Attributes:
      expected: shard path -> manifest record count (``None`` if unknown).
      delivered: shard path -> images delivered on its last complete pass.
      passes: shard path -> number of complete passes seen.
    """

    expected: dict[str, int | None] = field(default_factory=dict)
    delivered: dict[str, int] = field(default_factory=dict)
    passes: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def _record(self, shard: tf.Tensor, count: tf.Tensor) -> np.int64:
        name = shard.numpy().decode("utf-8", "replace")
        n = int(count.numpy())
        with self._lock:
            self.delivered[name] = n
            self.passes[name] = self.passes.get(name, 0) + 1
            expected = self.expected.get(name)
        if expected is not None and n < expected:
            logger.warning(
                "%s: delivered %d of %d records; %d lost (a corrupt or truncated record ends "
                "the file for ignore_errors)",
                name,
                n,
                expected,
                expected - n,
            )
        elif expected is None:
            logger.info("%s: delivered %d records (no manifest count to compare)", name, n)
        return np.int64(n)

    @property
    def complete(self) -> bool:
        """True once every shard has been read to its end at least once."""
        return bool(self.expected) and all(f in self.delivered for f in self.expected)

    def lost_by_shard(self) -> dict[str, int | None]:
        """Shard -> records lost (``None``: count unknown or shard not finished yet)."""
        out: dict[str, int | None] = {}
        for f, expected in self.expected.items():
            got = self.delivered.get(f)
            out[f] = None if expected is None or got is None else max(expected - got, 0)
        return out

    @property
    def lost(self) -> int:
        """Records lost in finished shards with a known manifest count."""
        return int(sum(v for v in self.lost_by_shard().values() if v))

    @property
    def delivered_total(self) -> int:
        """Images delivered by finished shards on their last pass."""
        return int(sum(self.delivered.values()))

    def summary(self) -> str:
        """One line per damaged or unverifiable shard, plus a total."""
        lines = []
        for f, lost in self.lost_by_shard().items():
            if f not in self.delivered:
                lines.append(f"{f}: not finished")
            elif lost is None:
                lines.append(f"{f}: {self.delivered[f]} delivered, expected count unknown")
            elif lost:
                lines.append(
                    f"{f}: {self.delivered[f]} of {self.expected[f]} delivered, {lost} lost"
                )
        lines.append(
            f"total: {self.delivered_total} delivered, {self.lost} lost "
            f"({len(self.delivered)}/{len(self.expected)} shards finished)"
        )
        return "\n".join(lines)


# ---------------------------------------------------------------------------
# The TFRecord pipeline
# ---------------------------------------------------------------------------


def _label_fn(
    num_classes: int | None, one_hot: bool
) -> Callable[[tf.Tensor, tf.Tensor], tf.Tensor]:
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


def _resolve_num_classes(num_classes: int | None, known: int | None, one_hot: bool) -> int | None:
    if num_classes is not None:
        num_classes = _check_num_classes(num_classes)
        if known is not None and known != num_classes:
            logger.warning(
                "num_classes=%d but the manifest lists %d classes; using %d",
                num_classes,
                known,
                num_classes,
            )
        return num_classes
    if known is not None:
        return known
    if one_hot:
        raise ValueError(
            "num_classes is unknown: pass num_classes=N (or a converter output directory "
            "with manifest.json), or one_hot=False for integer labels"
        )
    return None


def make_dataset(
    source: str | os.PathLike | Sequence[str | os.PathLike],
    batch_size: int = 32,
    image_size: ImageSize = 224,
    *,
    num_classes: int | None = None,
    training: bool = True,
    cycle_length: int | None = None,
    block_length: int = 1,
    interleave_parallel_calls: int | None = AUTOTUNE,
    read_buffer_bytes: int | None = None,
    deterministic: bool = False,
    num_parallel_calls: int | None = AUTOTUNE,
    cache: bool | str = False,
    shuffle_buffer: int = 1000,
    augment: bool = False,
    drop_remainder: bool = True,
    prefetch: int | None = AUTOTUNE,
    repeat: bool | int = False,
    one_hot: bool = True,
    skip_corrupt: bool = False,
    corruption_report: CorruptionReport | None = None,
    seed: int | None = None,
    compression: str | None = None,
    storage: SimulatedSlowStorage | None = None,
    keys: Mapping[str, str] | None = None,
    resize_method: str = "bilinear",
    check: bool = True,
) -> tf.data.Dataset:
    """Images and labels from TFRecord shards: the full tf.data pipeline, knobs as arguments.

    Stages, in order (seed 003): file list (shuffled when ``training``) ->
    ``interleave(TFRecordDataset, cycle_length, interleave_parallel_calls,
    deterministic)`` -> ``map(parse, decode, resize, normalise to [-1, 1],
    checked label, num_parallel_calls)`` -> ``cache`` -> ``shuffle`` ->
    ``repeat`` -> ``augment`` -> ``batch(drop_remainder)`` -> ``prefetch``.
    Without ``cache`` (and without ``skip_corrupt``, whose per-shard record
    counting needs the shards' own order), the shuffle comes right after
    ``interleave``, before the map: the buffer then holds serialized records (the encoded image,
    ~100 KB for an ImageNet photo) instead of decoded float32 images
    (602 KB each at 224 px), the same randomness for ~6x less memory and no
    ``shuffle_buffer`` images to decode before the first batch. With
    ``cache`` it stays after the cache, so each epoch is reshuffled.

    The file list is resolved in Python (see :func:`resolve_shards`) and made
    a dataset with ``from_tensor_slices(...).shuffle(len(files), seed)``: what
    ``tf.data.Dataset.list_files(pattern, shuffle=training, seed=seed)`` does,
    but with every file checked first and names with ``[`` kept literal.

    Args:
      source: converter output directory (reads ``manifest.json``: shards,
        record counts, classes), manifest path, glob pattern, file or file list.
      batch_size: images per batch.
      image_size: output side (int) or ``(height, width)``.
      num_classes: one-hot depth; default from the manifest's classes.
      training: shuffle files and records (and allow augmentation).
      cycle_length: shards read concurrently; ``None`` -> ``AUTOTUNE`` (= the
        number of CPU cores; raise it on slow storage). 1 = one file at a time.
      interleave_parallel_calls: threads reading shards; ``None`` = sequential.
        (With ``cycle_length=1`` and parallel calls TF still opens the next
        file early: pass ``None`` for strictly one file at a time.)
      block_length: consecutive records taken from a shard before moving on.
      read_buffer_bytes: ``TFRecordDataset`` read buffer per open shard
        (``None``: TF's default, 256 KiB locally; 1-100 MB helps on remote storage).
      deterministic: keep a reproducible element order (with ``seed``); False
        lets a fast shard overtake a slow one (faster).
      num_parallel_calls: parallel decode calls; ``None`` = sequential map.
      cache: False, True (memory: decoded float32 images, s*s*3*4 bytes each)
        or a file path prefix (iterate a full epoch once to complete it).
      shuffle_buffer: records in the shuffle buffer (0 = no record shuffle);
        serialized records without ``cache``, decoded images with it.
      augment: random flip / crop / brightness (training only; after cache).
      drop_remainder: drop the last short batch (static batch shape).
      prefetch: batches to prefetch (``AUTOTUNE``); ``None``/0 = no prefetch.
      repeat: True = forever, an int = that many epochs, False = once.
      one_hot: one-hot float32 labels (categorical_crossentropy); else int32.
      skip_corrupt: skip unreadable / undecodable records instead of failing.
        ``ignore_errors`` ends a shard at its first bad record, so each shard's
        delivered count goes to ``corruption_report`` (and a warning is logged
        for every shard short of its manifest count).
      corruption_report: a :class:`CorruptionReport` to fill (with
        ``skip_corrupt``); one is made (logging only) when omitted.
      seed: seed for file order, shuffle and augmentation.
      compression: ``None`` / ``"GZIP"`` / ``"ZLIB"``; default from the manifest.
      storage: a :class:`SimulatedSlowStorage` to delay each shard open (a
        simulation for lesson 05).
      keys: feature-name overrides for :func:`image_feature_spec`.
      resize_method: ``tf.image.resize`` method.
      check: run :func:`check_schema` on the first record before building.

    Returns:
      A ``tf.data.Dataset`` of ``(images, labels)``: float32
      ``(batch, h, w, 3)`` in ``[-1, 1]`` and float32 ``(batch, N)`` one-hot
      (or int32 ``(batch,)``).

    Raises:
      FileNotFoundError / ValueError / SchemaError: at build time for missing
        shards, size or compression mismatches, schema mismatches, unknown N.
      tf.errors.InvalidArgumentError: while iterating, a label outside [0, N).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    h, w = _size_pair(image_size)
    shards = resolve_shards(source, compression)
    compression = shards.compression
    num_classes = _resolve_num_classes(num_classes, shards.num_classes, one_hot)
    sizes = _preflight(shards, strict=not skip_corrupt)
    spec = image_feature_spec(keys)
    k = _feature_keys(keys)
    if check:
        first = next((f for f, s in zip(shards.files, sizes, strict=True) if s), None)
        if first is not None:
            try:
                check_schema(first, spec, compression=compression)
            except ValueError:
                if not skip_corrupt:
                    raise
                logger.warning("schema check of %s failed; skip_corrupt=True continues", first)
    compression_type = compression or ""

    files = tf.data.Dataset.from_tensor_slices(
        (tf.constant(shards.files), tf.constant(sizes, tf.int64))
    )
    if training:
        files = files.shuffle(len(shards.files), seed=seed, reshuffle_each_iteration=True)

    def open_shard(filename: tf.Tensor, nbytes: tf.Tensor) -> tf.data.Dataset:
        if storage is not None:
            return storage.tfrecord_dataset(filename, nbytes, compression, read_buffer_bytes)
        return tf.data.TFRecordDataset(
            filename, compression_type=compression_type, buffer_size=read_buffer_bytes
        )

    def decode_record(serialized: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        parsed = tf.io.parse_single_example(serialized, spec)
        image = preprocess_image(parsed[k["encoded"]], (h, w), resize_method)
        return image, parsed[k["label"]], parsed[k["filename"]]

    label_out = _label_fn(num_classes, one_hot)

    def finish(
        image: tf.Tensor, label: tf.Tensor, record: tf.Tensor
    ) -> tuple[tf.Tensor, tf.Tensor]:
        return image, label_out(label, record)

    il_det = deterministic if interleave_parallel_calls is not None else None
    map_det = deterministic if num_parallel_calls is not None else None
    cycle = AUTOTUNE if cycle_length is None else cycle_length
    # No cache: shuffle the serialized records, before decoding (see the docstring).
    shuffle_records = bool(training and shuffle_buffer and shuffle_buffer > 0) and not (
        cache or skip_corrupt
    )

    if not skip_corrupt:
        records = files.interleave(
            open_shard,
            cycle_length=cycle,
            block_length=block_length,
            num_parallel_calls=interleave_parallel_calls,
            deterministic=il_det,
        )

        def to_pair(serialized: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            return finish(*decode_record(serialized))

        if shuffle_records:
            records = records.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
        dataset = records.map(to_pair, num_parallel_calls=num_parallel_calls, deterministic=map_det)
    else:
        report = corruption_report if corruption_report is not None else CorruptionReport()
        for f, n in zip(shards.files, shards.records, strict=True):
            report.expected[f] = n
        blank = tf.zeros([h, w, 3], tf.float32)

        def open_counted(filename: tf.Tensor, nbytes: tf.Tensor) -> tf.data.Dataset:
            images = (
                open_shard(filename, nbytes)
                .ignore_errors(log_warning=False)
                .map(decode_record, num_parallel_calls=num_parallel_calls, deterministic=map_det)
                .ignore_errors(log_warning=False)
            )

            def flag(image: tf.Tensor, label: tf.Tensor, record: tf.Tensor) -> tuple:
                return image, label, record, filename, tf.constant(False)

            end = tf.data.Dataset.from_tensors(
                (blank, tf.constant(-1, tf.int64), tf.constant(b""), filename, tf.constant(True))
            )

            def count(n: tf.Tensor, element: tuple) -> tuple:
                is_end = element[4]
                n = tf.where(is_end, n, n + 1)
                return n, (*element, n)

            return images.map(flag).concatenate(end).scan(tf.constant(0, tf.int64), count)

        def report_end(
            image: tf.Tensor,
            label: tf.Tensor,
            record: tf.Tensor,
            shard: tf.Tensor,
            is_end: tf.Tensor,
            n: tf.Tensor,
        ) -> tuple:
            def call() -> tf.Tensor:
                out = tf.py_function(report._record, [shard, n], tf.int64)
                out.set_shape([])
                return out

            n = tf.cond(is_end, call, lambda: n)
            return image, label, record, is_end, n

        def not_end(*element: tf.Tensor) -> tf.Tensor:
            return tf.logical_not(element[3])

        def drop_flags(*element: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            return finish(element[0], element[1], element[2])

        dataset = (
            files.interleave(
                open_counted,
                cycle_length=cycle,
                block_length=block_length,
                num_parallel_calls=interleave_parallel_calls,
                deterministic=il_det,
            )
            .map(report_end)
            .filter(not_end)
            .map(drop_flags)
        )
    return _finish_pipeline(
        dataset,
        batch_size=batch_size,
        training=training,
        cache=cache,
        shuffle_buffer=0 if shuffle_records else shuffle_buffer,
        augment=augment,
        drop_remainder=drop_remainder,
        prefetch=prefetch,
        repeat=repeat,
        seed=seed,
        num_parallel_calls=num_parallel_calls,
        deterministic=map_det,
    )


def _finish_pipeline(
    dataset: tf.data.Dataset,
    *,
    batch_size: int,
    training: bool,
    cache: bool | str,
    shuffle_buffer: int,
    augment: bool,
    drop_remainder: bool,
    prefetch: int | None,
    repeat: bool | int,
    seed: int | None,
    num_parallel_calls: int | None,
    deterministic: bool | None,
) -> tf.data.Dataset:
    """cache -> shuffle -> repeat -> augment -> batch -> prefetch (shared by all builders)."""
    if cache is True:
        dataset = dataset.cache()
    elif isinstance(cache, (str, os.PathLike)) and os.fspath(cache):
        dataset = dataset.cache(os.fspath(cache))
    if training and shuffle_buffer and shuffle_buffer > 0:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    if repeat is True:
        dataset = dataset.repeat()
    elif repeat and int(repeat) > 1:
        dataset = dataset.repeat(int(repeat))
    if augment and training:
        # new augmentations every epoch, the same sequence for the same seed
        seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(
            2, drop_remainder=True
        )

        def augment_pair(pair: tuple[tf.Tensor, tf.Tensor], s: tf.Tensor) -> tuple:
            return _augment_fn(pair[0], s), pair[1]

        dataset = tf.data.Dataset.zip((dataset, seeds)).map(
            augment_pair, num_parallel_calls=num_parallel_calls, deterministic=deterministic
        )
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    if prefetch:
        dataset = dataset.prefetch(prefetch)
    return dataset


_augment_fn = augment  # make_dataset's ``augment`` argument shadows the function


# ---------------------------------------------------------------------------
# Stage-by-stage builder (lesson 05)
# ---------------------------------------------------------------------------


def pipeline_stages(
    cycle_length: int | None = None, shuffle_buffer: int = 1000
) -> OrderedDict[str, dict[str, Any]]:
    """The ``make_dataset`` arguments of each cumulative stage of lesson 05.

    Every stage batches (so images/s compare like with like); each adds one
    thing to the previous one.

    Args:
      cycle_length: the interleave cycle length from stage 2 on (``None`` = AUTOTUNE).
      shuffle_buffer: the shuffle buffer of the shuffle stage.

    Returns:
      stage name -> keyword arguments for :func:`make_dataset`.
    """
    stage: dict[str, Any] = {
        "cycle_length": 1,
        "interleave_parallel_calls": None,
        "num_parallel_calls": None,
        "cache": False,
        "training": False,
        "shuffle_buffer": 0,
        "prefetch": None,
    }
    stages: OrderedDict[str, dict[str, Any]] = OrderedDict()
    stages["1 read + map, one file at a time"] = dict(stage)
    stage.update(cycle_length=cycle_length, interleave_parallel_calls=AUTOTUNE)
    stages["2 + interleave"] = dict(stage)
    stage.update(num_parallel_calls=AUTOTUNE)
    stages["3 + parallel map"] = dict(stage)
    stage.update(cache=True)
    stages["4 + cache"] = dict(stage)
    stage.update(training=True, shuffle_buffer=shuffle_buffer)
    stages["5 + shuffle"] = dict(stage)
    stage.update(prefetch=AUTOTUNE)
    stages["6 + prefetch"] = dict(stage)
    return stages


def make_stages(
    source: str | os.PathLike | Sequence[str | os.PathLike],
    batch_size: int = 32,
    image_size: ImageSize = 224,
    *,
    cycle_length: int | None = None,
    shuffle_buffer: int = 1000,
    **kwargs: Any,
) -> OrderedDict[str, tf.data.Dataset]:
    """One dataset per cumulative stage (see :func:`pipeline_stages`), to measure in turn.

    The cache stage only pays off from the second pass: measure it with
    ``measure_throughput(ds, warmup_epochs=1)``.

    Args:
      source: as for :func:`make_dataset`.
      batch_size: images per batch.
      image_size: output size.
      cycle_length: interleave cycle length of stages 2+.
      shuffle_buffer: shuffle buffer of stages 5+.
      **kwargs: more :func:`make_dataset` arguments for every stage
        (``num_classes``, ``storage``, ``seed``, ``deterministic``...).

    Returns:
      stage name -> dataset, in pipeline order.
    """
    out: OrderedDict[str, tf.data.Dataset] = OrderedDict()
    for name, options in pipeline_stages(cycle_length, shuffle_buffer).items():
        out[name] = make_dataset(source, batch_size, image_size, **{**kwargs, **options})
    return out


# ---------------------------------------------------------------------------
# Baselines on the same images: one file per image, Python generator
# ---------------------------------------------------------------------------

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp")


@dataclass
class ImageFolder:
    """An ImageNet-layout folder listed: ``paths[i]`` has label ``labels[i]``.

    Attributes:
      paths: image file paths, class by class, sorted within a class.
      labels: integer labels in ``[0, len(classes))``.
      classes: sorted class folder names (index = label, like the converter).
    """

    paths: list[str]
    labels: list[int]
    classes: list[str]


def list_image_folder(
    root: str | os.PathLike, extensions: Sequence[str] = IMAGE_EXTENSIONS
) -> ImageFolder:
    """List ``root/<class>/<image>`` by listing (not globbing); hidden entries are skipped.

    Args:
      root: dataset root with one folder per class.
      extensions: accepted file name endings (case-insensitive).

    Returns:
      An :class:`ImageFolder`; labels come from the sorted class names.

    Raises:
      FileNotFoundError: ``root`` is not a directory or holds no images.
    """
    root = os.fspath(root)
    if not os.path.isdir(root):
        raise FileNotFoundError(f"{root}: not a directory")
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir() and not e.name.startswith("."))
    paths: list[str] = []
    labels: list[int] = []
    lowered = tuple(x.lower() for x in extensions)
    for label, name in enumerate(classes):
        folder = os.path.join(root, name)
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if (
                entry.is_file()
                and not entry.name.startswith(".")
                and entry.name.lower().endswith(lowered)
            ):
                paths.append(entry.path)
                labels.append(label)
    if not paths:
        raise FileNotFoundError(
            f"{root}: no images in class folders (extensions {list(extensions)})"
        )
    return ImageFolder(paths, labels, classes)


def _check_labels_py(paths: Sequence[str], labels: Sequence[int], num_classes: int | None) -> None:
    if len(paths) != len(labels):
        raise ValueError(f"{len(paths)} image paths but {len(labels)} labels")
    if not paths:
        raise ValueError("no images given")
    for path, label in zip(paths, labels, strict=True):
        bad = label < 0 or (num_classes is not None and label >= num_classes)
        if bad:
            raise ValueError(
                f"{path}: label {label} is outside [0, {num_classes}); labels must be integers "
                "in [0, num_classes) (tf.one_hot would silently give all zeros)"
            )


def per_file_dataset(
    image_paths: Sequence[str | os.PathLike],
    labels: Sequence[int],
    batch_size: int = 32,
    image_size: ImageSize = 224,
    *,
    num_classes: int | None = None,
    training: bool = False,
    num_parallel_calls: int | None = AUTOTUNE,
    parallel_reads: int | None = None,
    deterministic: bool = False,
    cache: bool | str = False,
    shuffle_buffer: int = 1000,
    augment: bool = False,
    drop_remainder: bool = True,
    prefetch: int | None = AUTOTUNE,
    repeat: bool | int = False,
    one_hot: bool = True,
    seed: int | None = None,
    storage: SimulatedSlowStorage | None = None,
    resize_method: str = "bilinear",
) -> tf.data.Dataset:
    """One file per image with tf.data: ``read_file`` + decode in a parallel map.

    Same preprocessing and output as :func:`make_dataset`, for comparisons on
    the same images. With a ``storage`` simulation each image's read is
    delayed, in ``parallel_reads`` concurrent readers (an ``interleave`` of
    one-element datasets, so the delays overlap).

    Args:
      image_paths: image files.
      labels: integer labels in ``[0, num_classes)``, one per path.
      batch_size: images per batch.
      image_size: output side or ``(h, w)``.
      num_classes: one-hot depth (required with ``one_hot``).
      training: shuffle the file list (and allow augmentation).
      num_parallel_calls: parallel read + decode calls; ``None`` = sequential.
      parallel_reads: concurrent reads under ``storage`` (``None`` -> AUTOTUNE,
        i.e. the number of CPU cores; 1 = one read at a time).
      deterministic: keep the order reproducible.
      cache: as in :func:`make_dataset`.
      shuffle_buffer: file-list shuffle buffer when training.
      augment: random flip / crop / brightness when training.
      drop_remainder: drop the last short batch.
      prefetch: batches to prefetch; ``None``/0 = none.
      repeat: True = forever, an int = that many epochs.
      one_hot: one-hot float32 labels, else int32.
      seed: shuffle / augmentation seed.
      storage: a :class:`SimulatedSlowStorage` (simulation).
      resize_method: ``tf.image.resize`` method.

    Returns:
      A dataset of ``(images, labels)`` batches.
    """
    paths = [os.fspath(p) for p in image_paths]
    labels = [int(v) for v in labels]
    if one_hot and num_classes is None:
        raise ValueError(
            "one_hot=True needs num_classes (e.g. len(list_image_folder(root).classes))"
        )
    num_classes = None if num_classes is None else _check_num_classes(num_classes)
    _check_labels_py(paths, labels, num_classes)
    h, w = _size_pair(image_size)
    label_out = _label_fn(num_classes, one_hot)
    det = deterministic if num_parallel_calls is not None else None
    sizes = [os.path.getsize(p) for p in paths] if storage is not None else [0] * len(paths)
    dataset = tf.data.Dataset.from_tensor_slices(
        (tf.constant(paths), tf.constant(labels, tf.int64), tf.constant(sizes, tf.int64))
    )
    if training and shuffle_buffer:
        dataset = dataset.shuffle(min(shuffle_buffer, len(paths)) or 1, seed=seed)

    def decode(contents: tf.Tensor, label: tf.Tensor, path: tf.Tensor) -> tuple:
        return preprocess_image(contents, (h, w), resize_method), label_out(label, path)

    if storage is None:

        def load(path: tf.Tensor, label: tf.Tensor, nbytes: tf.Tensor) -> tuple:
            return decode(tf.io.read_file(path), label, path)

        dataset = dataset.map(load, num_parallel_calls=num_parallel_calls, deterministic=det)
    else:
        reads = AUTOTUNE if parallel_reads is None else parallel_reads

        def slow_read(path: tf.Tensor, label: tf.Tensor, nbytes: tf.Tensor) -> tf.data.Dataset:
            def attach(contents: tf.Tensor) -> tuple:
                return contents, label, path

            return storage.read_file_dataset(path, nbytes).map(attach)

        # reads == 1: a plain sequential interleave (a parallel one would prefetch the next file)
        read_calls = None if reads == 1 else reads
        dataset = dataset.interleave(
            slow_read,
            cycle_length=reads,
            num_parallel_calls=read_calls,
            deterministic=deterministic if read_calls is not None else None,
        ).map(decode, num_parallel_calls=num_parallel_calls, deterministic=det)
    return _finish_pipeline(
        dataset,
        batch_size=batch_size,
        training=training,
        cache=cache,
        shuffle_buffer=0,  # the file list was shuffled above
        augment=augment,
        drop_remainder=drop_remainder,
        prefetch=prefetch,
        repeat=repeat,
        seed=seed,
        num_parallel_calls=num_parallel_calls,
        deterministic=det,
    )


def generator_dataset(
    image_paths: Sequence[str | os.PathLike],
    labels: Sequence[int],
    batch_size: int = 32,
    image_size: ImageSize = 224,
    *,
    num_classes: int | None = None,
    one_hot: bool = True,
    shuffle: bool = False,
    seed: int | None = None,
    drop_remainder: bool = True,
    prefetch: int | None = None,
    storage: SimulatedSlowStorage | None = None,
) -> tf.data.Dataset:
    """The slow baseline: a Python generator that opens, decodes (PIL) and resizes each image.

    One image at a time, in the Python interpreter, holding the GIL: the way
    seed 001's directory-reading generator worked (9,360 images took ~90 min
    there against ~5 s from TFRecords). PIL's decoder and bilinear resize are
    not TF's, so pixels differ slightly from :func:`make_dataset`'s.

    Args:
      image_paths: image files.
      labels: integer labels in ``[0, num_classes)``.
      batch_size: images per batch.
      image_size: output side or ``(h, w)``.
      num_classes: one-hot depth (required with ``one_hot``).
      one_hot: one-hot float32 labels, else int32.
      shuffle: shuffle the order in Python each pass.
      seed: shuffle seed.
      drop_remainder: drop the last short batch.
      prefetch: batches to prefetch (default none: the bare baseline).
      storage: a :class:`SimulatedSlowStorage` (simulation, slept in Python).

    Returns:
      A dataset of ``(images, labels)`` batches, like :func:`make_dataset`.
    """
    from PIL import Image

    paths = [os.fspath(p) for p in image_paths]
    labels = [int(v) for v in labels]
    if one_hot and num_classes is None:
        raise ValueError("one_hot=True needs num_classes")
    num_classes = None if num_classes is None else _check_num_classes(num_classes)
    _check_labels_py(paths, labels, num_classes)
    h, w = _size_pair(image_size)
    rng = np.random.default_rng(seed)

    def generate() -> Iterable[tuple[np.ndarray, np.ndarray | np.int32]]:
        order = rng.permutation(len(paths)) if shuffle else range(len(paths))
        for i in order:
            path, label = paths[i], labels[i]
            if storage is not None:
                data = storage.read_bytes(path)
            else:
                with open(path, "rb") as f:
                    data = f.read()
            with Image.open(io.BytesIO(data)) as img:
                img = img.convert("RGB")
                if img.size != (w, h):
                    img = img.resize((w, h), Image.Resampling.BILINEAR)
                array = np.asarray(img, dtype=np.float32) / 127.5 - 1.0
            if one_hot:
                target = np.zeros(num_classes, np.float32)
                target[label] = 1.0
                yield array, target
            else:
                yield array, np.int32(label)

    label_spec = (
        tf.TensorSpec([num_classes], tf.float32) if one_hot else tf.TensorSpec([], tf.int32)
    )
    dataset = tf.data.Dataset.from_generator(
        generate, output_signature=(tf.TensorSpec([h, w, 3], tf.float32), label_spec)
    )
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    if prefetch:
        dataset = dataset.prefetch(prefetch)
    return dataset


# ---------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------


def _images_in(element: Any, images_per_element: int | None) -> int:
    if images_per_element is not None:
        return images_per_element
    first = tf.nest.flatten(element)[0]
    shape = getattr(first, "shape", ())
    return int(shape[0]) if len(shape) >= 4 else 1


def measure_throughput(
    dataset: tf.data.Dataset | Iterable[Any],
    steps: int | None = None,
    warmup: int = 1,
    *,
    warmup_epochs: int = 0,
    images_per_element: int | None = None,
) -> dict[str, float]:
    """Time how fast a dataset delivers images (no model: the input pipeline alone).

    Args:
      dataset: any iterable of batches (``(images, labels)`` or images).
      steps: batches to time after warm-up; ``None`` = to the end.
      warmup: batches pulled before the clock starts (pipeline start-up,
        tracing, the first fill of prefetch buffers).
      warmup_epochs: full passes before timing (fills a ``cache``; finite
        datasets only).
      images_per_element: images per element; default: the leading dimension
        of the first tensor when it is 4-D (a batch), else 1.

    Returns:
      ``images_per_s``, ``batches_per_s``, ``images``, ``batches``, ``seconds``
      (timed part), ``warmup_seconds``, ``warmup_batches``.

    Raises:
      ValueError: nothing was left to time after warm-up.
    """
    for _ in range(warmup_epochs):
        for _ in dataset:
            pass
    iterator = iter(dataset)
    start = time.perf_counter()
    warmed = 0
    for _ in range(warmup):
        try:
            next(iterator)
        except StopIteration:
            break
        warmed += 1
    timed_start = time.perf_counter()
    batches = images = 0
    while steps is None or batches < steps:
        try:
            element = next(iterator)
        except StopIteration:
            break
        batches += 1
        images += _images_in(element, images_per_element)
    seconds = time.perf_counter() - timed_start
    if batches == 0:
        raise ValueError(
            f"no batches left to time after {warmed} warm-up batch(es): use a smaller "
            "warmup, more data or repeat=True"
        )
    return {
        "images_per_s": images / seconds if seconds > 0 else float("inf"),
        "batches_per_s": batches / seconds if seconds > 0 else float("inf"),
        "images": float(images),
        "batches": float(batches),
        "seconds": seconds,
        "warmup_seconds": timed_start - start,
        "warmup_batches": float(warmed),
    }


def estimate_pipeline_memory(
    image_size: ImageSize = 224,
    batch_size: int = 32,
    *,
    shuffle_buffer: int = 1000,
    cache_images: int = 0,
    cycle_length: int = 2,
    read_buffer_bytes: int = 256 * 1024,
    prefetch_batches: int = 2,
    parallel_calls: int = 2,
    channels: int = 3,
    bytes_per_value: int = 4,
) -> dict[str, int]:
    """Rough host-memory cost of a pipeline's buffers, in bytes (lesson 05).

    Assumes elements are decoded float32 ``(h, w, channels)`` images after the
    map (as in :func:`make_dataset`); one read buffer per open shard
    (``TFRecordDataset``'s default is 256 KiB); ``parallel_calls`` images in
    flight in the map. Caching uint8 instead of float32 divides the cache by 4.

    Args:
      image_size: output size.
      batch_size: images per batch.
      shuffle_buffer: elements in the shuffle buffer.
      cache_images: images held by an in-memory ``cache`` (the dataset size).
      cycle_length: shards open at once.
      read_buffer_bytes: read buffer per open shard.
      prefetch_batches: batches waiting in ``prefetch``.
      parallel_calls: map calls in flight.
      channels: image channels.
      bytes_per_value: 4 for float32, 1 for uint8.

    Returns:
      ``element``, ``shuffle_buffer``, ``cache``, ``interleave_buffers``,
      ``map_in_flight``, ``prefetch``, ``total``.
    """
    h, w = _size_pair(image_size)
    element = h * w * channels * bytes_per_value
    parts = {
        "shuffle_buffer": shuffle_buffer * element,
        "cache": cache_images * element,
        "interleave_buffers": cycle_length * read_buffer_bytes,
        "map_in_flight": parallel_calls * element,
        "prefetch": prefetch_batches * batch_size * element,
    }
    return {"element": element, **parts, "total": sum(parts.values())}
