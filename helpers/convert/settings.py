"""What a conversion is asked to do: the settings, the defaults, names and the error type.

Everything here is plain data, shared by every phase (:mod:`.scanning`, :mod:`.planning`,
:mod:`.shards`, :mod:`.finish`) and by any engine that runs those phases.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "DEFAULT_SEED",
    "DEFAULT_SIZE_PER_RECORD",
    "JPEG_QUALITY",
    "LABELS_NAME",
    "PNG_COMPRESS_LEVEL",
    "ConvertError",
    "Settings",
    "display_name",
    "is_utf8",
    "shard_name",
]

DEFAULT_SIZE_PER_RECORD = 50 * 1024 * 1024  # 52428800 bytes, the classic converter's default
DEFAULT_MAX_PIXELS = 89_478_485  # Pillow's own decompression-bomb limit (~0.25 GiB of RGBA)
DEFAULT_SEED = 0
JPEG_QUALITY = 95
PNG_COMPRESS_LEVEL = 6
LABELS_NAME = "labels.txt"


class ConvertError(Exception):
    """A problem with the inputs or the output folder; the message says what to fix."""


@dataclass(frozen=True)
class Settings:
    """The knobs that decide the bytes of the output (and so belong in the plan fingerprint).

    Attributes:
      size_per_record: target bytes of images per shard.
      max_pixels: skip images whose header claims more pixels than this.
      seed: key of the deterministic record order.
      split_name: shard name prefix (``train`` -> ``train-00000-of-00004.tfrecord``).
    """

    size_per_record: int = DEFAULT_SIZE_PER_RECORD
    max_pixels: int = DEFAULT_MAX_PIXELS
    seed: int = DEFAULT_SEED
    split_name: str = "train"

    def check(self) -> None:
        """Raise :class:`ConvertError` naming the bad value and what to pass instead."""
        if isinstance(self.size_per_record, bool) or not isinstance(self.size_per_record, int):
            bad = True
        else:
            bad = self.size_per_record <= 0
        if bad:
            raise ConvertError(
                f"--size-per-record must be a positive number of bytes, got "
                f"{self.size_per_record!r} (default {DEFAULT_SIZE_PER_RECORD} = 50 MiB)"
            )
        if self.max_pixels < 1:
            raise ConvertError(f"--max-pixels must be positive, got {self.max_pixels}")
        if not re.fullmatch(r"[A-Za-z0-9_.]+", self.split_name or ""):
            raise ConvertError(
                f"--split-name must be letters, digits, '_' or '.', got {self.split_name!r}"
            )

    def as_manifest(self) -> dict[str, Any]:
        """The ``settings`` object of the manifest (with the encoder versions that shape bytes)."""
        import PIL

        return {
            "size_per_record": self.size_per_record,
            "max_pixels": self.max_pixels,
            "seed": self.seed,
            "order": "sha256(seed, relative path)",
            "jpeg_quality": JPEG_QUALITY,
            "png_compress_level": PNG_COMPRESS_LEVEL,
            "pillow": PIL.__version__,
        }

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def display_name(name: str) -> str:
    """A printable, single-line, valid-UTF-8 form of a file name.

    Bytes that are not valid UTF-8 (``os.scandir`` returns them as lone
    surrogates) become ``\\xNN``; control characters become ``\\xNN`` too.

    Args:
      name: a name or relative path as returned by ``os`` functions.

    Returns:
      The display form; equal to ``name`` for ordinary names.
    """
    if name.isprintable():  # the common case: no control characters, no undecodable bytes
        return name
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    return "".join(f"\\x{ord(c):02x}" if ord(c) < 32 or ord(c) == 127 else c for c in text)


def is_utf8(name: str) -> bool:
    """Whether a name from ``os`` functions is valid UTF-8 (no surrogate-escaped bytes)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shard_name(split: str, index: int, total: int) -> str:
    """``train-00000-of-00004.tfrecord`` (5 digits, more when ``total`` needs them).

    Args:
      split: split name, e.g. ``"train"``.
      index: zero-based shard index.
      total: number of shards.

    Returns:
      The shard's file name.
    """
    digits = max(5, len(str(total)))
    return f"{split}-{index:0{digits}d}-of-{total:0{digits}d}.tfrecord"
