"""helpers.manifest: the typed manifest -- round trip, dict access, validation, versions."""

from __future__ import annotations

import json
import logging

import pytest

from helpers import manifest as M


def _manifest(shards: int = 3) -> M.Manifest:
    entries = [
        M.ShardEntry(f"train-{i:05d}-of-{shards:05d}.tfrecord", 10 + i, 1000 * (i + 1), f"{i:064x}",
                     {"b": i, "a": 10}, f"train-{i:05d}-of-{shards:05d}.idx", f"{i + 7:064x}")
        for i in range(shards)
    ]  # fmt: skip
    return M.Manifest(
        split="train",
        dataset_path="/data/images",
        classes=["a", "b", "empty"],
        settings={"size_per_record": 4000, "seed": 0},
        features={"encoded": "image/encoded"},
        shards=entries,
        skipped=[{"path": "a/bad.jpg", "reason": "empty file (0 bytes)"}],
        ignored=[{"path": "README", "reason": "hidden"}, {"path": "x", "reason": "hidden"}],
    )


def test_round_trip_is_byte_identical_and_reads_like_the_json(tmp_path):
    manifest = _manifest()
    path = M.write_manifest_file(manifest, tmp_path)
    back = M.read_manifest(tmp_path)  # the folder or the file
    assert back == manifest and M.read_manifest(path) == manifest
    assert back.to_json() == (tmp_path / "manifest.json").read_text()
    data = json.loads((tmp_path / "manifest.json").read_text())
    assert dict(back) == data and back["shards"][1]["file"] == back.shards[1].file
    assert data["format_version"] == M.FORMAT_VERSION == 2
    assert data["num_records"] == 33 and data["num_shards"] == 3 and data["total_bytes"] == 6000
    assert data["class_counts"] == {"a": 30, "b": 3, "empty": 0}
    assert data["ignored"] == {"count": 2, "by_reason": {"hidden": 2}, "entries": manifest.ignored}
    assert back.get("compression") is None and "record_sha256" not in data["shards"][0]


def test_size_grows_with_shards_not_records(tmp_path):
    small, large = _manifest(1024), _manifest(1024)
    large = M.Manifest(**{**small.__dict__, "shards": [
        M.ShardEntry(s.file, s.records * 1000, s.bytes * 1000, s.sha256, {"a": 10**6},
                     s.index, s.index_sha256) for s in small.shards]})  # fmt: skip
    assert len(large.to_json()) - len(small.to_json()) < 1024 * 16  # a few digits per shard
    assert len(large.to_json()) < 1_000_000


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not valid JSON"),
        ("[]", "expected a JSON object"),
        ('{"format_version": 9, "classes": [], "shards": []}', "newer converter: update"),
        ('{"classes": [], "shards": []}', "format_version None"),
        ('{"format_version": 2, "classes": [], "shards": {}}', "'shards' list"),
        ('{"format_version": 2, "classes": [], "shards": [{"file": "x"}]}', "shards[0] has no valid 'records'"),
    ],
)  # fmt: skip
def test_bad_manifests_name_the_file_and_what_to_do(tmp_path, text, message):
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(M.ManifestError, match="manifest.json") as err:
        M.read_manifest(tmp_path)
    assert message in str(err.value)


def test_missing_manifest(tmp_path):
    with pytest.raises(FileNotFoundError, match="conversion finished"):
        M.read_manifest(tmp_path)


def test_version_1_is_read_with_a_warning(tmp_path, caplog):
    old = json.loads(_manifest().to_json())
    old["format_version"] = 1
    for s in old["shards"]:
        del s["index"], s["index_sha256"]
        s["record_sha256"] = ["0" * 64] * s["records"]
    (tmp_path / "manifest.json").write_text(json.dumps(old))
    with caplog.at_level(logging.WARNING):
        back = M.read_manifest(tmp_path)
    assert back.num_records == 33 and back.shards[0].index is None
    assert "format_version 1" in caplog.text and "helpers.records index" in caplog.text
