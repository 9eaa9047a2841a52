"""Verify shards: every CRC, the manifest's counts and digests, the offset indexes.

``python -m helpers.records verify DIR`` runs :func:`verify_paths`. A damaged record
is named by file, record index and byte offset; a git-LFS pointer file where a
shard should be is named as such; a missing or changed ``class_counts.json`` (the
per-shard class counts of format version 3) is named with what to do.
``docs/converter.md`` says what each check catches.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers.manifest import MANIFEST_NAME, Manifest, ManifestError, read_manifest
from helpers.record_index import read_index
from helpers.records import (
    LFS_POINTER_PREFIX,
    LFS_POINTER_SHARD,
    RecordError,
    index_name,
    is_lfs_pointer,
    is_shard_name,
    read_records,
)
from helpers.util import sha256_file

__all__ = ["ShardReport", "verify", "verify_paths"]


@dataclass
class ShardReport:
    """The result of verifying one shard."""

    path: str
    records: int = 0
    bytes: int = 0
    errors: list[str] = field(default_factory=list)
    kind: str = "shard"  # or "class counts": the manifest's class_counts.json (version 3)

    @property
    def ok(self) -> bool:
        return not self.errors


def verify(
    path: str | os.PathLike,
    expected: Mapping[str, Any] | None = None,
    compression: str | None = None,
) -> ShardReport:
    """Read a whole shard, check every CRC and, if given, its manifest entry and its index.

    Args:
      path: the shard.
      expected: the shard's manifest entry (keys ``records``, ``bytes``, ``sha256``
        and, from format version 2, ``index`` / ``index_sha256``).
      compression: ``None`` or ``"GZIP"``.

    Returns:
      A :class:`ShardReport`; ``report.errors`` names every problem found, with the
      record index and byte offset where a record is damaged.
    """
    report = ShardReport(path=os.fspath(path))
    if not os.path.exists(path):
        report.errors.append(f"{path}: missing")
        return report
    report.bytes = os.path.getsize(path)
    with open(path, "rb") as f:
        if is_lfs_pointer(f.read(len(LFS_POINTER_PREFIX))):
            report.errors.append(f"{path}: {LFS_POINTER_SHARD}")
            return report
    spans = []
    try:
        offset = 0
        for data in read_records(path, compression=compression):
            spans.append((offset, len(data) + 16))
            offset += len(data) + 16
    except RecordError as err:
        report.errors.append(str(err))
    report.records = len(spans)
    if expected:
        report.errors += _against_manifest(report, expected)
        if expected.get("index") and not report.errors:
            report.errors += _check_index(report.path, expected, spans)
    return report


def _against_manifest(report: ShardReport, expected: Mapping[str, Any]) -> list[str]:
    path, errors = report.path, []
    if "records" in expected and expected["records"] != report.records:
        hint = ""
        if not report.errors and report.records < expected["records"]:
            # TF's reader is silent here: the file simply looks shorter.
            hint = (
                f" (the file ends cleanly after record {report.records - 1}, at byte "
                f"{report.bytes}: cut at a record boundary?)"
            )
        errors.append(
            f"{path}: {report.records} records readable, manifest says {expected['records']}{hint}"
        )
    if "bytes" in expected and expected["bytes"] != report.bytes:
        errors.append(f"{path}: {report.bytes} bytes, manifest says {expected['bytes']}")
    if "sha256" in expected and not report.errors and not errors:
        if sha256_file(path) != expected["sha256"]:
            errors.append(
                f"{path}: sha256 differs from the manifest (every record's CRC is valid, so "
                "the content was changed and re-framed, not damaged in storage)"
            )
    return errors


def _check_index(path: str, expected: Mapping[str, Any], spans: list[tuple[int, int]]) -> list[str]:
    index = os.path.join(os.path.dirname(path), expected["index"])
    rebuild = f"rebuild it with `python -m helpers.records index {path}`"
    if not os.path.exists(index):
        return [f"{index}: missing (the offset index of {os.path.basename(path)}); {rebuild}"]
    if expected.get("index_sha256") and sha256_file(index) != expected["index_sha256"]:
        return [f"{index}: sha256 differs from the manifest; {rebuild}"]
    try:
        listed = read_index(index)
    except ValueError as err:
        return [f"{err}; {rebuild}"]
    for i, (want, got) in enumerate(zip(spans, listed, strict=False)):
        if want != got:
            return [
                f"{index}: line {i + 1} says record {i} is at byte {got[0]} ({got[1]} bytes), "
                f"the shard has it at byte {want[0]} ({want[1]} bytes); {rebuild}"
            ]
    if len(listed) != len(spans):
        return [f"{index}: {len(listed)} lines for {len(spans)} records; {rebuild}"]
    return []


def verify_paths(
    paths: list[str], manifest: str | os.PathLike | None = None, compression: str | None = None
) -> list[ShardReport]:
    """Verify shards; with a manifest also check for missing and stray shards.

    Args:
      paths: shard files or directories (a directory means every shard the
        manifest lists, plus any ``*.tfrecord*`` file in it).
      manifest: ``manifest.json`` written by :mod:`helpers.convert`; when
        ``None`` and a directory holding one is given, that one is used.
      compression: ``None`` or ``"GZIP"``.

    Returns:
      One report per shard (plus pseudo-reports for missing / stray shards, and
      for a class-counts file that is missing, changed or does not match the manifest).
    """
    files: list[Path] = []
    manifest_data: Manifest | None = None
    folders_without_manifest = []
    for p in map(Path, paths):
        if p.is_dir():
            if manifest is None and (p / MANIFEST_NAME).exists():
                manifest = p / MANIFEST_NAME
            found = sorted(q for q in p.iterdir() if is_shard_name(q.name))
            if found and not (p / MANIFEST_NAME).exists():
                folders_without_manifest.append(p)
            files.extend(found)
        else:
            files.append(p)
    if manifest is not None:
        manifest_data = read_manifest(manifest)
        compression = compression or manifest_data.compression
    entries = {s.file: s for s in (manifest_data.shards if manifest_data else [])}
    reports: list[ShardReport] = []
    seen = set()
    for f in files:
        seen.add(f.name)
        entry = entries.get(f.name)
        if manifest_data is not None and entry is None:
            reports.append(
                ShardReport(str(f), errors=[f"{f}: not listed in the manifest (a stray shard?)"])
            )
            continue
        if entry is None:
            entry = _index_beside(f)
        reports.append(verify(f, entry, compression))
    if manifest is None:
        reports += [_no_manifest(folder) for folder in folders_without_manifest]
    if manifest_data is not None:
        base = Path(manifest).parent
        for name in entries:
            if name not in seen:
                reports.append(
                    ShardReport(
                        str(base / name),
                        errors=[f"{base / name}: listed in the manifest but missing"],
                    )
                )
        reports += _check_class_counts(manifest_data)
        reports += _check_totals_and_labels(manifest_data, Path(manifest))
    return reports


def _index_beside(shard: Path) -> dict[str, Any] | None:
    """A shard without a manifest entry: check the offset index beside it, if there is one."""
    index = index_name(str(shard))
    return {"index": os.path.basename(index)} if os.path.exists(index) else None


def _no_manifest(folder: Path) -> ShardReport:
    """A folder given without a manifest: unfinished, or not the converter's output."""
    from helpers.convert.resume import JOURNAL_NAME  # only here: verify never needs Pillow

    if (folder / JOURNAL_NAME).exists():
        why = (
            f"it holds an unfinished conversion ({JOURNAL_NAME}); rerun the same "
            "`python -m helpers.convert` command to finish it"
        )
    else:
        why = (
            "it is not a finished converter output, so only each record's CRC (and an "
            "index beside a shard) could be checked; to check shards written by another "
            "tool, name the files instead of the folder, or pass --manifest"
        )
    return ShardReport(
        str(folder / MANIFEST_NAME),
        errors=[f"{folder}: no {MANIFEST_NAME}: {why}"],
        kind="manifest",
    )


