"""python -m helpers.convert: options, classic spellings, summary, parse_size."""

from __future__ import annotations

import json
import subprocess

import pytest
from convert_common import (
    PY,
    ROOT,
    cli,
    make_dataset,
)

from helpers import convert as C


def test_seed_spellings_and_cli_summary(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=2, per_class=2)
    proc = cli(
        f"--dataset_path={ds}", "--size_per_record=2000", f"--output_path={tmp_path / 'out'}"
    )
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["size_per_record"] == 2000 and manifest["num_shards"] > 1
    assert f"wrote {manifest['num_shards']} shard(s), 4 images" in proc.stdout
    verify = subprocess.run(
        [PY, "-m", "helpers.records", "verify", str(tmp_path / "out")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_help():
    text = C.build_parser().format_help()
    for flag in (
        "--dataset-path",
        "--dataset_path",
        "--size-per-record",
        "--workers",
        "--overwrite",
        "--max-pixels",
    ):
        assert flag in text
    assert "52428800" in text


def test_parse_size_and_shard_name():
    assert C.parse_size("52428800") == 52428800
    assert C.parse_size("50MiB") == C.parse_size("50M") == 50 * 2**20
    assert C.parse_size("1.5GB") == 1_500_000_000
    assert C.parse_size("64k") == 65536
    with pytest.raises(ValueError):
        C.parse_size("fast")
    assert C.shard_name("train", 3, 12) == "train-00003-of-00012.tfrecord"
    assert C.shard_name("val", 5, 123456) == "val-000005-of-123456.tfrecord"


def test_the_interrupt_line_says_whether_anything_was_kept(tmp_path):
    from helpers.convert.cli import _interrupted

    assert _interrupted(str(tmp_path)) == (
        f"interrupted before any shard was complete: nothing was kept in {tmp_path}"
    )
    (tmp_path / ".convert-journal.jsonl").write_text("{}\n")
    assert "completed shards in" in _interrupted(str(tmp_path))
    assert "rerun the same command to resume" in _interrupted(str(tmp_path))
