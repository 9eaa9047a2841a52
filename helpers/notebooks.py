"""Notebook tooling: one formatter, the lesson generator and the course runner.

``solutions/NN_slug.ipynb`` is the source of truth. An exercise cell holds::

    def to_feature(value):
        ### BEGIN SOLUTION
        ...
        ### END SOLUTION

and the student copy in ``lessons/`` gets ``# YOUR CODE HERE`` +
``raise NotImplementedError()`` in its place, no outputs and no execution
counts. Exercise cells and the check cells after them (cells whose code
calls ``check(...)``) are tagged ``raises-exception`` in the student copy so
the blank lesson still runs top to bottom under papermill.

CLI::

    python -m helpers.notebooks lessons [--check]     # regenerate lessons/ (or fail if stale)
    python -m helpers.notebooks execute PATH...       # run a solution in place, keep outputs
    python -m helpers.notebooks format [PATH...]      # rewrite solutions with the formatter
    python -m helpers.notebooks course [--output build/course] [-p name value]...
    python -m helpers.notebooks install-kernel        # the course kernelspec, into sys.prefix

Every notebook names the course kernel (:data:`KERNEL_NAME`), which the
Makefile installs into ``.venv``: it sets the environment the course needs and
keeps native start-up chatter (TensorFlow's C++ log lines, written on file
descriptor 2) out of cell outputs: ``capture_fd_output=False`` leaves it on the
kernel process's stderr (the terminal of ``make lab``), where it belongs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
LESSONS = ROOT / "lessons"

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
STUB = ["# YOUR CODE HERE", "raise NotImplementedError()"]
EXERCISE_TAG = "exercise"
CHECK_TAG = "check"
_CHECK_CALL = re.compile(r"^\s*check\(", re.MULTILINE)

KERNEL_NAME = "tfrecord-course"
KERNELSPEC = {"display_name": "TFRecord course", "language": "python", "name": KERNEL_NAME}
#: What the course kernel sets (on top of the environment it is started from).
KERNEL_ENV = {
    "TF_CPP_MIN_LOG_LEVEL": "2",
    "TF_ENABLE_ONEDNN_OPTS": "0",
    "PYTHONHASHSEED": "0",
}
PROGRESS_CELL_TAG = "progress"
#: Solutions are never the learner's attempts: running them records no progress.
SOLUTION_RUN_ENV = {"TFRECORD_COURSE_PROGRESS": "off"}


def _source(cell: Any) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def is_exercise_cell(cell: Any) -> bool:
    """A code cell holding a ``### BEGIN SOLUTION`` block."""
    return cell.get("cell_type") == "code" and BEGIN in _source(cell)


def is_check_cell(cell: Any) -> bool:
    """A code cell that calls ``check(...)`` at the start of a line."""
    return cell.get("cell_type") == "code" and bool(_CHECK_CALL.search(_source(cell)))


def strip_solutions(source: str) -> str:
    """Replace every ``BEGIN/END SOLUTION`` block by the stub, keeping its indentation.

    Raises:
      ValueError: an unbalanced block (BEGIN without END or the reverse).
    """
    out: list[str] = []
    inside = False
    for line in source.split("\n"):
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise ValueError("nested ### BEGIN SOLUTION")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out.extend(indent + s for s in STUB)
        elif stripped == END:
            if not inside:
                raise ValueError("### END SOLUTION without BEGIN")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError("### BEGIN SOLUTION without END")
    return "\n".join(out)


def _tags(cell: Any) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _set_tags(cell: Any, tags: list[str]) -> None:
    tags = sorted(set(tags))
    if tags:
        cell.setdefault("metadata", {})["tags"] = tags
    else:
        cell.get("metadata", {}).pop("tags", None)


_TF_LOG_LINE = re.compile(
    r"^(WARNING: All log messages before absl::InitializeLog\(\).*"
    r"|[IWE]\d{4} [\d:. ]+\s+\d+ \S+:\d+\].*"
    r"|To enable the following instructions:.*)$"
)


