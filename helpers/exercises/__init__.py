"""Exercise checks shared by the lessons' check cells and the instructor's grader.

Every exercise asks for a function (or an artefact written by a function) so
that it can be checked on *fresh inputs*:

1. ``make_cases(rng, workdir)`` (runs in the checker's process) draws new
   inputs: a list of JSON-able keyword dicts; files it needs go in ``workdir``.
2. The student's function is called on every case (in the student's kernel)
   and each result is encoded to JSON (:func:`to_jsonable`).
3. ``verify(case, result)`` (in the checker's process again) raises
   :class:`CheckFailed` naming what is wrong.

In a notebook, ``check("02.int64_feature")`` does all three in one process and
prints the verdict. The grader (:mod:`helpers.grading`) does step 1 and 3 in
its own process and only step 2 in the student's kernel, talking through
files, so printing "all passed" or patching this module earns nothing.

Exercises live in one module per lesson (``helpers.exercises.lNN``) and
register themselves with :func:`register`.
"""

from __future__ import annotations

import base64
import html
import importlib
import inspect
import io
import json
import math
import os
import pkgutil
import secrets
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from helpers.exercises.feedback import quiet_stubs as _quiet_stubs
from helpers.exercises.feedback import show as _show
from helpers.exercises.guards import helpers_unavailable, signature_mismatch

__all__ = [
    "CheckFailed",
    "Exercise",
    "check",
    "exercises_for",
    "from_jsonable",
    "get",
    "guarded",
    "kernel_answer",
    "lessons",
    "make_cases_file",
    "progress_table",
    "register",
    "run_cases",
    "show_progress",
    "to_jsonable",
    "verify_answers",
]


