"""The lesson generator, the notebook formatter, and every student lesson under papermill."""

import json
import re
from pathlib import Path

import nbformat
import pytest

from helpers import notebooks as nbt

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))


def _nb(*sources, outputs=True):
    nb = nbformat.v4.new_notebook()
    for src in sources:
        cell = nbformat.v4.new_code_cell(src)
        if outputs:
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="hi\n")]
            cell.execution_count = 1
        nb.cells.append(cell)
    return nb


def test_strip_solutions_keeps_indentation_and_code_outside():
    src = "def f(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\n\nprint(f)"
    out = nbt.strip_solutions(src)
    assert out == "def f(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()\n\nprint(f)"


@pytest.mark.parametrize(
    "src",
    [
        "### BEGIN SOLUTION\nx = 1",
        "x = 1\n### END SOLUTION",
        "### BEGIN SOLUTION\n### BEGIN SOLUTION",
    ],
)
def test_unbalanced_solution_blocks_are_refused(src):
    with pytest.raises(ValueError, match="SOLUTION"):
        nbt.strip_solutions(src)


def test_make_lesson_stubs_tags_and_clears():
    sol = _nb(
        "import numpy as np",
        "def f(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION",
        "check('01.f')",
    )
    lesson = nbt.make_lesson(sol)
    assert all(c.outputs == [] and c.execution_count is None for c in lesson.cells)
    assert "return 2 * x" not in lesson.cells[1].source
    assert "raise NotImplementedError()" in lesson.cells[1].source
    assert "raises-exception" in lesson.cells[1].metadata.tags
    assert "raises-exception" in lesson.cells[2].metadata.tags
    assert "tags" not in lesson.cells[0].metadata
    # the solution notebook passed in is not modified
    assert "return 2 * x" in sol.cells[1].source


def test_format_is_stable():
    nb = nbt.normalise(_nb("x = 1", "y = 2"), keep_outputs=True)
    once = nbt.format_notebook(nb)
    twice = nbt.format_notebook(
        nbt.normalise(nbformat.reads(once, as_version=4), keep_outputs=True)
    )
    assert once == twice
    assert (
        json.loads(once)["metadata"]["kernelspec"]["name"] == nbt.KERNEL_NAME == "tfrecord-course"
    )


def test_split_writes_to_one_stream_are_joined_and_tf_noise_dropped():
    outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="stopped: 2 workers"),
        nbformat.v4.new_output("stream", name="stdout", text="\n"),
        nbformat.v4.new_output(
            "stream", name="stderr", text="I0000 00:00:1795464528.264903    1745 x.cc:31] noise\n"
        ),
        nbformat.v4.new_output("stream", name="stderr", text="a real warning\n"),
        nbformat.v4.new_output("stream", name="stdout", text="next\n"),
    ]
    kept = nbt._clean_outputs(outputs)
    assert [(o["name"], o["text"]) for o in kept] == [
        ("stdout", "stopped: 2 workers\n"),
        ("stderr", "a real warning\n"),
        ("stdout", "next\n"),
    ]


def test_lessons_end_with_one_progress_cell_and_name_the_course_kernel():
    sol = _nb(
        "import numpy as np",
        "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION",
        "check('03.f')",
    )
    lesson = nbt.make_lesson(sol)
    again = nbt.make_lesson(lesson)
    for nb in (lesson, again):
        tagged = [c for c in nb.cells if "progress" in c.metadata.get("tags", [])]
        assert len(tagged) == 1 and nb.cells[-1] is tagged[0]
        assert 'show_progress("03")' in tagged[0].source
    for path in sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb")):
        nb = nbt.read(path)
        assert nb.metadata.kernelspec.name == nbt.KERNEL_NAME, path.name
        assert f'show_progress("{path.name[:2]}")' in nb.cells[-1].source, path.name


def test_course_kernel_keeps_native_stderr_out_of_cell_outputs():
    spec = nbt.kernel_spec("/x/python")
    assert "--IPKernelApp.capture_fd_output=False" in spec["argv"]
    assert spec["env"]["TF_CPP_MIN_LOG_LEVEL"] == "2"
    from jupyter_client.kernelspec import KernelSpecManager

    installed = KernelSpecManager().get_kernel_spec(nbt.KERNEL_NAME)
    assert "--IPKernelApp.capture_fd_output=False" in installed.argv
    nb = _nb(
        "import os\n"
        'os.write(2, b"E0000 00:00:1.0  1 cuda_platform.cc:52] failed call to cuInit\\n")\n'
        "print('visible')",
        outputs=False,
    )
    from nbclient import NotebookClient

    NotebookClient(nb, kernel_name=nbt.KERNEL_NAME, timeout=120).execute()
    texts = [o.get("text", "") for o in nb.cells[0].outputs]
    assert texts == ["visible\n"], texts


def test_lessons_are_not_stale():
    stale = nbt.write_lessons(check=True)
    assert not stale, f"lessons/ is stale for {stale}: run `make lessons`"


