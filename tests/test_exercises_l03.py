"""Lesson 03 exercises: the solutions pass, stubs fail, planted mistakes are named."""

from __future__ import annotations

import struct

import numpy as np
import pytest
import tensorflow as tf

from helpers import exercises as ex
from helpers import records as rec
from helpers.exercises import CheckFailed
from lesson_suite import exercise_suite

# -- the solutions, as in solutions/03_write_read.ipynb -----------------------


def _row_example(row):
    return tf.train.Example(
        features=tf.train.Features(
            feature={
                "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[row["id"]])),
                "name": tf.train.Feature(
                    bytes_list=tf.train.BytesList(value=[row["name"].encode("utf-8")])
                ),
                "score": tf.train.Feature(float_list=tf.train.FloatList(value=[row["score"]])),
            }
        )
    )


def write_examples(path, rows):
    with tf.io.TFRecordWriter(path) as writer:
        for row in rows:
            writer.write(_row_example(row).SerializeToString())


def split_records(data):
    payloads, pos = [], 0
    while pos < len(data):
        header = data[pos : pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[pos + 8 : pos + 12])
        if rec.masked_crc(header) != length_crc:
            raise ValueError(f"length CRC mismatch at byte {pos}")
        payload = data[pos + 12 : pos + 12 + length]
        (data_crc,) = struct.unpack("<I", data[pos + 12 + length : pos + 16 + length])
        if rec.masked_crc(payload) != data_crc:
            raise ValueError(f"data CRC mismatch in the record at byte {pos}")
        payloads.append(payload)
        pos += length + 16
    return payloads


def decode_digit(serialized):
    example = tf.train.Example.FromString(serialized)
    f = example.features.feature
    h, w, d = (f[k].int64_list.value[0] for k in ("height", "width", "depth"))
    image = np.frombuffer(f["image_raw"].bytes_list.value[0], dtype=np.uint8).reshape(h, w, d)
    return image, f["label"].int64_list.value[0]


def parse_batch(serialized):
    spec = {
        "id": tf.io.FixedLenFeature([], tf.int64),
        "score": tf.io.FixedLenFeature([], tf.float32, default_value=-1.0),
        "tags": tf.io.RaggedFeature(tf.string),
    }
    return tf.io.parse_example(serialized, spec)


SOLUTIONS = {
    "03.write_examples": write_examples,
    "03.split_records": split_records,
    "03.decode_digit": decode_digit,
    "03.parse_batch": parse_batch,
}


test_lesson_has_its_exercises_in_order, test_solution_passes_on_fresh_inputs, test_stub_fails = (
    exercise_suite("03", SOLUTIONS)
)


@pytest.mark.parametrize("seed", range(3))
def test_solutions_pass_on_many_draws(seed):
    for key, func in SOLUTIONS.items():
        ex.check(key, func, seed=seed)


# -- planted mistakes ---------------------------------------------------------


def write_without_framing(path, rows):
    with open(path, "wb") as f:
        for row in rows:
            f.write(_row_example(row).SerializeToString())


def write_gzip(path, rows):
    with tf.io.TFRecordWriter(path, options="GZIP") as writer:
        for row in rows:
            writer.write(_row_example(row).SerializeToString())


def write_score_as_int(path, rows):
    with tf.io.TFRecordWriter(path) as writer:
        for row in rows:
            example = _row_example(row)
            example.features.feature["score"].CopyFrom(
                tf.train.Feature(int64_list=tf.train.Int64List(value=[int(row["score"])]))
            )
            writer.write(example.SerializeToString())


def write_reversed(path, rows):
    write_examples(path, list(reversed(rows)))


def write_first_only(path, rows):
    write_examples(path, rows[:1])