class CheckFailed(AssertionError):
    """An exercise check failed; ``str(err)`` says what is wrong and how to fix it."""

    def __init__(self, message: str, hint: str | None = None):
        self.message = message
        self.hint = hint
        super().__init__(message + (f"\nHint: {hint}" if hint else ""))

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for a failed check: the message and hint, no checker frames."""
        lines = str(self).splitlines() or ["check failed"]
        return ["\x1b[1;31m✘ " + lines[0] + "\x1b[0m", *lines[1:]]


@dataclass(frozen=True)
class Exercise:
    """One graded exercise.

    Attributes:
      key: ``"NN.name"``, e.g. ``"02.int64_feature"``.
      target: the name the student defines in the notebook (a function).
      title: one line shown in feedback.
      make_cases: ``(rng, workdir) -> list of JSON-able kwargs dicts``.
      verify: ``(case, result) -> None``; raises :class:`CheckFailed`.
      hint: shown when the check fails.
      points: the exercise's weight in the gradebook.
      call: ``(func, case) -> result``; default ``func(**case)``. Runs in the kernel.
      encode: ``result -> JSON-able``; default :func:`to_jsonable`. Runs in the kernel.
      unavailable: public helpers that implement the answer (``"helpers.train.choose_device"``);
        while the student's function runs they raise "use your own code".
      allow_non_finite: accept NaN and infinity in an answer; by default any non-finite
        number in it (a float, or inside a float array) fails before ``verify`` runs, since
        NaN compares false with everything and slips through range and tolerance checks.
      self_reported: the verdict rests on behaviour the checker measures in the process
        that runs the student's function (concurrent opens, queue ops, parse counts). In a
        notebook that is the truth; a grader must not score it from a hostile kernel's
        answers (it can forge them) unless it measures the behaviour itself.
    """

    key: str
    target: str
    title: str
    make_cases: Callable[[np.random.Generator, Path], list[dict[str, Any]]]
    verify: Callable[[dict[str, Any], Any], None]
    hint: str
    points: int = 1
    call: Callable[[Callable[..., Any], dict[str, Any]], Any] | None = None
    encode: Callable[[Any], Any] | None = None
    unavailable: tuple[str, ...] = ()
    self_reported: bool = False
    allow_non_finite: bool = False

    @property
    def lesson(self) -> str:
        return self.key.split(".", 1)[0]


_REGISTRY: dict[str, Exercise] = {}


def guarded(
    func: Any,
    *args: Any,
    catch: tuple[type[BaseException], ...] = (ValueError, TypeError, KeyError, IndexError),
    **kwargs: Any,
) -> Any:
    """Call a student's function; a refusal it raises on purpose becomes data.

    Exercises that ask for bad input to be refused need the refusal to cross
    the kernel boundary as an answer: an exception of a type in ``catch``
    becomes ``{"raised": "Type: message"}``, which the verifier judges.
    ``NotImplementedError`` (an exercise not done yet) always propagates.

    Args:
      func: the student's function.
      *args: its positional arguments.
      catch: the exception types that count as a refusal.
      **kwargs: its keyword arguments.

    Returns:
      What ``func`` returned, or ``{"raised": ...}``.
    """
    try:
        return func(*args, **kwargs)
    except NotImplementedError:
        raise
    except catch as err:
        return {"raised": f"{type(err).__name__}: {err}"}


def register(exercise: Exercise) -> Exercise:
    """Add an exercise to the registry (keys are unique)."""
    if exercise.key in _REGISTRY and _REGISTRY[exercise.key] is not exercise:
        raise ValueError(f"exercise {exercise.key!r} is registered twice")
    _REGISTRY[exercise.key] = exercise
    return exercise


def lessons() -> list[str]:
    """Lesson numbers that have exercise modules (``["01", "02", ...]``)."""
    found = []
    for mod in pkgutil.iter_modules(__path__):
        if mod.name.startswith("l") and mod.name[1:].isdigit():
            found.append(mod.name[1:])
    return sorted(found)


def exercises_for(lesson: str | int) -> list[Exercise]:
    """The exercises of one lesson, in registration (= notebook) order."""
    lesson = f"{int(lesson):02d}"
    try:
        importlib.import_module(f"{__name__}.l{lesson}")
    except ModuleNotFoundError as err:
        if err.name == f"{__name__}.l{lesson}":
            return []
        raise
    return [ex for ex in _REGISTRY.values() if ex.lesson == lesson]


def get(key: str) -> Exercise:
    """Look an exercise up by key, importing its lesson module on demand."""
    if key not in _REGISTRY:
        exercises_for(key.split(".", 1)[0])
    try:
        return _REGISTRY[key]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise KeyError(f"no exercise {key!r} (known: {known})") from None


# ---------------------------------------------------------------------------
# JSON codec: what crosses the kernel boundary.
# ---------------------------------------------------------------------------


def to_jsonable(obj: Any, _depth: int = 0) -> Any:
    """Encode a result as JSON-able data (bytes, arrays, tensors and protobufs included).

    Args:
      obj: the value a student's function returned.

    Returns:
      Plain JSON data; :func:`from_jsonable` reverses it.

    Raises:
      TypeError: a value with no encoding (say what the function should return).
    """
    if _depth > 50:
        raise TypeError("result nested too deeply")
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int) and not isinstance(obj, bool):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else {"__float__": repr(obj)}
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return {"__bytes__": base64.b64encode(bytes(obj)).decode("ascii")}
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, np.generic):
        return (
            to_jsonable(obj.item(), _depth + 1)
            if obj.dtype.kind != "S"
            else to_jsonable(bytes(obj))
        )
    if isinstance(obj, np.ndarray):
        buf = io.BytesIO()
        np.save(buf, obj, allow_pickle=False)
        return {"__ndarray__": base64.b64encode(buf.getvalue()).decode("ascii")}
    if hasattr(obj, "SerializeToString") and hasattr(obj, "DESCRIPTOR"):
        return {
            "__proto__": obj.DESCRIPTOR.full_name,
            "b64": base64.b64encode(obj.SerializeToString(deterministic=True)).decode("ascii"),
        }
    if type(obj).__module__.startswith("tensorflow") and hasattr(obj, "numpy"):
        return to_jsonable(obj.numpy(), _depth + 1)
    if hasattr(obj, "to_list") and type(obj).__name__ == "RaggedTensor":
        return to_jsonable(obj.to_list(), _depth + 1)
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj):
            raise TypeError("dict keys must be strings")
        return {"__dict__": {k: to_jsonable(v, _depth + 1) for k, v in obj.items()}}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v, _depth + 1) for v in obj]
    raise TypeError(f"cannot send a {type(obj).__module__}.{type(obj).__name__} to the checker")


def _proto_class(full_name: str) -> Any:
    from google.protobuf import symbol_database

    import helpers.features  # noqa: F401  (registers tf.train.* messages)

    return symbol_database.Default().GetSymbol(full_name)


def from_jsonable(data: Any) -> Any:
    """Decode what :func:`to_jsonable` produced (protobufs come back as messages when known)."""
    if isinstance(data, list):
        return [from_jsonable(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "__bytes__" in data:
        return base64.b64decode(data["__bytes__"])
    if "__float__" in data:
        return float(data["__float__"])
    if "__ndarray__" in data:
        return np.load(io.BytesIO(base64.b64decode(data["__ndarray__"])), allow_pickle=False)
    if "__proto__" in data:
        raw = base64.b64decode(data["b64"])
        try:
            cls = _proto_class(data["__proto__"])
        except KeyError:
            return raw
        msg = cls()
        msg.ParseFromString(raw)
        return msg
    if "__dict__" in data:
        return {k: from_jsonable(v) for k, v in data["__dict__"].items()}
    return {k: from_jsonable(v) for k, v in data.items()}


# ---------------------------------------------------------------------------
# Running and verifying.
# ---------------------------------------------------------------------------


def run_cases(exercise: Exercise, func: Any, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Call the student's function on every case (kernel side) and encode the results.

    The helpers in ``exercise.unavailable`` raise while the function runs.

    Returns:
      One ``{"ok": json}`` or ``{"error": "ExcType: message"}`` per case.
    """
    answers: list[dict[str, Any]] = []
    with helpers_unavailable(exercise.unavailable, exercise.key):
        for case in cases:
            answers.append(_run_case(exercise, func, case))
    return answers


