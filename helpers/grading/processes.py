"""A kernel's processes: why it died, the watchdog that stops it, and proof none survive.

The watchdog thread polls the kernel's process tree (the bubblewrap process
and everything under it, or the kernel and its children) and kills the tree
when it goes over the memory limit, the process-count limit, the disk quota
of the kernel's writable folders, or the notebook's hard deadline.

After each kernel, :func:`reap` proves nothing the submission started is
still running: in the sandbox every process of its PID namespace (bubblewrap
made one; killing the namespace's first process makes Linux kill the rest),
without it every process of the kernel's session (jupyter_client starts the
kernel in a new session). A process that left the session with ``setsid()``
outside the sandbox is re-parented to the grading worker (a child subreaper,
see :mod:`helpers.grading.batch`), which kills it when the submission ends.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from helpers.grading import sandbox
from helpers.grading.fsafe import tree_usage

GiB = 1 << 30


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
            "SIGXFSZ": "wrote a file over the file-size limit (SIGXFSZ)",
        }.get(name, "was stopped")
        return f"the kernel {what} ({name})"
    return f"the kernel exited with status {code} (os._exit(), or a crash in native code)"


def tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def kill_tree(pid: int) -> None:
    """SIGKILL a process and all its descendants (the namespace's first process first)."""
    procs = tree(pid)
    for proc in procs[1:2] + procs[:1] + procs[2:][::-1]:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=5)


class Watchdog(threading.Thread):
    """Kills the kernel's process tree over a limit or after a hard deadline.

    Args:
      pid: the launched process (bubblewrap, or the kernel).
      memory: bytes of RSS for the whole tree.
      deadline: ``time.monotonic()`` after which the tree is killed.
      max_processes: processes (and threads' leaders) in the tree.
      disk: bytes the kernel may keep in ``disk_paths`` (plus ``extra_bytes()``).
    """

    def __init__(
        self,
        pid: int,
        memory: int,
        deadline: float,
        *,
        max_processes: int = 256,
        disk: int = 0,
        disk_paths: tuple[Path, ...] = (),
        extra_bytes: Callable[[], int] = lambda: 0,
    ):
        super().__init__(daemon=True, name=f"grader-watchdog-{pid}")
        self.pid, self.memory, self.deadline = pid, memory, deadline
        self.max_processes = max_processes
        self.disk, self.disk_paths, self.extra_bytes = disk, disk_paths, extra_bytes
        self.reason: str | None = None
        self._stop = threading.Event()

    def _disk_used(self) -> int:
        used = self.extra_bytes()
        for path in self.disk_paths:
            size, entries = tree_usage(str(path))
            used += size + entries * 256  # a million empty files cost the grader too
        return used

    def check(self, polls: int) -> str | None:
        procs = tree(self.pid)
        if not procs:
            return None
        if len(procs) > self.max_processes:
            return (
                f"the kernel started {len(procs)} processes, over the limit of "
                f"{self.max_processes}, and was stopped"
            )
        rss = 0
        for proc in procs:
            try:
                rss += proc.memory_info().rss
            except psutil.Error:
                pass
        if rss > self.memory:
            return (
                f"the kernel used {rss / GiB:.1f} GiB of memory, over the "
                f"{self.memory / GiB:.1f} GiB limit, and was stopped"
            )
        if self.disk and polls % 4 == 0 and (used := self._disk_used()) > self.disk:
            return (
                f"the kernel wrote {used / GiB:.2f} GiB of files, over the "
                f"{self.disk / GiB:.2f} GiB limit, and was stopped"
            )
        if time.monotonic() > self.deadline:
            return "the grader's overall time limit for this notebook ran out"
        return None

    def run(self) -> None:
        polls = 0
        while not self._stop.wait(0.25):
            polls += 1
            if not tree(self.pid):
                return
            self.reason = self.check(polls)
            if self.reason:
                kill_tree(self.pid)
                return

    def stop(self) -> None:
        self._stop.set()


def pid_namespace(pid: int) -> str | None:
    """The PID namespace of ``pid``'s first child (bubblewrap's sandbox), if it has its own."""
    try:
        children = psutil.Process(pid).children()
        mine = os.readlink("/proc/self/ns/pid")
        for child in children:
            ns = os.readlink(f"/proc/{child.pid}/ns/pid")
            if ns != mine:
                return ns
    except (OSError, psutil.Error):
        return None
    return None


def reap(namespace: str | None, session: int | None, timeout: float = 5.0) -> int:
    """Kill what is left of a submission's processes; return how many survived a first kill.

    ``namespace`` is the sandbox's PID namespace, ``session`` the unsandboxed
    kernel's session id. Raises nothing; waits until they are gone (or ``timeout``).
    """
    if namespace is None and session is None:
        return 0

    def members() -> list[int]:
        found = sandbox.namespace_members(namespace) if namespace else []
        if session is not None and session > 1 and session != os.getsid(0):
            found += sandbox.session_members(session)
        return found

    deadline = time.monotonic() + 2.0  # a killed namespace takes a moment to empty
    while (left := members()) and time.monotonic() < deadline:
        time.sleep(0.05)
    survivors = len(left)
    deadline = time.monotonic() + timeout
    while left and time.monotonic() < deadline:
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.1)
        for pid in left:
            try:
                os.waitpid(pid, os.WNOHANG)
            except OSError:
                pass
        left = members()
    return survivors
