"""Fixtures for every test module."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_progress(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """Check cells record progress in the learner's home; tests record it in their tmp_path."""
    monkeypatch.setenv("TFRECORD_COURSE_PROGRESS", str(tmp_path / "progress.json"))
