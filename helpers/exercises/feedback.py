"""How checks look in a notebook: HTML with a plain-text fallback, and one quiet line
for an exercise stub that has not been written yet."""

from __future__ import annotations

import sys
import traceback
from typing import Any


def show(text: str, html_text: str) -> None:
    """HTML in a notebook (with the text as fallback), the text elsewhere."""
    try:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is not None and "ipykernel" in sys.modules:
            display({"text/plain": text, "text/html": html_text}, raw=True)
            return
    except ImportError:
        pass
    print(text)


def quiet_stubs() -> None:
    """In a notebook, an untouched exercise stub shows one line instead of a traceback.

    A lesson's exercise cell often calls the function it defines; while the body is
    still ``raise NotImplementedError()`` that call fails. IPython then shows one
    grey line on stdout; the cell still counts as failed (so the grader and
    papermill judge it as before), but no red traceback box says "your code is
    wrong" about code the learner has not written yet.
    """
    if "IPython" not in sys.modules:
        return
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None or getattr(shell, "_tfrecord_course_stubs", False):
        return
    original = shell.showtraceback

    def showtraceback(exc_tuple: Any = None, *args: Any, **kwargs: Any) -> Any:
        etype, value, tb = exc_tuple if exc_tuple else sys.exc_info()
        frames = traceback.extract_tb(tb) if tb is not None else []
        if (
            etype is NotImplementedError
            and not str(value)
            and frames
            and (frames[-1].line or "").strip() == "raise NotImplementedError()"
        ):
            print(f"· {frames[-1].name}: not attempted yet (write your code in its cell)")
            return None
        return original(exc_tuple, *args, **kwargs)

    shell.showtraceback = showtraceback
    shell._tfrecord_course_stubs = True
