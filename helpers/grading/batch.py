"""Grade a folder of submissions in parallel and write the gradebook (and the CLI)."""

from __future__ import annotations

import argparse
import ctypes
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
from pathlib import Path
from typing import Any

from helpers.grading.runner import GiB, Limits
from helpers.grading.sandbox import ROOT, SandboxUnavailable, find_bwrap
from helpers.grading.submission import Job, SubmissionGrade, find_submission, safe_name

SOLUTIONS = ROOT / "solutions"


class GradingError(RuntimeError):
    """The grading run cannot start (bad lesson, folders, or sandbox)."""


# ---------------------------------------------------------------------------
# Worker side
# ---------------------------------------------------------------------------


def _worker_init(log_path: str) -> None:
    """Pool worker set-up: quiet stderr, Ctrl-C handled by the parent, orphan reaping."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:  # TensorFlow (imported by some checks) writes C++ log lines straight to fd 2
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
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

    from helpers.grading.submission import grade_submission

    started = time.time()
    try:
        return grade_submission(job)
    except BaseException:
        import traceback

        traceback.print_exc()  # into grader.log
        raise
    finally:
        me = psutil.Process()
        for child in me.children(recursive=True):
            try:
                if child.create_time() >= started - 1:
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
    )


# ---------------------------------------------------------------------------
# Parent side
# ---------------------------------------------------------------------------


def solution_for(lesson: str, solutions: Path) -> Path:
    found = sorted(solutions.glob(f"{lesson}_*.ipynb"))
    if len(found) != 1:
        what = "no" if not found else "more than one"
        raise GradingError(f"{what} solution notebook for lesson {lesson} in {solutions}")
    return found[0]


def parse_size(text: str) -> int:
    """``"4G"``, ``"512M"``, ``"1.5GiB"`` or bytes."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    if t and t[-1] in units:
        return int(float(t[:-1]) * units[t[-1]])
    return int(float(t))


