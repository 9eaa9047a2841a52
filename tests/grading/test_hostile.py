"""Submissions that attack the grader itself (issue: sandbox escapes and aborted runs).

Each builds the hostile notebook, grades it for real next to a classmate's
correct notebook, and shows the attack gains no points, harms neither the
classmate nor the instructor, and does not abort the run.
"""

from __future__ import annotations

import csv
import json
import os
import time
from pathlib import Path

import psutil
import pytest
from grading_tools import (
    BWRAP,
    HOSTILE_LIMITS,
    Graded,
    put,
    tiny_solution,
    with_cell,
    with_function,
)

from helpers.grading import grade

CANARY = "SECRET-CANARY-1234"


def log_swap_source(victim: Path) -> str:
    """Replace the kernel's log (its stdout) by a link to ``victim``, then crash."""
    return (
        "import os\n"
        "log = os.readlink('/proc/self/fd/1')\n"
        "try:\n"
        "    os.unlink(log)\n"
        f"    os.symlink({str(victim)!r}, log)\n"
        "    print('SWAPPED', log)\n"
        "except OSError as err:\n"
        "    print('NOSWAP', err)\n"
        "os._exit(1)"
    )


def answers_swap_source(victim: Path) -> str:
    """A thread that swaps ``answers/`` for a link to ``victim`` as soon as the grader makes it."""
    return (
        "import os, threading, time\n"
        "def _swap():\n"
        "    for _ in range(20000):\n"
        "        if os.path.isdir('../answers') and not os.path.islink('../answers'):\n"
        "            try:\n"
        "                os.rename('../answers', '../answers-moved')\n"
        f"                os.symlink({str(victim)!r}, '../answers')\n"
        "            except OSError:\n"
        "                pass\n"
        "            return\n"
        "        time.sleep(0.002)\n"
        "threading.Thread(target=_swap, daemon=True).start()"
    )


DEEP_TREE = (
    "import os\n"
    "here = os.getcwd()\n"
    "for _ in range(3000):\n"
    "    os.mkdir('d')\n"
    "    os.chdir('d')\n"
    "os.chdir(here)"
)
BOMB = (
    "import os, shutil\n"
    "sleep = shutil.which('sleep')\n"
    "n = 0\n"
    "for _ in range(5000):\n"
    "    try:\n"
    "        pid = os.fork()\n"
    "    except OSError:\n"
    "        break\n"
    "    if pid == 0:\n"
    "        quiet = os.open(os.devnull, os.O_RDWR)\n"
    "        os.dup2(quiet, 1)\n"
    "        os.dup2(quiet, 2)\n"
    "        os.execv(sleep, ['sleep', '4711'])\n"
    "    n += 1\n"
    "print(n)"
)
FORK_BOMB = (
    "import subprocess, sys\n"
    f"out = subprocess.run([sys.executable, '-c', {BOMB!r}], capture_output=True, text=True)\n"
    "print('FORKED', out.stdout.strip() or -1, flush=True)"
)


def forged_answer_source(key: str, answer: str) -> str:
    """Replace the kernel side of grading: write ``answer`` (a JSON expression) for ``key``."""
    return (
        "import base64, io, json\n"
        "import numpy as np\n"
        "import helpers.exercises as _e\n"
        "_real = _e.kernel_answer\n"
        "def _forged(key, cases_path, answers_path, namespace):\n"
        f"    if key != {key!r}:\n"
        "        return _real(key, cases_path, answers_path, namespace)\n"
        "    n = len(json.load(open(cases_path))[key])\n"
        f"    answer = {answer}\n"
        "    with open(answers_path, 'w') as f:\n"
        "        f.write(json.dumps([{'ok': answer}] * n))\n"
        "_e.kernel_answer = _forged"
    )


