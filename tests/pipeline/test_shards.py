"""helpers.pipeline.shards: resolving sources, missing / stray / GZIP shards."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path

import pytest
import tensorflow as tf

from helpers import pipeline as P

from .support import IMAGE_SIZE, NUM_SHARDS, PER_SHARD, _write_shard


def test_resolve_shards_inputs(dataset_dir: dict, tmp_path: Path) -> None:
    root = dataset_dir["dir"]
    from_dir = P.resolve_shards(root)
    assert len(from_dir.files) == NUM_SHARDS and from_dir.num_records == 24
    assert from_dir.classes == ["c0", "c1", "c2"] and from_dir.num_classes == 3
    assert P.resolve_shards(root / "manifest.json").files == from_dir.files
    pattern = P.resolve_shards(str(root / "train-*.tfrecord"))
    assert pattern.files == from_dir.files and pattern.num_records is None
    with pytest.raises(FileNotFoundError, match="no file matches"):
        P.resolve_shards(str(root / "nothing-*.tfrecord"))
    odd = tmp_path / "a[1].tfrecord"  # a glob character, listed literally
    _write_shard(odd, dataset_dir["payloads"][0][:2])
    assert P.resolve_shards(tmp_path).files == [str(odd)]
    assert len(list(P.make_dataset(tmp_path, 1, 16, num_classes=3, training=False))) == 2


def test_missing_and_stray_shards(dataset_dir: dict, tmp_path: Path, caplog) -> None:
    root = tmp_path / "set"
    root.mkdir()
    for p in dataset_dir["dir"].iterdir():
        (root / p.name).write_bytes(p.read_bytes())
    (root / "train-00009-of-00010.tfrecord").write_bytes(
        (root / "train-00000-of-00003.tfrecord").read_bytes()
    )
    with caplog.at_level(logging.WARNING, logger="helpers.pipeline"):
        shards = P.resolve_shards(root)
    assert "train-00009-of-00010.tfrecord" in caplog.text and "not in manifest" in caplog.text
    assert len(shards.files) == NUM_SHARDS
    (root / "train-00001-of-00003.tfrecord").unlink()
    with pytest.raises(FileNotFoundError, match="train-00001-of-00003.tfrecord.*missing"):
        P.make_dataset(root, 4, IMAGE_SIZE)


def test_gzip_shard_read_as_uncompressed_is_named(dataset_dir: dict, tmp_path: Path) -> None:
    path = tmp_path / "z.tfrecord.gz"
    _write_shard(path, dataset_dir["payloads"][0], compression="GZIP")
    with pytest.raises(ValueError, match="GZIP"):
        P.make_dataset(path, 4, IMAGE_SIZE, num_classes=3)
    ds = P.make_dataset(path, 4, IMAGE_SIZE, num_classes=3, compression="GZIP", training=False)
    assert len(list(ds)) == 2
    plain = tmp_path / "plain.tfrecord"
    _write_shard(plain, dataset_dir["payloads"][0])
    with pytest.raises(ValueError, match="not GZIP"):
        P.make_dataset(plain, 4, IMAGE_SIZE, num_classes=3, compression="GZIP")
    assert gzip.decompress(path.read_bytes())[:8] == plain.read_bytes()[:8]


def test_resolve_shards_expands_the_home_folder(dataset_dir: dict, monkeypatch) -> None:
    home = dataset_dir["dir"].parent
    monkeypatch.setenv("HOME", str(home))
    shards = P.resolve_shards("~/" + dataset_dir["dir"].name)
    assert shards.files[0].startswith(str(home)) and shards.num_records == NUM_SHARDS * PER_SHARD
    assert P.resolve_shards([f"~/{dataset_dir['dir'].name}/{Path(shards.files[0]).name}"]).files


def test_an_interrupted_conversion_is_refused_not_read_partially(
    dataset_dir: dict, tmp_path: Path
) -> None:
    root = tmp_path / "half"
    root.mkdir()
    for p in dataset_dir["dir"].iterdir():
        if p.name != "manifest.json":
            (root / p.name).write_bytes(p.read_bytes())
    (root / ".convert-journal.jsonl").write_text("{}\n")
    with pytest.raises(FileNotFoundError, match="interrupted conversion.*rerun the same"):
        P.make_dataset(root, 4, IMAGE_SIZE, num_classes=3)


def test_manifest_count_gives_len_and_a_short_shard_fails(
    dataset_dir: dict, tmp_path: Path
) -> None:
    ds = P.make_dataset(dataset_dir["dir"], 4, IMAGE_SIZE, training=False)
    assert int(ds.cardinality()) == NUM_SHARDS * PER_SHARD // 4  # known before reading
    root = tmp_path / "short"
    root.mkdir()
    for p in dataset_dir["dir"].iterdir():
        (root / p.name).write_bytes(p.read_bytes())
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["shards"][0]["records"] += 1  # the manifest promises a record the shard lacks
    (root / "manifest.json").write_text(json.dumps(manifest))
    ds = P.make_dataset(root, 4, IMAGE_SIZE, training=False, check=False)
    with pytest.raises(tf.errors.OpError, match="expected to contain"):
        list(ds)
