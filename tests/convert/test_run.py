"""helpers.convert.convert: the whole run -- layout, manifest, both readers, reproducibility, the output folder."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os

import pytest
import tensorflow as tf
from convert_common import (
    K,
    files_of,
    make_dataset,
    png_bytes,
    run,
    write,
)
from PIL import Image

from helpers import convert as C
from helpers import records as R
from helpers.convert import output, scanning, shards
from helpers.manifest import read_manifest


def test_layout_manifest_and_both_readers(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=3, per_class=5)
    out = tmp_path / "out"
    manifest = run(ds, out, size_per_record=4000)

    names = sorted(p.name for p in out.iterdir())
    n = manifest["num_shards"]
    assert n > 1
    shard_names = [C.shard_name("train", i, n) for i in range(n)]
    assert names == sorted(
        shard_names
        + [R.index_name(s) for s in shard_names]
        + ["class_counts.json", "labels.txt", "manifest.json"]
    )
    assert C.shard_name("train", 0, n) == f"train-00000-of-{n:05d}.tfrecord"
    assert (out / "labels.txt").read_text().splitlines() == ["class_0", "class_1", "class_2"]
    assert manifest == json.loads((out / "manifest.json").read_text())
    assert manifest["classes"] == ["class_0", "class_1", "class_2"]
    assert manifest["class_counts"] == {"class_0": 5, "class_1": 5, "class_2": 5}
    assert (
        manifest["num_records"] == 15 and manifest["skipped"] == [] and manifest["converted"] == []
    )
    assert manifest["size_per_record"] == 4000
    assert manifest["features"] == dict(K)

    per_shard = manifest.shard_class_counts()
    assert per_shard == read_manifest(out).shard_class_counts()  # from class_counts.json
    total = 0
    for shard in manifest["shards"]:
        path = out / shard["file"]
        data = path.read_bytes()
        assert shard["bytes"] == len(data)
        assert shard["sha256"] == hashlib.sha256(data).hexdigest()
        payloads = list(R.read_records(path))
        tf_payloads = [r.numpy() for r in tf.data.TFRecordDataset(str(path))]
        assert payloads == tf_payloads and len(payloads) == shard["records"]
        index = (out / shard["index"]).read_text().splitlines()
        assert shard["index"] == R.index_name(shard["file"]) and len(index) == len(payloads)
        assert (
            shard["index_sha256"] == hashlib.sha256((out / shard["index"]).read_bytes()).hexdigest()
        )
        offset = 0
        for line, payload in zip(index, payloads, strict=True):  # "offset length", framed
            assert line == f"{offset} {len(payload) + 16}"
            offset += len(payload) + 16
        assert sum(per_shard[shard["file"]].values()) == shard["records"]
        total += shard["records"]
    assert total == 15

    spec = {
        K["encoded"]: tf.io.FixedLenFeature([], tf.string),
        K["format"]: tf.io.FixedLenFeature([], tf.string),
        K["label"]: tf.io.FixedLenFeature([], tf.int64),
        K["text"]: tf.io.FixedLenFeature([], tf.string),
        K["filename"]: tf.io.FixedLenFeature([], tf.string),
        K["height"]: tf.io.FixedLenFeature([], tf.int64),
        K["width"]: tf.io.FixedLenFeature([], tf.int64),
    }
    files = sorted(str(out / s["file"]) for s in manifest["shards"])
    for ex in tf.data.TFRecordDataset(files).map(lambda x: tf.io.parse_single_example(x, spec)):
        label = int(ex[K["label"]])
        assert 0 <= label < 3
        assert ex[K["text"]].numpy().decode() == f"class_{label}"
        rel = ex[K["filename"]].numpy().decode()
        assert rel.startswith(f"class_{label}/")
        # copied byte for byte, not re-encoded
        assert ex[K["encoded"]].numpy() == (ds / rel).read_bytes()
        assert ex[K["format"]].numpy() == b"jpeg"
        img = tf.io.decode_image(ex[K["encoded"]], channels=3, expand_animations=False)
        assert img.shape == (int(ex[K["height"]]), int(ex[K["width"]]), 3)

    reports = R.verify_paths([str(out)])
    assert len(reports) == n and all(r.ok for r in reports)


def test_reproducible_across_runs_and_worker_counts(tmp_path):
    """Byte-identical shards and manifest with 1 worker (in-process, full TF import) and 2
    spawned workers (which load only TF's protobuf modules)."""
    ds = make_dataset(tmp_path / "ds", classes=3, per_class=45, w=12, h=10)
    write(ds / "class_0" / "rgba.png", png_bytes(Image.new("RGBA", (9, 7), (10, 20, 30, 128))))
    write(ds / "class_2" / "bad.jpg", b"\xff\xd8\xff\xe0 not really")
    runs = {}
    for name, workers in (("a", 1), ("b", 2), ("c", 2)):
        run(ds, tmp_path / name, size_per_record=9_000, workers=workers)
        runs[name] = files_of(tmp_path / name)
    assert runs["a"] == runs["b"] == runs["c"]
    manifest = json.loads(runs["a"]["manifest.json"])
    assert manifest["num_shards"] > 4 and len(manifest["converted"]) == 1
    assert "workers" not in json.dumps(manifest["settings"])


def test_existing_output_refused_unless_overwrite(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=2, per_class=6)
    out = tmp_path / "out"
    first = run(ds, out, size_per_record=3000)
    before = files_of(out)
    with pytest.raises(C.ConvertError, match="already holds .*--overwrite"):
        run(ds, out)
    assert files_of(out) == before
    write(out / "notes.md", b"mine")  # unrelated files are left alone
    second = run(ds, out, overwrite=True)  # default size: one shard
    assert first["num_shards"] > 1 and second["num_shards"] == 1
    assert sorted(p.name for p in out.iterdir()) == [
        "class_counts.json",
        "labels.txt",
        "manifest.json",
        "notes.md",
        "train-00000-of-00001.idx",
        "train-00000-of-00001.tfrecord",
    ]
    assert all(r.ok for r in R.verify_paths([str(out)]))
    # only a stray shard (no manifest, no resume journal): still refused, with a hint
    (out / "manifest.json").unlink()
    with pytest.raises(C.ConvertError, match="no manifest and no resume journal"):
        run(ds, out)


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing", "does not exist"),
        ("inside", "inside the dataset path"),
        ("empty", "no class folders"),
        ("no_images", "no usable images"),
        ("all_too_big", "2 of them exceed --max-pixels 10: raise it"),
        ("zero_size", "--size-per-record must be a positive"),
        ("negative_size", "--size-per-record must be a positive"),
        ("bad_size", "not a byte count"),
        ("not_a_dir", "is not a folder"),
    ],
)
def test_bad_input_one_line_error(tmp_path, capsys, case, message):
    ds = tmp_path / "ds"
    out = tmp_path / "out"
    size = "1000"
    if case == "missing":
        pass
    elif case == "inside":
        make_dataset(ds, classes=1, per_class=1)
        out = ds / "shards"
    elif case == "empty":
        ds.mkdir()
        write(ds / "README.txt", b"x")
    elif case == "no_images":
        write(ds / "a" / "notes.txt", b"x")
        write(ds / "b" / "bad.jpg", b"")
    elif case == "not_a_dir":
        write(ds, b"file")
    elif case == "all_too_big":
        make_dataset(ds, classes=2, per_class=1)
        size = "1000 --max-pixels 10"
    else:
        make_dataset(ds, classes=1, per_class=1)
        size = {"zero_size": "0", "negative_size": "-5", "bad_size": "lots"}[case]
    status = C.main(
        ["--dataset-path", str(ds), "--output-path", str(out), "--size-per-record", *size.split(),
         "--quiet"]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert status == 2
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], captured.err
    assert "Traceback" not in captured.err
    assert not out.exists()  # nothing half-written