ZERO_ITEMSIZE = (
    "(lambda b: (np.lib.format.write_array_header_1_0(b, {'descr': '|V0', "
    "'fortran_order': False, 'shape': (10**12,)}), "
    "{'__ndarray__': base64.b64encode(b.getvalue()).decode()})[1])(io.BytesIO())"
)
DISK_FILL = (
    "block = b'x' * (20 << 20)\n"
    "for i in range(100):\n"
    "    with open(f'fill{i}', 'wb') as f:\n"
    "        f.write(block)"
)
MARKUP = (
    "from IPython.display import HTML, SVG, Markdown, display\n"
    "display(HTML('<svg onload=alert(1)></svg><img src=x onerror=alert(2)><script>alert(3)</script>'))\n"
    'display(SVG(\'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(4)"></svg>\'))\n'
    "display(Markdown('[click](javascript:alert(5))'))\n"
    "print('plain text stays')"
)
MARKUP_MD = "<script>alert(6)</script> <img src=x onerror=alert(7)> [x](javascript:alert(8))"


def _markup_notebook(sol):
    import nbformat

    nb = with_cell(sol, MARKUP)
    nb.cells.insert(1, nbformat.v4.new_markdown_cell(MARKUP_MD))
    return nb


def _grade(root: Path, tiny, pool, subs: Path, **options) -> Graded:
    solutions, exercises = tiny
    out = root / "out"
    results = grade(
        "98",
        subs,
        out,
        solutions=solutions,
        exercises=str(exercises),
        jobs=2,
        seed=99,
        quiet=True,
        pool=pool,
        **options,
    )
    return Graded(results, out, root)


def _victims(root: Path) -> tuple[Path, Path]:
    victim_file = root / "instructor.pth"
    victim_file.write_text(f"# {CANARY}\n")
    victim_dir = root / "victim-dir"
    victim_dir.mkdir()
    (victim_dir / "keepme.txt").write_text("keep")
    (victim_dir / "98.double.json").write_text(json.dumps([{"ok": 0}] * 4))
    return victim_file, victim_dir


