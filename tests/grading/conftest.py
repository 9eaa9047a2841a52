"""Fixtures shared by the grader tests: the tiny lesson, one worker pool, a TCP server."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest
from grading_tools import make_tiny_lesson

from helpers.grading import batch


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[Path, Path]:
    """The tiny lesson's solutions folder and exercises module, shared by the fixtures."""
    return make_tiny_lesson(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    """One pool of two grading workers for the whole module (``--jobs 2``)."""
    with batch.worker_pool(2, tmp_path_factory.mktemp("pool") / "grader.log") as workers:
        yield workers


@pytest.fixture(scope="module")
def tcp_server():
    """A server on the host's loopback: reachable from a kernel unless it is sandboxed."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()
