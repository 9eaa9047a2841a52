"""The instructor's grader: papermill-parameterised notebooks, graded by data, hard to fool.

``python -m helpers.grading --lesson NN --submissions DIR --output DIR
[--jobs N] [--no-sandbox] [--kernel NAME] [--roster CSV] [--gradescope]
[-p NAME VALUE]...`` grades ``DIR/<student>/<lesson notebook>.ipynb`` and
writes ``gradebook.csv``, ``summary.csv``, ``feedback/<student>.md`` and
``.html``, the executed notebooks under ``executed/<student>/``, a similarity
report and, on request, Canvas and Gradescope exports.
``python -m helpers.grading validate NOTEBOOK`` grades one notebook the same way.

How a submission is graded (details in the submodules):

- :mod:`~helpers.grading.reading`: only the source of the student's cells is taken.
- :mod:`~helpers.grading.build`: papermill injects the lesson's parameters; the
  grader appends its own cells, one per exercise, which call the student's
  function on inputs the grader drew fresh.
- :mod:`~helpers.grading.submission`: one submission's private folders (nothing
  the grader trusts is in the kernel's reach), the run, the verdicts.
- :mod:`~helpers.grading.runner`, :mod:`~helpers.grading.client`,
  :mod:`~helpers.grading.processes`: a fresh kernel per submission, judged
  cell by cell by the kernel's execute-reply status, timeouts, watchdog
  (memory, processes, disk), restart-and-skip after a crash, capped output,
  no surviving process.
- :mod:`~helpers.grading.sandbox`: resource limits, a clean environment, and
  the bubblewrap allowlist (the default).
- :mod:`~helpers.grading.verify`: answers verified in a limited child process.
- :mod:`~helpers.grading.fsafe`: file operations a kernel cannot redirect.
- :mod:`~helpers.grading.sanitise`: executed notebooks keep no live markup.
- :mod:`~helpers.grading.report`, :mod:`~helpers.grading.exports`,
  :mod:`~helpers.grading.similarity`: gradebook, escaped feedback, Canvas and
  Gradescope exports, the similarity report.
- :mod:`~helpers.grading.batch`: the parallel run; :mod:`~helpers.grading.cli`:
  the command line; :mod:`~helpers.grading.bench`: the grader against papermill.
"""

import importlib
from typing import Any

#: Public names and their modules, imported on first use: the verifier child process
#: imports ``helpers.grading.verify`` without paying for nbclient and nbformat.
_PUBLIC = {
    "ExerciseGrade": "helpers.grading.verdicts",
    "GradingError": "helpers.grading.batch",
    "Limits": "helpers.grading.runner",
    "Settings": "helpers.grading.batch",
    "SubmissionGrade": "helpers.grading.verdicts",
    "grade": "helpers.grading.batch",
    "main": "helpers.grading.cli",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'helpers.grading' has no attribute {name!r}")
