"""The synthetic image set: ImageNet-like JPEGs of textured noise, generated in parallel and reused."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from helpers.bench.settings import DEFAULT_CLASSES, DEFAULT_HEIGHT, DEFAULT_WIDTH, GEN_VERSION
from helpers.util import usable_cores

_POOL: Any = None
_POOL_SHAPE = (900, 1100, 3)


def _noise_pool() -> Any:
    """A process-wide pool of Gaussian noise (int16, sigma 16), cropped per image."""
    global _POOL
    if _POOL is None:
        import numpy as np

        rng = np.random.default_rng(12345)
        _POOL = np.round(rng.normal(0.0, 16.0, _POOL_SHAPE)).astype(np.int16)
    return _POOL


def synthetic_jpeg(index: int, seed: int = 0, width: int = 500, height: int = 375) -> bytes:
    """One deterministic, textured JPEG: smooth colour field + mid-frequency blobs + grain.

    Random noise makes JPEG sizes realistic (~100 KB at 500x375, like ImageNet
    photos) and makes decoding cost what it costs on photos; a flat image
    would compress to a few KB and decode much faster.

    Args:
      index: image number (different content per index).
      seed: dataset seed.
      width, height: pixels.

    Returns:
      The JPEG bytes.
    """
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng([seed, index])
    low = rng.integers(0, 256, (int(rng.integers(3, 8)), int(rng.integers(4, 10)), 3), np.uint8)
    base = np.asarray(
        Image.fromarray(low).resize((width, height), Image.Resampling.BILINEAR), np.int16
    )
    blobs = rng.integers(0, 256, (height // 8 + 1, width // 8 + 1, 3), np.uint8)
    mid = np.asarray(
        Image.fromarray(blobs).resize((width, height), Image.Resampling.BILINEAR), np.int16
    )
    pool = _noise_pool()
    y = int(rng.integers(0, max(1, pool.shape[0] - height)))
    x = int(rng.integers(0, max(1, pool.shape[1] - width)))
    grain = pool[y : y + height, x : x + width]
    if grain.shape[:2] != (height, width):  # larger than the pool: tile it
        reps = (height // pool.shape[0] + 1, width // pool.shape[1] + 1, 1)
        grain = np.tile(pool, reps)[:height, :width]
    scale = float(rng.uniform(1.0, 1.6))
    pixels = (base * 3 + mid) // 4 + (grain * scale).astype(np.int16)
    pixels = np.clip(pixels, 0, 255).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "JPEG", quality=int(rng.integers(85, 94)))
    return out.getvalue()


def _image_rel(index: int, classes: int) -> str:
    return os.path.join(f"class_{index % classes:02d}", f"img_{index:06d}.jpg")


def _write_images(args: tuple[str, int, int, int, int, int, int]) -> int:
    root, start, stop, classes, seed, width, height = args
    total = 0
    for i in range(start, stop):
        data = synthetic_jpeg(i, seed, width, height)
        path = os.path.join(root, _image_rel(i, classes))
        with open(path, "wb") as f:
            f.write(data)
        total += len(data)
    return total


def generate_images(
    root: str | os.PathLike,
    count: int,
    classes: int = DEFAULT_CLASSES,
    *,
    width: int = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
    seed: int = 0,
    workers: int | None = None,
    log: Callable[[str], None] = lambda msg: None,
) -> dict[str, Any]:
    """Write ``count`` JPEGs into ``root/class_NN/`` (ImageNet layout), or reuse them.

    The set is cached: a stamp file ``root/../<name>.json`` records the
    parameters, and a folder whose stamp matches is reused as it is.

    Args:
      root: the dataset folder (created; replaced when its stamp differs).
      count: number of images (spread round-robin over the classes).
      classes: number of class folders.
      width, height: image size.
      seed: content seed.
      workers: processes (default: all cores; 1 = in this process).
      log: progress messages.

    Returns:
      The stamp: parameters, ``images``, ``bytes`` and ``seconds`` (generation time).
    """
    root = os.fspath(root)
    params = {
        "version": GEN_VERSION,
        "count": int(count),
        "classes": int(classes),
        "width": int(width),
        "height": int(height),
        "seed": int(seed),
    }
    stamp_path = root.rstrip(os.sep) + ".json"
    with contextlib.suppress(OSError, ValueError):
        with open(stamp_path, encoding="utf-8") as f:
            stamp = json.load(f)
        if stamp.get("params") == params and os.path.isdir(root):
            return {**stamp, "reused": True}
    if count < 1 or classes < 1:
        raise ValueError(f"need at least one image and one class, got {count} / {classes}")
    shutil.rmtree(root, ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(stamp_path)
    for c in range(min(classes, count)):
        os.makedirs(os.path.join(root, f"class_{c:02d}"), exist_ok=True)
    workers = usable_cores() if workers is None else max(1, int(workers))
    log(f"generating {count} synthetic {width}x{height} JPEGs in {root} ({workers} processes)")
    started = time.perf_counter()
    chunk = max(1, min(100, -(-count // (workers * 4))))
    tasks = [
        (root, i, min(count, i + chunk), classes, seed, width, height)
        for i in range(0, count, chunk)
    ]
    if workers == 1 or len(tasks) == 1:
        total = sum(_write_images(t) for t in tasks)
    else:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            total = sum(pool.imap_unordered(_write_images, tasks))
    stamp = {
        "params": params,
        "images": count,
        "bytes": total,
        "seconds": time.perf_counter() - started,
    }
    with open(stamp_path, "w", encoding="utf-8") as f:
        json.dump(stamp, f, indent=2)
    return stamp


def link_subset(source: str, target: str, count: int) -> int:
    """Hard-link (or copy) the first ``count`` images of ``source`` into ``target``, by class.

    Same files, same page-cache pages: a smaller run over identical bytes.

    Returns:
      The number of images in ``target``.
    """
    shutil.rmtree(target, ignore_errors=True)
    classes = sorted(e.name for e in os.scandir(source) if e.is_dir())
    files = {c: sorted(os.listdir(os.path.join(source, c))) for c in classes}
    picked = 0
    per_class = max(1, count // max(1, len(classes)))
    for c in classes:
        os.makedirs(os.path.join(target, c))
        for name in files[c][:per_class]:
            src, dst = os.path.join(source, c, name), os.path.join(target, c, name)
            try:
                os.link(src, dst)
            except OSError:
                shutil.copyfile(src, dst)
            picked += 1
    return picked


def list_dataset(root: str) -> tuple[list[str], list[int], list[str]]:
    """``(paths, labels, classes)`` of an ImageNet-layout folder (sorted, like the converter)."""
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir() and not e.name.startswith("."))
    paths: list[str] = []
    labels: list[int] = []
    for label, c in enumerate(classes):
        for name in sorted(os.listdir(os.path.join(root, c))):
            if not name.startswith("."):
                paths.append(os.path.join(root, c, name))
                labels.append(label)
    return paths, labels, classes


def dataset_bytes(paths: Sequence[str]) -> int:
    """Sum of the files' sizes."""
    return sum(os.path.getsize(p) for p in paths)


def warm_cache(paths: Iterable[str]) -> int:
    """Read every file once, so the page cache holds it."""
    total = 0
    for p in paths:
        with open(p, "rb") as f:
            total += len(f.read())
    return total
