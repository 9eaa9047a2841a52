"""What the run ran on: cores, CPU, RAM, load average; dropping the page cache."""

from __future__ import annotations

import contextlib
import os
import platform
from typing import Any

from helpers.util import usable_cores


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


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


def meminfo_cached_mb() -> float | None:
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
    return write_proc_file("/proc/sys/vm/drop_caches", "3\n")


def write_proc_file(path: str, text: str) -> bool:
    """Write a kernel control file (``/proc/...``); False when not allowed or not there."""
    try:
        with open(path, "w", encoding="ascii") as f:
            f.write(text)
    except OSError:
        return False
    return True


def loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None
