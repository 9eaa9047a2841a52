"""Shared helpers of the converter tests: image bytes, datasets, runs (no binaries committed)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from helpers import convert as C
from helpers import features as F
from helpers import records as R

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
K = F.IMAGE_KEYS


def jpeg_bytes(
    w: int = 24, h: int = 16, seed: int = 0, mode: str = "RGB", quality: int = 85
) -> bytes:
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    im = Image.fromarray(arr).convert(mode)
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=quality)
    return buf.getvalue()


def png_bytes(im: Image.Image) -> bytes:
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def make_dataset(
    root: Path, classes: int = 3, per_class: int = 4, w: int = 24, h: int = 16
) -> Path:
    for c in range(classes):
        for i in range(per_class):
            write(
                root / f"class_{c}" / f"img_{i:03d}.jpg",
                jpeg_bytes(w + i, h + c, seed=c * 1000 + i),
            )
    return root


def run(ds: Path, out: Path, **kw) -> dict:
    kw.setdefault("workers", 1)
    kw.setdefault("progress", False)
    return C.convert(ds, out, **kw)


def records_of(out: Path) -> list[dict]:
    """Every record of every shard (manifest order), parsed with the pure-Python reader."""
    manifest = json.loads((out / "manifest.json").read_text())
    rows = []
    for shard in manifest["shards"]:
        for data in R.read_records(out / shard["file"]):
            d = F.example_to_dict(data)
            rows.append({k: v[0] for k, v in d.items()} | {"_shard": shard["file"]})
    return rows


def files_of(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def cli(*args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PY, "-m", "helpers.convert", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
        **kw,
    )