def _clean_outputs(outputs: list[Any]) -> list[Any]:
    """Drop TensorFlow's C++ start-up lines from stderr (they differ every run) and join
    consecutive writes to the same stream, so a flush in mid-line leaves one block."""
    kept = []
    for out in outputs:
        if out.get("output_type") == "stream" and out.get("name") == "stderr":
            text = "".join(out.get("text", ""))
            lines = [
                ln
                for ln in text.splitlines(keepends=True)
                if not _TF_LOG_LINE.match(ln.rstrip("\n"))
            ]
            if not "".join(lines).strip():
                continue
            out["text"] = "".join(lines)
        previous = kept[-1] if kept else None
        if (
            previous is not None
            and out.get("output_type") == previous.get("output_type") == "stream"
            and out.get("name") == previous.get("name")
        ):
            previous["text"] = "".join(previous.get("text", "")) + "".join(out.get("text", ""))
            continue
        kept.append(out)
    return kept


def normalise(nb: Any, keep_outputs: bool) -> Any:
    """Stable metadata, ids and (for lessons) no outputs; tags exercise/check cells."""
    nb.metadata = {
        "kernelspec": dict(KERNELSPEC),
        "language_info": {"name": "python"},
    }
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"c{i:03d}"
        meta = cell.get("metadata", {})
        for key in ("execution", "collapsed", "scrolled", "jupyter", "ExecuteTime", "papermill"):
            meta.pop(key, None)
        cell["metadata"] = meta
        if cell.get("cell_type") != "code":
            continue
        tags = [t for t in _tags(cell) if t not in ("injected-parameters",)]
        if is_exercise_cell(cell):
            tags.append(EXERCISE_TAG)
        if is_check_cell(cell):
            # nbval still fails a check cell that raises; its pass line is HTML whose
            # wording may change without the check changing.
            tags.extend((CHECK_TAG, "nbval-ignore-output"))
        _set_tags(cell, tags)
        if not keep_outputs:
            cell["outputs"] = []
            cell["execution_count"] = None
        else:
            cell["outputs"] = _clean_outputs(cell.get("outputs", []))
            for out in cell["outputs"]:
                if out.get("output_type") == "execute_result":
                    out["execution_count"] = cell.get("execution_count")
                out.get("metadata", {}).pop("papermill", None)
    return nb


def format_notebook(nb: Any) -> str:
    """The one serialisation every notebook in the repo uses (sorted keys, indent 1)."""
    nbformat.validate(nb)
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def make_lesson(solution: Any) -> Any:
    """The student copy of a solution notebook.

    Args:
      solution: the solution notebook (nbformat node).

    Returns:
      A new notebook: solution blocks stubbed, no outputs, exercise and check
      cells tagged ``raises-exception`` (so papermill runs the blank lesson).
    """
    lesson = nbformat.from_dict(json.loads(json.dumps(solution)))
    for cell in lesson.cells:
        if cell.get("cell_type") != "code":
            continue
        exercise, checker = is_exercise_cell(cell), is_check_cell(cell)
        if exercise:
            cell["source"] = strip_solutions(_source(cell))
        tags = _tags(cell)
        if exercise or checker:
            tags.append("raises-exception")
        _set_tags(cell, tags)
    ensure_progress_cell(lesson)
    return normalise(lesson, keep_outputs=False)


def _lesson_number(nb: Any) -> str | None:
    for cell in nb.cells:
        match = re.search(r"check\(\s*[\"'](\d\d)\.", _source(cell))
        if cell.get("cell_type") == "code" and match:
            return match.group(1)
    return None


def ensure_progress_cell(nb: Any) -> bool:
    """Make the notebook end with a cell showing the lesson's progress (idempotent).

    Returns:
      Whether a cell was added (not when one is there already, or the notebook
      has no ``check(...)`` cells to know its lesson from).
    """
    if any(PROGRESS_CELL_TAG in _tags(c) for c in nb.cells):
        return False
    number = _lesson_number(nb)
    if number is None:
        return False
    cell = nbformat.v4.new_code_cell(
        "# Your progress in this lesson: run this cell again after your checks.\n"
        "from helpers.exercises import show_progress\n\n"
        f'show_progress("{number}")'
    )
    cell.metadata["tags"] = [PROGRESS_CELL_TAG]
    nb.cells.append(cell)
    return True


def read(path: Path) -> Any:
    return nbformat.read(str(path), as_version=4)


