"""Small statistics and formatting: medians, ratios, targets, steady-state rates."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable


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
    if value is None or not math.isfinite(value) or op == "--":  # "--": reported only
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


def fmt_rate(images_per_s: float, mb_per_s: float | None = None) -> str:
    if images_per_s is None or not math.isfinite(images_per_s):
        return "n/a"
    text = f"{images_per_s:,.0f} img/s"
    if mb_per_s is not None and math.isfinite(mb_per_s):
        text += f" ({mb_per_s:,.0f} MB/s)"
    return text


def fmt_ratio(value: float) -> str:
    return f"{value:.2f}x" if value is not None and math.isfinite(value) else "n/a"
