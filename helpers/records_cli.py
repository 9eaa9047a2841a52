"""``python -m helpers.records``: verify, inspect, count and index shards from the shell.

::

    python -m helpers.records verify PATH... [--manifest manifest.json]
    python -m helpers.records inspect PATH [--limit N]
    python -m helpers.records count DIR
    python -m helpers.records index SHARD...
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from typing import Any

from helpers.records import RecordError, load_features, read_records

__all__ = ["inspect_shard", "main"]

#: True under ``python -m helpers.records``: load TensorFlow's protobuf modules only.
LIGHT = False


def _describe_value(kind: str | None, values: list[Any]) -> str:
    if kind is None:
        return "(empty)"
    shown = []
    for v in values[:4]:
        if isinstance(v, bytes):
            shown.append(repr(v[:24]) + (f"... ({len(v)} bytes)" if len(v) > 24 else ""))
        else:
            shown.append(repr(v))
    more = f" ... ({len(values)} values)" if len(values) > 4 else ""
    return "[" + ", ".join(shown) + "]" + more


def inspect_shard(
    path: str | os.PathLike, limit: int = 1, compression: str | None = None
) -> dict[str, Any]:
    """Summarise a shard: record count, feature names / kinds / lengths, sample values.

    Args:
      path: the shard.
      limit: how many sample records to describe.
      compression: ``None`` or ``"GZIP"``.

    Returns:
      ``{"path", "records", "bytes", "features": {name: {"kind", "lengths"}}, "samples": [...]}``.
    """
    module = load_features(light=LIGHT)
    Example, feature_kind = module.Example, module.feature_kind

    features: dict[str, dict[str, Any]] = {}
    samples: list[dict[str, str]] = []
    count = 0
    for data in read_records(path, compression=compression):
        example = Example()
        example.ParseFromString(data)
        sample = {}
        for key, feat in sorted(example.features.feature.items()):
            kind = feature_kind(feat)
            values = list(getattr(feat, kind).value) if kind else []
            info = features.setdefault(key, {"kind": kind, "lengths": set()})
            info["lengths"].add(len(values))
            if count < limit:
                sample[key] = _describe_value(kind, values)
        if count < limit:
            samples.append(sample)
        count += 1
    for info in features.values():
        info["lengths"] = sorted(info["lengths"])
    return {
        "path": os.fspath(path),
        "records": count,
        "bytes": os.path.getsize(path),
        "features": features,
        "samples": samples,
    }


def _guess_compression(path: str, given: str | None) -> str | None:
    if given:
        return None if given.lower() == "none" else given.upper()
    return "GZIP" if path.endswith((".gz", ".gzip")) else None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.records",
        description="Check, describe, count and index TFRecord shards (no TensorFlow needed).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser(
        "verify",
        help="check every CRC (and the manifest's counts/checksums, and its class_counts.json)",
    )
    v.add_argument("paths", nargs="+", help="shard files or a converter output directory")
    v.add_argument("--manifest", help="manifest.json (default: the one in a given directory)")
    v.add_argument(
        "--compression", help="GZIP or none (default: from the manifest or the file name)"
    )
    i = sub.add_parser("inspect", help="record count, feature names/types and a sample")
    i.add_argument("path")
    i.add_argument("--limit", type=int, default=1, help="sample records to show (default 1)")
    i.add_argument("--compression", help="GZIP or none (default: from the file name)")
    c = sub.add_parser("count", help="records per shard and in total, from the manifest")
    c.add_argument("path", help="a converter output directory (or its manifest.json)")
    c.add_argument("--per-shard", action="store_true", help="one line per shard too")
    x = sub.add_parser(
        "index", help="write the offset index (SHARD -> .idx) of shards written by other tools"
    )
    x.add_argument("shards", nargs="+", help="uncompressed TFRecord files")
    return parser


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    command = {"verify": _verify, "inspect": _inspect, "count": _count, "index": _index}
    return command[args.command](args)


def _verify(args: argparse.Namespace) -> int:
    from helpers.manifest import ManifestError
    from helpers.verify import verify_paths

    comp = args.compression
    comp = comp.upper() if comp and comp.lower() != "none" else None
    try:
        reports = verify_paths(args.paths, args.manifest, comp)
    except (OSError, ManifestError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not reports:
        print("error: no shards found in " + " ".join(args.paths), file=sys.stderr)
        return 2
    bad = [r for r in reports if not r.ok]
    shards = [r for r in reports if r.kind == "shard"]
    for r in reports:
        status = "ok " if r.ok else "BAD"
        facts = f"{r.records} records, {r.bytes} bytes" if r.kind == "shard" else r.kind
        print(f"{status} {r.path}: {facts}")
        for e in r.errors:
            print(f"    {e}")
    total = sum(r.records for r in shards)
    print(f"{len(shards)} shards, {total} records, {len(bad)} with problems")
    return 1 if bad else 0


def _inspect(args: argparse.Namespace) -> int:
    path = args.path
    try:
        info = inspect_shard(path, args.limit, _guess_compression(path, args.compression))
    except (OSError, RecordError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    out = io.StringIO()
    print(f"{info['path']}: {info['records']} records, {info['bytes']} bytes", file=out)
    for key, feat in sorted(info["features"].items()):
        print(f"  {key:<24} {str(feat['kind']):<11} lengths {feat['lengths']}", file=out)
    for n, sample in enumerate(info["samples"]):
        print(f"record {n}:", file=out)
        for key, desc in sample.items():
            print(f"  {key} = {desc}", file=out)
    print(out.getvalue(), end="")
    return 0


def _count(args: argparse.Namespace) -> int:
    """Answer from the manifest: no shard is opened."""
    from helpers.manifest import ManifestError, read_manifest

    try:
        manifest = read_manifest(args.path)
    except (OSError, ManifestError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.per_shard:
        for s in manifest.shards:
            print(f"{s.records:>10} {s.file}")
    print(f"{manifest.num_records} records in {manifest.num_shards} shards")
    return 0


def _index(args: argparse.Namespace) -> int:
    from helpers.record_index import write_index

    status = 0
    for shard in args.shards:
        if os.path.isdir(shard):
            print(f"error: {shard}: a folder; name its shard files ({shard}/*.tfrecord)",
                  file=sys.stderr)  # fmt: skip
            status = 1
            continue
        if not os.path.exists(shard):
            print(f"error: {shard}: no such file; check the path", file=sys.stderr)
            status = 1
            continue
        try:
            target = write_index(shard)
        except (OSError, ValueError) as err:  # RecordError is a ValueError
            print(f"error: {err}", file=sys.stderr)
            status = 1
            continue
        print(f"wrote {target}")
    return status
