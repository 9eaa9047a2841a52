"""helpers.grading.verdicts: an exercise whose check counts behaviour inside the kernel is not scored."""

from __future__ import annotations

import pytest

from helpers import exercises as ex
from helpers.grading import verdicts
from helpers.grading.runner import CellRun, Limits


class _FakeVerifier:
    def __init__(self, passed: bool, detail: str):
        self.result = passed, detail

    def verify(self, lesson, ref, key, cases, text):
        return self.result


@pytest.mark.parametrize(("passed", "said"), [(True, "passed"), (False, "failed: opened 0 of 8")])
def test_self_reported_exercises_get_no_points_either_way(monkeypatch, passed, said):
    exercise = ex.get("05.fast_reader")
    assert exercise.self_reported  # its check counts opens inside the student's process
    monkeypatch.setattr(verdicts, "verifier", lambda limits: _FakeVerifier(passed, "opened 0 of 8"))
    grade = verdicts.judge(
        exercise, [], CellRun(0, "ok"), verdicts.Answer(text="[]"), Limits(), "05", None
    )
    assert (grade.score, grade.max_score, grade.status) == (0, 0, "not_scored")
    assert said in grade.detail and "cannot trust" in grade.detail


def test_other_exercises_are_scored(monkeypatch):
    exercise = ex.get("02.uint64_feature")
    assert not exercise.self_reported
    monkeypatch.setattr(verdicts, "verifier", lambda limits: _FakeVerifier(True, "ok"))
    grade = verdicts.judge(
        exercise, [], CellRun(0, "ok"), verdicts.Answer(text="[]"), Limits(), "02", None
    )
    assert (grade.score, grade.max_score, grade.status) == (1, 1, "passed")
