"""Grade one submission (runs in a worker process of the pool).

The submission is never trusted as a notebook: only the *source* of its code
(and markdown) cells is taken; its metadata, kernelspec, tags, outputs and
execution counts are dropped. The notebook that runs is rebuilt as

1. the student's cells, in their order;
2. the lesson's parameters, injected by papermill after the student's
   parameters cell (the instructor's values win over edited ones);
3. the grader's own cells, from the instructor's side: one per exercise,
   calling :func:`helpers.exercises.kernel_answer` on ``cases.json``, which
   this process drew fresh (a secret seed per submission).

The kernel only *computes* answers; they are read back right after each
grader cell (and only if that cell's ``execute_reply`` was ``ok``) and
verified here, outside the kernel, with the same ``verify`` the lesson's
``check(...)`` uses. Printing "passed", patching ``check``, re-tagging cells
or forging the answer files earns nothing: only correct answers to inputs
the student has never seen do.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import numpy as np

from helpers.grading.runner import CellRun, Execution, GiB, Limits, NotebookRunner, run_notebook
from helpers.grading.sandbox import bwrap_prefix, kernel_env

MAX_NOTEBOOK_BYTES = 100 << 20
MAX_ANSWER_BYTES = 64 << 20
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
_ACTIVE_HTML = re.compile(r"<\s*(script|iframe|object|embed)|javascript:|\son\w+\s*=", re.I)
UNSAFE_MIME = (
    "application/javascript",
    "application/vnd.jupyter.widget-view+json",
    "text/javascript",
)


class InvalidSubmission(ValueError):
    """The file cannot be graded as a notebook; ``str(err)`` says why."""


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

    @property
    def score(self) -> float:
        return sum(e.score for e in self.exercises)

    @property
    def max_score(self) -> float:
        return sum(e.max_score for e in self.exercises)


@dataclass
class Job:
    """Everything a worker needs to grade one submission (picklable)."""

    student: str
    lesson: str
    notebook: str | None
    expected_name: str
    solution: str
    workdir: str
    executed_dir: str
    seed: int
    limits: Limits = field(default_factory=Limits)
    parameters: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    missing_reason: str = ""
    exercises_ref: str | None = None
    bwrap: str | None = None
    hide: list[str] = field(default_factory=list)
    keep_workdir: bool = False
    slug: str = ""


# ---------------------------------------------------------------------------
# Exercises and the instructor's notebook
# ---------------------------------------------------------------------------


def import_exercises_ref(ref: str) -> None:
    """Import an exercises module given as a dotted name or a ``.py`` path."""
    if ref.endswith(".py") or os.sep in ref:
        path = Path(ref).resolve()
        name = path.stem
        loaded = sys.modules.get(name)
        if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() == path:
            return
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import exercises from {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
    else:
        importlib.import_module(ref)


def load_exercises(lesson: str, ref: str | None = None) -> list[Any]:
    """The lesson's exercises, in notebook order (``helpers.exercises.lNN`` or ``ref``)."""
    from helpers import exercises as registry

    if ref:
        import_exercises_ref(ref)
        return [ex for ex in registry._REGISTRY.values() if ex.lesson == lesson]
    return registry.exercises_for(lesson)


def solution_parameters(solution: Any) -> dict[str, Any]:
    """Literal values assigned in the instructor's ``parameters`` cell."""
    for cell in solution.cells:
        if cell.get("cell_type") == "code" and "parameters" in cell.get("metadata", {}).get(
            "tags", []
        ):
            try:
                tree = ast.parse(cell.source)
            except SyntaxError:
                return {}
            params: dict[str, Any] = {}
            for node in tree.body:
                target = node.targets[0] if isinstance(node, ast.Assign) else None
                if isinstance(node, ast.AnnAssign):
                    target = node.target
                if isinstance(target, ast.Name) and node.value is not None:
                    try:
                        params[target.id] = ast.literal_eval(node.value)
                    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                        pass
            return params
    return {}


# ---------------------------------------------------------------------------
# Reading the submission
# ---------------------------------------------------------------------------


