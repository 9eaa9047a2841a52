"""The grader's execution of a notebook, without the sandbox: timeouts, crashes, limits, tampering.

About 40 hostile submissions of the tiny lesson 98 are graded in one run
(``--jobs 2``, ``--no-sandbox``, so these tests also show what the grader
itself guarantees when the sandbox is off).
"""

from __future__ import annotations

import copy
import csv
import json
import re
from pathlib import Path

import nbformat
import psutil
import pytest
from grading_tools import (
    HOSTILE_LIMITS,
    LESSON_NAME,
    TARGETS,
    Graded,
    plant_mistake,
    probe_result,
    probe_source,
    put,
    tiny_solution,
    with_cell,
    with_function,
)

from helpers import notebooks as nbt
from helpers.grading import Limits, grade, submission
from helpers.grading.runner import GiB


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
        with_cell(sol, probe_source(tcp_server, {}, str(subs / "solution" / LESSON_NAME))),
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
        sandbox=False,
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
        sandbox=False,
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
