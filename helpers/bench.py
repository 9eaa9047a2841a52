"""Benchmarks: the converter against the I/O limit, the pipeline against the decode limit.

::

    python -m helpers.bench --output bench-results [--images 3000] [--repeats 3] [--quick]
        [--workdir DIR] [--no-cold] [--update-docs]

(``make bench`` runs the first line.) One run measures every figure of issue 6
*and its baseline*, interleaved repeat by repeat so that a burst of load on a
shared machine hits both, and reports medians:

======================================  ===============================================
figure                                  baseline (same run)
======================================  ===============================================
converter images/s, steady state        plain-Python copy of the same bytes into one
(all cores)                             file per class (the I/O limit), warm and cold
converter whole run, start-up included  a single-threaded seed-000-style converter
                                        (``tf.io.read_file`` per image, one Example per
                                        image, one ``TFRecordWriter``)
TFRecord pipeline images/s              the same decode + resize 224 on in-memory bytes
(decode + resize, batch, prefetch)      (the decode ceiling)
TFRecord pipeline, 10 ms per file open  a one-file-per-image tf.data pipeline, same
(simulated)                             simulated storage
TFRecord pipeline                       a Python generator decoding with PIL (seed 001)
pipeline peak memory (default knobs)    one shuffle buffer of serialized records +
                                        decoded batches in flight (computed)
input-wait share, MobileNet training    -- (target < 5 %)
======================================  ===============================================

plus converter and reader throughput for 1 .. all cores, in images/s and MB/s.

The synthetic image set (ImageNet-like 500x375 JPEGs of textured noise, ~100 KB
each) is generated *outside* the repository, in ``--workdir`` (default: a
folder in the system temp directory), in parallel, and reused by later runs
with the same parameters. Results go to ``OUTPUT/results.json`` and
``OUTPUT/bench.png``; ``--update-docs`` also writes ``docs/bench.png`` and
``docs/benchmarks.md`` (the README section).

How each figure is taken:

* *Converter steady state* is a difference of two runs of the CLI, one on the
  whole set (N images) and one on a subset (N/5, but enough files to start as
  many workers; hard links to the same files): ``(N - n) / (T_N - T_n)``.
  Start-up (process spawn, imports, the manifest) cancels out. The converter fsyncs every shard; the copy baseline
  does not (so on a warm cache it runs at memory speed, as the issue asks);
  the copy *with* an fsync per file is reported next to it, to show what the
  disk allows.
* *Cold* runs drop the page cache first (``echo 3 > /proc/sys/vm/drop_caches``,
  needs root); without that permission they are reported as not measured.
* *Pipeline* figures time ``measure_throughput`` of :mod:`helpers.pipeline`
  after a warm-up; the process CPU time per image is recorded too, since on a
  shared machine it is steadier than wall time.
* *Peak memory* runs in a subprocess: RSS (psutil) is sampled every 5 ms and
  the kernel's high-water mark (``VmHWM``, reset through ``clear_refs``) is
  read while one epoch of the default training pipeline runs; the figure is
  peak RSS minus the RSS after TensorFlow has warmed up.
* *Input wait* trains the small MobileNet of lesson 06 in a subprocess with
  :func:`helpers.train.measure_input_wait` over a few windows of steps.

Nothing here is a test: the figures are ratios against baselines taken in the
same run, and a missed target is reported, not raised.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import io
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "Figure",
    "Measurement",
    "check_target",
    "copy_per_class",
    "drop_caches",
    "format_table",
    "generate_images",
    "machine_info",
    "main",
    "median",
    "plot_results",
    "ratio",
    "reference_memory",
    "render_markdown",
    "seed_style_convert",
    "steady_rate",
    "synthetic_jpeg",
    "write_results",
]

GEN_VERSION = 2  # bump when synthetic_jpeg changes, so cached image sets are regenerated
DEFAULT_IMAGES = 3000
DEFAULT_REPEATS = 3
DEFAULT_CLASSES = 10
DEFAULT_WIDTH, DEFAULT_HEIGHT = 500, 375
SIZE_PER_RECORD = (
    16 * 1024 * 1024
)  # the seed converter's example value (--size_per_record=16777216)
BATCH_SIZE = 32
IMAGE_SIZE = 224
OPEN_DELAY_S = 0.010
MB = 1e6

# Targets of issue 6: (figure id, operator, threshold).
TARGETS: dict[str, tuple[str, float]] = {
    "convert_steady_warm": (">=", 0.5),
    "convert_steady_cold": (">=", 0.5),
    "convert_whole_run": (">=", 3.0),
    "pipeline_vs_ceiling": (">=", 0.9),
    "pipeline_vs_per_file_slow": (">=", 5.0),
    "pipeline_vs_generator": (">=", 3.0),
    "pipeline_memory": ("<=", 2.0),
    "input_wait_share": ("<", 0.05),
}


# ---------------------------------------------------------------------------
# Small statistics and formatting helpers
# ---------------------------------------------------------------------------


def median(values: Iterable[float | None]) -> float:
    """Median of the finite values (``nan`` when there are none).

    Args:
      values: samples; ``None`` and ``nan`` are left out (a failed repeat).

    Returns:
      The median, or ``nan``.
    """
    finite = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return statistics.median(finite) if finite else float("nan")


def ratio(measured: float, baseline: float) -> float:
    """``measured / baseline``, or ``nan`` when either is missing or the baseline is 0."""
    if measured is None or baseline is None:
        return float("nan")
    if not (math.isfinite(measured) and math.isfinite(baseline)) or baseline == 0:
        return float("nan")
    return measured / baseline


def check_target(value: float, op: str, threshold: float) -> bool | None:
    """Whether ``value op threshold`` holds; ``None`` when the value is missing.

    Args:
      value: the ratio or share measured.
      op: one of ``>=``, ``>``, ``<=``, ``<``.
      threshold: the target.

    Returns:
      True / False, or None for ``nan``.
    """
    if value is None or not math.isfinite(value):
        return None
    ops: dict[str, Callable[[float, float], bool]] = {
        ">=": lambda a, b: a >= b,
        ">": lambda a, b: a > b,
        "<=": lambda a, b: a <= b,
        "<": lambda a, b: a < b,
    }
    if op not in ops:
        raise ValueError(f"unknown target operator {op!r}; use one of {sorted(ops)}")
    return ops[op](value, threshold)


def steady_rate(
    big_images: int, big_seconds: float, small_images: int, small_seconds: float
) -> float:
    """Steady-state rate from two runs that differ only in size: ``dN / dT``.

    Fixed costs (start-up, imports, writing the manifest) are in both runs and
    cancel out.

    Args:
      big_images, big_seconds: the larger run.
      small_images, small_seconds: the smaller run.

    Returns:
      Images per second, or ``nan`` when the difference is not positive (noise
      larger than the signal).
    """
    dn, dt = big_images - small_images, big_seconds - small_seconds
    if dn <= 0 or dt <= 0:
        return float("nan")
    return dn / dt


def _fmt_rate(images_per_s: float, mb_per_s: float | None = None) -> str:
    if images_per_s is None or not math.isfinite(images_per_s):
        return "n/a"
    text = f"{images_per_s:,.0f} img/s"
    if mb_per_s is not None and math.isfinite(mb_per_s):
        text += f" ({mb_per_s:,.0f} MB/s)"
    return text


def _fmt_ratio(value: float) -> str:
    return f"{value:.2f}x" if value is not None and math.isfinite(value) else "n/a"


# ---------------------------------------------------------------------------
# Results: measurements and figures
# ---------------------------------------------------------------------------


@dataclass
class Measurement:
    """Repeated samples of one quantity (images/s, seconds, bytes, share).

    Attributes:
      name: identifier, e.g. ``"convert_w2_full"``.
      unit: ``"img/s"``, ``"s"``, ``"MB"``, ``"share"``...
      samples: one value per repeat (``nan`` for a failed repeat).
      bytes_per_image: mean bytes per image, to report MB/s next to img/s.
      extra: anything else worth keeping (CPU ms per image, errors...).
    """

    name: str
    unit: str
    samples: list[float] = field(default_factory=list)
    bytes_per_image: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return median(self.samples)

    @property
    def mb_per_s(self) -> float | None:
        if self.unit != "img/s" or not self.bytes_per_image:
            return None
        return self.median * self.bytes_per_image / MB

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["median"] = self.median
        out["mb_per_s"] = self.mb_per_s
        return out


@dataclass
class Figure:
    """One row of the table: a figure, its baseline, the ratio and the target.

    Attributes:
      id: key into :data:`TARGETS`.
      figure: what is measured.
      baseline_name: what it is compared with (``"--"`` for none).
      measured: median of the figure.
      baseline: median of the baseline (``nan`` for none).
      unit: unit of ``measured`` / ``baseline``.
      value: the ratio (or the share, for input wait) compared with the target.
      op, threshold: the target.
      met: True / False / None (not measured).
      note: how it was taken, or why it missed.
      samples: per-repeat values of the ratio (for the JSON).
      mb_per_s / baseline_mb_per_s: bytes per second next to images per second.
    """

    id: str
    figure: str
    baseline_name: str
    measured: float
    baseline: float
    unit: str
    value: float
    op: str
    threshold: float
    met: bool | None
    note: str = ""
    samples: list[float] = field(default_factory=list)
    mb_per_s: float | None = None
    baseline_mb_per_s: float | None = None

    @property
    def target(self) -> str:
        if self.id == "input_wait_share":
            return f"{self.op} {self.threshold:.0%}"
        return f"{self.op} {self.threshold:g}x"


def make_figure(
    fig_id: str,
    figure: str,
    baseline_name: str,
    measured: Measurement | None,
    baseline: Measurement | None,
    note: str = "",
    value: float | None = None,
) -> Figure:
    """Build a :class:`Figure` from two measurements (ratio of medians, per-repeat ratios).

    Args:
      fig_id: key into :data:`TARGETS`.
      figure, baseline_name: labels.
      measured, baseline: the measurements (``None`` when not taken).
      note: free text.
      value: override of the compared value (e.g. a share with no baseline).

    Returns:
      The figure, with ``met`` decided against the target.
    """
    op, threshold = TARGETS[fig_id]
    m = measured.median if measured else float("nan")
    b = baseline.median if baseline else float("nan")
    per_repeat: list[float] = []
    if measured and baseline:
        per_repeat = [ratio(x, y) for x, y in zip(measured.samples, baseline.samples, strict=False)]
    if value is None:
        value = ratio(m, b)
    return Figure(
        id=fig_id,
        figure=figure,
        baseline_name=baseline_name,
        measured=m,
        baseline=b,
        unit=measured.unit if measured else "",
        value=value,
        op=op,
        threshold=threshold,
        met=check_target(value, op, threshold),
        note=note,
        samples=per_repeat,
        mb_per_s=measured.mb_per_s if measured else None,
        baseline_mb_per_s=baseline.mb_per_s if baseline else None,
    )


def _fmt_value(value: float, unit: str, mb_per_s: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "--"
    if unit == "img/s":
        return _fmt_rate(value, mb_per_s)
    if unit == "s":
        return f"{value:.2f} s"
    if unit == "MB":
        return f"{value:,.0f} MB"
    if unit == "share":
        return f"{value:.1%}"
    return f"{value:g} {unit}".strip()


def table_rows(figures: Sequence[Figure]) -> list[list[str]]:
    """The table as strings: figure, baseline, measured, ratio, target, met?."""
    rows = []
    for f in figures:
        baseline = f.baseline_name
        if math.isfinite(f.baseline):
            baseline += ": " + _fmt_value(f.baseline, f.unit, f.baseline_mb_per_s)
        shown = f"{f.value:.1%}" if f.id == "input_wait_share" else _fmt_ratio(f.value)
        met = {True: "yes", False: "NO", None: "n/a"}[f.met]
        rows.append(
            [f.figure, baseline, _fmt_value(f.measured, f.unit, f.mb_per_s), shown, f.target, met]
        )
    return rows


TABLE_HEADER = ["figure", "baseline (same run)", "measured", "ratio", "target", "met?"]


def format_table(figures: Sequence[Figure], markdown: bool = False) -> str:
    """Render the figures as a plain-text (or Markdown) table.

    Args:
      figures: the rows.
      markdown: a GitHub Markdown table instead of aligned text.

    Returns:
      The table.
    """
    rows = table_rows(figures)
    if markdown:
        lines = ["| " + " | ".join(TABLE_HEADER) + " |", "|" + "---|" * len(TABLE_HEADER)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in [TABLE_HEADER, *rows]) for i in range(len(TABLE_HEADER))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    out = [line(TABLE_HEADER), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    return "\n".join(out)


def _jsonable(value: Any) -> Any:
    """NaN/inf -> None, dataclasses -> dicts, recursively (strict JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Measurement):
        return _jsonable(value.to_json())
    if isinstance(value, Figure):
        out = asdict(value)
        out["target"] = value.target
        return _jsonable(out)
    return value


