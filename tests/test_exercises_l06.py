"""Lesson 06 exercises: the solutions pass, stubs fail, planted mistakes are named."""

from __future__ import annotations

import pytest
import tensorflow as tf

from helpers import exercises as ex
from helpers.exercises import CheckFailed
from lesson_suite import exercise_suite

# -- the solutions, as in solutions/06_mobilenet_training.ipynb ----------------


def preprocess(encoded, label, image_size, num_classes):
    image = tf.io.decode_jpeg(encoded, channels=3)
    image = tf.image.resize(image, [image_size, image_size])
    image = image / 127.5 - 1.0
    tf.debugging.assert_non_negative(label, message="label < 0")
    tf.debugging.assert_less(label, tf.cast(num_classes, label.dtype), message="label >= N")
    return image, tf.one_hot(label, num_classes)


def pick_device(devices):
    gpus = [d for d in devices if d.device_type == "GPU"]
    if not gpus:
        return {"device": "CPU:0", "policy": "float32"}
    gpu = gpus[0]
    name = "GPU:" + gpu.name.rsplit(":", 1)[-1]
    capability = tuple(gpu.details.get("compute_capability") or ())
    fast_fp16 = not capability or capability >= (7, 0)
    return {"device": name, "policy": "mixed_float16" if fast_fp16 else "float32"}


def unstarve(settings):
    return dict(settings, parallel_reads=16, num_parallel_calls="AUTOTUNE", prefetch=4)


SOLUTIONS = {
    "06.preprocess": preprocess,
    "06.pick_device": pick_device,
    "06.unstarve": unstarve,
}


test_lesson_has_its_exercises_in_order, test_solution_passes_on_fresh_inputs, test_stub_fails = (
    exercise_suite("06", SOLUTIONS)
)


def test_preprocess_with_the_course_helpers_passes():
    from helpers.pipeline import one_hot_checked, preprocess_image

    def with_helpers(encoded, label, image_size, num_classes):
        return preprocess_image(encoded, image_size), one_hot_checked(label, num_classes)

    ex.check("06.preprocess", with_helpers, seed=3)


# -- 06.preprocess -------------------------------------------------------------


def _unchecked(encoded, label, image_size, num_classes):
    image = tf.image.resize(tf.io.decode_jpeg(encoded, channels=3), [image_size, image_size])
    return image / 127.5 - 1.0, tf.one_hot(label, num_classes)


def _divided_by_255(encoded, label, image_size, num_classes):
    image, target = preprocess(encoded, label, image_size, num_classes)
    return (image + 1.0) / 2.0, target


def _not_normalised(encoded, label, image_size, num_classes):
    image, target = preprocess(encoded, label, image_size, num_classes)
    return (image + 1.0) * 127.5, target


def _one_channel(encoded, label, image_size, num_classes):
    image, target = preprocess(encoded, label, image_size, num_classes)
    image = tf.image.resize(tf.io.decode_jpeg(encoded), [image_size, image_size]) / 127.5 - 1
    return image, target


