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
- A kernel that dies (``os._exit``, a segfault, the watchdog, a kill after a
  timeout) is restarted, the cells before are re-run and the culprit is
  skipped, at most ``max_restarts`` times: one crashing cell costs its own
  points, not the whole notebook.
- The watchdog (:mod:`helpers.grading.processes`) stops a kernel over its
  memory, process or disk limit; after each kernel, nothing it started may
  survive.
- The kernel's log is one file descriptor the grader opened (``O_NOFOLLOW``)
  in a folder the kernel cannot see; its sockets and connection files sit
  outside the kernel's writable folder.

The kernel is the one named by the instructor (``kernel``), else the course
kernel ``tfrecord-course`` when it is installed, else ``python3``; never the
kernelspec written in the student's notebook.
"""

from __future__ import annotations

import asyncio
import math
import os
import secrets
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any

from jupyter_client.kernelspec import KernelSpec, KernelSpecManager, NoSuchKernel
from jupyter_client.manager import AsyncKernelManager
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from helpers.grading import processes, sandbox
from helpers.grading.client import GradingClient
from helpers.grading.processes import GiB, Watchdog, describe_exit, kill_tree
from helpers.grading.sandbox import launcher_cmd
from helpers.notebooks import KERNEL_NAME

__all__ = ["GiB", "describe_exit", "kill_tree"]

COURSE_KERNEL = KERNEL_NAME  # the course kernelspec (helpers.notebooks installs it)


@dataclass(frozen=True)
class Limits:
    """Resource limits for one submission.

    Attributes:
      timeout: seconds for all of the student's cells together (re-runs after
        a restart included). The grader's own cells have their own budget.
      cell_timeout: seconds for any one cell (the student's or the grader's).
      memory: bytes of memory for the kernel and its children.
      file_size: largest file the kernel may write, in bytes.
      disk: bytes the kernel may keep in its writable folders (and its log).
      max_processes: processes the kernel may run at once (with the sandbox's
        ``pids`` cgroup, where available: processes and threads).
      max_restarts: how often a dead kernel is restarted (culprit skipped).
      interrupt_grace: seconds a timed-out cell has to stop after the interrupt.
      cell_output_lines / cell_output_bytes: output kept per cell.
      notebook_output_lines / notebook_output_bytes: output kept per notebook.
      verify_memory / verify_seconds: what verifying one answer may cost the grader.
      answer_bytes: the largest answer file read back from the kernel.
    """

    timeout: float = 600.0
    cell_timeout: float = 120.0
    memory: int = 4 * GiB
    file_size: int = 1 * GiB
    disk: int = 2 * GiB
    max_processes: int = 512
    max_restarts: int = 2
    interrupt_grace: float = 10.0
    cell_output_lines: int = 1_000
    cell_output_bytes: int = 2_000_000
    notebook_output_lines: int = 10_000
    notebook_output_bytes: int = 10_000_000
    verify_memory: int = 2 * GiB
    verify_seconds: float = 60.0
    answer_bytes: int = 32 << 20


@dataclass
class CellRun:
    """What happened to one cell.

    ``status`` is one of ``ok``, ``error`` (the kernel replied error),
    ``timeout`` (interrupted after the cell timeout), ``killed`` (the kernel
    was killed: it ignored the interrupt, or hit a limit), ``died`` (the
    kernel died by itself), ``not_run`` and ``skipped`` (it killed the kernel
    before and was left out of the re-run).
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
    """The fate of every cell, the kernel restarts on the way, and leftover processes."""

    runs: dict[int, CellRun] = field(default_factory=dict)
    restarts: list[str] = field(default_factory=list)
    student_time_up: bool = False
    gave_up: bool = False
    start_error: str = ""
    seconds: float = 0.0
    kernel_log: str = ""
    survivors: int = 0


