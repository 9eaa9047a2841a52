"""Image class folders -> size-based TFRecord shards, a label map and a manifest.

::

    python -m helpers.convert --dataset-path images --output-path tfrecords \\
        [--size-per-record 52428800] [--workers N] [--overwrite]

(the seed converter's ``--dataset_path=... --size_per_record=... --output_path=...``
spellings work too). The input is the ImageNet layout, one folder per class::

    images/n01440764/ILSVRC2012_val_00000293.JPEG
    images/n01443537/ILSVRC2012_val_00000236.JPEG

The output folder then holds ``train-00000-of-00004.tfrecord`` ...,
``labels.txt`` (line ``i`` is the class with label ``i``) and ``manifest.json``
(written last: its presence means the conversion finished). Each record is the
course's image Example (:data:`helpers.features.IMAGE_KEYS`).

What happens to each entry of the dataset folder
================================================

*Classes* are the non-hidden, real (not symlinked) folders directly in the
dataset folder, sorted by name (byte order); labels are their positions,
integers in ``[0, N)`` (``tf.one_hot`` silently returns all zeros for a label
``>= depth``). A class folder without usable images is *kept* in the label map
with a warning, so labels never shift when a folder happens to be empty.

*Files* directly inside a class folder are identified by content, never by
extension: magic bytes first, then the header (JPEG SOF segment and PNG IHDR
chunk parsed here; GIF, WebP, BMP and TIFF by Pillow's ``Image.open``, which
reads only the header). No pixel is decoded unless the image must be converted:

- JPEG (baseline / progressive, 8-bit, RGB or grayscale) and PNG (8-bit RGB or
  grayscale) are stored **as their original bytes** with ``image/format``
  ``jpeg`` / ``png``: no decode, no re-encode. A PNG named ``.JPEG`` stays a PNG
  (``image/format = png``). Grayscale JPEG/PNG stay as they are too:
  ``decode_image(..., channels=3)`` expands them to three channels.
- Everything else that is an image is decoded once and re-encoded so that
  ``tf.io.decode_image(x, channels=3, expand_animations=False)`` gives one
  ``(H, W, 3) uint8`` image: a CMYK (or otherwise exotic) JPEG becomes an RGB
  JPEG (quality 95, its source was lossy anyway); RGBA, palette, 16-bit or
  low-bit-depth PNG, WebP, GIF (first frame), BMP and TIFF become RGB PNG
  (lossless). Transparency is composited onto white; 16-bit samples keep
  their high byte. Each conversion is listed in the manifest.
- A file that claims to be an image (its content starts like one, or its name
  ends in an image extension such as ``.jpg``) but is not usable is **skipped**
  and listed in the manifest with the reason: zero bytes, random bytes,
  truncated, a header claiming more than ``max_pixels`` pixels (refused from
  the header alone, before any pixel memory is allocated), unreadable
  (permissions), a broken symlink.
- Anything else (``README.txt``, ``Thumbs.db``) is **ignored** and counted, as
  are hidden files and folders (``.DS_Store``, ``.ipynb_checkpoints``), files
  outside class folders, junk folders (``__MACOSX``, ``__pycache__``, ...) and
  special files (FIFOs, sockets).

Truncated JPEGs are found without decoding: the converter walks the marker
segments up to the first scan (SOS) and then looks for the end-of-image marker
``FFD9`` after it, scanning backwards from the end of the file. ``FF D9``
cannot occur inside entropy-coded data (a data byte ``FF`` is always stuffed
as ``FF 00``), so finding it proves the file was not cut, while trailing
bytes after it (some cameras append data) are allowed. PNGs are checked the
same way for their ``IEND`` chunk. (Pillow's ``verify()`` does nothing useful
for JPEG, and a full decode would cost more than the copy.) A flipped bit
*inside* the image data cannot be found this way -- it still decodes -- which
is what the manifest's per-record sha256 is for. Every file is checked again
on the bytes actually copied into the shard, so a file that changes between
the scan and the write cannot slip in unchecked.

*Nested folders* inside a class are not searched (counted as ignored, one entry
per folder). *Symlinks*: a symlinked file is followed when it points to a
regular file; a symlinked folder is never followed (so loops cannot happen);
a broken or looping file symlink is skipped and reported.

*Names* are found with ``os.scandir`` (never glob, so ``a[1].jpg``, ``*``,
``?``, ``café``, ``猫`` and names with spaces are ordinary names). A name that
is not valid UTF-8 (e.g. Latin-1 bytes from an old archive) is converted, not
dropped: ``image/filename`` holds the exact bytes of the relative path as they
are on disk, while ``labels.txt``, ``image/class/text`` and the manifest show
the name with the undecodable bytes escaped as ``\\xNN``, and the manifest
lists it under ``non_utf8_names``.

Sharding and order
==================

Shard boundaries are planned *before* anything is written, from the files'
sizes: a shard takes records until the next image's bytes would push the sum
of its images' bytes past ``size_per_record`` (a single larger image gets a
shard of its own), so the ``-of-NNNNN`` total is known up front and the same
input always gives the same shards. The seed converter counted bytes the same
way (image bytes, not the slightly larger record bytes).

Records are ordered by a keyed hash of their relative path, i.e. a
deterministic shuffle, rather than class by class: with shards sorted by
class, ``interleave`` reads a few shards at a time and ``shuffle`` with any
realistic buffer sees one or two classes for thousands of steps, so batches are
single-class and training oscillates. Mixing classes inside every shard makes
file-level shuffling plus a modest shuffle buffer enough. The hash (not
``random.shuffle``) keeps the order stable across Python versions and keeps a
file's position independent of which other files exist.

Parallelism and safety
======================

Worker *processes* (spawn start method, so it also works on macOS/Windows and
inside Jupyter) first probe the files' headers, then each writes whole shards.
Every shard is written to ``.<name>.tmp-<pid>`` in the output folder,
fsync'd and renamed to its final name only when complete, so a file under a
final shard name is never partial, not even after SIGKILL. ``labels.txt`` and
then ``manifest.json`` are written last, the same way. Records are serialized
with ``deterministic=True``; with the planned order this makes shards
byte-identical across runs and across any number of workers.

An output folder that already holds shards, a label map or a manifest is
refused unless ``overwrite=True``; then the old manifest, shards and label map
are removed (after the new input has been scanned successfully) before new
ones are written, so old and new shards are never mixed. Stale temporary files
from a killed run are removed automatically. On any error or interrupt
(Ctrl-C, and SIGTERM under the CLI) the files this run wrote are removed.
Workers load only TensorFlow's protobuf modules, not the TensorFlow runtime,
so they start in about half a second instead of several.

The manifest
============

``manifest.json`` (UTF-8, keys in a fixed order, no timestamps and no worker
count, so it is byte-identical across runs)::

    format_version, created_by, split, dataset_path
    label_map          "labels.txt"
    num_classes, classes            class names; label = index
    class_counts       {class: records}, every class, zeros included
    num_records, num_shards, total_bytes, size_per_record, compression (null)
    settings           size_per_record, max_pixels, seed, order, jpeg_quality,
                       png_compress_level, pillow version
    features           the Example keys (helpers.features.IMAGE_KEYS)
    shards             [{file, records, bytes, sha256 (whole file),
                         class_counts, record_sha256 (one per record payload)}]
    skipped            [{path, reason}]        bad files, not in any shard
    converted          [{path, from, to}]      re-encoded images
    ignored            {count, by_reason: {reason: n}, entries: [{path, reason}]}
    non_utf8_names     display forms of names that are not valid UTF-8
    warnings           e.g. empty classes

``python -m helpers.records verify OUTPUT_DIR`` checks every shard against it.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import hashlib
import io
import json
import os
import re
import signal
import stat
import sys
import time
import types
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from PIL import Image, ImageFile

from helpers.records import frame_record, load_features

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "DEFAULT_SIZE_PER_RECORD",
    "ConvertError",
    "build_parser",
    "convert",
    "display_name",
    "main",
    "parse_size",
    "shard_name",
]

DEFAULT_SIZE_PER_RECORD = 50 * 1024 * 1024  # 52428800 bytes, the seed converter's default
DEFAULT_MAX_PIXELS = 89_478_485  # Pillow's own decompression-bomb limit (~0.25 GiB of RGBA)
DEFAULT_SEED = 0
JPEG_QUALITY = 95
PNG_COMPRESS_LEVEL = 6
MANIFEST_NAME = "manifest.json"
LABELS_NAME = "labels.txt"
FORMAT_VERSION = 1

# Names that are never classes even though they are folders (archive / NAS / Python junk).
JUNK_DIRS = frozenset({"__MACOSX", "__pycache__", "@eaDir", "lost+found"})
# Only used to decide whether a file that is *not* an image was meant to be one
# (then it is reported as skipped) or is just another file (then it is ignored).
IMAGE_EXTENSIONS = frozenset(
    ".jpg .jpeg .jpe .jfif .png .gif .webp .bmp .dib .tif .tiff .ppm .pgm .pnm .heic .heif .avif".split()
)

_TMP_RE = re.compile(r"^\..+\.tmp-\d+$")
_SOF_MARKERS = frozenset(
    {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
)
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_IEND = b"IEND\xaeB`\x82"
_JPEG_EOI = b"\xff\xd9"
# Test hook: seconds to sleep after each shard, so tests can interrupt a run partway.
_DELAY_ENV = "HELPERS_CONVERT_TEST_DELAY"


class ConvertError(Exception):
    """A problem with the inputs or the output folder; the message says what to fix."""


class _Skip(Exception):
    """Internal: this file is skipped (reported with ``reason``)."""


class _Ignore(Exception):
    """Internal: this file is not an image and is ignored (counted with ``reason``)."""


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------


def display_name(name: str) -> str:
    """A printable, single-line, valid-UTF-8 form of a file name.

    Bytes that are not valid UTF-8 (``os.scandir`` returns them as lone
    surrogates) become ``\\xNN``; control characters become ``\\xNN`` too.

    Args:
      name: a name or relative path as returned by ``os`` functions.

    Returns:
      The display form; equal to ``name`` for ordinary names.
    """
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    return "".join(f"\\x{ord(c):02x}" if ord(c) < 32 or ord(c) == 127 else c for c in text)


def _is_utf8(name: str) -> bool:
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


def parse_size(text: str | int) -> int:
    """Parse a byte count: ``52428800``, ``50MiB``, ``16M``, ``1.5GB``, ``64k``.

    Args:
      text: an integer or a number with an optional K/M/G/T suffix
        (``KiB``/``K``/``k`` = 1024; ``KB`` = 1000).

    Returns:
      The number of bytes.

    Raises:
      ValueError: not a size.
    """
    if isinstance(text, int):
        return text
    m = re.fullmatch(r"\s*([-+]?\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(i?[bB]?)\s*", str(text))
    if not m:
        raise ValueError(f"{text!r} is not a byte count (e.g. 52428800, 50MiB, 16M)")
    number, prefix, unit = m.groups()
    base = 1000 if unit.upper() == "B" and prefix else 1024
    power = " KMGT".index(prefix.upper()) if prefix else 0
    return int(float(number) * base**power)


@contextlib.contextmanager
def _pil_limits() -> Iterator[None]:
    """Switch off Pillow's global bomb check and truncated-image leniency (we check ourselves)."""
    saved = Image.MAX_IMAGE_PIXELS, ImageFile.LOAD_TRUNCATED_IMAGES
    Image.MAX_IMAGE_PIXELS = None
    ImageFile.LOAD_TRUNCATED_IMAGES = False
    try:
        yield
    finally:
        Image.MAX_IMAGE_PIXELS, ImageFile.LOAD_TRUNCATED_IMAGES = saved


