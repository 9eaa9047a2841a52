"""Reading submissions, the feedback and gradebook files, sanitised notebooks, similarity."""

from __future__ import annotations

import csv
import json

import nbformat
from grading_tools import LESSON_NAME, put, tiny_solution

from helpers.grading import report, sanitise, similarity, submission
from helpers.grading.runner import describe_exit
from helpers.grading.submission import ExerciseGrade, SubmissionGrade


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


def test_describe_exit():
    assert "segmentation fault" in describe_exit(-11, sandboxed=False)
    assert "segmentation fault" in describe_exit(139, sandboxed=True)
    assert "status 1" in describe_exit(1, sandboxed=False)


def test_sanitised_outputs_keep_text_and_raster_images_only():
    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("x")
    code.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={
                "text/html": "<img src=x onerror=alert(1)>",
                "image/svg+xml": "<svg onload=alert(2)/>",
                "application/javascript": "alert(3)",
                "text/plain": "<IPython.core.display.HTML object>",
                "image/png": "iVBORw0KGgo=",
            },
            metadata={"isolated": True},
        ),
        nbformat.v4.new_output("display_data", data={"text/html": "<script>alert(4)</script>"}),
        nbformat.v4.new_output("stream", name="stdout", text="<b>kept as text</b>"),
    ]
    md = nbformat.v4.new_markdown_cell(
        "<svg onload=alert(5)> [a](javascript:alert(6)) [b](https://x)"
    )
    nb.cells = [code, md]
    sanitise.sanitise_notebook(nb)
    assert [sorted(o.get("data", {})) for o in code.outputs] == [["image/png", "text/plain"], []]
    assert code.outputs[0]["metadata"] == {} and code.outputs[1]["text"] == "<b>kept as text</b>"
    assert "<svg" not in md.source and "javascript:" not in md.source
    assert "&lt;svg onload=alert(5)>" in md.source and "(https://x)" in md.source


def test_similarity_ignores_renamed_variables_and_the_lesson_template(tmp_path):
    a = "def total(values):\n    acc = 0\n    for v in values:\n        acc = acc + v * 2\n    return acc"
    b = "def total(xs):\n    s = 0\n    for item in xs:\n        s = s + item * 2  # mine\n    return s"
    c = "def total(values):\n    return sum(values)"
    students = {n: similarity.code_lines([src]) for n, src in (("a", a), ("b", b), ("c", c))}
    found = similarity.pairs(students, 0.8)
    assert [(p[0], p[1]) for p in found] == [("a", "b")] and found[0][2] == 1.0
    assert "acc = acc + v * 2" in found[0][3]
    sol = tiny_solution()
    subs = tmp_path / "subs"
    paths = {n: put(subs, n, sol) for n in ("x", "y")}
    template = put(tmp_path / "sol", "t", sol, name=LESSON_NAME)
    lines = similarity.student_lines(paths, template)
    assert "return factor * x" in lines["x"].values()  # the student's work stays
    assert not any("import ex98" in v for v in lines["x"].values())  # the template does not
    pairs = similarity.write_report(paths, template, 0.5, tmp_path)
    assert pairs and (tmp_path / "similarity.md").read_text().startswith("# Similarity")
    rows = list(csv.DictReader((tmp_path / "similarity.csv").open()))
    assert rows[0]["student_a"] == "x" and float(rows[0]["similarity"]) == 1.0
    assert json.dumps(rows)
