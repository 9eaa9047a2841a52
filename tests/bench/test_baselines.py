"""helpers.bench.baselines: the plain copy and the single-threaded converter script."""

from __future__ import annotations

from helpers import bench

from .support import _tiny_dataset


def test_copy_per_class_copies_every_byte(tmp_path):
    src = _tiny_dataset(tmp_path / "src", classes=2, per_class=3)
    for fsync in (False, True):
        out = tmp_path / f"out-{fsync}"
        images, nbytes = bench.copy_per_class(src, out, fsync=fsync)
        assert images == 6
        assert nbytes == sum(p.stat().st_size for p in src.rglob("*.jpg"))
        joined = b"".join(p.read_bytes() for p in sorted((src / "class_0").iterdir()))
        assert (out / "class_0.bin").read_bytes() == joined


def test_seed_style_convert_writes_one_example_per_image(tmp_path):
    import tensorflow as tf

    src = _tiny_dataset(tmp_path / "src", classes=2, per_class=3)
    out = tmp_path / "out"
    # A tiny size per record: a new file after every image.
    assert bench.seed_style_convert(src, out, size_per_record=1) == 6
    files = sorted(str(p) for p in out.glob("out_*.tfrecord"))
    assert len(files) >= 6
    records = list(tf.data.TFRecordDataset(files).as_numpy_iterator())
    assert len(records) == 6
    example = tf.train.Example.FromString(records[0])
    feature = example.features.feature
    assert feature["category"].int64_list.value[0] == 0
    assert feature["data"].bytes_list.value[0] == (src / "class_0" / "img_0.jpg").read_bytes()
