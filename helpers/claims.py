"""Measured comparisons printed as checkable verdict lines.

A lesson's prose must never state a measured result that its outputs might
contradict. Cells that compare two measurements print the verdict with
:func:`compare`, which puts both numbers and the conclusion drawn from them on
one line::

    [measured] batch + parse_example = 45,468 records/s; parse_single_example = 16,858 records/s
        => batch + parse_example is 2.7x faster

``tests/test_claims.py`` re-reads every such line in the committed outputs and
recomputes the factor and the direction from the two numbers, so a verdict can
only say what was measured.
"""

from __future__ import annotations

import re

__all__ = ["VERDICT", "compare", "parse_verdict"]

# Units where a larger number means faster (rates); for times, smaller is faster;
# for sizes the words are larger/smaller.
_RATE = re.compile(r"/s$")
_TIME = {"s", "ms", "us", "µs", "ms/step", "ms/image", "ms/record", "s/epoch"}
_SIZE = {"bytes", "B", "kB", "MB", "GB"}

VERDICT = re.compile(
    r"^\[measured\] (?P<a>.+?) = (?P<x>[\d,.]+) (?P<unit>\S+); "
    r"(?P<b>.+?) = (?P<y>[\d,.]+) (?P=unit) => (?P=a) is "
    r"(?:(?P<r>[\d.]+)x (?P<word>faster|slower|larger|smaller) than "
    r"|about (?P<same>as fast as|the same size as) .* \((?P<r2>[\d.]+)x, within noise\)$)"
)


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def _kind(unit: str) -> str:
    if _RATE.search(unit):
        return "rate"
    if unit in _TIME:
        return "time"
    if unit in _SIZE:
        return "size"
    raise ValueError(f"unit {unit!r}: use a rate (…/s), a time ({sorted(_TIME)}) or a size")


def compare(
    a_name: str, a: float, b_name: str, b: float, unit: str, *, close: float = 1.1
) -> float:
    """Print how measurement ``a`` compares with ``b`` and return the factor a-vs-b.

    Args:
      a_name, b_name: what was measured (no " = " or ";" inside).
      a, b: the two measurements, in ``unit``.
      unit: ``"images/s"`` (higher is faster), ``"ms"`` (lower is faster) or a size.
      close: factors below this count as "as fast as" / "the same size as" (noise
        on a small fixture); the line still shows the factor.

    Returns:
      How many times faster (or larger) ``a`` is than ``b``; below 1 means slower
      (smaller). Cells branch on it to explain what was measured.
    """
    if a <= 0 or b <= 0:
        raise ValueError(f"measurements must be positive, got {a_name}={a}, {b_name}={b}")
    kind = _kind(unit)
    factor = a / b if kind in ("rate", "size") else b / a
    shown = max(factor, 1 / factor)
    if shown < close:
        same = "the same size as" if kind == "size" else "as fast as"
        verdict = f"about {same} {b_name} ({shown:.2f}x, within noise)"
    else:
        words = ("larger", "smaller") if kind == "size" else ("faster", "slower")
        verdict = f"{shown:.1f}x {words[0] if factor >= 1 else words[1]} than {b_name}"
    print(
        f"[measured] {a_name} = {_number(a)} {unit}; {b_name} = {_number(b)} {unit} "
        f"=> {a_name} is {verdict}"
    )
    return factor


def parse_verdict(line: str) -> dict[str, object] | None:
    """The parts of a :func:`compare` line, or ``None`` if ``line`` is not one."""
    match = VERDICT.match(line.strip())
    if not match:
        return None
    parts = match.groupdict()
    parts["x"] = float(str(parts["x"]).replace(",", ""))
    parts["y"] = float(str(parts["y"]).replace(",", ""))
    parts["r"] = float(str(parts["r"] or parts["r2"]))
    parts["word"] = parts["word"] or parts["same"]
    parts["kind"] = _kind(str(parts["unit"]))
    return parts