def _check_totals_and_labels(manifest: Manifest, path: Path) -> list[ShardReport]:
    """The totals stored in manifest.json against its shard list, and labels.txt against
    its classes (neither has a digest of its own)."""
    errors = []
    for key, stored in manifest.stored_totals.items():
        derived = getattr(manifest, key)
        if stored != derived:
            errors.append(
                f"{path}: {key} is {stored!r} but its classes and shards add up to "
                f"{derived!r} (edited by hand?); rerun the converter with --overwrite"
            )
    reports = []
    if errors:
        reports.append(ShardReport(str(path), errors=errors, kind="manifest"))
    labels = path.parent / manifest.label_map
    want = "".join(text + "\n" for text in manifest.classes)
    problem = ""
    if not labels.exists():
        problem = "missing"
    elif labels.read_bytes() != want.encode("utf-8"):
        problem = "does not list the manifest's classes, one per line, in label order"
    if problem:
        reports.append(
            ShardReport(
                str(labels),
                errors=[
                    f"{labels}: {problem}; restore it from the manifest's 'classes' (line i is "
                    "the class text of label i) or rerun the converter with --overwrite"
                ],
                kind="label map",
            )
        )
    return reports


def _check_class_counts(manifest: Manifest) -> list[ShardReport]:
    """Version 3: the sidecar against the sha256, classes and counts the manifest records."""
    if manifest.format_version < 3 or manifest.location is None:
        return []  # versions 1 and 2 hold the counts inline, checked with the manifest
    try:
        manifest.shard_class_counts()
    except ManifestError as err:
        path = os.path.join(manifest.location, manifest.class_counts_file)
        size = os.path.getsize(path) if os.path.isfile(path) else 0
        return [ShardReport(path, bytes=size, errors=[str(err)], kind="class counts")]
    return []