def plan_jobs(
    lesson: str,
    submissions: Path,
    solution: Path,
    *,
    workroot: Path,
    executed_dir: Path,
    limits: Limits,
    parameters: dict[str, Any],
    exercises_ref: str | None,
    bwrap: str | None,
    hide: list[str],
    seed: int | None,
    keep_workdirs: bool,
) -> tuple[list[Job], list[str]]:
    """One :class:`Job` per student folder, and warnings about stray files."""
    jobs: list[Job] = []
    warnings: list[str] = []
    expected = solution.name
    entries = sorted(submissions.iterdir(), key=lambda p: p.name)
    slugs: set[str] = set()
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if not entry.is_dir() or entry.is_symlink():
            warnings.append(
                f"{entry.name}: not a student folder (expected {submissions}/<student>/{expected})"
            )
            continue
        path, notes = find_submission(entry, expected, lesson)
        n = len(jobs)
        slug = base = safe_name(entry.name)
        while slug.lower() in slugs:  # "a b" and "a_b" get separate feedback files
            slug = f"{base}-{len(slugs)}"
        slugs.add(slug.lower())
        jobs.append(
            Job(
                student=entry.name,
                lesson=lesson,
                notebook=str(path) if path else None,
                expected_name=expected,
                solution=str(solution),
                workdir=str(workroot / f"s{n:04d}"),
                executed_dir=str(executed_dir),
                seed=(seed + n) if seed is not None else secrets.randbits(63),
                limits=limits,
                parameters=parameters,
                notes=notes if path else [],
                missing_reason=notes[0] if not path and notes else "",
                exercises_ref=exercises_ref,
                bwrap=bwrap,
                hide=hide,
                keep_workdir=keep_workdirs,
                slug=slug,
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
    except KeyboardInterrupt:  # stop now: workers' kernels die with them (parent poller, bwrap)
        for proc in list(getattr(pool, "_processes", {}).values()):
            proc.kill()
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


def grade(
    lesson: str | int,
    submissions: Path,
    output: Path,
    *,
    timeout: float = 600,
    cell_timeout: float = 120,
    memory: int = 4 * GiB,
    jobs: int | None = None,
    sandbox: bool = False,
    parameters: dict[str, Any] | None = None,
    solutions: Path = SOLUTIONS,
    exercises: str | None = None,
    seed: int | None = None,
    keep_workdirs: bool = False,
    limits: Limits | None = None,
    quiet: bool = False,
    pool: ProcessPoolExecutor | None = None,
) -> list[SubmissionGrade]:
    """Grade every ``submissions/<student>/<lesson notebook>.ipynb``.

    Args:
      lesson: the lesson number (``"02"`` or ``2``).
      submissions: one folder per student.
      output: gets ``gradebook.csv``, ``summary.csv``, ``feedback/`` and ``executed/``.
      timeout: seconds for all of one student's cells.
      cell_timeout: seconds for any one cell.
      memory: bytes of memory per kernel (with its children).
      jobs: submissions graded at once (default: the number of CPUs).
      sandbox: run each kernel under bubblewrap.
      parameters: notebook parameters (over the lesson's own defaults).
      solutions: where ``NN_slug.ipynb`` (the instructor's copy) lives.
      exercises: the exercises module (dotted name or ``.py`` path) instead
        of ``helpers.exercises.lNN``.
      seed: derive every submission's inputs from this seed (default: secret, random).
      keep_workdirs: keep each submission's working directory (debugging).
      limits: full :class:`Limits` (overrides timeout, cell_timeout and memory).
      quiet: print nothing.
      pool: an existing :func:`worker_pool` to use (e.g. one pool for many lessons).

    Returns:
      One :class:`SubmissionGrade` per student folder, sorted by student.

    Raises:
      GradingError: unknown lesson, missing folders, or no usable sandbox.
    """
    import importlib.util

    from helpers.grading.report import write_feedback, write_gradebook, write_summary
    from helpers.grading.submission import solution_parameters

    lesson = f"{int(lesson):02d}"
    submissions, output, solutions = Path(submissions), Path(output), Path(solutions)
    if not submissions.is_dir():
        raise GradingError(f"no submissions folder {submissions}")
    solution = solution_for(lesson, solutions)
    if exercises is None and importlib.util.find_spec(f"helpers.exercises.l{lesson}") is None:
        raise GradingError(f"lesson {lesson} has no exercises (helpers/exercises/l{lesson}.py)")
    if exercises is not None and (exercises.endswith(".py") or os.sep in exercises):
        exercises = str(Path(exercises).resolve())
    bwrap = None
    if sandbox:
        try:
            bwrap = find_bwrap()
        except SandboxUnavailable as err:
            raise GradingError(str(err)) from None
    limits = limits or Limits(timeout=timeout, cell_timeout=cell_timeout, memory=memory)
    from helpers.notebooks import read

    params = {**solution_parameters(read(solution)), **(parameters or {})}
    output.mkdir(parents=True, exist_ok=True)
    executed_dir = output / "executed"
    workroot = Path(tempfile.mkdtemp(prefix="tfrgrade-"))
    hide = [str(p) for p in (submissions, output, solutions, SOLUTIONS, workroot, ROOT / ".git")]
    job_list, warnings = plan_jobs(
        lesson,
        submissions,
        solution,
        workroot=workroot,
        executed_dir=executed_dir,
        limits=limits,
        parameters=params,
        exercises_ref=exercises,
        bwrap=bwrap,
        hide=hide,
        seed=seed,
        keep_workdirs=keep_workdirs,
    )
    say = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
    for w in warnings:
        say(f"warning: {w}")
    if not sandbox:
        say("note: kernels run without --sandbox: they can reach the network and write files.")
    workers = max(1, min(jobs or os.cpu_count() or 1, len(job_list) or 1))
    say(f"grading {len(job_list)} submission(s) of lesson {lesson} with {workers} job(s)")
    done = [0]

    def report(res: SubmissionGrade) -> None:
        done[0] += 1
        say(
            f"[{done[0]}/{len(job_list)}] {res.student}: {res.score:g}/{res.max_score:g} "
            f"{res.status} ({res.seconds:.0f} s)"
        )

    try:
        results_by_n = (
            _run_pool(job_list, workers, output / "grader.log", report, pool) if job_list else {}
        )
    finally:
        if not keep_workdirs:
            import shutil

            shutil.rmtree(workroot, ignore_errors=True)
    results = [results_by_n[n] for n in range(len(job_list))]
    results.sort(key=lambda r: r.student)
    # written after every kernel is gone, so nothing a submission wrote can survive here
    write_gradebook(results, output / "gradebook.csv")
    write_summary(results, output / "summary.csv")
    for res in results:
        write_feedback(res, output / "feedback")
    (output / "grading.json").write_text(
        json.dumps(
            {
                "lesson": lesson,
                "solution": solution.name,
                "parameters": params,
                "sandbox": sandbox,
                "limits": limits.__dict__,
                "seeds": {r.student: r.seed for r in results},
            },
            indent=1,
            default=str,
        )
    )
    return results


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        from helpers.grading.bench import main as bench_main

        return bench_main(argv[1:])
    parser = argparse.ArgumentParser(
        prog="python -m helpers.grading",
        description=(
            "Grade student notebooks: each runs in its own kernel with time and memory limits; "
            "the grader draws fresh inputs, the kernel computes answers, the grader verifies "
            "them. Also: `python -m helpers.grading bench --help`."
        ),
    )
    parser.add_argument("--lesson", required=True, help="lesson number, e.g. 02")
    parser.add_argument(
        "--submissions", required=True, type=Path, help="folder of <student>/<notebook>.ipynb"
    )
    parser.add_argument("--output", required=True, type=Path, help="gradebook, feedback, notebooks")
    parser.add_argument(
        "--timeout", type=float, default=600, help="seconds for a notebook's cells (default 600)"
    )
    parser.add_argument(
        "--cell-timeout", type=float, default=120, help="seconds for any one cell (default 120)"
    )
    parser.add_argument(
        "--memory-limit", default="4G", help="memory per kernel, e.g. 4G or 1500M (default 4G)"
    )
    parser.add_argument(
        "--jobs", type=int, default=None, help="submissions at once (default: CPUs)"
    )
    parser.add_argument(
        "--sandbox",
        action="store_true",
        help="run kernels under bubblewrap (no network, no writes)",
    )
    parser.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="notebook parameter (JSON value or string); repeatable",
    )
    parser.add_argument(
        "--solutions",
        type=Path,
        default=SOLUTIONS,
        help="folder with the instructor's NN_slug.ipynb (default: solutions/)",
    )
    parser.add_argument(
        "--exercises",
        default=None,
        help="exercises module (dotted name or .py file) instead of helpers.exercises.lNN",
    )
    parser.add_argument("--seed", type=int, default=None, help="reproducible inputs (debugging)")
    parser.add_argument("--keep-workdirs", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    def value(text: str) -> Any:
        try:
            return json.loads(text)
        except ValueError:
            return text

    try:
        results = grade(
            args.lesson,
            args.submissions,
            args.output,
            timeout=args.timeout,
            cell_timeout=args.cell_timeout,
            memory=parse_size(args.memory_limit),
            jobs=args.jobs,
            sandbox=args.sandbox,
            parameters={k: value(v) for k, v in args.parameter},
            solutions=args.solutions,
            exercises=args.exercises,
            seed=args.seed,
            keep_workdirs=args.keep_workdirs,
            quiet=args.quiet,
        )
    except (GradingError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not args.quiet:
        width = max([len(r.student) for r in results] + [7])
        print(f"\n{'student':<{width}}  score    status")
        for r in results:
            print(f"{r.student:<{width}}  {r.score:>3g}/{r.max_score:<3g}  {r.status}")
        print(f"gradebook: {args.output / 'gradebook.csv'}; feedback: {args.output / 'feedback'}")
    return 1 if any(r.status == "error" for r in results) else 0
