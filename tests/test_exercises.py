"""The exercise framework: codec, fresh cases, notebook check and grader protocol."""

import json
from pathlib import Path

import numpy as np
import pytest

from helpers import exercises as ex
from helpers.features import Example, example_from_dict


def _double_cases(rng, workdir):
    return [{"x": int(v)} for v in rng.integers(-1000, 1000, size=5)]


def _double_verify(case, result):
    if result != 2 * case["x"]:
        raise ex.CheckFailed(f"double({case['x']}) returned {result!r}, expected {2 * case['x']}")


DOUBLE = ex.register(
    ex.Exercise(
        key="99.double",
        target="double",
        title="double a number",
        make_cases=_double_cases,
        verify=_double_verify,
        hint="multiply by two",
    )
)


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        3,
        -2.5,
        "héllo",
        b"\x00\xff bytes",
        [1, b"a", [2.0, None]],
        {"a": 1, "b": [b"x"]},
        float("nan"),
        float("inf"),
    ],
)
def test_codec_round_trips_plain_values(value):
    back = ex.from_jsonable(json.loads(json.dumps(ex.to_jsonable(value))))
    if isinstance(value, float) and np.isnan(value):
        assert np.isnan(back)
    else:
        assert back == value


def test_codec_round_trips_arrays_and_protobufs():
    arr = np.arange(12, dtype=np.uint16).reshape(3, 4)
    back = ex.from_jsonable(json.loads(json.dumps(ex.to_jsonable(arr))))
    assert back.dtype == arr.dtype and np.array_equal(back, arr)
    example = example_from_dict({"label": 3, "name": "x"})
    back = ex.from_jsonable(json.loads(json.dumps(ex.to_jsonable(example))))
    assert isinstance(back, Example) and back == example


def test_codec_refuses_unknown_objects():
    with pytest.raises(TypeError, match="cannot send"):
        ex.to_jsonable(object())


def test_check_passes_a_right_answer(capsys):
    ex.check("99.double", lambda x: 2 * x)
    assert "passed on 5 fresh cases" in capsys.readouterr().out


def test_check_names_the_failing_case_and_gives_the_hint():
    with pytest.raises(ex.CheckFailed, match=r"(?s)double\(.*expected.*Hint: multiply by two"):
        ex.check("99.double", lambda x: x + x + 1)


def test_check_reports_exceptions_and_stubs():
    def stub(x):
        raise NotImplementedError()

    with pytest.raises(ex.CheckFailed, match="not done yet"):
        ex.check("99.double", stub)
    with pytest.raises(ex.CheckFailed, match="ZeroDivisionError"):
        ex.check("99.double", lambda x: x / 0)


def test_check_finds_the_target_in_the_callers_globals():
    namespace = {"check": ex.check}
    exec("def double(x):\n    return 2 * x\ncheck('99.double')", namespace)


def test_check_uses_fresh_inputs_each_time():
    seen = []
    ex.check("99.double", lambda x: seen.append(x) or 2 * x)
    ex.check("99.double", lambda x: seen.append(x) or 2 * x)
    assert seen[:5] != seen[5:]


def test_hard_coded_answers_fail():
    # An answer that memorised one run's outputs fails on the next draw.
    with pytest.raises(ex.CheckFailed):
        ex.check("99.double", lambda x: {0: 0}.get(x, 42))


def test_grader_protocol_round_trip(tmp_path: Path):
    # make_cases_file is per lesson; use the registry directly for the test lesson.
    cases = DOUBLE.make_cases(np.random.default_rng(1), tmp_path)
    (tmp_path / "cases.json").write_text(json.dumps({"99.double": cases}))
    answers_path = tmp_path / "answers.json"
    ex.kernel_answer(
        "99.double", str(tmp_path / "cases.json"), str(answers_path), {"double": lambda x: 2 * x}
    )
    passed, detail = ex.verify_answers(DOUBLE, cases, json.loads(answers_path.read_text()))
    assert passed, detail
    ex.kernel_answer("99.double", str(tmp_path / "cases.json"), str(answers_path), {})
    passed, detail = ex.verify_answers(DOUBLE, cases, json.loads(answers_path.read_text()))
    assert not passed and "NameError" in detail


def test_forged_answers_are_rejected():
    cases = [{"x": 3}]
    passed, detail = ex.verify_answers(DOUBLE, cases, [{"ok": 7}])
    assert not passed and "expected 6" in detail
    passed, detail = ex.verify_answers(DOUBLE, cases, [])
    assert not passed
    passed, detail = ex.verify_answers(DOUBLE, cases, ["all tests passed"])
    assert not passed and "malformed" in detail


def test_progress_is_recorded(tmp_path, monkeypatch):
    path = tmp_path / "p.json"
    monkeypatch.setenv("TFRECORD_COURSE_PROGRESS", str(path))
    ex.check("99.double", lambda x: 2 * x)
    assert json.loads(path.read_text())["99.double"]["passed"] is True
    with pytest.raises(ex.CheckFailed):
        ex.check("99.double", lambda x: 0)
    assert json.loads(path.read_text())["99.double"]["passed"] is False


def test_every_lesson_module_registers_exercises_with_hints():
    for lesson in ex.lessons():
        exercises = ex.exercises_for(lesson)
        assert len(exercises) >= 3, f"lesson {lesson} has {len(exercises)} exercises, needs >= 3"
        for e in exercises:
            assert e.hint and e.title and e.target.isidentifier(), e.key
