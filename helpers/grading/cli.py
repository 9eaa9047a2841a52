"""The command line: ``python -m helpers.grading [validate|bench] ...``.

``python -m helpers.grading --lesson NN --submissions DIR --output DIR`` grades
a class (sandboxed unless ``--no-sandbox``); ``validate NOTEBOOK`` grades one
notebook exactly as the instructor's run does and prints the score and the
feedback; ``bench`` compares the grader with plain papermill.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from helpers.grading.batch import SOLUTIONS, GradingError, Settings, grade
from helpers.grading.exports import RosterError, gradescope_results
from helpers.grading.runner import Limits
from helpers.util import atomic_write, parse_size


def _settings_arguments(parser: argparse.ArgumentParser) -> None:
    """The options shared by grading a class and validating one notebook."""
    parser.add_argument(
        "--timeout", type=float, default=600, help="seconds for a notebook's cells (default 600)"
    )
    parser.add_argument(
        "--cell-timeout", type=float, default=120, help="seconds for any one cell (default 120)"
    )
    parser.add_argument(
        "--memory-limit", default="4G", help="memory per kernel, e.g. 4G or 1500M (default 4G)"
    )
    sandbox = parser.add_mutually_exclusive_group()
    sandbox.add_argument(
        "--sandbox",
        dest="sandbox",
        action="store_true",
        default=True,
        help="run kernels under bubblewrap (the default)",
    )
    sandbox.add_argument(
        "--no-sandbox",
        dest="sandbox",
        action="store_false",
        help="UNSAFE: run student code with your rights (prints a warning)",
    )
    parser.add_argument(
        "--kernel",
        default=None,
        help="Jupyter kernel to run notebooks on (default: tfrecord-course if installed, "
        "else python3; never the notebook's own)",
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


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _settings(args: argparse.Namespace, **more: Any) -> Settings:
    limits = Limits(
        timeout=args.timeout,
        cell_timeout=args.cell_timeout,
        memory=parse_size(args.memory_limit),
    )
    return Settings(
        limits=limits,
        sandbox=args.sandbox,
        kernel=args.kernel,
        parameters={k: _value(v) for k, v in args.parameter},
        solutions=args.solutions,
        exercises=args.exercises,
        **more,
    )


def grade_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.grading",
        description=(
            "Grade student notebooks: each runs in its own sandboxed kernel with time, memory, "
            "process and disk limits; the grader draws fresh inputs, the kernel computes "
            "answers, the grader verifies them. Also: `python -m helpers.grading validate "
            "NOTEBOOK` and `python -m helpers.grading bench --help`."
        ),
    )
    parser.add_argument("--lesson", required=True, help="lesson number, e.g. 02")
    parser.add_argument(
        "--submissions", required=True, type=Path, help="folder of <student>/<notebook>.ipynb"
    )
    parser.add_argument("--output", required=True, type=Path, help="gradebook, feedback, notebooks")
    parser.add_argument(
        "--jobs", type=int, default=None, help="submissions at once (default: usable cores)"
    )
    _settings_arguments(parser)
    parser.add_argument(
        "--rerun",
        action="store_true",
        help="grade again submissions unchanged since the last run (default: keep their grade)",
    )
    parser.add_argument(
        "--roster", type=Path, default=None, help="CSV folder->Canvas ids: writes canvas.csv"
    )
    parser.add_argument(
        "--canvas-assignment",
        default=None,
        help='Canvas gradebook column, e.g. "Lesson 02 (12345)" (default "Lesson NN")',
    )
    parser.add_argument(
        "--gradescope", action="store_true", help="write gradescope/<student>/results.json"
    )
    parser.add_argument(
        "--similarity",
        type=float,
        default=0.8,
        help="threshold of the similarity report (0-1, default 0.8; 0 lists all pairs)",
    )
    parser.add_argument("--no-similarity", action="store_true", help="no similarity report")
    parser.add_argument("--seed", type=int, default=None, help="reproducible inputs (debugging)")
    parser.add_argument("--keep-workdirs", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--quiet", action="store_true")
    return parser


def grade_main(argv: list[str]) -> int:
    args = grade_parser().parse_args(argv)
    try:
        settings = _settings(
            args,
            jobs=args.jobs,
            seed=args.seed,
            rerun=args.rerun,
            roster=args.roster,
            canvas_assignment=args.canvas_assignment,
            gradescope=args.gradescope,
            similarity=None if args.no_similarity else args.similarity,
            keep_workdirs=args.keep_workdirs,
            quiet=args.quiet,
        )
        results = grade(args.lesson, args.submissions, args.output, settings)
    except (GradingError, RosterError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not args.quiet:
        width = max([len(r.student) for r in results] + [7])
        print(f"\n{'student':<{width}}  score    status")
        for r in results:
            print(f"{r.student:<{width}}  {r.score:>3g}/{r.max_score:<3g}  {r.status}")
        print(f"gradebook: {args.output / 'gradebook.csv'}; feedback: {args.output / 'feedback'}")
    return 1 if any(r.status == "error" for r in results) else 0


def validate_main(argv: list[str]) -> int:
    """Grade one notebook as the instructor's grader will, and print score and feedback."""
    from helpers.grading.report import feedback_markdown

    parser = argparse.ArgumentParser(
        prog="python -m helpers.grading validate",
        description=(
            "Grade your notebook exactly as the instructor's grader will (fresh sandboxed "
            "kernel, top to bottom, the same checks on fresh inputs) and print the score and "
            "the feedback. Run it before you submit."
        ),
    )
    parser.add_argument("notebook", type=Path, help="your NN_slug.ipynb")
    parser.add_argument("--lesson", default=None, help="lesson number (default: from the name)")
    parser.add_argument(
        "--gradescope-results", type=Path, default=None, help="also write results.json here"
    )
    _settings_arguments(parser)
    args = parser.parse_args(argv)
    match = re.match(r"(\d\d)_", args.notebook.name)
    lesson = args.lesson or (match.group(1) if match else None)
    if lesson is None:
        print(
            f"error: cannot tell the lesson from {args.notebook.name}: pass --lesson NN",
            file=sys.stderr,
        )
        return 2
    if not args.notebook.is_file():
        print(f"error: no notebook {args.notebook}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="validate-") as tmp:
        folder = Path(tmp) / "submissions" / "you"
        folder.mkdir(parents=True)
        shutil.copyfile(args.notebook, folder / args.notebook.name)
        settings = _settings(args, jobs=1, quiet=True, similarity=None, rerun=True)
        try:
            (res,) = grade(lesson, Path(tmp) / "submissions", Path(tmp) / "out", settings)
        except GradingError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    print(feedback_markdown(res))
    print(f"score: {res.score:g} / {res.max_score:g} ({res.status})")
    if args.gradescope_results is not None:
        args.gradescope_results.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(args.gradescope_results, json.dumps(gradescope_results(res), indent=1))
    return 0 if res.status != "error" else 1


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        from helpers.grading.bench import main as bench_main

        return bench_main(argv[1:])
    if argv[:1] == ["validate"]:
        return validate_main(argv[1:])
    return grade_main(argv)
