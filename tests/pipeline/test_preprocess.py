"""helpers.pipeline.preprocess: decode, resize, normalise, augment."""

from __future__ import annotations

import io

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from helpers import pipeline as P

from .support import _encode


def test_normalize_range() -> None:
    x = P.normalize_mobilenet(tf.constant([0, 127.5, 255.0]))
    np.testing.assert_allclose(x.numpy(), [-1.0, 0.0, 1.0])
    rnd = np.random.default_rng(1).integers(0, 256, (10, 10, 3)).astype(np.uint8)
    y = P.normalize_mobilenet(rnd).numpy()
    assert y.dtype == np.float32 and y.min() >= -1.0 and y.max() <= 1.0
    np.testing.assert_array_equal(P.denormalize_mobilenet(y), rnd)
    bicubic = P.resize(rnd, 37, method="bicubic")  # may overshoot 0..255
    z = P.normalize_mobilenet(bicubic).numpy()
    assert z.min() >= -1.0 and z.max() <= 1.0


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "GIF", "BMP", "WEBP"])
def test_decode_image_any_format_gives_hw3(fmt: str) -> None:
    array = np.full((6, 9, 3), 120, np.uint8)
    image = P.decode_image(_encode(array, fmt))
    assert image.shape == (6, 9, 3) and image.dtype == tf.uint8


def test_decode_image_grey_rgba_and_16_bit() -> None:
    grey = _encode(np.full((4, 5), 100, np.uint8), "PNG")
    rgba = _encode(np.full((4, 5, 4), 100, np.uint8), "PNG")
    buf = io.BytesIO()
    Image.fromarray(np.full((4, 5), 40000, np.uint16)).save(buf, "PNG")
    for data in (grey, rgba, buf.getvalue()):
        assert P.decode_image(data).shape == (4, 5, 3)


def test_preprocess_and_resize_shapes() -> None:
    encoded = _encode(np.full((30, 50, 3), 255, np.uint8), "PNG")
    image = P.preprocess_image(encoded, (20, 40))
    assert image.shape == (20, 40, 3) and image.dtype == tf.float32
    np.testing.assert_allclose(image.numpy(), 1.0)


def test_augment_is_seeded_and_keeps_shape_and_range() -> None:
    image = tf.random.stateless_uniform((32, 32, 3), seed=[1, 2], minval=-1, maxval=1)
    a = P.augment(image, [3, 4])
    b = P.augment(image, [3, 4])
    c = P.augment(image, [5, 6])
    assert a.shape == image.shape and a.dtype == tf.float32
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(a.numpy(), c.numpy())
    assert a.numpy().min() >= -1.0 and a.numpy().max() <= 1.0
    np.testing.assert_array_equal(
        P.augment(image, [3, 4], flip=False, crop_fraction=1.0, brightness=0).numpy(),
        image.numpy(),
    )