_OWN_PROCESS = False  # True in worker processes and under ``python -m``: load protobufs only


def _load_features() -> types.ModuleType:
    """:mod:`helpers.features`, without the TensorFlow runtime in processes we own.

    See :func:`helpers.records.load_features`; workers and the CLI set
    ``_OWN_PROCESS``, a library call from a notebook does not.
    """
    return load_features(light=_OWN_PROCESS)


# ---------------------------------------------------------------------------
# Scanning the dataset folder
# ---------------------------------------------------------------------------


@dataclass
class _Entry:
    path: str  # absolute path (may hold surrogate-escaped bytes)
    rel: str  # "class/file" relative to the dataset root
    label: int
    ext: str  # lower-case extension, used only to tell "bad image" from "not an image"


@dataclass
class _Scan:
    classes: list[str] = field(default_factory=list)  # folder names, sorted by bytes
    entries: list[_Entry] = field(default_factory=list)
    ignored: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)


def _sort_key(entry: os.DirEntry) -> bytes:
    return os.fsencode(entry.name)


def _scan(dataset: str) -> _Scan:
    """List classes and candidate files (one ``os.scandir`` per folder, never glob)."""
    scan = _Scan()
    with os.scandir(dataset) as it:
        top = sorted(it, key=_sort_key)
    for entry in top:
        rel = entry.name
        if entry.name.startswith("."):
            scan.ignored.append({"path": display_name(rel), "reason": "hidden"})
        elif entry.is_symlink() and entry.is_dir():
            scan.ignored.append(
                {"path": display_name(rel), "reason": "symlinked folder (not followed)"}
            )
        elif entry.is_dir(follow_symlinks=False):
            if entry.name in JUNK_DIRS:
                scan.ignored.append({"path": display_name(rel), "reason": "junk folder"})
            else:
                scan.classes.append(entry.name)
        else:
            scan.ignored.append(
                {"path": display_name(rel), "reason": "file outside a class folder"}
            )
    for label, cls in enumerate(scan.classes):
        folder = os.path.join(dataset, cls)
        try:
            with os.scandir(folder) as it:
                children = sorted(it, key=_sort_key)
        except OSError as err:
            raise ConvertError(
                f"cannot list class folder {display_name(folder)}: {err.strerror}; fix its "
                "permissions or move it out of the dataset folder"
            ) from None
        for entry in children:
            rel = f"{cls}/{entry.name}"
            shown = display_name(rel)
            if entry.name.startswith("."):
                scan.ignored.append({"path": shown, "reason": "hidden"})
                continue
            if entry.is_symlink():
                try:
                    st = os.stat(entry.path)
                except OSError as err:
                    scan.skipped.append(
                        {"path": shown, "reason": f"broken symlink ({err.strerror or err})"}
                    )
                    continue
                if stat.S_ISDIR(st.st_mode):
                    scan.ignored.append(
                        {"path": shown, "reason": "symlinked folder (not followed)"}
                    )
                    continue
                if not stat.S_ISREG(st.st_mode):
                    scan.ignored.append({"path": shown, "reason": "not a regular file"})
                    continue
            elif entry.is_dir(follow_symlinks=False):
                scan.ignored.append({"path": shown + "/", "reason": "nested folder (not searched)"})
                continue
            elif not entry.is_file(follow_symlinks=False):
                scan.ignored.append({"path": shown, "reason": "not a regular file"})
                continue
            ext = os.path.splitext(entry.name)[1].lower()
            scan.entries.append(_Entry(entry.path, rel, label, ext))
    return scan


