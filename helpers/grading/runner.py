"""Execute one notebook cell by cell in a fresh, limited kernel, and say what happened to each cell.

nbclient does the talking to the kernel; this module decides what a cell's
fate was and keeps going when a cell misbehaves:

- Each cell is judged by the kernel's ``execute_reply`` status (``ok`` /
  ``error``), never by scanning its outputs: a cell that replaced
  ``get_ipython().showtraceback`` still replies ``error``.
- Every cell has a timeout (nbclient has none by default). On timeout the
  kernel is interrupted (a Jupyter ``interrupt_request`` message, which also
  works inside the sandbox); if it does not answer a ``kernel_info`` probe
  within a grace period it is killed.
- A kernel that dies (``os._exit``, a segfault, the memory watchdog, a kill
  after a timeout) is restarted, the cells before are re-run and the culprit
  is skipped, at most ``max_restarts`` times: one crashing cell costs its own
  points, not the whole notebook.
- An RSS watchdog thread sums the memory of the kernel and all its children
  and kills the tree above the limit (the ``RLIMIT_DATA`` set by the
  launcher catches ordinary Python allocations first, as a ``MemoryError``).
- Output is capped per cell and per notebook while it arrives, so 300k printed
  lines never reach the executed notebook (or the grader's memory).
"""

from __future__ import annotations

import asyncio
import math
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any

import nbformat
import psutil
from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from helpers.grading.sandbox import launcher_cmd

GiB = 1 << 30


@dataclass(frozen=True)
class Limits:
    """Resource limits for one submission.

    Attributes:
      timeout: seconds for all of the student's cells together (re-runs after
        a restart included). The grader's own cells have their own budget.
      cell_timeout: seconds for any one cell (the student's or the grader's).
      memory: bytes of memory for the kernel and its children.
      file_size: largest file the kernel may write, in bytes.
      max_restarts: how often a dead kernel is restarted (culprit skipped).
      interrupt_grace: seconds a timed-out cell has to stop after the interrupt.
      cell_output_lines / cell_output_bytes: output kept per cell.
      notebook_output_lines / notebook_output_bytes: output kept per notebook.
    """

    timeout: float = 600.0
    cell_timeout: float = 120.0
    memory: int = 4 * GiB
    file_size: int = 1 * GiB
    max_restarts: int = 2
    interrupt_grace: float = 10.0
    cell_output_lines: int = 1_000
    cell_output_bytes: int = 2_000_000
    notebook_output_lines: int = 10_000
    notebook_output_bytes: int = 10_000_000


@dataclass
class CellRun:
    """What happened to one cell.

    ``status`` is one of ``ok``, ``error`` (the kernel replied error),
    ``timeout`` (interrupted after the cell timeout), ``killed`` (the kernel
    was killed: it ignored the interrupt, or hit the memory limit), ``died``
    (the kernel died by itself), ``not_run`` and ``skipped`` (it killed the
    kernel before and was left out of the re-run).
    """

    index: int
    status: str
    reason: str = ""
    ename: str = ""
    evalue: str = ""
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reason": self.reason,
            "ename": self.ename,
            "evalue": self.evalue[:500],
            "seconds": round(self.seconds, 2),
        }


@dataclass
class Execution:
    """The fate of every cell, and the kernel restarts on the way."""

    runs: dict[int, CellRun] = field(default_factory=dict)
    restarts: list[str] = field(default_factory=list)
    student_time_up: bool = False
    gave_up: bool = False
    start_error: str = ""
    seconds: float = 0.0
    kernel_log: str = ""


def describe_exit(code: int | None, sandboxed: bool) -> str:
    """A kernel's exit status in words."""
    if code is None:
        return "the kernel stopped"
    sig = -code if code < 0 else (code - 128 if sandboxed and 128 < code < 160 else 0)
    if sig:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        what = {
            "SIGSEGV": "crashed with a segmentation fault",
            "SIGBUS": "crashed with a bus error",
            "SIGABRT": "aborted",
            "SIGFPE": "crashed with a floating-point exception",
            "SIGILL": "crashed with an illegal instruction",
            "SIGKILL": "was killed (SIGKILL; usually the system running out of memory)",
        }.get(name, "was stopped")
        return f"the kernel {what} ({name})"
    return f"the kernel exited with status {code} (os._exit(), or a crash in native code)"


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def kill_tree(pid: int) -> None:
    """SIGKILL a process and all its descendants."""
    procs = _tree(pid)
    for proc in reversed(procs):
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=5)


