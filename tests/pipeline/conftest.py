"""The pipeline tests' shared record set (built once per test package)."""

from __future__ import annotations

import pytest

from .support import _make_set


@pytest.fixture(scope="package")
def dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> dict:
    base = tmp_path_factory.mktemp("pipeline")
    return _make_set(base / "shards", image_dir=base / "images")
