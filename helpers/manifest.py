"""The converter's ``manifest.json``: one typed definition, read, written and validated here.

The manifest holds per-shard facts only (records, bytes, sha256, the index file and
its digest) plus the classes with their dataset-wide counts, the settings and the
lists of skipped / converted / ignored files, so its size grows with the shard
count, not the record count. Since format version 3 the per-shard class counts
live in a sidecar, ``class_counts.json`` (:mod:`helpers.class_counts`), named in
the manifest with its sha256 and read only by :meth:`Manifest.shard_class_counts`;
versions 1 and 2 held them inline and are still read. ``docs/converter.md``
documents every key. A :class:`Manifest` is a frozen dataclass that also reads like
the JSON object it was loaded from (``manifest["shards"][0]["file"]``), so code
written against the plain dict keeps working. Nothing here imports TensorFlow.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from helpers.class_counts import CLASS_COUNTS_NAME, ShardClassCounts
from helpers.util import atomic_write, fsync_dir

__all__ = [
    "CLASS_COUNTS_NAME",
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
#: the totals manifest.json stores and :class:`Manifest` derives from its classes and shards
TOTALS = ("num_classes", "num_records", "num_shards", "total_bytes")
#: 3: per-shard class counts in the class_counts.json sidecar (named, with its sha256).
#: 2: per-shard facts only, with an offset index per shard (no per-record digests).
#: 1: one sha256 per record in the manifest, no index (still readable, see read_manifest).
#: Versions 1 and 2 hold each shard's class counts inline.
FORMAT_VERSION = 3
_READABLE = (1, 2, 3)
_SIDECAR_VERSION = 3  # the first version whose per-shard class counts are in the sidecar
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
    #: records per class, inline in versions 1 and 2; None from version 3 (see
    #: :meth:`Manifest.shard_class_counts`, which works for every version)
    class_counts: dict[str, int] | None = None
    index: str | None = None  # the offset index file beside the shard (None in version 1)
    index_sha256: str | None = None

    def _json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.class_counts is None:
            del out["class_counts"]
        if self.index is None:
            del out["index"], out["index_sha256"]
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self) == dict(other)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class Manifest(_JsonView):
    """The whole manifest. Derived totals (``num_records`` ...) are computed, not stored twice.

    From version 3 each shard's class counts are in the sidecar named by
    ``class_counts_file``: built from shard entries that carry ``class_counts`` (or
    from ``shard_counts``), a manifest moves them there; read from disk, it reads the
    sidecar only when :meth:`shard_class_counts` is called.
    """

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
    #: version 3: the sidecar's file name (beside manifest.json) and the sha256 the
    #: file records for it (derived from ``shard_counts`` when built in memory)
    class_counts_file: str = CLASS_COUNTS_NAME
    class_counts_sha256: str | None = None
    #: version 3 read from disk: the dataset-wide class counts as stored
    stored_class_counts: dict[str, int] | None = None
    #: read from disk: ``num_classes``, ``num_records``, ``num_shards``, ``total_bytes`` as
    #: stored (the properties derive them; ``verify`` checks that the two agree)
    stored_totals: dict[str, Any] = field(default_factory=dict, repr=False)
    #: version 3: the per-shard counts in memory (given, or read on first use)
    shard_counts: ShardClassCounts | None = field(default=None, repr=False)
    #: the folder the manifest was read from (where its sidecar is)
    location: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.format_version < _SIDECAR_VERSION:
            return
        inline = any(s.class_counts is not None for s in self.shards)
        if inline or (self.shard_counts is None and self.class_counts_sha256 is None):
            per_shard = {s.file: s.class_counts or {} for s in self.shards}
            counts = ShardClassCounts.from_shards(self.classes, per_shard)
            shards = [replace(s, class_counts=None) for s in self.shards]
            object.__setattr__(self, "shard_counts", counts)
            object.__setattr__(self, "shards", shards)
            object.__setattr__(self, "class_counts_sha256", None)  # derived from the counts

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
        """Records per class over all shards, every class (zeros included)."""
        if self.format_version >= _SIDECAR_VERSION:
            if self.shard_counts is not None:
                return self.shard_counts.totals()
            return dict(self.stored_class_counts or dict.fromkeys(self.classes, 0))
        counts = dict.fromkeys(self.classes, 0)
        for shard in self.shards:
            for name, n in (shard.class_counts or {}).items():
                counts[name] = counts.get(name, 0) + n
        return counts

    def shard_class_counts(self) -> dict[str, dict[str, int]]:
        """Each shard's records per class: ``{shard file: {class: count}}``, in shard order.

        Classes without records in a shard are left out. Versions 1 and 2 hold the
        counts inline; from version 3 they come from the sidecar, read on the first
        call and checked against the manifest (its sha256, classes, shard list and
        record counts).

        Raises:
          ManifestError: the sidecar is missing, changed or does not match the manifest
            (the message names the file and what to do).
        """
        if self.format_version < _SIDECAR_VERSION:
            return {s.file: dict(s.class_counts or {}) for s in self.shards}
        table = self._shard_counts()
        return {s.file: table.of(s.file) for s in self.shards}

    def _shard_counts(self) -> ShardClassCounts:
        if self.shard_counts is None:
            object.__setattr__(self, "shard_counts", _read_sidecar(self))
        assert self.shard_counts is not None
        return self.shard_counts

    def _sidecar_json(self) -> dict[str, str]:
        digest = self.class_counts_sha256
        if self.shard_counts is not None:
            digest = self.shard_counts.sha256
        return {"file": self.class_counts_file, "sha256": str(digest)}

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
        sidecar = {}
        if self.format_version >= _SIDECAR_VERSION:
            sidecar = {"shard_class_counts": self._sidecar_json()}
        return {
            "format_version": self.format_version,
            "created_by": self.created_by,
            "split": self.split,
            "dataset_path": self.dataset_path,
            "label_map": self.label_map,
            "num_classes": self.num_classes,
            "classes": list(self.classes),
            "class_counts": self.class_counts,
            **sidecar,
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
    def from_dict(
        cls, data: Mapping[str, Any], source: str = "manifest", location: str | None = None
    ) -> Manifest:
        """Build from a parsed JSON object, after :func:`validate`.

        Args:
          data: the parsed ``manifest.json``.
          source: the name errors give (the file's path).
          location: the folder it came from, where a version-3 sidecar is read.
        """
        validate(data, source)
        version = int(data["format_version"])
        names = {f.name for f in fields(ShardEntry)}
        if version >= _SIDECAR_VERSION:
            names.discard("class_counts")  # the sidecar's, never inline
        shards = [ShardEntry(**{k: v for k, v in s.items() if k in names}) for s in data["shards"]]
        ignored = data.get("ignored") or {}
        sidecar: Mapping[str, Any] = {}
        if version >= _SIDECAR_VERSION:
            sidecar = data["shard_class_counts"]
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
            format_version=version,
            created_by=data.get("created_by", "helpers.convert"),
            label_map=data.get("label_map", "labels.txt"),
            compression=data.get("compression"),
            class_counts_file=sidecar.get("file", CLASS_COUNTS_NAME),
            class_counts_sha256=sidecar.get("sha256"),
            stored_class_counts=dict(data["class_counts"]) if version >= _SIDECAR_VERSION else None,
            stored_totals={k: data[k] for k in TOTALS if k in data},
            location=location,
        )


_SHARD_KEYS = {"file": str, "records": int, "bytes": int, "sha256": str}


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
    keys = dict(_SHARD_KEYS)
    if version < _SIDECAR_VERSION:
        keys["class_counts"] = dict  # inline before the sidecar
    elif problem := _sidecar_keys_problem(data):
        raise ManifestError(f"{source}: {problem}; {redo}")
    for i, shard in enumerate(data["shards"]):
        for key, kind in keys.items():
            if not isinstance(shard, Mapping) or not isinstance(shard.get(key), kind):
                raise ManifestError(
                    f"{source}: shards[{i}] has no valid {key!r} ({kind.__name__}); {redo}"
                )


def _sidecar_keys_problem(data: Mapping[str, Any]) -> str | None:
    """Version 3: ``class_counts`` (every class's total) and ``shard_class_counts`` (the sidecar)."""
    totals = data.get("class_counts")
    if not isinstance(totals, Mapping) or list(totals) != list(data["classes"]):
        return "expected 'class_counts' with every class, in order"
    if not all(type(n) is int and n >= 0 for n in totals.values()):
        return "'class_counts' must hold non-negative integers"
    ref = data.get("shard_class_counts")
    name = ref.get("file") if isinstance(ref, Mapping) else None
    digest = ref.get("sha256") if isinstance(ref, Mapping) else None
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\\" in name:
        return "expected 'shard_class_counts' with a 'file' name beside the manifest"
    if not isinstance(digest, str) or len(digest) != 64:
        return "expected 'shard_class_counts' with a 'sha256' digest"
    return None


def manifest_path(path: str | os.PathLike) -> str:
    """``path`` itself, or ``path/manifest.json`` when ``path`` is a directory (``~`` expanded)."""
    name = os.path.expanduser(os.fspath(path))
    return os.path.join(name, MANIFEST_NAME) if _isdir(name) else name


def _isdir(name: str) -> bool:
    if "://" in name:  # gs://, s3://, hdfs://: TensorFlow's file systems
        import tensorflow as tf

        return bool(tf.io.gfile.isdir(name))
    return os.path.isdir(name)


def _read_bytes(name: str) -> bytes:
    """A whole file, local or through TensorFlow's file systems; FileNotFoundError if absent."""
    if "://" in name:
        import tensorflow as tf

        if not tf.io.gfile.exists(name):
            raise FileNotFoundError(name)
        with tf.io.gfile.GFile(name, "rb") as f:
            return f.read()
    with open(name, "rb") as f:
        return f.read()


def _read_text(name: str) -> str:
    try:
        return _read_bytes(name).decode("utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{name}: no manifest.json (was the conversion finished?)"
        ) from None


def _read_sidecar(manifest: Manifest) -> ShardClassCounts:
    """The version-3 sidecar of a manifest read from disk, checked against the manifest."""
    if manifest.location is None:
        raise ManifestError(
            f"{manifest.class_counts_file}: this manifest was not read from a folder, so its "
            "per-shard class counts cannot be found; load it with read_manifest(DIR)"
        )
    path = os.path.join(manifest.location, manifest.class_counts_file)
    redo = (
        f"restore it from the conversion's output folder (it belongs with {MANIFEST_NAME}) "
        "or rerun the converter with --overwrite"
    )
    try:
        data = _read_bytes(path)
    except FileNotFoundError:
        raise ManifestError(
            f"{path}: missing (the per-shard class counts {MANIFEST_NAME} names); {redo}"
        ) from None
    if hashlib.sha256(data).hexdigest() != manifest.class_counts_sha256:
        raise ManifestError(
            f"{path}: sha256 differs from the one in {MANIFEST_NAME} (the file was changed "
            f"or replaced after the conversion); {redo}"
        )
    try:
        counts = ShardClassCounts.parse(data)
    except ValueError as err:
        raise ManifestError(f"{path}: {err}; {redo}") from None
    records = {s.file: s.records for s in manifest.shards}
    problem = counts.mismatch(manifest.classes, records, manifest.stored_class_counts or {})
    if problem:
        raise ManifestError(f"{path}: {problem}; {redo}")
    return counts


def read_manifest(path: str | os.PathLike) -> Manifest:
    """Load and validate ``manifest.json`` (a path to it, or to the converter's output folder).

    A version-1 manifest (per-record digests, no index) is read with a warning: its
    shards have no offset index (``python -m helpers.records index DIR`` writes them).
    Versions 1 and 2 hold per-shard class counts inline; version 3 keeps them in the
    sidecar, which is read only when :meth:`Manifest.shard_class_counts` is called.

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
    manifest = Manifest.from_dict(data, name, location=os.path.dirname(name) or ".")
    if manifest.format_version == 1:
        logger.warning(
            "%s: format_version %d (an older converter): no record index; run "
            "`python -m helpers.records index %s` or convert again for random access",
            name,
            manifest.format_version,
            os.path.dirname(name) or ".",
        )
    return manifest


def write_manifest_file(manifest: Manifest, output_dir: str | os.PathLike) -> str:
    """Write ``output_dir/manifest.json`` atomically (fsync'd temporary file, rename).

    From version 3 the class-counts sidecar is written first, the same way, and the
    folder synced, so a ``manifest.json`` (whose presence means the conversion is
    complete) never names a sidecar that is not there.

    Returns:
      The manifest's path.
    """
    output = os.fspath(output_dir)
    if manifest.format_version >= _SIDECAR_VERSION:
        counts = manifest._shard_counts()  # noqa: SLF001 - same module
        atomic_write(os.path.join(output, manifest.class_counts_file), counts.data)
        fsync_dir(output)
    path = os.path.join(output, MANIFEST_NAME)
    atomic_write(path, manifest.to_json())
    return path
