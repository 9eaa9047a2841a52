"""How the converter's costs grow with the dataset: N and 10*N small synthetic images.

:func:`measure_scale` converts N and then 10*N synthetic JPEGs into the same number
of shards, each run in a fresh process, and returns the figures issue "the converter
at real scale" asks for: time per image at both sizes, the peak RSS of the converter
process and of its workers, the manifest's size (which should not grow with N at a
fixed shard count) and ``make_dataset``'s start-up time on each output.
:func:`measure_resume` kills a conversion with SIGKILL about half way and times the
rerun against an uninterrupted run. Both are meant for ``make bench`` (the caller
formats the figures); nothing here asserts a target.

    python -m helpers.bench.scale --n 5000 [--workdir DIR]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["make_images", "measure_resume", "measure_scale"]

_CONVERT_AND_MEASURE = """
import json, resource, sys, time
from helpers.convert import cli, encode
encode.LIGHT = True
start = time.perf_counter()
status = cli.main(sys.argv[1:])
seconds = time.perf_counter() - start
# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a child of a big process
# (the bench, with TensorFlow loaded) would report its parent's peak
own = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status")
           if line.startswith("VmHWM:"))
workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"status": status, "seconds": seconds, "peak_rss": own, "worker_peak_rss": workers}))
"""

_START_UP = """
import json, sys, time
start = time.perf_counter()
from helpers.pipeline import make_dataset
imported = time.perf_counter()
ds = make_dataset(sys.argv[1], batch_size=32, image_size=32, training=True)
built = time.perf_counter()
next(iter(ds))
first = time.perf_counter()
print(json.dumps({"import_s": imported - start, "build_s": built - imported,
                  "first_batch_s": first - built}))
"""


def make_images(root: str | os.PathLike, n: int, classes: int = 10, distinct: int = 200) -> int:
    """Write ``n`` small JPEGs (``distinct`` different contents, 32-48 px) in class folders.

    Returns:
      Their total size in bytes.
    """
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    blobs = []
    for i in range(distinct):
        w, h = 32 + i % 17, 32 + i % 13
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (h, w, 3), np.uint8)).save(buf, "JPEG", quality=85)
        blobs.append(buf.getvalue())
    total = 0
    for c in range(classes):
        os.makedirs(os.path.join(root, f"class_{c:02d}"), exist_ok=True)
    for i in range(n):
        data = blobs[i % distinct]
        with open(os.path.join(root, f"class_{i % classes:02d}", f"img_{i:07d}.jpg"), "wb") as f:
            f.write(data)
        total += len(data)
    return total


def _env() -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[2])  # the folder that holds helpers/
    return {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _convert(
    dataset: str, output: str, size: int, workers: int, extra: list[str]
) -> dict[str, Any]:
    args = ["--dataset-path", dataset, "--output-path", output, "--size-per-record", str(size),
            "--workers", str(workers), "--quiet", *extra]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", _CONVERT_AND_MEASURE, *args],
        capture_output=True, text=True, env=_env(), timeout=3600,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"conversion failed: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _start_up(output: str) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-c", _START_UP, output],
        capture_output=True, text=True, env=_env(), timeout=600,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"make_dataset failed: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _image_bytes(dataset: str) -> int:
    """Total bytes of the files in ``dataset``'s class folders."""
    return sum(e.stat().st_size for c in os.scandir(dataset) if c.is_dir()
               for e in os.scandir(c.path) if e.is_file())  # fmt: skip


def _median_start_up(output: str, runs: int = 3) -> dict[str, float]:
    """``make_dataset``'s start-up times, each the median of ``runs`` fresh processes."""
    times = [_start_up(output) for _ in range(runs)]
    return {key: statistics.median(t[key] for t in times) for key in times[0]}


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None  # None: nothing to compare (e.g. no worker processes)