def kernel_command(name: str | None = None) -> tuple[list[str], dict[str, str]]:
    """The argv (with ``{connection_file}``) and env of the instructor's kernel.

    ``name`` None means the course kernel if it is installed, else ``python3``.

    Raises:
      ValueError: no kernelspec of that name is installed.
    """
    manager = KernelSpecManager()
    if name is None:
        name = COURSE_KERNEL if COURSE_KERNEL in manager.find_kernel_specs() else "python3"
    try:
        spec = manager.get_kernel_spec(name)
    except NoSuchKernel:
        known = ", ".join(sorted(manager.find_kernel_specs())) or "none"
        raise ValueError(
            f"no Jupyter kernel named {name!r} is installed (installed: {known})"
        ) from None
    argv = list(spec.argv)
    if argv and not os.path.isabs(argv[0]):
        argv[0] = shutil.which(argv[0]) or (sys.executable if "python" in argv[0] else argv[0])
    return argv, dict(spec.env or {})


def interpreter_paths(argv: list[str]) -> list[Path]:
    """Folders the kernel's interpreter needs visible in the sandbox (its venv and base)."""
    exe = Path(argv[0])
    return [exe.parent.parent, exe.resolve().parent.parent]


@dataclass
class KernelPlace:
    """Where a kernel runs and what the grader keeps about it (see :mod:`.submission`).

    Attributes:
      cwd: the kernel's working directory (in its writable folder).
      sock_dir: its ZeroMQ ``ipc`` sockets (writable by it, outside its folder).
      conn_dir: connection files (read-only for it).
      log_fd: the grader's descriptor of the kernel log (the kernel's stdout/stderr).
      disk_paths: the folders whose size counts against ``Limits.disk``.
      cgroup: a ``pids`` cgroup for the kernel, or None.
    """

    cwd: Path
    sock_dir: Path
    conn_dir: Path
    log_fd: int
    disk_paths: tuple[Path, ...] = ()
    cgroup: Path | None = None


class GradingKernelManager(AsyncKernelManager):
    """The instructor's kernel, through the limits launcher (and bubblewrap)."""

    def setup(
        self, prefix: list[str], limits: Limits, place: KernelPlace, argv: list[str], n: int
    ) -> None:
        self.kernel_name = "grader"
        # jupyter_client's private cache of the spec (KernelManager.kernel_spec reads it):
        # set here so no installed or notebook kernelspec is ever looked up. The nbclient<0.12
        # pin (and jupyter_client 8) is what this depends on.
        self._kernel_spec = KernelSpec(
            argv=list(argv),
            display_name="grader",
            language="python",
            interrupt_mode="message",
            env={},
        )
        self.launch_prefix = list(prefix)
        self.limits = limits
        self.transport = "ipc"
        self.ip = str(place.sock_dir / f"k{n}")
        self.connection_file = str(place.conn_dir / f"kernel-{n}-{secrets.token_hex(4)}.json")
        if len(self.ip) > 90:
            raise RuntimeError(f"socket path too long for ZeroMQ ipc: {self.ip}")

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        kernel = [
            a.replace("{connection_file}", self.connection_file) for a in self.kernel_spec.argv
        ]
        kernel += list(extra_arguments or [])
        return self.launch_prefix + launcher_cmd(self.limits.memory, self.limits.file_size, kernel)


def read_tail(fd: int, size: int = 4000) -> str:
    """The last ``size`` bytes of the file open as ``fd``, as text."""
    try:
        end = os.fstat(fd).st_size
        return os.pread(fd, size, max(0, end - size)).decode("utf-8", errors="replace")
    except OSError:
        return ""


@dataclass
class _Plan:
    student: list[int]
    setup: list[int]
    grading: list[int]
    start: float
    student_deadline: float
    hard_deadline: float
    skip: dict[int, CellRun] = field(default_factory=dict)
    next_grading: int = 0
    first_pass: float | None = None


