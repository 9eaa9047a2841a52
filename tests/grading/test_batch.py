"""A grading run: the command line, planning, reruns, one failing kernel, and every real lesson.

Every real lesson in ``solutions/`` is graded as a solution (full marks), as
its blank student copy (zero) and with planted mistakes (exactly those
exercises fail, and the feedback names them).
"""

from __future__ import annotations

import os
import re
import sys

import pytest
from grading_tools import (
    BWRAP,
    LESSON_NAME,
    ROOT,
    Graded,
    make_tiny_lesson,
    plant_mistake,
    put,
    tiny_solution,
)

from helpers import notebooks as nbt
from helpers.grading import batch, cli, grade, submission
from helpers.grading.batch import Settings
from helpers.grading.runner import Limits, kernel_command
from helpers.util import parse_size


def test_cli_reports_unknown_lessons_and_folders(tmp_path, capsys):
    (tmp_path / "subs").mkdir()
    argv = ["--submissions", str(tmp_path / "subs"), "--output", str(tmp_path / "out")]
    assert cli.main(["--lesson", "97", *argv, "--solutions", str(tmp_path)]) == 2
    assert "no solution notebook for lesson 97" in capsys.readouterr().err
    argv[1] = str(tmp_path / "nope")
    assert cli.main(["--lesson", "97", *argv]) == 2
    assert "no submissions folder" in capsys.readouterr().err


def test_cli_help_documents_the_contract(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = capsys.readouterr().out
    for flag in (
        "--lesson",
        "--submissions",
        "--output",
        "--timeout",
        "--jobs",
        "--no-sandbox",
        "--kernel",
        "--roster",
        "--gradescope",
        "--rerun",
        "--similarity",
    ):
        assert flag in text


def test_memory_limit_uses_the_shared_size_parser():
    args = cli.grade_parser().parse_args(
        ["--lesson", "2", "--submissions", "s", "--output", "o", "--memory-limit", "1500M"]
    )
    assert cli._settings(args).limits.memory == parse_size("1500M") == 1500 << 20
    assert Limits().memory == parse_size("4G") == 4 << 30


def test_settings_group_the_options_and_refuse_unknown_ones():
    settings = Settings.from_options(timeout=5, jobs=3, sandbox=False)
    assert settings.limits.timeout == 5 and settings.jobs == 3 and not settings.sandbox
    with pytest.raises(TypeError, match="unknown grading option"):
        Settings.from_options(sandboxx=True)


def test_the_kernel_is_the_instructors_never_the_notebooks():
    argv, _ = kernel_command(None)
    assert "{connection_file}" in argv
    with pytest.raises(ValueError, match="no Jupyter kernel named 'no-such-kernel'"):
        kernel_command("no-such-kernel")


def test_student_folders_get_distinct_feedback_files(tmp_path):
    solutions, exercises = make_tiny_lesson(tmp_path)
    subs = tmp_path / "subs"
    for name in ("a b", "a_b", "A_B"):
        (subs / name).mkdir(parents=True)
    settings = Settings(solutions=solutions, exercises=str(exercises), sandbox=False, seed=1)
    run = batch.prepare("98", subs, settings)
    jobs, warnings = batch.plan_jobs(run, subs, settings, tmp_path / "w", tmp_path / "x")
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
        kernel=kernel_command(None)[0],
    )
    res = submission.grade_submission(job)
    assert res.status == "error" and res.score == 0
    assert "could not start" in "\n".join(res.notes)
    assert all(e.status == "not_run" for e in res.exercises)
    assert not (tmp_path / "w").exists()  # the working folder is removed whatever happens


@pytest.fixture(scope="module")
def rerun(tmp_path_factory, tiny, pool):
    """Graded twice; between the runs one notebook changes."""
    root = tmp_path_factory.mktemp("rerun")
    solutions, exercises = tiny
    sol = tiny_solution()
    subs, out = root / "submissions", root / "out"
    put(subs, "same", sol)
    put(subs, "changed", plant_mistake(sol, "double"))
    options = dict(solutions=solutions, exercises=str(exercises), jobs=2, quiet=True, pool=pool)
    options["sandbox"] = BWRAP is not None  # the default; CI installs bubblewrap
    first = Graded(grade("98", subs, out, **options), out, root)
    put(subs, "changed", sol)
    second = Graded(grade("98", subs, out, **options), out, root)
    third = Graded(grade("98", subs, out, rerun=True, **options), out, root)
    return first, second, third


