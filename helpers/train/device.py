"""Which device trains, and in which precision: a GPU (mixed precision when it pays) or the CPU.

The choice takes the device list as an argument, so it is testable with fake devices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import keras
import tensorflow as tf


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