def write_lessons(check: bool = False) -> list[str]:
    """Regenerate ``lessons/`` from ``solutions/``.

    Args:
      check: do not write; report what is stale instead.

    Returns:
      The names of lessons that were (or, with ``check``, would be) rewritten
      or removed.
    """
    LESSONS.mkdir(exist_ok=True)
    changed = []
    wanted = set()
    for sol in sorted(SOLUTIONS.glob("[0-9][0-9]_*.ipynb")):
        wanted.add(sol.name)
        text = format_notebook(make_lesson(read(sol)))
        target = LESSONS / sol.name
        if not target.exists() or target.read_text() != text:
            changed.append(sol.name)
            if not check:
                target.write_text(text)
    for stale in sorted(LESSONS.glob("*.ipynb")):
        if stale.name not in wanted:
            changed.append(stale.name)
            if not check:
                stale.unlink()
    return changed


def format_solutions(paths: list[Path] | None = None) -> list[str]:
    """Rewrite solution notebooks with the formatter (outputs kept)."""
    changed = []
    for path in paths or sorted(SOLUTIONS.glob("*.ipynb")):
        text = format_notebook(normalise(read(path), keep_outputs=True))
        if path.read_text() != text:
            path.write_text(text)
            changed.append(path.name)
    return changed


def execute_solution(path: Path, timeout: int = 600) -> float:
    """Execute a solution notebook in place (outputs saved), format it, refresh its lesson.

    Args:
      path: ``solutions/NN_slug.ipynb``.
      timeout: per-cell timeout in seconds.

    Returns:
      Seconds taken. Raises ``nbclient.exceptions.CellExecutionError`` when a
      cell not tagged ``raises-exception`` fails.
    """
    from nbclient import NotebookClient

    nb = read(path)
    os.environ.update(SOLUTION_RUN_ENV)
    start = time.perf_counter()
    NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=KERNEL_NAME,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    seconds = time.perf_counter() - start
    path.write_text(format_notebook(normalise(nb, keep_outputs=True)))
    write_lessons()
    return seconds


# Printed by kernel start-up and shutdown on the process's stderr, never useful to a learner.
_KERNEL_NOISE = re.compile(
    r"^(\[IPKernelApp\] WARNING \| Kernel is running over TCP without encryption.*"
    r"|Task was destroyed but it is pending!"
    r"|task: <Task pending .*ipykernel.*)$"
)


@contextlib.contextmanager
def _quiet_kernel_stderr(log_path: Path) -> Any:
    """Route this process's stderr (and so the kernel's, which inherits it) to ``log_path``.

    TensorFlow's C++ start-up lines and Jupyter's TCP notice bypass Python and
    land on file descriptor 2 of the kernel process, so ``make course`` would
    print a dozen lines per lesson. They are kept in full in ``log_path``;
    anything else written there is echoed to the real stderr afterwards.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(log_path, "wb") as log:
            os.dup2(log.fileno(), 2)
            try:
                yield
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
    finally:
        os.close(saved)
    text = log_path.read_text(encoding="utf-8", errors="replace")
    kept = [
        ln
        for ln in text.splitlines()
        if ln.strip() and not _TF_LOG_LINE.match(ln) and not _KERNEL_NOISE.match(ln)
    ]
    if kept:
        sys.stderr.write("\n".join(kept) + "\n")
        sys.stderr.flush()


def run_notebook(
    source: Path, output: Path, parameters: dict[str, Any] | None = None, timeout: int = 600
) -> tuple[str, float, str]:
    """Execute one notebook with papermill.

    The kernel's process stderr goes to ``<output>.stderr.txt`` (see
    :func:`_quiet_kernel_stderr`).

    Returns:
      ``(status, seconds, detail)`` with status ``"ok"`` or ``"failed"``.
    """
    output.parent.mkdir(parents=True, exist_ok=True)
    with _quiet_kernel_stderr(output.with_suffix(".stderr.txt")):
        return _run_papermill(source, output, parameters, timeout)


def _run_papermill(
    source: Path, output: Path, parameters: dict[str, Any] | None, timeout: int
) -> tuple[str, float, str]:
    import papermill as pm

    start = time.perf_counter()
    try:
        pm.execute_notebook(
            str(source),
            str(output),
            parameters=parameters or {},
            kernel_name=KERNEL_NAME,
            cwd=str(source.parent),
            progress_bar=False,
            execution_timeout=timeout,
            log_output=False,
        )
        return "ok", time.perf_counter() - start, ""
    except Exception as err:  # noqa: BLE001 - a failing lesson is reported, the run goes on
        first = str(err).strip().splitlines()
        detail = next((ln for ln in reversed(first) if ln.strip()), type(err).__name__)
        return "failed", time.perf_counter() - start, detail[:200]


def run_course(
    output: Path,
    parameters: dict[str, Any] | None = None,
    pattern: str = "*",
    solutions: Path = SOLUTIONS,
) -> int:
    """Execute every solution notebook into ``output`` and print a table.

    Returns:
      The number of lessons that failed.
    """
    notebooks = sorted(Path(solutions).glob(f"[0-9][0-9]_{pattern}.ipynb"))
    os.environ.update(SOLUTION_RUN_ENV)
    if not notebooks:
        print("No lessons in solutions/ yet: nothing to run.")
        return 0
    rows = []
    for nb in notebooks:
        print(f"running {nb.name} ...", flush=True)
        status, seconds, detail = run_notebook(nb, output / nb.name, parameters)
        rows.append((nb.stem, status, seconds, detail))
    width = max(len(r[0]) for r in rows)
    print(f"\n{'lesson':<{width}}  status   seconds")
    for name, status, seconds, detail in rows:
        print(f"{name:<{width}}  {status:<7} {seconds:8.1f}  {detail}")
    failed = sum(r[1] != "ok" for r in rows)
    print(f"{len(rows) - failed} of {len(rows)} lessons ran; executed copies in {output}")
    return failed


def kernel_spec(python: str | None = None) -> dict[str, Any]:
    """The course kernel's ``kernel.json``."""
    return {
        "argv": [
            python or str(Path(sys.prefix).resolve() / "bin" / "python"),
            "-m",
            "ipykernel_launcher",
            "--IPKernelApp.capture_fd_output=False",
            "-f",
            "{connection_file}",
        ],
        "display_name": KERNELSPEC["display_name"],
        "language": "python",
        "env": dict(KERNEL_ENV),
        "metadata": {"debugger": True},
    }