@dataclass
class StudentCell:
    cell_type: str
    source: str
    position: int
    parameters: bool = False


def read_submission(path: Path) -> tuple[list[StudentCell], list[str]]:
    """The cells of a submitted notebook, without trusting anything but their source.

    Returns:
      ``(cells, notes)``.

    Raises:
      InvalidSubmission: empty, unreadable, not JSON or not a notebook.
    """
    if path.is_symlink():
        raise InvalidSubmission("the notebook is a symbolic link; submit the file itself")
    try:
        size = path.stat().st_size
        if size == 0:
            raise InvalidSubmission("the notebook file is empty (0 bytes)")
        if size > MAX_NOTEBOOK_BYTES:
            raise InvalidSubmission(
                f"the notebook file is {size / 2**20:.0f} MB, over the "
                f"{MAX_NOTEBOOK_BYTES >> 20} MB limit (clear its outputs)"
            )
        raw = path.read_bytes()
    except OSError as err:
        raise InvalidSubmission(f"the notebook file cannot be read ({err.strerror})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidSubmission("the notebook file is not UTF-8 text") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as err:
        where = (
            f" (line {err.lineno}, column {err.colno}: {err.msg})"
            if isinstance(err, json.JSONDecodeError)
            else ""
        )
        raise InvalidSubmission(f"the notebook file is not valid JSON{where}") from None
    if isinstance(data, dict) and "cells" not in data and "worksheets" in data:
        try:  # an nbformat 3 notebook
            data = json.loads(json.dumps(nbformat.reads(text, as_version=4)))
        except Exception:  # noqa: BLE001
            raise InvalidSubmission(
                "the notebook is in an old format that cannot be read"
            ) from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise InvalidSubmission("the file is JSON but not a Jupyter notebook (no list of cells)")
    cells: list[StudentCell] = []
    odd = 0
    for position, cell in enumerate(data["cells"]):
        if not isinstance(cell, dict):
            odd += 1
            continue
        kind = cell.get("cell_type")
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if kind not in ("code", "markdown", "raw") or not isinstance(source, str):
            odd += 1
            continue
        if kind == "raw":
            continue
        meta = cell.get("metadata")
        tags = meta.get("tags") if isinstance(meta, dict) else None
        is_params = isinstance(tags, list) and "parameters" in tags
        cells.append(StudentCell(kind, source, position, kind == "code" and is_params))
    notes = []
    if odd:
        notes.append(f"{odd} malformed cell(s) in the notebook were ignored")
    if not any(c.cell_type == "code" for c in cells):
        notes.append("the notebook has no code cells")
    return cells, notes


def find_submission(student_dir: Path, expected: str, lesson: str) -> tuple[Path | None, list[str]]:
    """The notebook to grade in one student's folder, and notes about its name.

    The exact lesson file name is expected; a single other notebook of the
    same lesson (or the only notebook in the folder) is graded with a note.
    """
    exact = student_dir / expected
    if exact.is_file() or exact.is_symlink():
        return exact, []
    found: list[Path] = []
    for top, dirs, files in os.walk(student_dir):
        depth = len(Path(top).relative_to(student_dir).parts)
        dirs[:] = [d for d in dirs if not d.startswith(".") and depth < 3]
        found += [Path(top) / f for f in files if f.endswith(".ipynb")]
    found.sort()
    names = ", ".join(str(p.relative_to(student_dir)) for p in found[:10]) or "no notebooks"
    same = [
        p for p in found if p.name.lower() == expected.lower() or p.name.startswith(f"{lesson}_")
    ]
    other_lessons = [p for p in found if re.match(r"\d\d_", p.name) and p not in same]
    pick = None
    if len(same) == 1:
        pick = same[0]
    elif len(found) == 1 and not other_lessons:
        pick = found[0]
    if pick is None:
        return None, [f"no {expected} in the submission folder (found: {names})"]
    rel = pick.relative_to(student_dir)
    return pick, [f"wrong file name: expected {expected}, graded {rel}"]


# ---------------------------------------------------------------------------
# The notebook that runs
# ---------------------------------------------------------------------------

_LOAD_EXERCISES = """\
def _grader_load_exercises(ref, keys):
    import importlib, importlib.util, os, sys
    import helpers.exercises as registry
    if all(k in registry._REGISTRY for k in keys):
        return
    if ref.endswith(".py") or os.sep in ref:
        name = os.path.splitext(os.path.basename(ref))[0]
        spec = importlib.util.spec_from_file_location(name, ref)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    else:
        importlib.import_module(ref)
"""


def _param_anchor(cells: list[StudentCell], names: set[str]) -> int | None:
    """Index of the student's parameters cell: tagged, else the first assigning a parameter."""
    for i, cell in enumerate(cells):
        if cell.parameters:
            return i
    for i, cell in enumerate(cells):
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id in names for t in node.targets
            ):
                return i
    return None


