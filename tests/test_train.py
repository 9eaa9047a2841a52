"""Tests for helpers.train: device choice, MobileNet builder, input-wait share, loop, profile."""

from __future__ import annotations

import math
import time
from pathlib import Path
from types import SimpleNamespace

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers import train as T

SIZE = 32
CLASSES = 3


def _device(kind: str, index: int = 0, **details: object) -> SimpleNamespace:
    device = SimpleNamespace(device_type=kind, name=f"/physical_device:{kind}:{index}")
    if details:
        device.details = details
    return device


@pytest.fixture
def restore_policy():
    previous = keras.mixed_precision.global_policy().name
    yield
    keras.mixed_precision.set_global_policy(previous)


# --------------------------------------------------------------------------- device choice


def test_gpu_present_gives_mixed_float16() -> None:
    choice = T.choose_device([_device("CPU"), _device("GPU", 0), _device("GPU", 1)])
    assert choice.name == "GPU:0" and choice.device_type == "GPU"
    assert choice.mixed_precision and choice.policy == "mixed_float16"
    assert choice.tf_device == "/GPU:0"
    assert "2 GPU" in choice.reason


def test_cpu_only_gives_float32() -> None:
    choice = T.choose_device([_device("CPU")])
    assert (choice.name, choice.mixed_precision, choice.policy) == ("CPU:0", False, "float32")
    assert "no GPU" in choice.reason
    assert T.choose_device([]).name == "CPU:0"


def test_old_gpu_or_opt_out_gives_float32() -> None:
    old = T.choose_device([_device("GPU", compute_capability=(6, 1))])
    assert old.name == "GPU:0" and old.policy == "float32" and "6.1" in old.reason
    new = T.choose_device([_device("GPU", compute_capability=(8, 0))])
    assert new.policy == "mixed_float16"
    off = T.choose_device([_device("GPU")], allow_mixed_precision=False)
    assert off.policy == "float32" and not off.mixed_precision


def test_choose_device_on_this_machine() -> None:
    choice = T.choose_device()
    has_gpu = bool(tf.config.list_physical_devices("GPU"))
    assert choice.device_type == ("GPU" if has_gpu else "CPU")


def test_apply_precision_sets_and_returns_previous(restore_policy) -> None:
    keras.mixed_precision.set_global_policy("float32")
    gpu = T.choose_device([_device("GPU")])
    assert T.apply_precision(gpu) == "float32"
    assert keras.mixed_precision.global_policy().name == "mixed_float16"
    assert T.apply_precision("float32") == "mixed_float16"


# --------------------------------------------------------------------------- model


def test_imagenet_refused_when_not_cached(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    with pytest.raises(ValueError, match="nothing downloads") as err:
        T.build_mobilenet(CLASSES, 224, alpha=0.25, weights="imagenet")
    assert "mobilenet_2_5_224_tf_no_top.h5" in str(err.value)
    with pytest.raises(ValueError, match="image_size"):
        T.build_mobilenet(CLASSES, 64, alpha=0.25, weights="imagenet")
    with pytest.raises(FileNotFoundError, match="not found"):
        T.build_mobilenet(CLASSES, SIZE, alpha=0.25, weights=tmp_path / "missing.h5")
    assert T.imagenet_weights_path(1.0, 224) == (
        tmp_path / "models" / "mobilenet_1_0_224_tf_no_top.h5"
    )


def test_bad_arguments_refused() -> None:
    with pytest.raises(ValueError, match="image_size >= 32"):
        T.build_mobilenet(CLASSES, 16)
    with pytest.raises(ValueError, match="num_classes"):
        T.build_mobilenet(0, SIZE)


def test_local_weights_file_is_loaded(tmp_path: Path) -> None:
    base = keras.applications.MobileNet(
        include_top=False, weights=None, input_shape=(SIZE, SIZE, 3), alpha=0.25
    )
    path = tmp_path / "base.weights.h5"
    base.save_weights(path)
    model = T.build_mobilenet(CLASSES, SIZE, alpha=0.25, weights=path, compile_model=False)
    np.testing.assert_array_equal(
        model.get_layer("conv1").get_weights()[0], base.get_layer("conv1").get_weights()[0]
    )


def test_bn_momentum_is_applied_to_every_batchnorm() -> None:
    model = T.build_mobilenet(CLASSES, SIZE, alpha=0.25, bn_momentum=0.9, compile_model=False)
    norms = [x for x in model.layers if isinstance(x, keras.layers.BatchNormalization)]
    assert norms and all(x.momentum == 0.9 for x in norms)
    with pytest.raises(ValueError, match="bn_momentum"):
        T.build_mobilenet(CLASSES, SIZE, alpha=0.25, bn_momentum=1.5)


def test_mixed_precision_keeps_softmax_float32(restore_policy) -> None:
    T.apply_precision("mixed_float16")
    model = T.build_mobilenet(CLASSES, SIZE, alpha=0.25)
    assert model.get_layer("conv1").compute_dtype == "float16"
    head = model.get_layer("predictions")
    assert head.compute_dtype == "float32" and model.output.dtype == "float32"
    assert type(model.optimizer).__name__ == "LossScaleOptimizer"


@pytest.fixture(scope="module")
def model() -> keras.Model:
    keras.utils.set_random_seed(0)
    return T.build_mobilenet(CLASSES, SIZE, alpha=0.25, dropout=0.1)


def _data(n: int = 48, batch: int = 16, seed: int = 0) -> tf.data.Dataset:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, SIZE, SIZE, 3)).astype(np.float32)
    y = tf.one_hot(rng.integers(0, CLASSES, n), CLASSES)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)


