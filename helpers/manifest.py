"""The converter's ``manifest.json``: one typed definition, read, written and validated here.

The manifest holds per-shard facts only (records, bytes, sha256, class counts,
the index file and its digest) plus the classes, the settings and the lists of
skipped / converted / ignored files, so its size grows with the shard count, not
the record count. ``docs/converter.md`` documents every key. A :class:`Manifest`
is a frozen dataclass that also reads like the JSON object it was loaded from
(``manifest["shards"][0]["file"]``), so code written against the plain dict keeps
working. Nothing here imports TensorFlow.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from helpers.util import atomic_write

__all__ = [
    "FORMAT_VERSION",
    "MANIFEST_NAME",
    "Manifest",
    "ManifestError",
    "ShardEntry",
    "manifest_path",
    "read_manifest",
    "validate",
    "write_manifest_file",
]

MANIFEST_NAME = "manifest.json"
#: 2: per-shard facts only, with an offset index per shard (no per-record digests).
#: 1: one sha256 per record in the manifest, no index (still readable, see read_manifest).
FORMAT_VERSION = 2
_READABLE = (1, 2)
logger = logging.getLogger(__name__)


class ManifestError(ValueError):
    """A manifest that cannot be used; the message names the file and what to do."""


class _JsonView(Mapping):
    """Read-only ``obj["key"]`` access to a dataclass through its JSON form."""

    def _json(self) -> dict[str, Any]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self._json()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._json())

    def __len__(self) -> int:
        return len(self._json())


@dataclass(frozen=True, eq=False)
class ShardEntry(_JsonView):
    """One shard's facts (``manifest["shards"][i]``)."""

    file: str
    records: int
    bytes: int
    sha256: str
    class_counts: dict[str, int]
    index: str | None = None  # the offset index file beside the shard (None in version 1)
    index_sha256: str | None = None

    def _json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.index is None:
            del out["index"], out["index_sha256"]
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self) == dict(other)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class Manifest(_JsonView):
    """The whole manifest. Derived totals (``num_records`` ...) are computed, not stored twice."""

    split: str
    dataset_path: str
    classes: list[str]
    settings: dict[str, Any]
    features: dict[str, str]
    shards: list[ShardEntry]
    skipped: list[dict[str, str]] = field(default_factory=list)
    converted: list[dict[str, str]] = field(default_factory=list)
    ignored: list[dict[str, str]] = field(default_factory=list)
    non_utf8_names: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    format_version: int = FORMAT_VERSION
    created_by: str = "helpers.convert"
    label_map: str = "labels.txt"
    compression: str | None = None

    @property
    def num_records(self) -> int:
        return sum(s.records for s in self.shards)

    @property
    def num_shards(self) -> int:
        return len(self.shards)

    @property
    def total_bytes(self) -> int:
        return sum(s.bytes for s in self.shards)

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def class_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(self.classes, 0)
        for shard in self.shards:
            for name, n in shard.class_counts.items():
                counts[name] = counts.get(name, 0) + n
        return counts

    def _json(self) -> dict[str, Any]:
        cached = self.__dict__.get("_cache")
        if cached is None:
            cached = self.to_dict()
            object.__setattr__(self, "_cache", cached)
        return cached

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, keys in the documented order."""
        by_reason: dict[str, int] = {}
        for entry in self.ignored:
            by_reason[entry["reason"]] = by_reason.get(entry["reason"], 0) + 1
        return {
            "format_version": self.format_version,
            "created_by": self.created_by,
            "split": self.split,
            "dataset_path": self.dataset_path,
            "label_map": self.label_map,
            "num_classes": self.num_classes,
            "classes": list(self.classes),
            "class_counts": self.class_counts,
            "num_records": self.num_records,
            "num_shards": self.num_shards,
            "total_bytes": self.total_bytes,
            "size_per_record": self.settings.get("size_per_record"),
            "compression": self.compression,
            "settings": dict(self.settings),
            "features": dict(self.features),
            "shards": [dict(s) for s in self.shards],
            "skipped": list(self.skipped),
            "converted": list(self.converted),
            "ignored": {
                "count": len(self.ignored),
                "by_reason": dict(sorted(by_reason.items())),
                "entries": list(self.ignored),
            },
            "non_utf8_names": list(self.non_utf8_names),
            "warnings": list(self.warnings),
        }

    def to_json(self) -> str:
        """The file's exact text (UTF-8, fixed key order, no timestamps: reproducible)."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and self.to_dict() == dict(other)

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "manifest") -> Manifest:
        """Build from a parsed JSON object, after :func:`validate`."""
        validate(data, source)
        names = {f.name for f in fields(ShardEntry)}
        shards = [ShardEntry(**{k: v for k, v in s.items() if k in names}) for s in data["shards"]]
        ignored = data.get("ignored") or {}
        return cls(
            split=data.get("split", ""),
            dataset_path=data.get("dataset_path", ""),
            classes=list(data["classes"]),
            settings=dict(data.get("settings") or {}),
            features=dict(data.get("features") or {}),
            shards=shards,
            skipped=list(data.get("skipped") or []),
            converted=list(data.get("converted") or []),
            ignored=list(ignored.get("entries", []) if isinstance(ignored, Mapping) else []),
            non_utf8_names=list(data.get("non_utf8_names") or []),
            warnings=list(data.get("warnings") or []),
            format_version=int(data["format_version"]),
            created_by=data.get("created_by", "helpers.convert"),
            label_map=data.get("label_map", "labels.txt"),
            compression=data.get("compression"),
        )


