"""The MobileNet the course trains: ``MobileNet(include_top=False)`` + pooling + softmax.

Pretrained weights are a local file or nothing: nothing downloads at run time.
"""

from __future__ import annotations

import os
from pathlib import Path

import keras

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
      dropout: dropout rate before the Dense layer (0 = the recipe of a typical MobileNet-from-TFRecord script).
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
