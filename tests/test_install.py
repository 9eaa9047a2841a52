"""A non-editable install works for practitioners, from any directory.

``pip install --no-deps --target TMP .`` copies the package (no checkout next to
it); the converter CLI, ``helpers.records verify`` and ``helpers.pipeline.make_dataset``
then run from another working directory with ``PYTHONPATH=TMP`` only. Product code
that computed paths from the checkout at import time would fail here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow  # a pip build (~15 s) and three TensorFlow start-ups

_NO_INDEX_HINTS = ("No matching distribution", "Could not find a version", "connection")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", target, ROOT],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0 and any(h in proc.stderr for h in _NO_INDEX_HINTS):
        pytest.skip(f"pip cannot reach an index for the build backend: {proc.stderr[-300:]}")
    assert proc.returncode == 0, proc.stderr
    assert (target / "helpers" / "pipeline" / "__init__.py").is_file()
    assert not (target / "helpers" / "__init__.py").samefile(ROOT / "helpers" / "__init__.py")
    return target


def _run(args: list[str], site: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(site), TF_CPP_MIN_LOG_LEVEL="2", PYTHONNOUSERSITE="1")
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def _image_folder(root: Path) -> Path:
    rng = np.random.default_rng(0)
    for c in range(2):
        folder = root / f"class_{c}"
        folder.mkdir(parents=True)
        for i in range(3):
            pixels = rng.integers(0, 255, (20, 24, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(folder / f"img_{i}.jpg", quality=90)
    return root


def test_convert_verify_and_make_dataset_from_another_directory(installed, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    images = _image_folder(tmp_path / "images")
    shards = tmp_path / "shards"

    where = _run(["-c", "import helpers; print(helpers.__file__)"], installed, elsewhere)
    assert where.returncode == 0 and where.stdout.startswith(str(installed)), where

    convert = [
        "-m",
        "helpers.convert",
        "--dataset-path",
        str(images),
        "--output-path",
        str(shards),
        "--workers",
        "1",
        "--quiet",
    ]
    done = _run(convert, installed, elsewhere)
    assert done.returncode == 0, done.stderr[-2000:]
    manifest = json.loads((shards / "manifest.json").read_text())
    assert sum(s["records"] for s in manifest["shards"]) == 6

    verify = _run(["-m", "helpers.records", "verify", str(shards)], installed, elsewhere)
    assert verify.returncode == 0, verify.stdout[-2000:] + verify.stderr[-2000:]

    read = (
        "from helpers.pipeline import make_dataset\n"
        f"ds = make_dataset({str(shards)!r}, batch_size=2, image_size=16, training=False)\n"
        "print(sum(int(x.shape[0]) for x, _ in ds))\n"
    )
    pipeline = _run(["-c", read], installed, elsewhere)
    assert pipeline.returncode == 0, pipeline.stderr[-2000:]
    assert pipeline.stdout.split()[-1] == "6"
