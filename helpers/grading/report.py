"""The gradebook, the per-student summary and the feedback files.

Everything a student controls (error messages, their function's output, the
folder name) is escaped: in Markdown it sits in fenced code blocks whose fence
is longer than any run of backticks inside, in HTML it goes through
``html.escape`` and the page forbids scripts (Content-Security-Policy). In
CSV, cells that a spreadsheet would read as a formula get a leading ``'``.
"""

from __future__ import annotations

import csv
import html
import io
import re
from collections.abc import Iterable
from pathlib import Path

from helpers.grading.submission import SubmissionGrade, safe_name
from helpers.util import atomic_write

GRADEBOOK_FIELDS = ["student", "lesson", "exercise", "score", "max_score", "status", "detail"]
SUMMARY_FIELDS = [
    "student",
    "lesson",
    "score",
    "max_score",
    "status",
    "notebook",
    "seconds",
    "notes",
]


def csv_cell(value: object) -> object:
    if isinstance(value, str):
        value = value.replace("\r", " ").replace("\n", " | ")
        if value[:1] in ("=", "+", "-", "@", "\t"):
            value = "'" + value
    return value


def _fmt(score: float) -> str:
    return f"{score:g}"


def write_gradebook(results: Iterable[SubmissionGrade], path: Path) -> None:
    """``gradebook.csv``: one row per student and exercise."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(GRADEBOOK_FIELDS)
    for res in results:
        for ex in res.exercises:
            detail = ex.detail + (f" Hint: {ex.hint}" if ex.hint and ex.status != "passed" else "")
            writer.writerow(
                [
                    csv_cell(res.student),
                    res.lesson,
                    ex.key,
                    _fmt(ex.score),
                    _fmt(ex.max_score),
                    ex.status,
                    csv_cell(detail),
                ]
            )
        if not res.exercises:
            writer.writerow(
                [
                    csv_cell(res.student),
                    res.lesson,
                    "",
                    0,
                    0,
                    res.status,
                    csv_cell("; ".join(res.notes)),
                ]
            )
    atomic_write(path, buf.getvalue())


def write_summary(results: Iterable[SubmissionGrade], path: Path) -> None:
    """``summary.csv``: one row per student with the total and what went wrong."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(SUMMARY_FIELDS)
    for res in results:
        writer.writerow(
            [
                csv_cell(res.student),
                res.lesson,
                _fmt(res.score),
                _fmt(res.max_score),
                res.status,
                csv_cell(res.notebook),
                f"{res.seconds:.1f}",
                csv_cell("; ".join(res.notes)),
            ]
        )
    atomic_write(path, buf.getvalue())


def fence(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    marks = "`" * max(3, longest + 1)
    return f"{marks}text\n{text}\n{marks}"


def _md_text(text: str) -> str:
    """Escape instructor-side text for Markdown (titles, hints)."""
    text = html.escape(text, quote=False)
    return re.sub(r"([\\`*_{}\[\]()#+!|~])", r"\\\1", text)


STATUS_MARK = {"passed": "✔", "not_scored": "–"}  # anything else is a ✘


def feedback_markdown(res: SubmissionGrade) -> str:
    """The student's feedback as Markdown."""
    lines = [
        f"# Lesson {res.lesson} feedback",
        "",
        "Student:",
        "",
        fence(res.student),
        "",
        f"**Score: {_fmt(res.score)} / {_fmt(res.max_score)}** (status: {res.status})",
        "",
        "| exercise | result | points |",
        "|---|---|---|",
    ]
    for ex in res.exercises:
        mark = STATUS_MARK.get(ex.status, "✘")
        lines.append(
            f"| {_md_text(ex.key)} | {mark} {ex.status} | {_fmt(ex.score)} / {_fmt(ex.max_score)} |"
        )
    lines.append("")
    for ex in res.exercises:
        mark = STATUS_MARK.get(ex.status, "✘")
        lines += [f"## {mark} {_md_text(ex.key)}: {_md_text(ex.title)}", "", fence(ex.detail), ""]
        if ex.hint and ex.status != "passed":
            lines += [f"Hint: {_md_text(ex.hint)}", ""]
    if res.notes:
        lines += ["## About your notebook", "", fence("\n".join(f"- {n}" for n in res.notes)), ""]
    lines += [
        "Each exercise was checked on fresh inputs drawn by the grader; your function's answers "
        "were verified outside your notebook.",
        "",
    ]
    return "\n".join(lines)


def feedback_html(res: SubmissionGrade) -> str:
    """The student's feedback as a self-contained HTML page (no scripts can run)."""
    e = html.escape
    rows = []
    for ex in res.exercises:
        mark = STATUS_MARK.get(ex.status, "✘")
        hint = f"<p class=hint>Hint: {e(ex.hint)}</p>" if ex.hint and ex.status != "passed" else ""
        rows.append(
            f"<tr class={e(ex.status)}><td>{e(ex.key)}<br><small>{e(ex.title)}</small></td>"
            f"<td>{mark} {e(ex.status)}</td><td>{_fmt(ex.score)} / {_fmt(ex.max_score)}</td>"
            f"<td><pre>{e(ex.detail)}</pre>{hint}</td></tr>"
        )
    notes = "".join(f"<li><pre>{e(n)}</pre></li>" for n in res.notes)
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=utf-8>"
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>Lesson {e(res.lesson)} feedback</title>"
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}"
        "td{vertical-align:top;border-top:1px solid #ccc;padding:.4em}"
        "pre{white-space:pre-wrap;margin:0}.passed td:nth-child(2){color:green}"
        "</style></head><body>"
        f"<h1>Lesson {e(res.lesson)} feedback</h1>"
        f"<p>Student: <code>{e(res.student)}</code></p>"
        f"<p><strong>Score: {_fmt(res.score)} / {_fmt(res.max_score)}</strong> "
        f"(status: {e(res.status)})</p>"
        "<table><tr><th>exercise</th><th>result</th><th>points</th><th>detail</th></tr>"
        + "".join(rows)
        + "</table>"
        + (f"<h2>About your notebook</h2><ul>{notes}</ul>" if notes else "")
        + "</body></html>\n"
    )


def write_feedback(res: SubmissionGrade, folder: Path) -> tuple[Path, Path]:
    """``feedback/<student>.md`` and ``.html``."""
    folder.mkdir(parents=True, exist_ok=True)
    base = res.slug or safe_name(res.student)
    md, page = folder / f"{base}.md", folder / f"{base}.html"
    atomic_write(md, feedback_markdown(res))
    atomic_write(page, feedback_html(res))
    return md, page
