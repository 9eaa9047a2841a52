"""The instructor's grader: papermill-parameterised notebooks, graded by data, hard to fool.

``python -m helpers.grading --lesson NN --submissions DIR --output DIR
[--timeout S] [--cell-timeout S] [--memory-limit 4G] [--jobs N] [--sandbox]
[-p NAME VALUE]...`` grades ``DIR/<student>/<lesson notebook>.ipynb`` and
writes ``gradebook.csv`` (student, lesson, exercise, score, max_score,
status, detail), ``summary.csv``, ``feedback/<student>.md`` and ``.html``,
and the executed notebooks under ``executed/<student>/``.

How a submission is graded (details in the submodules):

- :mod:`~helpers.grading.submission`: only the source of the student's cells
  is taken; papermill injects the lesson's parameters; the grader appends its
  own cells, one per exercise, which call the student's function on inputs
  the grader drew fresh; the answers are verified outside the kernel with the
  lesson's own check code.
- :mod:`~helpers.grading.runner`: a fresh kernel per submission (always this
  venv's ``python3``, whatever the notebook says), judged cell by cell by the
  kernel's execute-reply status, per-cell and per-notebook timeouts, an RSS
  watchdog, restart-and-skip after a crash, capped output.
- :mod:`~helpers.grading.sandbox`: resource limits, a clean environment, and
  bubblewrap for ``--sandbox``.
- :mod:`~helpers.grading.report`: gradebook and escaped feedback.
- :mod:`~helpers.grading.batch`: the parallel run (``--jobs``) and the CLI.
- :mod:`~helpers.grading.bench`: ``python -m helpers.grading bench``: the
  grader against plain sequential papermill.
"""

from helpers.grading.batch import GradingError, grade, main
from helpers.grading.runner import Limits
from helpers.grading.submission import ExerciseGrade, SubmissionGrade

__all__ = ["ExerciseGrade", "GradingError", "Limits", "SubmissionGrade", "grade", "main"]
