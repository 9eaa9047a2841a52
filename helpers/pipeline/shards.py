"""Which TFRecord files a pipeline reads, and cheap checks before reading them.

:func:`resolve_shards` turns a converter output directory (its
``manifest.json``), a manifest path, a glob pattern or a file list into a
:class:`ShardSet`; ``preflight`` compares sizes with the manifest and
recognises GZIP data read as uncompressed.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import tensorflow as tf

from helpers.convert.resume import JOURNAL_NAME
from helpers.manifest import MANIFEST_NAME, read_manifest
from helpers.records import is_shard_name, masked_crc

logger = logging.getLogger(__name__)


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


def _classes_from(manifest: Mapping[str, Any]) -> list[str] | None:
    classes = manifest.get("classes")
    if classes is None:
        return None
    if isinstance(classes, Mapping):  # name -> label
        return [name for name, _ in sorted(classes.items(), key=lambda kv: int(kv[1]))]
    return [str(c) for c in classes]


def resolve_shards(
    source: str | os.PathLike | Sequence[str | os.PathLike], compression: str | None = None
) -> ShardSet:
    """Turn a converter output directory, a manifest, a glob pattern or a file list into files.

    A leading ``~`` is expanded, as a shell would.

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
        name = os.path.expanduser(os.fspath(source))
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
    files = [os.path.expanduser(os.fspath(p)) for p in source]
    if not files:
        raise ValueError("an empty list of files: nothing to read")
    for f in files:
        if not tf.io.gfile.exists(f):
            raise FileNotFoundError(f"{f}: no such file")
    return ShardSet(files, [None] * len(files), [None] * len(files), compression=compression)


def _resolve_dir(directory: str, compression: str | None) -> ShardSet:
    listed = sorted(n for n in tf.io.gfile.listdir(directory) if is_shard_name(n.rstrip("/")))
    manifest_file = os.path.join(directory, MANIFEST_NAME)
    if not tf.io.gfile.exists(manifest_file) and tf.io.gfile.exists(
        os.path.join(directory, JOURNAL_NAME)
    ):
        raise FileNotFoundError(
            f"{directory}: an interrupted conversion (it has {JOURNAL_NAME} but no "
            f"{MANIFEST_NAME}); rerun the same `python -m helpers.convert` command to finish it"
        )
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


def preflight(shards: ShardSet, strict: bool) -> list[int]:
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