class Watchdog(threading.Thread):
    """Kills the kernel's process tree above a memory limit or after a hard deadline."""

    def __init__(self, pid: int, memory: int, deadline: float):
        super().__init__(daemon=True, name=f"grader-watchdog-{pid}")
        self.pid, self.memory, self.deadline = pid, memory, deadline
        self.reason: str | None = None
        self._stop = threading.Event()

    def run(self) -> None:
        while not self._stop.wait(0.25):
            procs = _tree(self.pid)
            if not procs:
                return
            rss = 0
            for proc in procs:
                try:
                    rss += proc.memory_info().rss
                except psutil.Error:
                    pass
            if rss > self.memory:
                self.reason = (
                    f"the kernel used {rss / GiB:.1f} GiB of memory, over the "
                    f"{self.memory / GiB:.1f} GiB limit, and was stopped"
                )
            elif time.monotonic() > self.deadline:
                self.reason = "the grader's overall time limit for this notebook ran out"
            if self.reason:
                kill_tree(self.pid)
                return

    def stop(self) -> None:
        self._stop.set()


class GradingKernelManager(AsyncKernelManager):
    """Always this venv's ipykernel, through the limits launcher (and bubblewrap).

    The notebook's kernelspec and every installed kernelspec are ignored.
    """

    def setup(self, prefix: list[str], limits: Limits, sock_dir: Path) -> None:
        self.kernel_name = "python3"
        self._kernel_spec = KernelSpec(
            argv=["python"],
            display_name="Python 3 (grader)",
            language="python",
            interrupt_mode="message",
            env={},
        )
        self.launch_prefix = list(prefix)
        self.limits = limits
        self.transport = "ipc"
        self.ip = str(sock_dir / "s")
        self.connection_file = str(sock_dir / "kernel.json")
        if len(self.ip) > 90:
            raise RuntimeError(f"socket path too long for ZeroMQ ipc: {self.ip}")

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        import sys

        kernel = [
            sys.executable,
            "-m",
            "ipykernel_launcher",
            "-f",
            self.connection_file,
            *(extra_arguments or []),
        ]
        return self.launch_prefix + launcher_cmd(self.limits.memory, self.limits.file_size, kernel)


def _text_of(out: Any) -> str:
    if out.get("output_type") == "stream":
        text = out.get("text", "")
        return "".join(text) if isinstance(text, list) else str(text)
    return ""


def _size_of(out: Any) -> int:
    if out.get("output_type") == "stream":
        return len(_text_of(out))
    size = 0
    for key in ("data", "traceback", "evalue"):
        value = out.get(key)
        if isinstance(value, dict):
            size += sum(len(str(v)) for v in value.values())
        elif value:
            size += len(str(value))
    return size