class NotebookRunner:
    """Runs one prepared notebook: student cells, then the grader's cells.

    Args:
      nb: the notebook to execute (modified in place: outputs, metadata).
      kinds: per cell ``student`` / ``parameters`` (the student phase, under
        ``limits.timeout``), ``setup`` (grader cells re-run after each
        restart), ``grading`` (grader cells run once each), anything else is
        not executed.
      place: where the kernel runs (:class:`KernelPlace`).
      env: the kernel's environment.
      limits: the submission's :class:`Limits`.
      prefix: command prefix for the launcher (the bubblewrap command or ``[]``).
      kernel: the kernel's argv (with ``{connection_file}``), see :func:`kernel_command`.
      on_grading_start: called before the grader's cells (after each restart too).
      on_grading_cell: called with each grading cell's :class:`CellRun` right after it ran.
      on_restart: called before a restarted kernel starts (the notebook re-runs from a
        clean folder: what the crashed run wrote, e.g. up to the disk quota, is gone).
    """

    def __init__(
        self,
        nb: Any,
        kinds: list[str],
        *,
        place: KernelPlace,
        env: dict[str, str],
        limits: Limits,
        prefix: list[str] | None = None,
        kernel: list[str] | None = None,
        on_grading_start: Callable[[], None] | None = None,
        on_grading_cell: Callable[[CellRun], None] | None = None,
        on_restart: Callable[[], None] | None = None,
    ):
        self.nb, self.kinds, self.limits = nb, kinds, limits
        self.place, self.env = place, env
        self.prefix = list(prefix or [])
        self.sandboxed = bool(self.prefix)
        self.kernel = kernel or kernel_command()[0]
        self.on_grading_start = on_grading_start or (lambda: None)
        self.on_grading_cell = on_grading_cell or (lambda run: None)
        self.on_restart = on_restart or (lambda: None)
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
            resources={"metadata": {"path": str(place.cwd)}},
            on_cell_executed=self._on_executed,
        )
        self.count = 0
        self.starts = 0
        self.survivors = 0
        self.watchdog: Watchdog | None = None
        self.kernel_pid: int | None = None
        self.namespace: str | None = None

    def _on_executed(self, cell: Any, cell_index: int, execute_reply: dict[str, Any]) -> None:
        self.client.reply = execute_reply

    # -- kernel lifecycle ---------------------------------------------------

    async def _start(self, hard_deadline: float) -> None:
        if self.starts:
            self.on_restart()
        km = GradingKernelManager()
        prefix = sandbox.cgroup_prefix(self.place.cgroup) + self.prefix
        km.setup(prefix, self.limits, self.place, self.kernel, self.starts)
        self.starts += 1
        self.client.km = km
        log = self.place.log_fd
        await self.client.async_start_new_kernel(
            env=self.env, cwd=str(self.place.cwd), stdout=log, stderr=log
        )
        proc = getattr(km.provisioner, "process", None)
        self.kernel_pid = proc.pid if proc is not None else None
        if self.kernel_pid is not None:
            self.watchdog = Watchdog(
                self.kernel_pid,
                self.limits.memory,
                hard_deadline,
                max_processes=self.limits.max_processes,
                disk=self.limits.disk,
                disk_paths=self.place.disk_paths,
                extra_bytes=lambda: os.fstat(log).st_size,
            )
            self.watchdog.start()
        await self.client.async_start_new_kernel_client()
        if self.sandboxed and self.kernel_pid is not None:
            self.namespace = processes.pid_namespace(self.kernel_pid)

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
                # private nbclient method (the nbclient<0.12 pin depends on it): the public
                # path waits for a polite shutdown a killed kernel can no longer answer
                await self.client._async_cleanup_kernel()
        except Exception:  # noqa: BLE001 - the kernel is gone either way
            pass
        session = None if self.sandboxed else self.kernel_pid  # a new session per kernel
        self.survivors += processes.reap(self.namespace, session)
        self.client.km = None
        self.client.kc = None
        self.kernel_pid = None
        self.watchdog = None
        self.namespace = None

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

    # -- the run, in steps -----------------------------------------------------

    def _plan(self) -> _Plan:
        lim = self.limits
        t0 = time.monotonic()
        grading = [i for i, k in enumerate(self.kinds) if k == "grading"]
        setup = [i for i, k in enumerate(self.kinds) if k == "setup"]
        hard = (
            t0
            + lim.timeout * (lim.max_restarts + 1)
            + (len(grading) + len(setup) + 3) * (lim.cell_timeout + lim.interrupt_grace)
            + 60
        )
        student = [i for i, k in enumerate(self.kinds) if k in ("student", "parameters")]
        return _Plan(student, setup, grading, t0, t0 + lim.timeout, hard)

    def _mark_not_run(self, plan: _Plan, ex: Execution, reason: str) -> None:
        for i in [*plan.student, *plan.setup, *plan.grading[plan.next_grading :]]:
            ex.runs.setdefault(i, CellRun(i, "not_run", reason))

    async def _student_phase(self, plan: _Plan, ex: Execution) -> CellRun | None:
        lim = self.limits
        for i in plan.student:
            if i in plan.skip:
                continue
            left = plan.student_deadline - time.monotonic()
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
                return run
        return None

    async def _grading_phase(self, plan: _Plan, ex: Execution) -> CellRun | None:
        self.on_grading_start()
        for i in plan.setup:
            if i in plan.skip:
                continue
            run = ex.runs[i] = await self._run_cell(i, self.limits.cell_timeout)
            if run.status in ("died", "killed"):
                return run
        while plan.next_grading < len(plan.grading):
            i = plan.grading[plan.next_grading]
            plan.next_grading += 1
            run = ex.runs[i] = await self._run_cell(i, self.limits.cell_timeout)
            self.on_grading_cell(run)
            if run.status in ("died", "killed"):
                return run
        return None

    async def _one_kernel(self, plan: _Plan, ex: Execution) -> tuple[bool, CellRun | None]:
        """Start a kernel and run what is left; ``(started, the cell that crashed it)``."""
        try:
            await self._start(plan.hard_deadline)
        except Exception as err:  # noqa: BLE001 - e.g. the sandbox failing to start
            await self._stop()
            ex.start_error = f"the kernel could not start ({type(err).__name__}: {err})"
            self._mark_not_run(plan, ex, ex.start_error)
            return False, None
        try:
            crashed = await self._student_phase(plan, ex)
            if plan.first_pass is None:
                plan.first_pass = time.monotonic() - plan.start
            if crashed is None:
                crashed = await self._grading_phase(plan, ex)
        finally:
            await self._stop()
        return True, crashed

    def _restart_or_give_up(self, plan: _Plan, ex: Execution, crashed: CellRun) -> bool:
        """Record the crash; True if the notebook is re-run without the culprit."""
        plan.skip[crashed.index] = crashed
        if len(ex.restarts) >= self.limits.max_restarts or ex.student_time_up:
            why = (
                "the kernel died too often"
                if len(ex.restarts) >= self.limits.max_restarts
                else "no time was left to restart the kernel"
            )
            self._mark_not_run(plan, ex, f"{why}; last: cell {crashed.index}: {crashed.reason}")
            ex.restarts.append(f"cell {crashed.index}: {crashed.reason}; not restarted: {why}")
            ex.gave_up = True
            return False
        ex.restarts.append(
            f"cell {crashed.index}: {crashed.reason}; the kernel was restarted and the "
            "notebook re-run without that cell"
        )
        if self.kinds[crashed.index] == "grading" and plan.first_pass is not None:
            # a crash while grading: give the re-run of the student's cells its own time
            plan.student_deadline = max(
                plan.student_deadline, time.monotonic() + 1.5 * plan.first_pass + 30
            )
        return True

    def _finish(self, plan: _Plan, ex: Execution) -> None:
        ex.seconds = time.monotonic() - plan.start
        ex.kernel_log = read_tail(self.place.log_fd)
        ex.survivors = self.survivors
        for i, run in ex.runs.items():
            self.nb.cells[i].metadata.setdefault("grader", {}).update(
                kind=self.kinds[i], **run.as_dict()
            )

    async def run(self) -> Execution:
        plan = self._plan()
        ex = Execution()
        while True:
            started, crashed = await self._one_kernel(plan, ex)
            if not started or crashed is None or not self._restart_or_give_up(plan, ex, crashed):
                break
        self._finish(plan, ex)
        return ex


def run_notebook(runner: NotebookRunner) -> Execution:
    """Run a :class:`NotebookRunner` to completion in a fresh event loop."""
    return asyncio.run(runner.run())