_SHARD_KEYS = {"file": str, "records": int, "bytes": int, "sha256": str, "class_counts": dict}


def validate(data: Any, source: str = "manifest") -> None:
    """Check a parsed manifest's version, keys and types.

    Raises:
      ManifestError: naming ``source``, the problem and what to do.
    """
    redo = "rerun the converter (python -m helpers.convert ... --overwrite)"
    if not isinstance(data, Mapping):
        raise ManifestError(f"{source}: expected a JSON object; {redo}")
    version = data.get("format_version")
    if version not in _READABLE:
        newer = isinstance(version, int) and version > FORMAT_VERSION
        what = "a newer converter: update this package" if newer else f"no known converter: {redo}"
        raise ManifestError(
            f"{source}: format_version {version!r} is not one this package reads "
            f"({', '.join(map(str, _READABLE))}); it was written by {what}"
        )
    if not isinstance(data.get("classes"), list) or not isinstance(data.get("shards"), list):
        raise ManifestError(f"{source}: expected a 'classes' list and a 'shards' list; {redo}")
    for i, shard in enumerate(data["shards"]):
        for key, kind in _SHARD_KEYS.items():
            if not isinstance(shard, Mapping) or not isinstance(shard.get(key), kind):
                raise ManifestError(
                    f"{source}: shards[{i}] has no valid {key!r} ({kind.__name__}); {redo}"
                )


def manifest_path(path: str | os.PathLike) -> str:
    """``path`` itself, or ``path/manifest.json`` when ``path`` is a directory."""
    name = os.fspath(path)
    return os.path.join(name, MANIFEST_NAME) if _isdir(name) else name


def _isdir(name: str) -> bool:
    if "://" in name:  # gs://, s3://, hdfs://: TensorFlow's file systems
        import tensorflow as tf

        return bool(tf.io.gfile.isdir(name))
    return os.path.isdir(name)


def _read_text(name: str) -> str:
    if "://" in name:
        import tensorflow as tf

        if not tf.io.gfile.exists(name):
            raise FileNotFoundError(f"{name}: no manifest.json (was the conversion finished?)")
        with tf.io.gfile.GFile(name, "r") as f:
            return f.read()
    try:
        with open(name, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{name}: no manifest.json (was the conversion finished?)"
        ) from None


def read_manifest(path: str | os.PathLike) -> Manifest:
    """Load and validate ``manifest.json`` (a path to it, or to the converter's output folder).

    A version-1 manifest (per-record digests, no index) is read with a warning: its
    shards have no offset index (``python -m helpers.records index DIR`` writes them).

    Args:
      path: the manifest file or its folder (local, or a ``gs://``-style URL).

    Returns:
      The :class:`Manifest` (also usable as the JSON dict).

    Raises:
      FileNotFoundError: no manifest there.
      ManifestError: not JSON, or not a manifest this package reads (the message says why).
    """
    name = manifest_path(path)
    text = _read_text(name)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ManifestError(
            f"{name}: not valid JSON ({err}); rerun the converter with --overwrite"
        ) from None
    manifest = Manifest.from_dict(data, name)
    if manifest.format_version < FORMAT_VERSION:
        logger.warning(
            "%s: format_version %d (an older converter): no record index; run "
            "`python -m helpers.records index %s` or convert again for random access",
            name,
            manifest.format_version,
            os.path.dirname(name) or ".",
        )
    return manifest


def write_manifest_file(manifest: Manifest, output_dir: str | os.PathLike) -> str:
    """Write ``output_dir/manifest.json`` atomically (fsync'd temporary file, rename)."""
    path = os.path.join(os.fspath(output_dir), MANIFEST_NAME)
    atomic_write(path, manifest.to_json())
    return path