class GradingClient(NotebookClient):
    """nbclient with output caps and a record of timeouts and execute replies."""

    def __init__(self, nb: Any, limits: Limits, **kw: Any):
        super().__init__(nb, **kw)
        self.limits = limits
        self.nb_lines = 0
        self.nb_bytes = 0
        self.begin_cell()

    def begin_cell(self) -> None:
        self.cell_lines = 0
        self.cell_bytes = 0
        self.dropped_lines = 0
        self.dropped_bytes = 0
        self.timed_out = False
        self.reply: dict[str, Any] | None = None

    async def _async_handle_timeout(self, timeout: int, cell: Any = None) -> Any:
        self.timed_out = True
        return await super()._async_handle_timeout(timeout, cell)

    def output(self, outs: list[Any], msg: dict[str, Any], display_id: Any, cell_index: int) -> Any:
        out = super().output(outs, msg, display_id, cell_index)
        if out is None or not outs or outs[-1] is not out:
            return out
        lim = self.limits
        room_lines = min(
            lim.cell_output_lines - self.cell_lines, lim.notebook_output_lines - self.nb_lines
        )
        room_bytes = min(
            lim.cell_output_bytes - self.cell_bytes, lim.notebook_output_bytes - self.nb_bytes
        )
        text = _text_of(out)
        lines = text.count("\n")
        size = _size_of(out)
        if lines <= room_lines and size <= room_bytes:
            self.cell_lines += lines
            self.nb_lines += lines
            self.cell_bytes += size
            self.nb_bytes += size
            return out
        if out.get("output_type") == "stream" and room_lines > 0 and room_bytes > 0:
            kept = "".join(text.splitlines(keepends=True)[:room_lines])[:room_bytes]
            out["text"] = kept
            self.dropped_lines += lines - kept.count("\n")
            self.dropped_bytes += size - len(kept)
            self.cell_lines += kept.count("\n")
            self.nb_lines += kept.count("\n")
            self.cell_bytes += len(kept)
            self.nb_bytes += len(kept)
            # everything after this is dropped for the cell
            self.cell_lines = max(self.cell_lines, lim.cell_output_lines)
            return out
        if display_id:  # nbclient tracks this output's position: keep a placeholder
            out["data"] = {"text/plain": "[grader] output not kept (over the size limit)"}
            out["metadata"] = {}
        else:
            outs.pop()
        self.dropped_lines += lines
        self.dropped_bytes += size
        return None

    def truncation_note(self) -> Any | None:
        if not (self.dropped_lines or self.dropped_bytes):
            return None
        return nbformat.v4.new_output(
            "stream",
            name="stderr",
            text=(
                f"[grader] output truncated: {self.dropped_lines} more lines "
                f"({self.dropped_bytes} characters) were not kept\n"
            ),
        )


