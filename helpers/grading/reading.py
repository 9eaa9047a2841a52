"""Reading a submitted notebook without trusting anything but its cells' source.

The submission is never trusted as a notebook: only the *source* of its code
(and markdown) cells is taken; its metadata, kernelspec, tags, outputs and
execution counts are dropped. :func:`find_submission` picks the notebook in a
student's folder (the exact lesson file name, else one unambiguous candidate,
with a note).
"""

from __future__ import annotations

import ast
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from helpers.grading.fsafe import UnsafeFile, open_dir, read_file_at

MAX_NOTEBOOK_BYTES = 100 << 20


class InvalidSubmission(ValueError):
    """The file cannot be graded as a notebook; ``str(err)`` says why."""


def solution_parameters(solution: Any) -> dict[str, Any]:
    """Literal values assigned in the instructor's ``parameters`` cell."""
    for cell in solution.cells:
        if cell.get("cell_type") == "code" and "parameters" in cell.get("metadata", {}).get(
            "tags", []
        ):
            try:
                tree = ast.parse(cell.source)
            except SyntaxError:
                return {}
            params: dict[str, Any] = {}
            for node in tree.body:
                target = node.targets[0] if isinstance(node, ast.Assign) else None
                if isinstance(node, ast.AnnAssign):
                    target = node.target
                if isinstance(target, ast.Name) and node.value is not None:
                    try:
                        params[target.id] = ast.literal_eval(node.value)
                    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                        pass
            return params
    return {}


@dataclass
class StudentCell:
    cell_type: str
    source: str
    position: int
    parameters: bool = False


def read_submission(path: Path) -> tuple[list[StudentCell], list[str]]:
    """The cells of a submitted notebook, without trusting anything but their source.

    Returns:
      ``(cells, notes)``.

    Raises:
      InvalidSubmission: empty, unreadable, not JSON or not a notebook.
    """
    if path.is_symlink():
        raise InvalidSubmission("the notebook is a symbolic link; submit the file itself")
    try:
        raw = read_file_at(
            open_dir(str(path.parent)), path.name, MAX_NOTEBOOK_BYTES, close_dir=True
        )
    except UnsafeFile as err:
        if "limit" in str(err):
            raise InvalidSubmission(
                f"the notebook file is over the {MAX_NOTEBOOK_BYTES >> 20} MB limit "
                "(clear its outputs)"
            ) from None
        raise InvalidSubmission(f"the notebook is not a plain file ({err})") from None
    except OSError as err:
        raise InvalidSubmission(f"the notebook file cannot be read ({err.strerror})") from None
    if not raw:
        raise InvalidSubmission("the notebook file is empty (0 bytes)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidSubmission("the notebook file is not UTF-8 text") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as err:
        where = (
            f" (line {err.lineno}, column {err.colno}: {err.msg})"
            if isinstance(err, json.JSONDecodeError)
            else ""
        )
        raise InvalidSubmission(f"the notebook file is not valid JSON{where}") from None
    if isinstance(data, dict) and "cells" not in data and "worksheets" in data:
        try:  # an nbformat 3 notebook
            data = json.loads(json.dumps(nbformat.reads(text, as_version=4)))
        except Exception:  # noqa: BLE001
            raise InvalidSubmission(
                "the notebook is in an old format that cannot be read"
            ) from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise InvalidSubmission("the file is JSON but not a Jupyter notebook (no list of cells)")
    cells: list[StudentCell] = []
    odd = 0
    for position, cell in enumerate(data["cells"]):
        if not isinstance(cell, dict):
            odd += 1
            continue
        kind = cell.get("cell_type")
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if kind not in ("code", "markdown", "raw") or not isinstance(source, str):
            odd += 1
            continue
        if kind == "raw":
            continue
        meta = cell.get("metadata")
        tags = meta.get("tags") if isinstance(meta, dict) else None
        is_params = isinstance(tags, list) and "parameters" in tags
        cells.append(StudentCell(kind, source, position, kind == "code" and is_params))
    notes = []
    if odd:
        notes.append(f"{odd} malformed cell(s) in the notebook were ignored")
    if not any(c.cell_type == "code" for c in cells):
        notes.append("the notebook has no code cells")
    return cells, notes


def find_submission(student_dir: Path, expected: str, lesson: str) -> tuple[Path | None, list[str]]:
    """The notebook to grade in one student's folder, and notes about its name.

    The exact lesson file name is expected; a single other notebook of the
    same lesson (or the only notebook in the folder) is graded with a note.
    """
    exact = student_dir / expected
    if exact.is_file() or exact.is_symlink():
        return exact, []
    found: list[Path] = []
    for top, dirs, files in os.walk(student_dir):
        depth = len(Path(top).relative_to(student_dir).parts)
        dirs[:] = [d for d in dirs if not d.startswith(".") and depth < 3]
        found += [Path(top) / f for f in files if f.endswith(".ipynb")]
    found.sort()
    names = ", ".join(str(p.relative_to(student_dir)) for p in found[:10]) or "no notebooks"
    same = [
        p for p in found if p.name.lower() == expected.lower() or p.name.startswith(f"{lesson}_")
    ]
    other_lessons = [p for p in found if re.match(r"\d\d_", p.name) and p not in same]
    pick = None
    if len(same) == 1:
        pick = same[0]
    elif len(found) == 1 and not other_lessons:
        pick = found[0]
    if pick is None:
        return None, [f"no {expected} in the submission folder (found: {names})"]
    rel = pick.relative_to(student_dir)
    return pick, [f"wrong file name: expected {expected}, graded {rel}"]
