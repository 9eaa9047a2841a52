"""helpers.manifest: the typed manifest -- round trip, dict access, validation, versions, sidecar."""

from __future__ import annotations

import hashlib
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


PER_SHARD = [{"a": 10}, {"a": 10, "b": 1}, {"a": 10, "b": 2}]  # _manifest()'s, zeros left out


def test_round_trip_is_byte_identical_and_reads_like_the_json(tmp_path):
    manifest = _manifest()
    path = M.write_manifest_file(manifest, tmp_path)
    back = M.read_manifest(tmp_path)  # the folder or the file
    assert back == manifest and M.read_manifest(path) == manifest
    assert back.to_json() == (tmp_path / "manifest.json").read_text()
    data = json.loads((tmp_path / "manifest.json").read_text())
    assert dict(back) == data and back["shards"][1]["file"] == back.shards[1].file
    assert data["format_version"] == M.FORMAT_VERSION == 3
    assert data["num_records"] == 33 and data["num_shards"] == 3 and data["total_bytes"] == 6000
    assert data["class_counts"] == {"a": 30, "b": 3, "empty": 0}
    assert data["ignored"] == {"count": 2, "by_reason": {"hidden": 2}, "entries": manifest.ignored}
    assert back.get("compression") is None and "record_sha256" not in data["shards"][0]


def test_per_shard_class_counts_live_in_the_sidecar(tmp_path):
    manifest = _manifest()
    M.write_manifest_file(manifest, tmp_path)
    data = json.loads((tmp_path / "manifest.json").read_text())
    sidecar = tmp_path / M.CLASS_COUNTS_NAME
    assert all("class_counts" not in s for s in data["shards"])
    assert data["shard_class_counts"] == {
        "file": "class_counts.json",
        "sha256": hashlib.sha256(sidecar.read_bytes()).hexdigest(),
    }
    assert json.loads(sidecar.read_text())["shards"] == {
        s.file: [10, i, 0] for i, s in enumerate(manifest.shards)
    }
    expected = {s.file: counts for s, counts in zip(manifest.shards, PER_SHARD, strict=True)}
    assert manifest.shard_class_counts() == expected  # in memory
    back = M.read_manifest(tmp_path)
    assert back.shard_counts is None  # not read until asked for
    assert back.shard_class_counts() == expected and back.class_counts == manifest.class_counts
    copy = tmp_path / "copy"
    copy.mkdir()
    M.write_manifest_file(back, copy)  # a manifest read from disk writes its sidecar too
    assert sidecar.read_bytes() == (copy / M.CLASS_COUNTS_NAME).read_bytes()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda p: p.unlink(), "class_counts.json: missing .*restore it"),
        (lambda p: p.write_bytes(p.read_bytes().replace(b"[10,1,0]", b"[10,0,1]")), "sha256 differs"),
        (lambda p: p.write_text("{"), "sha256 differs"),
    ],
)  # fmt: skip
def test_a_missing_or_changed_sidecar_names_the_file_and_what_to_do(tmp_path, damage, message):
    M.write_manifest_file(_manifest(), tmp_path)
    damage(tmp_path / M.CLASS_COUNTS_NAME)
    back = M.read_manifest(tmp_path)  # the manifest alone still reads
    assert back.num_records == 33 and back.class_counts == {"a": 30, "b": 3, "empty": 0}
    with pytest.raises(M.ManifestError, match=message) as err:
        back.shard_class_counts()
    assert str(tmp_path / M.CLASS_COUNTS_NAME) in str(err.value)


def test_a_sidecar_that_disagrees_with_its_manifest_is_refused(tmp_path):
    M.write_manifest_file(_manifest(), tmp_path)
    path = tmp_path / "manifest.json"
    data = json.loads(path.read_text())
    data["shards"][0]["records"] = 11  # the manifest edited, the sidecar's digest kept
    path.write_text(json.dumps(data))
    with pytest.raises(M.ManifestError, match="10 records counted by class, the manifest says 11"):
        M.read_manifest(tmp_path).shard_class_counts()


def test_size_grows_with_shards_not_records_nor_classes(tmp_path):
    def manifest(records: int, classes: int) -> M.Manifest:
        names = [f"n{i:08d}" for i in range(classes)]
        entries = [
            M.ShardEntry(f"train-{i:05d}-of-01024.tfrecord", records, records * 110_000,
                         f"{i:064x}", {n: records // classes for n in names},
                         f"train-{i:05d}-of-01024.idx", f"{i + 7:064x}")
            for i in range(1024)
        ]  # fmt: skip
        return M.Manifest("train", "/data", names, {}, {}, entries)

    small, large = manifest(10, 10), manifest(1_000_000, 10)
    assert len(large.to_json()) - len(small.to_json()) < 1024 * 16  # a few digits per shard
    many = manifest(1_000_000, 1000)  # every shard holds every class: all inline was ~30 MB
    assert len(many.to_json()) - len(large.to_json()) < 1000 * 64  # names + totals per class
    assert len(many.to_json()) < 1_000_000


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not valid JSON"),
        ("[]", "expected a JSON object"),
        ('{"format_version": 9, "classes": [], "shards": []}', "newer converter: update"),
        ('{"classes": [], "shards": []}', "format_version None"),
        ('{"format_version": 2, "classes": [], "shards": {}}', "'shards' list"),
        ('{"format_version": 2, "classes": [], "shards": [{"file": "x"}]}', "shards[0] has no valid 'records'"),
        ('{"format_version": 3, "classes": ["a"], "shards": []}', "expected 'class_counts' with every class"),
        ('{"format_version": 3, "classes": ["a"], "class_counts": {"a": 1}, "shards": []}',
         "expected 'shard_class_counts' with a 'file'"),
        ('{"format_version": 3, "classes": [], "class_counts": {}, "shards": [], '
         '"shard_class_counts": {"file": "../x.json", "sha256": "' + "0" * 64 + '"}}',
         "a 'file' name beside the manifest"),
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


def _older(version: int) -> dict:
    """_manifest() as an older converter wrote it: per-shard class counts inline, no sidecar."""
    old = json.loads(_manifest().to_json())
    old["format_version"] = version
    del old["shard_class_counts"]
    for s, counts in zip(old["shards"], PER_SHARD, strict=True):
        s["class_counts"] = counts
        if version == 1:
            del s["index"], s["index_sha256"]
            s["record_sha256"] = ["0" * 64] * s["records"]
    return old


def test_version_2_is_read_with_its_inline_class_counts(tmp_path, caplog):
    (tmp_path / "manifest.json").write_text(json.dumps(_older(2)))
    with caplog.at_level(logging.WARNING):
        back = M.read_manifest(tmp_path)
    assert not caplog.text  # nothing is missing: no warning
    assert back.format_version == 2 and back.shards[0].class_counts == {"a": 10}
    assert back.shard_class_counts() == {
        s.file: counts for s, counts in zip(back.shards, PER_SHARD, strict=True)
    }
    assert back.class_counts == {"a": 30, "b": 3, "empty": 0}
    assert back.to_dict() == _older(2)  # the same keys come back, no sidecar named
    assert not (tmp_path / M.CLASS_COUNTS_NAME).exists()


def test_version_1_is_read_with_a_warning(tmp_path, caplog):
    (tmp_path / "manifest.json").write_text(json.dumps(_older(1)))
    with caplog.at_level(logging.WARNING):
        back = M.read_manifest(tmp_path)
    assert back.num_records == 33 and back.shards[0].index is None
    assert back.shard_class_counts()[back.shards[2].file] == {"a": 10, "b": 2}
    assert "format_version 1" in caplog.text and "helpers.records index" in caplog.text
