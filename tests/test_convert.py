"""helpers.convert: folders -> shards, label map, manifest; bad input; interrupts; reproducibility.

Every fixture is made here in ``tmp_path`` with Pillow (no binaries committed).
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from helpers import convert as C
from helpers import features as F
from helpers import records as R

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
K = F.IMAGE_KEYS

# --------------------------------------------------------------------------- fixtures


def jpeg_bytes(
    w: int = 24, h: int = 16, seed: int = 0, mode: str = "RGB", quality: int = 85
) -> bytes:
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    im = Image.fromarray(arr).convert(mode)
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=quality)
    return buf.getvalue()


def png_bytes(im: Image.Image) -> bytes:
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def make_dataset(
    root: Path, classes: int = 3, per_class: int = 4, w: int = 24, h: int = 16
) -> Path:
    for c in range(classes):
        for i in range(per_class):
            write(
                root / f"class_{c}" / f"img_{i:03d}.jpg",
                jpeg_bytes(w + i, h + c, seed=c * 1000 + i),
            )
    return root


def run(ds: Path, out: Path, **kw) -> dict:
    kw.setdefault("workers", 1)
    kw.setdefault("progress", False)
    return C.convert(ds, out, **kw)


def records_of(out: Path) -> list[dict]:
    """Every record of every shard (manifest order), parsed with the pure-Python reader."""
    manifest = json.loads((out / "manifest.json").read_text())
    rows = []
    for shard in manifest["shards"]:
        for data in R.read_records(out / shard["file"]):
            d = F.example_to_dict(data)
            rows.append({k: v[0] for k, v in d.items()} | {"_shard": shard["file"]})
    return rows


def files_of(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def cli(*args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PY, "-m", "helpers.convert", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
        **kw,
    )


# --------------------------------------------------------------------------- basics


def test_layout_manifest_and_both_readers(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=3, per_class=5)
    out = tmp_path / "out"
    manifest = run(ds, out, size_per_record=4000)

    names = sorted(p.name for p in out.iterdir())
    n = manifest["num_shards"]
    assert n > 1
    assert names == sorted(
        [C.shard_name("train", i, n) for i in range(n)] + ["labels.txt", "manifest.json"]
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

    total = 0
    for shard in manifest["shards"]:
        path = out / shard["file"]
        data = path.read_bytes()
        assert shard["bytes"] == len(data)
        assert shard["sha256"] == hashlib.sha256(data).hexdigest()
        payloads = list(R.read_records(path))
        tf_payloads = [r.numpy() for r in tf.data.TFRecordDataset(str(path))]
        assert payloads == tf_payloads and len(payloads) == shard["records"]
        assert shard["record_sha256"] == [hashlib.sha256(p).hexdigest() for p in payloads]
        assert sum(shard["class_counts"].values()) == shard["records"]
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


def test_light_protobuf_import_in_owned_processes():
    code = (
        "import sys, helpers.convert as c; c._OWN_PROCESS = True; f = c._load_features(); "
        "ex = f.image_example(b'xy', 2, 'cat', b'cat/\\xff.jpg', 3, 4, 'png'); "
        "sys.stdout.write(f.serialize_example(ex).hex() + ' ' + str('tensorflow.python' in sys.modules))"
    )
    proc = subprocess.run([PY, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    hexbytes, loaded = proc.stdout.split()
    assert loaded == "False", proc.stderr
    expected = F.serialize_example(F.image_example(b"xy", 2, "cat", b"cat/\xff.jpg", 3, 4, "png"))
    assert bytes.fromhex(hexbytes) == expected


# --------------------------------------------------------------------------- content


def cmyk_jpeg() -> bytes:
    buf = io.BytesIO()
    Image.new("CMYK", (20, 10), (0, 255, 255, 0)).save(buf, "JPEG", quality=95)
    return buf.getvalue()


def webp_bytes() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (14, 6), (0, 0, 255)).save(buf, "WEBP", lossless=True)
    return buf.getvalue()


def gif_bytes() -> bytes:
    frames = [Image.new("RGB", (12, 8), c) for c in ((255, 0, 0), (0, 255, 0), (0, 0, 255))]
    buf = io.BytesIO()
    frames[0].save(buf, "GIF", save_all=True, append_images=frames[1:], duration=50, loop=0)
    return buf.getvalue()


def test_formats_detected_by_content(tmp_path):
    ds = tmp_path / "ds"
    rgb_png = png_bytes(Image.new("RGB", (11, 5), (1, 2, 3)))
    rgba = Image.new("RGBA", (10, 4), (255, 0, 0, 255))
    rgba.paste((0, 0, 0, 0), (0, 0, 5, 4))  # left half fully transparent (black underneath)
    sixteen = Image.fromarray(np.full((6, 7), 0x8000, dtype=np.uint16))
    palette = Image.new("RGB", (8, 8), (0, 128, 0)).convert("P")
    bmp = io.BytesIO()
    Image.new("RGB", (5, 5), (9, 9, 9)).save(bmp, "BMP")
    files = {
        "png_named_jpeg.JPEG": rgb_png,
        "gray.jpg": jpeg_bytes(13, 9, mode="L"),
        "rgb.jpg": jpeg_bytes(13, 9),
        "cmyk.jpg": cmyk_jpeg(),
        "rgba.png": png_bytes(rgba),
        "sixteen.png": png_bytes(sixteen),
        "palette.png": png_bytes(palette),
        "pic.webp": webp_bytes(),
        "anim.gif": gif_bytes(),
        "old.bmp": bmp.getvalue(),
        "no_extension": jpeg_bytes(7, 7, seed=5),
    }
    for name, data in files.items():
        write(ds / "c" / name, data)
    manifest = run(ds, tmp_path / "out")
    assert manifest["skipped"] == []
    converted = {c["path"]: c for c in manifest["converted"]}
    assert set(converted) == {
        f"c/{n}"
        for n in (
            "cmyk.jpg",
            "rgba.png",
            "sixteen.png",
            "palette.png",
            "pic.webp",
            "anim.gif",
            "old.bmp",
        )
    }
    assert converted["c/cmyk.jpg"]["to"] == "jpeg" and "CMYK" in converted["c/cmyk.jpg"]["from"]
    assert converted["c/sixteen.png"]["from"] == "16-bit gray PNG"
    rows = {r[K["filename"]].decode(): r for r in records_of(tmp_path / "out")}
    assert len(rows) == len(files)
    for rel, row in rows.items():
        name = rel.split("/", 1)[1]
        enc = row[K["encoded"]]
        img = tf.io.decode_image(enc, channels=3, expand_animations=False)
        assert img.dtype == tf.uint8 and img.shape == (row[K["height"]], row[K["width"]], 3), rel
        fmt = row[K["format"]].decode()
        assert fmt == ("jpeg" if enc[:3] == b"\xff\xd8\xff" else "png"), rel
        if f"c/{name}" not in converted:
            assert enc == files[name], f"{rel} should be stored as its original bytes"
    assert rows["c/png_named_jpeg.JPEG"][K["format"]] == b"png"
    assert rows["c/no_extension"][K["format"]] == b"jpeg"
    pixels = lambda rel: tf.io.decode_image(rows[rel][K["encoded"]], channels=3).numpy()  # noqa: E731
    assert (pixels("c/sixteen.png") == 128).all()  # high byte of 0x8000
    rgba_px = pixels("c/rgba.png")
    assert (rgba_px[:, :5] == 255).all() and (rgba_px[:, 5:] == [255, 0, 0]).all()  # onto white
    assert (pixels("c/anim.gif") == [255, 0, 0]).all()  # first frame
    cmyk_px = pixels("c/cmyk.jpg").astype(int)
    assert abs(cmyk_px[..., 0].mean() - 255) < 8 and cmyk_px[..., 1:].mean() < 8  # cyan+... red


def test_bad_files_skipped_with_reasons(tmp_path, capsys):
    ds = make_dataset(tmp_path / "ds", classes=2, per_class=2)
    good = jpeg_bytes(120, 80, seed=7)
    png = png_bytes(Image.new("RGB", (8, 8)))
    write(ds / "class_0" / "truncated.jpg", good[: len(good) // 2])
    write(ds / "class_0" / "zero.jpg", b"")
    write(ds / "class_0" / "random.jpg", np.random.default_rng(0).bytes(2000))
    write(ds / "class_1" / "truncated.png", png[:-20])
    write(ds / "class_1" / "truncated.gif", gif_bytes()[:40])  # cut in the header
    noisy = io.BytesIO()
    Image.fromarray(np.random.default_rng(1).integers(0, 256, (40, 40), np.uint8)).save(
        noisy, "GIF"
    )
    cut = noisy.getvalue()[: len(noisy.getvalue()) // 2]
    write(ds / "class_1" / "cut.gif", cut)  # cut in the pixel data: found when decoding
    write(ds / "class_1" / "header_only.jpg", good[:200])
    # a JPEG with trailing bytes after its end-of-image marker is fine (some cameras do this)
    write(ds / "class_1" / "trailing.jpg", good + b"\x00" * 10 + b"extra")
    manifest = C.convert(ds, tmp_path / "out", workers=1, progress=True)
    reasons = {s["path"]: s["reason"] for s in manifest["skipped"]}
    assert set(reasons) == {
        "class_0/truncated.jpg",
        "class_0/zero.jpg",
        "class_0/random.jpg",
        "class_1/truncated.png",
        "class_1/truncated.gif",
        "class_1/cut.gif",
        "class_1/header_only.jpg",
    }
    assert "end-of-image" in reasons["class_0/truncated.jpg"]
    assert "empty file" in reasons["class_0/zero.jpg"]
    assert "not an image" in reasons["class_0/random.jpg"]
    assert "IEND" in reasons["class_1/truncated.png"]
    assert "GIF" in reasons["class_1/truncated.gif"]
    assert "cannot decode GIF" in reasons["class_1/cut.gif"]
    assert "truncated JPEG" in reasons["class_1/header_only.jpg"]
    assert all(str(tmp_path) not in r for r in reasons.values())
    assert manifest["num_records"] == 5
    err = capsys.readouterr().err
    assert "skipped 7" in err and "class_0/zero.jpg" in err


def bomb_jpeg() -> bytes:
    data = bytearray(jpeg_bytes(16, 16))
    sof = data.index(b"\xff\xc0")
    data[sof + 5 : sof + 9] = (60000).to_bytes(2, "big") * 2
    return bytes(data)


def bomb_png() -> bytes:
    ihdr = b"IHDR" + (60000).to_bytes(4, "big") * 2 + bytes([8, 2, 0, 0, 0])
    chunk = len(ihdr[4:]).to_bytes(4, "big") + ihdr + zlib.crc32(ihdr).to_bytes(4, "big")
    idat = zlib.compress(b"\0" * 10)
    idat_chunk = (
        len(idat).to_bytes(4, "big")
        + b"IDAT"
        + idat
        + zlib.crc32(b"IDAT" + idat).to_bytes(4, "big")
    )
    return C._PNG_SIGNATURE + chunk + idat_chunk + b"\0\0\0\0" + C._PNG_IEND


def test_max_pixels_refused_from_header(tmp_path, monkeypatch):
    ds = make_dataset(tmp_path / "ds", classes=1, per_class=2)
    write(ds / "class_0" / "bomb.jpg", bomb_jpeg())
    write(ds / "class_0" / "bomb.png", bomb_png())
    with C._pil_limits(), Image.open(ds / "class_0" / "bomb.jpg") as im:
        assert im.size == (60000, 60000)

    def no_decode(self, *a, **k):
        raise AssertionError("pixels were decoded")

    monkeypatch.setattr(Image.Image, "load", no_decode)
    monkeypatch.setattr("PIL.ImageFile.ImageFile.load", no_decode)
    start = time.perf_counter()
    manifest = run(ds, tmp_path / "out")
    assert time.perf_counter() - start < 5
    reasons = {s["path"]: s["reason"] for s in manifest["skipped"]}
    assert set(reasons) == {"class_0/bomb.jpg", "class_0/bomb.png"}
    assert all("60000x60000" in r and "--max-pixels" in r for r in reasons.values())
    assert manifest["num_records"] == 2


def test_max_pixels_limit_applies_to_small_images(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=1, per_class=1, w=20, h=20)
    write(ds / "class_0" / "tiny.jpg", jpeg_bytes(5, 5))
    manifest = run(ds, tmp_path / "out", max_pixels=100)
    assert [s["path"] for s in manifest["skipped"]] == ["class_0/img_000.jpg"]
    assert manifest["num_records"] == 1


# --------------------------------------------------------------------------- folder rules


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

    monkeypatch.setattr(C, "open", guarded_open, raising=False)
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


# --------------------------------------------------------------------------- output folder


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
        "labels.txt",
        "manifest.json",
        "notes.md",
        "train-00000-of-00001.tfrecord",
    ]
    assert all(r.ok for r in R.verify_paths([str(out)]))
    # only a stray shard (no manifest): still refused, with a hint
    (out / "manifest.json").unlink()
    with pytest.raises(C.ConvertError, match="interrupted"):
        run(ds, out)


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing", "does not exist"),
        ("inside", "inside the dataset path"),
        ("empty", "no class folders"),
        ("no_images", "no usable images"),
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
    else:
        make_dataset(ds, classes=1, per_class=1)
        size = {"zero_size": "0", "negative_size": "-5", "bad_size": "lots"}[case]
    status = C.main(
        ["--dataset-path", str(ds), "--output-path", str(out), "--size-per-record", size, "--quiet"]
    )
    captured = capsys.readouterr()
    assert status == 2
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], captured.err
    assert "Traceback" not in captured.err
    assert not out.exists()  # nothing half-written


def test_seed_spellings_and_cli_summary(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=2, per_class=2)
    proc = cli(
        f"--dataset_path={ds}", "--size_per_record=2000", f"--output_path={tmp_path / 'out'}"
    )
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["size_per_record"] == 2000 and manifest["num_shards"] > 1
    assert f"wrote {manifest['num_shards']} shard(s), 4 images" in proc.stdout
    verify = subprocess.run(
        [PY, "-m", "helpers.records", "verify", str(tmp_path / "out")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_help():
    text = C.build_parser().format_help()
    for flag in (
        "--dataset-path",
        "--dataset_path",
        "--size-per-record",
        "--workers",
        "--overwrite",
        "--max-pixels",
    ):
        assert flag in text
    assert "52428800" in text


def test_parse_size_and_shard_name():
    assert C.parse_size("52428800") == 52428800
    assert C.parse_size("50MiB") == C.parse_size("50M") == 50 * 2**20
    assert C.parse_size("1.5GB") == 1_500_000_000
    assert C.parse_size("64k") == 65536
    with pytest.raises(ValueError):
        C.parse_size("fast")
    assert C.shard_name("train", 3, 12) == "train-00003-of-00012.tfrecord"
    assert C.shard_name("val", 5, 123456) == "val-000005-of-123456.tfrecord"


def test_enospc_cleans_up(tmp_path, monkeypatch, capsys):
    ds = make_dataset(tmp_path / "ds", classes=2, per_class=5)
    out = tmp_path / "out"
    calls = {"n": 0}
    real_write = C._write_chunk

    def full_disk(f, data):
        calls["n"] += 1
        if calls["n"] == 4:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(f, data)

    monkeypatch.setattr(C, "_write_chunk", full_disk)
    with pytest.raises(C.ConvertError, match="no space left.*partial output removed"):
        run(ds, out, size_per_record=2000)
    assert not out.exists()  # created by this run, so removed again

    out.mkdir()
    write(out / "keep.txt", b"mine")
    calls["n"] = 0
    status = C.main(["--dataset-path", str(ds), "--output-path", str(out), "--size-per-record", "2000",
                     "--workers", "1", "--quiet"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 1 and len(err) == 1 and "ENOSPC" in err[0]
    assert [p.name for p in out.iterdir()] == ["keep.txt"]  # no shard, temp file or manifest


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

    monkeypatch.setattr(C.os, "makedirs", refuse)
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
        "labels.txt",
        "manifest.json",
        "train-00000-of-00001.tfrecord",
    ]


# --------------------------------------------------------------------------- interrupts


def _wait_for_shards(out: Path, proc: subprocess.Popen, count: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if out.is_dir() and sum(1 for p in out.iterdir() if p.name.startswith("train-")) >= count:
            return
        if proc.poll() is not None:
            raise AssertionError(f"converter exited early: {proc.returncode} {proc.stderr.read()}")
        time.sleep(0.02)
    raise AssertionError("no shards appeared")


def test_sigkill_and_sigint_leave_no_partial_shards(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=4, per_class=75, w=10, h=8)  # 300 small images
    ref = tmp_path / "ref"
    manifest = run(ds, ref, size_per_record=8_000)
    n = manifest["num_shards"]
    assert n >= 20
    args = ["--dataset-path", str(ds), "--size-per-record", "8000", "--workers", "2", "--quiet"]
    slow = {C._DELAY_ENV: "0.1"}

    # SIGKILL the whole process group partway
    out = tmp_path / "killed"
    proc = subprocess.Popen(
        [PY, "-m", "helpers.convert", *args, "--output-path", str(out)],
        cwd=ROOT, env={**os.environ, **slow}, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    _wait_for_shards(out, proc, 3)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    finals = [p for p in out.iterdir() if p.name.startswith("train-")]
    assert 3 <= len(finals) < n and not (out / "manifest.json").exists()
    for p in finals:  # every file under a final name is complete and correct
        assert p.read_bytes() == (ref / p.name).read_bytes()
        assert len(list(R.read_records(p))) > 0
    # rerun without --overwrite: refused (shards, no manifest); with it: identical to the reference
    again = cli(*args, "--output-path", str(out))
    assert again.returncode == 2 and "interrupted" in again.stderr
    again = cli(*args, "--output-path", str(out), "--overwrite")
    assert again.returncode == 0, again.stderr
    assert files_of(out) == files_of(ref)

    # SIGINT (Ctrl-C) to the main process: everything this run wrote is removed
    out = tmp_path / "interrupted"
    proc = subprocess.Popen(
        [PY, "-m", "helpers.convert", *args, "--output-path", str(out)],
        cwd=ROOT, env={**os.environ, **slow}, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _wait_for_shards(out, proc, 2)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 130
    err = proc.stderr.read().strip().splitlines()
    assert len(err) == 1 and err[0].startswith("interrupted"), err
    assert not out.exists() or list(out.iterdir()) == []
