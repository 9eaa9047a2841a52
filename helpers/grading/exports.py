"""Exports for the tools instructors already use: Canvas's gradebook import and Gradescope.

Canvas (Grades > Import): a CSV whose first columns identify the student and
whose other columns are assignments. Canvas documents ``Student``, ``ID``,
``SIS User ID``, ``SIS Login ID`` and ``Section`` as the identifying columns
(one of ``Student`` name, ``ID`` or ``SIS User ID`` must identify each row);
an assignment column named ``Name (12345)`` updates the existing assignment
with that Canvas id, any other name creates a new assignment. The grader
cannot know Canvas ids, so a *roster* CSV (exported from Canvas's gradebook,
or written by hand) maps each student folder to them::

    folder,student,id,sis_user_id,sis_login_id,section
    alice,"Liddell, Alice",4242,S001,alice@uni.example,Section A

``folder`` is required, plus at least one of ``id`` and ``sis_user_id``.

Gradescope (autograder specification): each submission's
``/autograder/results/results.json`` holds ``score`` (the total), optional
``output``, ``execution_time`` and ``visibility``, and ``tests``: one object
per test with ``name``, ``score``, ``max_score``, ``status``
(``passed``/``failed``), ``output`` and ``visibility``. This module writes
``gradescope/<student>/results.json`` in that shape; a Gradescope
``run_autograder`` script can run ``python -m helpers.grading validate`` on
the submission with ``--gradescope`` to produce it in place.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from helpers.grading.report import csv_cell
from helpers.grading.submission import SubmissionGrade
from helpers.util import atomic_write

CANVAS_ID_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
ROSTER_COLUMNS = {"folder", "student", "id", "sis_user_id", "sis_login_id", "section"}


class RosterError(ValueError):
    """The roster file cannot be used; ``str(err)`` names the file, the row and the fix."""


def read_roster(path: Path) -> dict[str, dict[str, str]]:
    """The roster: student folder -> its Canvas columns.

    Raises:
      RosterError: missing columns, a row without ``folder`` or without an id, a duplicate.
    """
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise RosterError(f"cannot read the roster {path}: {err}") from None
    reader = csv.DictReader(io.StringIO(text))
    header = {(h or "").strip().lower() for h in reader.fieldnames or []}
    if "folder" not in header or not header & {"id", "sis_user_id"}:
        raise RosterError(
            f"the roster {path} needs a 'folder' column and an 'id' or 'sis_user_id' column "
            f"(found: {', '.join(sorted(header)) or 'no header'})"
        )
    roster: dict[str, dict[str, str]] = {}
    for line, row in enumerate(reader, start=2):
        row = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items()}
        folder = row.get("folder", "")
        if not folder:
            raise RosterError(f"{path}, line {line}: no student folder")
        if not (row.get("id") or row.get("sis_user_id")):
            raise RosterError(f"{path}, line {line}: {folder} has neither an id nor a sis_user_id")
        if folder in roster:
            raise RosterError(f"{path}, line {line}: {folder} is listed twice")
        roster[folder] = row
    return roster


def canvas_csv(
    results: Iterable[SubmissionGrade], roster: dict[str, dict[str, str]], column: str
) -> tuple[str, list[str]]:
    """The Canvas import CSV text, and warnings (students missing from either side)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([*CANVAS_ID_COLUMNS, column])
    warnings: list[str] = []
    graded = set()
    for res in results:
        graded.add(res.student)
        row = roster.get(res.student)
        if row is None:
            warnings.append(f"{res.student} is not in the roster: no Canvas row written")
            continue
        writer.writerow(
            [
                csv_cell(row.get("student", "")),
                csv_cell(row.get("id", "")),
                csv_cell(row.get("sis_user_id", "")),
                csv_cell(row.get("sis_login_id", "")),
                csv_cell(row.get("section", "")),
                f"{res.score:g}",
            ]
        )
    for folder in sorted(set(roster) - graded):
        warnings.append(f"{folder} is in the roster but has no submission folder (left blank)")
    return buf.getvalue(), warnings


def write_canvas(
    results: Iterable[SubmissionGrade], roster_path: Path, column: str, path: Path
) -> list[str]:
    """Write ``canvas.csv``; return the warnings."""
    text, warnings = canvas_csv(results, read_roster(roster_path), column)
    atomic_write(path, text)
    return warnings


def gradescope_results(res: SubmissionGrade) -> dict[str, Any]:
    """One submission's Gradescope ``results.json`` content."""
    tests = []
    for n, ex in enumerate(res.exercises, start=1):
        output = ex.detail + (f"\nHint: {ex.hint}" if ex.hint and ex.status != "passed" else "")
        test = {
            "name": f"{ex.key}: {ex.title}",
            "number": str(n),
            "score": ex.score,
            "max_score": ex.max_score,
            "status": "passed" if ex.status == "passed" else "failed",
            "output": output,
            "output_format": "text",
            "visibility": "visible",
        }
        if ex.status == "not_scored":  # 0 of 0: neither passed nor failed (status is optional)
            del test["status"]
        tests.append(test)
    return {
        "score": res.score,
        "execution_time": round(res.seconds),
        "output": "\n".join(res.notes) or f"Graded by the course grader (status: {res.status}).",
        "output_format": "text",
        "visibility": "visible",
        "tests": tests,
    }


def write_gradescope(results: Iterable[SubmissionGrade], folder: Path) -> list[Path]:
    """``folder/<student>/results.json`` for every submission."""
    paths = []
    for res in results:
        path = folder / res.slug / "results.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(gradescope_results(res), indent=1, ensure_ascii=False))
        paths.append(path)
    return paths
