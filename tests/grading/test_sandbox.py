"""The sandbox (the default): an allowlist of readable paths, no network, limits, and its command line."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from grading_tools import (
    BWRAP,
    HOSTILE_LIMITS,
    ROOT,
    Graded,
    make_tiny_lesson,
    needs_bwrap,
    probe_result,
    probe_source,
    put,
    tiny_solution,
    with_cell,
)

from helpers.grading import batch, cli, grade, sandbox


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
    secret = root / "instructor-secret.txt"
    secret.write_text("SECRET-CANARY")
    reads = {
        "tests": str(ROOT / "tests"),
        "solutions": str(ROOT / "solutions"),
        "git": str(ROOT / ".git"),
        "run": "/run",
        "other_submission": str(victim),
        "solutions_folder": str(solutions),
        "secret": str(secret),
        "home": str(Path.home()),
        "helpers": str(ROOT / "helpers" / "__init__.py"),
    }
    probe = probe_source(tcp_server, targets, str(victim), reads)
    put(subs, "probe", with_cell(sol, probe))
    results = grade(
        "98",
        subs,
        out,
        solutions=solutions,
        exercises=str(exercises),
        limits=HOSTILE_LIMITS,
        jobs=2,
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
    # A checkout under /tmp (a CI clone) is bound into the sandbox's private /tmp scratch,
    # so a write next to it lands in that scratch space, never on the host.
    scratch = {"repo"} if str(ROOT).startswith("/tmp/") else set()
    for name, path in targets.items():  # writes fail: the paths do not even exist inside
        assert not Path(path).exists() or "pwned" not in Path(path).read_text(), (name, probe)
        assert probe[name].startswith("blocked") or name in scratch, (name, probe)
    assert probe["peek"] is False and probe["own"] == "ok"


@needs_bwrap
def test_sandbox_shows_only_the_allowlist(sandboxed):
    """tests/ (every solution), solutions/, .git, /run sockets, home: none exist inside."""
    graded, _ = sandboxed
    probe = probe_result(graded, "probe")
    for name in ("tests", "solutions", "git", "other_submission", "solutions_folder", "secret"):
        assert probe[f"read_{name}"].startswith("blocked"), (name, probe)
    assert probe["read_run"] == "listed: " or probe["read_run"].startswith("blocked"), probe
    assert "SECRET" not in probe["read_home"], probe
    assert probe["read_helpers"].startswith("read:"), probe  # the package the notebooks import


def test_default_run_without_bubblewrap_fails_with_an_install_hint(tmp_path, monkeypatch, capsys):
    solutions, exercises = make_tiny_lesson(tmp_path)
    (tmp_path / "subs").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    argv = ["--lesson", "98", "--submissions", str(tmp_path / "subs"), "--output"]
    argv += [str(tmp_path / "out"), "--solutions", str(solutions), "--exercises", str(exercises)]
    assert cli.main(argv) == 2  # the sandbox is the default
    err = capsys.readouterr().err
    assert "bubblewrap" in err and "apt-get install bubblewrap" in err and "--no-sandbox" in err
    assert len(err.strip().splitlines()) == 1


def test_no_sandbox_warns_on_stderr_and_in_the_log(tmp_path, capsys):
    solutions, exercises = make_tiny_lesson(tmp_path)
    (tmp_path / "subs").mkdir()
    argv = ["--lesson", "98", "--submissions", str(tmp_path / "subs"), "--output"]
    argv += [str(tmp_path / "out"), "--solutions", str(solutions), "--exercises", str(exercises)]
    assert cli.main([*argv, "--no-sandbox", "--quiet"]) == 0
    assert "WITHOUT the sandbox" in capsys.readouterr().err
    assert "WITHOUT the sandbox" in (tmp_path / "out" / "grader.log").read_text()


def test_bwrap_command_binds_an_allowlist_not_the_root(tmp_path):
    kernel = tmp_path / "s" / "kernel"
    (kernel / "work").mkdir(parents=True)
    args = sandbox.bwrap_prefix(
        "bwrap", kernel, kernel / "work", read_only=[kernel / "inputs"], writable=[tmp_path / "k"]
    )
    joined = " ".join(args)
    for flag in ("--unshare-net", "--unshare-pid", "--cap-drop ALL", "--die-with-parent"):
        assert flag in joined
    assert "--ro-bind / /" not in joined and "--bind / /" not in joined
    assert f"--bind {kernel} {kernel}" in joined and f"--bind {tmp_path / 'k'}" in joined
    assert f"--ro-bind {ROOT / 'helpers'} {ROOT / 'helpers'}" in joined
    assert str(ROOT / "tests") not in joined and str(ROOT / "solutions") not in joined
    assert " /run" not in joined and "--ro-bind /etc /etc" not in joined
    assert args.index(f"{kernel / 'inputs'}") > args.index(str(kernel))  # read-only on top
    assert "--size" in args and args[-1] == "--"


def test_bwrap_binds_a_course_that_lives_under_tmp_after_the_private_tmp(monkeypatch, request):
    scratch = Path(tempfile.mkdtemp(dir="/tmp"))  # under /tmp whatever TMPDIR says
    request.addfinalizer(lambda: shutil.rmtree(scratch, ignore_errors=True))
    course = scratch / "clean"
    (course / "helpers").mkdir(parents=True)
    (course / "solutions").mkdir()
    monkeypatch.setattr(sandbox, "ROOT", course)
    kernel = scratch / "k"
    kernel.mkdir()
    joined = " ".join(sandbox.bwrap_prefix("bwrap", kernel, kernel))
    assert joined.index("--tmpfs /tmp ") < joined.index(f"--ro-bind {course / 'helpers'}")
    assert str(course / "solutions") not in joined


def test_kernel_environment_drops_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "hunter2")
    env = sandbox.kernel_env(tmp_path)
    assert "AWS_SECRET_ACCESS_KEY" not in env and env["HOME"] == str(tmp_path / "home")
    assert env["TFRECORD_COURSE_NO_PROGRESS"] == "1"


def test_settings_default_to_the_sandbox():
    assert batch.Settings().sandbox is True
    assert (
        cli.grade_parser()
        .parse_args(["--lesson", "2", "--submissions", "s", "--output", "o"])
        .sandbox
    )