# ---------------------------------------------------------------------------
# Content detection (headers only)
# ---------------------------------------------------------------------------


@dataclass
class _Probe:
    """What a file is: detected format, size, and whether it can be stored as-is."""

    kind: str  # detected container: jpeg, png, gif, webp, bmp, tiff
    width: int
    height: int
    mode: str  # Pillow mode, e.g. RGB, L, CMYK, RGBA, P, I;16
    copy: bool  # store the original bytes
    out_format: str  # image/format of the stored bytes: jpeg or png
    note: str = ""  # why a conversion is needed


_PIL_FORMATS = {
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
      _Skip: the header is cut or corrupt.
    """
    pos = 2
    frame = None
    while True:
        b = src.read_at(pos, 2)
        if len(b) < 2:
            raise _Skip(_CUT_HEADER)
        if b[0] != 0xFF:
            raise _Skip(f"corrupt JPEG header (no marker at byte {pos})")
        if b[1] == 0xFF:  # fill byte
            pos += 1
            continue
        code = b[1]
        if code == 0x01 or 0xD0 <= code <= 0xD8:  # standalone markers
            pos += 2
            continue
        if code == 0xD9:
            raise _Skip("corrupt JPEG (end-of-image marker before any image data)")
        length = src.read_at(pos + 2, 2)
        if len(length) < 2:
            raise _Skip(_CUT_HEADER)
        seglen = int.from_bytes(length, "big")
        if seglen < 2:
            raise _Skip(f"corrupt JPEG header (segment length {seglen} at byte {pos})")
        if code in _SOF_MARKERS:
            sof = src.read_at(pos + 4, 6)
            if len(sof) < 6:
                raise _Skip(_CUT_HEADER)
            height, width = int.from_bytes(sof[1:3], "big"), int.from_bytes(sof[3:5], "big")
            frame = (code, sof[0], height, width, sof[5])
        elif code == 0xDA:
            if frame is None:
                raise _Skip("corrupt JPEG (image data before a frame header)")
            return (*frame, pos + 2 + seglen)
        pos += 2 + seglen


_PNG_MODES = {0: "L", 2: "RGB", 3: "P", 4: "LA", 6: "RGBA"}
_PNG_NAMES = {0: "gray", 2: "RGB", 3: "palette", 4: "gray+alpha", 6: "RGBA"}
_JPEG_MODES = {1: "L", 3: "RGB", 4: "CMYK"}


def _too_big(width: int, height: int, max_pixels: int) -> None:
    if width * height > max_pixels:
        raise _Skip(
            f"{width}x{height} = {width * height} pixels exceeds --max-pixels {max_pixels} "
            "(refused from the header, nothing decoded)"
        )


def _probe(f: IO[bytes], size: int, ext: str, max_pixels: int, data: bytes | None = None) -> _Probe:
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
      A :class:`_Probe`.

    Raises:
      _Skip: a bad image, with the reason. _Ignore: not an image.
    """
    claims_image = ext in IMAGE_EXTENSIONS
    if size == 0:
        if claims_image:
            raise _Skip("empty file (0 bytes)")
        raise _Ignore("not an image (empty file)")
    src = _Source(f, size, data)
    kind = _sniff(src.head[:32])
    if kind is None:
        if claims_image:
            raise _Skip("not an image: the content matches no supported format")
        raise _Ignore("not an image")
    if kind == "jpeg":
        sof, precision, height, width, components, scan = _jpeg_header(src)
        if width == 0 or height == 0:
            raise _Skip(f"unsupported JPEG (frame size {width}x{height})")
        _too_big(width, height, max_pixels)
        if not src.has_after(_JPEG_EOI, scan):
            raise _Skip("truncated JPEG (no end-of-image marker FFD9 after the image data)")
        mode = _JPEG_MODES.get(components, f"{components}-channel")
        if components in (1, 3) and sof in (0xC0, 0xC1, 0xC2) and precision == 8:
            return _Probe(kind, width, height, mode, True, "jpeg")
        if components in (1, 3):
            note = f"JPEG SOF{sof - 0xC0} {precision}-bit"
        else:
            note = f"{mode} JPEG"
        return _Probe(kind, width, height, mode, False, "jpeg", note)
    if kind == "png":
        ihdr = src.read_at(0, 33)
        if len(ihdr) < 33 or ihdr[12:16] != b"IHDR":
            raise _Skip("corrupt PNG header (no IHDR chunk)")
        if zlib.crc32(ihdr[12:29]) != int.from_bytes(ihdr[29:33], "big"):
            raise _Skip("corrupt PNG header (IHDR CRC mismatch)")
        width, height = int.from_bytes(ihdr[16:20], "big"), int.from_bytes(ihdr[20:24], "big")
        depth, color_type = ihdr[24], ihdr[25]
        if color_type not in _PNG_MODES or width == 0 or height == 0:
            raise _Skip(f"corrupt PNG header (color type {color_type}, size {width}x{height})")
        _too_big(width, height, max_pixels)
        if not src.has_after(_PNG_IEND, 33):
            raise _Skip("truncated PNG (no IEND chunk at the end)")
        mode = _PNG_MODES[color_type]
        if depth == 8 and color_type in (0, 2):
            return _Probe(kind, width, height, mode, True, "png")
        note = f"{depth}-bit {_PNG_NAMES[color_type]} PNG"
        return _Probe(kind, width, height, mode, False, "png", note)
    f.seek(0)
    try:
        with _pil_limits(), Image.open(f, formats=[_PIL_FORMATS[kind]]) as im:
            width, height = im.size
            mode = im.mode
    except Exception as err:  # Pillow raises many types for corrupt headers
        raise _Skip(f"not a decodable {kind.upper()}: {_pil_message(err)}") from None
    _too_big(width, height, max_pixels)
    return _Probe(kind, width, height, mode, False, "png", f"{kind.upper()} ({mode})")


def _pil_message(err: Exception) -> str:
    """Pillow's error text without the file object's repr (which holds a full path)."""
    if isinstance(err, Image.UnidentifiedImageError):
        return "Pillow cannot parse its header"
    return re.sub(r"\s*<[^>]*>", "", str(err)) or type(err).__name__


def _probe_entry(entry: _Entry, max_pixels: int) -> tuple[str, Any, int]:
    """Probe one file on disk.

    Returns:
      ``("ok", _Probe, size)``, ``("skip", reason, size)`` or ``("ignore", reason, size)``.
    """
    size = 0
    try:
        with open(entry.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            return "ok", _probe(f, size, entry.ext, max_pixels), size
    except _Skip as s:
        return "skip", str(s), size
    except _Ignore as s:
        return "ignore", str(s), size
    except OSError as err:
        return "skip", f"cannot read ({err.strerror or err})", size


def _probe_batch(entries: list[_Entry], max_pixels: int) -> list[tuple[str, Any, int]]:
    """Probe a batch of files (one task for a worker process)."""
    return [_probe_entry(entry, max_pixels) for entry in entries]


# ---------------------------------------------------------------------------
# Encoding one record
# ---------------------------------------------------------------------------


def _to_rgb(im: Image.Image) -> Image.Image:
    """First frame -> RGB; alpha composited onto white, 16-bit samples keep their high byte."""
    mode = im.mode
    if mode.startswith("I;16") or mode == "I":
        import numpy as np

        arr = np.asarray(im)
        arr = (np.clip(arr.astype(np.int64), 0, 65535) >> 8).astype(np.uint8)
        return Image.fromarray(arr).convert("RGB")
    if mode == "F":
        raise _Skip("unsupported pixel mode F (floating-point samples)")
    has_alpha = mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in im.info
    if has_alpha:
        rgba = im.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return im.convert("RGB")


def _reencode(data: bytes, probe: _Probe) -> bytes:
    """Decode once and re-encode as RGB JPEG / PNG (see the module docstring)."""
    try:
        with _pil_limits(), Image.open(io.BytesIO(data), formats=[_PIL_FORMATS[probe.kind]]) as im:
            im.seek(0)  # first frame of an animation
            im.load()
            rgb = _to_rgb(im)
    except _Skip:
        raise
    except Exception as err:
        raise _Skip(
            f"cannot decode {probe.kind.upper()} ({probe.note}): {_pil_message(err)}"
        ) from None
    out = io.BytesIO()
    if probe.out_format == "jpeg":
        rgb.save(out, "JPEG", quality=JPEG_QUALITY)
    else:
        rgb.save(out, "PNG", compress_level=PNG_COMPRESS_LEVEL)
    return out.getvalue()


@dataclass
class _Item:
    """One planned record."""

    path: str
    rel: str
    label: int
    class_text: str
    ext: str
    size: int


@dataclass
class _ShardTask:
    index: int
    name: str
    output_dir: str
    items: list[_Item]
    max_pixels: int


@dataclass
class _ShardResult:
    index: int
    name: str
    records: int
    bytes: int
    sha256: str
    record_sha256: list[str]
    class_counts: dict[str, int]
    skipped: list[dict[str, str]]
    converted: list[dict[str, str]]


def _write_chunk(f: IO[bytes], data: bytes) -> None:
    """Write to a shard (one place, so tests can simulate a full disk)."""
    f.write(data)


def _encode_item(item: _Item, max_pixels: int) -> tuple[bytes, _Probe]:
    """Read a file and return the bytes to store plus its probe (re-checked on the bytes read)."""
    try:
        with open(item.path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise _Skip(f"cannot read ({err.strerror or err})") from None
    try:
        probe = _probe(io.BytesIO(data), len(data), item.ext, max_pixels, data)
    except _Ignore as err:  # the file changed into a non-image since it was probed
        raise _Skip(str(err)) from None
    if probe.copy:
        return data, probe
    return _reencode(data, probe), probe


def _record_bytes(
    features: types.ModuleType, payload: bytes, item: _Item, height: int, width: int, fmt: str
) -> bytes:
    """One record: ``serialize_example(image_example(...))``, byte for byte, built faster.

    The generic builders of :mod:`helpers.features` copy the ~100 KB payload
    three or four times (``bytes()``, ``BytesList``, ``Feature``, ``CopyFrom``);
    appending it to the repeated field copies it once. Measured on 500x375
    JPEGs: 26 us instead of 81 us per record (tests/test_bench.py checks the bytes).
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


def _write_shard(task: _ShardTask) -> _ShardResult:
    """Write one shard under a temporary name, fsync it, then rename it into place.

    Args:
      task: the shard's planned records and where to write it.

    Returns:
      Its manifest entry data.

    Raises:
      OSError: writing failed (e.g. ENOSPC); the temporary file is removed.
    """
    features = _load_features()
    final = os.path.join(task.output_dir, task.name)
    tmp = os.path.join(task.output_dir, f".{task.name}.tmp-{os.getpid()}")
    digest = hashlib.sha256()
    result = _ShardResult(task.index, task.name, 0, 0, "", [], {}, [], [])
    try:
        with open(tmp, "wb") as f:
            for item in task.items:
                try:
                    payload, probe = _encode_item(item, task.max_pixels)
                except _Skip as s:
                    result.skipped.append({"path": display_name(item.rel), "reason": str(s)})
                    continue
                if not probe.copy:
                    result.converted.append(
                        {"path": display_name(item.rel), "from": probe.note, "to": probe.out_format}
                    )
                data = _record_bytes(
                    features, payload, item, probe.height, probe.width, probe.out_format
                )
                framed = frame_record(data)
                _write_chunk(f, framed)
                digest.update(framed)
                result.record_sha256.append(hashlib.sha256(data).hexdigest())
                result.class_counts[item.class_text] = (
                    result.class_counts.get(item.class_text, 0) + 1
                )
                result.records += 1
                result.bytes += len(framed)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    result.sha256 = digest.hexdigest()
    delay = float(os.environ.get(_DELAY_ENV, "0") or 0)
    if delay > 0:
        time.sleep(delay)
    return result


# ---------------------------------------------------------------------------
# Planning
# ---------------------------------------------------------------------------


def _order_key(seed: int, rel: str) -> bytes:
    return hashlib.sha256(f"{seed}\0".encode() + os.fsencode(rel)).digest()


def _plan(items: list[_Item], size_per_record: int) -> list[list[_Item]]:
    """Greedy size-based shard plan over items already in record order."""
    shards: list[list[_Item]] = []
    current: list[_Item] = []
    total = 0
    for item in items:
        if current and total + item.size > size_per_record:
            shards.append(current)
            current, total = [], 0
        current.append(item)
        total += item.size
    if current:
        shards.append(current)
    return shards


# ---------------------------------------------------------------------------
# Output folder management
# ---------------------------------------------------------------------------


def _existing_outputs(output: str) -> list[str]:
    """Names in ``output`` that a conversion would clash with (shards, manifest, label map)."""
    try:
        names = os.listdir(output)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(
        n
        for n in names
        if n in (MANIFEST_NAME, LABELS_NAME) or (".tfrecord" in n and not n.startswith("."))
    )


def _remove_stale_temps(output: str) -> int:
    removed = 0
    for name in os.listdir(output):
        if _TMP_RE.match(name) and (
            ".tfrecord" in name or name.startswith((".manifest", ".labels"))
        ):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(output, name))
                removed += 1
    return removed


def _fsync_dir(path: str) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _atomic_write(path: str, text: str) -> None:
    """Write ``text`` to ``path`` via a fsync'd temporary file and a rename."""
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _is_inside(child: str, parent: str) -> bool:
    child, parent = os.path.realpath(child), os.path.realpath(parent)
    return child == parent or child.startswith(parent.rstrip(os.sep) + os.sep)


def _default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS / Windows
        return max(1, os.cpu_count() or 1)


# ---------------------------------------------------------------------------
# Running tasks in-process or in worker processes
# ---------------------------------------------------------------------------


def _init_worker() -> None:
    """Worker set-up: leave Ctrl-C to the parent (it cleans up), load protobufs only."""
    global _OWN_PROCESS
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _OWN_PROCESS = True
    _load_features()


class _Runner:
    """Run functions over tasks, in-process (workers == 1) or in a spawn process pool."""

    def __init__(self, workers: int):
        self.workers = workers
        self._pool = None
        if workers > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self._pool = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_worker,
            )

    def run(
        self, fn: Callable[..., Any], tasks: list[Any], *args: Any
    ) -> Iterator[tuple[int, Any]]:
        """Yield ``(task index, result)`` as tasks complete."""
        if self._pool is None:
            for i, task in enumerate(tasks):
                yield i, fn(task, *args)
            return
        from concurrent.futures import as_completed
        from concurrent.futures.process import BrokenProcessPool

        futures = {self._pool.submit(fn, task, *args): i for i, task in enumerate(tasks)}
        try:
            for future in as_completed(futures):
                yield futures[future], future.result()
        except BrokenProcessPool:
            raise ConvertError(
                "a worker process died (killed, or out of memory?); rerun with fewer --workers"
            ) from None

    def close(self, kill: bool = False) -> None:
        """Shut the pool down; with ``kill``, stop the workers now (after an error or Ctrl-C)."""
        if self._pool is None:
            return
        procs = list((getattr(self._pool, "_processes", None) or {}).values())
        if kill:
            self._pool.shutdown(wait=False, cancel_futures=True)
            for p in procs:
                with contextlib.suppress(Exception):
                    p.kill()
            for p in procs:
                with contextlib.suppress(Exception):
                    p.join(10)
        else:
            self._pool.shutdown(wait=True)
        self._pool = None


def _progress(total: int, desc: str, enabled: bool, unit: str = "img") -> Any:
    from tqdm import tqdm

    return tqdm(
        total=total, desc=desc, unit=unit, disable=not enabled, leave=False, file=sys.stderr
    )


# ---------------------------------------------------------------------------
# The converter
# ---------------------------------------------------------------------------


def _check_args(
    dataset: str, output: str, size_per_record: int, workers: int, max_pixels: int
) -> None:
    if not isinstance(size_per_record, int) or size_per_record <= 0:
        raise ConvertError(
            f"--size-per-record must be a positive number of bytes, got {size_per_record!r} "
            f"(default {DEFAULT_SIZE_PER_RECORD} = 50 MiB)"
        )
    if workers < 1:
        raise ConvertError(f"--workers must be at least 1, got {workers}")
    if max_pixels < 1:
        raise ConvertError(f"--max-pixels must be positive, got {max_pixels}")
    if not os.path.exists(dataset):
        raise ConvertError(
            f"dataset path {display_name(dataset)!r} does not exist; pass --dataset-path DIR "
            "with one sub-folder of images per class"
        )
    if not os.path.isdir(dataset):
        raise ConvertError(
            f"dataset path {display_name(dataset)!r} is not a folder; pass the folder that "
            "holds one sub-folder per class"
        )
    if _is_inside(output, dataset):
        raise ConvertError(
            f"output path {display_name(output)!r} is inside the dataset path "
            f"{display_name(dataset)!r}; choose an output folder outside it"
        )
    if os.path.exists(output) and not os.path.isdir(output):
        raise ConvertError(f"output path {display_name(output)!r} exists and is not a folder")
    ancestor = os.path.abspath(output)
    while not os.path.exists(ancestor) and os.path.dirname(ancestor) != ancestor:
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        raise ConvertError(
            f"cannot create output folder {display_name(output)!r}: {display_name(ancestor)!r} "
            "is a file; choose another --output-path"
        )
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ConvertError(
            f"cannot write to {display_name(ancestor)!r} (permission denied); choose an "
            "--output-path you can write to"
        )


def convert(
    dataset_path: str | os.PathLike,
    output_path: str | os.PathLike,
    size_per_record: int = DEFAULT_SIZE_PER_RECORD,
    workers: int | None = None,
    overwrite: bool = False,
    progress: bool = True,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    split_name: str = "train",
    seed: int = DEFAULT_SEED,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Convert class folders of images to size-based TFRecord shards.

    See the module docstring for the rules (what is copied, converted, skipped
    or ignored; shard planning; order; atomic output).

    Args:
      dataset_path: folder with one sub-folder of images per class.
      output_path: folder for the shards, ``labels.txt`` and ``manifest.json``
        (created if missing; must not be inside ``dataset_path``).
      size_per_record: target bytes of images per shard (the seed's
        ``--size_per_record``; default 50 MiB).
      workers: worker processes (default: the usable CPU cores); 1 runs in
        this process. When left at ``None``, at most one worker per
        2000 files is started: a spawned process takes about half a second
        to start, as long as copying a thousand small images. An explicit
        number is used as given (capped by the number of files).
      overwrite: replace existing shards / manifest / label map in
        ``output_path`` instead of refusing.
      progress: show tqdm progress bars and print warnings.
      max_pixels: skip images whose header claims more pixels than this.
      split_name: shard name prefix, e.g. ``train`` or ``validation``.
      seed: key of the deterministic record order.
      log: where warnings and the summary go (default: stderr when ``progress``,
        else nowhere).

    Returns:
      The manifest (also written to ``output_path/manifest.json``).

    Raises:
      ConvertError: bad arguments, a missing or empty dataset, an output folder
        that holds shards (without ``overwrite``), or a write failure such as a
        full disk; the message says what to fix. Files written by this call
        are removed first.
      KeyboardInterrupt: after removing the files written by this call.
    """
    started = time.perf_counter()
    dataset = os.fspath(dataset_path)
    output = os.fspath(output_path)
    auto_workers = workers is None
    workers = _default_workers() if auto_workers else int(workers)
    if log is None:
        log = (lambda msg: print(msg, file=sys.stderr)) if progress else (lambda msg: None)
    _check_args(dataset, output, size_per_record, workers, max_pixels)
    if not re.fullmatch(r"[A-Za-z0-9_.]+", split_name or ""):
        raise ConvertError(f"--split-name must be letters, digits, '_' or '.', got {split_name!r}")
    clash = _existing_outputs(output)
    if clash and not overwrite:
        hint = "" if MANIFEST_NAME in clash else " (no manifest: an earlier run was interrupted?)"
        shown = ", ".join(clash[:3]) + (", ..." if len(clash) > 3 else "")
        raise ConvertError(
            f"output folder {display_name(output)!r} already holds {shown}{hint}; pass "
            "--overwrite to replace them, or choose another --output-path"
        )

    # 1. Scan (one listing per folder) and probe headers, in parallel.
    try:
        scan = _scan(dataset)
    except OSError as err:
        raise ConvertError(
            f"cannot list dataset folder {display_name(dataset)!r}: {err.strerror}"
        ) from None
    if not scan.classes:
        raise ConvertError(
            f"no class folders in {display_name(dataset)!r}; expected "
            f"{display_name(dataset)}/<class name>/<image files>"
        )
    class_texts = [display_name(c) for c in scan.classes]
    n_files = len(scan.entries)
    cap = 1 + n_files // 2000 if auto_workers else max(1, n_files)
    runner = _Runner(min(workers, cap))
    created_output = False
    planned_names: list[str] = []
    try:
        statuses: list[Any] = [None] * n_files
        batch = max(1, min(256, n_files // (runner.workers * 4) or 1))
        batches = [scan.entries[i : i + batch] for i in range(0, n_files, batch)]
        with _progress(n_files, "scan", progress) as bar:
            for index, results in runner.run(_probe_batch, batches, max_pixels):
                for j, result in enumerate(results):
                    statuses[index * batch + j] = result
                bar.update(len(results))

        items: list[_Item] = []
        skipped = list(scan.skipped)
        ignored = list(scan.ignored)
        for entry, (status, info, size) in zip(scan.entries, statuses, strict=True):
            if status == "ok":
                items.append(
                    _Item(
                        entry.path,
                        entry.rel,
                        entry.label,
                        class_texts[entry.label],
                        entry.ext,
                        size,
                    )
                )
            elif status == "skip":
                skipped.append({"path": display_name(entry.rel), "reason": info})
            else:
                ignored.append({"path": display_name(entry.rel), "reason": info})
        if not items:
            raise ConvertError(
                f"no usable images in the {len(scan.classes)} class folder(s) of "
                f"{display_name(dataset)!r} ({len(skipped)} skipped as bad, {len(ignored)} "
                "ignored); put image files directly inside the class folders"
            )
        items.sort(key=lambda it: _order_key(seed, it.rel))
        plan = _plan(items, size_per_record)
        planned_names = [shard_name(split_name, i, len(plan)) for i in range(len(plan))]

        # 2. Only now touch the output folder: create it, or clear the old conversion.
        if not os.path.isdir(output):
            os.makedirs(output)
            created_output = True
        stale = _remove_stale_temps(output)
        if stale:
            log(f"removed {stale} temporary file(s) left by an interrupted run")
        for name in [MANIFEST_NAME] + [n for n in _existing_outputs(output) if n != MANIFEST_NAME]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(output, name))

        # 3. Write shards (each worker writes whole shards).
        tasks = [
            _ShardTask(i, planned_names[i], output, shard_items, max_pixels)
            for i, shard_items in enumerate(plan)
        ]
        results: list[_ShardResult | None] = [None] * len(tasks)
        with _progress(len(items), "write", progress) as bar:
            for index, result in runner.run(_write_shard, tasks):
                results[index] = result
                bar.update(len(tasks[index].items))
        runner.close()

        # 4. Label map, then the manifest (last: its presence means "complete").
        shards = [r for r in results if r is not None]
        for r in shards:
            skipped.extend(r.skipped)
        converted = [c for r in shards for c in r.converted]
        class_counts = {text: 0 for text in class_texts}
        for r in shards:
            for text, count in r.class_counts.items():
                class_counts[text] += count
        warnings: list[str] = []
        for label, text in enumerate(class_texts):
            if class_counts[text] == 0:
                warnings.append(
                    f"class {text!r} (label {label}) has no usable images; kept in the label map "
                    "so the other labels do not shift"
                )
        non_utf8 = sorted(
            {display_name(e.rel) for e in scan.entries if not _is_utf8(e.rel)}
            | {display_name(c) for c in scan.classes if not _is_utf8(c)}
        )
        if non_utf8:
            warnings.append(
                f"{len(non_utf8)} name(s) are not valid UTF-8 (shown with \\xNN escapes; "
                "image/filename keeps the exact bytes)"
            )
        skipped.sort(key=lambda s: s["path"])
        ignored.sort(key=lambda s: s["path"])
        by_reason: dict[str, int] = {}
        for entry in ignored:
            by_reason[entry["reason"]] = by_reason.get(entry["reason"], 0) + 1
        import PIL

        manifest: dict[str, Any] = {
            "format_version": FORMAT_VERSION,
            "created_by": "helpers.convert",
            "split": split_name,
            "dataset_path": display_name(os.path.realpath(dataset)),
            "label_map": LABELS_NAME,
            "num_classes": len(class_texts),
            "classes": class_texts,
            "class_counts": class_counts,
            "num_records": sum(r.records for r in shards),
            "num_shards": len(shards),
            "total_bytes": sum(r.bytes for r in shards),
            "size_per_record": size_per_record,
            "compression": None,
            "settings": {
                "size_per_record": size_per_record,
                "max_pixels": max_pixels,
                "seed": seed,
                "order": "sha256(seed, relative path)",
                "jpeg_quality": JPEG_QUALITY,
                "png_compress_level": PNG_COMPRESS_LEVEL,
                "pillow": PIL.__version__,
            },
            "features": dict(_load_features().IMAGE_KEYS),
            "shards": [
                {
                    "file": r.name,
                    "records": r.records,
                    "bytes": r.bytes,
                    "sha256": r.sha256,
                    "class_counts": {
                        t: r.class_counts[t] for t in class_texts if t in r.class_counts
                    },
                    "record_sha256": r.record_sha256,
                }
                for r in shards
            ],
            "skipped": skipped,
            "converted": converted,
            "ignored": {
                "count": len(ignored),
                "by_reason": dict(sorted(by_reason.items())),
                "entries": ignored,
            },
            "non_utf8_names": non_utf8,
            "warnings": warnings,
        }
        _atomic_write(os.path.join(output, LABELS_NAME), "".join(t + "\n" for t in class_texts))
        _atomic_write(
            os.path.join(output, MANIFEST_NAME),
            json.dumps(manifest, indent=2, ensure_ascii=False) + "\n",
        )
        _fsync_dir(output)
    except BaseException as err:
        runner.close(kill=True)
        _cleanup(output, planned_names, created_output)
        if isinstance(err, OSError):
            raise ConvertError(_describe_write_error(err, output)) from err
        raise
    for message in warnings:
        log(f"warning: {message}")
    log(_summary(manifest, output, time.perf_counter() - started))
    return manifest


def _describe_write_error(err: OSError, output: str) -> str:
    where = display_name(err.filename) if isinstance(err.filename, str) else display_name(output)
    if err.errno == errno.ENOSPC:
        what = (
            "no space left on the device (ENOSPC); free some space or choose another --output-path"
        )
    elif err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        what = f"{err.strerror}; choose an --output-path you can write to"
    else:
        what = f"{err.strerror or err}"
    return f"cannot write {where}: {what} (partial output removed)"


def _cleanup(output: str, planned: list[str], created_output: bool) -> None:
    """Remove everything this run wrote (temporary files, shards, label map, manifest)."""
    if not os.path.isdir(output):
        return
    for name in planned:
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(output, name))
    if planned:  # we got past planning, so the label map / manifest (if any) are ours
        for name in (LABELS_NAME, MANIFEST_NAME):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(output, name))
    own = {f".{n}.tmp-" for n in [*planned, LABELS_NAME, MANIFEST_NAME]}
    for name in os.listdir(output):
        if any(name.startswith(prefix) for prefix in own):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(output, name))
    if created_output:
        with contextlib.suppress(OSError):
            os.rmdir(output)  # only succeeds when empty


def _summary(manifest: dict[str, Any], output: str, seconds: float) -> str:
    n = manifest["num_records"]
    mb = manifest["total_bytes"] / 1e6
    rate = f"{n / seconds:.0f} img/s, {mb / seconds:.1f} MB/s" if seconds > 0 else ""
    empty = sum(1 for c in manifest["class_counts"].values() if c == 0)
    lines = [
        f"wrote {manifest['num_shards']} shard(s), {n} images, {mb:.1f} MB to "
        f"{display_name(output)} in {seconds:.1f} s ({rate})",
        f"classes {manifest['num_classes']} ({empty} empty); converted "
        f"{len(manifest['converted'])}; skipped {len(manifest['skipped'])}; ignored "
        f"{manifest['ignored']['count']}",
    ]
    for s in manifest["skipped"][:20]:
        lines.append(f"  skipped {s['path']}: {s['reason']}")
    if len(manifest["skipped"]) > 20:
        lines.append(f"  ... {len(manifest['skipped']) - 20} more in {MANIFEST_NAME}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------


class _OneLineParser(argparse.ArgumentParser):
    """Argument errors as one line (no usage dump)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    """The CLI's argument parser (``python -m helpers.convert --help``)."""
    parser = _OneLineParser(
        prog="python -m helpers.convert",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Convert class folders of images (DATASET/<class>/<image>) into size-based\n"
            "TFRecord shards, labels.txt and manifest.json. JPEG and plain PNG bytes are\n"
            "copied as they are; other images are converted to RGB; bad files are skipped\n"
            "and listed in the manifest. The seed spellings --dataset_path=...,\n"
            "--size_per_record=... and --output_path=... are accepted too."
        ),
        epilog=(
            "examples:\n"
            "  python -m helpers.convert --dataset-path data/images --output-path /tmp/shards\n"
            "  python -m helpers.convert --dataset_path=images --size_per_record=16777216 "
            "--output_path=tfrecords\n"
            "  python -m helpers.records verify /tmp/shards     # check every CRC and checksum\n\n"
            "exit status: 0 done (skipped files are listed, not fatal; see --strict),\n"
            "1 conversion failed (nothing left behind), 2 bad arguments or input,\n"
            "130 interrupted (partial output removed)."
        ),
    )
    parser.add_argument(
        "--dataset-path",
        "--dataset_path",
        dest="dataset_path",
        default="images",
        help="folder with one sub-folder per class (default: %(default)s)",
    )
    parser.add_argument(
        "--output-path",
        "--output_path",
        dest="output_path",
        default="tfrecords",
        help="folder for shards, labels.txt and manifest.json; created if missing "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--size-per-record",
        "--size_per_record",
        dest="size_per_record",
        default=str(DEFAULT_SIZE_PER_RECORD),
        metavar="BYTES",
        help="target image bytes per shard, e.g. 52428800, 50MiB, 16M (default: 52428800 = 50 MiB)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help=f"worker processes; 1 = no subprocesses (default: the CPU cores, here "
        f"{_default_workers()}, but at most one per 2000 files)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the shards/manifest/labels already in the output folder",
    )
    parser.add_argument(
        "--max-pixels",
        "--max_pixels",
        dest="max_pixels",
        type=int,
        default=DEFAULT_MAX_PIXELS,
        metavar="N",
        help="skip images whose header claims more pixels (default: %(default)s)",
    )
    parser.add_argument(
        "--split-name",
        "--split_name",
        dest="split_name",
        default="train",
        help="shard name prefix: <split>-00000-of-00004.tfrecord (default: %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help="key of the deterministic record order (default: %(default)s)",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no progress bars, warnings or summary"
    )
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 (after writing) when any file was skipped"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        size = parse_size(args.size_per_record)
    except ValueError as err:
        print(f"error: --size-per-record: {err}", file=sys.stderr)
        return 2

    def _terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        manifest = convert(
            args.dataset_path,
            args.output_path,
            size_per_record=size,
            workers=args.workers,
            overwrite=args.overwrite,
            progress=not args.quiet,
            max_pixels=args.max_pixels,
            split_name=args.split_name,
            seed=args.seed,
            log=(lambda msg: None) if args.quiet else print,
        )
    except ConvertError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1 if isinstance(err.__cause__, OSError) else 2
    except KeyboardInterrupt:
        print(f"interrupted: removed the partial output in {args.output_path}", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    if args.strict and manifest["skipped"]:
        print(f"error: {len(manifest['skipped'])} file(s) skipped (--strict)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    # Run the importable module (one module object, also in spawned workers), and mark
    # this process as ours: it never needs the TensorFlow runtime, only its protobufs.
    import helpers.convert as _module

    _module._OWN_PROCESS = True
    sys.exit(_module.main())
