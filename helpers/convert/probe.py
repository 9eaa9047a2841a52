"""What a file is, from its header alone: format, size, and whether it can be stored as-is.

JPEG and PNG headers are parsed here (SOF segment, IHDR chunk) and checked for
their end marker (``FFD9`` after the first scan, the ``IEND`` chunk): they are
the bulk of real datasets, and Pillow's JPEG parser costs more than the copy.
GIF, WebP, BMP and TIFF are identified by Pillow's ``Image.open``, which also
reads only the header. No pixel is decoded here. ``docs/converter.md`` gives
the rules (copied, converted, skipped, ignored).
"""

from __future__ import annotations

import contextlib
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from PIL import Image, ImageFile

from helpers.records import is_lfs_pointer

__all__ = [
    "IMAGE_EXTENSIONS",
    "LFS_POINTER_REASON",
    "PIL_FORMATS",
    "Ignore",
    "Probe",
    "Skip",
    "pil_limits",
    "pil_message",
    "probe",
]

# Only used to decide whether a file that is *not* an image was meant to be one
# (then it is reported as skipped) or is just another file (then it is ignored).
IMAGE_EXTENSIONS = frozenset(
    ".jpg .jpeg .jpe .jfif .png .gif .webp .bmp .dib .tif .tiff .ppm .pgm .pnm .heic .heif .avif".split()
)
LFS_POINTER_REASON = (
    "a git-LFS pointer file, not the image (the repository was cloned without the LFS "
    "objects: run `git lfs pull` in it, then convert again)"
)
_SOF_MARKERS = frozenset(
    {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
)
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_IEND = b"IEND\xaeB`\x82"
_JPEG_EOI = b"\xff\xd9"


class Skip(Exception):
    """This file is a bad image: skipped and listed in the manifest with the reason."""


class Ignore(Exception):
    """This file is not an image: ignored and counted with the reason."""


@contextlib.contextmanager
def pil_limits() -> Iterator[None]:
    """Switch off Pillow's global bomb check and truncated-image leniency (we check ourselves)."""
    saved = Image.MAX_IMAGE_PIXELS, ImageFile.LOAD_TRUNCATED_IMAGES
    Image.MAX_IMAGE_PIXELS = None
    ImageFile.LOAD_TRUNCATED_IMAGES = False
    try:
        yield
    finally:
        Image.MAX_IMAGE_PIXELS, ImageFile.LOAD_TRUNCATED_IMAGES = saved


@dataclass
class Probe:
    """What a file is: detected format, size, and whether it can be stored as-is."""

    kind: str  # detected container: jpeg, png, gif, webp, bmp, tiff
    width: int
    height: int
    mode: str  # Pillow mode, e.g. RGB, L, CMYK, RGBA, P, I;16
    copy: bool  # store the original bytes
    out_format: str  # image/format of the stored bytes: jpeg or png
    note: str = ""  # why a conversion is needed


PIL_FORMATS = {
    "jpeg": "JPEG",
    "png": "PNG",
    "gif": "GIF",
    "webp": "WEBP",
    "bmp": "BMP",
    "tiff": "TIFF",
}


def _sniff(head: bytes) -> str | None:
    """Detect the container from magic bytes."""
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith(_PNG_SIGNATURE):
        return "png"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head[:2] == b"BM" and len(head) >= 26:
        return "bmp"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "tiff"
    return None


class _Source:
    """Random access to a file's bytes, served from one read of its first 64 KiB when possible."""

    HEAD = 1 << 16

    def __init__(self, f: IO[bytes], size: int, data: bytes | None = None):
        self.f, self.size = f, size
        if data is None:
            f.seek(0)
            data = f.read(min(size, self.HEAD))
        self.head = data

    def read_at(self, offset: int, n: int) -> bytes:
        if offset + n <= len(self.head):
            return self.head[offset : offset + n]
        self.f.seek(offset)
        return self.f.read(n)

    def has_after(self, pattern: bytes, start: int) -> bool:
        """Whether ``pattern`` occurs at or after byte ``start``, scanning back from the end."""
        if len(self.head) == self.size:
            return self.head.rfind(pattern, start) != -1
        pos, step = self.size, 4096
        while pos > start:
            lo = max(start, pos - step)
            if pattern in self.read_at(lo, min(self.size, pos + len(pattern) - 1) - lo):
                return True
            pos, step = lo, min(step * 2, 1 << 20)
        return False


_CUT_HEADER = "truncated JPEG (the file ends inside its header)"


def _jpeg_header(src: _Source) -> tuple[int, int, int, int, int, int]:
    """Walk JPEG marker segments up to the first SOS (start of scan).

    Returns:
      ``(sof_marker, precision, height, width, components, scan_start)``.

    Raises:
      Skip: the header is cut or corrupt.
    """
    pos = 2
    frame = None
    while True:
        b = src.read_at(pos, 2)
        if len(b) < 2:
            raise Skip(_CUT_HEADER)
        if b[0] != 0xFF:
            raise Skip(f"corrupt JPEG header (no marker at byte {pos})")
        if b[1] == 0xFF:  # fill byte
            pos += 1
            continue
        code = b[1]
        if code == 0x01 or 0xD0 <= code <= 0xD8:  # standalone markers
            pos += 2
            continue
        if code == 0xD9:
            raise Skip("corrupt JPEG (end-of-image marker before any image data)")
        length = src.read_at(pos + 2, 2)
        if len(length) < 2:
            raise Skip(_CUT_HEADER)
        seglen = int.from_bytes(length, "big")
        if seglen < 2:
            raise Skip(f"corrupt JPEG header (segment length {seglen} at byte {pos})")
        if code in _SOF_MARKERS:
            sof = src.read_at(pos + 4, 6)
            if len(sof) < 6:
                raise Skip(_CUT_HEADER)
            height, width = int.from_bytes(sof[1:3], "big"), int.from_bytes(sof[3:5], "big")
            frame = (code, sof[0], height, width, sof[5])
        elif code == 0xDA:
            if frame is None:
                raise Skip("corrupt JPEG (image data before a frame header)")
            return (*frame, pos + 2 + seglen)
        pos += 2 + seglen


_PNG_MODES = {0: "L", 2: "RGB", 3: "P", 4: "LA", 6: "RGBA"}
_PNG_NAMES = {0: "gray", 2: "RGB", 3: "palette", 4: "gray+alpha", 6: "RGBA"}
_JPEG_MODES = {1: "L", 3: "RGB", 4: "CMYK"}


#: the words of a skip reason for an image over the pixel limit
TOO_MANY_PIXELS = "exceeds --max-pixels"


def _too_big(width: int, height: int, max_pixels: int) -> None:
    if width * height > max_pixels:
        raise Skip(
            f"{width}x{height} = {width * height} pixels {TOO_MANY_PIXELS} {max_pixels} "
            "(refused from the header, nothing decoded)"
        )


def probe(f: IO[bytes], size: int, ext: str, max_pixels: int, data: bytes | None = None) -> Probe:
    """Identify an image from its header (and tail) without decoding pixels.

    JPEG and PNG headers are parsed here (SOF segment, IHDR chunk): they are
    the bulk of real datasets and Pillow's JPEG parser costs more than the
    copy. Other formats are identified by Pillow's ``Image.open``, which also
    reads only the header.

    Args:
      f: the open file (seekable), or a ``BytesIO`` of its content.
      size: its size in bytes.
      ext: its lower-case extension (only decides skip vs ignore for non-images).
      max_pixels: refuse images whose header claims more pixels than this.
      data: the whole content, when it is already in memory.

    Returns:
      A :class:`Probe`.

    Raises:
      Skip: a bad image, with the reason. Ignore: not an image.
    """
    claims_image = ext in IMAGE_EXTENSIONS
    if size == 0:
        if claims_image:
            raise Skip("empty file (0 bytes)")
        raise Ignore("not an image (empty file)")
    src = _Source(f, size, data)
    kind = _sniff(src.head[:32])
    if kind is None:
        if is_lfs_pointer(src.head):
            raise Skip(LFS_POINTER_REASON)
        if claims_image:
            raise Skip("not an image: the content matches no supported format")
        raise Ignore("not an image")
    if kind == "jpeg":
        return _probe_jpeg(src, max_pixels)
    if kind == "png":
        return _probe_png(src, max_pixels)
    f.seek(0)
    try:
        with pil_limits(), Image.open(f, formats=[PIL_FORMATS[kind]]) as im:
            width, height = im.size
            mode = im.mode
    except Exception as err:  # Pillow raises many types for corrupt headers
        raise Skip(f"not a decodable {kind.upper()}: {pil_message(err)}") from None
    _too_big(width, height, max_pixels)
    return Probe(kind, width, height, mode, False, "png", f"{kind.upper()} ({mode})")


def _probe_jpeg(src: _Source, max_pixels: int) -> Probe:
    sof, precision, height, width, components, scan = _jpeg_header(src)
    if width == 0 or height == 0:
        raise Skip(f"unsupported JPEG (frame size {width}x{height})")
    _too_big(width, height, max_pixels)
    if not src.has_after(_JPEG_EOI, scan):
        raise Skip("truncated JPEG (no end-of-image marker FFD9 after the image data)")
    mode = _JPEG_MODES.get(components, f"{components}-channel")
    if components in (1, 3) and sof in (0xC0, 0xC1, 0xC2) and precision == 8:
        return Probe("jpeg", width, height, mode, True, "jpeg")
    if components in (1, 3):
        note = f"JPEG SOF{sof - 0xC0} {precision}-bit"
    else:
        note = f"{mode} JPEG"
    return Probe("jpeg", width, height, mode, False, "jpeg", note)


def _probe_png(src: _Source, max_pixels: int) -> Probe:
    ihdr = src.read_at(0, 33)
    if len(ihdr) < 33 or ihdr[12:16] != b"IHDR":
        raise Skip("corrupt PNG header (no IHDR chunk)")
    if zlib.crc32(ihdr[12:29]) != int.from_bytes(ihdr[29:33], "big"):
        raise Skip("corrupt PNG header (IHDR CRC mismatch)")
    width, height = int.from_bytes(ihdr[16:20], "big"), int.from_bytes(ihdr[20:24], "big")
    depth, color_type = ihdr[24], ihdr[25]
    if color_type not in _PNG_MODES or width == 0 or height == 0:
        raise Skip(f"corrupt PNG header (color type {color_type}, size {width}x{height})")
    _too_big(width, height, max_pixels)
    if not src.has_after(_PNG_IEND, 33):
        raise Skip("truncated PNG (no IEND chunk at the end)")
    mode = _PNG_MODES[color_type]
    if depth == 8 and color_type in (0, 2):
        return Probe("png", width, height, mode, True, "png")
    note = f"{depth}-bit {_PNG_NAMES[color_type]} PNG"
    return Probe("png", width, height, mode, False, "png", note)


def pil_message(err: Exception) -> str:
    """Pillow's error text without the file object's repr (which holds a full path)."""
    if isinstance(err, Image.UnidentifiedImageError):
        return "Pillow cannot parse its header"
    return re.sub(r"\s*<[^>]*>", "", str(err)) or type(err).__name__