@pytest.fixture(scope="module")
def attacks(tmp_path_factory, tiny, pool):
    """The attacks, sandboxed (the default), in one run with classmates."""
    if BWRAP is None:
        pytest.skip("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
    root = tmp_path_factory.mktemp("attacks")
    victim_file, victim_dir = _victims(root)
    sol = tiny_solution()
    subs = root / "submissions"
    started = time.time()
    put(subs, "classmate_a", sol)
    put(subs, "log_swap", with_cell(sol, log_swap_source(victim_file)))
    put(subs, "answers_swap", with_cell(sol, answers_swap_source(victim_dir)))
    put(subs, "deep_tree", with_cell(sol, DEEP_TREE))
    os.makedirs(os.fsencode(subs) + b"/caf\xe9")  # not UTF-8
    put(subs, os.fsdecode(b"caf\xe9"), sol)
    put(subs, "zero_itemsize", with_cell(sol, forged_answer_source("98.double", ZERO_ITEMSIZE)))
    put(subs, "huge_string", with_cell(sol, forged_answer_source("98.shout", "'x' * (40 << 20)")))
    put(subs, "nan", with_function(sol, "total", "def total(values):\n    return float('nan')"))
    put(subs, "fork_bomb", with_cell(sol, FORK_BOMB))
    put(subs, "disk_fill", with_cell(sol, DISK_FILL))
    put(subs, "markup", _markup_notebook(sol))
    put(subs, "classmate_z", sol)
    limits = HOSTILE_LIMITS.__class__(**{**HOSTILE_LIMITS.__dict__, "disk": 300 << 20})
    graded = _grade(root, tiny, pool, subs, limits=limits)
    return graded, victim_file, victim_dir, started


@pytest.fixture(scope="module")
def unsandboxed_attacks(tmp_path_factory, tiny, pool):
    """The file attacks again with --no-sandbox: the grader's own handling must hold too."""
    root = tmp_path_factory.mktemp("attacks-nosandbox")
    victim_file, victim_dir = _victims(root)
    sol = tiny_solution()
    subs = root / "submissions"
    put(subs, "classmate_a", sol)
    put(subs, "log_swap", with_cell(sol, log_swap_source(victim_file)))
    put(subs, "answers_swap", with_cell(sol, answers_swap_source(victim_dir)))
    put(subs, "classmate_z", sol)
    return (
        _grade(root, tiny, pool, subs, limits=HOSTILE_LIMITS, sandbox=False),
        victim_file,
        victim_dir,
    )


def _all_text(graded: Graded) -> str:
    parts = [p.read_text(errors="replace") for p in graded.output.rglob("*") if p.is_file()]
    return "\n".join(parts)


@pytest.mark.parametrize("which", ["attacks", "unsandboxed_attacks"])
def test_swapped_kernel_log_is_never_reopened(request, which):
    graded, victim_file, _, *_ = request.getfixturevalue(which)
    assert victim_file.read_text() == f"# {CANARY}\n"  # nothing appended to the instructor's file
    assert graded["log_swap"].score == 3 and graded["log_swap"].status == "crashed"
    assert graded["classmate_a"].score == graded["classmate_z"].score == 3
    assert CANARY not in _all_text(graded)  # and nothing of it read into the outputs


@pytest.mark.parametrize("which", ["attacks", "unsandboxed_attacks"])
def test_swapped_answers_folder_is_neither_read_nor_emptied(request, which):
    graded, _, victim_dir, *_ = request.getfixturevalue(which)
    assert (victim_dir / "keepme.txt").read_text() == "keep"
    assert (victim_dir / "98.double.json").exists()  # the grader deletes nothing through the link
    if which == "attacks":  # sandboxed, the kernel cannot even reach it
        assert json.loads((victim_dir / "98.double.json").read_text()) == [{"ok": 0}] * 4
    # without the sandbox the kernel itself may write there (with the instructor's rights)
    res = graded["answers_swap"]  # its own answers went through the link: none were read
    assert res.score == 0 and graded["classmate_z"].score == 3, res


def test_a_3000_level_tree_cannot_abort_the_run(attacks):
    graded, *_ = attacks
    assert graded["deep_tree"].score == 3
    assert not any("clean up" in n for n in graded["deep_tree"].notes)
    assert graded["classmate_z"].score == 3 and (graded.output / "gradebook.csv").exists()


def test_a_folder_name_that_is_not_utf8_is_escaped(attacks):
    graded, *_ = attacks
    assert graded["caf\\xe9"].score == 3
    rows = list(csv.DictReader((graded.output / "gradebook.csv").open(encoding="utf-8")))
    assert {r["student"] for r in rows} >= {"caf\\xe9", "classmate_a", "classmate_z"}
    assert (graded.output / "feedback" / "caf_xe9.md").exists()


@pytest.mark.parametrize(
    ("student", "key", "words"),
    [
        ("zero_itemsize", "98.double", "zero bytes per element"),
        ("huge_string", "98.shout", "limit"),
        ("nan", "98.total", "non-finite"),
    ],
)
def test_costly_or_non_finite_answers_score_zero_with_a_reason(attacks, student, key, words):
    graded, *_ = attacks
    by_key = {e.key: e for e in graded[student].exercises}
    assert by_key[key].score == 0 and words in by_key[key].detail, by_key[key]
    assert sum(e.score for e in graded[student].exercises) == 2


def test_a_fork_bomb_is_bounded_and_leaves_no_process(attacks):
    graded, _, _, started = attacks
    res = graded["fork_bomb"]
    assert res.score == 3, res
    assert graded["classmate_z"].score == 3
    text = json.dumps(graded.executed("fork_bomb"))
    forked = int(text.split("FORKED ", 1)[1].split("\\n", 1)[0])
    assert forked < 600  # the pids cgroup (or the watchdog) stopped it
    leftovers = []
    for proc in psutil.process_iter(["cmdline", "create_time"]):
        cmd = proc.info["cmdline"] or []
        if cmd == ["sleep", "4711"] and (proc.info["create_time"] or 0) >= started - 1:
            leftovers.append(proc.pid)
    assert not leftovers


def test_a_disk_filler_is_stopped_at_the_quota(attacks):
    graded, *_ = attacks
    res = graded["disk_fill"]
    assert res.score == 3 and res.status == "crashed", res
    assert "GiB of files" in "\n".join(res.notes)


def test_executed_notebooks_carry_no_live_markup(attacks):
    graded, *_ = attacks
    assert graded["markup"].score == 3
    nb = graded.executed("markup")
    outputs = json.dumps([c.get("outputs", []) for c in nb["cells"]]).lower()
    for bad in ("<script", "onload", "onerror", "javascript:", "image/svg+xml", "text/html"):
        assert bad not in outputs, bad
    markdown = "\n".join(c["source"] for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "alert(6)" in markdown  # the student's text is kept, as text:
    for bad in ("<script", "<img", "javascript:"):
        assert bad not in markdown.lower(), bad
    text = outputs
    assert "plain text stays" in text


def test_every_student_has_a_row(attacks):
    graded, *_ = attacks
    rows = list(csv.DictReader((graded.output / "summary.csv").open(encoding="utf-8")))
    assert len(rows) == len(graded.by_student) == 12


def test_inputs_the_kernel_gets_are_copies(tmp_path):
    """The kernel's inputs are a copy (read-only in the sandbox); verification uses the originals."""
    from helpers.grading.submission import Workspace

    ws = Workspace(tmp_path / "s0000")
    try:
        shard = ws.grader / "cases" / "04_count" / "shard.tfrecord"
        shard.parent.mkdir(parents=True)
        shard.write_bytes(b"records")
        cases = {"04.count": [{"path": str(shard), "n": 3}]}
        kernel_cases = json.loads(ws.inputs_for_kernel(cases).read_text())
        copy = Path(kernel_cases["04.count"][0]["path"])
        assert copy != shard and copy.is_relative_to(ws.kernel) and copy.read_bytes() == b"records"
        copy.write_bytes(b"")  # what a kernel could do without the sandbox's read-only bind
        assert shard.read_bytes() == b"records" and cases["04.count"][0]["path"] == str(shard)
    finally:
        assert ws.close(keep=False) == ""
    assert not (tmp_path / "s0000").exists()


EXERCISES_96 = """
from helpers.exercises import CheckFailed, Exercise, register

def _cases(rng, workdir):
    return [{"x": 1}]

def _loop(case, result):
    n = 0
    for _ in range(int(result)):
        n += 1
    if n != 1:
        raise CheckFailed("wrong")

def _alloc(case, result):
    if len(bytearray(int(result))) != 1:
        raise CheckFailed("wrong")

register(Exercise(key="96.loop", target="f", title="t", make_cases=_cases, verify=_loop, hint=""))
register(Exercise(key="96.alloc", target="g", title="t", make_cases=_cases, verify=_alloc, hint=""))
"""


def test_verification_cannot_cost_the_grader_unbounded_time_or_memory(tmp_path):
    """Crafted answers that make a verifier loop or allocate: stopped in the child, scored 0."""
    from helpers.grading.verify import Verifier

    module = tmp_path / "ex96.py"
    module.write_text(EXERCISES_96)
    verifier = Verifier(memory=512 << 20, seconds=2)
    try:
        ok = verifier.verify("96", str(module), "96.loop", [{"x": 1}], '[{"ok": 1}]')
        assert ok == (True, "passed on 1 fresh cases")
        start = time.monotonic()
        passed, detail = verifier.verify("96", str(module), "96.loop", [{"x": 1}], '[{"ok": 1e15}]')
        assert not passed and ("2 s" in detail), detail
        assert time.monotonic() - start < 70
        passed, detail = verifier.verify(
            "96", str(module), "96.alloc", [{"x": 1}], '[{"ok": 1e12}]'
        )
        assert not passed and ("MemoryError" in detail or "more memory" in detail), detail
        assert verifier.verify("96", str(module), "96.alloc", [{"x": 1}], '[{"ok": 1}]')[0]
    finally:
        verifier.close()