def test_build_mobilenet_trains_one_step(model: keras.Model) -> None:
    assert model.input_shape == (None, SIZE, SIZE, 3)
    assert model.output_shape == (None, CLASSES)
    assert type(model.get_layer("avg_pool")).__name__ == "GlobalAveragePooling2D"
    x, y = next(iter(_data()))
    before = [w.copy() for w in model.get_layer("predictions").get_weights()]
    logs = model.train_on_batch(x, y, return_dict=True)
    assert math.isfinite(logs["loss"]) and 0.0 <= logs["accuracy"] <= 1.0
    after = model.get_layer("predictions").get_weights()
    assert not np.array_equal(before[0], after[0])
    probs = model.predict_on_batch(x)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)


# --------------------------------------------------------------------------- input wait


@pytest.mark.parametrize(
    ("share", "verdict"),
    [
        (0.5, "highly input-bound"),
        (0.20, "highly input-bound"),
        (0.1999, "moderately input-bound"),
        (0.05, "moderately input-bound"),
        (0.0499, "not input-bound"),
        (0.0, "not input-bound"),
    ],
)
def test_classify_input_bound_thresholds(share: float, verdict: str) -> None:
    assert T.classify_input_bound(share) == verdict


def test_classify_input_bound_rejects_nonsense() -> None:
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError):
            T.classify_input_bound(bad)


def _sleepy(ds: tf.data.Dataset, seconds: float) -> tf.data.Dataset:
    def pause(x: tf.Tensor, y: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        def sleep(a: tf.Tensor) -> tf.Tensor:
            time.sleep(seconds)
            return a

        x2 = tf.py_function(sleep, [x], tf.float32)
        x2.set_shape(x.shape)
        return x2, y

    return ds.map(pause)


def test_input_wait_share_high_when_the_input_sleeps_low_when_not(model: keras.Model) -> None:
    fast = _data().cache().repeat().prefetch(2)
    slow = _sleepy(_data().repeat(), 0.15)
    quick = T.measure_input_wait(model, fast, steps=6, warmup=1)
    sleepy = T.measure_input_wait(model, slow, steps=4, warmup=1)
    for result in (quick, sleepy):
        assert 0.0 <= result["input_wait_share"] <= 1.0
        assert result["steps"] in (4, 6)
        assert result["mean_step_ms"] >= result["mean_wait_ms"] >= 0
    assert sleepy["input_wait_share"] > 0.5 and sleepy["verdict"] == "highly input-bound"
    assert quick["input_wait_share"] < 0.3
    assert quick["input_wait_share"] < sleepy["input_wait_share"]


def test_measure_input_wait_needs_data(model: keras.Model) -> None:
    with pytest.raises(ValueError, match="ran out"):
        T.measure_input_wait(model, _data(n=16), steps=3, warmup=1)


def test_train_history_has_per_epoch_input_wait(model: keras.Model) -> None:
    history = T.train(model, _data(), _data(seed=1), epochs=2, progress=False)
    for key in ("loss", "accuracy", "val_loss", "val_accuracy", "input_wait_share", "steps"):
        assert len(history[key]) == 2, key
    assert history["steps"] == [3, 3]
    assert all(0.0 <= s <= 1.0 for s in history["input_wait_share"])
    assert all(
        v in {"highly input-bound", "moderately input-bound", "not input-bound"}
        for v in history["input_bound"]
    )
    assert all(math.isfinite(v) for v in history["loss"] + history["val_loss"])
    limited = T.train(model, _data().repeat(), epochs=1, steps_per_epoch=2, progress=True)
    assert limited["steps"] == [2] and "val_loss" not in limited


def test_evaluate_matches_keras_and_is_weighted(model: keras.Model) -> None:
    data = _data(n=40, batch=16)  # batches of 16, 16, 8: a per-batch mean would be biased
    ours = T.evaluate(model, data)
    keras_logs = model.evaluate(data, verbose=0, return_dict=True)
    assert ours["loss"] == pytest.approx(keras_logs["loss"], rel=1e-4)
    assert ours["accuracy"] == pytest.approx(keras_logs["accuracy"], abs=1e-6)
    assert set(T.evaluate(model, data, steps=1)) == {"loss", "accuracy"}
    with pytest.raises(ValueError, match="no batches"):
        T.evaluate(model, data.take(0))


def test_profile_steps_writes_a_trace_on_cpu(model: keras.Model, tmp_path: Path) -> None:
    files = T.profile_steps(tmp_path / "profile", model, _data().repeat(), steps=2, warmup=1)
    assert any(f.endswith(".xplane.pb") for f in files)
