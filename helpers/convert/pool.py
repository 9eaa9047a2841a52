"""Run a phase's tasks in this process or in a pool of spawned worker processes.

Spawn (not fork) so it also works on macOS / Windows and inside Jupyter. Workers
ignore Ctrl-C (the parent cleans up), exit within a fraction of a second when the
parent dies, and load only TensorFlow's protobuf modules, not its runtime, so each
starts in about half a second. Each worker reports its
process id when it starts, so :meth:`Runner.close` can stop the workers at once
after an error or an interrupt with documented calls only (``os.kill``), without
reaching into the executor's private process table.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from helpers.convert import encode
from helpers.convert.settings import ConvertError

__all__ = ["Runner"]

_IN_FLIGHT = 4  # tasks queued per worker


_PARENT_CHECK_S = 0.2  # how often a worker checks that the converter is still alive


def _exit_when_orphaned(parent: int) -> None:
    """Exit this worker once ``parent`` is gone (SIGKILL, OOM killer): no orphan keeps
    writing shards or holding the caller's stdout open. A temporary file it leaves is
    removed by the rerun."""
    while os.getppid() == parent:
        time.sleep(_PARENT_CHECK_S)
    os._exit(1)


def _init_worker(pids: Any, parent: int) -> None:
    """Worker set-up: report our pid, leave Ctrl-C to the parent, die with the parent,
    load protobufs only."""
    pids.put(os.getpid())
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_when_orphaned, args=(parent,), daemon=True).start()
    encode.LIGHT = True
    encode.load_features()


def _ready() -> None:
    """A no-op task: submitting one per worker starts the workers straight away."""


class Runner:
    """Run a function over tasks: in-process (``workers == 1``) or in a spawn process pool.

    Args:
      workers: number of worker processes; 1 runs every task in this process.
    """

    def __init__(self, workers: int):
        self.workers = workers
        self._pool = None
        self._pids: Any = None
        if workers > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            context = multiprocessing.get_context("spawn")
            self._pids = context.SimpleQueue()
            self._pool = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=context,
                initializer=_init_worker,
                initargs=(self._pids, os.getpid()),
            )
            for _ in range(workers):  # start every worker now: they load while we list and plan
                self._pool.submit(_ready)

    def run(
        self, fn: Callable[..., Any], tasks: Iterable[Any], *args: Any
    ) -> Iterator[tuple[int, Any]]:
        """Yield ``(task index, fn(task, *args))`` as tasks complete (any order with workers).

        Raises:
          ConvertError: a worker process died (killed, out of memory).
        """
        if self._pool is None:
            for i, task in enumerate(tasks):
                yield i, fn(task, *args)
            return
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        numbered = enumerate(tasks)
        futures: dict[Any, int] = {}

        def submit_next() -> None:
            for i, task in numbered:
                futures[self._pool.submit(fn, task, *args)] = i
                return

        try:
            # a few tasks per worker in flight, not all: queued tasks and their results
            # would otherwise all sit in memory (1,024 shards of ImageNet, say)
            for _ in range(self.workers * _IN_FLIGHT):
                submit_next()
            while futures:
                done, _ = wait(futures, return_when=FIRST_COMPLETED)
                for future in done:
                    index = futures.pop(future)
                    submit_next()
                    yield index, future.result()
        except BrokenProcessPool:
            raise ConvertError(
                "a worker process died (killed, or out of memory?); rerun with fewer --workers"
            ) from None

    def close(self, kill: bool = False) -> None:
        """Shut the pool down; with ``kill``, stop the workers now (after an error or Ctrl-C)."""
        if self._pool is None:
            return
        pool, self._pool = self._pool, None
        if not kill:
            pool.shutdown(wait=True)
            return
        pool.shutdown(wait=False, cancel_futures=True)
        pids = []
        while not self._pids.empty():
            pids.append(self._pids.get())
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        for pid in pids:  # reaped by the executor's manager thread; wait until they are gone
            while time.monotonic() < deadline and _alive(pid):
                time.sleep(0.01)


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie waiting to be reaped no longer can write)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except FileNotFoundError:
        return False
    except OSError:  # no /proc (macOS): fall back to "can it be signalled"
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True
