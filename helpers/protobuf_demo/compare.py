"""Size and speed of protobuf, JSON and XML on the same records."""

from __future__ import annotations

import timeit
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from helpers.protobuf_demo.formats import (
    from_json,
    from_xml,
    image_record_classes,
    message_to_record,
    records_to_message,
    to_json,
    to_xml,
)


def best_time(fn: Callable[[], Any], repeat: int = 5) -> float:
    """Seconds per call of ``fn``: the best of ``repeat`` rounds, timed by :mod:`timeit`.

    ``timeit.Timer.autorange`` picks how many calls make a round of at least
    0.2 s (and that calibration round counts as the first); ``Timer.repeat``
    times the others. The minimum is the least noisy estimate on a shared
    machine: other processes only ever make a round slower.
    """
    timer = timeit.Timer(fn)
    number, first = timer.autorange()
    rounds = [first, *timer.repeat(repeat=max(repeat - 1, 0), number=number)]
    return min(rounds) / number


@dataclass(frozen=True)
class FormatResult:
    """Size and speed of one format on the same records."""

    name: str
    size: int
    encode_s: float
    decode_s: float


def compare_formats(records: Sequence[dict[str, Any]], repeat: int = 5) -> list[FormatResult]:
    """Encode / decode the same records as protobuf, JSON and XML; check round trips.

    Every format starts from and returns to the same Python data (a list of dicts)
    so the comparison is fair; the row "protobuf (message ↔ bytes)" times only
    ``SerializeToString`` / ``ParseFromString`` on an already-built message, which
    is what a program that keeps its data in messages pays.

    Args:
      records: dicts with the fields of ``ImageRecord`` (see :func:`make_image_records`).
      repeat: timing rounds of at least 0.2 s each (the best is kept).

    Returns:
      One :class:`FormatResult` per format.

    Raises:
      AssertionError: a format did not give the records back unchanged.
    """
    record_cls, container_cls = image_record_classes()
    descriptor = record_cls.DESCRIPTOR
    records = [dict(r) for r in records]

    def pb_encode() -> bytes:
        return records_to_message(records, container_cls).SerializeToString()

    def pb_decode(data: bytes) -> list[dict[str, Any]]:
        return [message_to_record(m) for m in container_cls.FromString(data).records]

    message = records_to_message(records, container_cls)
    formats: list[tuple[str, Callable[[], bytes], Callable[[bytes], Any], bool]] = [
        ("protobuf (dicts ↔ bytes)", pb_encode, pb_decode, True),
        ("protobuf (message ↔ bytes)", message.SerializeToString, container_cls.FromString, False),
        ("JSON (json module)", lambda: to_json(records), from_json, True),
        ("XML (ElementTree)", lambda: to_xml(records), lambda d: from_xml(d, descriptor), True),
    ]
    results = []
    for name, encode, decode, returns_dicts in formats:
        data = encode()
        back = decode(data)
        if returns_dicts and back != records:
            raise AssertionError(f"{name}: the records did not survive the round trip")
        if not returns_dicts and back != message:
            raise AssertionError(f"{name}: the message did not survive the round trip")
        results.append(
            FormatResult(
                name=name,
                size=len(data),
                encode_s=best_time(encode, repeat),
                decode_s=best_time(lambda d=data, f=decode: f(d), repeat),
            )
        )
    return results


def format_table(results: Sequence[FormatResult], baseline: str = "XML") -> str:
    """A text table of :func:`compare_formats` results with ratios against ``baseline``."""
    base = next(r for r in results if r.name.startswith(baseline))
    head = f"{'format':<28} {'bytes':>9} {'encode ms':>10} {'decode ms':>10}   {'smaller':>8} {'enc faster':>10} {'dec faster':>10}"
    lines = [head, "-" * len(head)]
    for r in results:
        lines.append(
            f"{r.name:<28} {r.size:>9,} {r.encode_s * 1e3:>10.2f} {r.decode_s * 1e3:>10.2f}   "
            f"{base.size / r.size:>7.1f}× {base.encode_s / r.encode_s:>9.1f}× {base.decode_s / r.decode_s:>9.1f}×"
        )
    lines.append(
        f"(ratios are {baseline} ÷ format: how many times smaller / faster than {baseline})"
    )
    return "\n".join(lines)