def _no_resize(encoded, label, image_size, num_classes):
    image, target = preprocess(encoded, label, image_size, num_classes)
    return tf.image.resize(image, [image_size // 2, image_size // 2]), target


def _cropped(encoded, label, image_size, num_classes):
    image = tf.io.decode_jpeg(encoded, channels=3)
    image = tf.image.resize_with_crop_or_pad(image, image_size, image_size)
    _, target = preprocess(encoded, label, image_size, num_classes)
    return tf.cast(image, tf.float32) / 127.5 - 1.0, target


def _label_off_by_one(encoded, label, image_size, num_classes):
    image, _ = preprocess(encoded, label, image_size, num_classes)
    return image, tf.one_hot((label + 1) % num_classes, num_classes)


def _sparse_label(encoded, label, image_size, num_classes):
    image, _ = preprocess(encoded, label, image_size, num_classes)
    return image, label


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_unchecked, "all-zero one-hot vector, silently"),
        (_divided_by_255, r"\[0, 1\]"),
        (_not_normalised, r"expects \[-1, 1\]"),
        (_one_channel, "three"),
        (_no_resize, "shape"),
        (_cropped, "differ from decode"),
        (_label_off_by_one, "hot at"),
        (_sparse_label, "one-hot vector"),
    ],
)
def test_preprocess_mistakes_are_named(mistake, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("06.preprocess", mistake, seed=4)


# -- 06.pick_device -------------------------------------------------------------


def _string_compare(devices):
    gpus = [d for d in devices if d.device_type == "GPU"]
    if not gpus:
        return {"device": "CPU:0", "policy": "float32"}
    cc = gpus[0].details.get("compute_capability") or (9, 9)
    fast = f"{cc[0]}.{cc[1]}" >= "7.0"
    return {"device": "GPU:0", "policy": "mixed_float16" if fast else "float32"}


def _strictly_newer(devices):
    out = pick_device(devices)
    cc = next(
        (
            tuple(d.details.get("compute_capability") or ())
            for d in devices
            if d.device_type == "GPU"
        ),
        (),
    )
    if cc == (7, 0):
        out["policy"] = "float32"
    return out


def _mixed_everywhere(devices):
    out = pick_device(devices)
    out["policy"] = "mixed_float16"
    return out


def _best_gpu(devices):
    gpus = [d for d in devices if d.device_type == "GPU"]
    if not gpus:
        return {"device": "CPU:0", "policy": "float32"}
    best = max(gpus, key=lambda d: tuple(d.details.get("compute_capability") or (99, 0)))
    return pick_device([best])


def _returns_string(devices):
    return pick_device(devices)["device"]


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_string_compare, "compare .major, minor. tuples"),
        (_strictly_newer, "policy 'float32', expected 'mixed_float16'"),
        (_mixed_everywhere, "expected 'float32'"),
        (_best_gpu, "chose device|chose policy"),
        (_returns_string, "keys 'device' and 'policy'"),
    ],
)
def test_pick_device_mistakes_are_named(mistake, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("06.pick_device", mistake, seed=5)


# -- 06.unstarve ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (lambda settings: settings, "waited .* of each step"),  # still starved
        (
            lambda settings: dict(settings, prefetch=4),
            "waited .* of each step",
        ),  # reads stay serial
        (lambda settings: dict(settings, cache=True), "does not have"),
        (lambda settings: dict(settings, parallel_reads=0), "parallel_reads=0"),
        (lambda settings: [16, "AUTOTUNE", 4], "return a dict"),
    ],
)
def test_unstarve_mistakes_are_named(mistake, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("06.unstarve", mistake, seed=6)


def test_unstarve_share_is_measured_by_the_checker_not_reported():
    """A result claiming a share is refused: only settings are accepted, and they are timed here."""
    with pytest.raises(CheckFailed, match="does not have"):
        ex.check("06.unstarve", lambda settings: {"input_wait_share": 0.0}, seed=7)


# -- issue 13/17: oracles, non-finite answers, files the kernel could change -------


def test_wrapping_the_course_device_choice_is_not_an_answer():
    from helpers.train import choose_device

    def pick_device(devices):
        choice = choose_device(devices)
        return {"device": choice.name, "policy": choice.policy}

    with pytest.raises(CheckFailed, match=r"choose_device is switched off.*use your own code"):
        ex.check("06.pick_device", pick_device, seed=1)


def _all_nan(encoded, label, image_size, num_classes):
    image, target = preprocess(encoded, label, image_size, num_classes)
    return tf.fill(tf.shape(image), float("nan")), target


def test_an_all_nan_image_is_refused():
    with pytest.raises(CheckFailed, match=r"NaN or infinite.*NaN and infinity are never"):
        ex.check("06.preprocess", _all_nan, seed=1)


def test_a_nan_setting_is_refused():
    def nan_settings(settings):
        return dict(settings, parallel_reads=16, num_parallel_calls=4, prefetch=float("nan"))

    with pytest.raises(CheckFailed, match=r"returned nan at \['prefetch'\].*NaN and infinity"):
        ex.check("06.unstarve", nan_settings, seed=1)


def test_an_image_file_changed_by_the_student_does_not_change_the_reference():
    import numpy as np
    from PIL import Image

    def overwrite_and_return_it(encoded, label, image_size, num_classes):
        return preprocess(encoded, label, image_size, num_classes)

    exercise = ex.get("06.preprocess")
    import tempfile
    from pathlib import Path

    cases = exercise.make_cases(np.random.default_rng(3), Path(tempfile.mkdtemp()))
    case = cases[0]
    flat = Image.fromarray(np.zeros((50, 50, 3), np.uint8))
    flat.save(case["path"], format="JPEG")  # what a hostile kernel could do to the file
    answer = ex.run_cases(exercise, overwrite_and_return_it, [case])
    passed, detail = ex.verify_answers(exercise, [case], answer)
    assert not passed and "differ" in detail
