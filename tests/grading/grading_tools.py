"""Shared pieces of the grader tests: a tiny self-made lesson "98" and hostile-notebook builders.

The tiny lesson has no TensorFlow, so each kernel starts in about a second: its
solution notebook and exercises module are written to a temporary folder and
passed to the grader.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from helpers import notebooks as nbt
from helpers.grading import Limits
from helpers.grading.runner import GiB
from helpers.grading.submission import SubmissionGrade

ROOT = Path(__file__).resolve().parent.parent.parent
BWRAP = shutil.which("bwrap")
needs_bwrap = pytest.mark.skipif(
    BWRAP is None, reason="bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
)
LESSON_NAME = "98_tiny.ipynb"

EXERCISES_98 = '''
"""Exercises of the grader tests' tiny lesson 98 (no TensorFlow)."""
from helpers.exercises import CheckFailed, Exercise, register


def _int_cases(rng, workdir):
    return [{"x": int(v)} for v in rng.integers(-1000, 1000, size=4)]


def _double_verify(case, result):
    if result != 2 * case["x"]:
        raise CheckFailed(f"double({case['x']}) returned {result!r}, expected {2 * case['x']}")


def _text_cases(rng, workdir):
    words = ["alpha", "beta", "gamma", "delta"]
    return [{"text": " ".join(rng.choice(words, size=3).tolist())} for _ in range(3)]


def _shout_verify(case, result):
    if result != case["text"].upper() + "!":
        raise CheckFailed(f"shout({case['text']!r}) returned {result!r}")


def _list_cases(rng, workdir):
    return [{"values": [int(v) for v in rng.integers(0, 100, size=5)]} for _ in range(3)]


def _total_verify(case, result):
    if result != sum(case["values"]):
        raise CheckFailed(f"total({case['values']}) returned {result!r}")


for key, target, make, verify in [
    ("98.double", "double", _int_cases, _double_verify),
    ("98.shout", "shout", _text_cases, _shout_verify),
    ("98.total", "total", _list_cases, _total_verify),
]:
    register(Exercise(key=key, target=target, title=f"write {target}()", make_cases=make,
                      verify=verify, hint=f"look at what {target} should return"))