class _FullDisk:
    """A shard file whose n-th write fails with ENOSPC (a disk that fills up)."""

    def __init__(self, f, calls: dict, fail_at: int):
        self.f, self.calls, self.fail_at = f, calls, fail_at

    def write(self, data):
        self.calls["n"] += 1
        if self.calls["n"] == self.fail_at:
            raise OSError(errno.ENOSPC, "No space left on device")
        return self.f.write(data)


def _fill_disk_at(monkeypatch, write_number: int) -> dict:
    real_open = shards.atomic_open
    calls = {"n": 0}

    @contextlib.contextmanager
    def full_disk_open(path, mode="w"):
        with real_open(path, mode) as f:
            yield _FullDisk(f, calls, write_number) if mode == "wb" else f

    monkeypatch.setattr(shards, "atomic_open", full_disk_open)
    return calls


def _no_probe(*args):
    raise AssertionError("a resumed run over unchanged files probed a header")


def test_enospc_keeps_completed_shards_and_a_rerun_resumes(tmp_path, monkeypatch, capsys):
    ds = make_dataset(tmp_path / "ds", classes=2, per_class=5)
    ref = tmp_path / "ref"
    run(ds, ref, size_per_record=2000)
    out = tmp_path / "out"
    with monkeypatch.context() as m:
        _fill_disk_at(m, 4)
        with pytest.raises(C.ConvertError, match="no space left.*completed shard.*resume"):
            run(ds, out, size_per_record=2000)
    left = {p.name for p in out.iterdir()}
    assert "manifest.json" not in left and not any(".tmp-" in n for n in left)
    kept = {n for n in left if n.endswith(".tfrecord")}
    assert kept and all((out / n).read_bytes() == (ref / n).read_bytes() for n in kept)
    with monkeypatch.context() as m:  # unchanged files: their headers are not probed again
        m.setattr(scanning, "probe_batch", _no_probe)
        manifest = run(ds, out, size_per_record=2000)  # the same command again: resumes
    assert files_of(out) == files_of(ref) and manifest == json.loads(
        (ref / "manifest.json").read_text()
    )

    # nothing completed: everything this run wrote is removed again, one line on stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    write(empty / "keep.txt", b"mine")
    with monkeypatch.context() as m:
        _fill_disk_at(m, 1)
        status = C.main(["--dataset-path", str(ds), "--output-path", str(empty), "--size-per-record",
                         "2000", "--workers", "1", "--quiet"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        status == 1 and len(err) == 1 and "ENOSPC" in err[0] and "partial output removed" in err[0]
    )
    assert [p.name for p in empty.iterdir()] == ["keep.txt"]  # no shard, temp file or manifest


def test_unwritable_output(tmp_path, capsys):
    ds = make_dataset(tmp_path / "ds", classes=1, per_class=1)
    blocker = write(tmp_path / "afile", b"x")
    status = C.main(
        [
            "--dataset-path",
            str(ds),
            "--output-path",
            str(blocker / "out"),
            "--quiet",
            "--workers",
            "1",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "is a file" in err[0], err
    assert blocker.read_bytes() == b"x"


def test_output_creation_failure_is_one_line(tmp_path, monkeypatch, capsys):
    ds = make_dataset(tmp_path / "ds", classes=1, per_class=1)

    def refuse(path, *a, **k):
        raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))

    monkeypatch.setattr(output.os, "makedirs", refuse)
    status = C.main(
        [
            "--dataset-path",
            str(ds),
            "--output-path",
            str(tmp_path / "o"),
            "--quiet",
            "--workers",
            "1",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 1 and len(err) == 1, err
    assert err[0].startswith("error: cannot write") and "choose an --output-path" in err[0]


def test_stale_temp_files_removed(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=1, per_class=2)
    out = tmp_path / "out"
    write(out / ".train-00000-of-00001.tfrecord.tmp-999999", b"half a shard")
    write(out / ".manifest.json.tmp-999999", b"{")
    run(ds, out)
    assert sorted(p.name for p in out.iterdir()) == [
        "class_counts.json",
        "labels.txt",
        "manifest.json",
        "train-00000-of-00001.idx",
        "train-00000-of-00001.tfrecord",
    ]
