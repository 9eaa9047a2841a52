"""MobileNet training from TFRecords, device / precision choice, input-wait share (lesson 06).

* :func:`choose_device` picks the GPU with mixed precision when one is present
  and the CPU with float32 otherwise; it takes the device list as an argument
  so the choice is testable with fake devices. :func:`apply_precision` sets the
  Keras global dtype policy.
* :func:`build_mobilenet` is seed 000's model: ``MobileNet(include_top=False)``
  + global average pooling + dense softmax (kept float32 under mixed
  precision), Adam and categorical cross-entropy. ``weights`` is ``None`` or a
  local file: ``"imagenet"`` is refused unless Keras already has the file
  cached, because nothing downloads at run time in this course.
* :func:`measure_input_wait` and :func:`train` split each step into the time
  spent waiting for the next batch (``next(iterator)``) and the time spent in
  the training step, and classify the share with the TensorBoard profiler's
  thresholds (:func:`classify_input_bound`).

Why a custom loop rather than a Keras callback: Keras 3 pulls the next batch
*inside* its compiled train function (``next(iterator)`` within the
``tf.function``), so callbacks cannot tell input wait from compute. Here the
loop pulls the batch in Python, then calls ``train_on_batch``, which returns
NumPy logs and therefore waits for the step to finish.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

__all__ = [
    "HIGHLY_INPUT_BOUND",
    "MODERATELY_INPUT_BOUND",
    "DeviceChoice",
    "apply_precision",
    "build_mobilenet",
    "choose_device",
    "classify_input_bound",
    "evaluate",
    "imagenet_weights_path",
    "measure_input_wait",
    "profile_steps",
    "train",
]

# TensorBoard profiler's input-pipeline analysis: share of step time waiting for input.
HIGHLY_INPUT_BOUND = 0.20
MODERATELY_INPUT_BOUND = 0.05

# ---------------------------------------------------------------------------
# Device and precision
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceChoice:
    """Where to train and in which precision.

    Attributes:
      name: ``"GPU:0"`` or ``"CPU:0"``.
      device_type: ``"GPU"`` or ``"CPU"``.
      mixed_precision: True when ``policy`` is ``"mixed_float16"``.
      policy: Keras dtype policy name (``"mixed_float16"`` or ``"float32"``).
      reason: one sentence a learner can read.
    """

    name: str
    device_type: str
    mixed_precision: bool
    policy: str
    reason: str

    @property
    def tf_device(self) -> str:
        """The name for ``with tf.device(...)``, e.g. ``"/GPU:0"``."""
        return "/" + self.name


def _short_name(device: Any, device_type: str) -> str:
    name = str(getattr(device, "name", ""))
    parts = name.rsplit(":", 2)
    if len(parts) == 3 and parts[-2] == device_type and parts[-1].isdigit():
        return f"{device_type}:{parts[-1]}"
    return f"{device_type}:0"


def _compute_capability(device: Any) -> tuple[int, int] | None:
    details: Any = getattr(device, "details", None)
    if details is None and isinstance(device, tf.config.PhysicalDevice):
        try:
            details = tf.config.experimental.get_device_details(device)
        except (ValueError, RuntimeError):
            details = None
    capability = (details or {}).get("compute_capability")
    if capability is None:
        return None
    major, minor = (int(v) for v in capability)
    return major, minor


def choose_device(
    devices: Sequence[Any] | None = None, *, allow_mixed_precision: bool = True
) -> DeviceChoice:
    """Pick the first GPU (with mixed precision) if there is one, else the CPU (float32).

    Mixed precision (float16 compute, float32 variables) pays on GPUs with
    Tensor Cores (compute capability >= 7.0); on older GPUs and on CPUs it is
    slower than float32, so those get float32.

    Args:
      devices: objects with ``.device_type`` and ``.name`` (and optionally
        ``.details`` with ``compute_capability``); default
        ``tf.config.list_physical_devices()``. Pass fakes to test.
      allow_mixed_precision: False forces float32 everywhere.

    Returns:
      A :class:`DeviceChoice`.
    """
    if devices is None:
        devices = tf.config.list_physical_devices()
    gpus = [d for d in devices if getattr(d, "device_type", None) == "GPU"]
    if not gpus:
        return DeviceChoice(
            "CPU:0",
            "CPU",
            False,
            "float32",
            "no GPU found: training on the CPU in float32 (float16 on a CPU is slower, not faster)",
        )
    gpu = gpus[0]
    name = _short_name(gpu, "GPU")
    capability = _compute_capability(gpu)
    if not allow_mixed_precision:
        return DeviceChoice(
            name, "GPU", False, "float32", f"{name} in float32 (mixed precision off)"
        )
    if capability is not None and capability < (7, 0):
        return DeviceChoice(
            name,
            "GPU",
            False,
            "float32",
            f"{name} has compute capability {capability[0]}.{capability[1]} < 7.0 (no Tensor "
            "Cores): float32 is faster there than mixed_float16",
        )
    return DeviceChoice(
        name,
        "GPU",
        True,
        "mixed_float16",
        f"{len(gpus)} GPU(s) found: training on {name} with mixed_float16 (float16 compute, "
        "float32 variables; the softmax output layer stays float32)",
    )


def apply_precision(choice: DeviceChoice | str) -> str:
    """Set the Keras global dtype policy (before building the model).

    Args:
      choice: a :class:`DeviceChoice` or a policy name.

    Returns:
      The previous global policy name, to restore it later.
    """
    policy = choice.policy if isinstance(choice, DeviceChoice) else str(choice)
    previous = keras.mixed_precision.global_policy().name
    keras.mixed_precision.set_global_policy(policy)
    return previous


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------

_IMAGENET_SIZES = (128, 160, 192, 224)
_ALPHA_TEXT = {1.0: "1_0", 0.75: "7_5", 0.5: "5_0", 0.25: "2_5"}


def imagenet_weights_path(alpha: float = 1.0, image_size: int = 224) -> Path:
    """Where Keras caches MobileNet's no-top ImageNet weights (it may not exist).

    Args:
      alpha: width multiplier (0.25, 0.5, 0.75 or 1.0).
      image_size: 128, 160, 192 or 224.

    Returns:
      ``$KERAS_HOME/models/mobilenet_<alpha>_<size>_tf_no_top.h5`` (default
      ``~/.keras``).
    """
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    text = _ALPHA_TEXT.get(float(alpha), "?")
    return Path(home) / "models" / f"mobilenet_{text}_{int(image_size)}_tf_no_top.h5"


def _resolve_weights(
    weights: str | os.PathLike | None, alpha: float, image_size: int
) -> str | None:
    if weights is None:
        return None
    if str(weights) == "imagenet":
        if float(alpha) not in _ALPHA_TEXT or image_size not in _IMAGENET_SIZES:
            raise ValueError(
                f"ImageNet MobileNet weights exist for alpha in {sorted(_ALPHA_TEXT)} and "
                f"image_size in {list(_IMAGENET_SIZES)}, not alpha={alpha}, image_size={image_size}"
            )
        cached = imagenet_weights_path(alpha, image_size)
        if cached.is_file():
            return str(cached)
        raise ValueError(
            "weights='imagenet' would download the weights from the internet, and nothing "
            "downloads at run time in this course. On a machine with network access run once "
            f"keras.applications.MobileNet(include_top=False, alpha={alpha}, "
            f"input_shape=({image_size}, {image_size}, 3)), then copy {cached.name} here and "
            f"pass weights='/path/to/{cached.name}' (or place it at {cached})"
        )
    path = Path(weights)
    if not path.is_file():
        raise FileNotFoundError(
            f"weights file {path} not found: pass None (random initialisation) or the path of "
            "a local MobileNet no-top weights file (.h5 / .weights.h5)"
        )
    return str(path)


def build_mobilenet(
    num_classes: int,
    image_size: int = 224,
    alpha: float = 1.0,
    weights: str | os.PathLike | None = None,
    dropout: float = 0.0,
    learning_rate: float = 1e-3,
    *,
    base_trainable: bool = True,
    bn_momentum: float | None = None,
    compile_model: bool = True,
) -> keras.Model:
    """MobileNet backbone + GlobalAveragePooling2D + Dense softmax, compiled with Adam.

    Inputs are float images in ``[-1, 1]`` (:func:`helpers.pipeline.normalize_mobilenet`),
    targets one-hot. Under a ``mixed_float16`` global policy the backbone
    computes in float16 and the output layer stays float32 (a float16 softmax
    loses precision and can overflow); Keras wraps Adam in a loss-scale
    optimizer when compiling.

    Args:
      num_classes: number of classes N (the Dense layer's width).
      image_size: square input side, >= 32.
      alpha: width multiplier (1.0 = the full MobileNet).
      weights: ``None`` (random init) or a local weights file. ``"imagenet"``
        only if the Keras cache already holds the file (no download).
      dropout: dropout rate before the Dense layer (0 = the seed's recipe).
      learning_rate: Adam's learning rate.
      base_trainable: False freezes the backbone (train only the head).
      bn_momentum: set every BatchNormalization layer's moving-average momentum
        (Keras default 0.99). Training from scratch for a few hundred steps,
        0.99 leaves the inference-time statistics far from the data's and
        validation accuracy near chance; 0.9 catches up ~10x sooner.
      compile_model: compile with Adam + categorical_crossentropy + accuracy.

    Returns:
      The Keras model.

    Raises:
      ValueError: ``"imagenet"`` not cached, bad sizes or class count.
      FileNotFoundError: a weights path that does not exist.
    """
    if isinstance(num_classes, bool) or int(num_classes) < 1:
        raise ValueError(f"num_classes must be a positive int, got {num_classes!r}")
    if int(image_size) < 32:
        raise ValueError(f"MobileNet needs image_size >= 32, got {image_size}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout}")
    image_size = int(image_size)
    weights_path = _resolve_weights(weights, alpha, image_size)
    base = keras.applications.MobileNet(
        include_top=False,
        weights=weights_path,
        input_shape=(image_size, image_size, 3),
        alpha=alpha,
    )
    base.trainable = base_trainable
    if bn_momentum is not None:
        if not 0.0 <= bn_momentum < 1.0:
            raise ValueError(f"bn_momentum must be in [0, 1), got {bn_momentum}")
        for layer in base.layers:
            if isinstance(layer, keras.layers.BatchNormalization):
                layer.momentum = float(bn_momentum)
    x = keras.layers.GlobalAveragePooling2D(name="avg_pool")(base.output)
    if dropout:
        x = keras.layers.Dropout(dropout, name="dropout")(x)
    outputs = keras.layers.Dense(
        int(num_classes), activation="softmax", dtype="float32", name="predictions"
    )(x)
    model = keras.Model(base.input, outputs, name=f"mobilenet_{alpha:g}_{image_size}")
    if compile_model:
        model.compile(
            optimizer=keras.optimizers.Adam(learning_rate=learning_rate),
            loss="categorical_crossentropy",
            metrics=["accuracy"],
        )
        # Create Adam's slot variables now: otherwise the first train step traces the
        # whole graph twice (once to create them), measured 25 s vs 10 s on 2 CPU cores.
        model.optimizer.build(model.trainable_variables)
    return model


# ---------------------------------------------------------------------------
# Input wait vs compute
# ---------------------------------------------------------------------------


def classify_input_bound(share: float) -> str:
    """The TensorBoard profiler's verdict for a share of step time spent waiting for input.

    Args:
      share: input wait / step time, in ``[0, 1]``.

    Returns:
      ``"highly input-bound"`` (>= 20%), ``"moderately input-bound"``
      (5-20%) or ``"not input-bound"`` (< 5%).
    """
    if not 0.0 <= share <= 1.0 or share != share:
        raise ValueError(f"share must be in [0, 1], got {share}")
    if share >= HIGHLY_INPUT_BOUND:
        return "highly input-bound"
    if share >= MODERATELY_INPUT_BOUND:
        return "moderately input-bound"
    return "not input-bound"


def _split(batch: Any) -> tuple[Any, Any]:
    if isinstance(batch, (tuple, list)) and len(batch) >= 2:
        return batch[0], batch[1]
    raise ValueError("the dataset must yield (images, labels) pairs")


def _batch_size(x: Any) -> int:
    return int(tf.nest.flatten(x)[0].shape[0])


@dataclass
class _Timing:
    wait: float = 0.0
    compute: float = 0.0
    steps: int = 0
    images: int = 0

    def add(self, wait: float, compute: float, images: int) -> None:
        self.wait += wait
        self.compute += compute
        self.steps += 1
        self.images += images

    @property
    def share(self) -> float:
        total = self.wait + self.compute
        return self.wait / total if total > 0 else 0.0


def _timed_step(
    model: keras.Model, iterator: Iterator[Any], train_step: bool
) -> tuple[float, float, int, dict[str, float]] | None:
    t0 = time.perf_counter()
    try:
        batch = next(iterator)
    except StopIteration:
        return None
    t1 = time.perf_counter()
    x, y = _split(batch)
    if train_step:
        logs = model.train_on_batch(x, y, return_dict=True)
    else:
        logs = model.test_on_batch(x, y, return_dict=True)
    t2 = time.perf_counter()  # logs are NumPy: the step has finished
    return t1 - t0, t2 - t1, _batch_size(x), {k: float(v) for k, v in logs.items()}


def measure_input_wait(
    model: keras.Model,
    dataset: Iterable[Any],
    steps: int = 20,
    warmup: int = 2,
    *,
    train_step: bool = True,
) -> dict[str, Any]:
    """Share of step time spent waiting for the next batch, over ``steps`` steps.

    Each step: ``next(iterator)`` (input wait), then ``train_on_batch`` (compute,
    synchronous). Warm-up steps (tracing, first buffer fill) are not counted.
    Note ``train_step=True`` updates the model's weights.

    Args:
      model: a compiled Keras model.
      dataset: an iterable of ``(images, labels)`` batches.
      steps: steps to time.
      warmup: steps run first and not timed.
      train_step: time training steps (default) or forward-only test steps.

    Returns:
      ``input_wait_share``, ``verdict`` (:func:`classify_input_bound`),
      ``steps``, ``wait_seconds``, ``compute_seconds``, ``mean_wait_ms``,
      ``mean_step_ms`` (wait + compute), ``images_per_s``.

    Raises:
      ValueError: no step left to time after warm-up.
    """
    iterator = iter(dataset)
    for _ in range(warmup):
        if _timed_step(model, iterator, train_step) is None:
            break
    timing = _Timing()
    while timing.steps < steps:
        result = _timed_step(model, iterator, train_step)
        if result is None:
            break
        timing.add(*result[:3])
    if timing.steps == 0:
        raise ValueError(
            "the dataset ran out before any timed step: use repeat=True or fewer warmup"
        )
    total = timing.wait + timing.compute
    return {
        "input_wait_share": timing.share,
        "verdict": classify_input_bound(timing.share),
        "steps": timing.steps,
        "wait_seconds": timing.wait,
        "compute_seconds": timing.compute,
        "mean_wait_ms": 1e3 * timing.wait / timing.steps,
        "mean_step_ms": 1e3 * total / timing.steps,
        "images_per_s": timing.images / total if total > 0 else float("inf"),
    }


def evaluate(
    model: keras.Model, dataset: Iterable[Any], steps: int | None = None
) -> dict[str, float]:
    """Loss and metrics over a dataset, weighted by batch size (exact, and quiet).

    Unlike ``model.evaluate`` it prints nothing (no "input ran out of data"
    warning for datasets of unknown length, which would change notebook output).

    Args:
      model: a compiled Keras model.
      dataset: ``(images, labels)`` batches.
      steps: batches to use (``None`` = all).

    Returns:
      metric name -> mean over all examples (``loss``, ``accuracy``...).

    Raises:
      ValueError: the dataset is empty.
    """
    sums: dict[str, float] = {}
    seen = 0
    for index, batch in enumerate(dataset):
        if steps is not None and index >= steps:
            break
        x, y = _split(batch)
        images = _batch_size(x)
        for key, value in model.test_on_batch(x, y, return_dict=True).items():
            sums[key] = sums.get(key, 0.0) + float(value) * images
        seen += images
    if seen == 0:
        raise ValueError("the evaluation dataset yielded no batches")
    return {key: value / seen for key, value in sums.items()}


def _progress(total: int | None, desc: str, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, leave=True)


def train(
    model: keras.Model,
    train_ds: Iterable[Any],
    val_ds: Iterable[Any] | None = None,
    epochs: int = 1,
    *,
    steps_per_epoch: int | None = None,
    validation_steps: int | None = None,
    warmup_steps: int = 1,
    progress: bool = True,
) -> dict[str, list[Any]]:
    """A small training loop that also measures how long each step waited for input.

    Per epoch: iterate ``train_ds`` (or ``steps_per_epoch`` batches of it),
    timing ``next(iterator)`` and ``train_on_batch`` separately; then evaluate
    on ``val_ds``. The first ``warmup_steps`` steps of the first epoch (graph
    tracing) are trained on but left out of the timing.

    Args:
      model: a compiled Keras model (e.g. :func:`build_mobilenet`).
      train_ds: ``(images, labels)`` batches; re-iterated every epoch.
      val_ds: validation batches, or ``None``.
      epochs: number of epochs.
      steps_per_epoch: batches per epoch (needed for a repeating dataset).
      validation_steps: batches per validation run (``None`` = all).
      warmup_steps: untimed steps at the start of training.
      progress: show a tqdm bar per epoch.

    Returns:
      A history dict of per-epoch lists: ``loss``, ``accuracy`` (means over
      the epoch's batches), ``val_loss``, ``val_accuracy`` (if ``val_ds``),
      ``input_wait_share``, ``input_bound`` (the verdict), ``epoch_seconds``,
      ``images_per_s``, ``steps``.
    """
    history: dict[str, list[Any]] = {
        key: []
        for key in (
            "loss",
            "accuracy",
            "input_wait_share",
            "input_bound",
            "epoch_seconds",
            "images_per_s",
            "steps",
        )
    }
    if val_ds is not None:
        history["val_loss"], history["val_accuracy"] = [], []
    untimed = warmup_steps
    for epoch in range(epochs):
        start = time.perf_counter()
        timing = _Timing()
        sums: dict[str, float] = {}
        seen = 0
        bar = _progress(steps_per_epoch, f"epoch {epoch + 1}/{epochs}", progress)
        iterator = iter(train_ds)
        step = 0
        while steps_per_epoch is None or step < steps_per_epoch:
            result = _timed_step(model, iterator, True)
            if result is None:
                break
            wait, compute, images, logs = result
            step += 1
            if untimed > 0:
                untimed -= 1
            else:
                timing.add(wait, compute, images)
            for key, value in logs.items():
                sums[key] = sums.get(key, 0.0) + value * images
            seen += images
            if bar is not None:
                bar.update(1)
                bar.set_postfix(
                    loss=f"{sums.get('loss', 0.0) / seen:.3f}",
                    acc=f"{sums.get('accuracy', 0.0) / seen:.3f}",
                    wait=f"{timing.share:.0%}",
                )
        if bar is not None:
            bar.close()
        if step == 0:
            raise ValueError(f"epoch {epoch + 1}: the training dataset yielded no batches")
        history["loss"].append(sums.get("loss", float("nan")) / seen)
        history["accuracy"].append(sums.get("accuracy", float("nan")) / seen)
        history["input_wait_share"].append(timing.share)
        history["input_bound"].append(classify_input_bound(timing.share))
        history["steps"].append(step)
        history["images_per_s"].append(
            timing.images / (timing.wait + timing.compute) if timing.steps else float("nan")
        )
        if val_ds is not None:
            logs = evaluate(model, val_ds, steps=validation_steps)
            history["val_loss"].append(logs["loss"])
            history["val_accuracy"].append(logs.get("accuracy", float("nan")))
        history["epoch_seconds"].append(time.perf_counter() - start)
    return history


# ---------------------------------------------------------------------------
# Profiling
# ---------------------------------------------------------------------------


def profile_steps(
    logdir: str | os.PathLike,
    model: keras.Model,
    dataset: Iterable[Any],
    steps: int = 5,
    warmup: int = 2,
) -> list[str]:
    """Capture a TensorBoard profile of ``steps`` training steps into ``logdir``.

    Uses ``tf.profiler.experimental.start / stop`` with a ``Trace`` per step
    (``step_num`` lets the profiler's input-pipeline page compute the input
    share). Works on CPU; writing needs only TensorFlow. To *view* it install
    ``tensorboard`` and ``tensorboard-plugin-profile`` and run
    ``tensorboard --logdir LOGDIR`` (Profile tab). With ``model.fit`` the same
    is ``keras.callbacks.TensorBoard(log_dir, profile_batch=(10, 15))``.

    Args:
      logdir: output directory (created).
      model: a compiled Keras model.
      dataset: ``(images, labels)`` batches (at least ``warmup + steps``).
      steps: profiled steps.
      warmup: untraced steps first (tracing, buffer fill).

    Returns:
      The files written under ``logdir/plugins/profile/`` (``*.xplane.pb``).

    Raises:
      RuntimeError: a profiler session is already running.
    """
    logdir = os.fspath(logdir)
    os.makedirs(logdir, exist_ok=True)
    iterator = iter(dataset)
    for _ in range(warmup):
        if _timed_step(model, iterator, True) is None:
            break
    try:
        tf.profiler.experimental.start(logdir)
    except (tf.errors.AlreadyExistsError, tf.errors.UnavailableError) as err:
        raise RuntimeError(
            f"cannot start the profiler ({err.message}); stop the other session first "
            "(tf.profiler.experimental.stop())"
        ) from None
    try:
        for step in range(steps):
            with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
                if _timed_step(model, iterator, True) is None:
                    break
    finally:
        tf.profiler.experimental.stop()
    root = Path(logdir) / "plugins" / "profile"
    return sorted(str(p) for p in root.rglob("*") if p.is_file()) if root.exists() else []
