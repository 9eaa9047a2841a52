"""Images for MobileNet: decode, resize, normalise to [-1, 1], augment.

The same preprocessing for every reader in the package (TFRecords, one file
per image), so the comparisons of lesson 05 compare reading, not pixels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf

AUTOTUNE = tf.data.AUTOTUNE

#: an image side (square) or ``(height, width)``
ImageSize = int | tuple[int, int] | Sequence[int]


def size_pair(image_size: ImageSize) -> tuple[int, int]:
    if isinstance(image_size, (int, np.integer)):
        h = w = int(image_size)
    else:
        h, w = (int(v) for v in image_size)
    if h < 1 or w < 1:
        raise ValueError(f"image_size must be positive, got {image_size!r}")
    return h, w


def decode_image(encoded: tf.Tensor | bytes, channels: int = 3) -> tf.Tensor:
    """Decode JPEG / PNG / GIF / BMP / WebP bytes to one ``(H, W, channels)`` uint8 image.

    ``tf.io.decode_image(..., expand_animations=False)`` picks the decoder from
    the content (not the file name), returns the first frame of an animation
    (``decode_jpeg`` would return 4-D for WebP), converts 16-bit PNG to uint8
    and grey / RGBA to ``channels``. The static shape is set so later ops know
    the rank.

    Args:
      encoded: scalar string tensor with the encoded image.
      channels: 3 for RGB (MobileNet), 1 for grey.

    Returns:
      uint8 tensor ``(H, W, channels)``.
    """
    image = tf.io.decode_image(encoded, channels=channels, expand_animations=False, dtype=tf.uint8)
    image.set_shape([None, None, channels])
    return image


def resize(
    image: tf.Tensor, image_size: ImageSize = 224, method: str = "bilinear", antialias: bool = False
) -> tf.Tensor:
    """Resize to ``image_size`` (stretching; aspect ratio not kept), as float32.

    Args:
      image: ``(H, W, C)`` or ``(B, H, W, C)`` tensor, any numeric dtype.
      image_size: an int (square) or ``(height, width)``.
      method: a ``tf.image.ResizeMethod`` name (``"bilinear"``, ``"area"``...).
      antialias: filter when downsampling (closer to PIL, a bit slower).

    Returns:
      float32 tensor with values in the input's range (0..255 for uint8 input).
    """
    h, w = size_pair(image_size)
    out = tf.image.resize(image, [h, w], method=method, antialias=antialias)
    return tf.cast(out, tf.float32)


def normalize_mobilenet(image: tf.Tensor) -> tf.Tensor:
    """Scale 0..255 pixels to MobileNet's ``[-1, 1]`` (``x / 127.5 - 1``), clipped.

    Args:
      image: a uint8 or float tensor with values in 0..255.

    Returns:
      float32 tensor in ``[-1, 1]``.
    """
    image = tf.cast(image, tf.float32) / 127.5 - 1.0
    return tf.clip_by_value(image, -1.0, 1.0)


def denormalize_mobilenet(image: tf.Tensor | np.ndarray) -> np.ndarray:
    """Undo :func:`normalize_mobilenet` for display: ``[-1, 1]`` -> uint8 NumPy.

    Args:
      image: float image(s) in ``[-1, 1]``.

    Returns:
      uint8 NumPy array, same shape.
    """
    array = np.asarray(image, dtype=np.float32)
    return np.clip(np.rint((array + 1.0) * 127.5), 0, 255).astype(np.uint8)


def preprocess_image(
    encoded: tf.Tensor | bytes, image_size: ImageSize = 224, method: str = "bilinear"
) -> tf.Tensor:
    """decode -> resize -> normalise to ``[-1, 1]``: the MobileNet input recipe.

    Args:
      encoded: encoded image bytes.
      image_size: output size (int or ``(h, w)``).
      method: resize method.

    Returns:
      float32 ``(h, w, 3)`` in ``[-1, 1]``.
    """
    h, w = size_pair(image_size)
    image = normalize_mobilenet(resize(decode_image(encoded), (h, w), method=method))
    image.set_shape([h, w, 3])
    return image


def augment(
    image: tf.Tensor,
    seed: tf.Tensor | Sequence[int],
    *,
    flip: bool = True,
    crop_fraction: float = 0.875,
    brightness: float = 0.2,
    value_range: tuple[float, float] = (-1.0, 1.0),
) -> tf.Tensor:
    """Random flip, random crop (resized back) and random brightness, reproducibly.

    Uses stateless random ops: the same ``seed`` gives the same augmentation,
    so a pipeline with a seed is reproducible (``make_dataset`` feeds a fresh
    seed per element from ``tf.data.Dataset.random(seed)``).

    Args:
      image: float ``(H, W, C)`` image (static H, W).
      seed: shape ``[2]`` int32/int64 seed.
      flip: random left-right flip.
      crop_fraction: side of the random crop as a fraction of the image side,
        then resized back to ``(H, W)``; 1.0 disables cropping.
      brightness: max brightness delta in the image's units (0.2 on ``[-1, 1]``
        is +-10% of the range); 0 disables it.
      value_range: the image's value range, used to clip after brightness.

    Returns:
      The augmented image, same shape and dtype (float32).
    """
    if not 0.0 < crop_fraction <= 1.0:
        raise ValueError(f"crop_fraction must be in (0, 1], got {crop_fraction}")
    image = tf.convert_to_tensor(image, tf.float32)
    seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), num=3)
    static_shape = image.shape
    if flip:
        image = tf.image.stateless_random_flip_left_right(image, seeds[0])
    if crop_fraction < 1.0:
        shape = tf.shape(image)
        h, w, c = shape[0], shape[1], shape[2]
        crop_h = tf.maximum(1, tf.cast(tf.round(tf.cast(h, tf.float32) * crop_fraction), tf.int32))
        crop_w = tf.maximum(1, tf.cast(tf.round(tf.cast(w, tf.float32) * crop_fraction), tf.int32))
        image = tf.image.stateless_random_crop(image, tf.stack([crop_h, crop_w, c]), seeds[1])
        image = tf.image.resize(image, tf.stack([h, w]))
    if brightness > 0:
        image = tf.image.stateless_random_brightness(image, brightness, seeds[2])
        image = tf.clip_by_value(image, value_range[0], value_range[1])
    image.set_shape(static_shape)
    return image
