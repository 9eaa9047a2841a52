"""A learner's progress through the exercises: recorded by ``check(...)``, shown by
``make progress`` and by the last cell of every lesson.

Fast on purpose: the list of exercises is read from the lesson modules'
source (their ``Exercise(key=..., title=...)`` literals) instead of importing
them, so neither NumPy nor TensorFlow is imported and the command answers
in a fraction of a second.

Where progress lives: ``$TFRECORD_COURSE_PROGRESS`` when it names a file,
otherwise ``progress.json`` in the user's data folder
(``$XDG_DATA_HOME/tfrecord-course``, default ``~/.local/share/tfrecord-course``).
``TFRECORD_COURSE_PROGRESS=off`` records nothing: ``make course``, nbval, the
tests and the lesson runner set it, so running the *solutions* never marks an
exercise as done for the learner.

Each exercise keeps two things: ``best`` (passed or not, and when that best
result was first reached) and ``last`` (the latest attempt). A failed try after
a pass changes ``last`` only. An exercise whose function still raises
``NotImplementedError`` is not recorded at all.
"""

from __future__ import annotations

import ast
import html
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ENV = "TFRECORD_COURSE_PROGRESS"
_PACKAGE = Path(__file__).resolve().parent


def progress_path() -> Path | None:
    """The learner's progress file, or ``None`` when recording is off."""
    value = os.environ.get(ENV, "").strip()
    if value.lower() in ("off", "0", "no", "false") or os.environ.get(
        "TFRECORD_COURSE_NO_PROGRESS"
    ):
        return None
    if value:
        return Path(value).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "tfrecord-course" / "progress.json"


def load() -> dict[str, Any]:
    """The recorded progress (``{}`` when there is none or the file is unreadable)."""
    path = progress_path()
    try:
        data = json.loads(path.read_text()) if path is not None and path.is_file() else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _entry(data: dict[str, Any], key: str) -> dict[str, Any]:
    entry = data.get(key)
    if not isinstance(entry, dict):
        return {}
    if "best" not in entry and "passed" in entry:  # the old one-result format
        old = {"passed": bool(entry["passed"]), "when": entry.get("when", "")}
        return {"best": old, "last": old}
    return entry


def record(key: str, passed: bool) -> None:
    """Record one attempt at ``key``; never raises (progress is a convenience)."""
    path = progress_path()
    if path is None:
        return
    from helpers.util import atomic_write

    now = time.strftime("%Y-%m-%d %H:%M")
    try:
        data = load()
        entry = _entry(data, key)
        best = entry.get("best") or {"passed": False, "when": now}
        if passed and not best.get("passed"):
            best = {"passed": True, "when": now}
        elif not passed and not best.get("passed"):
            best = {"passed": False, "when": now}
        data[key] = {"best": best, "last": {"passed": passed, "when": now}}
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(data, indent=1, sort_keys=True).encode())
    except (OSError, ValueError, TypeError):
        pass


def catalogue() -> list[tuple[str, str]]:
    """``(key, title)`` of every exercise, in lesson and notebook order, without imports."""
    found: list[tuple[str, int, str, str]] = []
    for module in sorted(_PACKAGE.glob("l[0-9][0-9].py")):
        tree = ast.parse(module.read_text(encoding="utf-8"), str(module))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Exercise"):
                continue
            fields = {
                kw.arg: kw.value.value
                for kw in node.keywords
                if isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str)
            }
            if "key" in fields:
                found.append((module.name, node.lineno, fields["key"], fields.get("title", "")))
    return [(key, title) for _, _, key, title in sorted(found)]


def status_rows(lesson: str | None = None) -> list[dict[str, Any]]:
    """One dict per exercise: key, title, status (passed / failing / not tried), best, last."""
    data = load()
    rows = []
    for key, title in catalogue():
        if lesson is not None and key.split(".")[0] != f"{int(lesson):02d}":
            continue
        entry = _entry(data, key)
        best, last = entry.get("best"), entry.get("last")
        if not best:
            status = "not tried"
        else:
            status = "passed" if best.get("passed") else "failing"
        rows.append({"key": key, "title": title, "status": status, "best": best, "last": last})
    return rows


