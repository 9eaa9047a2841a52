"""helpers.bench.results / report: the table, results.json, the chart and the docs page."""

from __future__ import annotations

import json

from PIL import Image

from helpers import bench
from helpers.bench.results import jsonable


def _figures():
    a = bench.Measurement("a", "img/s", [1000.0, 1200.0], bytes_per_image=1e5)
    b = bench.Measurement("b", "img/s", [3000.0, 3000.0], bytes_per_image=1e5)
    mem = bench.Measurement("mem", "MB", [300.0])
    ref = bench.Measurement("ref", "MB", [100.0])
    share = bench.Measurement("share", "share", [0.01])
    manifest = bench.Measurement("manifest", "KB", [374.0])
    inline = bench.Measurement("inline", "KB", [17_935.0])
    return [
        bench.make_figure("convert_steady_warm", "converter | steady", "copy", a, b,
                          "warm page cache"),
        bench.make_figure("pipeline_memory", "memory", "reference", mem, ref),
        bench.make_figure("input_wait_share", "input wait", "--", share, None, value=0.01),
        bench.make_figure("pipeline_vs_ceiling", "not measured", "ceiling", None, None),
        bench.make_figure("manifest_size_imagenet", "manifest", "inline", manifest, inline,
                          value=0.374),
    ]  # fmt: skip


def test_format_table_plain_and_markdown():
    figures = _figures()
    text = bench.format_table(figures)
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["figure", "baseline"]
    assert len(lines) == 2 + len(figures)
    assert "1,100 img/s (110 MB/s)" in text
    assert "0.37x" in text and "NO" in text and "yes" in text and "n/a" in text
    assert "3.00x" in text and "<= 2x" in text and "1.0%" in text
    assert "374 KB" in text and "0.37 MB" in text and "< 1 MB" in text  # an absolute target
    md = bench.format_table(figures, markdown=True)
    rows = md.splitlines()
    assert rows[0].startswith("| figure |") and rows[1].startswith("|---")
    assert "converter \\| steady" in md  # a pipe inside a cell is escaped
    assert all(r.count(" | ") >= 5 for r in rows[2:])


def test_write_results_is_strict_json(tmp_path):
    figures = _figures()
    results = {
        "figures": figures,
        "measurements": {"a": bench.Measurement("a", "img/s", [1.0, float("nan")])},
        "value": float("inf"),
    }
    path = bench.write_results(results, tmp_path / "out")
    text = open(path, encoding="utf-8").read()
    assert "NaN" not in text and "Infinity" not in text
    data = json.loads(text)
    assert data["value"] is None
    assert data["measurements"]["a"]["samples"] == [1.0, None]
    assert data["measurements"]["a"]["median"] == 1.0
    assert data["figures"][0]["target"] == ">= 0.5x"
    assert data["figures"][0]["met"] is False
    assert data["figures"][3]["value"] is None


def test_plot_and_markdown_from_results(tmp_path):
    results = jsonable(
        {
            "created": "2026-01-01T00:00:00+00:00",
            "machine": {"cores": 2, "cpu_model": "Test CPU", "ram_gb": 4, "tensorflow": "2.x"},
            "config": {"images": 10, "repeats": 3},
            "dataset": {"mean_kb": 100.0},
            "figures": _figures(),
            "sweep": {
                "convert": [
                    {"workers": 1, "images_per_s": 100.0, "mb_per_s": 10.0},
                    {
                        "workers": 2,
                        "images_per_s": 180.0,
                        "mb_per_s": 18.0,
                        "steady_images_per_s": 200.0,
                    },
                ],
                "read": [{"workers": 1, "images_per_s": 50.0, "mb_per_s": 5.0}],
            },
            "notes": ["a note"],
            "wall_seconds": 120.0,
        }
    )
    png = bench.plot_results(results, tmp_path / "chart" / "bench.png")
    with Image.open(png) as im:
        assert im.format == "PNG" and im.size[0] > 800
    md = bench.render_markdown(results, chart="docs/bench.png")
    assert md.startswith("## Benchmarks")
    assert "2 cores of Test CPU, 4 GB RAM, TensorFlow 2.x" in md
    assert "![benchmarks](docs/bench.png)" in md
    assert "| figure | baseline (same run) |" in md
    assert "| 2 | 180 img/s (18 MB/s) | 200 img/s" in md
    assert "- a note" in md
    # a figure's own note, with its per-repeat ratios (1000/3000 and 1200/3000)
    assert "- converter | steady: warm page cache; per repeat: 0.33x, 0.40x" in md
    assert "- memory:" not in md  # no note, no line
