"""Lesson 00 exercises: the solutions pass, stubs fail, planted mistakes are named."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from helpers import exercises as ex
from helpers.exercises import CheckFailed
from lesson_suite import exercise_suite

# -- the solutions, as in solutions/00_why_tfrecord.ipynb ---------------------


def input_wait_share(steps):
    wait = sum(w for w, _ in steps)
    total = sum(w + c for w, c in steps)
    return wait / total


def input_bound_verdict(share):
    if share >= 0.20:
        return "highly input-bound"
    if share >= 0.05:
        return "moderately input-bound"
    return "not input-bound"


def _feature(value):
    if isinstance(value, bytes):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
    if isinstance(value, float):
        return tf.train.Feature(float_list=tf.train.FloatList(value=[value]))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


def _pack(paths, labels, out_path, *, encoded=None, label=None, filename=None, close=True):
    encoded = encoded or (lambda path: open(path, "rb").read())  # noqa: SIM115
    label = label or (lambda value: value)
    filename = filename or (lambda path: os.path.basename(path).encode())
    writer = tf.io.TFRecordWriter(out_path)
    count = 0
    for path, value in zip(paths, labels, strict=True):
        features = {
            "image/encoded": _feature(encoded(path)),
            "image/class/label": _feature(label(value)),
            "image/filename": _feature(filename(path)),
        }
        example = tf.train.Example(features=tf.train.Features(feature=features))
        writer.write(example.SerializeToString())
        count += 1
    if close:
        writer.close()
    return count


def pack_files(paths, labels, out_path):
    return _pack(paths, labels, out_path)


SOLUTIONS = {
    "00.input_wait_share": input_wait_share,
    "00.input_bound_verdict": input_bound_verdict,
    "00.pack_files": pack_files,
}


test_lesson_has_its_exercises_in_order, test_solution_passes_on_fresh_inputs, test_stub_fails = (
    exercise_suite("00", SOLUTIONS)
)


@pytest.mark.parametrize("key", list(SOLUTIONS))
def test_answers_cross_the_grader_boundary_as_json(key, tmp_path):
    exercise = ex.get(key)
    cases = exercise.make_cases(np.random.default_rng(5), tmp_path)
    answers = json.loads(json.dumps(ex.run_cases(exercise, SOLUTIONS[key], cases)))
    passed, detail = ex.verify_answers(exercise, cases, answers)
    assert passed, detail


# -- 00.input_wait_share --------------------------------------------------------


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (lambda steps: float(np.mean([w / (w + c) for w, c in steps])), "mean of per-step shares"),
        (
            lambda steps: sum(w for w, _ in steps) / sum(c for _, c in steps),
            "divided by the compute",
        ),
        (lambda steps: 100 * input_wait_share(steps), "not a percentage"),
        (lambda steps: 1 - input_wait_share(steps), "share spent computing"),
        (lambda steps: f"{input_wait_share(steps):.0%}", "should return a number"),
    ],
    ids=["mean-of-ratios", "over-compute", "percent", "compute-share", "string"],
)
def test_input_wait_share_names_the_mistake(mistake, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("00.input_wait_share", mistake, seed=4)


# -- 00.input_bound_verdict -----------------------------------------------------


def _strict(share):
    if share > 0.20:
        return "highly input-bound"
    if share > 0.05:
        return "moderately input-bound"
    return "not input-bound"


def _percent(share):
    return input_bound_verdict(share / 100)


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_strict, r"exactly (5|20)% already counts"),
        (_percent, "the share is a fraction"),
        (lambda share: "HIGHLY" if share >= 0.2 else "fine", "return exactly one of"),
        (lambda share: "moderately input-bound", "expected"),
    ],
    ids=["strict-inequality", "percent", "own-words", "constant"],
)
def test_input_bound_verdict_names_the_mistake(mistake, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("00.input_bound_verdict", mistake, seed=1)


def _against_percent(share):
    if share >= 20:
        return "highly input-bound"
    if share >= 5:
        return "moderately input-bound"
    return "not input-bound"


@pytest.mark.parametrize("seed", range(12))
def test_comparing_a_fraction_with_20_and_5_is_told_the_scale_not_the_inequality(seed):
    with pytest.raises(CheckFailed) as info:
        ex.check("00.input_bound_verdict", _against_percent, seed=seed)
    assert "the share is a fraction" in str(info.value)
    assert ">=, not >" not in str(info.value)


@pytest.mark.parametrize("seed", range(6))
def test_a_strict_inequality_is_told_so_on_every_draw(seed):
    with pytest.raises(CheckFailed, match=r"exactly (5|20)% already counts"):
        ex.check("00.input_bound_verdict", _strict, seed=seed)


def test_verdict_cases_always_include_both_boundaries():
    cases = ex.get("00.input_bound_verdict").make_cases(np.random.default_rng(9), None)
    shares = {c["share"] for c in cases}
    assert {0.05, 0.2} <= shares and np.nextafter(0.2, 0.0) in shares


# -- 00.pack_files --------------------------------------------------------------


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (
            lambda paths, labels, out_path: _pack(
                paths, labels, out_path, encoded=lambda path: path.encode()
            ),
            "file's \\*name\\*",
        ),
        (
            lambda paths, labels, out_path: _pack(paths, labels, out_path, label=float),
            "is a float_list",
        ),
        (
            lambda paths, labels, out_path: _pack(
                paths, labels, out_path, label=lambda v: (v + 1) % 10
            ),
            "expected \\[\\d\\]",
        ),
        (
            lambda paths, labels, out_path: _pack(
                paths, labels, out_path, filename=lambda path: path.encode()
            ),
            "full path",
        ),
        (
            lambda paths, labels, out_path: _pack(paths[::-1], labels[::-1], out_path),
            "order of paths",
        ),
        (
            lambda paths, labels, out_path: _pack(paths[:-1], labels[:-1], out_path),
            r"holds \d+ records for \d+ files",
        ),
        (
            lambda paths, labels, out_path: _pack(paths, labels, out_path) - 1,
            "return the number of records",
        ),
        (lambda paths, labels, out_path: None, "no file at out_path"),
        (
            lambda paths, labels, out_path: open(out_path, "wb").write(
                b"not a tfrecord file at all"
            ),
            "not a valid TFRecord",
        ),
    ],
    ids=[
        "name-not-bytes",
        "float-label",
        "wrong-label",
        "full-path",
        "reversed",
        "one-missing",
        "wrong-count",
        "nothing",
        "garbage",
    ],
)
def test_pack_files_names_the_mistake(mistake, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("00.pack_files", mistake, seed=2)


def test_pack_files_missing_feature_is_named(tmp_path):
    def no_filename(paths, labels, out_path):
        with tf.io.TFRecordWriter(out_path) as writer:
            for path, label in zip(paths, labels, strict=True):
                example = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "image/encoded": _feature(open(path, "rb").read()),  # noqa: SIM115
                            "image/class/label": _feature(label),
                        }
                    )
                )
                writer.write(example.SerializeToString())
        return len(paths)

    with pytest.raises(CheckFailed, match="no 'image/filename' feature"):
        ex.check("00.pack_files", no_filename, seed=2)


def test_packed_file_is_readable_by_the_course_pipeline(tmp_path):
    from helpers import pipeline
    from helpers.fixture import DATA_DIR

    folder = pipeline.list_image_folder(DATA_DIR / "images")
    out = tmp_path / "packed.tfrecord"
    assert pack_files(folder.paths[:10], folder.labels[:10], str(out)) == 10
    ds = pipeline.make_dataset(str(out), batch_size=5, image_size=16, num_classes=6, training=False)
    labels = np.concatenate([y.numpy().argmax(axis=1) for _, y in ds])
    assert labels.tolist() == folder.labels[:10]