def _when(result: dict[str, Any] | None) -> str:
    if not result:
        return ""
    return f"{'passed' if result.get('passed') else 'failed'} {result.get('when', '')}".strip()


_MARKS = {"passed": "✔", "failing": "✘", "not tried": "·"}


def format_text(lesson: str | None = None) -> str:
    """The progress table as plain text: per exercise, per lesson totals, grand total."""
    rows = status_rows(lesson)
    lines, lessons = [], {}
    for row in rows:
        lessons.setdefault(row["key"].split(".")[0], []).append(row)
    for number, group in lessons.items():
        done = sum(r["status"] == "passed" for r in group)
        lines.append(f"Lesson {number}: {done} of {len(group)} passed")
        for r in group:
            detail = ""
            if r["best"]:
                detail = f"best: {_when(r['best'])}; last try: {_when(r['last'])}"
            lines.append(f"  {_MARKS[r['status']]} {r['key']:<28} {r['status']:<9} {detail}")
    total = sum(r["status"] == "passed" for r in rows)
    lines.append(f"{total} of {len(rows)} exercises passed")
    if progress_path() is None:
        lines.append(f"(recording is off in this process: {ENV}=off)")
    return "\n".join(lines)


def format_html(lesson: str | None = None) -> str:
    """The same table as HTML, for a notebook."""
    rows = status_rows(lesson)
    total = sum(r["status"] == "passed" for r in rows)
    colour = {"passed": "#1a7f37", "failing": "#b35900", "not tried": "#666"}
    cell = "style='text-align:left;padding:2px 8px'"
    body = "".join(
        f"<tr><td {cell[:-1]};white-space:nowrap;color:{colour[r['status']]}'>"
        f"{_MARKS[r['status']]} {html.escape(r['status'])}</td>"
        f"<td {cell}><code>{html.escape(r['key'])}</code></td>"
        f"<td {cell}>{html.escape(r['title'])}</td>"
        f"<td {cell[:-1]};white-space:nowrap'>{html.escape(_when(r['best']))}</td>"
        f"<td {cell[:-1]};white-space:nowrap'>{html.escape(_when(r['last']))}</td></tr>"
        for r in rows
    )
    head = "".join(
        f"<th {cell}>{name}</th>" for name in ("status", "exercise", "", "best", "last try")
    )
    where = f"Lesson {int(lesson):02d}" if lesson is not None else "The course"
    off = "" if progress_path() is not None else f" (recording is off: {ENV}=off)"
    return (
        f"<div class='tfrecord-progress'><b>{where}: {total} of {len(rows)} exercises "
        f"passed</b>{html.escape(off)}<table><tr>{head}</tr>{body}</table></div>"
    )


def show(lesson: str | int | None = None) -> None:
    """Display the progress table (HTML in a notebook, text elsewhere)."""
    lesson_key = None if lesson is None else f"{int(lesson):02d}"
    text = format_text(lesson_key)
    try:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is not None:
            display({"text/plain": text, "text/html": format_html(lesson_key)}, raw=True)
            return
    except ImportError:
        pass
    print(text)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m helpers.exercises",
        description="Your progress through the course's exercises.",
    )
    parser.add_argument(
        "command",
        choices=["progress", "list"],
        help="progress: your status per exercise; list: all exercises",
    )
    parser.add_argument("--lesson", help="only this lesson, e.g. 02")
    args = parser.parse_args(argv)
    if args.command == "list":
        for key, title in catalogue():
            print(f"{key:<32} {title}")
        return 0
    print(format_text(args.lesson))
    path = progress_path()
    print(f"(progress file: {path})" if path is not None else "", end="\n" if path else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