def measure_scale(
    n: int = 5000,
    factor: int = 10,
    shards: int = 16,
    workers: int = 2,
    workdir: str | os.PathLike | None = None,
    startup_runs: int = 3,
) -> dict[str, Any]:
    """Convert ``n`` and ``factor * n`` synthetic images into ``shards`` shards each.

    Args:
      n: the small dataset's image count.
      factor: the large one has ``factor * n`` images.
      shards: shard count for both (``--size-per-record`` is total bytes / shards, so
        the greedy packing gives this many or one more).
      workers: converter worker processes.
      workdir: where to put the images and shards (default: a temporary folder,
        removed afterwards).
      startup_runs: fresh processes timing ``make_dataset``'s start-up (median taken).

    Returns:
      ``{"n": ..., "runs": {N: {...}, 10N: {...}}, "ratios": {...}}``: per run the
      images, shards, seconds, ``s_per_image``, ``peak_rss`` and ``worker_peak_rss``
      (bytes), ``manifest_bytes`` and the ``make_dataset`` start-up times; the ratios
      of the large run to the small one.
    """
    tmp = tempfile.mkdtemp(prefix="scale-probe-", dir=workdir)
    runs: dict[int, dict[str, Any]] = {}
    try:
        for count in (n, factor * n):
            dataset, output = (
                os.path.join(tmp, f"images_{count}"),
                os.path.join(tmp, f"out_{count}"),
            )
            total = make_images(dataset, count)
            run = _convert(dataset, output, max(1, total // shards + 1), workers, [])
            with open(os.path.join(output, "manifest.json"), "rb") as f:
                manifest = json.loads(f.read())
            run |= {
                "images": manifest["num_records"],
                "shards": manifest["num_shards"],
                "s_per_image": run["seconds"] / count,
                "manifest_bytes": os.path.getsize(os.path.join(output, "manifest.json")),
                "make_dataset": _median_start_up(output, startup_runs),
            }
            runs[count] = run
            shutil.rmtree(dataset)
    finally:
        if workdir is None:
            shutil.rmtree(tmp, ignore_errors=True)
    small, large = runs[n], runs[factor * n]
    ratios = {
        key: _ratio(large[key], small[key])
        for key in ("s_per_image", "peak_rss", "worker_peak_rss", "manifest_bytes")
    }
    ratios["make_dataset_build_s"] = _ratio(
        large["make_dataset"]["build_s"], small["make_dataset"]["build_s"]
    )
    return {"n": n, "factor": factor, "runs": runs, "ratios": ratios}


def measure_resume(n: int = 5000, shards: int = 40, workers: int = 1,
                   workdir: str | os.PathLike | None = None,
                   dataset: str | os.PathLike | None = None,
                   before_run: Callable[[], Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """Time a full conversion, then one SIGKILLed about half way plus its rerun.

    ``before_run`` is called before each of the three runs (``make bench`` drops the
    page cache there, as for a dataset larger than memory, where reading the images
    is what a rerun saves).

    ``dataset`` is an image folder to convert (default: ``n`` small synthetic images
    made in ``workdir``); ``make bench`` passes its 3000 photo-sized JPEGs, on which the
    conversion's cost per byte dominates, as it does on real data.

    Returns:
      ``full_s`` and ``rerun_s`` (both timed inside the converter process, start-up
      excluded), ``killed_after_s`` (wall time until the kill), ``shards_done_at_kill``,
      ``rerun_over_full``, and ``identical`` (every output file equal to the full run's).
    """
    tmp = tempfile.mkdtemp(prefix="resume-probe-", dir=workdir)
    try:
        if dataset is None:
            dataset = os.path.join(tmp, "images")
            make_images(dataset, n)
        dataset = os.fspath(dataset)
        n = sum(1 for c in os.scandir(dataset) if c.is_dir() for _ in os.scandir(c.path))
        size = max(1, _image_bytes(dataset) // shards + 1)
        ref = os.path.join(tmp, "ref")
        prepare = before_run or (lambda: None)
        prepare()
        full = _convert(dataset, ref, size, workers, [])["seconds"]
        out = os.path.join(tmp, "out")
        args = ["--dataset-path", dataset, "--output-path", out, "--size-per-record", str(size),
                "--workers", str(workers), "--quiet"]  # fmt: skip
        prepare()
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "helpers.convert", *args], env=_env(),
                                start_new_session=True)  # fmt: skip
        total = len([f for f in os.listdir(ref) if f.endswith(".tfrecord")])
        while proc.poll() is None:
            done = (
                len([f for f in os.listdir(out) if f.endswith(".tfrecord")])
                if os.path.isdir(out)
                else 0
            )
            if done >= total // 2:
                os.killpg(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.005)
        if proc.wait() == 0:
            raise RuntimeError(
                f"the conversion of {n} images ended before half way; use a larger n"
            )
        killed_after = time.perf_counter() - start
        at_kill = len([f for f in os.listdir(out) if f.endswith(".tfrecord")])
        prepare()
        rerun = _convert(dataset, out, size, workers, [])  # the same command again
        rerun_s = rerun["seconds"]
        identical = sorted(os.listdir(out)) == sorted(os.listdir(ref)) and all(
            Path(out, name).read_bytes() == Path(ref, name).read_bytes() for name in os.listdir(ref)
        )
        return {
            "images": n,
            "shards": total,
            "full_s": full,
            "killed_after_s": killed_after,
            "shards_done_at_kill": at_kill,
            "rerun_s": rerun_s,
            "rerun_over_full": rerun_s / full,
            "identical": identical,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.bench.scale", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--n", type=int, default=5000, help="small dataset size (default 5000)")
    parser.add_argument("--factor", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--workdir", help="folder for the temporary data (default: the system's)")
    args = parser.parse_args(argv)
    scale = measure_scale(args.n, args.factor, workers=args.workers, workdir=args.workdir)
    resume = measure_resume(args.n, workdir=args.workdir)
    print(json.dumps({"scale": scale, "resume": resume}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