'''

TARGETS = {"98.double": "double", "98.shout": "shout", "98.total": "total"}


def _code(source: str, tags: list[str] | None = None):
    cell = nbformat.v4.new_code_cell(source)
    if tags:
        cell.metadata["tags"] = tags
    return cell


def tiny_solution():
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": dict(nbt.KERNELSPEC), "language_info": {"name": "python"}}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# 98 · Tiny\n\n## Overview\n\n## Setup"),
        _code('work_dir = "build/98"\nfactor = 2', ["parameters"]),
        _code(
            "import os\n"
            "import ex98  # registers the checks\n"
            "from helpers.exercises import check\n"
            "os.makedirs(work_dir, exist_ok=True)"
        ),
        nbformat.v4.new_markdown_cell("## Exercises"),
        _code(
            "def double(x):\n    ### BEGIN SOLUTION\n    return factor * x\n    ### END SOLUTION"
        ),
        _code('check("98.double")'),
        _code(
            'def shout(text):\n    ### BEGIN SOLUTION\n    return text.upper() + "!"\n'
            "    ### END SOLUTION\n\n\nshout('hi')"
        ),
        _code('check("98.shout")'),
        _code(
            "def total(values):\n    ### BEGIN SOLUTION\n    return sum(values)\n    ### END SOLUTION"
        ),
        _code('check("98.total")'),
    ]
    return nb


def plant_mistake(solution, target: str):
    """The solution with ``target``'s solution block replaced by ``return None``."""
    nb = copy.deepcopy(solution)
    for cell in nb.cells:
        if cell.cell_type != "code" or nbt.BEGIN not in cell.source:
            continue
        lines = cell.source.split("\n")
        defs = [i for i, ln in enumerate(lines) if re.match(rf"\s*def {target}\(", ln)]
        if not defs:
            continue
        begin = next(i for i in range(defs[0], len(lines)) if lines[i].strip() == nbt.BEGIN)
        end = next(i for i in range(begin, len(lines)) if lines[i].strip() == nbt.END)
        indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
        lines[begin : end + 1] = [f"{indent}return None  # planted mistake"]
        cell.source = "\n".join(lines)
        return nb
    raise AssertionError(f"no exercise cell defines {target}()")


def with_cell(nb, source: str, before: str = "## Exercises"):
    """A copy of ``nb`` with a code cell inserted before the markdown cell ``before``."""
    nb = copy.deepcopy(nb)
    at = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and before in c.source)
    nb.cells.insert(at, nbformat.v4.new_code_cell(source))
    return nb


def with_function(nb, target: str, source: str):
    """A copy of ``nb`` whose exercise cell for ``target`` is replaced by ``source``."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code" and re.search(rf"^def {target}\(", cell.source, re.M):
            cell.source = source
            return nb
    raise AssertionError(target)


def put(subs: Path, student: str, content, name: str = LESSON_NAME) -> Path:
    folder = subs / student
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content)
    else:
        content = copy.deepcopy(content)
        content.cells = [copy.deepcopy(c) for c in content.cells]
        for i, cell in enumerate(content.cells):  # duplicated cells keep valid, unique ids
            cell["id"] = f"t{i:03d}"
        nbformat.write(content, str(path))
    return path


class Graded:
    def __init__(self, results, output: Path, root: Path):
        self.by_student = {r.student: r for r in results}
        self.output = output
        self.root = root

    def __getitem__(self, student: str) -> SubmissionGrade:
        return self.by_student[student]

    def statuses(self, student: str) -> dict[str, str]:
        return {e.key: e.status for e in self[student].exercises}

    def executed(self, student: str):
        return json.loads(Path(self[student].executed).read_text())

    def notes(self, student: str) -> str:
        return "\n".join(self[student].notes)


def make_tiny_lesson(root: Path) -> tuple[Path, Path]:
    solutions = root / "solutions"
    solutions.mkdir(parents=True)
    nbformat.write(tiny_solution(), str(solutions / LESSON_NAME))
    exercises = root / "ex98.py"
    exercises.write_text(EXERCISES_98)
    return solutions, exercises


HOSTILE_LIMITS = Limits(
    timeout=90, cell_timeout=8, memory=1 * GiB, interrupt_grace=3, max_restarts=2
)


def probe_source(
    port: int, targets: dict[str, str], peek: str, reads: dict[str, str] | None = None
) -> str:
    """A cell that tries the network, writes to ``targets``, reads ``reads`` and prints PROBE{...}."""
    return f"""
import json, os, socket
res = {{}}
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=3).close()
    res["net"] = "connected"
except OSError as err:
    res["net"] = f"blocked: {{err}}"
for name, target in {targets!r}.items():
    try:
        with open(target, "w") as f:
            f.write("pwned")
        res[name] = "written"
    except OSError as err:
        res[name] = f"blocked: {{err}}"
for name, target in {reads or {}!r}.items():
    try:
        if os.path.isdir(target):
            res["read_" + name] = "listed: " + ",".join(sorted(os.listdir(target))[:5])
        else:
            with open(target, "rb") as f:
                res["read_" + name] = "read: " + repr(f.read(40))
    except OSError as err:
        res["read_" + name] = f"blocked: {{err}}"
res["peek"] = os.path.exists({peek!r})
with open("mine.txt", "w") as f:
    f.write("ok")
res["own"] = open("mine.txt").read()
print("PROBE" + json.dumps(res))
"""


def probe_result(graded: Graded, student: str) -> dict:
    for cell in graded.executed(student)["cells"]:
        for out in cell.get("outputs", []):
            text = out.get("text", "")
            text = "".join(text) if isinstance(text, list) else text
            if "PROBE" in text:
                return json.loads(text.split("PROBE", 1)[1])
    raise AssertionError("the probe cell printed nothing")
