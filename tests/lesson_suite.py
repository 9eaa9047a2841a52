"""The tests every lesson's exercises get, shared by ``tests/test_exercises_lNN.py``.

Each of those modules writes out the lesson's reference solutions (as in the
solution notebook) in a ``SOLUTIONS`` dict, exercise key -> function, and
binds the standard tests with::

    test_lesson_has_its_exercises_in_order, test_solution_passes_on_fresh_inputs, test_stub_fails = (
        exercise_suite("05", SOLUTIONS)
    )

then adds its own tests: planted mistakes named, other correct spellings
accepted, edge cases.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers import exercises as ex


def stub(*args: Any, **kwargs: Any) -> Any:
    """An exercise left as the student copy has it."""
    raise NotImplementedError()


def exercise_suite(
    lesson: str,
    solutions: Mapping[str, Callable[..., Any]],
    seeds: Sequence[int | None] = (1, None),
) -> tuple[Callable[..., None], Callable[..., None], Callable[..., None]]:
    """The three tests every lesson's exercises must pass.

    Args:
      lesson: the lesson number, e.g. ``"05"``.
      solutions: exercise key -> reference solution, in the lesson's order.
      seeds: the case seeds each solution is checked with; ``None`` draws a
        new seed on every run, so the checks see inputs nobody chose.

    Returns:
      ``(registered in order, solutions pass, stubs fail)`` test functions.
    """
    keys = list(solutions)

    def test_lesson_has_its_exercises_in_order() -> None:
        assert [e.key for e in ex.exercises_for(lesson)] == keys

    @pytest.mark.parametrize("key", keys)
    def test_solution_passes_on_fresh_inputs(key: str, capsys: pytest.CaptureFixture) -> None:
        for seed in seeds:
            ex.check(key, solutions[key], seed=seed)
        out = capsys.readouterr().out
        assert out.count(f"✔ {key} ") == len(seeds), out

    @pytest.mark.parametrize("key", keys)
    def test_stub_fails(key: str, capsys: pytest.CaptureFixture) -> None:
        ex.check(key, stub, seed=0)  # in a notebook: one "not attempted" line
        assert f"{key}: not attempted yet" in capsys.readouterr().out
        exercise = ex.get(key)
        cases = exercise.make_cases(np.random.default_rng(0), Path(tempfile.mkdtemp()))
        passed, detail = ex.verify_answers(exercise, cases, ex.run_cases(exercise, stub, cases))
        assert not passed and "not done yet" in detail  # the grader scores it 0

    return (
        test_lesson_has_its_exercises_in_order,
        test_solution_passes_on_fresh_inputs,
        test_stub_fails,
    )
