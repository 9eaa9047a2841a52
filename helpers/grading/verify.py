"""Verify a kernel's answers in a child process that cannot make the grader do unbounded work.

An answer file is data the student controls: a crafted one can ask numpy for
a zero-itemsize array of 10**15 elements, hold a 900 MB string, or make a
verifier loop for hours. So verification runs in a long-lived child process
(one per grading worker, started on first use) with

- ``RLIMIT_DATA`` = ``Limits.verify_memory`` (a big allocation is a
  ``MemoryError`` there, not in the grader);
- ``RLIMIT_CPU`` renewed before each request (``Limits.verify_seconds``);
- a wall-clock timeout in the grader, which kills the child (and starts a
  new one for the next answer);

and before any answer is decoded it is checked generically: a bounded number
of JSON values, no ``NaN``/``Infinity`` literals, no non-finite float, and
every array header read first (positive itemsize, no objects, at most
``MAX_ELEMENTS`` elements). Decoded float arrays must be finite. A verdict
that breaks a limit is a 0 with the reason; the rest of the grading goes on.

:func:`serve` is that child's loop (JSON lines on stdin/stdout).
"""

from __future__ import annotations

import base64
import ctypes
import importlib
import importlib.util
import io
import json
import math
import os
import resource
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

MAX_ELEMENTS = 50_000_000
MAX_VALUES = 2_000_000


class BadAnswer(ValueError):
    """The answer is refused before verification; ``str(err)`` says why."""


def _refuse_constant(name: str) -> Any:
    raise BadAnswer(f"the answer holds {name}, a non-finite number, which is never correct here")


def _array_header(b64: Any) -> None:
    import numpy as np

    if not isinstance(b64, str):
        raise BadAnswer("an encoded array is malformed")
    raw = io.BytesIO(base64.b64decode(b64[:4096] + "=" * (-len(b64[:4096]) % 4)))
    try:
        version = np.lib.format.read_magic(raw)
        read = {(1, 0): np.lib.format.read_array_header_1_0}.get(
            version, np.lib.format.read_array_header_2_0
        )
        shape, _, dtype = read(raw)
    except (ValueError, OSError, SyntaxError, TypeError) as err:
        raise BadAnswer(f"an encoded array is malformed ({err})") from None
    if dtype.hasobject:
        raise BadAnswer("an array of Python objects is not an answer")
    if dtype.itemsize == 0:
        raise BadAnswer(f"an array of dtype {dtype} (zero bytes per element) is not an answer")
    elements = math.prod(shape)
    if elements > MAX_ELEMENTS:
        raise BadAnswer(f"an array of {elements} elements is over the {MAX_ELEMENTS} limit")


def screen(data: Any) -> None:
    """Refuse an encoded answer that would be costly or is non-finite (before decoding)."""
    stack, seen = [data], 0
    while stack:
        node = stack.pop()
        seen += 1
        if seen > MAX_VALUES:
            raise BadAnswer(f"the answer holds over {MAX_VALUES} values")
        if isinstance(node, float) and not math.isfinite(node):
            _refuse_constant(repr(node))
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            if "__ndarray__" in node:
                _array_header(node["__ndarray__"])
            if "__float__" in node:
                try:
                    value = float(node["__float__"])
                except (TypeError, ValueError):
                    raise BadAnswer("an encoded float is malformed") from None
                if not math.isfinite(value):
                    _refuse_constant(repr(value))
            stack.extend(node.values())


def check_finite(value: Any, depth: int = 0) -> None:
    """Refuse decoded answers holding NaN or infinity (floats, arrays, nested)."""
    import numpy as np

    if depth > 60:
        return
    if isinstance(value, float) and not math.isfinite(value):
        _refuse_constant(repr(value))
    elif isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        if not np.isfinite(value).all():
            _refuse_constant("NaN or infinity in an array")
    elif isinstance(value, (list, tuple)):
        for v in value:
            check_finite(v, depth + 1)
    elif isinstance(value, dict):
        for v in value.values():
            check_finite(v, depth + 1)


def verify_text(exercise: Any, cases: list[Any], text: str) -> tuple[bool, str]:
    """Screen, decode and verify one exercise's answers (in the child process)."""
    from helpers.exercises import from_jsonable, verify_answers

    try:
        answers = json.loads(text, parse_constant=_refuse_constant)
    except BadAnswer as err:
        return False, str(err)
    except (ValueError, RecursionError):
        return False, "the answers written in the kernel are not valid JSON"
    if not isinstance(answers, list):
        return False, "the answers written in the kernel are malformed"
    for i, answer in enumerate(answers):
        if isinstance(answer, dict) and "ok" in answer:
            try:
                screen(answer["ok"])
                check_finite(from_jsonable(answer["ok"]))
            except BadAnswer as err:
                return False, f"case {i + 1} of {len(cases)}: {err}"
            except Exception:  # noqa: BLE001 - undecodable: verify_answers says so
                pass
    return verify_answers(exercise, cases, answers)


