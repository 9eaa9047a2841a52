"""A similarity report across students' code: a signal for the instructor, never a score.

Each student's code cells are tokenised and normalised (identifiers become
``v``, strings ``s``, numbers ``0``; comments and layout dropped), one
normalised line per source line. Lines that are in the lesson handed out
(the blank student copy of the solution) are removed, so what remains is
the student's own work. Two students' similarity is the Jaccard index of
those line sets; pairs at or above the threshold are listed in
``similarity.md`` with the lines they share (and in ``similarity.csv``).
Renaming variables or re-wrapping lines does not hide a copy; short lines
(under four tokens) are ignored. Common correct solutions to small exercises
are similar by nature: read the shared lines before drawing conclusions.
"""

from __future__ import annotations

import csv
import io
import itertools
import keyword
import tokenize
from collections.abc import Iterable
from pathlib import Path

from helpers.grading.reading import InvalidSubmission, read_submission
from helpers.grading.report import fence
from helpers.util import atomic_write

MIN_TOKENS = 4
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}


def normalised_lines(source: str) -> dict[str, str]:
    """``{normalised line: the original line}`` of one code cell (empty if it does not tokenise)."""
    lines: dict[int, list[str]] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in _SKIP or tok.type == tokenize.ENDMARKER:
                continue
            if tok.type == tokenize.NAME and not keyword.iskeyword(tok.string):
                text = "v"
            elif tok.type == tokenize.STRING:
                text = "s"
            elif tok.type == tokenize.NUMBER:
                text = "0"
            else:
                text = tok.string
            lines.setdefault(tok.start[0], []).append(text)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return {}
    original = source.splitlines()
    return {
        " ".join(toks): original[n - 1].strip()
        for n, toks in lines.items()
        if len(toks) >= MIN_TOKENS and n - 1 < len(original)
    }


def code_lines(sources: Iterable[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for source in sources:
        for norm, line in normalised_lines(source).items():
            found.setdefault(norm, line)
    return found


def pairs(
    students: dict[str, dict[str, str]], threshold: float
) -> list[tuple[str, str, float, list[str]]]:
    """``(a, b, similarity, shared original lines)`` for pairs at or above ``threshold``."""
    found = []
    for a, b in itertools.combinations(sorted(students), 2):
        la, lb = students[a], students[b]
        if not la or not lb:
            continue
        shared = la.keys() & lb.keys()
        score = len(shared) / len(la.keys() | lb.keys())
        if score >= threshold:
            found.append((a, b, round(score, 3), sorted(la[k] for k in shared)))
    return sorted(found, key=lambda p: -p[2])


def student_lines(notebooks: dict[str, Path], template: Path) -> dict[str, dict[str, str]]:
    """Each student's normalised code lines, minus the lines of the lesson handed out."""
    from helpers import notebooks as nbt

    lesson = nbt.make_lesson(nbt.read(template))
    given = code_lines(c.source for c in lesson.cells if c.cell_type == "code")
    students = {}
    for student, path in notebooks.items():
        try:
            cells, _ = read_submission(path)
        except InvalidSubmission:
            continue
        own = code_lines(c.source for c in cells if c.cell_type == "code")
        students[student] = {k: v for k, v in own.items() if k not in given}
    return students


def write_report(
    notebooks: dict[str, Path], template: Path, threshold: float, output: Path
) -> list[tuple[str, str, float, list[str]]]:
    """``similarity.csv`` and ``similarity.md`` in ``output``; returns the pairs."""
    found = pairs(student_lines(notebooks, template), threshold)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["student_a", "student_b", "similarity", "shared_lines"])
    md = [
        "# Similarity between submissions",
        "",
        f"Pairs whose own code lines overlap at least {threshold:.0%} (Jaccard, normalised "
        "tokens, lesson template removed). A signal to look at, never a verdict.",
        "",
    ]
    for a, b, score, shared in found:
        writer.writerow([a, b, score, len(shared)])
        md += [f"## {score:.0%}", "", fence(f"{a}\n{b}"), "", fence("\n".join(shared)), ""]
    if not found:
        md.append("No pair is over the threshold.")
    atomic_write(output / "similarity.csv", buf.getvalue())
    atomic_write(output / "similarity.md", "\n".join(md) + "\n")
    return found