def install_kernel(prefix: str | None = None) -> str:
    """Install the course kernelspec into ``prefix`` (default: this environment).

    Returns:
      The folder it was installed to.
    """
    import tempfile

    from jupyter_client.kernelspec import KernelSpecManager

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "kernel.json").write_text(json.dumps(kernel_spec(), indent=1) + "\n")
        return KernelSpecManager().install_kernel_spec(
            tmp, KERNEL_NAME, prefix=prefix or sys.prefix
        )


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.notebooks", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    les = sub.add_parser("lessons", help="regenerate lessons/ from solutions/")
    les.add_argument(
        "--check", action="store_true", help="fail (exit 1) if lessons/ is stale instead of writing"
    )
    exe = sub.add_parser(
        "execute", help="run solution notebooks in place, save outputs, refresh lessons"
    )
    exe.add_argument("paths", nargs="+", type=Path)
    fmt = sub.add_parser("format", help="rewrite solution notebooks with the formatter")
    fmt.add_argument("paths", nargs="*", type=Path)
    course = sub.add_parser(
        "course", help="execute every solution with papermill and print a table"
    )
    course.add_argument("--output", type=Path, default=ROOT / "build" / "course")
    course.add_argument(
        "-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE")
    )
    course.add_argument(
        "--lessons", default="*", help="glob on the slug, e.g. 'why*' (default: all)"
    )
    sub.add_parser("install-kernel", help="install the course kernelspec into this environment")
    args = parser.parse_args(argv)

    if args.command == "install-kernel":
        print(f"installed the {KERNELSPEC['display_name']!r} kernel in {install_kernel()}")
        return 0
    if args.command == "lessons":
        changed = write_lessons(check=args.check)
        if args.check:
            if changed:
                print(
                    "lessons/ is stale for: " + ", ".join(changed) + " (run `make lessons`)",
                    file=sys.stderr,
                )
                return 1
            print("lessons/ is up to date")
            return 0
        print("regenerated: " + (", ".join(changed) if changed else "nothing (up to date)"))
        return 0
    if args.command == "execute":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        for path in args.paths:
            print(f"{path.name}: executed in {execute_solution(path):.1f} s")
        return 0
    if args.command == "format":
        changed = format_solutions(args.paths or None)
        print("formatted: " + (", ".join(changed) if changed else "nothing to change"))
        return 0
    params = {name: _parse_value(value) for name, value in args.parameter}
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return 1 if run_course(args.output, params, args.lessons) else 0


if __name__ == "__main__":
    sys.exit(main())
