"""helpers.convert.scanning: which folders are classes, which files are candidates, odd names."""

from __future__ import annotations

import errno
import os

import pytest
from convert_common import (
    K,
    jpeg_bytes,
    make_dataset,
    records_of,
    run,
    write,
)

from helpers import convert as C
from helpers.convert import scanning


def test_ignored_entries_never_become_classes(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=2, per_class=2)
    write(ds / ".ipynb_checkpoints" / "x.jpg", jpeg_bytes())
    write(ds / "__MACOSX" / "class_0" / "._img.jpg", b"\0\5\26\7")
    write(ds / ".DS_Store", b"\0\0\0\1Bud1")
    write(ds / "README.txt", b"about this dataset")
    write(ds / "class_0" / ".DS_Store", b"\0\0\0\1Bud1")
    write(ds / "class_0" / "Thumbs.db", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 100)
    write(ds / "class_0" / "README.txt", b"notes")
    write(ds / "class_1" / ".ipynb_checkpoints" / "img-checkpoint.jpg", jpeg_bytes())
    write(ds / "class_1" / ".hidden.jpg", jpeg_bytes())
    os.mkfifo(ds / "class_1" / "a_fifo")
    manifest = run(ds, tmp_path / "out")
    assert manifest["classes"] == ["class_0", "class_1"]
    assert manifest["num_records"] == 4 and manifest["skipped"] == []
    ignored = {e["path"]: e["reason"] for e in manifest["ignored"]["entries"]}
    assert ignored == {
        ".DS_Store": "hidden",
        ".ipynb_checkpoints": "hidden",
        "README.txt": "file outside a class folder",
        "__MACOSX": "junk folder",
        "class_0/.DS_Store": "hidden",
        "class_0/README.txt": "not an image",
        "class_0/Thumbs.db": "not an image",
        "class_1/.hidden.jpg": "hidden",
        "class_1/.ipynb_checkpoints": "hidden",
        "class_1/a_fifo": "not a regular file",
    }
    assert manifest["ignored"]["count"] == 10
    assert manifest["ignored"]["by_reason"]["hidden"] == 5


def test_unusual_names_found_by_listing(tmp_path):
    ds = tmp_path / "ds"
    names = [
        "café.jpg",
        "猫.jpg",
        "a[1].jpg",
        "*",
        "?",
        "with space.jpg",
        "[abc]*?.jpeg",
        "new\nline.jpg",
    ]
    for i, name in enumerate(names):
        write(ds / "猫 cat" / name, jpeg_bytes(seed=i))
    write(ds / "café" / "x.jpg", jpeg_bytes(seed=50))
    write(ds / "a[1]" / "y.jpg", jpeg_bytes(seed=51))
    raw = os.path.join(os.fsencode(ds / "café"), b"latin1_\xe9t\xe9.jpg")
    with open(raw, "wb") as f:
        f.write(jpeg_bytes(seed=52))
    manifest = run(ds, tmp_path / "out")
    assert manifest["classes"] == sorted(["猫 cat", "café", "a[1]"], key=lambda s: s.encode())
    assert manifest["skipped"] == [] and manifest["num_records"] == len(names) + 3
    got = {r[K["filename"]] for r in records_of(tmp_path / "out")}
    assert {f"猫 cat/{n}".encode() for n in names} <= got
    assert b"caf\xc3\xa9/latin1_\xe9t\xe9.jpg" in got  # the exact bytes on disk
    assert manifest["non_utf8_names"] == ["café/latin1_\\xe9t\\xe9.jpg"]
    assert any("not valid UTF-8" in w for w in manifest["warnings"])
    (tmp_path / "out" / "manifest.json").read_bytes().decode("utf-8")  # valid UTF-8 JSON
    assert (tmp_path / "out" / "labels.txt").read_text(encoding="utf-8").splitlines() == manifest[
        "classes"
    ]


def test_non_utf8_class_name(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=1, per_class=1)
    folder = os.path.join(os.fsencode(ds), b"cl\xffass")
    os.mkdir(folder)
    with open(os.path.join(folder, b"img.jpg"), "wb") as f:
        f.write(jpeg_bytes(seed=3))
    manifest = run(ds, tmp_path / "out")
    assert manifest["classes"] == ["class_0", "cl\\xffass"]
    rows = {r[K["filename"]]: r for r in records_of(tmp_path / "out")}
    assert rows[b"cl\xffass/img.jpg"][K["text"]] == b"cl\\xffass"
    assert rows[b"cl\xffass/img.jpg"][K["label"]] == 1