def import_exercises_ref(ref: str) -> None:
    """Import an exercises module given as a dotted name or a ``.py`` path."""
    if ref.endswith(".py") or os.sep in ref:
        path = Path(ref).resolve()
        name = path.stem
        loaded = sys.modules.get(name)
        if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() == path:
            return
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import exercises from {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
    else:
        importlib.import_module(ref)


def load_exercises(lesson: str, ref: str | None = None) -> list[Any]:
    """The lesson's exercises, in notebook order (``helpers.exercises.lNN`` or ``ref``)."""
    from helpers import exercises as registry

    if ref:
        import_exercises_ref(ref)
        return [ex for ex in registry._REGISTRY.values() if ex.lesson == lesson]
    return registry.exercises_for(lesson)


# ---------------------------------------------------------------------------
# The child process
# ---------------------------------------------------------------------------


def _child_limits(memory: int) -> None:
    resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def serve(memory: int) -> int:
    """The child's loop: one JSON request per line in, one verdict per line out."""
    _child_limits(memory)
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # prints in a verifier go to the log, not into the protocol
    for line in sys.stdin:
        req = json.loads(line)
        if req.get("warm"):  # import the checks (and TensorFlow) while the kernel runs
            try:
                load_exercises(req["lesson"], req["ref"])
            except Exception:  # noqa: BLE001 - the real request reports it
                pass
            out.write('{"warm": true}\n')
            out.flush()
            continue
        used = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
        soft = int(used + req["seconds"]) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.RLIM_INFINITY))
        try:
            exercises = {ex.key: ex for ex in load_exercises(req["lesson"], req["ref"])}
            passed, detail = verify_text(exercises[req["key"]], req["cases"], req["answer"])
        except MemoryError:
            passed, detail = False, "verifying your answer needed more memory than allowed"
        except RecursionError:
            passed, detail = False, "your answer is nested too deeply to verify"
        out.write(json.dumps({"passed": passed, "detail": detail}) + "\n")
        out.flush()
    return 0


_CHILD = "import sys\nfrom helpers.grading.verify import serve\nsys.exit(serve(int(sys.argv[1])))"


def _pythonpath() -> str:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)


class Verifier:
    """The grader's side: sends answers to the child, enforces the wall-clock limit."""

    def __init__(self, memory: int, seconds: float):
        self.memory, self.seconds = memory, seconds
        self.proc: subprocess.Popen[bytes] | None = None
        self.pending = 0  # warm-up replies not read yet

    def _ensure(self) -> subprocess.Popen[bytes]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _CHILD, str(int(self.memory))],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": _pythonpath()},
            )
        return self.proc

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
        self.pending = 0

    def warm(self, lesson: str, ref: str | None) -> None:
        """Have the child import the lesson's checks now, without waiting for it."""
        if self.proc is not None and self.proc.poll() is None:
            return
        proc = self._ensure()
        try:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps({"warm": True, "lesson": lesson, "ref": ref}).encode())
            proc.stdin.write(b"\n")
            proc.stdin.flush()
            self.pending += 1
        except OSError:
            self.close()

    def _reply(self, proc: subprocess.Popen[bytes], timeout: float) -> bytes | None:
        assert proc.stdout is not None
        fd, buf = proc.stdout.fileno(), b""
        deadline = time.monotonic() + timeout
        while not buf.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            buf += chunk
        return buf

    def verify(
        self, lesson: str, ref: str | None, key: str, cases: list[Any], answer: str
    ) -> tuple[bool, str]:
        """``(passed, detail)`` for one exercise's answers, within the limits."""
        proc = self._ensure()
        while self.pending:  # the warm-up (imports) first, with time for a loaded machine
            if self._reply(proc, 600) is None:
                self.close()
                proc = self._ensure()
                break
            self.pending -= 1
        request = {
            "lesson": lesson,
            "ref": ref,
            "key": key,
            "cases": cases,
            "answer": answer,
            "seconds": self.seconds,
        }
        try:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            proc.stdin.flush()
        except OSError:
            self.close()
            return False, "the grader's verifier stopped before checking your answer"
        # the first request also imports the checks (and TensorFlow): give it time
        reply = self._reply(proc, self.seconds * 1.5 + 60)
        if reply is None:
            code = proc.poll()
            self.close()
            if code is None:
                return False, f"verifying your answer took over {self.seconds:.0f} s"
            return False, (
                "verifying your answer went over the grader's limits "
                f"({self.memory >> 20} MiB of memory, {self.seconds:.0f} s of CPU)"
            )
        verdict = json.loads(reply)
        return bool(verdict["passed"]), str(verdict["detail"])
