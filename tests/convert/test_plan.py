"""helpers.convert.planning: size-based shard boundaries, classes mixed by the keyed-hash order."""

from __future__ import annotations

from convert_common import (
    K,
    jpeg_bytes,
    make_dataset,
    records_of,
    run,
    write,
)


def test_size_based_plan_and_mixed_classes(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=4, per_class=12)
    big = write(ds / "class_1" / "zz_big.jpg", jpeg_bytes(400, 300, seed=99, quality=95))
    spr = 12_000
    manifest = run(ds, tmp_path / "out", size_per_record=spr)
    rows = records_of(tmp_path / "out")
    by_shard: dict[str, list[dict]] = {}
    for row in rows:
        by_shard.setdefault(row["_shard"], []).append(row)
    assert len(by_shard) == manifest["num_shards"] > 3
    for shard_rows in by_shard.values():
        sizes = [len(r[K["encoded"]]) for r in shard_rows]
        assert sum(sizes) <= spr or len(sizes) == 1  # an oversized image gets its own shard
    assert any(
        len(v) == 1 and v[0][K["filename"]] == b"class_1/zz_big.jpg" for v in by_shard.values()
    )
    assert big.stat().st_size > spr
    # classes are mixed inside shards, not written class by class
    for shard_rows in by_shard.values():
        if len(shard_rows) >= 6:
            assert len({r[K["label"]] for r in shard_rows}) > 1
    labels = [r[K["label"]] for r in rows]
    assert labels != sorted(labels)
