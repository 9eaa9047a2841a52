"""The lessons' prose never states a measured result that their outputs might contradict.

Two rules, both read from the committed solution notebooks:

1. **No measured numbers in markdown.** A markdown cell may not quote a speed-up
   factor ("3x", "2.7×", "x0.6"), a percentage ("40 %") or a "times faster" /
   "-fold" / "order of magnitude" comparison. Such findings depend on the machine
   and belong in the output of the cell that measured them. The only exceptions
   are facts that hold on every machine, each listed in ``ALLOWED`` with its
   reason (the profiler's fixed thresholds, a quoted claim under examination,
   arithmetic on sizes that are the same everywhere).
2. **Printed verdicts agree with their numbers.** Every ``[measured] ...`` line
   printed by :func:`helpers.claims.compare` carries both measurements and the
   conclusion; the conclusion (factor and direction) is recomputed here.

``OLD_CONTRADICTIONS`` keeps the sentences issue 12 found contradicting their
outputs: rule 1 must flag every numeric one, and none of the others may return.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers.claims import compare, parse_verdict

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))

_NUMBER = r"\d+(?:[.,]\d+)?"
CLAIM_PATTERNS = {
    "factor": re.compile(rf"(?<![\w.]){_NUMBER}\s?[x×](?![\w(])(?!\s*\d)"),
    "x-factor": re.compile(rf"(?<![\w`]){'x'}{_NUMBER}\b"),
    "percentage": re.compile(rf"(?<![\w.]){_NUMBER}\s?%"),
    "times": re.compile(
        r"\b(?:\d+(?:\.\d+)?|two|three|four|five|six|ten|several|many|tens of|hundreds of|"
        r"thousands of)\s+times\s+(?:as\s+)?(?:faster|slower|larger|smaller|bigger|more|less|"
        r"longer|shorter|fewer|quicker)\b",
        re.IGNORECASE,
    ),
    "fold": re.compile(r"\b\w+-fold\b", re.IGNORECASE),
    "magnitude": re.compile(r"\borders? of magnitude\b", re.IGNORECASE),
}

# (lesson prefix or "*", regex searched in the line holding the match, reason)
ALLOWED: list[tuple[str, str, str]] = [
    (
        "*",
        r"(?:≥|>=|at least|from|below|under|<)\s?(?:20|5)\s?%|5\s?(?:–|-|to)\s?20\s?%"
        r"|(?:20|5) %( of| \*)|\b(?:20|5) % (?:and|or)\b|\(20 % and 5 %",
        "the TensorBoard profiler's fixed thresholds (kHighlyInfeedBoundThresholdInPercent = 20, "
        "kModeratelyInfeedBoundThresholdInPercent = 5), the same on every machine",
    ),
    (
        "00",
        r"80 %",
        "a published claim ('cut training time by more than 80 %') quoted to be examined; "
        "the cell after it measures what the fixture gives",
    ),
    (
        "06",
        r"under 5 %|below 5 %",
        "exercise 3's target, the profiler's 'not input-bound' threshold",
    ),
    (
        "01",
        r"3–10x smaller, 20–100x faster than XML|3–10 times smaller and 20–100 times",
        "the published protobuf-vs-XML claim, quoted to be measured; the measuring cell prints "
        "its verdict",
    ),
    (
        "04",
        r"10 × N files",
        "TensorFlow's rule of thumb for file counts (a count of files per host, not a speed)",
    ),
    (
        "05",
        r"at least 3x faster\*\*\.$",
        "exercise 1's pass criterion, which the checker measures on its own machine",
    ),
]


def _markdown_cells(path: Path) -> list[tuple[int, str]]:
    nb = json.loads(path.read_text())
    cells = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown":
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cells.append((i, source))
    return cells


def _prose(text: str) -> str:
    """Markdown without fenced code blocks and inline code (numbers there are code)."""
    text = re.sub(r"```.*?```", " ", text, flags=re.DOTALL)
    return re.sub(r"`[^`\n]*`", " ", text)


def claims_in(text: str, lesson: str = "") -> list[str]:
    """The numeric claims in markdown ``text`` that ``ALLOWED`` does not cover."""
    found = []
    for line in _prose(text).splitlines():
        for kind, pattern in CLAIM_PATTERNS.items():
            for match in pattern.finditer(line):
                allowed = any(
                    (scope == "*" or lesson.startswith(scope)) and re.search(rule, line)
                    for scope, rule, _ in ALLOWED
                )
                if not allowed:
                    found.append(f"{kind} {match.group(0)!r} in: {line.strip()[:120]}")
    return found


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.name)
def test_markdown_quotes_no_measured_factor_or_percentage(path):
    problems = [
        f"cell {i}: {claim}"
        for i, text in _markdown_cells(path)
        for claim in claims_in(text, path.name[:2])
    ]
    assert not problems, (
        f"{path.name}: markdown states numbers a measurement should print (print the verdict "
        "from the measuring cell with helpers.claims.compare, or allowlist a fact that holds "
        "on every machine in tests/test_claims.py ALLOWED):\n" + "\n".join(problems)
    )


# The contradictions issue 12 found, as they were written.
OLD_NUMERIC = [
    (
        "03",
        "On the shared 2-core machine that built this notebook, batched parsing was about **3–6x\nfaster**",
    ),
    ("03", "* Batch before parsing: `parse_example` on batches was ~3–6x faster than"),
    ("03", "GZIP made the JPEG file only about **10% smaller** (each JPEG alone: about 3%)"),
    (
        "03",
        "The raw-pixel digits shrank by about **77%** (4.4x) at little or no extra\nreading cost",
    ),
    (
        "03",
        "took an order of magnitude longer and reading was slower too (from 1.5x to 3x across\nruns)",
    ),
    ("05", "| 2 + interleave | x0.6 |"),
    ("05", "prefetch gave a 2.7x step"),
    ("00", "It is several times faster per step, although with a model this tiny"),
    ("00", "which makes it many times slower than slicing an array already in memory"),
    ("00", "Reading TFRecords with parallel decoding cuts the step time several-fold"),
    ("00", "a file 2.6 times larger\nthan the pixels"),
    ("00", "On a\nlocal disk expect a small factor (2x to 10x in our runs"),
]
OLD_QUALITATIVE = [
    "for training it is slow, because every field becomes a Python object",
    "costs a copy of each element",
    "at little or no extra\nreading cost",
    "reading was slower too",
    "tunes\nparallelism from measurements of CPU work; waiting for storage is not CPU work",
]


@pytest.mark.parametrize("lesson,sentence", OLD_NUMERIC)
def test_each_old_numeric_contradiction_would_be_caught(lesson, sentence):
    assert claims_in(sentence, lesson), f"the rule misses: {sentence!r}"


@pytest.mark.parametrize("sentence", OLD_QUALITATIVE)
def test_old_qualitative_contradictions_are_gone(sentence):
    flat = " ".join(sentence.split())
    for path in SOLUTIONS:
        for i, text in _markdown_cells(path):
            assert flat not in " ".join(text.split()), f"{path.name} cell {i} says again: {flat!r}"


def test_allowed_facts_pass():
    assert not claims_in("highly input-bound at ≥ 20 %, moderately from 5 % to 20 %", "00")
    assert claims_in("the pipeline was 40% faster", "00")
    assert not claims_in("resize to `224 × 224` and a `32 x 32` image, bytes `0x0a`", "03")
    assert not claims_in("an image of 240 × 32 × 32 × 3 float32 values", "00")


def _output_lines(path: Path) -> list[tuple[int, str]]:
    nb = json.loads(path.read_text())
    lines = []
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            text = out.get("text", "")
            text = "".join(text) if isinstance(text, list) else text
            lines += [(i, line) for line in text.splitlines()]
    return lines


def _check_verdict(parts: dict) -> str | None:
    x, y, kind = parts["x"], parts["y"], parts["kind"]
    factor = x / y if kind in ("rate", "size") else y / x
    shown = max(factor, 1 / factor)
    if abs(shown - parts["r"]) > 0.01 * shown + 0.051:
        return f"factor {parts['r']} but the numbers give {shown:.2f}"
    word = parts["word"]
    if word in ("as fast as", "the same size as") and shown > 1.5:
        return f"says {word} but the numbers differ {shown:.2f}x"
    if word in ("faster", "larger") and factor < 1:
        return f"says {word} but the numbers give {factor:.2f}"
    if word in ("slower", "smaller") and factor > 1:
        return f"says {word} but the numbers give {factor:.2f}"
    return None


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.name)
def test_printed_verdicts_agree_with_their_numbers(path):
    problems = []
    for i, line in _output_lines(path):
        if line.startswith("[measured]"):
            parts = parse_verdict(line)
            if parts is None:
                problems.append(f"cell {i}: unreadable verdict line {line!r}")
            elif why := _check_verdict(parts):
                problems.append(f"cell {i}: {why}: {line}")
    assert not problems, "\n".join(problems)


def test_compare_prints_a_verdict_the_check_accepts(capsys):
    assert compare("batched", 45_468, "per record", 16_858, "records/s") > 2.6
    assert compare("gzip read", 24.2, "plain read", 22.0, "ms") < 1
    assert compare("a", 10.0, "b", 10.5, "ms") == pytest.approx(1.05)
    for line in capsys.readouterr().out.splitlines():
        parts = parse_verdict(line)
        assert parts is not None, line
        assert _check_verdict(parts) is None, line
    assert _check_verdict(
        parse_verdict("[measured] a = 10 ms; b = 20 ms => a is 2.0x slower than b")
    )


def test_compare_refuses_units_it_cannot_order():
    with pytest.raises(ValueError, match="unit"):
        compare("a", 1.0, "b", 2.0, "widgets")
