"""helpers.convert.probe: files identified by content; bad images skipped with reasons; bombs refused from the header."""

from __future__ import annotations

import io
import time
import zlib

import numpy as np
import tensorflow as tf
from convert_common import (
    K,
    jpeg_bytes,
    make_dataset,
    png_bytes,
    records_of,
    run,
    write,
)
from PIL import Image

from helpers import convert as C
from helpers.convert.probe import pil_limits


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
    return b"\x89PNG\r\n\x1a\n" + chunk + idat_chunk + b"\0\0\0\0" + b"IEND\xaeB`\x82"


def test_max_pixels_refused_from_header(tmp_path, monkeypatch):
    ds = make_dataset(tmp_path / "ds", classes=1, per_class=2)
    write(ds / "class_0" / "bomb.jpg", bomb_jpeg())
    write(ds / "class_0" / "bomb.png", bomb_png())
    with pil_limits(), Image.open(ds / "class_0" / "bomb.jpg") as im:
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