@pytest.mark.parametrize(
    "func, message",
    [
        (write_without_framing, "not valid TFRecord framing"),
        (write_gzip, "GZIP"),
        (write_score_as_int, "feature 'score' is a int64_list, expected float_list"),
        (write_reversed, "in the order of `rows`"),
        (write_first_only, "holds 1 records, expected"),
        (lambda path, rows: None, "did not create"),
    ],
)
def test_write_mistakes_are_named(func, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("03.write_examples", func)


def split_without_crc(data):
    payloads, pos = [], 0
    while pos < len(data):
        (length,) = struct.unpack("<Q", data[pos : pos + 8])
        payloads.append(data[pos + 12 : pos + 12 + length])
        pos += length + 16
    return payloads


def split_keeps_footer(data):
    return [p + struct.pack("<I", rec.masked_crc(p)) for p in split_records(data)]


def split_big_endian(data):
    payloads, pos = [], 0
    while pos < len(data):
        (length,) = struct.unpack(">Q", data[pos : pos + 8])
        payload = data[pos + 12 : pos + 12 + length]
        if rec.masked_crc(payload) != struct.unpack("<I", data[-4:])[0]:
            raise ValueError("data CRC mismatch")
        payloads.append(payload)
        pos += length + 16
    return payloads


def split_returns_joined(data):
    return b"".join(split_records(data))


@pytest.mark.parametrize(
    "func, message",
    [
        (split_without_crc, "wrong data CRC but your function returned list"),
        (split_keeps_footer, "still ends with its 4-byte data CRC"),
        (split_big_endian, "a valid file made your function raise ValueError"),
        (split_returns_joined, "return a list of bytes|wrong data CRC"),
    ],
)
def test_split_mistakes_are_named(func, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("03.split_records", func)


def digit_fixed_8x8(serialized):
    example = tf.train.Example.FromString(serialized)
    f = example.features.feature
    image = np.frombuffer(f["image_raw"].bytes_list.value[0], dtype=np.uint8).reshape(8, 8, 1)
    return image, f["label"].int64_list.value[0]


def digit_width_first(serialized):
    image, label = decode_digit(serialized)
    h, w, d = image.shape
    return image.reshape(w, h, d), label


def digit_float(serialized):
    image, label = decode_digit(serialized)
    return image.astype(np.float32), label


def digit_label_array(serialized):
    image, label = decode_digit(serialized)
    return image, [label]


@pytest.mark.parametrize(
    "func, message",
    [
        (digit_fixed_8x8, "(?s)raised ValueError.*read height, width and depth"),
        (digit_width_first, "height comes first"),
        (digit_float, "the image is float32"),
        (digit_label_array, "expected the int"),
        (lambda s: decode_digit(s)[0], "return \\(image, label\\)"),
    ],
)
def test_digit_mistakes_are_named(func, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("03.decode_digit", func)


def parse_varlen(serialized):
    spec = {
        "id": tf.io.FixedLenFeature([], tf.int64),
        "score": tf.io.FixedLenFeature([], tf.float32, default_value=-1.0),
        "tags": tf.io.VarLenFeature(tf.string),
    }
    return tf.io.parse_example(serialized, spec)


def parse_default_zero(serialized):
    spec = {
        "id": tf.io.FixedLenFeature([], tf.int64),
        "score": tf.io.FixedLenFeature([], tf.float32, default_value=0.0),
        "tags": tf.io.RaggedFeature(tf.string),
    }
    return tf.io.parse_example(serialized, spec)


def parse_no_default(serialized):
    spec = {
        "id": tf.io.FixedLenFeature([], tf.int64),
        "score": tf.io.FixedLenFeature([], tf.float32),
        "tags": tf.io.RaggedFeature(tf.string),
    }
    return tf.io.parse_example(serialized, spec)


def parse_one_by_one(serialized):
    first = tf.io.parse_single_example(serialized[0], {"id": tf.io.FixedLenFeature([], tf.int64)})
    return {"id": first["id"], "score": first["id"], "tags": first["id"]}


@pytest.mark.parametrize(
    "func, message",
    [
        (parse_varlen, "SparseTensor.*RaggedFeature"),
        (parse_default_zero, "expected the default -1.0"),
        (parse_no_default, "raised .*score"),
        (parse_one_by_one, "one id per record"),
    ],
)
def test_parse_batch_mistakes_are_named(func, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("03.parse_batch", func)


# -- issue 13: helpers as oracles, messages ---------------------------------------


def test_wrapping_the_course_reader_is_not_an_answer():
    import io

    def split_records(data):
        try:
            return list(rec.read_records("x", fileobj=io.BytesIO(data)))
        except rec.RecordError as err:
            raise ValueError(str(err)) from None

    with pytest.raises(CheckFailed, match=r"read_records is switched off.*use your own code"):
        ex.check("03.split_records", split_records, seed=2)
    assert list(rec.read_records("x", fileobj=__import__("io").BytesIO(b""))) == []


def _frombuffer_without_dtype(serialized):
    f = tf.train.Example.FromString(serialized).features.feature
    h, w, d = (f[k].int64_list.value[0] for k in ("height", "width", "depth"))
    pixels = np.frombuffer(f["image_raw"].bytes_list.value[0])  # float64: 8 bytes a value
    return pixels.reshape(h, w, d), f["label"].int64_list.value[0]


def _always_8x8(serialized):
    f = tf.train.Example.FromString(serialized).features.feature
    pixels = np.frombuffer(f["image_raw"].bytes_list.value[0], dtype=np.uint8)
    return pixels.reshape(8, 8, 1), f["label"].int64_list.value[0]


@pytest.mark.parametrize("seed", [0, 1, None])
def test_frombuffer_without_dtype_is_told_about_the_dtype(seed):
    with pytest.raises(CheckFailed) as info:
        ex.check("03.decode_digit", _frombuffer_without_dtype, seed=seed)
    assert "float64" in str(info.value) and "dtype=np.uint8" in str(info.value)
    assert "not all 8 x 8" not in str(info.value)


def test_a_hard_coded_8x8_shape_is_told_images_differ():
    with pytest.raises(CheckFailed, match="images are not all 8 x 8"):
        ex.check("03.decode_digit", _always_8x8, seed=0)
