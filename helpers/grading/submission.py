"""Grade one submission (runs in a worker process of the pool).

The notebook that runs is rebuilt from the student's cell sources
(:mod:`helpers.grading.reading`) as

1. the student's cells, in their order;
2. the lesson's parameters, injected by papermill after the student's
   parameters cell (the instructor's values win over edited ones);
3. the grader's own cells, from the instructor's side: one per exercise,
   calling :func:`helpers.exercises.kernel_answer` on a copy of the cases
   this process drew fresh (a secret seed per submission).

The kernel only *computes* answers; they are read back right after each
grader cell (and only if that cell's ``execute_reply`` was ``ok``) and
verified outside the kernel, in a limited child process
(:mod:`helpers.grading.verify`), against the grader's own copy of the cases.

Each submission gets a private working folder laid out so that nothing the
grader trusts is in the kernel's reach::

    sNNNN/            mode 0700, the grader's
      grader/         kernel.log, the cases and their input files (originals)
      conn/           connection files (read-only in the sandbox)
      sock/           the kernel's ZeroMQ sockets
      kernel/         the kernel's only writable folder: work/ (its cwd),
                      home/, tmp/, inputs/ (a copy of the cases: exercises write their outputs there),
                      answers/ (re-created by the grader before grading)
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from helpers.grading import fsafe, sandbox
from helpers.grading.build import build_notebook
from helpers.grading.reading import (
    MAX_NOTEBOOK_BYTES,
    InvalidSubmission,
    StudentCell,
    find_submission,
    read_submission,
    solution_parameters,
)
from helpers.grading.runner import (
    CellRun,
    Execution,
    KernelPlace,
    Limits,
    NotebookRunner,
    interpreter_paths,
    run_notebook,
)
from helpers.grading.sanitise import sanitise_notebook
from helpers.grading.verdicts import (
    Answer,
    ExerciseGrade,
    SubmissionGrade,
    cell_notes,
    judge,
    verifier,
)
from helpers.grading.verify import import_exercises_ref, load_exercises
from helpers.util import atomic_write

__all__ = [
    "MAX_NOTEBOOK_BYTES",
    "ExerciseGrade",
    "InvalidSubmission",
    "Job",
    "SubmissionGrade",
    "find_submission",
    "grade_submission",
    "import_exercises_ref",
    "load_exercises",
    "read_submission",
    "solution_parameters",
]


@dataclass
class Job:
    """Everything a worker needs to grade one submission (picklable).

    ``student`` is the folder name made printable; ``folder`` the real one.
    ``bwrap`` None means no sandbox; ``kernel`` is the kernel's argv.
    """

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
    kernel: list[str] = field(default_factory=list)
    kernel_env: dict[str, str] = field(default_factory=dict)
    keep_workdir: bool = False
    slug: str = ""
    digest: str = ""


# ---------------------------------------------------------------------------
# Exercises
# ---------------------------------------------------------------------------


def safe_name(student: str) -> str:
    """A file-name-safe version of a student id."""
    name = re.sub(r"[^A-Za-z0-9._@+-]", "_", student).strip(".") or "student"
    return name[:120]


# ---------------------------------------------------------------------------
# The submission's private folders
# ---------------------------------------------------------------------------


class Workspace:
    """One submission's folders (see the module docstring) and the grader's handles on them."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(mode=0o700, parents=True)
        self.grader, self.conn, self.sock, self.kernel = (
            root / n for n in ("grader", "conn", "sock", "kernel")
        )
        for d in (self.grader, self.conn, self.sock, self.kernel):
            d.mkdir(mode=0o700)
        self.cwd, self.inputs = self.kernel / "work", self.kernel / "inputs"
        self.cwd.mkdir()
        self.kernel_fd = fsafe.open_dir(str(self.kernel))
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        self.log_fd = os.open(str(self.grader / "kernel.log"), flags, 0o600)
        self.answers_fd: int | None = None

    def inputs_for_kernel(self, cases: dict[str, Any]) -> Path:
        """Copy the cases and their input files where the kernel can read them.

        The grader keeps verifying against its originals in ``grader/``.
        """
        shutil.copytree(self.grader / "cases", self.inputs, symlinks=False)
        original, copy = str(self.grader / "cases"), str(self.inputs)

        def moved(value: Any) -> Any:
            if isinstance(value, str) and value.startswith(original):
                return copy + value[len(original) :]
            if isinstance(value, list):
                return [moved(v) for v in value]
            if isinstance(value, dict):
                return {k: moved(v) for k, v in value.items()}
            return value

        path = self.inputs / "cases.json"
        path.write_text(json.dumps(moved(cases)))
        return path

    def reset_kernel_files(self) -> None:
        """Empty the kernel's own folders before a restart (the kernel is gone by then)."""
        for sub in ("work", "home", "tmp"):
            fsafe.remove_tree(str(self.kernel / sub))
            (self.kernel / sub).mkdir(exist_ok=True)

    def fresh_answers(self) -> None:
        """An empty ``answers/`` made by the grader; whatever the kernel left there is set aside."""
        if self.answers_fd is not None:
            os.close(self.answers_fd)
            self.answers_fd = None
        try:
            aside = f".answers-{secrets.token_hex(6)}"
            os.rename("answers", aside, src_dir_fd=self.kernel_fd, dst_dir_fd=self.kernel_fd)
        except FileNotFoundError:
            pass
        try:
            self.answers_fd = fsafe.make_private_dir("answers", self.kernel_fd)
        except OSError:  # the kernel raced the grader for the name: it gets no answers read
            self.answers_fd = None

    def read_answer(self, key: str, limit: int) -> tuple[str | None, str]:
        """``(text, problem)`` of one answer file, read through the grader's handle."""
        if self.answers_fd is None:
            return None, ""
        try:
            data = fsafe.read_file_at(self.answers_fd, f"{key}.json", limit)
        except FileNotFoundError:
            return None, ""
        except OSError as err:
            return None, f"the answer file was refused ({err})"
        return data.decode("utf-8", errors="replace"), ""

    def close(self, keep: bool) -> str:
        """Close the handles and remove the folders; ``""`` or what could not be removed."""
        for fd in (self.answers_fd, self.kernel_fd, self.log_fd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.answers_fd = None
        return "" if keep else fsafe.remove_tree(str(self.root))


# ---------------------------------------------------------------------------
# The worker entry point, in steps
# ---------------------------------------------------------------------------


def _blank(exercises: list[Any], status: str, detail: str) -> list[ExerciseGrade]:
    return [
        ExerciseGrade(ex.key, ex.title, 0, ex.points, status, detail, ex.hint) for ex in exercises
    ]


def _early_verdict(job: Job, result: SubmissionGrade, exercises: list[Any]) -> list[Any] | None:
    """The student's cells, or None when the submission cannot run (``result`` says why)."""
    if not exercises:
        result.status = "error"
        result.notes.append(f"the grader knows no exercises for lesson {job.lesson}")
        return None
    if job.notebook is None:
        result.status = "missing"
        result.notes.append(job.missing_reason or "no notebook")
        result.exercises = _blank(exercises, "missing", job.missing_reason or "no notebook")
        return None
    try:
        cells, notes = read_submission(Path(job.notebook))
    except InvalidSubmission as err:
        result.status = "invalid"
        result.exercises = _blank(exercises, "invalid", str(err))
        result.notes.append(str(err))
        return None
    result.notes += notes
    return cells


def _draw_cases(job: Job, exercises: list[Any], ws: Workspace) -> dict[str, Any]:
    """Fresh cases for every exercise; their input files stay in the grader's folder."""
    rng = np.random.default_rng(job.seed)
    cases = {}
    for ex in exercises:
        case_dir = ws.grader / "cases" / ex.key.replace(".", "_")
        case_dir.mkdir(parents=True, exist_ok=True)
        cases[ex.key] = ex.make_cases(rng, case_dir)
    json.dumps(cases)  # the contract: cases cross the kernel boundary as JSON
    return cases


def _runner(
    job: Job,
    ws: Workspace,
    nb: Any,
    kinds: list[str],
    grading: dict[int, Any],
    answers: dict[str, Answer],
) -> NotebookRunner:
    """The runner for this submission, with the sandbox and the answer read-back wired in."""

    def on_grading_cell(run: CellRun) -> None:
        if run.status == "ok":
            text, problem = ws.read_answer(grading[run.index].key, job.limits.answer_bytes)
            answers[grading[run.index].key] = Answer(text, problem)

    readable = (
        [Path(job.exercises_ref)] if job.exercises_ref and job.exercises_ref.endswith(".py") else []
    )
    prefix: list[str] = []
    if job.bwrap:
        prefix = sandbox.bwrap_prefix(
            job.bwrap,
            ws.kernel,
            ws.cwd,
            readable=[*readable, *interpreter_paths(job.kernel), ws.conn],
            writable=[ws.sock],
        )
    env = {**job.kernel_env, **sandbox.kernel_env(ws.kernel, [str(p.parent) for p in readable])}
    place = KernelPlace(
        cwd=ws.cwd,
        sock_dir=ws.sock,
        conn_dir=ws.conn,
        log_fd=ws.log_fd,
        disk_paths=(ws.kernel, ws.sock),
        cgroup=sandbox.make_pids_cgroup(
            f"tfrgrade-{os.getpid()}-{secrets.token_hex(4)}", job.limits.max_processes
        ),
    )
    return NotebookRunner(
        nb,
        kinds,
        place=place,
        env=env,
        limits=job.limits,
        prefix=prefix,
        kernel=job.kernel or None,
        on_grading_start=ws.fresh_answers,
        on_grading_cell=on_grading_cell,
        on_restart=ws.reset_kernel_files,
    )


def _status(result: SubmissionGrade, execution: Execution) -> None:
    statuses = {run.status for run in execution.runs.values()}
    if execution.start_error:
        result.status = "error"
        tail = [ln for ln in execution.kernel_log.splitlines() if ln.strip()][-3:]
        result.notes.append(execution.start_error + (": " + " / ".join(tail) if tail else ""))
    elif execution.restarts or statuses & {"died", "killed"}:
        result.status = "crashed"
    elif execution.student_time_up or "timeout" in statuses:
        result.status = "timeout"
    if execution.survivors:
        result.notes.append(
            f"{execution.survivors} process(es) your notebook started outlived its kernel "
            "and were stopped by the grader"
        )


def _write_executed(job: Job, result: SubmissionGrade, nb: Any, execution: Execution) -> None:
    from helpers.notebooks import _clean_outputs

    sanitise_notebook(nb, _clean_outputs)
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
    atomic_write(out_path, json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    result.executed = str(out_path)


def _run_and_judge(
    job: Job, result: SubmissionGrade, exercises: list[Any], cells: list[StudentCell], ws: Workspace
) -> None:
    cases = _draw_cases(job, exercises, ws)
    nb, kinds, grading = build_notebook(
        cells,
        exercises,
        parameters=job.parameters,
        cases_path=ws.inputs_for_kernel(cases),
        answers_dir=ws.kernel / "answers",
        exercises_ref=job.exercises_ref,
    )
    answers: dict[str, Answer] = {}
    verifier(job.limits).warm(job.lesson, job.exercises_ref)  # overlaps with the kernel's run
    runner = _runner(job, ws, nb, kinds, grading, answers)
    try:
        execution = run_notebook(runner)
    finally:
        if runner.place.cgroup is not None:
            sandbox.remove_cgroup(runner.place.cgroup)
    by_key = {ex.key: i for i, ex in grading.items()}
    result.exercises = [
        judge(
            ex,
            cases[ex.key],
            execution.runs.get(by_key[ex.key]),
            answers.get(ex.key, Answer()),
            job.limits,
            job.lesson,
            job.exercises_ref,
        )
        for ex in exercises
    ]
    result.notes += cell_notes(nb, kinds, execution, job.limits)
    _status(result, execution)
    _write_executed(job, result, nb, execution)


def grade_submission(job: Job) -> SubmissionGrade:
    """Grade one submission: run it in its own kernel, verify the answers outside it."""
    start = time.monotonic()
    result = SubmissionGrade(
        job.student,
        job.lesson,
        Path(job.notebook).name if job.notebook else "",
        "ok",
        notes=list(job.notes),
        seed=job.seed,
        slug=job.slug or safe_name(job.student),
        digest=job.digest,
    )
    exercises = load_exercises(job.lesson, job.exercises_ref)
    cells = _early_verdict(job, result, exercises)
    if cells is not None:
        ws = Workspace(Path(job.workdir))
        try:
            _run_and_judge(job, result, exercises, cells, ws)
        finally:
            problem = ws.close(job.keep_workdir)
            if problem:
                result.notes.append(f"the grader could not clean up after this notebook: {problem}")
    result.seconds = time.monotonic() - start
    return result
