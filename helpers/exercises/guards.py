"""What runs around a student's function while it is checked.

- :func:`helpers_unavailable`: the course helpers that implement an exercise's answer
  raise "use your own code" while the student's function runs;
- :func:`signature_mismatch`: a function whose parameters were renamed is told to
  keep the names of the exercise cell, rather than shown Python's TypeError alone.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import re
import traceback
from typing import Any

_UNAVAILABLE = "__helper_unavailable__"


def _unavailable_stub(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("__helper_unavailable__")


@contextlib.contextmanager
def helpers_unavailable(names: tuple[str, ...], key: str) -> Any:
    """Make the helpers that implement an exercise's answer raise while it is checked.

    The code object of each named function is swapped for one that raises
    ``RuntimeError("... use your own code")``, so every reference to it fails,
    whatever name or module the student reached it through; it is restored
    afterwards (the checker's own verification runs with the real helpers).

    Args:
      names: public dotted names, e.g. ``"helpers.records.read_records"``.
      key: the exercise being checked (named in the message).
    """
    swapped: list[tuple[Any, Any]] = []
    consts = _unavailable_stub.__code__.co_consts
    try:
        for dotted in names:
            module_name, _, attr = dotted.rpartition(".")
            func = inspect.unwrap(getattr(importlib.import_module(module_name), attr))
            code = getattr(func, "__code__", None)
            if code is None or func.__closure__:
                raise TypeError(f"{dotted} cannot be switched off for {key}")
            message = (
                f"{dotted} is switched off while {key} is checked: the exercise is to write "
                "this yourself, so use your own code"
            )
            stub = _unavailable_stub.__code__.replace(
                co_consts=tuple(message if c == _UNAVAILABLE else c for c in consts)
            )
            swapped.append((func, code))
            func.__code__ = stub
        yield
    finally:
        for func, code in swapped:
            func.__code__ = code


_SIGNATURE_ERROR = re.compile(
    r"(unexpected keyword argument|missing \d+ required|takes \d+ positional argument|"
    r"takes from \d+ to \d+ positional)"
)


def signature_mismatch(exercise: Any, func: Any, err: BaseException) -> str | None:
    """A hint when ``err`` was raised by *calling* ``func`` (renamed or missing parameters)."""
    if not isinstance(err, TypeError) or not _SIGNATURE_ERROR.search(str(err)):
        return None
    name = getattr(func, "__qualname__", getattr(func, "__name__", ""))
    if not str(err).startswith(f"{name}()"):
        return None
    frames = traceback.extract_tb(err.__traceback__)
    code = getattr(func, "__code__", None)
    if code is not None and frames and frames[-1].filename == code.co_filename:
        if frames[-1].name == code.co_name:
            return None  # raised inside the function: its own bug, not its signature
    try:
        mine = str(inspect.signature(func))
    except (TypeError, ValueError):
        mine = "(...)"
    return (
        f"TypeError: {err}: keep the parameter names of the exercise cell "
        f"(your {exercise.target}{mine} cannot be called the way the check calls it)"
    )