def write_results(results: dict[str, Any], output: str | os.PathLike) -> str:
    """Write ``results.json`` (strict JSON: NaN becomes null) into ``output``.

    Args:
      results: the results dict (figures, measurements, machine...).
      output: the output folder (created).

    Returns:
      The path written.
    """
    os.makedirs(output, exist_ok=True)
    path = os.path.join(os.fspath(output), "results.json")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(_jsonable(results), f, indent=2, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)
    return path


# ---------------------------------------------------------------------------
# Machine description and page cache
# ---------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS / Windows
        return max(1, os.cpu_count() or 1)


def machine_info(tf_version: str | None = None) -> dict[str, Any]:
    """Cores, CPU model, RAM, OS, Python / TensorFlow versions and load average."""
    info: dict[str, Any] = {
        "cores": usable_cores(),
        "cpu_model": _cpu_model(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    try:
        import psutil

        info["ram_gb"] = round(psutil.virtual_memory().total / 2**30, 1)
    except Exception:  # pragma: no cover - psutil is a dependency
        info["ram_gb"] = None
    with contextlib.suppress(OSError):
        info["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    if tf_version:
        info["tensorflow"] = tf_version
    return info


def _meminfo_cached_mb() -> float | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("Cached:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def drop_caches() -> bool:
    """``sync`` and drop the page cache (needs root on Linux); True when it worked."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w", encoding="ascii") as f:
            f.write("3\n")
    except OSError:
        return False
    return True


# ---------------------------------------------------------------------------
# The synthetic image set
# ---------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------
# Baselines: plain copy, seed-000-style converter
# ---------------------------------------------------------------------------


def copy_per_class(
    dataset_path: str | os.PathLike, output_path: str | os.PathLike, fsync: bool = False
) -> tuple[int, int]:
    """The I/O limit: append every image's bytes to one file per class, in plain Python.

    Args:
      dataset_path: ImageNet-layout folder.
      output_path: folder for ``<class>.bin`` files (created).
      fsync: fsync each class file (what a durable writer pays).

    Returns:
      ``(images, bytes)`` copied.
    """
    dataset, output = os.fspath(dataset_path), os.fspath(output_path)
    os.makedirs(output, exist_ok=True)
    images = total = 0
    for cls in sorted(os.listdir(dataset)):
        folder = os.path.join(dataset, cls)
        if cls.startswith(".") or not os.path.isdir(folder):
            continue
        with open(os.path.join(output, cls + ".bin"), "wb") as out:
            for name in sorted(os.listdir(folder)):
                with open(os.path.join(folder, name), "rb") as f:
                    data = f.read()
                out.write(data)
                images += 1
                total += len(data)
            if fsync:
                out.flush()
                os.fsync(out.fileno())
    return images, total


def seed_style_convert(
    dataset_path: str | os.PathLike,
    output_path: str | os.PathLike,
    size_per_record: int = SIZE_PER_RECORD,
) -> int:
    """The seed-000 way, single-threaded: ``tf.io.read_file`` per image, one writer at a time.

    Class folders in listing order get labels 0..N-1; each image becomes an
    Example with its file name, label and bytes; a new ``out_K.tfrecord`` is
    started once the image bytes written pass ``size_per_record``. The
    baseline the converter's whole-run figure is compared with.

    Args:
      dataset_path: ImageNet-layout folder.
      output_path: folder for ``out_K.tfrecord`` (created).
      size_per_record: image bytes per output file.

    Returns:
      The number of records written.
    """
    import tensorflow as tf

    dataset, output = os.fspath(dataset_path), os.fspath(output_path)
    os.makedirs(output, exist_ok=True)
    shard, in_shard, records = 0, 0, 0
    writer = tf.io.TFRecordWriter(os.path.join(output, f"out_{shard}.tfrecord"))
    for label, category in enumerate(sorted(os.listdir(dataset))):
        folder = os.path.join(dataset, category)
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            contents = tf.io.read_file(path)
            in_shard += os.path.getsize(path)
            feature = {
                "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[name.encode()])),
                "category": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                "data": tf.train.Feature(bytes_list=tf.train.BytesList(value=[contents.numpy()])),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
            records += 1
            if in_shard >= size_per_record:
                writer.close()
                shard, in_shard = shard + 1, 0
                writer = tf.io.TFRecordWriter(os.path.join(output, f"out_{shard}.tfrecord"))
    writer.close()
    return records


# ---------------------------------------------------------------------------
# Subprocess helpers (the converter CLI, memory and training probes)
# ---------------------------------------------------------------------------


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env.setdefault("PYTHONHASHSEED", "0")
    env.setdefault("MPLBACKEND", "Agg")
    return env


def _children_cpu() -> float:
    """User + system CPU seconds of finished child processes (and their waited-for children)."""
    try:
        import resource

        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    except (ImportError, OSError):  # pragma: no cover - not on Linux / macOS
        return float("nan")
    return usage.ru_utime + usage.ru_stime


def _run(cmd: Sequence[str], timeout: float = 600) -> tuple[float, str, float]:
    """Run a command; return (wall seconds, stdout, CPU seconds of the whole process tree).

    The CPU time (worker processes included) does not depend on how busy the
    machine is, unlike the wall time. Raises RuntimeError with stderr on failure.
    """
    cpu0 = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.run(
        list(cmd), capture_output=True, text=True, env=_child_env(), timeout=timeout, check=False
    )
    seconds = time.perf_counter() - started
    cpu = _children_cpu() - cpu0
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"{' '.join(cmd[:4])} ... exited {proc.returncode}: " + " | ".join(tail))
    return seconds, proc.stdout, cpu


def run_converter(dataset: str, output: str, workers: int) -> tuple[float, dict[str, Any], float]:
    """Time ``python -m helpers.convert`` (the CLI, start-up included) into a fresh folder.

    Returns:
      ``(wall seconds, manifest, CPU seconds of the process and its workers)``.
    """
    shutil.rmtree(output, ignore_errors=True)
    os.sync()
    cmd = [
        sys.executable,
        "-m",
        "helpers.convert",
        "--dataset-path",
        dataset,
        "--output-path",
        output,
        "--size-per-record",
        str(SIZE_PER_RECORD),
        "--workers",
        str(workers),
        "--quiet",
    ]
    seconds, _, cpu = _run(cmd)
    with open(os.path.join(output, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    return seconds, manifest, cpu


def run_seed_converter(dataset: str, output: str) -> tuple[float, int, float]:
    """Time the seed-style converter as its own process (TensorFlow import included).

    Returns:
      ``(wall seconds, records written, CPU seconds)``.
    """
    shutil.rmtree(output, ignore_errors=True)
    os.sync()
    cmd = [sys.executable, "-m", "helpers.bench", "_seed-convert", dataset, output]
    seconds, out, cpu = _run(cmd)
    return seconds, int(json.loads(out.strip().splitlines()[-1])["records"]), cpu


def _json_child(cmd: Sequence[str], timeout: float = 600) -> dict[str, Any]:
    _, out, _ = _run(cmd, timeout=timeout)
    return json.loads(out.strip().splitlines()[-1])


def summarize_profile(
    lines: Iterable[str], top: int = 15, idle: Sequence[str] = ("Condition.wait", "TMonitor")
) -> dict[str, list[tuple[str, float]]]:
    """Inclusive and self shares per function from py-spy's ``--format raw`` output.

    Each line is ``frame;frame;...;frame COUNT`` with frames like
    ``func (path/file.py:123)``. Stacks through an idle frame (tqdm's monitor
    thread waiting) are left out, so shares are of busy samples.

    Args:
      lines: the raw file's lines.
      top: rows to keep.
      idle: substrings marking idle stacks.

    Returns:
      ``{"inclusive": [(function, share)], "self": [...], "samples": [(\"busy\", n)]}``.
    """

    def key(frame: str) -> str:
        if " (" not in frame:
            return frame.strip()
        name, rest = frame.split(" (", 1)
        return f"{name} ({os.path.basename(rest.split(':')[0].rstrip(')'))})"

    inclusive: dict[str, int] = {}
    own: dict[str, int] = {}
    total = 0
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip() or " " not in line:
            continue
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        frames = [f for f in stack.split(";") if f]
        if not frames or any(mark in f for f in frames for mark in idle):
            continue
        n = int(count)
        total += n
        for k in {key(f) for f in frames}:
            inclusive[k] = inclusive.get(k, 0) + n
        own[key(frames[-1])] = own.get(key(frames[-1]), 0) + n
    if total == 0:
        return {"inclusive": [], "self": [], "samples": [("busy", 0)]}

    def shares(counts: dict[str, int]) -> list[tuple[str, float]]:
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        return [(k, v / total) for k, v in ranked]

    return {"inclusive": shares(inclusive), "self": shares(own), "samples": [("busy", total)]}


def _py_spy() -> str | None:
    local = os.path.join(os.path.dirname(sys.executable), "py-spy")
    return local if os.access(local, os.X_OK) else shutil.which("py-spy")


def profile_converter(dataset: str, output: str, raw_path: str) -> dict[str, Any] | None:
    """Run the converter CLI (1 worker, in-process) under py-spy; ``None`` without py-spy.

    py-spy is a development tool, not a dependency: ``pip install py-spy``.
    """
    pyspy = _py_spy()
    if pyspy is None:
        return None
    shutil.rmtree(output, ignore_errors=True)
    cmd = [pyspy, "record", "-r", "250", "-f", "raw", "-o", raw_path, "--", sys.executable]
    cmd += ["-m", "helpers.convert", "--dataset-path", dataset, "--output-path", output]
    cmd += ["--size-per-record", str(SIZE_PER_RECORD), "--workers", "1", "--quiet"]
    seconds, _, _ = _run(cmd)
    shutil.rmtree(output, ignore_errors=True)
    with open(raw_path, encoding="utf-8", errors="replace") as f:
        summary = summarize_profile(f)
    return {"seconds": seconds, "raw": raw_path, **summary}


# ---------------------------------------------------------------------------
# Memory reference and probe
# ---------------------------------------------------------------------------


def reference_memory(
    record_bytes: float,
    *,
    shuffle_buffer: int = 1000,
    batch_size: int = BATCH_SIZE,
    image_size: int = IMAGE_SIZE,
    batches_in_flight: int = 3,
    images_in_flight: int = 2,
) -> dict[str, float]:
    """What the default training pipeline needs to hold, computed (issue 6's yardstick).

    One shuffle buffer of *serialized* records plus the decoded float32 batches
    in flight (``batches_in_flight``: prefetched ones plus the one being
    assembled) and the images being decoded by the parallel map.

    Args:
      record_bytes: mean serialized record size in bytes.
      shuffle_buffer: records in the shuffle buffer.
      batch_size, image_size: batch shape.
      batches_in_flight: decoded batches held at once.
      images_in_flight: parallel map calls (one decoded image each).

    Returns:
      ``shuffle_buffer_mb``, ``batches_mb``, ``decode_mb``, ``total_mb`` and the
      size of one decoded image (``image_mb``).
    """
    image = image_size * image_size * 3 * 4
    parts = {
        "shuffle_buffer_mb": shuffle_buffer * record_bytes / MB,
        "batches_mb": batches_in_flight * batch_size * image / MB,
        "decode_mb": images_in_flight * image / MB,
    }
    return {**parts, "total_mb": sum(parts.values()), "image_mb": image / MB}


def _rss_sampler(interval: float = 0.005) -> tuple[Callable[[], int], threading.Event]:
    import psutil

    proc = psutil.Process()
    peak = [proc.memory_info().rss]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            with contextlib.suppress(Exception):
                peak[0] = max(peak[0], proc.memory_info().rss)
            stop.wait(interval)

    threading.Thread(target=sample, daemon=True).start()
    return (lambda: peak[0]), stop


def _vm_hwm() -> int | None:
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    return None


def _reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5\n")
    except OSError:
        return False
    return True


def _memory_probe(shards: str, epochs: int = 1) -> dict[str, Any]:
    """(subprocess) Peak RSS growth while the default training pipeline runs."""
    import gc

    import psutil
    import tensorflow as tf

    from helpers import pipeline

    proc = psutil.Process()
    # Warm TF up with the same ops (kernels, thread pools), then take the base line.
    for _ in pipeline.make_dataset(shards, batch_size=2, training=False, prefetch=None).take(2):
        pass
    dataset = pipeline.make_dataset(shards, batch_size=BATCH_SIZE, image_size=IMAGE_SIZE)
    gc.collect()
    base = proc.memory_info().rss
    hwm_reset = _reset_hwm()
    peak_fn, stop = _rss_sampler()
    images = 0
    started = time.perf_counter()
    for _ in range(epochs):
        for x, _y in dataset:
            images += int(x.shape[0])
    seconds = time.perf_counter() - started
    stop.set()
    sampled = peak_fn()
    hwm = _vm_hwm() if hwm_reset else None
    peak = max(sampled, hwm or 0)
    return {
        "base_rss_mb": base / MB,
        "peak_rss_mb": peak / MB,
        "sampled_peak_mb": sampled / MB,
        "vm_hwm_mb": None if hwm is None else hwm / MB,
        "growth_mb": (peak - base) / MB,
        "images": images,
        "seconds": seconds,
        "tensorflow": tf.__version__,
    }


def _train_probe(
    shards: str, steps: int, windows: int, alpha: float, image_size: int, warmup: int
) -> dict[str, Any]:
    """(subprocess) Input-wait share of lesson 06's MobileNet over ``windows`` windows."""
    import tensorflow as tf

    from helpers import pipeline, train

    tf.keras.utils.set_random_seed(0)
    manifest = pipeline.read_manifest(shards)
    num_classes = int(manifest["num_classes"])
    model = train.build_mobilenet(num_classes, image_size=image_size, alpha=alpha)
    dataset = pipeline.make_dataset(
        shards, batch_size=BATCH_SIZE, image_size=image_size, training=True, repeat=True, seed=0
    )
    iterator = iter(dataset)
    results = []
    for w in range(windows):
        results.append(
            train.measure_input_wait(model, iterator, steps=steps, warmup=warmup if w == 0 else 0)
        )
    return {
        "shares": [r["input_wait_share"] for r in results],
        "mean_step_ms": [r["mean_step_ms"] for r in results],
        "mean_wait_ms": [r["mean_wait_ms"] for r in results],
        "images_per_s": [r["images_per_s"] for r in results],
        "verdicts": [r["verdict"] for r in results],
        "alpha": alpha,
        "image_size": image_size,
        "steps_per_window": steps,
        "device": train.choose_device().name,
    }


# ---------------------------------------------------------------------------
# The benchmark run
# ---------------------------------------------------------------------------


@dataclass
class Config:
    """What one run measures, and how much."""

    images: int = DEFAULT_IMAGES
    repeats: int = DEFAULT_REPEATS
    classes: int = DEFAULT_CLASSES
    workdir: str = ""
    output: str = "bench-results"
    cold: bool = True
    train_steps: int = 8
    train_windows: int = 3
    train_alpha: float = 0.25
    train_size: int = IMAGE_SIZE
    pipeline_steps: int = 25
    subset_fraction: float = 0.2
    quick: bool = False
    profile: bool = False


class Bench:
    """Runs every measurement; keeps measurements, figures and notes."""

    def __init__(self, config: Config, log: Callable[[str], None] = print):
        self.config = config
        self.log = log
        self.m: dict[str, Measurement] = {}
        self.notes: dict[str, str] = {}
        self.errors: dict[str, str] = {}
        self.extra: dict[str, Any] = {}
        self.cores = usable_cores()

    # -- bookkeeping -------------------------------------------------------

    def measurement(
        self, name: str, unit: str, bytes_per_image: float | None = None
    ) -> Measurement:
        if name not in self.m:
            self.m[name] = Measurement(name, unit, bytes_per_image=bytes_per_image)
        elif bytes_per_image and not self.m[name].bytes_per_image:
            self.m[name].bytes_per_image = bytes_per_image
        return self.m[name]

    def add(self, name: str, unit: str, value: float, bytes_per_image: float | None = None) -> None:
        self.measurement(name, unit, bytes_per_image).samples.append(float(value))

    def add_cpu(self, name: str, cpu_seconds: float, images: int) -> None:
        """Record CPU milliseconds per image (all processes and threads) next to a rate."""
        value = 1e3 * cpu_seconds / images if images > 0 else float("nan")
        self.measurement(name, "img/s").extra.setdefault("cpu_ms_per_image", []).append(value)

    def guarded(self, section: str, fn: Callable[[], None]) -> None:
        started = time.perf_counter()
        load = _loadavg()
        try:
            fn()
        except Exception as err:  # one failing section must not lose the others
            self.errors[section] = f"{type(err).__name__}: {err}"
            self.log(f"  ! {section} failed: {self.errors[section]}")
        self.extra.setdefault("sections", {})[section] = {
            "seconds": round(time.perf_counter() - started, 1),
            "loadavg_before": load,
            "loadavg_after": _loadavg(),
        }

    # -- data --------------------------------------------------------------

    def prepare(self) -> None:
        c = self.config
        tag = f"n{c.images}-c{c.classes}-{DEFAULT_WIDTH}x{DEFAULT_HEIGHT}-v{GEN_VERSION}"
        self.images_dir = os.path.join(c.workdir, f"images-{tag}")
        stamp = generate_images(self.images_dir, c.images, c.classes, log=self.log)
        self.extra["generation"] = stamp
        self.paths, self.labels, self.classes = list_dataset(self.images_dir)
        self.total_bytes = dataset_bytes(self.paths)
        self.bpi = self.total_bytes / len(self.paths)
        # The subset must start as many converter workers as the full set (one per 64 files),
        # or the difference of the two runs would not cancel the pool's start-up.
        n_small = min(c.images // 2, max(int(c.images * c.subset_fraction), 65 * self.cores))
        n_small = max(c.classes, n_small)
        self.subset_dir = os.path.join(c.workdir, f"subset-{tag}-{n_small}")
        self.subset_count = link_subset(self.images_dir, self.subset_dir, n_small)
        self.out_dir = os.path.join(c.workdir, "out")
        self.shards_dir = os.path.join(c.workdir, f"shards-{tag}")
        shutil.rmtree(self.shards_dir, ignore_errors=True)  # written by this run's converter
        self.log(
            f"image set: {len(self.paths)} JPEGs, {self.total_bytes / MB:.0f} MB "
            f"({self.bpi / 1e3:.0f} KB mean) in {len(self.classes)} classes at {self.images_dir}"
            f"{' (cached)' if stamp.get('reused') else ''}; subset {self.subset_count} images"
        )

    # -- converter ---------------------------------------------------------

    def bench_converter(self) -> None:
        c = self.config
        n_big, n_small = len(self.paths), self.subset_count
        warm_cache(self.paths)
        workers_list = list(range(1, self.cores + 1))
        for r in range(c.repeats):
            self.log(f"converter, warm, repeat {r + 1}/{c.repeats}")
            t0, cpu0 = time.perf_counter(), time.process_time()
            images, nbytes = copy_per_class(self.images_dir, self.out_dir)
            self.add("copy_warm", "img/s", images / (time.perf_counter() - t0), self.bpi)
            self.add_cpu("copy_warm", time.process_time() - cpu0, images)
            shutil.rmtree(self.out_dir, ignore_errors=True)
            os.sync()
            t0 = time.perf_counter()
            copy_per_class(self.images_dir, self.out_dir, fsync=True)
            self.add("copy_fsync_warm", "img/s", images / (time.perf_counter() - t0), self.bpi)
            for w in reversed(workers_list) if r % 2 else workers_list:
                big, manifest, cpu_big = run_converter(self.images_dir, self.out_dir, w)
                if manifest["num_records"] != n_big:
                    raise RuntimeError(f"converter wrote {manifest['num_records']} of {n_big}")
                if w == self.cores:
                    self.extra["converter_manifest"] = {
                        "num_shards": manifest["num_shards"],
                        "total_bytes": manifest["total_bytes"],
                        "converted": len(manifest["converted"]),
                        "skipped": len(manifest["skipped"]),
                    }
                small, _, cpu_small = run_converter(self.subset_dir, self.out_dir, w)
                self.add(f"convert_w{w}_whole", "img/s", n_big / big, self.bpi)
                self.add_cpu(f"convert_w{w}_whole", cpu_big, n_big)
                self.add_cpu(f"convert_w{w}_steady", cpu_big - cpu_small, n_big - n_small)
                self.add(f"convert_w{w}_seconds", "s", big)
                self.add(f"convert_w{w}_small_seconds", "s", small)
                self.add(
                    f"convert_w{w}_steady",
                    "img/s",
                    steady_rate(n_big, big, n_small, small),
                    self.bpi,
                )
            seconds, records, cpu = run_seed_converter(self.images_dir, self.out_dir)
            if records != n_big:
                raise RuntimeError(f"seed-style converter wrote {records} of {n_big}")
            self.add("seed_whole", "img/s", n_big / seconds, self.bpi)
            self.add_cpu("seed_whole", cpu, n_big)
            self.add("seed_seconds", "s", seconds)
        shutil.rmtree(self.out_dir, ignore_errors=True)
        self.check_no_decode()
        if c.profile:
            raw = os.path.join(os.path.abspath(c.output), "profile-convert.txt")
            os.makedirs(c.output, exist_ok=True)
            prof = profile_converter(self.images_dir, self.out_dir, raw)
            if prof is None:
                self.notes["profile"] = "--profile: py-spy not found (pip install py-spy)"
            else:
                self.extra["profile_convert"] = prof

    def bench_converter_cold(self) -> None:
        c = self.config
        n_big, n_small = len(self.paths), self.subset_count
        before = _meminfo_cached_mb()
        if not drop_caches():
            self.notes["cold"] = (
                "cold page cache not measured: writing /proc/sys/vm/drop_caches was refused "
                "(needs root)"
            )
            self.log("  " + self.notes["cold"])
            return
        after = _meminfo_cached_mb()
        self.extra["drop_caches"] = {"cached_mb_before": before, "cached_mb_after": after}
        for r in range(c.repeats):
            self.log(f"converter, cold page cache, repeat {r + 1}/{c.repeats}")
            drop_caches()
            t0 = time.perf_counter()
            images, _ = copy_per_class(self.images_dir, self.out_dir)
            self.add("copy_cold", "img/s", images / (time.perf_counter() - t0), self.bpi)
            shutil.rmtree(self.out_dir, ignore_errors=True)
            drop_caches()
            big, _, _ = run_converter(self.images_dir, self.out_dir, self.cores)
            drop_caches()
            small, _, _ = run_converter(self.subset_dir, self.out_dir, self.cores)
            self.add("convert_cold_seconds", "s", big)
            self.add(
                "convert_steady_cold", "img/s", steady_rate(n_big, big, n_small, small), self.bpi
            )
        shutil.rmtree(self.out_dir, ignore_errors=True)
        warm_cache(self.paths)

    def check_no_decode(self) -> None:
        """The converter stores JPEG bytes untouched: compare a sample of records with the files."""
        from helpers.features import IMAGE_KEYS, example_to_dict
        from helpers.records import read_records

        if not os.path.isfile(os.path.join(self.shards_dir, "manifest.json")):
            run_converter(self.images_dir, self.shards_dir, self.cores)
        shard = sorted(n for n in os.listdir(self.shards_dir) if n.endswith(".tfrecord"))[0]
        checked = same = 0
        for raw in read_records(os.path.join(self.shards_dir, shard)):
            record = example_to_dict(raw)
            rel = record[IMAGE_KEYS["filename"]][0].decode()
            with open(os.path.join(self.images_dir, rel), "rb") as f:
                same += f.read() == record[IMAGE_KEYS["encoded"]][0]
            checked += 1
            if checked >= 50:
                break
        self.extra["bytes_identical"] = {"checked": checked, "identical": same}

    # -- pipeline ----------------------------------------------------------

    def bench_pipeline(self) -> None:
        import tensorflow as tf

        from helpers import pipeline

        c = self.config
        self.extra["tensorflow"] = tf.__version__
        if not os.path.isfile(os.path.join(self.shards_dir, "manifest.json")):
            run_converter(self.images_dir, self.shards_dir, self.cores)
        with open(os.path.join(self.shards_dir, "manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
        self.record_bytes = manifest["total_bytes"] / manifest["num_records"]
        num_classes = len(self.classes)
        encoded_list = []
        for path in self.paths:
            with open(path, "rb") as f:
                encoded_list.append(f.read())
        # One tensor, built once: from_tensor_slices on a Python list would copy it per build.
        encoded = tf.constant(encoded_list)
        labels = tf.constant(self.labels, tf.int64)
        del encoded_list
        steps = c.pipeline_steps
        slow = pipeline.slow_open(OPEN_DELAY_S, 0.0)
        self.extra["slow_storage"] = str(slow)

        def ceiling() -> tf.data.Dataset:
            def prep(data: tf.Tensor, label: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
                image = pipeline.preprocess_image(data, IMAGE_SIZE)
                return image, tf.one_hot(label, num_classes)

            ds = tf.data.Dataset.from_tensor_slices((encoded, labels))
            ds = ds.map(prep, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
            return ds.batch(BATCH_SIZE, drop_remainder=True).prefetch(tf.data.AUTOTUNE)

        def tfrecord(**kwargs: Any) -> tf.data.Dataset:
            opts = {"batch_size": BATCH_SIZE, "image_size": IMAGE_SIZE, "training": False}
            return pipeline.make_dataset(self.shards_dir, **{**opts, **kwargs})

        def threads(n: int) -> Callable[[], tf.data.Dataset]:
            def build() -> tf.data.Dataset:
                options = tf.data.Options()
                options.threading.private_threadpool_size = n
                return tfrecord().with_options(options)

            return build

        def per_file_slow() -> tf.data.Dataset:
            return pipeline.per_file_dataset(
                self.paths,
                self.labels,
                BATCH_SIZE,
                IMAGE_SIZE,
                num_classes=num_classes,
                storage=slow,
            )

        def generator() -> tf.data.Dataset:
            return pipeline.generator_dataset(
                self.paths, self.labels, BATCH_SIZE, IMAGE_SIZE, num_classes=num_classes
            )

        # The slow baselines read the first batches of the same images (their rate is steady).
        sub_batches = len(self.paths) // BATCH_SIZE
        runs: list[tuple[str, Callable[[], tf.data.Dataset], int | None]] = [
            ("pipe_ceiling", ceiling, steps),
            ("pipe_tfrecord", tfrecord, steps),
            ("pipe_tfrecord_slow", lambda: tfrecord(storage=slow), steps),
            ("pipe_per_file_slow", per_file_slow, max(1, min(12, sub_batches - 1))),
            ("pipe_generator", generator, max(1, min(10, sub_batches - 1))),
        ]
        runs += [(f"pipe_threads{n}", threads(n), steps) for n in range(1, self.cores)]
        # One untimed pass of each kind first: traces functions, warms kernels.
        for _name, build, _steps in runs[:2]:
            for _ in build().take(2):
                pass
        for r in range(c.repeats):
            self.log(f"pipeline, repeat {r + 1}/{c.repeats}")
            order = runs if r % 2 == 0 else list(reversed(runs))
            for name, build, n_steps in order:
                cpu0 = time.process_time()
                result = pipeline.measure_throughput(build(), steps=n_steps, warmup=1)
                cpu = time.process_time() - cpu0
                images = result["images"] + BATCH_SIZE * result["warmup_batches"]
                self.add(name, "img/s", result["images_per_s"], self.bpi)
                self.add_cpu(name, cpu, int(images))
        self.m[f"pipe_threads{self.cores}"] = Measurement(
            f"pipe_threads{self.cores}",
            "img/s",
            list(self.m["pipe_tfrecord"].samples),
            self.bpi,
            {"same_as": "pipe_tfrecord"},
        )

    def bench_memory(self) -> None:
        c = self.config
        reps = 1 if c.quick else min(c.repeats, 2)
        for r in range(reps):
            self.log(f"pipeline memory (subprocess), run {r + 1}/{reps}")
            out = _json_child([sys.executable, "-m", "helpers.bench", "_memory", self.shards_dir])
            self.add("memory_growth", "MB", out["growth_mb"])
            self.measurement("memory_growth", "MB").extra.setdefault("runs", []).append(out)
        self.extra["memory_reference"] = reference_memory(
            self.record_bytes, images_in_flight=self.cores
        )

    def bench_train(self) -> None:
        c = self.config
        self.log(
            f"input wait: MobileNet alpha={c.train_alpha} {c.train_size}px, "
            f"{c.train_windows} x {c.train_steps} steps (subprocess)"
        )
        cmd = [
            sys.executable,
            "-m",
            "helpers.bench",
            "_train",
            self.shards_dir,
            str(c.train_steps),
            str(c.train_windows),
            str(c.train_alpha),
            str(c.train_size),
        ]
        out = _json_child(cmd, timeout=900)
        for share in out["shares"]:
            self.add("input_wait_share", "share", share)
        self.extra["train"] = out

    # -- figures -----------------------------------------------------------

    def figures(self) -> list[Figure]:
        m = self.m.get
        cores = self.cores
        out = [
            make_figure(
                "convert_steady_warm",
                f"converter steady state, {cores} workers, warm cache",
                "plain-Python copy, 1 file/class",
                m(f"convert_w{cores}_steady"),
                m("copy_warm"),
                "dN/dT between the full set and a subset; the copy does not fsync, the "
                "converter fsyncs every shard",
            ),
        ]
        if "convert_steady_cold" in self.m:
            out.append(
                make_figure(
                    "convert_steady_cold",
                    f"converter steady state, {cores} workers, cold cache",
                    "plain-Python copy, cold cache",
                    m("convert_steady_cold"),
                    m("copy_cold"),
                    "page cache dropped before every run",
                )
            )
        out += [
            make_figure(
                "convert_whole_run",
                f"converter whole run, {len(self.paths)} images, start-up included",
                "seed-000-style converter, 1 thread",
                m(f"convert_w{cores}_whole"),
                m("seed_whole"),
                "both run as their own process (CLI)",
            ),
            make_figure(
                "pipeline_vs_ceiling",
                "TFRecord pipeline (decode + resize 224, batch, prefetch)",
                "same decode + resize on in-memory bytes",
                m("pipe_tfrecord"),
                m("pipe_ceiling"),
            ),
            make_figure(
                "pipeline_vs_per_file_slow",
                f"TFRecord pipeline, {OPEN_DELAY_S * 1e3:g} ms per file open (simulated)",
                "one file per image, same simulated storage",
                m("pipe_tfrecord_slow"),
                m("pipe_per_file_slow"),
            ),
            make_figure(
                "pipeline_vs_generator",
                "TFRecord pipeline",
                "Python generator + PIL decode",
                m("pipe_tfrecord"),
                m("pipe_generator"),
            ),
        ]
        mem = m("memory_growth")
        ref = self.extra.get("memory_reference")
        if mem is not None and ref is not None:
            baseline = Measurement("memory_reference", "MB", [ref["total_mb"]])
            out.append(
                make_figure(
                    "pipeline_memory",
                    "pipeline peak memory, default knobs (RSS growth)",
                    "shuffle buffer of records + batches in flight",
                    mem,
                    baseline,
                )
            )
        share = m("input_wait_share")
        if share is not None:
            out.append(
                make_figure(
                    "input_wait_share",
                    "input-wait share, lesson 06 MobileNet training",
                    "--",
                    share,
                    None,
                    value=share.median,
                )
            )
        for f in out:
            if f.id in self.notes:
                f.note = (f.note + "; " if f.note else "") + self.notes[f.id]
        return out

    def sweep(self) -> dict[str, list[dict[str, Any]]]:
        convert, read = [], []
        for w in range(1, self.cores + 1):
            for kind, name, rows in (
                ("whole", f"convert_w{w}_whole", convert),
                ("read", f"pipe_threads{w}", read),
            ):
                meas = self.m.get(name)
                if meas is None:
                    continue
                row = {"workers": w, "images_per_s": meas.median, "mb_per_s": meas.mb_per_s}
                if kind == "whole":
                    steady = self.m.get(f"convert_w{w}_steady")
                    row["steady_images_per_s"] = steady.median if steady else None
                    row["steady_mb_per_s"] = steady.mb_per_s if steady else None
                rows.append(row)
        return {"convert": convert, "read": read}


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


# ---------------------------------------------------------------------------
# Chart and docs
# ---------------------------------------------------------------------------


SHORT_LABELS = {
    "convert_steady_warm": "converter steady state, warm  vs  plain copy",
    "convert_steady_cold": "converter steady state, cold  vs  plain copy",
    "convert_whole_run": "converter whole run  vs  seed-000 style",
    "pipeline_vs_ceiling": "TFRecord pipeline  vs  decode ceiling",
    "pipeline_vs_per_file_slow": "TFRecord  vs  per-file, 10 ms/open (simulated)",
    "pipeline_vs_generator": "TFRecord  vs  generator + PIL",
    "pipeline_memory": "peak memory  vs  computed buffers",
    "input_wait_share": "input-wait share, MobileNet training",
}


def target_score(value: float | None, op: str, threshold: float) -> float | None:
    """How far a value is from its target, as a factor: >= 1 means met.

    ``value / threshold`` for ``>=`` / ``>`` targets, ``threshold / value`` for
    ``<=`` / ``<`` ones (so that for every figure, bigger is better).
    """
    if value is None or not math.isfinite(value):
        return None
    if op.startswith(">"):
        return value / threshold
    return threshold / value if value > 0 else float("inf")


def plot_results(results: dict[str, Any], path: str | os.PathLike) -> str:
    """Draw the chart: every figure against its target, and the workers sweep.

    Args:
      results: the results dict (as written to JSON).
      path: the PNG to write.

    Returns:
      The path written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures = [f if isinstance(f, dict) else _jsonable(f) for f in results["figures"]]
    fig, axes = plt.subplots(1, 2, figsize=(14, 5.4), gridspec_kw={"width_ratios": [1.6, 1]})
    ax = axes[0]
    labels, scores, texts, colors = [], [], [], []
    for f in figures:
        value = f.get("value")
        score = target_score(value, f["op"], f["threshold"])
        labels.append(SHORT_LABELS.get(f["id"], f["figure"]))
        scores.append(min(score, 100.0) if score is not None else 0.0)
        if value is None:
            shown = "n/a"
        elif f["id"] == "input_wait_share":
            shown = f"{value:.1%}"
        else:
            shown = f"{value:.2f}x"
        texts.append(f"{shown}  (target {f['target']})")
        colors.append({True: "tab:green", False: "tab:red"}.get(f.get("met"), "tab:gray"))
    ys = list(range(len(labels)))[::-1]
    ax.barh(ys, scores, color=colors, height=0.6)
    ax.axvline(1.0, color="black", lw=1.5)
    for y, score, text in zip(ys, scores, texts, strict=True):
        ax.text(max(score, 1e-3) * 1.05, y, text, va="center", fontsize=8)
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xscale("log")
    finite = [s for s in scores if s > 0]
    ax.set_xlim(min([0.1, *finite]) * 0.8, max([10.0, *finite]) * 4)
    ax.set_xlabel("result / target  (right of the line = target met)")
    ax.set_title("Each figure against its target, baselines taken in the same run", fontsize=10)
    ax.grid(axis="x", alpha=0.3)

    ax = axes[1]
    sweep = results.get("sweep", {})
    series = (
        ("convert", "images_per_s", "mb_per_s", "converter, whole run", "o", "-"),
        ("convert", "steady_images_per_s", "steady_mb_per_s", "converter, steady state", "^", "--"),
        ("read", "images_per_s", "mb_per_s", "TFRecord read + decode + resize", "s", "-"),
    )
    for key, field_name, mb_name, label, marker, style in series:
        rows = [r for r in sweep.get(key) or [] if r.get(field_name)]
        if not rows:
            continue
        xs = [r["workers"] for r in rows]
        vals = [r[field_name] for r in rows]
        ax.plot(xs, vals, marker=marker, ls=style, label=label)
        for x, v, r in zip(xs, vals, rows, strict=True):
            if r.get(mb_name):
                ax.annotate(
                    f"{r[mb_name]:.0f} MB/s",
                    (x, v),
                    textcoords="offset points",
                    xytext=(5, 4),
                    fontsize=7,
                )
    cores = results.get("machine", {}).get("cores", 1) or 1
    ax.set_xticks(list(range(1, cores + 1)))
    ax.set_xlim(0.7, cores + 0.5)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("workers (converter processes / tf.data threads)")
    ax.set_ylabel("images / s")
    ax.set_title("Throughput by number of workers", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    machine = results.get("machine", {})
    config = results.get("config", {})
    fig.suptitle(
        f"helpers benchmarks: {config.get('images')} JPEGs, medians of {config.get('repeats')} "
        f"repeats; {machine.get('cores')} cores {machine.get('cpu_model', '')}, "
        f"TensorFlow {machine.get('tensorflow', '?')}",
        fontsize=10,
    )
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(os.fspath(path))), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return os.fspath(path)


def render_markdown(results: dict[str, Any], chart: str = "docs/bench.png") -> str:
    """The README section: command, machine, the table, the chart, the sweep and notes."""
    figures = [
        f
        if isinstance(f, Figure)
        else Figure(**{k: v for k, v in f.items() if k in Figure.__dataclass_fields__})
        for f in results["figures"]
    ]
    for f in figures:  # JSON null -> nan
        for name in ("measured", "baseline", "value"):
            if getattr(f, name) is None:
                setattr(f, name, float("nan"))
    machine = results.get("machine", {})
    config = results.get("config", {})
    lines = [
        "## Benchmarks",
        "",
        "`make bench` (`python -m helpers.bench --output bench-results`) generates "
        f"{config.get('images')} synthetic 500x375 JPEGs (~{results.get('dataset', {}).get('mean_kb', 0):.0f} KB "
        "each) outside the repository, measures every figure and its baseline in the same run "
        f"(median of {config.get('repeats')} repeats, interleaved"
        + (
            f"; this run used `--repeats {config.get('repeats')}`, the default is {DEFAULT_REPEATS}"
            if config.get("repeats") != DEFAULT_REPEATS
            else ""
        )
        + "), prints this table and writes `bench-results/results.json` and "
        "`bench-results/bench.png`.",
        "",
        f"Taken {results.get('created', '')[:16].replace('T', ' ')} UTC on {machine.get('cores')} cores of "
        f"{machine.get('cpu_model')}, {machine.get('ram_gb')} GB RAM, TensorFlow "
        f"{machine.get('tensorflow')}, Python {machine.get('python')}; whole run "
        f"{results.get('wall_seconds', 0) / 60:.1f} min.",
        "",
        format_table(figures, markdown=True),
        "",
        f"![benchmarks]({chart})",
        "",
    ]
    sweep = results.get("sweep", {})
    if sweep.get("convert") or sweep.get("read"):
        lines += [
            "| workers | converter, whole run | converter, steady state | TFRecord read + decode |",
            "|---|---|---|---|",
        ]
        read = {r["workers"]: r for r in sweep.get("read", [])}
        for row in sweep.get("convert", []):
            w = row["workers"]
            rd = read.get(w, {})
            lines.append(
                f"| {w} | {_fmt_rate(row.get('images_per_s') or float('nan'), row.get('mb_per_s'))} | "
                f"{_fmt_rate(row.get('steady_images_per_s') or float('nan'), row.get('steady_mb_per_s'))} | "
                f"{_fmt_rate(rd.get('images_per_s') or float('nan'), rd.get('mb_per_s'))} |"
            )
        lines.append("")
    notes = results.get("notes") or []
    if notes:
        lines += ["Notes:", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The CLI's argument parser (``python -m helpers.bench --help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m helpers.bench",
        description="Converter and pipeline benchmarks against same-run baselines (issue 6).",
    )
    parser.add_argument(
        "--output", default="bench-results", help="results folder (default: %(default)s)"
    )
    parser.add_argument(
        "--images",
        type=int,
        default=None,
        help=f"images in the synthetic set (default {DEFAULT_IMAGES}; --quick: 600)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help=f"repeats per figure, medians reported (default {DEFAULT_REPEATS}; --quick: 1)",
    )
    parser.add_argument(
        "--classes", type=int, default=DEFAULT_CLASSES, help="class folders (default: %(default)s)"
    )
    parser.add_argument(
        "--workdir",
        default=None,
        help="where the image set, subsets and shards live (default: "
        "$TMPDIR/tfrecord-course-bench); reused by later runs",
    )
    parser.add_argument(
        "--quick", action="store_true", help="600 images, 1 repeat, no cold cache: a smoke run"
    )
    parser.add_argument("--no-cold", action="store_true", help="skip the cold page-cache runs")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also profile one converter run with py-spy (if installed; a dev tool, not a "
        "dependency) into OUTPUT/profile-convert.txt",
    )
    parser.add_argument(
        "--train-steps",
        type=int,
        default=None,
        help="timed training steps per window, 3 windows (default 8; --quick: 4 x 1)",
    )
    parser.add_argument(
        "--update-docs",
        action="store_true",
        help="also write docs/bench.png and docs/benchmarks.md",
    )
    parser.add_argument("--docs-dir", default="docs", help=argparse.SUPPRESS)
    return parser


def _internal(argv: list[str]) -> int:
    """Hidden sub-commands run in child processes: _seed-convert, _memory, _train."""
    cmd, args = argv[0], argv[1:]
    if cmd == "_seed-convert":
        records = seed_style_convert(args[0], args[1])
        print(json.dumps({"records": records}))
    elif cmd == "_memory":
        print(json.dumps(_memory_probe(args[0])))
    elif cmd == "_train":
        shards, steps, windows, alpha, size = args[:5]
        print(
            json.dumps(_train_probe(shards, int(steps), int(windows), float(alpha), int(size), 3))
        )
    else:
        print(f"unknown internal command {cmd}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks; print the table; write results.json and bench.png."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].startswith("_"):
        return _internal(argv)
    args = build_parser().parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    config = Config(
        images=args.images or (600 if args.quick else DEFAULT_IMAGES),
        repeats=args.repeats or (1 if args.quick else DEFAULT_REPEATS),
        classes=args.classes,
        workdir=os.path.abspath(
            args.workdir or os.path.join(tempfile.gettempdir(), "tfrecord-course-bench")
        ),
        output=args.output,
        cold=not (args.no_cold or args.quick),
        train_steps=args.train_steps or (4 if args.quick else 8),
        train_windows=1 if args.quick else 3,
        pipeline_steps=10 if args.quick else 25,
        quick=args.quick,
        profile=args.profile,
    )
    if config.images < 4 * config.classes or config.repeats < 1:
        print("error: need --images >= 4 x --classes and --repeats >= 1", file=sys.stderr)
        return 2
    repo = os.path.realpath(os.getcwd())
    if os.path.realpath(config.workdir).startswith(repo + os.sep) and os.path.isdir(
        os.path.join(repo, ".git")
    ):
        print("error: --workdir must be outside the repository", file=sys.stderr)
        return 2
    os.makedirs(config.workdir, exist_ok=True)
    started = time.perf_counter()
    created = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {msg}", flush=True)

    bench = Bench(config, log)
    load_start = _loadavg()
    bench.prepare()
    bench.guarded("converter", bench.bench_converter)
    if config.cold:
        bench.guarded("converter_cold", bench.bench_converter_cold)
    bench.guarded("pipeline", bench.bench_pipeline)
    if hasattr(bench, "record_bytes"):
        bench.guarded("memory", bench.bench_memory)
        bench.guarded("train", bench.bench_train)
    figures = bench.figures()
    wall = time.perf_counter() - started
    machine = machine_info(bench.extra.get("tensorflow"))
    machine["loadavg_start"], machine["loadavg_end"] = load_start, _loadavg()
    results: dict[str, Any] = {
        "schema": 1,
        "created": created,
        "command": "python -m helpers.bench " + " ".join(argv),
        "machine": machine,
        "config": asdict(config),
        "dataset": {
            "images": len(bench.paths),
            "classes": len(bench.classes),
            "bytes": bench.total_bytes,
            "mean_kb": bench.bpi / 1e3,
            "subset_images": bench.subset_count,
            "workdir": config.workdir,
            "size_per_record": SIZE_PER_RECORD,
        },
        "figures": figures,
        "measurements": {k: v for k, v in sorted(bench.m.items())},
        "sweep": bench.sweep(),
        "extra": bench.extra,
        "errors": bench.errors,
        "notes": build_notes(bench, figures),
        "wall_seconds": wall,
    }
    results_json = _jsonable(results)
    json_path = write_results(results_json, config.output)
    png = plot_results(results_json, os.path.join(config.output, "bench.png"))
    print()
    print(format_table(figures))
    print()
    for note in results_json["notes"]:
        print(f"- {note}")
    if args.update_docs:
        os.makedirs(args.docs_dir, exist_ok=True)
        shutil.copyfile(png, os.path.join(args.docs_dir, "bench.png"))
        with open(os.path.join(args.docs_dir, "benchmarks.md"), "w", encoding="utf-8") as f:
            f.write(render_markdown(results_json, chart=f"{args.docs_dir}/bench.png"))
    print(f"\nwrote {json_path} and {png} in {wall / 60:.1f} min")
    return 1 if bench.errors else 0


def build_notes(bench: Bench, figures: Sequence[Figure]) -> list[str]:
    """Plain-language notes: noise, cold cache, and the diagnostics behind misses."""
    notes: list[str] = []
    m = bench.m
    load = [s.get("loadavg_before") for s in bench.extra.get("sections", {}).values()]
    load = [x[0] for x in load if x]
    if load:
        notes.append(
            f"1-minute load average during the run: {min(load):.1f}-{max(load):.1f} on "
            f"{bench.cores} cores (shared machine: wall-clock figures are noisy; medians shown)."
        )
    if "cold" in bench.notes:
        notes.append(bench.notes["cold"])
    elif "drop_caches" in bench.extra:
        d = bench.extra["drop_caches"]
        notes.append(
            f"cold cache: /proc/sys/vm/drop_caches works here (page cache {d['cached_mb_before']:.0f} "
            f"-> {d['cached_mb_after']:.0f} MB); it was dropped before each cold run."
        )
    if "copy_fsync_warm" in m and "copy_warm" in m:
        notes.append(
            "durable-write limit: the same copy with an fsync per class file runs at "
            f"{_fmt_rate(m['copy_fsync_warm'].median, m['copy_fsync_warm'].mb_per_s)} "
            f"(the converter fsyncs every shard; the plain copy runs at "
            f"{_fmt_rate(m['copy_warm'].median, m['copy_warm'].mb_per_s)})."
        )
    ident = bench.extra.get("bytes_identical")
    conv = bench.extra.get("converter_manifest")
    if ident and conv:
        notes.append(
            f"no decoding in the converter: {ident['identical']}/{ident['checked']} sampled records "
            f"hold the file's exact bytes; manifest lists {conv['converted']} converted files."
        )
    cpu = {
        name: median(meas.extra.get("cpu_ms_per_image", []))
        for name, meas in m.items()
        if meas.extra.get("cpu_ms_per_image")
    }
    if cpu:
        notes.append(
            "CPU per image (all threads; steadier than wall time on a loaded machine): "
            + ", ".join(f"{k.removeprefix('pipe_')} {v:.2f} ms" for k, v in sorted(cpu.items()))
            + "."
        )
    steady_cpu = cpu.get(f"convert_w{bench.cores}_steady")
    if steady_cpu and cpu.get("copy_warm"):
        notes.append(
            f"converter steady state, the limit: {steady_cpu:.2f} ms CPU per image (workers "
            f"included) against {cpu['copy_warm']:.3f} ms for the plain copy; even on "
            f"{bench.cores} idle cores that caps the warm ratio at {bench.cores} x "
            f"{cpu['copy_warm']:.3f} / {steady_cpu:.2f} = "
            f"{bench.cores * cpu['copy_warm'] / steady_cpu:.2f}x (0.5x needs <= "
            f"{bench.cores * cpu['copy_warm'] / 0.5:.2f} ms per image)."
        )
    if "pipe_tfrecord" in cpu and "pipe_per_file_slow" in m:
        best = bench.cores * 1e3 / cpu["pipe_tfrecord"]
        per_file = m["pipe_per_file_slow"].median
        notes.append(
            f"slow-storage ratio, the limit: the per-file pipeline overlaps its "
            f"{OPEN_DELAY_S * 1e3:g} ms opens (AUTOTUNE concurrency) and reached "
            f"{per_file:,.0f} img/s, i.e. about {per_file * OPEN_DELAY_S:.1f} opens in flight; "
            f"the TFRecord pipeline's {cpu['pipe_tfrecord']:.2f} ms CPU per decoded image allows "
            f"at most {best:,.0f} img/s on {bench.cores} idle cores, so the ratio cannot exceed "
            f"{ratio(best, per_file):.1f}x here. 5x would need <= "
            f"{bench.cores * 1e3 / (5 * per_file):.2f} ms CPU per decoded image (or a baseline "
            "with fewer reads in flight)."
        )
    if "pipe_tfrecord" in cpu and "pipe_generator" in cpu:
        notes.append(
            "generator ratio on idle cores, from CPU cost: "
            f"{bench.cores} x {cpu['pipe_generator']:.2f} / {cpu['pipe_tfrecord']:.2f} = "
            f"{bench.cores * cpu['pipe_generator'] / cpu['pipe_tfrecord']:.1f}x (the generator "
            "decodes on one Python thread)."
        )
    runs = m["memory_growth"].extra.get("runs") if "memory_growth" in m else None
    if runs:
        rate = median(r["images"] / r["seconds"] for r in runs if r.get("seconds"))
        notes.append(
            f"default knobs (training=True: shuffle 1000, prefetch AUTOTUNE), one full epoch "
            f"including the shuffle-buffer fill: {rate:,.0f} img/s."
        )
    ref = bench.extra.get("memory_reference")
    if ref:
        notes.append(
            "memory yardstick: shuffle buffer 1000 x "
            f"{bench.record_bytes / 1e3:.0f} KB records = {ref['shuffle_buffer_mb']:.0f} MB + 3 decoded "
            f"batches of 32 x 224x224x3 float32 = {ref['batches_mb']:.0f} MB + {bench.cores} images "
            f"being decoded = {ref['decode_mb']:.0f} MB; a shuffle buffer of 1000 *decoded* images "
            f"would be {1000 * ref['image_mb']:.0f} MB."
        )
    tr = bench.extra.get("train")
    if tr:
        notes.append(
            f"input wait: MobileNet alpha {tr['alpha']} at {tr['image_size']} px on {tr['device']}, "
            f"{tr['steps_per_window']} steps per window, shares "
            + ", ".join(f"{s:.1%}" for s in tr["shares"])
            + f"; mean step {median(tr['mean_step_ms']):.0f} ms."
        )
    prof = bench.extra.get("profile_convert")
    if prof and prof.get("inclusive"):
        wanted = ("_probe (", "_encode_item", "image_example", "_write_shard", "_jpeg_scan_start")
        shown = [f"{k} {v:.0%}" for k, v in prof["inclusive"] if k.startswith(wanted)]
        notes.append(
            "converter profile (py-spy, 1 worker, share of busy samples, inclusive): "
            + ", ".join(shown)
        )
    if "profile" in bench.notes:
        notes.append(bench.notes["profile"])
    for section, err in bench.errors.items():
        notes.append(f"section {section} failed: {err}")
    return notes


if __name__ == "__main__":
    sys.exit(main())
