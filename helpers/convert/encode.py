"""Image bytes -> one serialized ``tf.train.Example``: copy when possible, re-encode when not.

JPEG (8-bit RGB / gray, baseline or progressive) and 8-bit RGB / gray PNG are
stored as their original bytes. Everything else is decoded once and re-encoded
so that ``tf.io.decode_image(x, channels=3)`` gives one ``(H, W, 3) uint8``
image: a CMYK JPEG becomes an RGB JPEG, the rest an RGB PNG (alpha composited
onto white, 16-bit samples keep their high byte). Each file is probed again on
the bytes actually read, so a file that changed since the scan cannot slip in.
"""

from __future__ import annotations

import io
import os
import types
from typing import TYPE_CHECKING

from PIL import Image

from helpers.convert.probe import PIL_FORMATS, Ignore, Probe, Skip, pil_limits, pil_message, probe
from helpers.convert.settings import JPEG_QUALITY, PNG_COMPRESS_LEVEL
from helpers.records import load_features as _load

if TYPE_CHECKING:
    from helpers.convert.table import FileRecord

__all__ = ["LIGHT", "encode_file", "load_features", "record_bytes"]

#: True in worker processes and under ``python -m helpers.convert``: load TensorFlow's
#: protobuf modules only, never its runtime (see :func:`helpers.records.load_features`).
#: A library call from a notebook leaves it False.
LIGHT = False


def load_features() -> types.ModuleType:
    """:mod:`helpers.features`, without the TensorFlow runtime in processes we own."""
    return _load(light=LIGHT)


def _to_rgb(im: Image.Image) -> Image.Image:
    """First frame -> RGB; alpha composited onto white, 16-bit samples keep their high byte."""
    mode = im.mode
    if mode.startswith("I;16") or mode == "I":
        import numpy as np

        arr = np.asarray(im)
        arr = (np.clip(arr.astype(np.int64), 0, 65535) >> 8).astype(np.uint8)
        return Image.fromarray(arr).convert("RGB")
    if mode == "F":
        raise Skip("unsupported pixel mode F (floating-point samples)")
    has_alpha = mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in im.info
    if has_alpha:
        rgba = im.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return im.convert("RGB")


def _reencode(data: bytes, found: Probe) -> bytes:
    """Decode once and re-encode as RGB JPEG / PNG (see the module docstring)."""
    try:
        with pil_limits(), Image.open(io.BytesIO(data), formats=[PIL_FORMATS[found.kind]]) as im:
            im.seek(0)  # first frame of an animation
            im.load()
            rgb = _to_rgb(im)
    except Skip:
        raise
    except Exception as err:
        raise Skip(
            f"cannot decode {found.kind.upper()} ({found.note}): {pil_message(err)}"
        ) from None
    out = io.BytesIO()
    if found.out_format == "jpeg":
        rgb.save(out, "JPEG", quality=JPEG_QUALITY)
    else:
        rgb.save(out, "PNG", compress_level=PNG_COMPRESS_LEVEL)
    return out.getvalue()


def encode_file(path: str, ext: str, max_pixels: int) -> tuple[bytes, Probe]:
    """Read a file; return the bytes to store and its probe (checked again on the bytes read).

    Raises:
      Skip: the file cannot be read, or is not (or no longer) a usable image.
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise Skip(f"cannot read ({err.strerror or err})") from None
    try:
        found = probe(io.BytesIO(data), len(data), ext, max_pixels, data)
    except Ignore as err:  # the file changed into a non-image since it was probed
        raise Skip(str(err)) from None
    if found.copy:
        return data, found
    return _reencode(data, found), found


def record_bytes(
    features: types.ModuleType,
    payload: bytes,
    item: FileRecord,
    height: int,
    width: int,
    fmt: str,
) -> bytes:
    """One record: ``serialize_example(image_example(...))``, byte for byte, built faster.

    The generic builders of :mod:`helpers.features` copy the ~100 KB payload
    three or four times (``bytes()``, ``BytesList``, ``Feature``, ``CopyFrom``);
    appending it to the repeated field copies it once. Measured on 500x375
    JPEGs: 26 us instead of 81 us per record (``tests/convert/test_encode.py``
    checks the bytes).
    """
    keys = features.IMAGE_KEYS
    example = features.Example()
    feature = example.features.feature
    feature[keys["encoded"]].bytes_list.value.append(payload)
    feature[keys["format"]].bytes_list.value.append(fmt.encode("utf-8"))
    feature[keys["label"]].int64_list.value.append(int(item.label))
    feature[keys["text"]].bytes_list.value.append(item.class_text.encode("utf-8"))
    feature[keys["filename"]].bytes_list.value.append(os.fsencode(item.rel))
    feature[keys["height"]].int64_list.value.append(int(height))
    feature[keys["width"]].int64_list.value.append(int(width))
    return example.SerializeToString(deterministic=True)