class NotebookRunner:
    """Runs one prepared notebook: student cells, then the grader's cells.

    Args:
      nb: the notebook to execute (modified in place: outputs, metadata).
      kinds: per cell ``student`` / ``parameters`` (the student phase, under
        ``limits.timeout``), ``setup`` (grader cells re-run after each
        restart), ``grading`` (grader cells run once each), anything else is
        not executed.
      workdir: the submission's own directory (kernel sockets go in ``.k``).
      cwd: the kernel's working directory.
      env: the kernel's environment.
      prefix: command prefix for the launcher (the bubblewrap command or ``[]``).
      on_grading_start: called before the grader's cells (after each restart too).
      on_grading_cell: called with each grading cell's :class:`CellRun` right after it ran.
    """

    def __init__(
        self,
        nb: Any,
        kinds: list[str],
        *,
        workdir: Path,
        cwd: Path,
        env: dict[str, str],
        limits: Limits,
        prefix: list[str] | None = None,
        on_grading_start: Callable[[], None] | None = None,
        on_grading_cell: Callable[[CellRun], None] | None = None,
    ):
        self.nb, self.kinds, self.limits = nb, kinds, limits
        self.workdir, self.cwd, self.env = workdir, cwd, env
        self.prefix = list(prefix or [])
        self.sandboxed = bool(self.prefix)
        self.on_grading_start = on_grading_start or (lambda: None)
        self.on_grading_cell = on_grading_cell or (lambda run: None)
        self.sock_dir = workdir / ".k"
        self.log_path = workdir / "kernel.log"
        self.client = GradingClient(
            nb,
            limits,
            timeout=int(limits.cell_timeout),
            allow_errors=True,
            interrupt_on_timeout=True,
            error_on_timeout={"ename": "CellTimeout", "evalue": "timed out", "traceback": []},
            kernel_name="python3",
            record_timing=False,
            shutdown_kernel="immediate",
            startup_timeout=120,
            store_widget_state=False,
            resources={"metadata": {"path": str(cwd)}},
            on_cell_executed=self._on_executed,
        )
        self.count = 0
        self.watchdog: Watchdog | None = None
        self.kernel_pid: int | None = None

    def _on_executed(self, cell: Any, cell_index: int, execute_reply: dict[str, Any]) -> None:
        self.client.reply = execute_reply

    # -- kernel lifecycle ---------------------------------------------------

    async def _start(self, hard_deadline: float) -> None:
        self.sock_dir.mkdir(parents=True, exist_ok=True)
        km = GradingKernelManager()
        km.setup(self.prefix, self.limits, self.sock_dir)
        self.client.km = km
        with open(self.log_path, "ab") as log:
            await self.client.async_start_new_kernel(
                env=self.env, cwd=str(self.cwd), stdout=log, stderr=log
            )
        proc = getattr(km.provisioner, "process", None)
        self.kernel_pid = proc.pid if proc is not None else None
        if self.kernel_pid is not None:
            self.watchdog = Watchdog(self.kernel_pid, self.limits.memory, hard_deadline)
            self.watchdog.start()
        await self.client.async_start_new_kernel_client()

    async def _exit_code(self) -> int | None:
        km = self.client.km
        proc = getattr(getattr(km, "provisioner", None), "process", None)
        if proc is None:
            return None
        for _ in range(20):
            code = proc.poll()
            if code is not None:
                return code
            await asyncio.sleep(0.1)
        return None

    async def _stop(self) -> None:
        if self.watchdog is not None:
            self.watchdog.stop()
        if self.kernel_pid is not None:
            kill_tree(self.kernel_pid)
        try:
            if self.client.km is not None:
                await self.client._async_cleanup_kernel()
        except Exception:  # noqa: BLE001 - the kernel is gone either way
            pass
        self.client.km = None
        self.client.kc = None
        self.kernel_pid = None
        self.watchdog = None

    async def _responsive(self, grace: float) -> bool:
        kc = self.client.kc
        if kc is None or not await kc.is_alive():
            return False
        msg_id = kc.kernel_info()
        deadline = time.monotonic() + grace
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = await kc.shell_channel.get_msg(timeout=left)
            except (Empty, TimeoutError):
                return False
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return True
        return False

    def _death_reason(self, code: int | None) -> str:
        if self.watchdog is not None and self.watchdog.reason:
            return self.watchdog.reason
        return describe_exit(code, self.sandboxed)

    # -- cells ----------------------------------------------------------------

    async def _run_cell(self, index: int, timeout: float) -> CellRun:
        cell = self.nb.cells[index]
        if not cell.source.strip():
            return CellRun(index, "ok")
        self.client.begin_cell()
        self.client.timeout = max(1, math.ceil(timeout))
        self.count += 1
        start = time.monotonic()
        try:
            await self.client.async_execute_cell(cell, index, execution_count=self.count)
        except DeadKernelError:
            code = await self._exit_code()
            status = "killed" if self.watchdog is not None and self.watchdog.reason else "died"
            return CellRun(
                index, status, self._death_reason(code), seconds=time.monotonic() - start
            )
        except CellTimeoutError:  # only with interrupt_on_timeout off; kept for safety
            self.client.timed_out = True
        except Exception as err:  # noqa: BLE001 - e.g. a broken channel: treat the kernel as lost
            return CellRun(
                index,
                "killed",
                f"the grader lost contact with the kernel ({type(err).__name__}: {err})",
                seconds=time.monotonic() - start,
            )
        finally:
            note = self.client.truncation_note()
            if note is not None:
                cell.outputs.append(note)
        seconds = time.monotonic() - start
        if self.client.timed_out:
            if await self._responsive(self.limits.interrupt_grace):
                return CellRun(
                    index,
                    "timeout",
                    f"did not finish within {timeout:.0f} s and was interrupted",
                    seconds=seconds,
                )
            return CellRun(
                index,
                "killed",
                f"did not finish within {timeout:.0f} s and ignored the interrupt, "
                "so the kernel was stopped",
                seconds=seconds,
            )
        content = (self.client.reply or {}).get("content", {})
        status = content.get("status", "error")
        payload = content.get("payload") or []
        if any(isinstance(p, dict) and p.get("source") == "ask_exit" for p in payload):
            # exit()/quit() reply "ok" and stop the kernel a moment later, in another cell
            return CellRun(index, "died", "exit() or quit() shut the kernel down", seconds=seconds)
        if status == "ok":
            return CellRun(index, "ok", seconds=seconds)
        return CellRun(
            index,
            "error",
            ename=str(content.get("ename", "")),
            evalue=str(content.get("evalue", "")),
            seconds=seconds,
        )

    async def run(self) -> Execution:
        lim = self.limits
        ex = Execution()
        t0 = time.monotonic()
        student = [i for i, k in enumerate(self.kinds) if k in ("student", "parameters")]
        setup = [i for i, k in enumerate(self.kinds) if k == "setup"]
        grading = [i for i, k in enumerate(self.kinds) if k == "grading"]
        student_deadline = t0 + lim.timeout
        hard_deadline = (
            t0
            + lim.timeout * (lim.max_restarts + 1)
            + (len(grading) + len(setup) + 3) * (lim.cell_timeout + lim.interrupt_grace)
            + 60
        )
        skip: dict[int, CellRun] = {}
        next_grading = 0
        first_pass: float | None = None

        while True:
            crashed: CellRun | None = None
            try:
                await self._start(hard_deadline)
            except Exception as err:  # noqa: BLE001 - e.g. the sandbox failing to start
                await self._stop()
                reason = f"the kernel could not start ({type(err).__name__}: {err})"
                ex.start_error = reason
                for i in [*student, *setup, *grading[next_grading:]]:
                    ex.runs.setdefault(i, CellRun(i, "not_run", reason))
                break
            try:
                for i in student:
                    if i in skip:
                        continue
                    left = student_deadline - time.monotonic()
                    if left <= 0:
                        ex.student_time_up = True
                        ex.runs[i] = CellRun(
                            i, "not_run", f"the notebook's {lim.timeout:.0f} s time limit ran out"
                        )
                        continue
                    run = await self._run_cell(i, min(lim.cell_timeout, left))
                    if run.status == "timeout" and left < lim.cell_timeout:
                        ex.student_time_up = True
                        run.reason = f"the notebook's {lim.timeout:.0f} s time limit ran out here"
                    ex.runs[i] = run
                    if run.status in ("died", "killed"):
                        crashed = run
                        break
                if first_pass is None:
                    first_pass = time.monotonic() - t0
                if crashed is None:
                    self.on_grading_start()
                    for i in setup:
                        if i in skip:
                            continue
                        run = await self._run_cell(i, lim.cell_timeout)
                        ex.runs[i] = run
                        if run.status in ("died", "killed"):
                            crashed = run
                            break
                if crashed is None:
                    while next_grading < len(grading):
                        i = grading[next_grading]
                        next_grading += 1
                        run = await self._run_cell(i, lim.cell_timeout)
                        ex.runs[i] = run
                        self.on_grading_cell(run)
                        if run.status in ("died", "killed"):
                            crashed = run
                            break
            finally:
                await self._stop()
            if crashed is None:
                break
            skip[crashed.index] = crashed
            if len(ex.restarts) >= lim.max_restarts or ex.student_time_up:
                why = (
                    "the kernel died too often"
                    if len(ex.restarts) >= lim.max_restarts
                    else "no time was left to restart the kernel"
                )
                reason = f"{why}; last: cell {crashed.index}: {crashed.reason}"
                for i in [*student, *setup, *grading[next_grading:]]:
                    ex.runs.setdefault(i, CellRun(i, "not_run", reason))
                ex.restarts.append(f"cell {crashed.index}: {crashed.reason}; not restarted: {why}")
                ex.gave_up = True
                break
            ex.restarts.append(
                f"cell {crashed.index}: {crashed.reason}; the kernel was restarted and the "
                "notebook re-run without that cell"
            )
            if self.kinds[crashed.index] == "grading" and first_pass is not None:
                # a crash while grading: give the re-run of the student's cells its own time
                student_deadline = max(student_deadline, time.monotonic() + 1.5 * first_pass + 30)
        ex.seconds = time.monotonic() - t0
        try:
            ex.kernel_log = self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            ex.kernel_log = ""
        for i, run in ex.runs.items():
            self.nb.cells[i].metadata.setdefault("grader", {}).update(
                kind=self.kinds[i], **run.as_dict()
            )
        return ex


def run_notebook(runner: NotebookRunner) -> Execution:
    """Run a :class:`NotebookRunner` to completion in a fresh event loop."""
    return asyncio.run(runner.run())
