"""helpers.bench.images: the synthetic image set (no timing assertions)."""

from __future__ import annotations

import io
import os

from PIL import Image

from helpers import bench

from .support import _tiny_dataset


def test_synthetic_jpeg_is_a_deterministic_jpeg_of_the_requested_size():
    a = bench.synthetic_jpeg(7, seed=1, width=64, height=48)
    assert a == bench.synthetic_jpeg(7, seed=1, width=64, height=48)
    assert a != bench.synthetic_jpeg(8, seed=1, width=64, height=48)
    assert a != bench.synthetic_jpeg(7, seed=2, width=64, height=48)
    assert a[:3] == b"\xff\xd8\xff"
    with Image.open(io.BytesIO(a)) as im:
        assert im.format == "JPEG"
        assert im.size == (64, 48)
        assert im.mode == "RGB"


def test_synthetic_jpeg_is_textured_not_flat():
    # Noise keeps JPEGs photo-sized: far more than a flat image of the same size.
    flat = io.BytesIO()
    Image.new("RGB", (160, 120), (120, 130, 140)).save(flat, "JPEG", quality=90)
    assert len(bench.synthetic_jpeg(0, width=160, height=120)) > 5 * len(flat.getvalue())


def test_synthetic_jpeg_larger_than_the_noise_pool():
    data = bench.synthetic_jpeg(0, width=1200, height=40)
    with Image.open(io.BytesIO(data)) as im:
        assert im.size == (1200, 40)


def test_generate_images_writes_class_folders_and_reuses_the_cache(tmp_path):
    root = tmp_path / "images"
    stamp = bench.generate_images(root, 7, classes=3, width=32, height=24, workers=1)
    assert stamp["images"] == 7 and "reused" not in stamp
    paths, labels, classes = bench.list_dataset(str(root))
    assert classes == ["class_00", "class_01", "class_02"]
    assert len(paths) == 7 and sorted(set(labels)) == [0, 1, 2]
    assert stamp["bytes"] == bench.dataset_bytes(paths)
    mtime = os.path.getmtime(paths[0])
    again = bench.generate_images(root, 7, classes=3, width=32, height=24, workers=1)
    assert again["reused"] is True
    assert os.path.getmtime(paths[0]) == mtime
    # Different parameters: regenerated from scratch.
    other = bench.generate_images(root, 4, classes=2, width=32, height=24, workers=1)
    assert "reused" not in other
    assert len(bench.list_dataset(str(root))[0]) == 4


def test_generate_images_in_worker_processes(tmp_path):
    stamp = bench.generate_images(tmp_path / "p", 6, classes=2, width=24, height=16, workers=2)
    assert len(bench.list_dataset(str(tmp_path / "p"))[0]) == 6
    assert stamp["bytes"] > 0


def test_link_subset_takes_the_same_files_per_class(tmp_path):
    src = _tiny_dataset(tmp_path / "src", classes=2, per_class=3)
    n = bench.link_subset(str(src), str(tmp_path / "sub"), 4)
    assert n == 4
    sub_paths, sub_labels, _ = bench.list_dataset(str(tmp_path / "sub"))
    assert sub_labels == [0, 0, 1, 1]
    for p in sub_paths:
        rel = os.path.relpath(p, tmp_path / "sub")
        assert open(p, "rb").read() == (src / rel).read_bytes()
