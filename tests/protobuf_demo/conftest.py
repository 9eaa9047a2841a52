"""The message classes of support.SAMPLE, compiled once per test package."""

from __future__ import annotations

import pytest

from helpers import protobuf_demo as pbd

from .support import SAMPLE


@pytest.fixture(scope="package")
def sample():
    return pbd.build_messages(SAMPLE, "sample.proto")