def build_notebook(
    cells: list[StudentCell],
    exercises: list[Any],
    *,
    parameters: dict[str, Any],
    cases_path: Path,
    answers_dir: Path,
    exercises_ref: str | None,
) -> tuple[Any, list[str], dict[int, Any]]:
    """The notebook the grader executes.

    Returns:
      ``(nb, kinds, grading)``: ``kinds[i]`` says whose cell ``i`` is;
      ``grading`` maps a grader cell's index to its exercise.
    """
    from papermill.parameterize import parameterize_notebook

    nb = nbformat.v4.new_notebook()
    nb.metadata = nbformat.from_dict(
        {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}, "papermill": {}}
    )
    anchor = _param_anchor(cells, set(parameters))
    for i, cell in enumerate(cells):
        if cell.cell_type == "code":
            new = nbformat.v4.new_code_cell(cell.source)
        else:
            new = nbformat.v4.new_markdown_cell(cell.source)
        new.metadata["grader"] = {"kind": "student", "cell": cell.position + 1}
        new.metadata["tags"] = ["parameters"] if i == anchor else []  # papermill reads .tags
        nb.cells.append(new)
    if parameters:
        nb = parameterize_notebook(nb, parameters, kernel_name="python3", language="python")
    kinds = []
    for cell in nb.cells:
        if "injected-parameters" in cell.metadata.get("tags", []):
            kinds.append("parameters")
            cell.metadata["grader"] = {"kind": "parameters"}
        else:
            kinds.append("student" if cell.cell_type == "code" else "markdown")
    nb.cells.append(
        nbformat.v4.new_markdown_cell(
            "## Grader\n\nThe cells below were added by the grader (`helpers.grading`): each "
            "calls your function on fresh inputs; the answers are checked outside this notebook."
        )
    )
    kinds.append("markdown")
    setup = ["# [grader] load the exercise checks", "import helpers.exercises as _grader_exercises"]
    if exercises_ref:
        keys = [ex.key for ex in exercises]
        setup = [_LOAD_EXERCISES, f"_grader_load_exercises({exercises_ref!r}, {keys!r})"]
    nb.cells.append(nbformat.v4.new_code_cell("\n".join(setup)))
    kinds.append("setup")
    grading: dict[int, Any] = {}
    for ex in exercises:
        answers = answers_dir / f"{ex.key}.json"
        source = (
            f"# [grader] {ex.key}: {ex.target}() on the grader's fresh inputs\n"
            f'__import__("helpers.exercises", fromlist=["kernel_answer"]).kernel_answer(\n'
            f"    {ex.key!r}, {str(cases_path)!r}, {str(answers)!r}, globals()\n)"
        )
        nb.cells.append(nbformat.v4.new_code_cell(source))
        kinds.append("grading")
        grading[len(nb.cells) - 1] = ex
    for cell, kind in zip(nb.cells, kinds, strict=True):
        cell.metadata.setdefault("grader", {})["kind"] = kind
    return nb, kinds, grading


# ---------------------------------------------------------------------------
# Verdicts
# ---------------------------------------------------------------------------


def _split_hint(detail: str, hint: str) -> tuple[str, str]:
    if "\nHint: " in detail:
        detail, _, hint = detail.partition("\nHint: ")
    return detail, hint


