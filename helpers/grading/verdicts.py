"""From what happened in the kernel to grades: each exercise's verdict and notes on the cells."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from helpers.grading.runner import CellRun, Execution, GiB, Limits
from helpers.grading.verify import Verifier


@dataclass
class ExerciseGrade:
    key: str
    title: str
    score: float
    max_score: float
    status: str
    detail: str
    hint: str = ""


@dataclass
class SubmissionGrade:
    """One student's result. ``status``: ok, timeout, crashed, invalid, missing or error."""

    student: str
    lesson: str
    notebook: str
    status: str
    notes: list[str] = field(default_factory=list)
    exercises: list[ExerciseGrade] = field(default_factory=list)
    seconds: float = 0.0
    executed: str = ""
    seed: int = 0
    slug: str = ""
    digest: str = ""

    @property
    def score(self) -> float:
        return sum(e.score for e in self.exercises)

    @property
    def max_score(self) -> float:
        return sum(e.max_score for e in self.exercises)


_VERIFIERS: dict[tuple[int, float], Verifier] = {}


def verifier(limits: Limits) -> Verifier:
    """This process's verifier child for these limits (started on first use)."""
    key = (limits.verify_memory, limits.verify_seconds)
    if key not in _VERIFIERS:
        _VERIFIERS[key] = Verifier(*key)
    return _VERIFIERS[key]


def _split_hint(detail: str, hint: str) -> tuple[str, str]:
    if "\nHint: " in detail:
        detail, _, hint = detail.partition("\nHint: ")
    return detail, hint


@dataclass
class Answer:
    """What the grader read back for one exercise (``text`` None: nothing usable)."""

    text: str | None = None
    problem: str = ""


def _fate(ex: Any, run: CellRun | None, limits: Limits) -> tuple[str, str] | None:
    """``(status, detail)`` when the grader cell itself did not end well."""
    if run is None or run.status in ("not_run", "skipped"):
        reason = run.reason if run is not None and run.reason else "the grader's cell never ran"
        return "not_run", reason
    if run.status == "timeout":
        return (
            "timeout",
            f"{ex.target}() did not finish within {limits.cell_timeout:.0f} s on the grader's inputs",
        )
    if run.status in ("died", "killed"):
        return "crashed", f"{run.reason} while {ex.target}() ran on the grader's inputs"
    if run.status != "ok":
        what = f"{run.ename}: {run.evalue}".strip(": ") or "an error"
        extra = (
            " (your code called sys.exit() or raised SystemExit)"
            if run.ename == "SystemExit"
            else ""
        )
        return "error", f"the grader's cell for {ex.key} failed with {what}{extra}"
    return None


def judge(
    ex: Any,
    cases: list[Any],
    run: CellRun | None,
    answer: Answer,
    limits: Limits,
    lesson: str,
    ref: str | None,
) -> ExerciseGrade:
    """One exercise's grade from its grader cell's fate and the answers it wrote."""

    def grade(status: str, detail: str, score: float = 0) -> ExerciseGrade:
        detail, hint = _split_hint(detail, ex.hint)
        return ExerciseGrade(
            ex.key, ex.title, score, ex.points, status, detail, hint if not score else ""
        )

    fate = _fate(ex, run, limits)
    if fate is not None:
        return grade(*fate)
    if answer.text is None:
        return grade(
            "error",
            answer.problem
            or "the grader's cell ran but left no answers (was helpers.exercises replaced?)",
        )
    passed, detail = verifier(limits).verify(lesson, ref, ex.key, cases, answer.text)
    if getattr(ex, "self_reported", False):
        return _not_scored(ex, passed, detail)
    if passed:
        return grade("passed", detail, ex.points)
    return grade("failed", detail)


def _not_scored(ex: Any, passed: bool, detail: str) -> ExerciseGrade:
    """An exercise whose verdict rests on what the student's own kernel measured: shown, not scored.

    Its check counts behaviour (concurrent opens, queue ops, parse calls) inside the
    process that runs the student's code; a hostile kernel can forge those counts, so
    the grader reports what the check said and gives the exercise no points either way.
    """
    said = "passed" if passed else f"failed: {_split_hint(detail, ex.hint)[0]}"
    return ExerciseGrade(
        ex.key,
        ex.title,
        0,
        0,
        "not_scored",
        f"the notebook's check {said} (not scored: this check measures behaviour inside "
        "your own kernel, which the grader cannot trust; your instructor may review it)",
    )


def cell_notes(nb: Any, kinds: list[str], execution: Execution, limits: Limits) -> list[str]:
    notes: list[str] = []
    errors: list[str] = []
    never: dict[str, list[str]] = {}
    for i, run in sorted(execution.runs.items()):
        if kinds[i] not in ("student", "parameters"):
            continue
        where = f"cell {nb.cells[i].metadata.get('grader', {}).get('cell', '?')}"
        if kinds[i] == "parameters":
            where = "the injected parameters cell"
        if run.status in ("timeout", "killed", "died"):
            notes.append(f"{where}: {run.reason}")
        elif run.status == "not_run":
            never.setdefault(run.reason or "unknown reason", []).append(where)
        elif run.status == "error" and run.ename == "SystemExit":
            notes.append(
                f"{where} raised SystemExit (sys.exit/exit): it stops nothing here; the grader "
                "ran the remaining cells"
            )
        elif run.status == "error" and run.ename == "MemoryError":
            notes.append(f"{where} ran out of memory (limit {limits.memory / GiB:.1f} GiB)")
        elif run.status == "error":
            errors.append(f"{where}: {run.ename}: {run.evalue}"[:300])
    for reason, cells in never.items():
        shown = ", ".join(c.removeprefix("cell ") for c in cells[:8])
        more = f" and {len(cells) - 8} more" if len(cells) > 8 else ""
        notes.append(f"{len(cells)} of your cells never ran ({reason}): {shown}{more}")
    if errors:
        notes.append(f"{len(errors)} of your cells raised an error (first: {errors[0]})")
    for i, cell in enumerate(nb.cells):
        if kinds[i] == "student" and any(
            "[grader] output truncated" in str(o.get("text", "")) for o in cell.get("outputs", [])
        ):
            where = cell.metadata.get("grader", {}).get("cell", "?")
            notes.append(f"cell {where}: output truncated (too many lines or bytes)")
    restarted = len(execution.restarts) - execution.gave_up
    if restarted:
        notes.append(
            f"the kernel was restarted {restarted} time(s): each time the notebook was "
            "re-run without the cell that crashed it"
        )
    if execution.gave_up:
        notes.append(f"grading stopped: {execution.restarts[-1]}")
    return notes