def _run_case(exercise: Exercise, func: Any, case: dict[str, Any]) -> dict[str, Any]:
    try:
        if not callable(func):
            raise TypeError(f"{exercise.target} is not a function (got {type(func).__name__})")
        result = exercise.call(func, dict(case)) if exercise.call else func(**case)
        encoded = (exercise.encode or to_jsonable)(result)
        json.dumps(encoded)
        return {"ok": encoded}
    except NotImplementedError:
        return {"error": NOT_DONE}
    except Exception as err:  # noqa: BLE001 - everything the student's code raises is feedback
        renamed = signature_mismatch(exercise, func, err)
        if renamed:
            return {"error": renamed[:2000]}
        tb = traceback.extract_tb(err.__traceback__)
        where = f" (line {tb[-1].lineno} of {Path(tb[-1].filename).name})" if tb else ""
        return {"error": f"{type(err).__name__}: {err}{where}"[:2000]}


NOT_DONE = "NotImplementedError: the exercise is not done yet"

_ASSERT_HINT = (
    'refuse bad input with `raise ValueError("what is wrong")`, not `assert`: an assert '
    "is a check for bugs, it raises AssertionError and is removed by `python -O`"
)


def _first_failure(
    exercise: Exercise, cases: list[dict[str, Any]], answers: list[dict[str, Any]]
) -> tuple[int | None, str]:
    """``(index of the first failing case or None, detail)``; see :func:`verify_answers`."""
    if len(answers) != len(cases):
        return -1, f"expected {len(cases)} answers, got {len(answers)}"
    for i, (case, answer) in enumerate(zip(cases, answers, strict=True)):
        label = f"case {i + 1} of {len(cases)}"
        if not isinstance(answer, dict) or ("ok" not in answer and "error" not in answer):
            return i, f"{label}: malformed answer"
        if "error" in answer:
            error = str(answer["error"])
            hint = _ASSERT_HINT if error.startswith("AssertionError") else exercise.hint
            return i, f"{label}: your function raised {error}\nHint: {hint}"
        try:
            result = from_jsonable(answer["ok"])
            where = None if exercise.allow_non_finite else _non_finite(result)
            if where is not None:
                raise CheckFailed(
                    f"your function returned {where}: NaN and infinity are never a valid "
                    "answer here",
                    "look for a division by zero, a log of 0, or an uninitialised array (np.empty)",
                )
            exercise.verify(case, result)
        except CheckFailed as err:
            hint = err.hint or exercise.hint
            return i, f"{label}: {err.message}" + (f"\nHint: {hint}" if hint else "")
        except Exception as err:  # noqa: BLE001 - a verifier choking on odd output is a failure too
            return (
                i,
                f"{label}: the result could not be checked ({type(err).__name__}: {err})\nHint: {exercise.hint}",
            )
    return None, f"passed on {len(cases)} fresh cases"


def _non_finite(value: Any, where: str = "", depth: int = 0) -> str | None:
    """Where a NaN or infinity sits in a decoded answer (``None`` when there is none)."""
    if depth > 50:
        return None
    if isinstance(value, (float, np.floating)) and not math.isfinite(float(value)):
        return f"{float(value)!r}" + (f" at {where}" if where else "")
    if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        bad = ~np.isfinite(value)
        if bad.any():
            return f"an array with {int(bad.sum())} of {value.size} values NaN or infinite" + (
                f" at {where}" if where else ""
            )
    if isinstance(value, dict):
        for key, item in value.items():
            found = _non_finite(item, f"{where}[{key!r}]", depth + 1)
            if found:
                return found
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = _non_finite(item, f"{where}[{i}]", depth + 1)
            if found:
                return found
    return None


def verify_answers(
    exercise: Exercise, cases: list[dict[str, Any]], answers: list[dict[str, Any]]
) -> tuple[bool, str]:
    """Verify encoded answers in the checker's process.

    Returns:
      ``(passed, detail)``; ``detail`` names the first failing case and the hint.
    """
    index, detail = _first_failure(exercise, cases, answers)
    return index is None, detail