def test_rerun_skips_unchanged_notebooks(rerun):
    first, second, third = rerun
    assert first["changed"].score == 2 and second["changed"].score == 3
    assert second["same"].seed == first["same"].seed  # kept, not graded again
    assert second["changed"].seed != first["changed"].seed
    assert third["same"].seed != first["same"].seed  # --rerun grades everything
    assert second["same"].score == 3


def test_validate_grades_one_notebook_like_the_instructor(tmp_path, tiny, capsys):
    solutions, exercises = tiny
    path = put(tmp_path, "me", plant_mistake(tiny_solution(), "shout"))
    argv = ["validate", str(path), "--solutions", str(solutions), "--exercises", str(exercises)]
    argv += ["--cell-timeout", "30", "--gradescope-results", str(tmp_path / "results.json")]
    argv += [] if BWRAP else ["--no-sandbox"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "score: 2 / 3" in out and "## ✘ 98.shout" in out and "returned None" in out
    assert (tmp_path / "results.json").exists()


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
    scored = [ex for ex in exercises if not ex.self_reported]  # the others are not_scored
    root = tmp_path_factory.mktemp(f"lesson{lesson}")
    subs, out = root / "submissions", root / "out"
    put(subs, "solution", solution, name=solution_path.name)
    put(subs, "blank", nbt.make_lesson(solution), name=solution_path.name)
    groups = _plant_groups(scored)
    planted = {}
    for n, group in enumerate(groups):
        nb = solution
        for ex in group:
            nb = plant_mistake(nb, ex.target)
        put(subs, f"planted{n}", nb, name=solution_path.name)
        planted[f"planted{n}"] = {ex.key for ex in group}
    # like an instructor with little time: one training epoch instead of the lesson's default
    params = {"epochs": 1} if "epochs" in submission.solution_parameters(solution) else {}
    results = grade(
        lesson,
        subs,
        out,
        jobs=2,
        pool=pool,
        quiet=True,
        seed=7,
        parameters=params,
        sandbox=BWRAP is not None,  # the default; CI installs bubblewrap
    )
    return Graded(results, out, root), exercises, planted


def _scored(exercises: list) -> set[str]:
    return {ex.key for ex in exercises if not ex.self_reported}


@pytest.mark.slow
def test_real_lesson_solution_scores_full_marks(real_lesson):
    graded, exercises, _ = real_lesson
    res = graded["solution"]
    scored = _scored(exercises)
    failing = {e.key: e.detail for e in res.exercises if e.key in scored and e.status != "passed"}
    assert not failing
    assert res.score == res.max_score == sum(e.points for e in exercises if e.key in scored)
    for e in res.exercises:  # a check that counts behaviour in the kernel: shown, never scored
        if e.key not in scored:
            assert (e.status, e.max_score) == ("not_scored", 0)
            assert e.detail.startswith("the notebook's check passed"), e.detail


@pytest.mark.slow
def test_real_lesson_blank_copy_scores_zero(real_lesson):
    graded, exercises, _ = real_lesson
    res = graded["blank"]
    assert res.score == 0 and len(res.exercises) == len(exercises)
    assert not any(e.status == "passed" for e in res.exercises)


@pytest.mark.slow
def test_real_lesson_planted_mistakes_score_partial_and_are_named(real_lesson):
    graded, exercises, planted = real_lesson
    scored = _scored(exercises)
    for student, keys in planted.items():
        res = graded[student]
        failing = {e.key for e in res.exercises if e.key in scored and e.status != "passed"}
        assert failing == keys, (student, {e.key: e.detail for e in res.exercises})
        if len(scored) > 1:
            assert 0 < res.score < res.max_score
        md = (graded.output / "feedback" / f"{student}.md").read_text().replace("\\", "")
        for key in keys:
            assert re.search(rf"## ✘ {re.escape(key)}", md), key
        for key in scored - keys:
            assert re.search(rf"## ✔ {re.escape(key)}", md), key


def test_real_lessons_are_found():
    assert sys.platform != "win32"
    if (ROOT / "solutions").is_dir() and any((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb")):
        assert REAL_LESSONS, "solutions exist but none has an exercises module"
