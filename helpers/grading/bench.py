"""``python -m helpers.grading bench``: the grader against plain papermill, in the same run.

Builds N submissions of a lesson (alternately the solution and the blank
student copy), executes them one by one with plain ``papermill`` (the
baseline: no limits, no grading), then grades them with ``--jobs J``. The
figure of merit is::

    ratio = grader wall time / (sequential papermill wall time / J)

The target is a ratio of at most about 1.5: isolation, limits and grading
cost no more than half again over perfectly parallel papermill. This is a
benchmark, not a test: timings depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from helpers.grading.batch import SOLUTIONS, grade, solution_for


def run(lesson: str, n: int, jobs: int, output: Path) -> dict:
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    from helpers import notebooks as nbt

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    solution_path = solution_for(lesson, SOLUTIONS)
    solution = nbt.read(solution_path)
    blank = nbt.make_lesson(solution)
    work = Path(tempfile.mkdtemp(prefix="grader-bench-"))
    subs = work / "submissions"
    try:
        for i in range(n):
            folder = subs / f"student{i:02d}"
            folder.mkdir(parents=True)
            nb = solution if i % 2 == 0 else blank
            (folder / solution_path.name).write_text(nbt.format_notebook(nb))

        start = time.perf_counter()
        for i, folder in enumerate(sorted(subs.iterdir())):
            run_dir = work / "papermill" / folder.name
            run_dir.mkdir(parents=True)
            try:
                pm.execute_notebook(
                    str(folder / solution_path.name),
                    str(run_dir / solution_path.name),
                    kernel_name="python3",
                    cwd=str(run_dir),
                    progress_bar=False,
                )
            except PapermillExecutionError:
                pass  # the blank copy's exercise cells raise; the notebook still ran
            print(f"papermill {i + 1}/{n}: {time.perf_counter() - start:.1f} s", flush=True)
        sequential = time.perf_counter() - start

        start = time.perf_counter()
        results = grade(lesson, subs, output / "grades", jobs=jobs, quiet=True)
        graded = time.perf_counter() - start
    finally:
        shutil.rmtree(work, ignore_errors=True)
    baseline = sequential / jobs
    figures = {
        "lesson": lesson,
        "submissions": n,
        "jobs": jobs,
        "cpus": os.cpu_count(),
        "papermill_sequential_s": round(sequential, 1),
        "baseline_s": round(baseline, 1),
        "grader_s": round(graded, 1),
        "ratio": round(graded / baseline, 2),
        "scores": sorted({f"{r.score:g}/{r.max_score:g}" for r in results}),
        "load_average": os.getloadavg(),
    }
    output.mkdir(parents=True, exist_ok=True)
    (output / "grading-bench.json").write_text(json.dumps(figures, indent=1))
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.grading bench", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--lesson", default="02")
    parser.add_argument("--submissions", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--output", type=Path, default=Path("bench-results"))
    args = parser.parse_args(argv)
    figures = run(f"{int(args.lesson):02d}", args.submissions, args.jobs, args.output)
    print(json.dumps(figures, indent=1))
    verdict = "within" if figures["ratio"] <= 1.5 else "over"
    print(
        f"grader {figures['grader_s']} s vs papermill {figures['papermill_sequential_s']} s / "
        f"{args.jobs} = {figures['baseline_s']} s: ratio {figures['ratio']} ({verdict} the 1.5 target)"
    )
    return 0
