"""helpers.bench.scale: the scale figures are measured on real conversions (no timing asserted)."""

from __future__ import annotations

import pytest

from helpers.bench import scale as scale_probe


def test_make_images_writes_class_folders(tmp_path):
    total = scale_probe.make_images(tmp_path, 25, classes=5, distinct=7)
    files = sorted(tmp_path.glob("class_*/*.jpg"))
    assert len(files) == 25 and len({p.parent for p in files}) == 5
    assert total == sum(p.stat().st_size for p in files)
    assert files[0].read_bytes()[:3] == b"\xff\xd8\xff"


@pytest.mark.slow
def test_measure_scale_at_a_tiny_size(tmp_path):
    result = scale_probe.measure_scale(
        n=60, factor=3, shards=4, workers=1, workdir=tmp_path, startup_runs=1
    )
    small, large = result["runs"][60], result["runs"][180]
    assert small["images"] == 60 and large["images"] == 180
    assert 4 <= small["shards"] <= 5 and 4 <= large["shards"] <= 5  # greedy packing: ~4
    # the manifest holds per-shard facts only: three times the records, the same size a shard
    per_shard = [r["manifest_bytes"] / r["shards"] for r in (small, large)]
    assert per_shard[1] / per_shard[0] < 1.05
    assert small["peak_rss"] > 0 and large["make_dataset"]["build_s"] > 0
