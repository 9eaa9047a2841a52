"""The instructor's grader: graded by data, partial credit, and hard to fool.

Hostile cases run on a tiny self-made lesson "98" (no TensorFlow, so each
kernel starts in about a second): its solution notebook and exercises module
are written to a temporary folder and passed to the grader. Every real lesson
in ``solutions/`` is then graded as a solution (full marks), as its blank
student copy (zero) and with planted mistakes (exactly those exercises fail,
and the feedback names them).
"""

from __future__ import annotations

import copy
import csv
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
from pathlib import Path

import nbformat
import psutil
import pytest

from helpers import notebooks as nbt
from helpers.grading import Limits, batch, grade, report, sandbox, submission
from helpers.grading.runner import GiB, describe_exit
from helpers.grading.submission import ExerciseGrade, SubmissionGrade

ROOT = Path(__file__).resolve().parent.parent
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


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[Path, Path]:
    """The tiny lesson's solutions folder and exercises module, shared by the fixtures."""
    return make_tiny_lesson(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    """One pool of two grading workers for the whole module (``--jobs 2``)."""
    with batch.worker_pool(2, tmp_path_factory.mktemp("pool") / "grader.log") as workers:
        yield workers


HOSTILE_LIMITS = Limits(
    timeout=90, cell_timeout=8, memory=1 * GiB, interrupt_grace=3, max_restarts=2
)


@pytest.fixture(scope="module")
def tcp_server():
    """A server on the host's loopback: reachable from a kernel unless it is sandboxed."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def _probe_source(port: int, targets: dict[str, str], peek: str) -> str:
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


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, tcp_server, tiny, pool):
    """Grade ~40 hostile submissions of the tiny lesson in one run (--jobs 2)."""
    root = tmp_path_factory.mktemp("hostile")
    solutions, exercises = tiny
    sol = tiny_solution()
    blank = nbt.make_lesson(sol)
    subs, out = root / "submissions", root / "out"
    fake_pass = (
        "print('✔ 98.double (write double()): passed on 4 fresh cases')\n"
        "print('✔ 98.shout: passed')\nprint('✔ 98.total: passed')\nprint('All tests passed!')"
    )
    put(subs, "solution", sol)
    put(subs, "blank", blank)
    for target in TARGETS.values():
        put(subs, f"planted_{target}", plant_mistake(sol, target))
    put(subs, "infinite_loop", with_cell(sol, "while True:\n    pass"))
    put(
        subs,
        "loop_in_function",
        with_function(sol, "double", "def double(x):\n    while True:\n        pass"),
    )
    put(
        subs,
        "ignores_interrupt",
        with_cell(
            sol,
            "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
        ),
    )
    put(subs, "os_exit", with_cell(sol, "import os\nos._exit(1)"))
    put(subs, "segfault", with_cell(sol, "import ctypes\nctypes.string_at(0)"))
    put(
        subs,
        "exit_in_function",
        with_function(sol, "double", "def double(x):\n    import os\n    os._exit(3)"),
    )
    put(
        subs,
        "sys_exit_in_function",
        with_function(sol, "shout", "def shout(text):\n    raise SystemExit(0)"),
    )
    put(subs, "sys_exit_blank", with_cell(blank, "import sys\n" + fake_pass + "\nsys.exit(0)"))
    sys_exits = with_cell(sol, "import sys\nsys.exit(0)")
    sys_exits = with_cell(sys_exits, "raise SystemExit")
    put(subs, "sys_exit_solution", with_cell(sys_exits, "exit()"))
    no_tb = with_cell(
        blank,
        "get_ipython().showtraceback = lambda *a, **k: None\n"
        "get_ipython().showsyntaxerror = lambda *a, **k: None\n" + fake_pass,
        before="# 98",
    )
    no_tb.cells.insert(1, nbformat.v4.new_code_cell("1 / 0  # fails silently"))
    put(subs, "no_traceback", no_tb)
    evil_kernel = copy.deepcopy(sol)
    evil_kernel.metadata["kernelspec"] = {
        "name": "no-such-kernel",
        "display_name": "Evil",
        "language": "python",
    }
    evil_kernel.metadata["language_info"] = {"name": "bash"}
    put(subs, "kernelspec", evil_kernel)
    retagged = copy.deepcopy(blank)
    for cell in retagged.cells:
        cell.metadata["tags"] = ["raises-exception", "injected-parameters", "exercise"]
        cell.metadata["grader"] = {"kind": "grading", "status": "ok"}
    retagged.cells += copy.deepcopy(retagged.cells[-2:])
    retagged.metadata["papermill"] = {"exception": None, "status": "completed"}
    put(subs, "retagged", retagged)
    shuffled = copy.deepcopy(sol)
    ex_cells = [c for c in shuffled.cells if nbt.is_exercise_cell(c)]
    shuffled.cells = ex_cells + shuffled.cells + ex_cells  # duplicated and moved up
    put(subs, "shuffled", shuffled)
    edited = copy.deepcopy(sol)
    edited.cells[1].source = 'work_dir = "build/98"\nfactor = 5'
    put(subs, "edited_params", edited)
    put(subs, "memory_bomb", with_cell(sol, "hog = b'x' * (3 << 30)"))
    put(
        subs,
        "memory_children",
        with_cell(
            sol,
            "import subprocess, sys, time\n"
            "hogs = [subprocess.Popen([sys.executable, '-c', "
            "'import time; x = b\"x\" * (600 << 20); time.sleep(60)']) for _ in range(3)]\n"
            "time.sleep(30)",
        ),
    )
    put(
        subs,
        "patched_check",
        with_cell(
            blank,
            "import helpers.exercises as e\n"
            "e.run_cases = lambda ex, f, cases: [{'ok': 0}] * len(cases)\n"
            "e.verify_answers = lambda *a, **k: (True, 'passed')\n"
            "e.check = check = lambda *a, **k: print('✔ passed')\n" + fake_pass,
        ),
    )
    put(
        subs,
        "forged_answers",
        with_cell(
            blank,
            "import helpers.exercises as e, json, pathlib\n"
            "def forged(key, cases_path, answers_path, namespace):\n"
            "    pathlib.Path(answers_path).write_text(json.dumps([{'ok': 42}] * 4))\n"
            "e.kernel_answer = forged",
        ),
    )
    put(
        subs,
        "huge_output",
        with_cell(
            with_cell(sol, "print('\\n'.join(map(str, range(300_000))))"),
            "for i in range(300_000):\n    print(i)",
        ),
    )
    put(subs, "fake_pass", with_cell(blank, fake_pass))
    put(
        subs,
        "html_js",
        with_cell(
            with_function(
                sol,
                "shout",
                "def shout(text):\n    raise ValueError(\"<script>alert('x')</script> ``` <b>\")",
            ),
            "from IPython.display import HTML, Javascript, display\n"
            "display(Javascript('alert(1)'))\n"
            "display(HTML('<img src=x onerror=alert(2)>'))",
        ),
    )
    put(subs, "<img src=x onerror=alert(3)>", sol)
    put(
        subs,
        "tf_noise",
        with_cell(
            sol,
            "import os, sys\n"
            "os.write(2, b'WARNING: All log messages before absl::InitializeLog() is called "
            "are written to STDERR\\n')\n"
            "os.write(2, b'I0000 00:00:1700000000.000000   1234 cpu_feature_guard.cc:210] "
            "oneDNN custom operations are on.\\n')\n"
            "sys.stderr.write('E0000 00:00:1700000000.1 1 cuda_platform.cc:52] failed call "
            "to cuInit\\n')",
        ),
    )
    put(
        subs,
        "writes_gradebook",
        with_cell(
            sol,
            f"import pathlib\np = pathlib.Path({str(out)!r})\n"
            "(p / 'feedback').mkdir(parents=True, exist_ok=True)\n"
            "(p / 'gradebook.csv').write_text('student,score\\nwrites_gradebook,100\\n')\n"
            "(p / 'feedback' / 'solution.md').write_text('you failed')",
        ),
    )
    put(
        subs,
        "leaves_processes",
        with_cell(
            sol, "import subprocess\nsubprocess.Popen(['sh', '-c', 'sleep 4242 & sleep 4243 &'])"
        ),
    )
    put(
        subs,
        "net_probe",
        with_cell(sol, _probe_source(tcp_server, {}, str(subs / "solution" / LESSON_NAME))),
    )
    put(subs, "empty", b"")
    put(subs, "bad_json", '{"cells": [')
    put(subs, "not_a_notebook", "[1, 2, 3]")
    put(subs, "latin1", b'{"cells": "\xe9"}')
    put(subs, "wrong_name", sol, name="my homework.ipynb")
    put(subs, "other_lesson", sol, name="97_other.ipynb")
    (subs / "nothing").mkdir()
    (subs / "symlinked").mkdir()
    (subs / "symlinked" / LESSON_NAME).symlink_to(subs / "solution" / LESSON_NAME)
    (subs / "stray.ipynb").write_text("{}")
    results = grade(
        "98",
        subs,
        out,
        solutions=solutions,
        exercises=str(exercises),
        limits=HOSTILE_LIMITS,
        jobs=2,
        seed=1234,
        quiet=True,
        pool=pool,
    )
    return Graded(results, out, root)


def test_solution_scores_full_marks(hostile):
    res = hostile["solution"]
    assert res.status == "ok" and res.score == res.max_score == 3, res
    assert all(e.status == "passed" for e in res.exercises)


def test_blank_lesson_scores_zero_with_hints(hostile):
    res = hostile["blank"]
    assert res.score == 0 and res.max_score == 3
    for ex in res.exercises:
        assert ex.status == "failed" and "not done yet" in ex.detail and ex.hint


@pytest.mark.parametrize("key", sorted(TARGETS))
def test_planted_mistake_fails_only_its_exercise(hostile, key):
    res = hostile[f"planted_{TARGETS[key]}"]
    assert res.score == 2
    failing = [e for e in res.exercises if e.status != "passed"]
    assert [e.key for e in failing] == [key]
    assert "returned None" in failing[0].detail
    md = (hostile.output / "feedback" / f"planted_{TARGETS[key]}.md").read_text()
    assert f"## ✘ {key}" in md and "| ✘ failed |" in md


def test_infinite_loop_is_interrupted_and_the_rest_is_graded(hostile):
    res = hostile["infinite_loop"]
    assert res.score == 3 and res.status == "timeout"
    assert "did not finish within 8 s and was interrupted" in hostile.notes("infinite_loop")


def test_hanging_function_costs_only_its_exercise(hostile):
    statuses = hostile.statuses("loop_in_function")
    assert statuses == {"98.double": "timeout", "98.shout": "passed", "98.total": "passed"}


def test_loop_ignoring_the_interrupt_is_killed_and_skipped(hostile):
    res = hostile["ignores_interrupt"]
    assert res.score == 3 and res.status == "crashed"
    notes = hostile.notes("ignores_interrupt")
    assert "ignored the interrupt" in notes and "restarted 1 time" in notes


@pytest.mark.parametrize(
    ("student", "reason"),
    [("os_exit", "exited with status 1"), ("segfault", "segmentation fault (SIGSEGV)")],
)
def test_dead_kernel_is_restarted_without_the_culprit(hostile, student, reason):
    res = hostile[student]
    assert res.status == "crashed" and res.score == 3
    assert reason in hostile.notes(student)
    cells = hostile.executed(student)["cells"]
    culprit = [c for c in cells if c["metadata"].get("grader", {}).get("status") == "died"]
    assert len(culprit) == 1 and reason in culprit[0]["metadata"]["grader"]["reason"]


def test_function_that_kills_the_kernel_costs_only_its_exercise(hostile):
    res = hostile["exit_in_function"]
    by_key = {e.key: e for e in res.exercises}
    assert res.score == 2 and by_key["98.double"].status == "crashed"
    assert "exited with status 3" in by_key["98.double"].detail


def test_sys_exit_in_a_function_scores_zero_for_it(hostile):
    by_key = {e.key: e for e in hostile["sys_exit_in_function"].exercises}
    assert by_key["98.shout"].status == "error" and "SystemExit" in by_key["98.shout"].detail
    assert by_key["98.double"].status == by_key["98.total"].status == "passed"


def test_sys_exit_and_fake_output_earn_nothing(hostile):
    assert hostile["sys_exit_blank"].score == 0
    assert "raised SystemExit" in hostile.notes("sys_exit_blank")


def test_sys_exit_does_not_stop_the_grader(hostile):
    """papermill would stop at sys.exit(0); the grader runs (and judges) every cell."""
    res = hostile["sys_exit_solution"]
    assert res.score == 3
    cells = [c for c in hostile.executed("sys_exit_solution")["cells"] if c["cell_type"] == "code"]
    assert all(c["metadata"]["grader"]["status"] != "not_run" for c in cells)


def test_hidden_tracebacks_do_not_hide_failures(hostile):
    res = hostile["no_traceback"]
    assert res.score == 0
    cells = hostile.executed("no_traceback")["cells"]
    silent = next(c for c in cells if c["source"].startswith("1 / 0"))
    assert not [o for o in silent["outputs"] if o["output_type"] == "error"]  # nothing shown...
    assert silent["metadata"]["grader"]["status"] == "error"  # ...but the reply said error
    assert silent["metadata"]["grader"]["ename"] == "ZeroDivisionError"


def test_edited_kernelspec_is_ignored(hostile):
    res = hostile["kernelspec"]
    assert res.status == "ok" and res.score == 3
    assert hostile.executed("kernelspec")["metadata"]["kernelspec"]["name"] == "python3"


def test_retagged_and_duplicated_cells_earn_nothing(hostile):
    assert hostile["retagged"].score == 0
    assert hostile["shuffled"].score == 3


def test_lesson_parameters_are_injected_by_papermill(hostile):
    assert hostile["edited_params"].score == 3  # the student's factor = 5 is overridden
    cells = hostile.executed("edited_params")["cells"]
    injected = [c for c in cells if "injected-parameters" in c["metadata"].get("tags", [])]
    assert len(injected) == 1 and "factor = 2" in injected[0]["source"]
    assert cells.index(injected[0]) == 2  # right after the student's parameters cell


def test_memory_bomb_gets_a_memory_error(hostile):
    res = hostile["memory_bomb"]
    assert res.score == 3
    assert "ran out of memory (limit 1.0 GiB)" in hostile.notes("memory_bomb")


def test_memory_watchdog_kills_a_tree_over_the_limit(hostile):
    res = hostile["memory_children"]
    assert res.score == 3 and res.status == "crashed"
    assert "GiB limit" in hostile.notes("memory_children")


@pytest.mark.parametrize("student", ["patched_check", "forged_answers", "fake_pass", "retagged"])
def test_tampering_earns_nothing(hostile, student):
    res = hostile[student]
    assert res.score == 0
    assert not any(e.status == "passed" for e in res.exercises)


def test_huge_output_is_capped(hostile):
    res = hostile["huge_output"]
    assert res.score == 3
    size = Path(res.executed).stat().st_size
    assert size < 200_000, size
    text = Path(res.executed).read_text()
    assert "[grader] output truncated" in text
    assert "output truncated" in hostile.notes("huge_output")


def test_html_and_js_are_escaped_in_feedback_and_dropped_from_notebooks(hostile):
    by_key = {e.key: e for e in hostile["html_js"].exercises}
    assert by_key["98.shout"].status == "failed" and "<script>" in by_key["98.shout"].detail
    page = (hostile.output / "feedback" / "html_js.html").read_text()
    assert "<script" not in page and "&lt;script&gt;" in page
    assert "Content-Security-Policy" in page
    md = (hostile.output / "feedback" / "html_js.md").read_text()
    fence = re.search(r"^(`{4,})text\n.*<script>.*\n\1$", md, re.M | re.S)
    assert fence, "the detail holding ``` must sit in a longer fence"
    outputs = json.dumps([c.get("outputs") for c in hostile.executed("html_js")["cells"]])
    assert "application/javascript" not in outputs and "onerror" not in outputs


def test_student_names_are_escaped(hostile):
    name = "<img src=x onerror=alert(3)>"
    assert hostile[name].score == 3
    page = (hostile.output / "feedback" / f"{submission.safe_name(name)}.html").read_text()
    assert "<img" not in page and "&lt;img src=x onerror=alert(3)&gt;" in page


def test_tensorflow_stderr_noise_changes_nothing(hostile):
    res = hostile["tf_noise"]
    assert res.status == "ok" and res.score == 3 and not res.notes
    outputs = json.dumps([c.get("outputs") for c in hostile.executed("tf_noise")["cells"]])
    assert "oneDNN" not in outputs and "cuInit" not in outputs


def test_gradebook_cannot_be_written_by_a_submission(hostile):
    rows = list(csv.DictReader((hostile.output / "gradebook.csv").open()))
    assert list(rows[0]) == [
        "student",
        "lesson",
        "exercise",
        "score",
        "max_score",
        "status",
        "detail",
    ]
    mine = [r for r in rows if r["student"] == "writes_gradebook"]
    assert len(mine) == 3 and {r["score"] for r in mine} == {"1"}
    solution_md = (hostile.output / "feedback" / "solution.md").read_text()
    assert "Score: 3 / 3" in solution_md
    assert len({r["student"] for r in rows}) == len(hostile.by_student)


def test_no_processes_are_left_behind(hostile):
    assert hostile["leaves_processes"].score == 3
    leftovers = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if cmd[:1] == ["sleep"] and cmd[1:2] in (["4242"], ["4243"]):
            leftovers.append(proc.pid)
    assert not leftovers


def test_without_sandbox_the_network_and_other_submissions_are_reachable(hostile):
    probe = probe_result(hostile, "net_probe")
    assert probe["net"] == "connected" and probe["peek"] is True
    assert hostile["net_probe"].score == 3


@pytest.mark.parametrize(
    ("student", "words"),
    [
        ("empty", "empty (0 bytes)"),
        ("bad_json", "not valid JSON"),
        ("not_a_notebook", "not a Jupyter notebook"),
        ("latin1", "not UTF-8"),
        ("symlinked", "symbolic link"),
    ],
)
def test_unreadable_notebooks_are_reported(hostile, student, words):
    res = hostile[student]
    assert res.status == "invalid" and res.score == 0
    assert all(e.status == "invalid" and words in e.detail for e in res.exercises)


def test_wrong_file_name_is_graded_with_a_note(hostile):
    res = hostile["wrong_name"]
    assert res.score == 3 and "wrong file name" in hostile.notes("wrong_name")


@pytest.mark.parametrize("student", ["nothing", "other_lesson"])
def test_missing_notebook_is_reported(hostile, student):
    res = hostile[student]
    assert res.status == "missing" and res.score == 0
    assert "no 98_tiny.ipynb" in hostile.notes(student)


def test_stray_files_are_not_students(hostile):
    assert "stray.ipynb" not in hostile.by_student


def test_summary_and_settings_are_written(hostile):
    rows = {r["student"]: r for r in csv.DictReader((hostile.output / "summary.csv").open())}
    assert rows["solution"]["score"] == "3" and rows["os_exit"]["status"] == "crashed"
    settings = json.loads((hostile.output / "grading.json").read_text())
    assert settings["parameters"] == {"work_dir": "build/98", "factor": 2}
    assert settings["seeds"]["solution"] != settings["seeds"]["blank"]


# ---------------------------------------------------------------------------
# Tight limits, CLI parameters, and the sandbox
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tight(tmp_path_factory, tiny, pool):
    """A 7 s notebook limit, and -p factor 3 (which makes the solution's double() wrong)."""
    root = tmp_path_factory.mktemp("tight")
    solutions, exercises = tiny
    sol = tiny_solution()
    subs, out = root / "submissions", root / "out"
    put(subs, "solution", sol)
    slow = with_cell(sol, "import time\ntime.sleep(4)")
    put(subs, "slow", with_cell(slow, "import time\ntime.sleep(4)"))
    limits = Limits(timeout=7, cell_timeout=5, memory=1 * GiB, interrupt_grace=3)
    results = grade(
        98,
        subs,
        out,
        solutions=solutions,
        exercises=str(exercises),
        limits=limits,
        jobs=2,
        parameters={"factor": 3},
        quiet=True,
        pool=pool,
    )
    return Graded(results, out, root)


def test_command_line_parameters_override_the_lessons(tight):
    assert tight.statuses("solution") == {
        "98.double": "failed",
        "98.shout": "passed",
        "98.total": "passed",
    }


def test_notebook_time_limit_stops_the_student_cells(tight):
    res = tight["slow"]
    assert res.status == "timeout" and res.score == 0
    notes = tight.notes("slow")
    assert "time limit ran out" in notes and "never ran" in notes


@pytest.fixture(scope="module")
def sandboxed(tmp_path_factory, tcp_server, tiny, pool):
    if BWRAP is None:
        pytest.skip("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
    root = tmp_path_factory.mktemp("sandbox")
    solutions, exercises = tiny
    sol = tiny_solution()
    subs, out = root / "submissions", root / "out"
    victim = put(subs, "victim", sol)
    targets = {
        "victim": str(victim.parent / "pwned.txt"),
        "gradebook": str(out / "gradebook.csv"),
        "outside": str(root / "outside.txt"),
        "repo": str(ROOT / "pwned-by-a-student.txt"),
        "home": str(Path.home() / "pwned-by-a-student.txt"),
    }
    put(subs, "probe", with_cell(sol, _probe_source(tcp_server, targets, str(victim))))
    results = grade(
        "98",
        subs,
        out,
        solutions=solutions,
        exercises=str(exercises),
        limits=HOSTILE_LIMITS,
        jobs=2,
        sandbox=True,
        quiet=True,
        pool=pool,
    )
    return Graded(results, out, root), targets


@needs_bwrap
def test_sandbox_grades_normally(sandboxed):
    graded, _ = sandboxed
    assert graded["victim"].score == 3 and graded["probe"].score == 3


@needs_bwrap
def test_sandbox_blocks_network_writes_and_other_submissions(sandboxed):
    graded, targets = sandboxed
    probe = probe_result(graded, "probe")
    assert probe["net"].startswith("blocked"), probe
    for name, path in targets.items():  # writes fail, or land in a throw-away tmpfs
        assert not Path(path).exists() or "pwned" not in Path(path).read_text(), (name, probe)
    for name in ("repo", "home"):
        assert "Read-only file system" in probe[name], probe
    assert probe["peek"] is False and probe["own"] == "ok"


def test_sandbox_without_bubblewrap_fails_clearly(tmp_path, monkeypatch, capsys):
    solutions, exercises = make_tiny_lesson(tmp_path)
    (tmp_path / "subs").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    argv = ["--lesson", "98", "--submissions", str(tmp_path / "subs"), "--output"]
    argv += [str(tmp_path / "out"), "--solutions", str(solutions), "--exercises", str(exercises)]
    assert batch.main([*argv, "--sandbox"]) == 2
    err = capsys.readouterr().err
    assert "bubblewrap" in err and "apt-get install bubblewrap" in err


def test_cli_reports_unknown_lessons_and_folders(tmp_path, capsys):
    (tmp_path / "subs").mkdir()
    argv = ["--submissions", str(tmp_path / "subs"), "--output", str(tmp_path / "out")]
    assert batch.main(["--lesson", "97", *argv, "--solutions", str(tmp_path)]) == 2
    assert "no solution notebook for lesson 97" in capsys.readouterr().err
    argv[1] = str(tmp_path / "nope")
    assert batch.main(["--lesson", "97", *argv]) == 2
    assert "no submissions folder" in capsys.readouterr().err


def test_cli_help_documents_the_contract(capsys):
    with pytest.raises(SystemExit):
        batch.main(["--help"])
    text = capsys.readouterr().out
    for flag in ("--lesson", "--submissions", "--output", "--timeout", "--jobs", "--sandbox"):
        assert flag in text


# ---------------------------------------------------------------------------
# Pieces, without kernels
# ---------------------------------------------------------------------------


def test_read_submission_takes_only_cell_sources(tmp_path):
    nb = tiny_solution()
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", name="stdout", text="✔ passed")]
    nb.cells[2].metadata["tags"] = ["raises-exception"]
    path = put(tmp_path, "s", nb)
    cells, notes = submission.read_submission(path)
    assert [c.source for c in cells] == [c.source for c in nb.cells] and not notes
    assert [c.parameters for c in cells] == [False, True] + [False] * 8


def test_read_submission_survives_odd_cells(tmp_path):
    data = {"cells": [{"cell_type": "code", "source": ["a = ", "1"]}, 7, {"cell_type": "x"}]}
    path = put(tmp_path, "s", json.dumps(data))
    cells, notes = submission.read_submission(path)
    assert [c.source for c in cells] == ["a = 1"] and "2 malformed" in notes[0]


def test_find_submission_prefers_the_exact_name(tmp_path):
    folder = tmp_path / "s"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "98_tiny (1).ipynb").write_text("{}")
    assert submission.find_submission(folder, LESSON_NAME, "98")[1][0].startswith("wrong file")
    (folder / LESSON_NAME).write_text("{}")
    assert submission.find_submission(folder, LESSON_NAME, "98") == (folder / LESSON_NAME, [])


def test_feedback_fences_outgrow_backticks():
    res = SubmissionGrade("s", "98", "n", "ok")
    res.exercises = [ExerciseGrade("98.x", "t", 0, 1, "failed", "a ```` b <script>", "h")]
    md = report.feedback_markdown(res)
    assert "`````text\na ```` b <script>\n`````" in md


def test_gradebook_neutralises_formulas(tmp_path):
    res = SubmissionGrade("=cmd()", "98", "n", "ok")
    res.exercises = [ExerciseGrade("98.x", "t", 0, 1, "failed", "-1+1", "h")]
    report.write_gradebook([res], tmp_path / "g.csv")
    row = list(csv.DictReader((tmp_path / "g.csv").open()))[0]
    assert row["student"] == "'=cmd()" and row["detail"].startswith("'-1+1")


def test_parse_size():
    assert batch.parse_size("4G") == 4 << 30
    assert batch.parse_size("1500M") == 1500 << 20
    assert batch.parse_size("2GiB") == 2 << 30
    assert batch.parse_size("1024") == 1024


def test_describe_exit():
    assert "segmentation fault" in describe_exit(-11, sandboxed=False)
    assert "segmentation fault" in describe_exit(139, sandboxed=True)
    assert "status 1" in describe_exit(1, sandboxed=False)


def test_bwrap_command_hides_and_isolates(tmp_path):
    work = tmp_path / "w"
    (work / "work").mkdir(parents=True)
    hidden = tmp_path / "submissions"
    hidden.mkdir()
    args = sandbox.bwrap_prefix("bwrap", work, work / "work", hide=[hidden])
    joined = " ".join(args)
    for flag in ("--unshare-net", "--unshare-pid", "--cap-drop ALL", "--die-with-parent"):
        assert flag in joined
    assert f"--tmpfs {hidden}" in joined and f"--bind {work} {work}" in joined
    assert args.index(f"{hidden}") < args.index(str(work))  # the workdir is bound on top
    assert "--ro-bind / /" in joined and args[-1] == "--"


def test_bwrap_binds_a_course_that_lives_under_tmp_back_before_hiding(
    tmp_path, monkeypatch, request
):
    # a CI clone in /tmp/clean: the tmpfs on /tmp must not hide the repo or its .venv,
    # while folders inside the repo (solutions/, submissions/) stay hidden on top
    scratch = Path(tempfile.mkdtemp(dir="/tmp"))  # under /tmp whatever TMPDIR says
    request.addfinalizer(lambda: shutil.rmtree(scratch, ignore_errors=True))
    course = scratch / "clean"
    (course / "solutions").mkdir(parents=True)
    monkeypatch.setattr(sandbox, "ROOT", course)
    work = tmp_path / "w"
    (work / "work").mkdir(parents=True)
    args = sandbox.bwrap_prefix("bwrap", work, work / "work", hide=[course / "solutions"])
    joined = " ".join(args)
    assert f"--ro-bind {course} {course}" in joined
    tmpfs_tmp = joined.index("--tmpfs /tmp ")
    rebind = joined.index(f"--ro-bind {course} {course}")
    hidden = joined.index(f"--tmpfs {course / 'solutions'}")
    assert tmpfs_tmp < rebind < hidden < joined.index(f"--bind {work} {work}")


def test_kernel_environment_drops_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "hunter2")
    env = sandbox.kernel_env(tmp_path)
    assert "AWS_SECRET_ACCESS_KEY" not in env and env["HOME"] == str(tmp_path / "home")
    assert env["TFRECORD_COURSE_NO_PROGRESS"] == "1"


# ---------------------------------------------------------------------------
# Every real lesson
# ---------------------------------------------------------------------------


def _real_lessons() -> list[str]:
    from helpers.exercises import lessons

    have = set(lessons())
    found = []
    for path in sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb")):
        if path.name[:2] in have:
            found.append(path.name[:2])
    return found


REAL_LESSONS = _real_lessons()


def _plant_groups(exercises: list) -> list[list]:
    """Which exercises get a planted mistake together, one submission per group.

    Default: two submissions (every other exercise), so each planted mistake
    is seen failing while the rest pass, at the cost of two lesson runs. Set
    GRADING_TESTS_PLANT=each for one submission per exercise.
    """
    if os.environ.get("GRADING_TESTS_PLANT") == "each" or len(exercises) < 2:
        return [[ex] for ex in exercises]
    return [exercises[0::2], exercises[1::2]]


@pytest.fixture(scope="module", params=REAL_LESSONS)
def real_lesson(request, tmp_path_factory, pool):
    lesson = request.param
    solution_path = next((ROOT / "solutions").glob(f"{lesson}_*.ipynb"))
    solution = nbt.read(solution_path)
    exercises = submission.load_exercises(lesson)
    root = tmp_path_factory.mktemp(f"lesson{lesson}")
    subs, out = root / "submissions", root / "out"
    put(subs, "solution", solution, name=solution_path.name)
    put(subs, "blank", nbt.make_lesson(solution), name=solution_path.name)
    groups = _plant_groups(exercises)
    planted = {}
    for n, group in enumerate(groups):
        nb = solution
        for ex in group:
            nb = plant_mistake(nb, ex.target)
        put(subs, f"planted{n}", nb, name=solution_path.name)
        planted[f"planted{n}"] = {ex.key for ex in group}
    # like an instructor with little time: one training epoch instead of the lesson's default
    params = {"epochs": 1} if "epochs" in submission.solution_parameters(solution) else {}
    results = grade(lesson, subs, out, jobs=2, pool=pool, quiet=True, seed=7, parameters=params)
    return Graded(results, out, root), exercises, planted


@pytest.mark.slow
def test_real_lesson_solution_scores_full_marks(real_lesson):
    graded, exercises, _ = real_lesson
    res = graded["solution"]
    failing = {e.key: e.detail for e in res.exercises if e.status != "passed"}
    assert not failing and res.score == res.max_score == sum(e.points for e in exercises)


@pytest.mark.slow
def test_real_lesson_blank_copy_scores_zero(real_lesson):
    graded, exercises, _ = real_lesson
    res = graded["blank"]
    assert res.score == 0 and len(res.exercises) == len(exercises)
    assert not any(e.status == "passed" for e in res.exercises)


@pytest.mark.slow
def test_real_lesson_planted_mistakes_score_partial_and_are_named(real_lesson):
    graded, exercises, planted = real_lesson
    for student, keys in planted.items():
        res = graded[student]
        failing = {e.key for e in res.exercises if e.status != "passed"}
        assert failing == keys, (student, {e.key: e.detail for e in res.exercises})
        if len(exercises) > 1:
            assert 0 < res.score < res.max_score
        md = (graded.output / "feedback" / f"{student}.md").read_text().replace("\\", "")
        for key in keys:
            assert re.search(rf"## ✘ {re.escape(key)}", md), key
        for key in {e.key for e in exercises} - keys:
            assert re.search(rf"## ✔ {re.escape(key)}", md), key


def test_real_lessons_are_found():
    assert sys.platform != "win32"
    if (ROOT / "solutions").is_dir() and any((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb")):
        assert REAL_LESSONS, "solutions exist but none has an exercises module"


def test_student_folders_get_distinct_feedback_files(tmp_path):
    subs = tmp_path / "subs"
    for name in ("a b", "a_b", "A_B"):
        (subs / name).mkdir(parents=True)
    sol = tmp_path / LESSON_NAME
    jobs, warnings = batch.plan_jobs(
        "98",
        subs,
        sol,
        workroot=tmp_path / "w",
        executed_dir=tmp_path / "x",
        limits=Limits(),
        parameters={},
        exercises_ref=None,
        bwrap=None,
        hide=[],
        seed=1,
        keep_workdirs=False,
    )
    assert len({j.slug.lower() for j in jobs}) == 3 and not warnings
    assert all(j.notebook is None and "no 98_tiny.ipynb" in j.missing_reason for j in jobs)


def test_kernel_that_cannot_start_is_a_grader_error(tmp_path, tiny):
    solutions, exercises = tiny
    path = put(tmp_path / "subs", "s", tiny_solution())
    job = submission.Job(
        student="s",
        lesson="98",
        notebook=str(path),
        expected_name=LESSON_NAME,
        solution=str(solutions / LESSON_NAME),
        workdir=str(tmp_path / "w"),
        executed_dir=str(tmp_path / "x"),
        seed=3,
        exercises_ref=str(exercises),
        bwrap="/bin/false",  # a "sandbox" that never starts the kernel
    )
    res = submission.grade_submission(job)
    assert res.status == "error" and res.score == 0
    assert "could not start" in "\n".join(res.notes)
    assert all(e.status == "not_run" for e in res.exercises)
