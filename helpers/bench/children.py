"""Child processes: running the converter CLI and the probes, and profiling the converter."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any

from helpers.bench.settings import SIZE_PER_RECORD


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


def run_script_converter(dataset: str, output: str) -> tuple[float, int, float]:
    """Time a typical single-threaded converter script as its own process (TensorFlow imported).

    Returns:
      ``(wall seconds, records written, CPU seconds)``.
    """
    shutil.rmtree(output, ignore_errors=True)
    os.sync()
    cmd = [sys.executable, "-m", "helpers.bench", "_seed-convert", dataset, output]
    seconds, out, cpu = _run(cmd)
    return seconds, int(json.loads(out.strip().splitlines()[-1])["records"]), cpu


def json_child(cmd: Sequence[str], timeout: float = 600) -> dict[str, Any]:
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
