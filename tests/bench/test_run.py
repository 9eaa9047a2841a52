"""helpers.bench.run and cli: machine info, bookkeeping, argument checks."""

from __future__ import annotations

import pytest

from helpers import bench


def test_machine_info():
    info = bench.machine_info("9.9")
    assert info["cores"] >= 1 and info["tensorflow"] == "9.9" and info["cpu_model"]
    assert info["ram_gb"] is None or info["ram_gb"] > 0


def test_bench_bookkeeping_keeps_bytes_per_image_and_cpu_costs():
    b = bench.Bench(bench.Config(images=10, repeats=2), log=lambda msg: None)
    b.add_cpu("convert_w2_steady", 0.5, 1000)  # CPU first, rate second: MB/s must still show
    b.add("convert_w2_steady", "img/s", 2000.0, bytes_per_image=1e5)
    b.add("convert_w2_steady", "img/s", 1000.0, bytes_per_image=1e5)
    m = b.m["convert_w2_steady"]
    assert m.median == 1500.0 and m.mb_per_s == pytest.approx(150.0)
    assert m.extra["cpu_ms_per_image"] == [0.5]


def test_cli_rejects_bad_sizes_and_unknown_internal_commands(capsys):
    assert bench.main(["--images", "5", "--classes", "10"]) == 2
    assert "--images" in capsys.readouterr().err
    assert bench.main(["_nonsense"]) == 2
