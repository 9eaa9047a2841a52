"""MobileNet training from TFRecords, device / precision choice, input-wait share (lesson 06).

* :func:`choose_device` picks the GPU with mixed precision when one is present
  and the CPU with float32 otherwise; it takes the device list as an argument
  so the choice is testable with fake devices. :func:`apply_precision` sets the
  Keras global dtype policy.
* :func:`build_mobilenet` is the model a typical converter script trains on
  its shards: ``MobileNet(include_top=False)`` + global average pooling +
  dense softmax (kept float32 under mixed precision), Adam and categorical
  cross-entropy. ``weights`` is ``None`` or a local file: ``"imagenet"`` is
  refused unless Keras already has the file cached, because nothing downloads
  at run time in this course.
* :func:`measure_input_wait` and :func:`train` split each step into the time
  spent waiting for the next batch (``next(iterator)``) and the time spent in
  the training step, and classify the share with the TensorBoard profiler's
  thresholds (:func:`classify_input_bound`).

Why a custom loop rather than a Keras callback: Keras 3 pulls the next batch
*inside* its compiled train function (``next(iterator)`` within the
``tf.function``), so callbacks cannot tell input wait from compute. Here the
loop pulls the batch in Python, then calls ``train_on_batch``, which returns
NumPy logs and therefore waits for the step to finish.

One module per job: ``device`` (device and precision), ``model`` (MobileNet),
``loop`` (input wait vs compute, the training loop), ``profiling``.
"""

from __future__ import annotations

from helpers.train.device import DeviceChoice, apply_precision, choose_device
from helpers.train.loop import (
    HIGHLY_INPUT_BOUND,
    MODERATELY_INPUT_BOUND,
    classify_input_bound,
    evaluate,
    measure_input_wait,
    train,
)
from helpers.train.model import build_mobilenet, imagenet_weights_path
from helpers.train.profiling import profile_steps

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
