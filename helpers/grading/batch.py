"""Grade a folder of submissions in parallel and write the gradebook.

:func:`grade` reads as its steps: check the lesson and settings, plan one job
per student folder, skip the ones already graded with the same notebook and
settings, grade the rest in a pool of worker processes (a progress bar with an
ETA), then write every student's row, feedback and exports. One student's
failure (a crash of the grader on their notebook, a name that is not UTF-8, a
tree their kernel left behind) becomes that student's row; it never stops the
run.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import multiprocessing
import os
import secrets
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from helpers.grading import fsafe
from helpers.grading.runner import GiB, Limits, kernel_command
from helpers.grading.sandbox import ROOT, SandboxUnavailable, find_bwrap
from helpers.grading.submission import Job, SubmissionGrade, find_submission, safe_name
from helpers.util import atomic_write, sha256_file, usable_cores

SOLUTIONS = ROOT / "solutions"
STATE_NAME = "grading-state.json"
NO_SANDBOX_WARNING = (
    "warning: grading WITHOUT the sandbox (--no-sandbox): student code runs with your rights, "
    "can read your files, reach the network and outlive the grader."
)


class GradingError(RuntimeError):
    """The grading run cannot start (bad lesson, folders, or sandbox)."""


@dataclass
class Settings:
    """How a run grades: everything but the lesson and the folders.

    Attributes:
      limits: per-submission :class:`Limits`.
      jobs: submissions graded at once (default: the usable cores).
      sandbox: run each kernel under bubblewrap (the default; False is unsafe).
      parameters: notebook parameters (over the lesson's own defaults).
      solutions: where ``NN_slug.ipynb`` (the instructor's copy) lives.
      exercises: an exercises module (dotted name or ``.py``) instead of ``helpers.exercises.lNN``.
      kernel: the Jupyter kernel to run (default: ``tfrecord-course`` if installed, else python3).
      seed: derive every submission's inputs from this seed (default: secret, random).
      rerun: grade again even submissions graded before with the same notebook and settings.
      roster: a CSV mapping student folders to Canvas ids (writes ``canvas.csv``).
      canvas_assignment: the Canvas gradebook column, e.g. ``"Lesson 02 (12345)"``.
      gradescope: write ``gradescope/<student>/results.json``.
      similarity: the threshold of the similarity report (None: no report).
      keep_workdirs: keep each submission's working folder (debugging).
      quiet: print nothing (no progress bar).
    """

    limits: Limits = field(default_factory=Limits)
    jobs: int | None = None
    sandbox: bool = True
    parameters: dict[str, Any] = field(default_factory=dict)
    solutions: Path = SOLUTIONS
    exercises: str | None = None
    kernel: str | None = None
    seed: int | None = None
    rerun: bool = False
    roster: Path | None = None
    canvas_assignment: str | None = None
    gradescope: bool = False
    similarity: float | None = 0.8
    keep_workdirs: bool = False
    quiet: bool = False

    @classmethod
    def from_options(cls, **options: Any) -> Settings:
        """Settings from keyword options; ``timeout``, ``cell_timeout`` and ``memory`` set limits."""
        limits = options.pop("limits", None) or Limits()
        overrides = {
            k: options.pop(k) for k in ("timeout", "cell_timeout", "memory") if k in options
        }
        if overrides:
            limits = replace(limits, **overrides)
        unknown = set(options) - set(cls.__dataclass_fields__)
        if unknown:
            raise TypeError(f"unknown grading option(s): {', '.join(sorted(unknown))}")
        return cls(limits=limits, **options)


@dataclass
class Run:
    """What :func:`grade` works out before grading anything."""

    lesson: str
    solution: Path
    parameters: dict[str, Any]
    exercises: str | None
    bwrap: str | None
    kernel: list[str]
    kernel_env: dict[str, str]
    fingerprint: str


# ---------------------------------------------------------------------------
# Worker side
# ---------------------------------------------------------------------------


def _worker_init(log_path: str) -> None:
    """Pool worker set-up: quiet stderr, Ctrl-C handled by the parent, orphan reaping."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:  # TensorFlow (imported by some checks) writes C++ log lines straight to fd 2
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        os.dup2(fd, 2)
        os.close(fd)
    except OSError:
        pass
    try:  # processes a kernel leaves behind are re-parented to this worker, then killed
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def _run_job(job: Job) -> SubmissionGrade:
    import psutil

    from helpers.grading import verdicts
    from helpers.grading.submission import grade_submission

    started = time.time()
    try:
        return grade_submission(job)
    except BaseException:
        import traceback

        traceback.print_exc()  # into grader.log
        raise
    finally:
        keep = {v.proc.pid for v in verdicts._VERIFIERS.values() if v.proc is not None}
        me = psutil.Process()
        for child in me.children(recursive=True):
            try:
                if child.pid not in keep and child.create_time() >= started - 1:
                    child.kill()
            except psutil.Error:
                pass
        for child in me.children():
            try:
                child.wait(0)
            except (psutil.Error, psutil.TimeoutExpired):
                pass


def _failed(job: Job, why: str) -> SubmissionGrade:
    return SubmissionGrade(
        job.student,
        job.lesson,
        Path(job.notebook).name if job.notebook else "",
        "error",
        notes=[*job.notes, f"the grader failed on this submission: {why}"],
        seed=job.seed,
        slug=job.slug,
        digest=job.digest,
    )


# ---------------------------------------------------------------------------
# Parent side: the steps of a run
# ---------------------------------------------------------------------------


def solution_for(lesson: str, solutions: Path) -> Path:
    found = sorted(solutions.glob(f"{lesson}_*.ipynb"))
    if len(found) != 1:
        what = "no" if not found else "more than one"
        raise GradingError(f"{what} solution notebook for lesson {lesson} in {solutions}")
    return found[0]


def _digest_of(path: Path) -> str:
    try:
        return sha256_file(path)
    except OSError:
        return ""


def prepare(lesson: str | int, submissions: Path, settings: Settings) -> Run:
    """Check the lesson, the folders and the sandbox; work out the run's fixed inputs.

    Raises:
      GradingError: what is wrong and what to do.
    """
    import importlib.util

    from helpers.grading.submission import solution_parameters
    from helpers.notebooks import read

    lesson = f"{int(lesson):02d}"
    if not Path(submissions).is_dir():
        raise GradingError(f"no submissions folder {submissions}")
    solution = solution_for(lesson, Path(settings.solutions))
    exercises = settings.exercises
    if exercises is None and importlib.util.find_spec(f"helpers.exercises.l{lesson}") is None:
        raise GradingError(f"lesson {lesson} has no exercises (helpers/exercises/l{lesson}.py)")
    if exercises is not None and (exercises.endswith(".py") or os.sep in exercises):
        exercises = str(Path(exercises).resolve())
    bwrap = None
    if settings.sandbox:
        try:
            bwrap = find_bwrap()
        except SandboxUnavailable as err:
            raise GradingError(str(err)) from None
    try:
        kernel, kernel_env = kernel_command(settings.kernel)
    except ValueError as err:
        raise GradingError(str(err)) from None
    params = {**solution_parameters(read(solution)), **settings.parameters}
    code = _digest_of(Path(exercises)) if exercises and exercises.endswith(".py") else ""
    fingerprint = json.dumps(
        [
            lesson,
            _digest_of(solution),
            code,
            params,
            asdict(settings.limits),
            settings.sandbox,
            kernel,
            settings.seed,
            exercises,
        ],
        sort_keys=True,
        default=str,
    )
    fingerprint = hashlib.sha256(fingerprint.encode()).hexdigest()
    return Run(lesson, solution, params, exercises, bwrap, kernel, kernel_env, fingerprint)


def plan_jobs(
    run: Run, submissions: Path, settings: Settings, workroot: Path, executed_dir: Path
) -> tuple[list[Job], list[str]]:
    """One :class:`Job` per student folder, and warnings about stray files."""
    jobs: list[Job] = []
    warnings: list[str] = []
    expected = run.solution.name
    slugs: set[str] = set()
    for entry in sorted(Path(submissions).iterdir(), key=lambda p: os.fsencode(p.name)):
        name = fsafe.printable(entry.name)
        if entry.name.startswith("."):
            continue
        if not entry.is_dir() or entry.is_symlink():
            warnings.append(
                f"{name}: not a student folder (expected {submissions}/<student>/{expected})"
            )
            continue
        path, notes = find_submission(entry, expected, run.lesson)
        n = len(jobs)
        slug = base = safe_name(name)
        while slug.lower() in slugs:  # "a b" and "a_b" get separate feedback files
            slug = f"{base}-{len(slugs)}"
        slugs.add(slug.lower())
        digest = _digest_of(path) if path else ""
        jobs.append(
            Job(
                student=name,
                lesson=run.lesson,
                notebook=str(path) if path else None,
                expected_name=expected,
                solution=str(run.solution),
                workdir=str(workroot / f"s{n:04d}"),
                executed_dir=str(executed_dir),
                seed=(settings.seed + n) if settings.seed is not None else secrets.randbits(63),
                limits=settings.limits,
                parameters=run.parameters,
                notes=[fsafe.printable(t) for t in notes] if path else [],
                missing_reason=fsafe.printable(notes[0]) if not path and notes else "",
                exercises_ref=run.exercises,
                bwrap=run.bwrap,
                kernel=run.kernel,
                kernel_env=run.kernel_env,
                keep_workdir=settings.keep_workdirs,
                slug=slug,
                digest=f"{digest}:{run.fingerprint}" if digest else "",
            )
        )
    return jobs, warnings


def worker_pool(workers: int, log_path: Path) -> ProcessPoolExecutor:
    """A process pool whose workers grade submissions (see :func:`grade`'s ``pool``)."""
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_worker_init,
        initargs=(str(log_path),),
    )


def _kill_workers() -> None:
    """SIGKILL this process's pool workers (spawned children), after Ctrl-C."""
    import psutil

    for child in psutil.Process().children():
        try:
            if "multiprocessing" in " ".join(child.cmdline()):
                child.kill()
        except psutil.Error:
            pass


def _run_pool(
    jobs: list[Job],
    workers: int,
    log: Path,
    report: Callable[[SubmissionGrade], None],
    pool: ProcessPoolExecutor | None = None,
) -> dict[int, SubmissionGrade]:
    results: dict[int, SubmissionGrade] = {}
    broken: list[int] = []
    own = pool is None
    pool = pool or worker_pool(workers, log)
    try:
        futures = {pool.submit(_run_job, job): n for n, job in enumerate(jobs)}
        for fut in as_completed(futures):
            n = futures[fut]
            try:
                results[n] = fut.result()
            except BrokenProcessPool:
                broken.append(n)
                continue
            except Exception as err:  # noqa: BLE001 - one submission's grader failure is reported
                results[n] = _failed(jobs[n], f"{type(err).__name__}: {err}")
            report(results[n])
    except KeyboardInterrupt:  # stop now: workers' kernels die with them (parent death signal)
        if own:
            _kill_workers()
        raise
    finally:
        if own:
            pool.shutdown(cancel_futures=True)
    for n in sorted(broken):  # a worker died (e.g. killed by the OOM killer): retry alone
        with worker_pool(1, log) as retry:
            try:
                results[n] = retry.submit(_run_job, jobs[n]).result()
            except Exception as err:  # noqa: BLE001
                results[n] = _failed(jobs[n], f"the grading process died ({type(err).__name__})")
        report(results[n])
    return results


def _load_state(output: Path) -> dict[str, Any]:
    try:
        data = json.loads((output / STATE_NAME).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _from_state(entry: dict[str, Any]) -> SubmissionGrade:
    from helpers.grading.submission import ExerciseGrade

    data = dict(entry)
    data["exercises"] = [ExerciseGrade(**e) for e in data.get("exercises", [])]
    return SubmissionGrade(**data)


def split_unchanged(
    jobs: list[Job], output: Path, rerun: bool
) -> tuple[dict[int, SubmissionGrade], list[int]]:
    """Results kept from the last run (same notebook digest and settings), and jobs to grade."""
    state = {} if rerun else _load_state(output)
    kept: dict[int, SubmissionGrade] = {}
    todo: list[int] = []
    for n, job in enumerate(jobs):
        entry = state.get(job.slug)
        if job.digest and isinstance(entry, dict) and entry.get("digest") == job.digest:
            try:
                kept[n] = _from_state(entry)
                continue
            except (TypeError, ValueError):
                pass
        todo.append(n)
    return kept, todo


def _grade_jobs(
    jobs: list[Job], todo: list[int], settings: Settings, log: Path, pool: Any, say: Callable
) -> dict[int, SubmissionGrade]:
    """Grade ``jobs[todo]`` in the pool, with a progress bar (and ETA) over submissions."""
    from helpers.util import progress_bar

    if not todo:
        return {}
    workers = max(1, min(settings.jobs or usable_cores(), len(todo)))
    say(f"grading {len(todo)} submission(s) of lesson {jobs[0].lesson} with {workers} job(s)")
    bar = progress_bar(
        len(todo), "grading", enabled=not settings.quiet, unit="notebook", leave=True
    )

    def report(res: SubmissionGrade) -> None:
        bar.update(1)
        if not settings.quiet:
            bar.write(
                f"{res.student}: {res.score:g}/{res.max_score:g} {res.status} ({res.seconds:.0f} s)"
            )

    try:
        by_pos = _run_pool([jobs[n] for n in todo], workers, log, report, pool)
    finally:
        bar.close()
    return {todo[pos]: res for pos, res in by_pos.items()}


def write_outputs(
    run: Run,
    settings: Settings,
    results: list[SubmissionGrade],
    notebooks: dict[str, Path],
    output: Path,
    say: Callable,
) -> None:
    """Every student's row, feedback and exports; one failing file never stops the others."""
    from helpers.grading import exports, report, similarity

    def attempt(what: str, step: Callable[[], Any]) -> None:
        try:
            step()
        except Exception as err:  # noqa: BLE001 - the other outputs are still written
            say(f"warning: could not write {what}: {type(err).__name__}: {err}")

    # written after every kernel is gone, so nothing a submission wrote can survive here
    attempt("gradebook.csv", lambda: report.write_gradebook(results, output / "gradebook.csv"))
    attempt("summary.csv", lambda: report.write_summary(results, output / "summary.csv"))
    for res in results:
        attempt(
            f"the feedback of {res.student}",
            lambda r=res: report.write_feedback(r, output / "feedback"),
        )
    state = {r.slug: {**asdict(r)} for r in results if r.digest}
    attempt(STATE_NAME, lambda: atomic_write(output / STATE_NAME, json.dumps(state, indent=1)))
    settings_doc = {
        "lesson": run.lesson,
        "solution": run.solution.name,
        "parameters": run.parameters,
        "sandbox": settings.sandbox,
        "kernel": run.kernel,
        "limits": asdict(settings.limits),
        "seeds": {r.student: r.seed for r in results},
    }
    attempt(
        "grading.json",
        lambda: atomic_write(
            output / "grading.json", json.dumps(settings_doc, indent=1, default=str)
        ),
    )
    if settings.gradescope:
        attempt(
            "the Gradescope results",
            lambda: exports.write_gradescope(results, output / "gradescope"),
        )
    if settings.roster is not None:
        column = settings.canvas_assignment or f"Lesson {run.lesson}"
        attempt(
            "canvas.csv",
            lambda: [
                say(f"warning: {w}")
                for w in exports.write_canvas(
                    results, settings.roster, column, output / "canvas.csv"
                )
            ],
        )
    if settings.similarity is not None:
        attempt(
            "the similarity report",
            lambda: similarity.write_report(notebooks, run.solution, settings.similarity, output),
        )


def grade(
    lesson: str | int,
    submissions: Path,
    output: Path,
    settings: Settings | None = None,
    *,
    pool: ProcessPoolExecutor | None = None,
    **options: Any,
) -> list[SubmissionGrade]:
    """Grade every ``submissions/<student>/<lesson notebook>.ipynb``.

    Args:
      lesson: the lesson number (``"02"`` or ``2``).
      submissions: one folder per student.
      output: gets ``gradebook.csv``, ``summary.csv``, ``feedback/``, ``executed/``,
        ``grader.log``, ``grading.json`` and the exports.
      settings: how to grade (:class:`Settings`); or give its fields as keyword
        options (plus ``timeout``, ``cell_timeout``, ``memory`` for the limits).
      pool: an existing :func:`worker_pool` to use (e.g. one pool for many lessons).

    Returns:
      One :class:`SubmissionGrade` per student folder, sorted by student.

    Raises:
      GradingError: unknown lesson, missing folders, or no usable sandbox.
    """
    settings = settings or Settings.from_options(**options)
    output = Path(output)
    run = prepare(lesson, Path(submissions), settings)
    output.mkdir(parents=True, exist_ok=True)
    log = output / "grader.log"
    say = (lambda *a: None) if settings.quiet else (lambda *a: print(*a, flush=True))
    if not settings.sandbox:
        print(NO_SANDBOX_WARNING, file=sys.stderr, flush=True)
        with open(log, "a", encoding="utf-8") as f:
            f.write(NO_SANDBOX_WARNING + "\n")
    workroot = Path(tempfile.mkdtemp(prefix="tfrgrade-"))
    try:
        jobs, warnings = plan_jobs(run, Path(submissions), settings, workroot, output / "executed")
        for w in warnings:
            say(f"warning: {w}")
        results_by_n, todo = split_unchanged(jobs, output, settings.rerun)
        if results_by_n:
            say(f"{len(results_by_n)} submission(s) unchanged since the last run: not graded again")
        results_by_n.update(_grade_jobs(jobs, todo, settings, log, pool, say))
    finally:
        if not settings.keep_workdirs and (problem := fsafe.remove_tree(str(workroot))):
            say(f"warning: {problem}")
    results = sorted((results_by_n[n] for n in range(len(jobs))), key=lambda r: r.student)
    notebooks = {j.student: Path(j.notebook) for j in jobs if j.notebook}
    write_outputs(run, settings, results, notebooks, output, say)
    return results


__all__ = ["GiB", "GradingError", "Settings", "grade", "worker_pool"]
