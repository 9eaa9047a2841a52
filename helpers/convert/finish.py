"""Phase 4, finish: the label map, the class counts and the manifest (last: its presence means done).

:func:`build_manifest` is pure (plan + shard results -> :class:`helpers.manifest.Manifest`);
:func:`write_manifest` writes ``labels.txt``, the per-shard class counts
(``class_counts.json``) and then ``manifest.json``, each atomically, and fsyncs the
folder. Both produce the same bytes whichever engine wrote the shards.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from helpers.class_counts import ShardClassCounts
from helpers.convert.planning import Plan
from helpers.convert.settings import LABELS_NAME, ConvertError, display_name
from helpers.convert.shards import ShardResult
from helpers.image_keys import IMAGE_KEYS
from helpers.manifest import MANIFEST_NAME, Manifest, ShardEntry, write_manifest_file
from helpers.util import atomic_write, fsync_dir

__all__ = ["build_manifest", "summary", "write_manifest"]


def _warnings(plan: Plan, manifest_counts: dict[str, int]) -> list[str]:
    warnings = []
    for label, text in enumerate(plan.scan.classes):
        if manifest_counts.get(text, 0) == 0:
            warnings.append(
                f"class {text!r} (label {label}) has no usable images; kept in the label map "
                "so the other labels do not shift"
            )
    non_utf8 = plan.scan.non_utf8_names
    if non_utf8:
        warnings.append(
            f"{len(non_utf8)} name(s) are not valid UTF-8 (shown with \\xNN escapes; "
            "image/filename keeps the exact bytes)"
        )
    return warnings


def build_manifest(plan: Plan, results: Iterable[ShardResult]) -> Manifest:
    """The manifest of a conversion, from its plan and every shard's result (any order).

    Raises:
      ConvertError: a planned shard has no result (it was not written).
    """
    by_index = {r.index: r for r in results}
    missing = [t.name for t in plan.tasks if t.index not in by_index]
    if missing:
        raise ConvertError(f"no result for {len(missing)} planned shard(s), e.g. {missing[0]}")
    shards = [by_index[t.index] for t in plan.tasks]
    entries = [
        ShardEntry(r.name, r.records, r.bytes, r.sha256, None, r.index_name, r.index_sha256)
        for r in shards
    ]
    scan = plan.scan
    per_shard = ShardClassCounts.from_shards(scan.classes, {r.name: r.class_counts for r in shards})
    return Manifest(
        split=plan.settings.split_name,
        dataset_path=display_name(os.path.realpath(scan.dataset_path)),
        classes=list(scan.classes),
        settings=plan.settings.as_manifest(),
        features=dict(IMAGE_KEYS),
        shards=entries,
        skipped=sorted(scan.skipped + [s for r in shards for s in r.skipped], key=_path),
        converted=[c for r in shards for c in r.converted],
        ignored=sorted(scan.ignored, key=_path),
        non_utf8_names=list(scan.non_utf8_names),
        warnings=_warnings(plan, per_shard.totals()),
        label_map=LABELS_NAME,
        shard_counts=per_shard,
    )


def _path(entry: dict[str, str]) -> str:
    return entry["path"]


def write_manifest(
    plan: Plan, results: Iterable[ShardResult], output_dir: str | os.PathLike
) -> Manifest:
    """Write ``labels.txt``, ``class_counts.json`` and then ``manifest.json`` (phase 4).

    Returns:
      The manifest written.
    """
    output = os.fspath(output_dir)
    manifest = build_manifest(plan, results)
    atomic_write(os.path.join(output, LABELS_NAME), "".join(t + "\n" for t in manifest.classes))
    write_manifest_file(manifest, output)
    fsync_dir(output)
    return manifest


def summary(manifest: Manifest, output: str, seconds: float, kept: int = 0) -> str:
    """The few lines the converter prints when done."""
    n = manifest.num_records
    mb = manifest.total_bytes / 1e6
    rate = f"{n / seconds:.0f} img/s, {mb / seconds:.1f} MB/s" if seconds > 0 else ""
    empty = sum(1 for c in manifest.class_counts.values() if c == 0)
    resumed = f" (kept {kept} shard(s) completed by an interrupted run)" if kept else ""
    lines = [
        f"wrote {manifest.num_shards} shard(s){resumed}, {n} images, {mb:.1f} MB to "
        f"{display_name(output)} in {seconds:.1f} s ({rate})",
        f"classes {manifest.num_classes} ({empty} empty); converted "
        f"{len(manifest.converted)}; skipped {len(manifest.skipped)}; ignored "
        f"{len(manifest.ignored)}",
    ]
    for s in manifest.skipped[:20]:
        lines.append(f"  skipped {s['path']}: {s['reason']}")
    if len(manifest.skipped) > 20:
        lines.append(f"  ... {len(manifest.skipped) - 20} more in {MANIFEST_NAME}")
    return "\n".join(lines)
