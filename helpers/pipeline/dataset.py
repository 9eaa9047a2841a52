"""The TFRecord pipeline: :func:`make_dataset`, built step by step.

::

    list of shards (shuffled when training)
      -> interleave(TFRecordDataset, cycle_length, AUTOTUNE, deterministic)
      -> map(parse + decode + resize + normalise + checked label, AUTOTUNE)
      -> cache -> shuffle -> [repeat] -> [augment] -> batch(drop_remainder) -> prefetch

Without ``cache`` the shuffle moves before the map: it then holds serialized
records (~100 KB each for an ImageNet photo) instead of decoded float32 images
(602 KB each at 224 px). With ``skip_corrupt`` every shard's delivered records
are counted into a :class:`~helpers.pipeline.CorruptionReport`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tensorflow as tf

from helpers.pipeline.corruption import CorruptionReport
from helpers.pipeline.options import DatasetOptions, ReadOptions
from helpers.pipeline.preprocess import AUTOTUNE, ImageSize, preprocess_image, size_pair
from helpers.pipeline.schema import (
    check_num_classes,
    check_schema,
    feature_keys,
    image_feature_spec,
    label_fn,
)
from helpers.pipeline.shards import ShardSet, preflight, resolve_shards
from helpers.pipeline.tail import finish_pipeline

logger = logging.getLogger(__name__)

Decoder = Callable[[tf.Tensor], tuple[tf.Tensor, tf.Tensor, tf.Tensor]]
Labeller = Callable[[tf.Tensor, tf.Tensor], tf.Tensor]
Opener = Callable[[tf.Tensor, tf.Tensor], tf.data.Dataset]


def make_dataset(
    source: str | os.PathLike | Sequence[str | os.PathLike],
    batch_size: int = 32,
    image_size: ImageSize = 224,
    *,
    options: DatasetOptions | None = None,
    **knobs: Any,
) -> tf.data.Dataset:
    """Images and labels from TFRecord shards: the full tf.data pipeline, knobs as arguments.

    Stages, in order: file list (shuffled when ``training``) ->
    ``interleave(TFRecordDataset, cycle_length, interleave_parallel_calls,
    deterministic)`` -> ``map(parse, decode, resize, normalise to [-1, 1],
    checked label, num_parallel_calls)`` -> ``cache`` -> ``shuffle`` ->
    ``repeat`` -> ``augment`` -> ``batch(drop_remainder)`` -> ``prefetch``.
    When the manifest gives the record count (and ``skip_corrupt`` is off), the
    records are ``assert_cardinality``-checked against it: ``len(dataset)`` is known
    before reading, and a shard that yields fewer records fails instead of
    shortening the epoch silently.
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
      options: a :class:`~helpers.pipeline.DatasetOptions` (defaults when omitted).
      **knobs: any knob by name, overriding ``options``; they come in three groups
        (see :mod:`helpers.pipeline.options` for each one's meaning):

        * reading (:class:`ReadOptions`): ``cycle_length``, ``block_length``,
          ``interleave_parallel_calls``, ``read_buffer_bytes``, ``compression``,
          ``storage``;
        * decoding (:class:`DecodeOptions`): ``num_classes``, ``one_hot``,
          ``num_parallel_calls``, ``keys``, ``resize_method``, ``check``,
          ``skip_corrupt``, ``corruption_report``;
        * feeding (:class:`FeedOptions`): ``training``, ``cache``,
          ``shuffle_buffer``, ``augment``, ``drop_remainder``, ``prefetch``,
          ``repeat``, ``deterministic``, ``seed``.

    Returns:
      A ``tf.data.Dataset`` of ``(images, labels)``: float32
      ``(batch, h, w, 3)`` in ``[-1, 1]`` and float32 ``(batch, N)`` one-hot
      (or int32 ``(batch,)``).

    Raises:
      TypeError: an unknown knob (the message lists the valid ones).
      FileNotFoundError / ValueError / SchemaError: at build time for missing
        shards, size or compression mismatches, schema mismatches, unknown N.
      tf.errors.InvalidArgumentError: while iterating, a label outside [0, N).
    """
    opts = (options or DatasetOptions()).with_knobs(**knobs)
    read, decode, feed = opts.read, opts.decode, opts.feed
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    size = size_pair(image_size)
    shards = resolve_shards(source, read.compression)
    num_classes = _resolve_num_classes(decode.num_classes, shards.num_classes, decode.one_hot)
    sizes = preflight(shards, strict=not decode.skip_corrupt)
    spec = image_feature_spec(decode.keys)
    if decode.check:
        _check_first_record(shards, sizes, spec, decode.skip_corrupt)
    files = _file_list(shards, sizes, training=feed.training, seed=feed.seed)
    open_shard = _shard_opener(read, shards.compression)
    to_example = _record_decoder(spec, feature_keys(decode.keys), size, decode.resize_method)
    label_out = label_fn(num_classes, decode.one_hot)
    # No cache: shuffle the serialized records, before decoding (see the docstring).
    shuffle_records = feed.shuffles and not (feed.cache or decode.skip_corrupt)
    if decode.skip_corrupt:
        report = (
            decode.corruption_report if decode.corruption_report is not None else CorruptionReport()
        )
        dataset = _read_counted(
            files, open_shard, to_example, label_out, opts, shards, report, size
        )
    else:
        dataset = _read(files, open_shard, to_example, label_out, opts, shuffle_records)
        if shards.num_records is not None:  # len() is known; a short read fails, not shortens
            dataset = dataset.apply(tf.data.experimental.assert_cardinality(shards.num_records))
    return finish_pipeline(
        dataset,
        batch_size=batch_size,
        training=feed.training,
        cache=feed.cache,
        shuffle_buffer=0 if shuffle_records else feed.shuffle_buffer,
        augment=feed.augment,
        drop_remainder=feed.drop_remainder,
        prefetch=feed.prefetch,
        repeat=feed.repeat,
        seed=feed.seed,
        num_parallel_calls=decode.num_parallel_calls,
        deterministic=_map_determinism(opts),
    )


def _resolve_num_classes(num_classes: int | None, known: int | None, one_hot: bool) -> int | None:
    if num_classes is not None:
        num_classes = check_num_classes(num_classes)
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


def _check_first_record(
    shards: ShardSet, sizes: list[int], spec: Mapping[str, Any], skip_corrupt: bool
) -> None:
    """Run :func:`check_schema` on the first non-empty shard (a warning with ``skip_corrupt``)."""
    first = next((f for f, s in zip(shards.files, sizes, strict=True) if s), None)
    if first is None:
        return
    try:
        check_schema(first, spec, compression=shards.compression)
    except ValueError:
        if not skip_corrupt:
            raise
        logger.warning("schema check of %s failed; skip_corrupt=True continues", first)


def _file_list(
    shards: ShardSet, sizes: list[int], *, training: bool, seed: int | None
) -> tf.data.Dataset:
    """``(filename, bytes)`` per shard, reshuffled every epoch when training."""
    files = tf.data.Dataset.from_tensor_slices(
        (tf.constant(shards.files), tf.constant(sizes, tf.int64))
    )
    if training:
        files = files.shuffle(len(shards.files), seed=seed, reshuffle_each_iteration=True)
    return files


def _shard_opener(read: ReadOptions, compression: str | None) -> Opener:
    """``(filename, bytes) -> records``, through the storage simulation when there is one."""

    def open_shard(filename: tf.Tensor, nbytes: tf.Tensor) -> tf.data.Dataset:
        if read.storage is not None:
            return read.storage.tfrecord_dataset(
                filename, nbytes, compression, read.read_buffer_bytes
            )
        return tf.data.TFRecordDataset(
            filename, compression_type=compression or "", buffer_size=read.read_buffer_bytes
        )

    return open_shard


def _record_decoder(
    spec: Mapping[str, Any], keys: Mapping[str, str], size: tuple[int, int], resize_method: str
) -> Decoder:
    """``serialized -> (image, raw label, filename)``: parse, decode, resize, normalise."""

    def decode_record(serialized: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        parsed = tf.io.parse_single_example(serialized, spec)
        image = preprocess_image(parsed[keys["encoded"]], size, resize_method)
        return image, parsed[keys["label"]], parsed[keys["filename"]]

    return decode_record


def _interleave(files: tf.data.Dataset, opener: Opener, opts: DatasetOptions) -> tf.data.Dataset:
    read = opts.read
    parallel = read.interleave_parallel_calls
    return files.interleave(
        opener,
        cycle_length=AUTOTUNE if read.cycle_length is None else read.cycle_length,
        block_length=read.block_length,
        num_parallel_calls=parallel,
        deterministic=opts.feed.deterministic if parallel is not None else None,
    )


def _map_determinism(opts: DatasetOptions) -> bool | None:
    return opts.feed.deterministic if opts.decode.num_parallel_calls is not None else None


def _read(
    files: tf.data.Dataset,
    open_shard: Opener,
    to_example: Decoder,
    label_out: Labeller,
    opts: DatasetOptions,
    shuffle_records: bool,
) -> tf.data.Dataset:
    """interleave -> [shuffle serialized records] -> map(decode, label): fails on a bad record."""

    def to_pair(serialized: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        image, label, record = to_example(serialized)
        return image, label_out(label, record)

    records = _interleave(files, open_shard, opts)
    if shuffle_records:
        feed = opts.feed
        records = records.shuffle(
            feed.shuffle_buffer, seed=feed.seed, reshuffle_each_iteration=True
        )
    return records.map(
        to_pair,
        num_parallel_calls=opts.decode.num_parallel_calls,
        deterministic=_map_determinism(opts),
    )


def _read_counted(
    files: tf.data.Dataset,
    open_shard: Opener,
    to_example: Decoder,
    label_out: Labeller,
    opts: DatasetOptions,
    shards: ShardSet,
    report: CorruptionReport,
    size: tuple[int, int],
) -> tf.data.Dataset:
    """Skip bad records, counting what each shard delivered into ``report``, then label.

    ``ignore_errors`` ends a shard at its first bad record, silently: every
    shard's records are followed by an end marker carrying the running count,
    which ``report`` receives (and compares with the manifest) before the marker
    is filtered out.
    """
    for f, n in zip(shards.files, shards.records, strict=True):
        report.expected[f] = n
    blank = tf.zeros([*size, 3], tf.float32)
    map_det = _map_determinism(opts)

    def open_counted(filename: tf.Tensor, nbytes: tf.Tensor) -> tf.data.Dataset:
        images = (
            open_shard(filename, nbytes)
            .ignore_errors(log_warning=False)
            .map(
                to_example, num_parallel_calls=opts.decode.num_parallel_calls, deterministic=map_det
            )
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

    return (
        _interleave(files, open_counted, opts)
        .map(report_end)
        .filter(lambda *element: tf.logical_not(element[3]))
        .map(lambda *element: (element[0], label_out(element[1], element[2])))
    )
