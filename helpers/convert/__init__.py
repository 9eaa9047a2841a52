"""Image class folders -> size-based TFRecord shards, offset indexes, a label map and a manifest.

::

    python -m helpers.convert --dataset-path images --output-path tfrecords \\
        [--size-per-record 52428800] [--workers N] [--overwrite]

``docs/converter.md`` is the specification (what is copied, converted, skipped or
ignored; the shard plan; the on-disk format; resuming). The package is split by
phase, and the phases are a small public API that another engine can run and get
byte-identical output:

=================  =============================================================
:func:`scan`       list the class folders and probe every file's header
                   (:mod:`.scanning`, :mod:`.probe`)
:func:`plan`       the deterministic record order and shard boundaries
                   (:mod:`.planning`)
:func:`write_shard`  one shard and its index, atomically (:mod:`.shards`,
                   :mod:`.encode`)
:func:`write_manifest`  ``labels.txt``, ``class_counts.json``, ``manifest.json`` (:mod:`.finish`)
=================  =============================================================

:func:`convert` (:mod:`.run`) runs them in order with a process pool
(:mod:`.pool`), resumes an interrupted run (:mod:`.resume`), manages the output
folder (:mod:`.output`) and prints sizing advice (:mod:`.advice`).
"""

from helpers.convert.cli import build_parser, main  # noqa: E402  (after convert: cli uses it)
from helpers.convert.encode import record_bytes
from helpers.convert.finish import build_manifest, write_manifest
from helpers.convert.planning import Plan, ShardTask, plan
from helpers.convert.probe import IMAGE_EXTENSIONS
from helpers.convert.run import convert
from helpers.convert.scanning import JUNK_DIRS, ScanResult, scan
from helpers.convert.settings import (
    DEFAULT_MAX_PIXELS,
    DEFAULT_SEED,
    DEFAULT_SIZE_PER_RECORD,
    JPEG_QUALITY,
    LABELS_NAME,
    PNG_COMPRESS_LEVEL,
    ConvertError,
    Settings,
    display_name,
    shard_name,
)
from helpers.convert.shards import ShardResult, write_shard
from helpers.convert.table import FileRecord, FileTable
from helpers.manifest import FORMAT_VERSION, MANIFEST_NAME
from helpers.util import parse_size

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "DEFAULT_SEED",
    "DEFAULT_SIZE_PER_RECORD",
    "FORMAT_VERSION",
    "IMAGE_EXTENSIONS",
    "JPEG_QUALITY",
    "JUNK_DIRS",
    "LABELS_NAME",
    "MANIFEST_NAME",
    "PNG_COMPRESS_LEVEL",
    "ConvertError",
    "FileRecord",
    "FileTable",
    "Plan",
    "ScanResult",
    "Settings",
    "ShardResult",
    "ShardTask",
    "build_manifest",
    "build_parser",
    "convert",
    "display_name",
    "main",
    "parse_size",
    "plan",
    "record_bytes",
    "scan",
    "shard_name",
    "write_manifest",
    "write_shard",
]
