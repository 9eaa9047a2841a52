"""tf.data input pipelines for the course's image records (lessons 04-06).

The reading side of :mod:`helpers.convert`, one module per job:

========================  ==========================================================
``schema``                the record's parsing spec; errors naming the feature / label
``preprocess``            decode, resize, normalise for MobileNet, augment
``shards``                which files to read (manifest, glob, list); pre-flight checks
``corruption``            what ``skip_corrupt=True`` delivered against the manifest
``options``               ``make_dataset``'s knobs in three groups
``dataset``               :func:`make_dataset`, the TFRecord pipeline
``tail``                  cache -> shuffle -> repeat -> augment -> batch -> prefetch
``stage_builder``         lesson 05's cumulative stages
``baselines``             one file per image, and a Python generator (PIL)
``storage``               a SIMULATED slow storage (it sleeps)
``throughput``            images/s of a dataset, without a model
``memory``                what the pipeline's buffers hold
========================  ==========================================================

Every public name is importable from ``helpers.pipeline`` itself, as the
notebooks do (``from helpers import pipeline as pl; pl.make_dataset(...)``).

Failure modes this package refuses to hide: a missing feature or a wrong dtype
(:class:`SchemaError`), a label outside ``[0, num_classes)``, a GZIP shard read
as uncompressed, a missing shard, a size that differs from the manifest, a
stray shard, and records silently dropped by ``ignore_errors``
(:class:`CorruptionReport`).
"""

from __future__ import annotations

from helpers.pipeline.baselines import (
    IMAGE_EXTENSIONS,
    ImageFolder,
    generator_dataset,
    list_image_folder,
    per_file_dataset,
)
from helpers.pipeline.corruption import CorruptionReport
from helpers.pipeline.dataset import make_dataset
from helpers.pipeline.memory import estimate_pipeline_memory
from helpers.pipeline.options import DatasetOptions, DecodeOptions, FeedOptions, ReadOptions
from helpers.pipeline.preprocess import (
    AUTOTUNE,
    augment,
    decode_image,
    denormalize_mobilenet,
    normalize_mobilenet,
    preprocess_image,
    resize,
)
from helpers.pipeline.schema import (
    SchemaError,
    check_label,
    check_schema,
    image_feature_spec,
    one_hot_checked,
    parse_batch,
    parse_single,
)
from helpers.pipeline.shards import ShardSet, read_manifest, resolve_shards
from helpers.pipeline.stage_builder import make_stages, pipeline_stages
from helpers.pipeline.storage import SimulatedSlowStorage, slow_open
from helpers.pipeline.throughput import measure_throughput

__all__ = [
    "AUTOTUNE",
    "IMAGE_EXTENSIONS",
    "CorruptionReport",
    "DatasetOptions",
    "DecodeOptions",
    "FeedOptions",
    "ImageFolder",
    "ReadOptions",
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
