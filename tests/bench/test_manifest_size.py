"""helpers.bench.manifest_size: the ImageNet-shaped manifest figure, measured on synthetic results."""

from __future__ import annotations

from helpers.bench import manifest_size


def test_synthetic_results_look_like_a_conversion():
    plan, results = manifest_size.synthetic_conversion(shards=4, classes=50, records_per_shard=40)
    assert [r.name for r in results] == plan.shard_names and len(plan.scan.classes) == 50
    for r in results:
        assert sum(r.class_counts.values()) == r.records == 40 and len(r.sha256) == 64
        assert list(r.class_counts) == sorted(r.class_counts)  # label order, like write_shard's
    again = manifest_size.synthetic_conversion(shards=4, classes=50, records_per_shard=40)[1]
    assert [r.class_counts for r in again] == [r.class_counts for r in results]  # seeded


def test_measure_reports_both_files_and_the_inline_baseline(tmp_path):
    result = manifest_size.measure_manifest_size(
        workdir=str(tmp_path), shards=16, classes=200, records_per_shard=250
    )
    assert result["records"] == 16 * 250 and result["shards"] == 16
    # ~180 classes per shard: inline counts cost far more than the sidecar's dense rows
    assert result["inline_manifest_bytes"] > result["manifest_bytes"] + result["class_counts_bytes"]
    assert result["write_s"] >= 0 and list(tmp_path.iterdir()) == []  # nothing left behind