def test_solutions_are_formatted_and_have_outputs():
    for path in SOLUTIONS:
        nb = nbt.read(path)
        text = nbt.format_notebook(nbt.normalise(nbt.read(path), keep_outputs=True))
        assert path.read_text() == text, (
            f"{path.name} is not formatted: python -m helpers.notebooks format"
        )
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert any(c.outputs for c in code), f"{path.name} has no outputs for nbval to compare"


def test_solutions_follow_the_lesson_skeleton():
    for path in SOLUTIONS:
        nb = nbt.read(path)
        text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        for heading in ("Overview", "Setup", "Summary", "Exercises"):
            assert f"## {heading}" in text, f"{path.name} lacks a '## {heading}' section"
        assert any("parameters" in c.metadata.get("tags", []) for c in nb.cells), (
            f"{path.name} has no cell tagged 'parameters'"
        )
        assert sum(nbt.is_exercise_cell(c) for c in nb.cells) >= 3, f"{path.name} has < 3 exercises"


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.stem)
def test_student_lesson_runs_with_only_exercise_cells_raising(solution, tmp_path):
    """The blank student copy executes top to bottom; only exercise/check cells fail."""
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    lesson = ROOT / "lessons" / solution.name
    out = tmp_path / solution.name
    try:  # papermill runs past cells tagged raises-exception, then reports the first error
        pm.execute_notebook(
            str(lesson),
            str(out),
            kernel_name=nbt.KERNEL_NAME,
            cwd=str(tmp_path),
            progress_bar=False,
            execution_timeout=300,
        )
    except PapermillExecutionError:
        pass
    nb = nbformat.read(str(out), as_version=4)
    failed, unexpected = [], []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.get("output_type") == "error"]
        expected = (
            nbt.is_exercise_cell(cell)
            or nbt.is_check_cell(cell)
            or "raises-exception" in cell.metadata.get("tags", [])
        )
        if errors and not expected:
            unexpected.append(f"cell {i}: {errors[0].get('ename')}: {errors[0].get('evalue')}")
        if errors:
            failed.append(i)
    assert not unexpected, "non-exercise cells failed: " + "; ".join(unexpected)
    stubs = [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and "raise NotImplementedError()" in c.source
    ]
    assert stubs, "the student copy has no exercise stubs"
    texts = {
        i: "".join(
            o.get("text", "") + str(o.get("data", {}).get("text/plain", "")) for o in c.outputs
        )
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code"
    }
    checks = [i for i, c in enumerate(nb.cells) if nbt.is_check_cell(c)]
    assert all("not attempted yet" in texts[i] for i in checks), "a blank check did not say so"
    noisy = [
        o.get("text", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.get("name") == "stderr" and re.search(r"cuInit|absl::InitializeLog", o.get("text", ""))
    ]
    assert not noisy, f"TensorFlow start-up lines reached a cell output: {noisy[:1]}"
    assert f"0 of {len(checks)} exercises passed" in texts[len(nb.cells) - 1]
    assert all(i in failed for i in stubs if "def " not in nb.cells[i].source), (
        "a top-level stub did not raise"
    )


def test_course_runs_every_lesson_keeps_going_and_prints_a_table(tmp_path, capfd):
    sols = tmp_path / "solutions"
    sols.mkdir()
    noisy = (
        "import os\n"
        'os.write(2, b"I0000 00:00:1795436039.621570    1779 port.cc:153] oneDNN noise\\n")\n'
        'os.write(2, b"a real warning from the kernel\\n")\n'
        'os.write(2, b"Task was destroyed but it is pending!\\n")\n'
        "print(6 * 7)"
    )
    nbformat.write(_nb(noisy, outputs=False), str(sols / "01_ok.ipynb"))
    nbformat.write(
        _nb("raise ValueError('planted failure')", outputs=False), str(sols / "02_bad.ipynb")
    )
    nbformat.write(_nb("print(1)", outputs=False), str(sols / "03_after.ipynb"))
    nbformat.write(_nb("print(1)", outputs=False), str(sols / "scratch.ipynb"))  # not a lesson
    out_dir = tmp_path / "out"
    failed = nbt.run_course(out_dir, solutions=sols)
    out, err = capfd.readouterr()
    assert failed == 1
    assert re.search(r"^01_ok\s+ok\s+\d+\.\d", out, re.M)
    assert re.search(r"^02_bad\s+failed\s+\d+\.\d.*planted failure", out, re.M)
    assert re.search(r"^03_after\s+ok", out, re.M) and "scratch" not in out
    assert "2 of 3 lessons ran" in out
    # the kernel's process stderr: TF start-up noise kept in the log, not on the terminal
    assert "a real warning from the kernel" in err and "oneDNN noise" not in err
    assert "Task was destroyed" not in err
    assert "oneDNN noise" in (out_dir / "01_ok.stderr.txt").read_text()
    executed = nbformat.read(str(out_dir / "01_ok.ipynb"), as_version=4)
    code = [c for c in executed.cells if c.cell_type == "code"]
    assert any("42" in "".join(o.get("text", "")) for c in code for o in c.outputs)


def test_course_without_lessons_says_so(tmp_path, capsys):
    assert nbt.run_course(tmp_path / "out", solutions=tmp_path / "none") == 0
    assert "No lessons" in capsys.readouterr().out