def judge(
    ex: Any, cases: list[Any], run: CellRun | None, answer: str | None, limits: Limits
) -> ExerciseGrade:
    """One exercise's grade from its grader cell's fate and the answers it wrote."""
    from helpers.exercises import verify_answers

    def grade(status: str, detail: str, score: float = 0) -> ExerciseGrade:
        detail, hint = _split_hint(detail, ex.hint)
        return ExerciseGrade(
            ex.key, ex.title, score, ex.points, status, detail, hint if not score else ""
        )

    if run is None or run.status in ("not_run", "skipped"):
        reason = run.reason if run is not None and run.reason else "the grader's cell never ran"
        return grade("not_run", reason)
    if run.status == "timeout":
        return grade(
            "timeout",
            f"{ex.target}() did not finish within {limits.cell_timeout:.0f} s on the grader's inputs",
        )
    if run.status in ("died", "killed"):
        return grade("crashed", f"{run.reason} while {ex.target}() ran on the grader's inputs")
    if run.status != "ok":
        what = f"{run.ename}: {run.evalue}".strip(": ") or "an error"
        extra = (
            " (your code called sys.exit() or raised SystemExit)"
            if run.ename == "SystemExit"
            else ""
        )
        return grade("error", f"the grader's cell for {ex.key} failed with {what}{extra}")
    if answer is None:
        return grade(
            "error",
            "the grader's cell ran but left no answers (was helpers.exercises replaced?)",
        )
    try:
        answers = json.loads(answer)
    except (ValueError, RecursionError):
        return grade("error", "the answers written in the kernel are not valid JSON")
    if not isinstance(answers, list):
        return grade("error", "the answers written in the kernel are malformed")
    passed, detail = verify_answers(ex, cases, answers)
    if passed:
        return grade("passed", detail, ex.points)
    return grade("failed", detail)


def _cell_notes(nb: Any, kinds: list[str], execution: Execution, limits: Limits) -> list[str]:
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


def _sanitise_outputs(nb: Any) -> None:
    """Executed notebooks keep no scripts and no TensorFlow start-up noise."""
    from helpers.notebooks import _clean_outputs

    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs = []
        for out in _clean_outputs(cell.get("outputs", [])):
            data = out.get("data")
            if isinstance(data, dict):
                for mime in UNSAFE_MIME:
                    data.pop(mime, None)
                if _ACTIVE_HTML.search(str(data.get("text/html", ""))):
                    data.pop("text/html")
                if not data and out.get("output_type") in ("display_data", "execute_result"):
                    continue
            outputs.append(out)
        cell.outputs = outputs


def safe_name(student: str) -> str:
    """A file-name-safe version of a student id."""
    name = re.sub(r"[^A-Za-z0-9._@+-]", "_", student).strip(".") or "student"
    return name[:120]


# ---------------------------------------------------------------------------
# The worker entry point
# ---------------------------------------------------------------------------


def _blank(job: Job, exercises: list[Any], status: str, detail: str) -> list[ExerciseGrade]:
    return [
        ExerciseGrade(ex.key, ex.title, 0, ex.points, status, detail, ex.hint) for ex in exercises
    ]


