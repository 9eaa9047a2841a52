"""Tests for helpers.pipeline: parsing, labels, images, dataset builders, corruption, storage."""

from __future__ import annotations

import gzip
import io
import json
import logging
import time
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from helpers import pipeline as P
from helpers.features import (
    IMAGE_KEYS,
    bytes_feature,
    example_from_dict,
    float_feature,
    image_example,
    int64_feature,
    serialize_example,
)

NUM_CLASSES = 3
PER_SHARD = 8
NUM_SHARDS = 3
IMAGE_SIZE = 24


def _encode(array: np.ndarray, fmt: str = "JPEG") -> bytes:
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, fmt)
    return buf.getvalue()


def _image(rng: np.random.Generator, label: int) -> np.ndarray:
    """A smooth image whose colour depends on the label (JPEG-friendly)."""
    h, w = (int(v) for v in rng.integers(16, 48, size=2))
    base = np.array([[200, 40, 40], [40, 200, 40], [40, 40, 200]][label], np.float32)
    ramp = np.linspace(0, 50, w, dtype=np.float32)[None, :, None]
    return np.clip(base + ramp + rng.normal(0, 5, (h, w, 3)), 0, 255).astype(np.uint8)


def _frame_offsets(payloads: list[bytes]) -> list[int]:
    offsets, pos = [], 0
    for p in payloads:
        offsets.append(pos)
        pos += 8 + 4 + len(p) + 4
    return offsets


def _write_shard(path: Path, payloads: list[bytes], compression: str | None = None) -> None:
    options = tf.io.TFRecordOptions(compression_type=compression or "")
    with tf.io.TFRecordWriter(str(path), options) as writer:
        for p in payloads:
            writer.write(p)


