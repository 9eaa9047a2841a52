"""The notebook the grader executes: the student's cells, the lesson's parameters, the grader's cells."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import nbformat

from helpers.grading.reading import StudentCell

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


_LOAD_EXERCISES = """\
def _grader_load_exercises(ref, keys):
    import importlib, importlib.util, os, sys
    import helpers.exercises as registry
    if all(k in registry._REGISTRY for k in keys):
        return
    if ref.endswith(".py") or os.sep in ref:
        name = os.path.splitext(os.path.basename(ref))[0]
        spec = importlib.util.spec_from_file_location(name, ref)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    else:
        importlib.import_module(ref)
"""


def _param_anchor(cells: list[StudentCell], names: set[str]) -> int | None:
    """Index of the student's parameters cell: tagged, else the first assigning a parameter."""
    for i, cell in enumerate(cells):
        if cell.parameters:
            return i
    for i, cell in enumerate(cells):
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id in names for t in node.targets
            ):
                return i
    return None


def build_notebook(
    cells: list[StudentCell],
    exercises: list[Any],
    *,
    parameters: dict[str, Any],
    cases_path: Path,
    answers_dir: Path,
    exercises_ref: str | None,
) -> tuple[Any, list[str], dict[int, Any]]:
    """The notebook the grader executes.

    Returns:
      ``(nb, kinds, grading)``: ``kinds[i]`` says whose cell ``i`` is;
      ``grading`` maps a grader cell's index to its exercise.
    """
    from papermill.parameterize import parameterize_notebook

    nb = nbformat.v4.new_notebook()
    nb.metadata = nbformat.from_dict(
        {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}, "papermill": {}}
    )
    anchor = _param_anchor(cells, set(parameters))
    for i, cell in enumerate(cells):
        if cell.cell_type == "code":
            new = nbformat.v4.new_code_cell(cell.source)
        else:
            new = nbformat.v4.new_markdown_cell(cell.source)
        new.metadata["grader"] = {"kind": "student", "cell": cell.position + 1}
        new.metadata["tags"] = ["parameters"] if i == anchor else []  # papermill reads .tags
        nb.cells.append(new)
    if parameters:
        nb = parameterize_notebook(nb, parameters, kernel_name="python3", language="python")
    kinds = []
    for cell in nb.cells:
        if "injected-parameters" in cell.metadata.get("tags", []):
            kinds.append("parameters")
            cell.metadata["grader"] = {"kind": "parameters"}
        else:
            kinds.append("student" if cell.cell_type == "code" else "markdown")
    nb.cells.append(
        nbformat.v4.new_markdown_cell(
            "## Grader\n\nThe cells below were added by the grader (`helpers.grading`): each "
            "calls your function on fresh inputs; the answers are checked outside this notebook."
        )
    )
    kinds.append("markdown")
    setup = ["# [grader] load the exercise checks", "import helpers.exercises as _grader_exercises"]
    if exercises_ref:
        keys = [ex.key for ex in exercises]
        setup = [_LOAD_EXERCISES, f"_grader_load_exercises({exercises_ref!r}, {keys!r})"]
    nb.cells.append(nbformat.v4.new_code_cell("\n".join(setup)))
    kinds.append("setup")
    grading: dict[int, Any] = {}
    for ex in exercises:
        answers = answers_dir / f"{ex.key}.json"
        source = (
            f"# [grader] {ex.key}: {ex.target}() on the grader's fresh inputs\n"
            f'__import__("helpers.exercises", fromlist=["kernel_answer"]).kernel_answer(\n'
            f"    {ex.key!r}, {str(cases_path)!r}, {str(answers)!r}, globals()\n)"
        )
        nb.cells.append(nbformat.v4.new_code_cell(source))
        kinds.append("grading")
        grading[len(nb.cells) - 1] = ex
    for cell, kind in zip(nb.cells, kinds, strict=True):
        cell.metadata.setdefault("grader", {})["kind"] = kind
    return nb, kinds, grading
