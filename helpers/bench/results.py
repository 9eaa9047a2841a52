"""Measurements (samples of one quantity) and figures (a measurement against its baseline), the table and results.json."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from helpers.bench.settings import ABSOLUTE_TARGETS, MB, TARGETS
from helpers.bench.stats import check_target, fmt_rate, fmt_ratio, median, ratio
from helpers.util import atomic_write


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
        if self.op == "--":
            return "reported"
        if self.id == "input_wait_share":
            return f"{self.op} {self.threshold:.0%}"
        if self.id in ABSOLUTE_TARGETS:
            return f"{self.op} {self.threshold:g} {ABSOLUTE_TARGETS[self.id]}"
        return f"{self.op} {self.threshold:g}x"

    @property
    def shown_value(self) -> str:
        """The value compared with the target, as the table and the chart show it."""
        if self.id == "input_wait_share":
            return f"{self.value:.1%}" if _finite(self.value) else "n/a"
        if self.id in ABSOLUTE_TARGETS:
            unit = ABSOLUTE_TARGETS[self.id]
            return f"{self.value:.2f} {unit}" if _finite(self.value) else "n/a"
        return fmt_ratio(self.value)


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


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
        return fmt_rate(value, mb_per_s)
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
        met = {True: "yes", False: "NO", None: "n/a"}[f.met]
        rows.append(
            [
                f.figure,
                baseline,
                _fmt_value(f.measured, f.unit, f.mb_per_s),
                f.shown_value,
                f.target,
                met,
            ]
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


def jsonable(value: Any) -> Any:
    """NaN/inf -> None, dataclasses -> dicts, recursively (strict JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, Measurement):
        return jsonable(value.to_json())
    if isinstance(value, Figure):
        out = asdict(value)
        out["target"] = value.target
        return jsonable(out)
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
    atomic_write(path, json.dumps(jsonable(results), indent=2, allow_nan=False) + "\n")
    return path
