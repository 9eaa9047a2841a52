"""Canvas gradebook import and Gradescope results.json, validated against their documented formats.

Canvas's gradebook import reads a CSV whose identifying columns are
``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID`` and ``Section`` (ID or
SIS User ID identifies the row) followed by one column per assignment.
Gradescope's autograder specification defines ``results.json``: a top-level
``score`` (or per-test scores), optional ``execution_time``, ``output``,
``visibility``, and ``tests`` with ``score``, ``max_score``, ``status``,
``name``, ``output``, ``visibility``...
"""

from __future__ import annotations

import csv
import io
import json

import pytest

from helpers.grading import exports
from helpers.grading.submission import ExerciseGrade, SubmissionGrade

GRADESCOPE_TOP = {
    "score", "execution_time", "output", "output_format", "test_output_format",
    "test_name_format", "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard",
}  # fmt: skip
GRADESCOPE_TEST = {
    "score", "max_score", "status", "name", "name_format", "number", "output",
    "output_format", "tags", "visibility", "extra_data",
}  # fmt: skip
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}
FORMATS = {"text", "html", "simple_format", "md", "ansi"}


def _results() -> list[SubmissionGrade]:
    alice = SubmissionGrade("alice", "02", "02_x.ipynb", "ok", seconds=12.4, slug="alice")
    alice.exercises = [
        ExerciseGrade("02.a", "write a()", 1, 1, "passed", "passed on 4 fresh cases"),
        ExerciseGrade("02.b", "write b()", 0, 2, "failed", "case 1 of 3: wrong", "look at b"),
    ]
    bob = SubmissionGrade("=bob", "02", "", "missing", notes=["no notebook"], slug="bob")
    bob.exercises = [ExerciseGrade("02.a", "write a()", 0, 1, "missing", "no notebook")]
    return [alice, bob]


def validate_gradescope(data: dict) -> None:
    """Raise AssertionError where ``data`` breaks Gradescope's documented results.json format."""
    assert set(data) <= GRADESCOPE_TOP, set(data) - GRADESCOPE_TOP
    assert isinstance(data["tests"], list)
    assert isinstance(data["score"], (int, float))
    assert data.get("visibility", "visible") in VISIBILITY
    assert data.get("output_format", "text") in FORMATS
    assert isinstance(data.get("execution_time", 0), int)
    for test in data["tests"]:
        assert set(test) <= GRADESCOPE_TEST, set(test) - GRADESCOPE_TEST
        assert isinstance(test["score"], (int, float)) and isinstance(
            test["max_score"], (int, float)
        )
        assert 0 <= test["score"] <= test["max_score"]
        assert test.get("status", "passed") in ("passed", "failed")
        assert test.get("visibility", "visible") in VISIBILITY
        assert test.get("output_format", "text") in FORMATS
        assert isinstance(test["name"], str) and isinstance(test.get("output", ""), str)
    assert data["score"] == sum(t["score"] for t in data["tests"])


def test_gradescope_results_follow_the_documented_schema(tmp_path):
    paths = exports.write_gradescope(_results(), tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in paths] == [
        "alice/results.json",
        "bob/results.json",
    ]
    alice = json.loads(paths[0].read_text())
    validate_gradescope(alice)
    assert alice["score"] == 1 and [t["status"] for t in alice["tests"]] == ["passed", "failed"]
    assert "Hint: look at b" in alice["tests"][1]["output"]
    bob = json.loads(paths[1].read_text())
    validate_gradescope(bob)
    assert bob["output"] == "no notebook"


def test_the_validator_catches_a_wrong_shape():
    with pytest.raises(AssertionError):
        validate_gradescope({"score": 1, "tests": [{"name": "x", "score": 2, "max_score": 1}]})


def _roster(tmp_path, text: str):
    path = tmp_path / "roster.csv"
    path.write_text(text)
    return path


def test_canvas_csv_has_the_import_columns_and_one_row_per_known_student(tmp_path):
    roster = _roster(
        tmp_path,
        "folder,student,id,sis_user_id,sis_login_id,section\n"
        'alice,"Liddell, Alice",4242,S001,alice@uni.example,A\n'
        "=bob,Bob,4343,,bob@uni.example,A\n"
        "carol,Carol,4444,S003,,B\n",
    )
    warnings = exports.write_canvas(_results(), roster, "Lesson 02 (123)", tmp_path / "canvas.csv")
    rows = list(csv.reader(io.StringIO((tmp_path / "canvas.csv").read_text())))
    assert rows[0] == [*exports.CANVAS_ID_COLUMNS, "Lesson 02 (123)"]
    assert rows[1] == ["Liddell, Alice", "4242", "S001", "alice@uni.example", "A", "1"]
    assert rows[2][0] == "Bob" and rows[2][1] == "4343" and rows[2][5] == "0"
    for row in rows[1:]:
        assert row[1] or row[2]  # ID or SIS User ID identifies every row
        float(row[5])
    assert warnings == ["carol is in the roster but has no submission folder (left blank)"]


def test_canvas_csv_neutralises_formulas_from_the_roster(tmp_path):
    roster = _roster(tmp_path, "folder,student,id\nalice,=HYPERLINK(1),4242\n")
    text, _ = exports.canvas_csv(_results()[:1], exports.read_roster(roster), "L")
    assert text.splitlines()[1].startswith("'=HYPERLINK(1)")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("name,id\nalice,1\n", "needs a 'folder' column"),
        ("folder,section\nalice,A\n", "needs a 'folder' column and an 'id'"),
        ("folder,id\nalice,\n", "line 2: alice has neither an id"),
        ("folder,id\nalice,1\nalice,2\n", "line 3: alice is listed twice"),
    ],
)
def test_bad_rosters_are_refused_with_the_line(tmp_path, text, words):
    with pytest.raises(exports.RosterError, match=words):
        exports.read_roster(_roster(tmp_path, text))


def test_students_missing_from_the_roster_are_reported(tmp_path):
    roster = _roster(tmp_path, "folder,id\nalice,1\n")
    _, warnings = exports.canvas_csv(_results(), exports.read_roster(roster), "L")
    assert warnings == ["=bob is not in the roster: no Canvas row written"]