def grade_submission(job: Job) -> SubmissionGrade:
    """Grade one submission: run it in its own kernel, verify the answers here."""
    start = time.monotonic()
    result = SubmissionGrade(
        job.student,
        job.lesson,
        Path(job.notebook).name if job.notebook else "",
        "ok",
        notes=list(job.notes),
        seed=job.seed,
        slug=job.slug or safe_name(job.student),
    )
    exercises = load_exercises(job.lesson, job.exercises_ref)
    if not exercises:
        result.status = "error"
        result.notes.append(f"the grader knows no exercises for lesson {job.lesson}")
        return result
    if job.notebook is None:
        result.status = "missing"
        result.notes.append(job.missing_reason or "no notebook")
        result.exercises = _blank(job, exercises, "missing", job.missing_reason or "no notebook")
        result.seconds = time.monotonic() - start
        return result
    try:
        cells, notes = read_submission(Path(job.notebook))
    except InvalidSubmission as err:
        result.status = "invalid"
        result.exercises = _blank(job, exercises, "invalid", str(err))
        result.notes.append(str(err))
        result.seconds = time.monotonic() - start
        return result
    result.notes += notes

    workdir = Path(job.workdir)
    cwd, grader_dir, answers_dir = workdir / "work", workdir / "grader", workdir / "answers"
    for d in (cwd, grader_dir, answers_dir):
        d.mkdir(parents=True, exist_ok=True)
    try:
        rng = np.random.default_rng(job.seed)
        cases = {}
        for ex in exercises:
            case_dir = grader_dir / ex.key.replace(".", "_")
            case_dir.mkdir(exist_ok=True)
            cases[ex.key] = ex.make_cases(rng, case_dir)
        cases_path = grader_dir / "cases.json"
        cases_path.write_text(json.dumps(cases))
        nb, kinds, grading = build_notebook(
            cells,
            exercises,
            parameters=job.parameters,
            cases_path=cases_path,
            answers_dir=answers_dir,
            exercises_ref=job.exercises_ref,
        )
        answers: dict[str, str] = {}

        def on_grading_start() -> None:
            if answers_dir.is_symlink():
                answers_dir.unlink()
            shutil.rmtree(answers_dir, ignore_errors=True)
            answers_dir.mkdir(parents=True, exist_ok=True)

        def on_grading_cell(run: CellRun) -> None:
            ex = grading[run.index]
            path = answers_dir / f"{ex.key}.json"
            try:
                if run.status == "ok" and path.is_file() and not path.is_symlink():
                    if path.stat().st_size <= MAX_ANSWER_BYTES:
                        answers[ex.key] = path.read_text(errors="replace")
                path.unlink(missing_ok=True)
            except OSError:
                pass

        prefix: list[str] = []
        readable = (
            [job.exercises_ref] if job.exercises_ref and job.exercises_ref.endswith(".py") else []
        )
        if job.bwrap:
            prefix = bwrap_prefix(
                job.bwrap,
                workdir,
                cwd,
                hide=[Path(p) for p in job.hide],
                readable=[Path(p) for p in readable],
            )
        pythonpath = [str(Path(p).resolve().parent) for p in readable]
        runner = NotebookRunner(
            nb,
            kinds,
            workdir=workdir,
            cwd=cwd,
            env=kernel_env(workdir, pythonpath),
            limits=job.limits,
            prefix=prefix,
            on_grading_start=on_grading_start,
            on_grading_cell=on_grading_cell,
        )
        execution = run_notebook(runner)
        by_key = {ex.key: i for i, ex in grading.items()}
        result.exercises = [
            judge(
                ex,
                cases[ex.key],
                execution.runs.get(by_key[ex.key]),
                answers.get(ex.key),
                job.limits,
            )
            for ex in exercises
        ]
        result.notes += _cell_notes(nb, kinds, execution, job.limits)
        statuses = {run.status for run in execution.runs.values()}
        if execution.start_error:
            result.status = "error"
            tail = [ln for ln in execution.kernel_log.splitlines() if ln.strip()][-3:]
            result.notes.append(execution.start_error + (": " + " / ".join(tail) if tail else ""))
        elif execution.restarts or statuses & {"died", "killed"}:
            result.status = "crashed"
        elif execution.student_time_up or "timeout" in statuses:
            result.status = "timeout"
        _sanitise_outputs(nb)
        nb.metadata["grader"] = {
            "student": job.student,
            "lesson": job.lesson,
            "score": result.score,
            "max_score": result.max_score,
            "status": result.status,
            "seed": job.seed,
        }
        if result.status != "ok":
            nb.metadata["grader"]["kernel_log_tail"] = execution.kernel_log[-2000:]
        out_dir = Path(job.executed_dir) / result.slug
        out_dir.mkdir(parents=True, exist_ok=True)
        out_path = out_dir / (job.expected_name or "submission.ipynb")
        tmp = out_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
        tmp.replace(out_path)
        result.executed = str(out_path)
    finally:
        if not job.keep_workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    result.seconds = time.monotonic() - start
    return result
