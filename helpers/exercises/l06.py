"""Lesson 06 exercises: MobileNet preprocessing on fresh images, the device and
precision choice on faked device lists, and a starved pipeline fixed until its
input-wait share, measured by the checker, is under 5 %.

The preprocessing function is run inside ``Dataset.map`` (graph mode, as in a
real pipeline) on images the checker draws and encodes itself (RGB and
greyscale JPEG, PNG, random sizes); the reference is recomputed here with the
same ops. Device choices are compared with :mod:`helpers.train`, whose rules the lesson
teaches. The starved-pipeline exercise takes settings (data) from the student and
builds and times the pipeline in the checker's own process.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from helpers.exercises import CheckFailed, Exercise, register

# ---------------------------------------------------------------------------
# 06.preprocess
# ---------------------------------------------------------------------------


def _draw(rng: np.random.Generator, width: int, height: int) -> np.ndarray:
    """A smooth random picture (gradient + a rectangle) so resizing is well defined."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    image = np.empty((height, width, 3), np.float32)
    for c in range(3):
        a, b, d = rng.uniform(-1, 1, size=3)
        image[..., c] = 128 + 100 * np.sin(a * x / width * 6 + b * y / height * 6 + d)
    x0, y0 = int(rng.integers(0, width // 2)), int(rng.integers(0, height // 2))
    image[y0 : y0 + height // 3, x0 : x0 + width // 3] = rng.uniform(0, 255, size=3)
    return np.clip(image, 0, 255).astype(np.uint8)


_IMAGE_NAME = re.compile(r"image_\d+_([a-z_]+)_(\d+)\.(?:png|jpg)$")


def _encoded_image(kind: str, seed: int) -> bytes:
    """The encoded picture of a checker-made image file, from its name.

    The verifier re-creates the bytes from here rather than reading the file,
    which lives where the student's code (in grading, the kernel) can change it.
    """
    from PIL import Image

    rng = np.random.default_rng(seed)
    width, height = int(rng.integers(40, 320)), int(rng.integers(40, 320))
    image = Image.fromarray(_draw(rng, width, height))
    buf = io.BytesIO()
    if kind == "grey_jpeg":
        image.convert("L").save(buf, format="JPEG", quality=90)
    elif kind == "png":
        image.save(buf, format="PNG")
    else:
        image.save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def _image_bytes(path: str) -> bytes:
    match = _IMAGE_NAME.search(os.path.basename(path))
    if match is None:
        raise ValueError(f"not a checker-made image: {path}")
    return _encoded_image(match.group(1), int(match.group(2)))


def _preprocess_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    kinds = ["rgb_jpeg", "grey_jpeg", "png", "rgb_jpeg", "bad_label", "negative_label"]
    cases = []
    for i, kind in enumerate(kinds):
        seed = int(rng.integers(0, 2**31 - 1))
        path = workdir / f"image_{i}_{kind}_{seed}.{'png' if kind == 'png' else 'jpg'}"
        path.write_bytes(_encoded_image(kind, seed))
        num_classes = int(rng.integers(2, 1001))
        label = int(rng.integers(0, num_classes))
        if kind == "bad_label":
            label = num_classes
        elif kind == "negative_label":
            label = -1
        cases.append(
            {
                "path": os.fspath(path),
                "label": label,
                "image_size": int(rng.choice([32, 48, 64, 96, 128, 224])),
                "num_classes": num_classes,
            }
        )
    return cases


def _preprocess_call(func: Any, case: dict[str, Any]) -> Any:
    import tensorflow as tf

    data = Path(case["path"]).read_bytes()
    size, n = case["image_size"], case["num_classes"]
    dataset = tf.data.Dataset.from_tensors(
        (tf.constant(data), tf.constant(case["label"], tf.int64))
    ).map(lambda encoded, label: func(encoded, label, size, n))
    try:
        element = next(iter(dataset))
    except (tf.errors.InvalidArgumentError, tf.errors.OutOfRangeError) as err:
        return {"raised": f"{type(err).__name__}: {str(err).splitlines()[0][:300]}"}
    if not isinstance(element, tuple) or len(element) != 2:
        return {"structure": type(element).__name__}
    image, target = element
    return {"image": np.asarray(image), "target": np.asarray(target)}


def _reference(path: str, size: int) -> np.ndarray:
    import tensorflow as tf

    image = tf.io.decode_image(_image_bytes(path), channels=3, expand_animations=False)
    image = tf.image.resize(tf.cast(image, tf.float32), [size, size])
    return (image / 127.5 - 1.0).numpy()


def _preprocess_verify(case: dict[str, Any], result: Any) -> None:
    size, n, label = case["image_size"], case["num_classes"], case["label"]
    name = Path(case["path"]).name
    call = f"preprocess(<{name}>, label={label}, image_size={size}, num_classes={n})"
    if not 0 <= label < n:
        if "raised" in result:
            return
        target = result.get("target")
        zeros = target is not None and np.asarray(target).size and not np.asarray(target).any()
        raise CheckFailed(
            f"{call} returned a target for label {label}, which is outside [0, {n})"
            + (": an all-zero one-hot vector, silently" if zeros else ""),
            "check the label before tf.one_hot, e.g. helpers.pipeline.one_hot_checked or "
            "tf.debugging.assert_less / assert_non_negative",
        )
    if "raised" in result:
        raise CheckFailed(f"{call} failed: {result['raised']}")
    if "structure" in result:
        raise CheckFailed(
            f"{call} returned a {result['structure']}; return a pair (image, one_hot)"
        )
    image, target = np.asarray(result["image"]), np.asarray(result["target"])
    if image.ndim == 3 and image.shape[-1] == 1:
        raise CheckFailed(
            f"{call} gave an image of shape {image.shape}: a greyscale JPEG decodes to one "
            "channel unless you ask for three",
            "tf.io.decode_jpeg(encoded, channels=3) (or decode_image(..., channels=3, "
            "expand_animations=False))",
        )
    if image.shape != (size, size, 3):
        raise CheckFailed(
            f"{call} gave an image of shape {image.shape}, expected {(size, size, 3)}",
            "tf.image.resize(image, [image_size, image_size])",
        )
    if image.dtype != np.float32:
        raise CheckFailed(f"{call} gave a {image.dtype} image; MobileNet takes float32")
    low, high = float(image.min()), float(image.max())
    if low < -1.0001 or high > 1.0001:
        raise CheckFailed(
            f"{call}: pixel values span [{low:.3g}, {high:.3g}]; MobileNet expects [-1, 1]",
            "image / 127.5 - 1",
        )
    expected = _reference(case["path"], size)
    error = float(np.mean(np.abs(image - expected)))
    if error > 0.04:
        if low >= -1e-6 and float(np.mean(np.abs(image * 2 - 1 - expected))) < 0.04:
            raise CheckFailed(
                f"{call}: pixels lie in [0, 1] (divided by 255); MobileNet expects [-1, 1]",
                "image / 127.5 - 1 maps 0..255 to -1..1",
            )
        raise CheckFailed(
            f"{call}: pixels differ from decode -> resize -> /127.5 - 1 by {error:.3f} on "
            "average (more than 0.04)",
            "stretch the whole image to image_size x image_size (no crop, no padding)",
        )
    if target.shape != (n,):
        raise CheckFailed(
            f"{call} gave a target of shape {target.shape}, expected a one-hot vector ({n},)",
            "tf.one_hot(label, num_classes)",
        )
    want = np.zeros(n, np.float32)
    want[label] = 1.0
    if not np.allclose(target, want):
        hot = np.flatnonzero(target).tolist()[:5]
        raise CheckFailed(f"{call}: the target is hot at {hot}, expected only at [{label}]")


register(
    Exercise(
        key="06.preprocess",
        target="preprocess",
        title="decode -> resize -> [-1, 1] -> checked one-hot, inside Dataset.map",
        make_cases=_preprocess_cases,
        verify=_preprocess_verify,
        hint="decode with channels=3, tf.image.resize to [image_size, image_size], "
        "x / 127.5 - 1, and a one-hot that refuses labels outside [0, num_classes)",
        call=_preprocess_call,
    )
)


# ---------------------------------------------------------------------------
# 06.pick_device
# ---------------------------------------------------------------------------

_GPUS = {  # a few real compute capabilities
    "Tesla K80": (3, 7),
    "Tesla P100": (6, 0),
    "GeForce GTX 1080": (6, 1),
    "Tesla V100": (7, 0),
    "Tesla T4": (7, 5),
    "A100": (8, 0),
    "RTX 4090": (8, 9),
    "H100": (9, 0),
    "B200": (10, 0),
    "RTX 5090": (12, 0),
}


def _device(kind: str, index: int, capability: tuple[int, int] | None = None) -> dict[str, Any]:
    details = {} if capability is None else {"compute_capability": list(capability)}
    return {"name": f"/physical_device:{kind}:{index}", "device_type": kind, "details": details}


def _device_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    names = list(_GPUS)
    cases = [
        {"devices": [_device("CPU", 0)]},
        {"devices": [_device("CPU", 0), _device("GPU", 0, _GPUS["Tesla V100"])]},  # 7.0 exactly
        {"devices": [_device("CPU", 0), _device("GPU", 0, _GPUS["GeForce GTX 1080"])]},
        {"devices": [_device("CPU", 0), _device("GPU", 0, _GPUS["B200"])]},  # 10.0 > 7.0
        {"devices": [_device("CPU", 0), _device("GPU", 0, None)]},  # capability unknown
        {
            "devices": [
                _device("CPU", 0),
                _device("GPU", 0, _GPUS["Tesla P100"]),
                _device("GPU", 1, _GPUS["A100"]),
            ]
        },
    ]
    for _ in range(3):
        count = int(rng.integers(1, 5))
        gpus = [_device("GPU", i, _GPUS[str(rng.choice(names))]) for i in range(count)]
        cases.append({"devices": [_device("CPU", 0), *gpus]})
    order = rng.permutation(len(cases))
    return [cases[i] for i in order]


def _fake(device: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(
        name=device["name"], device_type=device["device_type"], details=device["details"]
    )


def _device_call(func: Any, case: dict[str, Any]) -> Any:
    return func([_fake(d) for d in case["devices"]])


def _describe(devices: list[dict[str, Any]]) -> str:
    parts = []
    for d in devices:
        cc = d["details"].get("compute_capability")
        short = d["name"].split("device:")[-1]
        parts.append(short + (f" (cc {cc[0]}.{cc[1]})" if cc else ""))
    return "[" + ", ".join(parts) + "]"


def _device_verify(case: dict[str, Any], result: Any) -> None:
    from helpers.train import choose_device

    choice = choose_device([_fake(d) for d in case["devices"]])
    call = f"pick_device({_describe(case['devices'])})"
    if not isinstance(result, dict) or set(result) != {"device", "policy"}:
        raise CheckFailed(
            f"{call} returned {str(result)[:100]}; expected a dict with keys 'device' and 'policy'",
            "e.g. {'device': 'GPU:0', 'policy': 'mixed_float16'}",
        )
    if result["device"] != choice.name:
        raise CheckFailed(
            f"{call} chose device {result['device']!r}, expected {choice.name!r}",
            "the first GPU in the list if there is one (its short name, e.g. 'GPU:0'), "
            "else 'CPU:0'",
        )
    if result["policy"] != choice.policy:
        raise CheckFailed(
            f"{call} chose policy {result['policy']!r}, expected {choice.policy!r}: "
            + choice.reason,
            "mixed_float16 only on a GPU whose compute capability is >= (7, 0) or unknown; "
            "compare (major, minor) tuples, not strings",
        )


register(
    Exercise(
        key="06.pick_device",
        target="pick_device",
        title="GPU with mixed precision when it pays, CPU with float32 otherwise",
        make_cases=_device_cases,
        verify=_device_verify,
        hint="look at the GPUs only; compare the first one's compute capability as a "
        "(major, minor) tuple with (7, 0); an unknown capability counts as new",
        call=_device_call,
        unavailable=("helpers.train.choose_device",),
    )
)


# ---------------------------------------------------------------------------
# 06.unstarve
# ---------------------------------------------------------------------------
#
# The student returns *settings* (JSON data), never a dataset or a number: the
# checker builds the pipeline from them with helpers.pipeline.per_file_dataset
# on images it just drew, and measures the input-wait share itself, so no share
# reported by the student's process can earn the point.

STARVED = {"parallel_reads": 1, "num_parallel_calls": None, "prefetch": None}
_KNOBS = {
    "parallel_reads": "an int from 1 to 64 (concurrent file reads)",
    "num_parallel_calls": 'None, an int from 1 to 64, or "AUTOTUNE" (parallel decoding)',
    "prefetch": 'None, an int from 0 to 16, or "AUTOTUNE" (batches prepared ahead)',
}
_TARGET_SHARE = 0.05
_MEASURED_STEPS = 10
_WARMUP_STEPS = 3


def _starve_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    from PIL import Image

    cases = []
    for c in range(2):
        folder = workdir / f"images_{c}"
        folder.mkdir()
        labels = []
        for i in range(48):
            side = int(rng.integers(40, 96))
            path = folder / f"img_{i:03d}.jpg"
            Image.fromarray(_draw(rng, side, side)).save(path, format="JPEG", quality=85)
            labels.append(int(rng.integers(0, 3)))
        cases.append(
            {
                "folder": os.fspath(folder),
                "labels": labels,
                "batch_size": int(rng.choice([4, 6, 8])),
                "open_delay_s": round(float(rng.uniform(0.01, 0.025)), 4),
                "compute_s": 0.06,
                "starved": dict(STARVED),
            }
        )
    return cases


def _starve_call(func: Any, case: dict[str, Any]) -> Any:
    return func(dict(case["starved"]))


def _setting(name: str, value: Any, low: int, high: int, autotune: bool) -> Any:
    from helpers.pipeline import AUTOTUNE

    if value is None and name != "parallel_reads":
        return None
    if autotune and value == "AUTOTUNE":
        return AUTOTUNE
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return value
    raise CheckFailed(f"unstarve(...) set {name}={value!r}; it must be {_KNOBS[name]}")


def _starve_settings(result: Any) -> dict[str, Any]:
    if not isinstance(result, dict):
        raise CheckFailed(
            f"unstarve(...) returned {type(result).__name__}; return a dict of settings like "
            f"{STARVED}"
        )
    unknown = sorted(set(result) - set(_KNOBS))
    if unknown:
        raise CheckFailed(
            f"unstarve(...) set {unknown}, which this pipeline does not have: only "
            f"{sorted(_KNOBS)} can change (the data is too big to cache, the storage is given)"
        )
    merged = dict(STARVED, **result)
    return {
        "parallel_reads": _setting("parallel_reads", merged["parallel_reads"], 1, 64, False),
        "num_parallel_calls": _setting(
            "num_parallel_calls", merged["num_parallel_calls"], 1, 64, True
        ),
        "prefetch": _setting("prefetch", merged["prefetch"], 0, 16, True),
    }


def measure_share(dataset: Any, compute_s: float, steps: int, warmup: int) -> float:
    """Input-wait share of a loop whose step takes ``compute_s`` (a sleep, like a GPU step).

    Runs in the checker's process: the wait is timed around ``next(iterator)`` here.
    """
    import time

    iterator = iter(dataset)
    wait = compute = 0.0
    for step in range(warmup + steps):
        t0 = time.perf_counter()
        next(iterator)
        t1 = time.perf_counter()
        time.sleep(compute_s)
        t2 = time.perf_counter()
        if step >= warmup:
            wait, compute = wait + t1 - t0, compute + t2 - t1
    return wait / (wait + compute)


def _starve_verify(case: dict[str, Any], result: Any) -> None:
    # Op determinism (a kernel may have enabled it for reproducible training) makes
    # tf.data run the simulated storage's reads one at a time, whatever the
    # settings; the measurement must not depend on the kernel's state. TensorFlow
    # has no public "disable", hence the internal module.
    from tensorflow.python.framework import config as tf_config

    was_deterministic = tf_config.is_op_determinism_enabled()
    if was_deterministic:
        tf_config.disable_op_determinism()
    try:
        _starve_measure(case, result)
    finally:
        if was_deterministic:
            tf_config.enable_op_determinism()


def _starve_measure(case: dict[str, Any], result: Any) -> None:
    from helpers import pipeline as pl

    settings = _starve_settings(result)
    paths = sorted(Path(case["folder"]).glob("*.jpg"))
    storage = pl.slow_open(case["open_delay_s"], 0.0)
    shares = []
    for _ in range(2):  # the better of two runs: a busy grading machine is not the student's fault
        dataset = pl.per_file_dataset(
            paths,
            case["labels"],
            case["batch_size"],
            32,
            num_classes=3,
            repeat=True,
            storage=storage,
            **settings,
        )
        shares.append(measure_share(dataset, case["compute_s"], _MEASURED_STEPS, _WARMUP_STEPS))
        if shares[-1] < _TARGET_SHARE:
            return
    share = min(shares)
    per_batch = case["batch_size"] * case["open_delay_s"]
    raise CheckFailed(
        f"with {result} the loop waited {share:.1%} of each step for input (measured here, "
        f"{case['batch_size']} images per batch, {case['open_delay_s'] * 1e3:.0f} ms per simulated "
        f"file open, a {case['compute_s'] * 1e3:.0f} ms training step); the target is under "
        f"{_TARGET_SHARE:.0%}",
        f"one read at a time costs {per_batch * 1e3:.0f} ms of opens per batch: keep several "
        "reads in flight (parallel_reads), decode in parallel, and prefetch so the next batch "
        "is ready while the step runs",
    )


register(
    Exercise(
        key="06.unstarve",
        target="unstarve",
        title="fix a starved input pipeline until it waits under 5% of each step",
        make_cases=_starve_cases,
        verify=_starve_verify,
        hint="return a dict such as {'parallel_reads': ..., 'num_parallel_calls': ..., "
        "'prefetch': ...}; the checker builds the pipeline and measures the share itself",
        call=_starve_call,
    )
)
