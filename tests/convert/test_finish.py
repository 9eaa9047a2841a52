"""helpers.convert.finish: the manifest of an ImageNet-shaped conversion stays small; write order."""

from __future__ import annotations

import json

import pytest

from helpers import convert as C
from helpers import manifest as M
from helpers.bench.manifest_size import IMAGENET_SHAPE, synthetic_conversion


@pytest.fixture(scope="module")
def imagenet_shaped():
    """1,024 synthetic shard results of 1,250 records over 1,000 classes (no image written)."""
    return synthetic_conversion(**IMAGENET_SHAPE)


def test_1024_shards_of_1000_classes_keep_the_manifest_under_1_mb(tmp_path, imagenet_shaped):
    plan, results = imagenet_shaped
    assert 600 < sum(len(r.class_counts) for r in results) / len(results) < 800  # ~700 classes
    written = C.write_manifest(plan, results, tmp_path)
    assert (tmp_path / "manifest.json").stat().st_size < 1_000_000
    back = M.read_manifest(tmp_path)
    assert back == written and back.num_records == 1024 * 1250 and back.num_classes == 1000
    assert back.shard_class_counts() == {r.name: r.class_counts for r in results}
    assert sum(back.class_counts.values()) == 1024 * 1250
    rows = json.loads((tmp_path / M.CLASS_COUNTS_NAME).read_text())["shards"]
    assert list(rows) == plan.shard_names and all(len(row) == 1000 for row in rows.values())


def test_the_sidecar_is_written_before_the_manifest(tmp_path, monkeypatch):
    plan, results = synthetic_conversion(shards=3, classes=4, records_per_shard=5)
    order = []
    real = M.atomic_write

    def spy(path, data):
        order.append(path.rsplit("/", 1)[-1])
        real(path, data)

    monkeypatch.setattr(M, "atomic_write", spy)
    C.write_manifest(plan, results, tmp_path)
    assert order == [M.CLASS_COUNTS_NAME, M.MANIFEST_NAME]
    assert M.read_manifest(tmp_path).shard_class_counts() == {
        r.name: r.class_counts for r in results
    }


def test_results_in_any_order_give_the_same_files(tmp_path):
    plan, results = synthetic_conversion(shards=5, classes=7, records_per_shard=9, seed=3)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    C.write_manifest(plan, results, tmp_path / "a")
    C.write_manifest(plan, results[::-1], tmp_path / "b")
    for name in (M.MANIFEST_NAME, M.CLASS_COUNTS_NAME, "labels.txt"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