def progress_table() -> list[tuple[str, str, str]]:
    """Every exercise of every lesson with its status for this learner (no imports)."""
    from helpers.exercises import progress

    return [(r["key"], r["title"], r["status"]) for r in progress.status_rows()]


def show_progress(lesson: str | int | None = None) -> None:
    """Show the learner's progress (one lesson, or the whole course): a lesson's last cell."""
    from helpers.exercises import progress

    progress.show(lesson)


def _describe_input(case: dict[str, Any], limit: int = 600) -> str:
    text = json.dumps(case, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + " ..."


def check(key: str, func: Any = None, seed: int | None = None) -> None:
    """Check an exercise on fresh inputs, in this process (the notebook's check cell).

    A pass is shown as a green line; a function that still raises
    ``NotImplementedError`` gets one "not attempted yet" line and is not
    recorded; a failure raises :class:`CheckFailed` with the message, the hint,
    the failing input and the ``check(key, seed=N)`` call that reproduces it.

    Args:
      key: the exercise, e.g. ``"02.int64_feature"``.
      func: the student's function; by default the exercise's target name is
        looked up in the caller's (the notebook's) globals.
      seed: fix the inputs (to reproduce a failure); fresh random inputs by default.

    Raises:
      CheckFailed: what is wrong, with a hint.
    """
    from helpers.exercises import progress

    exercise = get(key)
    if func is None:
        caller = inspect.currentframe().f_back  # type: ignore[union-attr]
        namespace = caller.f_globals if caller else {}
        if exercise.target not in namespace:
            raise CheckFailed(
                f"{exercise.target} is not defined: run the exercise cell first", exercise.hint
            )
        func = namespace[exercise.target]
    seed = secrets.randbits(32) if seed is None else seed
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory(prefix=f"check-{exercise.key}-") as tmp:
        cases = exercise.make_cases(rng, Path(tmp))
        json.dumps(cases)  # cases must cross the kernel boundary in the grader too
        answers = json.loads(json.dumps(run_cases(exercise, func, cases)))
        index, detail = _first_failure(exercise, cases, answers)
    if index is not None and any(a.get("error") == NOT_DONE for a in answers):
        _show(
            f"· {exercise.key}: not attempted yet (replace `raise NotImplementedError()` "
            "with your code, then run this cell again)",
            f"<span style='color:#666'>· <code>{html.escape(exercise.key)}</code>: not "
            "attempted yet (replace <code>raise NotImplementedError()</code> with your code, "
            "then run this cell again)</span>",
        )
        return
    progress.record(exercise.key, index is None)
    if index is not None:
        where = ""
        if index is not None and 0 <= index < len(cases):
            where = f"\nFailing input: {_describe_input(cases[index])}"
        raise CheckFailed(
            f"{exercise.key} ({exercise.title}): {detail}{where}\n"
            f"Same inputs again: check({exercise.key!r}, seed={seed})"
        )
    text = f"✔ {exercise.key} ({exercise.title}): {detail}"
    _show(
        text,
        f"<div style='color:#1a7f37;font-weight:bold'>✔ passed: {html.escape(exercise.key)} "
        f"({html.escape(exercise.title)}): {html.escape(detail)}</div>",
    )


# ---------------------------------------------------------------------------
# The grader's side of the file protocol.
# ---------------------------------------------------------------------------


def make_cases_file(lesson: str, workdir: Path, seed: int) -> Path:
    """Draw fresh cases for every exercise of a lesson into ``workdir/cases.json``."""
    workdir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    all_cases = {}
    for ex in exercises_for(lesson):
        case_dir = workdir / ex.key.replace(".", "_")
        case_dir.mkdir(exist_ok=True)
        all_cases[ex.key] = ex.make_cases(rng, case_dir)
    path = workdir / "cases.json"
    path.write_text(json.dumps(all_cases))
    return path


def kernel_answer(key: str, cases_path: str, answers_path: str, namespace: dict[str, Any]) -> None:
    """Kernel side of grading: answer one exercise's cases into ``answers_path``.

    Args:
      key: the exercise.
      cases_path: ``cases.json`` written by :func:`make_cases_file`.
      answers_path: where to write this exercise's answers (JSON).
      namespace: the notebook's globals (where the student's function lives).
    """
    exercise = get(key)
    cases = json.loads(Path(cases_path).read_text())[key]
    func = namespace.get(exercise.target)
    if func is None:
        answers = [{"error": f"NameError: {exercise.target} is not defined"}] * len(cases)
    else:
        answers = run_cases(exercise, func, cases)
    Path(answers_path).write_text(json.dumps(answers))


def _main() -> int:
    from helpers.exercises import progress

    return progress.main()


_quiet_stubs()