def test_class_names_that_escape_to_the_same_text_are_refused_before_writing(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=1, per_class=1)
    for name in (b"caf\xe9", b"caf\\xe9"):  # the raw byte, and a folder literally named so
        folder = os.path.join(os.fsencode(ds), name)
        os.mkdir(folder)
        with open(os.path.join(folder, b"img.jpg"), "wb") as f:
            f.write(jpeg_bytes(seed=3))
    out = tmp_path / "out"
    with pytest.raises(C.ConvertError) as err:
        C.convert(ds, out, size_per_record=10_000, workers=1, progress=False)
    message = str(err.value)
    assert "b'caf\\xe9'" in message and "b'caf\\\\xe9'" in message
    assert "rename one of them" in message
    assert not out.exists() or not any(out.iterdir())


def test_empty_class_kept_with_warning(tmp_path, capsys):
    ds = make_dataset(tmp_path / "ds", classes=3, per_class=2)
    for p in (ds / "class_1").iterdir():
        p.unlink()
    write(ds / "class_1" / "notes.txt", b"nothing here")
    manifest = C.convert(ds, tmp_path / "out", workers=1)
    assert manifest["classes"] == ["class_0", "class_1", "class_2"]
    assert manifest["class_counts"] == {"class_0": 2, "class_1": 0, "class_2": 2}
    assert {r[K["label"]] for r in records_of(tmp_path / "out")} == {0, 2}
    assert any("class_1" in w and "label 1" in w for w in manifest["warnings"])
    assert "warning: class 'class_1' (label 1) has no usable images" in capsys.readouterr().err


def test_nested_folders_and_symlinks(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=2, per_class=1)
    outside = write(tmp_path / "elsewhere" / "real.jpg", jpeg_bytes(seed=9))
    write(ds / "class_0" / "nested" / "deep.jpg", jpeg_bytes(seed=10))
    os.symlink(outside, ds / "class_0" / "link_to_file.jpg")
    os.symlink(tmp_path / "elsewhere", ds / "class_0" / "link_to_dir")
    os.symlink(ds, ds / "class_0" / "loop")  # a directory loop
    os.symlink(ds / "class_0" / "self.jpg", ds / "class_0" / "self.jpg")  # a symlink to itself
    os.symlink(tmp_path / "missing.jpg", ds / "class_1" / "dangling.jpg")
    os.symlink(ds / "class_1", ds / "linked_class")  # a symlinked class folder
    manifest = run(ds, tmp_path / "out")
    assert manifest["classes"] == ["class_0", "class_1"]
    rows = {r[K["filename"]]: r for r in records_of(tmp_path / "out")}
    assert set(rows) == {
        b"class_0/img_000.jpg",
        b"class_1/img_000.jpg",
        b"class_0/link_to_file.jpg",
    }
    assert rows[b"class_0/link_to_file.jpg"][K["encoded"]] == outside.read_bytes()
    ignored = {e["path"]: e["reason"] for e in manifest["ignored"]["entries"]}
    assert ignored == {
        "class_0/nested/": "nested folder (not searched)",
        "class_0/link_to_dir": "symlinked folder (not followed)",
        "class_0/loop": "symlinked folder (not followed)",
        "linked_class": "symlinked folder (not followed)",
    }
    skipped = {s["path"]: s["reason"] for s in manifest["skipped"]}
    assert set(skipped) == {"class_0/self.jpg", "class_1/dangling.jpg"}
    assert all(r.startswith("broken symlink") for r in skipped.values())


def test_unreadable_file_skipped(tmp_path, monkeypatch):
    ds = make_dataset(tmp_path / "ds", classes=1, per_class=3)
    secret = str(ds / "class_0" / "img_001.jpg")
    real_open = open

    def guarded_open(path, *args, **kwargs):
        if os.fspath(path) == secret:
            raise PermissionError(errno.EACCES, "Permission denied", secret)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(scanning, "open", guarded_open, raising=False)
    manifest = run(ds, tmp_path / "out")
    assert manifest["skipped"] == [
        {"path": "class_0/img_001.jpg", "reason": "cannot read (Permission denied)"}
    ]
    assert manifest["num_records"] == 2


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read a chmod 000 file")
def test_unreadable_file_skipped_for_real(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=1, per_class=2)
    (ds / "class_0" / "img_000.jpg").chmod(0)
    manifest = run(ds, tmp_path / "out")
    assert [s["path"] for s in manifest["skipped"]] == ["class_0/img_000.jpg"]