def _make_set(root: Path, seed: int = 0, image_dir: Path | None = None) -> dict:
    """Shards + manifest like helpers.convert's; optionally the same images as files."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    shards, payloads_by_shard, files, labels = [], [], [], []
    n = 0
    for s in range(NUM_SHARDS):
        payloads = []
        for _ in range(PER_SHARD):
            label = n % NUM_CLASSES
            array = _image(rng, label)
            encoded = _encode(array)
            name = f"c{label}/img_{n:03d}.jpg"
            if image_dir is not None:
                target = image_dir / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(encoded)
                files.append(str(target))
                labels.append(label)
            ex = image_example(encoded, label, f"c{label}", name, *array.shape[:2])
            payloads.append(serialize_example(ex))
            n += 1
        shard = f"train-{s:05d}-of-{NUM_SHARDS:05d}.tfrecord"
        _write_shard(root / shard, payloads)
        shards.append(
            {"file": shard, "records": len(payloads), "bytes": (root / shard).stat().st_size}
        )
        payloads_by_shard.append(payloads)
    manifest = {"classes": [f"c{i}" for i in range(NUM_CLASSES)], "shards": shards}
    (root / "manifest.json").write_text(json.dumps(manifest))
    return {"dir": root, "payloads": payloads_by_shard, "files": files, "labels": labels}


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> dict:
    base = tmp_path_factory.mktemp("pipeline")
    return _make_set(base / "shards", image_dir=base / "images")


def _collect(ds: tf.data.Dataset) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    for x, y in ds:
        xs.append(x.numpy())
        ys.append(y.numpy())
    return np.concatenate(xs), np.concatenate(ys)


# --------------------------------------------------------------------------- parsing


def test_parse_single_roundtrip() -> None:
    encoded = _encode(np.zeros((5, 7, 3), np.uint8), "PNG")
    raw = serialize_example(image_example(encoded, 2, "cat", "cat/a.png", 5, 7, "png"))
    parsed = P.parse_single(raw)
    assert parsed[IMAGE_KEYS["encoded"]].numpy() == encoded
    assert int(parsed[IMAGE_KEYS["label"]]) == 2
    assert parsed[IMAGE_KEYS["text"]].numpy() == b"cat"
    assert parsed[IMAGE_KEYS["filename"]].numpy() == b"cat/a.png"
    assert (int(parsed[IMAGE_KEYS["height"]]), int(parsed[IMAGE_KEYS["width"]])) == (5, 7)
    assert parsed[IMAGE_KEYS["format"]].numpy() == b"png"


def test_parse_batch_roundtrip_and_optional_defaults() -> None:
    full = serialize_example(image_example(b"x", 1, "a", "a/1.jpg", 3, 4))
    minimal = serialize_example(
        {IMAGE_KEYS["encoded"]: b"y", IMAGE_KEYS["label"]: 0}
    )  # only the required features
    parsed = P.parse_batch([full, minimal])
    assert parsed[IMAGE_KEYS["label"]].numpy().tolist() == [1, 0]
    assert parsed[IMAGE_KEYS["encoded"]].numpy().tolist() == [b"x", b"y"]
    assert parsed[IMAGE_KEYS["height"]].numpy().tolist() == [3, -1]
    assert parsed[IMAGE_KEYS["filename"]].numpy().tolist() == [b"a/1.jpg", b""]


def test_custom_keys_parse_seed_000_schema() -> None:
    raw = serialize_example({"name": b"n.jpg", "category": 4, "data": b"img"})
    spec = P.image_feature_spec({"encoded": "data", "label": "category", "filename": "name"})
    parsed = P.parse_single(raw, spec)
    assert int(parsed["category"]) == 4 and parsed["data"].numpy() == b"img"
    with pytest.raises(ValueError, match="unknown logical"):
        P.image_feature_spec({"pixels": "x"})


def test_missing_feature_error_names_the_feature(tmp_path: Path) -> None:
    raw = serialize_example({IMAGE_KEYS["encoded"]: b"img"})  # no label
    with pytest.raises(P.SchemaError, match="image/class/label") as err:
        P.parse_single(raw)
    assert "missing" in str(err.value)
    with pytest.raises(P.SchemaError, match="image/class/label"):
        P.parse_batch([raw])
    _write_shard(tmp_path / "x.tfrecord", [raw])
    with pytest.raises(P.SchemaError, match="image/class/label") as err:
        P.check_schema(tmp_path / "x.tfrecord")
    assert err.value.feature == "image/class/label" and err.value.record == 0
    assert "x.tfrecord" in str(err.value)
    with pytest.raises(P.SchemaError, match="image/class/label"):
        P.make_dataset(tmp_path / "x.tfrecord", 1, 32, num_classes=2)


def test_wrong_dtype_error_names_the_feature(tmp_path: Path) -> None:
    raw = serialize_example(
        example_from_dict(
            {
                IMAGE_KEYS["encoded"]: bytes_feature(b"img"),
                IMAGE_KEYS["label"]: float_feature(1.0),
            }
        )
    )
    with pytest.raises(P.SchemaError, match="image/class/label") as err:
        P.parse_single(raw)
    assert "float" in str(err.value)
    _write_shard(tmp_path / "x.tfrecord", [raw])
    with pytest.raises(P.SchemaError, match="image/class/label.*float_list"):
        P.check_schema(tmp_path / "x.tfrecord")
    wrong_len = serialize_example(
        example_from_dict(
            {
                IMAGE_KEYS["encoded"]: bytes_feature(b"img"),
                IMAGE_KEYS["label"]: int64_feature([1, 2]),
            }
        )
    )
    _write_shard(tmp_path / "y.tfrecord", [wrong_len])
    with pytest.raises(P.SchemaError, match="image/class/label.*2 value"):
        P.check_schema(tmp_path / "y.tfrecord")


def test_check_schema_passes_on_converter_records(dataset_dir: dict) -> None:
    found = P.check_schema(dataset_dir["dir"] / "train-00000-of-00003.tfrecord", num_records=3)
    assert found[IMAGE_KEYS["label"]] == "int64_list"
    assert found[IMAGE_KEYS["encoded"]] == "bytes_list"


# --------------------------------------------------------------------------- labels


def test_tf_one_hot_silently_zeroes_and_checked_version_refuses() -> None:
    # The pitfall itself (seed 000): no error, an all-zero target.
    assert tf.one_hot(10, depth=5).numpy().tolist() == [0.0] * 5
    assert tf.one_hot(-1, depth=5).numpy().tolist() == [0.0] * 5
    assert P.one_hot_checked(4, 5).numpy().tolist() == [0, 0, 0, 0, 1]
    for bad in (10, 5, -1):
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"label out of range.*\[0, 5\)"):
            P.one_hot_checked(bad, 5)
    with pytest.raises(tf.errors.InvalidArgumentError, match="num_classes"):
        P.check_label(tf.constant([0, 1, 3]), 3, record="a.jpg")
    with pytest.raises(TypeError):
        P.check_label(tf.constant(1.0), 3)


def _label_shard(tmp_path: Path, labels: list[int]) -> Path:
    payloads = []
    for i, label in enumerate(labels):
        feats = {
            IMAGE_KEYS["encoded"]: _encode(np.full((8, 8, 3), 50, np.uint8)),
            IMAGE_KEYS["label"]: label,
            IMAGE_KEYS["filename"]: f"img_{i}.jpg",
        }
        payloads.append(serialize_example(feats))
    path = tmp_path / "labels.tfrecord"
    _write_shard(path, payloads)
    return path


@pytest.mark.parametrize("bad", [3, -1])
@pytest.mark.parametrize("one_hot", [True, False])
def test_dataset_refuses_out_of_range_labels(tmp_path: Path, bad: int, one_hot: bool) -> None:
    path = _label_shard(tmp_path, [0, 1, 2, bad])
    ds = P.make_dataset(path, 4, 32, num_classes=3, training=False, one_hot=one_hot)
    with pytest.raises(tf.errors.InvalidArgumentError, match="label out of range") as err:
        list(ds)
    assert "img_3.jpg" in str(err.value)  # the record is named


def test_one_based_labels_refused(tmp_path: Path) -> None:
    path = _label_shard(tmp_path, [1, 2, 3])  # 1-based, 3 classes
    ds = P.make_dataset(path, 1, 32, num_classes=3, training=False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="1-based"):
        list(ds)


def test_unknown_num_classes_is_an_error(tmp_path: Path) -> None:
    path = _label_shard(tmp_path, [0, 1])
    with pytest.raises(ValueError, match="num_classes"):
        P.make_dataset(path, 1, 32)
    ds = P.make_dataset(path, 2, 32, one_hot=False, training=False)
    _, y = next(iter(ds))
    assert y.dtype == tf.int32 and sorted(y.numpy().tolist()) == [0, 1]


# --------------------------------------------------------------------------- images


def test_normalize_range() -> None:
    x = P.normalize_mobilenet(tf.constant([0, 127.5, 255.0]))
    np.testing.assert_allclose(x.numpy(), [-1.0, 0.0, 1.0])
    rnd = np.random.default_rng(1).integers(0, 256, (10, 10, 3)).astype(np.uint8)
    y = P.normalize_mobilenet(rnd).numpy()
    assert y.dtype == np.float32 and y.min() >= -1.0 and y.max() <= 1.0
    np.testing.assert_array_equal(P.denormalize_mobilenet(y), rnd)
    bicubic = P.resize(rnd, 37, method="bicubic")  # may overshoot 0..255
    z = P.normalize_mobilenet(bicubic).numpy()
    assert z.min() >= -1.0 and z.max() <= 1.0


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "GIF", "BMP", "WEBP"])
def test_decode_image_any_format_gives_hw3(fmt: str) -> None:
    array = np.full((6, 9, 3), 120, np.uint8)
    image = P.decode_image(_encode(array, fmt))
    assert image.shape == (6, 9, 3) and image.dtype == tf.uint8


def test_decode_image_grey_rgba_and_16_bit() -> None:
    grey = _encode(np.full((4, 5), 100, np.uint8), "PNG")
    rgba = _encode(np.full((4, 5, 4), 100, np.uint8), "PNG")
    buf = io.BytesIO()
    Image.fromarray(np.full((4, 5), 40000, np.uint16)).save(buf, "PNG")
    for data in (grey, rgba, buf.getvalue()):
        assert P.decode_image(data).shape == (4, 5, 3)


def test_preprocess_and_resize_shapes() -> None:
    encoded = _encode(np.full((30, 50, 3), 255, np.uint8), "PNG")
    image = P.preprocess_image(encoded, (20, 40))
    assert image.shape == (20, 40, 3) and image.dtype == tf.float32
    np.testing.assert_allclose(image.numpy(), 1.0)


def test_augment_is_seeded_and_keeps_shape_and_range() -> None:
    image = tf.random.stateless_uniform((32, 32, 3), seed=[1, 2], minval=-1, maxval=1)
    a = P.augment(image, [3, 4])
    b = P.augment(image, [3, 4])
    c = P.augment(image, [5, 6])
    assert a.shape == image.shape and a.dtype == tf.float32
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(a.numpy(), c.numpy())
    assert a.numpy().min() >= -1.0 and a.numpy().max() <= 1.0
    np.testing.assert_array_equal(
        P.augment(image, [3, 4], flip=False, crop_fraction=1.0, brightness=0).numpy(),
        image.numpy(),
    )


# --------------------------------------------------------------------------- make_dataset


@pytest.mark.parametrize(("drop", "batches", "last"), [(True, 5, 4), (False, 6, 4)])
def test_make_dataset_shapes_dtypes_and_drop_remainder(
    dataset_dir: dict, drop: bool, batches: int, last: int
) -> None:
    ds = P.make_dataset(
        dataset_dir["dir"], 5 if drop else 4, IMAGE_SIZE, drop_remainder=drop, seed=0
    )
    if drop:
        assert ds.element_spec[0].shape.as_list() == [5, IMAGE_SIZE, IMAGE_SIZE, 3]
        assert ds.element_spec[1].shape.as_list() == [5, NUM_CLASSES]  # from the manifest
    got = list(ds)
    assert len(got) == (4 if drop else 6)  # 24 images: 4 batches of 5 / 6 batches of 4
    for x, y in got:
        assert x.dtype == tf.float32 and y.dtype == tf.float32
        assert x.shape[1:] == (IMAGE_SIZE, IMAGE_SIZE, 3)
        assert -1.0 <= float(tf.reduce_min(x)) and float(tf.reduce_max(x)) <= 1.0
        np.testing.assert_allclose(tf.reduce_sum(y, axis=1).numpy(), 1.0)


def test_make_dataset_every_record_once_and_labels_match_images(dataset_dir: dict) -> None:
    ds = P.make_dataset(dataset_dir["dir"], 4, IMAGE_SIZE, training=True, augment=True, seed=1)
    x, y = _collect(ds)
    assert x.shape[0] == NUM_SHARDS * PER_SHARD
    assert np.bincount(y.argmax(1)).tolist() == [8, 8, 8]
    # images were drawn with a dominant channel equal to the label
    dominant = x.reshape(len(x), -1, 3).mean(1).argmax(1)
    np.testing.assert_array_equal(dominant, y.argmax(1))


def test_deterministic_order_is_reproducible(dataset_dir: dict) -> None:
    def run() -> tuple[np.ndarray, np.ndarray]:
        return _collect(
            P.make_dataset(
                dataset_dir["dir"],
                4,
                IMAGE_SIZE,
                training=True,
                deterministic=True,
                seed=7,
                cycle_length=2,
                shuffle_buffer=10,
                augment=True,
            )
        )

    x1, y1 = run()
    x2, y2 = run()
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_array_equal(x1, x2)


def test_options_cache_repeat_prefetch_off(dataset_dir: dict, tmp_path: Path) -> None:
    kw = dict(training=False, prefetch=None, num_parallel_calls=None)
    ds = P.make_dataset(dataset_dir["dir"], 8, IMAGE_SIZE, cache=True, repeat=2, **kw)
    assert len(list(ds)) == 6
    file_cache = P.make_dataset(
        dataset_dir["dir"], 8, IMAGE_SIZE, cache=str(tmp_path / "cache"), **kw
    )
    first, again = _collect(file_cache), _collect(file_cache)
    np.testing.assert_array_equal(first[1], again[1])
    assert any(p.name.startswith("cache") for p in tmp_path.iterdir())
    blocks = P.make_dataset(
        dataset_dir["dir"],
        8,
        IMAGE_SIZE,
        cycle_length=2,
        block_length=4,
        read_buffer_bytes=1 << 20,
        deterministic=True,
        **kw,
    )
    plain = P.make_dataset(dataset_dir["dir"], 8, IMAGE_SIZE, cycle_length=1, **kw)
    # block_length=4: four records of shard 0, four of shard 1, then shard 0 again
    np.testing.assert_array_equal(_collect(blocks)[0][:4], _collect(plain)[0][:4])
    np.testing.assert_array_equal(_collect(blocks)[0][4:8], _collect(plain)[0][8:12])


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


# --------------------------------------------------------------------------- corruption


def _damaged_copy(dataset_dir: dict, tmp_path: Path) -> tuple[Path, int]:
    """Shard 0: byte flipped inside record 2; shard 1: cut inside record 5.

    Returns the directory and the number of records TF's reader can no longer
    deliver (ignore_errors stops a file at its first bad record).
    """
    root = tmp_path / "damaged"
    root.mkdir()
    for p in dataset_dir["dir"].iterdir():
        (root / p.name).write_bytes(p.read_bytes())
    payloads = dataset_dir["payloads"]
    s0 = root / "train-00000-of-00003.tfrecord"
    data = bytearray(s0.read_bytes())
    data[_frame_offsets(payloads[0])[2] + 12 + 20] ^= 0xFF
    s0.write_bytes(bytes(data))
    s1 = root / "train-00001-of-00003.tfrecord"
    cut = _frame_offsets(payloads[1])[5] + 30
    s1.write_bytes(s1.read_bytes()[:cut])
    return root, (PER_SHARD - 2) + (PER_SHARD - 5)


def test_corruption_fails_loudly_by_default(dataset_dir: dict, tmp_path: Path) -> None:
    root, _ = _damaged_copy(dataset_dir, tmp_path)
    with pytest.raises(ValueError, match="train-00001-of-00003.tfrecord.*manifest says"):
        P.make_dataset(root, 4, IMAGE_SIZE)  # truncated: size differs from manifest
    # the flipped byte keeps the size: the reader raises while iterating
    ds = P.make_dataset(root / "train-00000-of-00003.tfrecord", 1, IMAGE_SIZE, num_classes=3)
    with pytest.raises(tf.errors.DataLossError):
        list(ds)


def test_skip_corrupt_reports_lost_records_exactly(
    dataset_dir: dict, tmp_path: Path, caplog
) -> None:
    root, lost = _damaged_copy(dataset_dir, tmp_path)
    report = P.CorruptionReport()
    with caplog.at_level(logging.WARNING, logger="helpers.pipeline"):
        ds = P.make_dataset(
            root, 4, IMAGE_SIZE, skip_corrupt=True, corruption_report=report, drop_remainder=False
        )
        x, _ = _collect(ds)
    total = NUM_SHARDS * PER_SHARD
    assert x.shape[0] == total - lost == 15
    assert report.complete
    assert report.lost == lost == 9
    assert report.delivered_total == total - lost
    by_shard = {Path(k).name: v for k, v in report.lost_by_shard().items()}
    assert by_shard == {
        "train-00000-of-00003.tfrecord": 6,
        "train-00001-of-00003.tfrecord": 3,
        "train-00002-of-00003.tfrecord": 0,
    }
    assert "6 lost" in caplog.text and "3 lost" in caplog.text
    assert "9 lost" in report.summary()


def test_skip_corrupt_counts_undecodable_image(tmp_path: Path) -> None:
    good = _encode(np.full((8, 8, 3), 90, np.uint8))
    payloads = [
        serialize_example(image_example(good if i != 1 else b"not an image", 0, "c", f"{i}", 8, 8))
        for i in range(4)
    ]
    root = tmp_path / "set"
    root.mkdir()
    _write_shard(root / "train-00000-of-00001.tfrecord", payloads)
    size = (root / "train-00000-of-00001.tfrecord").stat().st_size
    (root / "manifest.json").write_text(
        json.dumps(
            {
                "classes": ["c"],
                "shards": [{"file": "train-00000-of-00001.tfrecord", "records": 4, "bytes": size}],
            }
        )
    )
    report = P.CorruptionReport()
    ds = P.make_dataset(root, 1, 16, skip_corrupt=True, corruption_report=report, training=False)
    assert len(list(ds)) == 3  # a bad image drops only itself (a map error)
    assert report.lost == 1


def test_skip_corrupt_without_manifest_says_unknown(dataset_dir: dict) -> None:
    report = P.CorruptionReport()
    files = [str(dataset_dir["dir"] / "train-00002-of-00003.tfrecord")]
    ds = P.make_dataset(
        files, 4, IMAGE_SIZE, num_classes=3, skip_corrupt=True, corruption_report=report
    )
    assert len(list(ds)) == 2
    assert report.lost == 0 and report.delivered_total == PER_SHARD
    assert "expected count unknown" in report.summary()


def test_skip_corrupt_still_refuses_bad_labels(tmp_path: Path) -> None:
    path = _label_shard(tmp_path, [0, 7])
    ds = P.make_dataset(path, 1, 16, num_classes=3, skip_corrupt=True, training=False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="label out of range"):
        list(ds)


# --------------------------------------------------------------------------- baselines


def test_per_file_and_generator_give_the_tfrecord_images(dataset_dir: dict) -> None:
    common = dict(num_classes=NUM_CLASSES, drop_remainder=False)
    tfr_x, tfr_y = _collect(
        P.make_dataset(
            dataset_dir["dir"],
            6,
            IMAGE_SIZE,
            training=False,
            deterministic=True,
            cycle_length=1,
            **common,
        )
    )
    per_x, per_y = _collect(
        P.per_file_dataset(
            dataset_dir["files"], dataset_dir["labels"], 6, IMAGE_SIZE, deterministic=True, **common
        )
    )
    gen_x, gen_y = _collect(
        P.generator_dataset(dataset_dir["files"], dataset_dir["labels"], 6, IMAGE_SIZE, **common)
    )
    np.testing.assert_array_equal(per_y, tfr_y)
    np.testing.assert_array_equal(per_x, tfr_x)  # same bytes, same decoder: identical
    np.testing.assert_array_equal(gen_y, tfr_y)
    # PIL's JPEG decoder and resize filter differ a little from TF's
    assert np.abs(gen_x - tfr_x).mean() < 0.05


def test_baselines_refuse_bad_labels(dataset_dir: dict) -> None:
    files, labels = dataset_dir["files"][:2], [0, 3]
    with pytest.raises(ValueError, match=r"label 3 is outside \[0, 3\)"):
        P.per_file_dataset(files, labels, 2, 16, num_classes=3)
    with pytest.raises(ValueError, match="label 3"):
        P.generator_dataset(files, labels, 2, 16, num_classes=3)
    with pytest.raises(ValueError, match="num_classes"):
        P.per_file_dataset(files, [0, 1], 2, 16)


def test_list_image_folder_skips_hidden_and_non_images(tmp_path: Path) -> None:
    for cls in ("b", "a", ".ipynb_checkpoints"):
        (tmp_path / cls).mkdir()
        (tmp_path / cls / "x.JPG").write_bytes(_encode(np.zeros((4, 4, 3), np.uint8)))
    (tmp_path / "a" / ".hidden.jpg").write_bytes(b"")
    (tmp_path / "a" / "README.txt").write_text("hi")
    folder = P.list_image_folder(tmp_path)
    assert folder.classes == ["a", "b"]
    assert [Path(p).relative_to(tmp_path).as_posix() for p in folder.paths] == [
        "a/x.JPG",
        "b/x.JPG",
    ]
    assert folder.labels == [0, 1]


# --------------------------------------------------------------------------- slow storage


def _seconds(ds: tf.data.Dataset) -> float:
    start = time.perf_counter()
    for _ in ds:
        pass
    return time.perf_counter() - start


def test_simulated_storage_validates_and_describes_itself() -> None:
    storage = P.slow_open(0.01, 0.02)
    assert "SIMULATED" in str(storage)
    assert storage.delay_s(2_000_000) == pytest.approx(0.05)
    with pytest.raises(ValueError, match="delay_per_open_s"):
        P.slow_open(-1, 0)


def test_slow_storage_delays_each_shard_open_and_interleave_overlaps(dataset_dir: dict) -> None:
    # Semantics, not speed: the sleeps give hard lower bounds; overlapping three 0.5 s
    # opens saves at least a second, far more than scheduling noise on a busy machine.
    storage = P.slow_open(delay_per_open_s=0.5, delay_per_mb_s=0.0)
    kw = dict(training=False, storage=storage, prefetch=None)
    sequential = P.make_dataset(
        dataset_dir["dir"], 4, IMAGE_SIZE, cycle_length=1, interleave_parallel_calls=None, **kw
    )
    parallel = P.make_dataset(
        dataset_dir["dir"], 4, IMAGE_SIZE, cycle_length=3, interleave_parallel_calls=3, **kw
    )
    t_seq = _seconds(sequential)
    t_par = _seconds(parallel)
    assert t_seq >= NUM_SHARDS * 0.5  # one delay per shard, one after another
    assert t_par < t_seq - 0.5  # cycle_length=3 overlaps the opens


def test_slow_storage_per_image_for_per_file_and_generator(dataset_dir: dict) -> None:
    storage = P.slow_open(delay_per_open_s=0.05, delay_per_mb_s=0.0)
    files, labels = dataset_dir["files"][:6], dataset_dir["labels"][:6]
    per_file = P.per_file_dataset(
        files, labels, 3, 16, num_classes=3, storage=storage, parallel_reads=1, prefetch=None
    )
    generator = P.generator_dataset(files, labels, 3, 16, num_classes=3, storage=storage)
    assert _seconds(per_file) >= 6 * 0.05
    assert _seconds(generator) >= 6 * 0.05
    x, y = _collect(per_file)
    assert x.shape == (6, 16, 16, 3) and y.shape == (6, 3)


def test_per_mb_delay_scales_with_bytes(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(b"\0" * 2_000_000)
    storage = P.slow_open(delay_per_open_s=0.0, delay_per_mb_s=0.1)
    start = time.perf_counter()
    assert len(storage.read_bytes(big)) == 2_000_000
    assert time.perf_counter() - start >= 0.2
    ds = storage.read_file_dataset(tf.constant(str(big)), tf.constant(2_000_000, tf.int64))
    assert _seconds(ds) >= 0.2


# --------------------------------------------------------------------------- stages and measurement


def test_make_stages_builds_each_stage_in_order(dataset_dir: dict) -> None:
    stages = P.make_stages(dataset_dir["dir"], 4, IMAGE_SIZE, cycle_length=2, seed=0)
    names = list(stages)
    assert names[0].startswith("1") and names[-1].endswith("prefetch") and len(names) == 6
    assert [n.split(" + ")[-1] for n in names[1:]] == [
        "interleave",
        "parallel map",
        "cache",
        "shuffle",
        "prefetch",
    ]
    for ds in stages.values():
        assert sum(int(x.shape[0]) for x, _ in ds) == 24
    options = P.pipeline_stages()
    assert options["1 read + map, one file at a time"]["interleave_parallel_calls"] is None
    assert options["6 + prefetch"]["prefetch"] == P.AUTOTUNE


def test_measure_throughput_counts_images_after_warmup() -> None:
    ds = tf.data.Dataset.from_tensor_slices(tf.zeros((40, 8, 8, 3))).batch(4)
    stats = P.measure_throughput(ds, warmup=1)
    assert stats["batches"] == 9 and stats["images"] == 36 and stats["warmup_batches"] == 1
    assert stats["images_per_s"] > 0 and stats["seconds"] > 0
    assert P.measure_throughput(ds, steps=3, warmup=0)["images"] == 12
    pairs = tf.data.Dataset.from_tensor_slices((tf.zeros((10, 8, 8, 3)), tf.zeros(10)))
    assert P.measure_throughput(pairs, warmup=0)["images"] == 10  # unbatched: 1 per element
    with pytest.raises(ValueError, match="no batches left"):
        P.measure_throughput(ds, warmup=20)


def test_measure_throughput_sees_a_slow_pipeline() -> None:
    ds = tf.data.Dataset.range(4).apply(P._sleep_transformation(tf.constant(50_000, tf.int64)))
    stats = P.measure_throughput(ds, warmup=0, images_per_element=1)
    assert stats["seconds"] >= 4 * 0.05 and stats["images_per_s"] <= 1 / 0.05


def test_estimate_pipeline_memory_numbers() -> None:
    mem = P.estimate_pipeline_memory(224, 32, shuffle_buffer=1000, cache_images=100, cycle_length=4)
    assert mem["element"] == 224 * 224 * 3 * 4 == 602_112
    assert mem["shuffle_buffer"] == 1000 * 602_112
    assert mem["cache"] == 100 * 602_112
    assert mem["interleave_buffers"] == 4 * 256 * 1024
    assert mem["total"] == sum(v for k, v in mem.items() if k not in ("element", "total"))
