"""Smoke tests of the benchmark machinery on tiny inputs (no timing assertions)."""

from __future__ import annotations

import io
import json
import math
import os

import pytest
from PIL import Image

from helpers import bench


def _tiny_dataset(root, classes=2, per_class=3, size=(40, 30)):
    for c in range(classes):
        folder = root / f"class_{c}"
        folder.mkdir(parents=True)
        for i in range(per_class):
            data = bench.synthetic_jpeg(c * 100 + i, width=size[0], height=size[1])
            (folder / f"img_{i}.jpg").write_bytes(data)
    return root


# -- synthetic images -------------------------------------------------------------------


def test_synthetic_jpeg_is_a_deterministic_jpeg_of_the_requested_size():
    a = bench.synthetic_jpeg(7, seed=1, width=64, height=48)
    assert a == bench.synthetic_jpeg(7, seed=1, width=64, height=48)
    assert a != bench.synthetic_jpeg(8, seed=1, width=64, height=48)
    assert a != bench.synthetic_jpeg(7, seed=2, width=64, height=48)
    assert a[:3] == b"\xff\xd8\xff"
    with Image.open(io.BytesIO(a)) as im:
        assert im.format == "JPEG"
        assert im.size == (64, 48)
        assert im.mode == "RGB"


def test_synthetic_jpeg_is_textured_not_flat():
    # Noise keeps JPEGs photo-sized: far more than a flat image of the same size.
    flat = io.BytesIO()
    Image.new("RGB", (160, 120), (120, 130, 140)).save(flat, "JPEG", quality=90)
    assert len(bench.synthetic_jpeg(0, width=160, height=120)) > 5 * len(flat.getvalue())


def test_synthetic_jpeg_larger_than_the_noise_pool():
    data = bench.synthetic_jpeg(0, width=1200, height=40)
    with Image.open(io.BytesIO(data)) as im:
        assert im.size == (1200, 40)


def test_generate_images_writes_class_folders_and_reuses_the_cache(tmp_path):
    root = tmp_path / "images"
    stamp = bench.generate_images(root, 7, classes=3, width=32, height=24, workers=1)
    assert stamp["images"] == 7 and "reused" not in stamp
    paths, labels, classes = bench.list_dataset(str(root))
    assert classes == ["class_00", "class_01", "class_02"]
    assert len(paths) == 7 and sorted(set(labels)) == [0, 1, 2]
    assert stamp["bytes"] == bench.dataset_bytes(paths)
    mtime = os.path.getmtime(paths[0])
    again = bench.generate_images(root, 7, classes=3, width=32, height=24, workers=1)
    assert again["reused"] is True
    assert os.path.getmtime(paths[0]) == mtime
    # Different parameters: regenerated from scratch.
    other = bench.generate_images(root, 4, classes=2, width=32, height=24, workers=1)
    assert "reused" not in other
    assert len(bench.list_dataset(str(root))[0]) == 4


def test_generate_images_in_worker_processes(tmp_path):
    stamp = bench.generate_images(tmp_path / "p", 6, classes=2, width=24, height=16, workers=2)
    assert len(bench.list_dataset(str(tmp_path / "p"))[0]) == 6
    assert stamp["bytes"] > 0


def test_link_subset_takes_the_same_files_per_class(tmp_path):
    src = _tiny_dataset(tmp_path / "src", classes=2, per_class=3)
    n = bench.link_subset(str(src), str(tmp_path / "sub"), 4)
    assert n == 4
    sub_paths, sub_labels, _ = bench.list_dataset(str(tmp_path / "sub"))
    assert sub_labels == [0, 0, 1, 1]
    for p in sub_paths:
        rel = os.path.relpath(p, tmp_path / "sub")
        assert open(p, "rb").read() == (src / rel).read_bytes()


# -- statistics -----------------------------------------------------------------------


def test_median_ignores_failed_repeats():
    assert bench.median([3.0, 1.0, 2.0]) == 2.0
    assert bench.median([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert bench.median([1.0, float("nan"), None, 5.0, 3.0]) == 3.0
    assert math.isnan(bench.median([]))
    assert math.isnan(bench.median([None, float("nan")]))


def test_ratio():
    assert bench.ratio(6.0, 2.0) == 3.0
    assert math.isnan(bench.ratio(1.0, 0.0))
    assert math.isnan(bench.ratio(float("nan"), 2.0))
    assert math.isnan(bench.ratio(1.0, None))


@pytest.mark.parametrize(
    ("value", "op", "threshold", "expected"),
    [
        (0.5, ">=", 0.5, True),
        (0.49, ">=", 0.5, False),
        (3.1, ">", 3.0, True),
        (2.0, "<=", 2.0, True),
        (0.05, "<", 0.05, False),
        (0.01, "<", 0.05, True),
        (float("nan"), ">=", 1.0, None),
        (None, ">=", 1.0, None),
    ],
)
def test_check_target(value, op, threshold, expected):
    assert bench.check_target(value, op, threshold) is expected


def test_check_target_rejects_unknown_operator():
    with pytest.raises(ValueError, match="operator"):
        bench.check_target(1.0, "=>", 1.0)


def test_steady_rate_cancels_fixed_costs():
    # 2 s of start-up in both runs, 1000 img/s in between.
    assert bench.steady_rate(3000, 2.0 + 3.0, 600, 2.0 + 0.6) == pytest.approx(1000.0)
    assert math.isnan(bench.steady_rate(3000, 1.0, 600, 2.0))  # noise bigger than signal
    assert math.isnan(bench.steady_rate(600, 2.0, 600, 1.0))


def test_make_figure_uses_medians_and_keeps_per_repeat_ratios():
    measured = bench.Measurement("m", "img/s", [100.0, 300.0, 200.0], bytes_per_image=1e5)
    baseline = bench.Measurement("b", "img/s", [50.0, 100.0, 60.0], bytes_per_image=1e5)
    fig = bench.make_figure("convert_whole_run", "converter", "seed", measured, baseline)
    assert fig.measured == 200.0 and fig.baseline == 60.0
    assert fig.value == pytest.approx(200.0 / 60.0)
    assert fig.met is True and fig.target == ">= 3x"
    assert fig.samples == pytest.approx([2.0, 3.0, 200.0 / 60.0])
    assert fig.mb_per_s == pytest.approx(20.0)
    missed = bench.make_figure("pipeline_vs_per_file_slow", "tfr", "pf", measured, baseline)
    assert missed.met is False


def test_make_figure_without_measurement_is_not_applicable():
    fig = bench.make_figure("pipeline_vs_ceiling", "tfr", "ceiling", None, None)
    assert fig.met is None and math.isnan(fig.value)


def test_input_wait_figure_compares_the_share_itself():
    share = bench.Measurement("input_wait_share", "share", [0.02, 0.01, 0.04])
    fig = bench.make_figure("input_wait_share", "wait", "--", share, None, value=share.median)
    assert fig.value == 0.02 and fig.met is True and fig.target == "< 5%"


# -- table, JSON, chart, docs ------------------------------------------------------------


def _figures():
    a = bench.Measurement("a", "img/s", [1000.0, 1200.0], bytes_per_image=1e5)
    b = bench.Measurement("b", "img/s", [3000.0, 3000.0], bytes_per_image=1e5)
    mem = bench.Measurement("mem", "MB", [300.0])
    ref = bench.Measurement("ref", "MB", [100.0])
    share = bench.Measurement("share", "share", [0.01])
    return [
        bench.make_figure("convert_steady_warm", "converter | steady", "copy", a, b),
        bench.make_figure("pipeline_memory", "memory", "reference", mem, ref),
        bench.make_figure("input_wait_share", "input wait", "--", share, None, value=0.01),
        bench.make_figure("pipeline_vs_ceiling", "not measured", "ceiling", None, None),
    ]


def test_format_table_plain_and_markdown():
    figures = _figures()
    text = bench.format_table(figures)
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["figure", "baseline"]
    assert len(lines) == 2 + len(figures)
    assert "1,100 img/s (110 MB/s)" in text
    assert "0.37x" in text and "NO" in text and "yes" in text and "n/a" in text
    assert "3.00x" in text and "<= 2x" in text and "1.0%" in text
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
    results = bench._jsonable(
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


# -- baselines and helpers ---------------------------------------------------------------


def test_copy_per_class_copies_every_byte(tmp_path):
    src = _tiny_dataset(tmp_path / "src", classes=2, per_class=3)
    for fsync in (False, True):
        out = tmp_path / f"out-{fsync}"
        images, nbytes = bench.copy_per_class(src, out, fsync=fsync)
        assert images == 6
        assert nbytes == sum(p.stat().st_size for p in src.rglob("*.jpg"))
        joined = b"".join(p.read_bytes() for p in sorted((src / "class_0").iterdir()))
        assert (out / "class_0.bin").read_bytes() == joined


def test_seed_style_convert_writes_one_example_per_image(tmp_path):
    import tensorflow as tf

    src = _tiny_dataset(tmp_path / "src", classes=2, per_class=3)
    out = tmp_path / "out"
    # A tiny size per record: a new file after every image.
    assert bench.seed_style_convert(src, out, size_per_record=1) == 6
    files = sorted(str(p) for p in out.glob("out_*.tfrecord"))
    assert len(files) >= 6
    records = list(tf.data.TFRecordDataset(files).as_numpy_iterator())
    assert len(records) == 6
    example = tf.train.Example.FromString(records[0])
    feature = example.features.feature
    assert feature["category"].int64_list.value[0] == 0
    assert feature["data"].bytes_list.value[0] == (src / "class_0" / "img_0.jpg").read_bytes()


def test_reference_memory_components():
    ref = bench.reference_memory(100_000, shuffle_buffer=1000, batch_size=32, image_size=224)
    assert ref["shuffle_buffer_mb"] == pytest.approx(100.0)
    assert ref["image_mb"] == pytest.approx(224 * 224 * 3 * 4 / 1e6)
    assert ref["batches_mb"] == pytest.approx(3 * 32 * ref["image_mb"])
    assert ref["total_mb"] == pytest.approx(
        ref["shuffle_buffer_mb"] + ref["batches_mb"] + ref["decode_mb"]
    )


def test_summarize_profile_counts_busy_samples_only():
    raw = [
        "main (a.py:1);work (a.py:5);sha (b.py:2) 6\n",
        "main (a.py:1);work (a.py:5) 2\n",
        "main (a.py:1);read (a.py:9) 2\n",
        "_bootstrap (threading.py:1);TMonitor.run (_monitor.py:3);Condition.wait (threading.py:4) 90\n",
        "garbage\n",
    ]
    summary = bench.summarize_profile(raw, top=3)
    assert summary["samples"] == [("busy", 10)]
    assert summary["inclusive"][0] == ("main (a.py)", 1.0)
    assert ("work (a.py)", 0.8) in summary["inclusive"]
    assert summary["self"][0] == ("sha (b.py)", 0.6)
    assert bench.summarize_profile([])["inclusive"] == []


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


# -- performance fixes made from the benchmark's findings --------------------------------


@pytest.mark.parametrize(
    ("rel", "class_text", "label", "fmt"),
    [
        ("class_00/img_000001.jpg", "class_00", 0, "jpeg"),
        ("caf\u00e9/\u732b 1.png", "caf\u00e9", 7, "png"),
        ("latin/a\udce9.jpg", "latin", 2**40, "jpeg"),  # non-UTF-8 file name bytes
    ],
)
def test_converter_record_builder_matches_the_generic_example_builder(rel, class_text, label, fmt):
    from helpers import convert
    from helpers import features as F

    payload = os.urandom(3000)
    item = convert._Item("/unused", rel, label, class_text, ".jpg", len(payload))
    fast = convert._record_bytes(F, payload, item, 375, 500, fmt)
    generic = F.serialize_example(
        F.image_example(payload, label, class_text, os.fsencode(rel), 375, 500, fmt)
    )
    assert fast == generic


def test_default_training_pipeline_shuffles_serialized_records_before_decoding(tmp_path):
    """Without a cache the shuffle buffer holds records, not decoded float32 images."""
    import tensorflow as tf

    from helpers import features as F
    from helpers import pipeline as P

    path = tmp_path / "train-00000-of-00001.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(12):
            image = bench.synthetic_jpeg(i, width=24, height=16)
            writer.write(F.serialize_example(F.image_example(image, i % 3, "c", b"c/x", 16, 24)))

    def ops(ds):
        return [type(d).__name__ for d in _upstream(ds)]

    plain = P.make_dataset(path, 4, 8, num_classes=3, seed=0)
    cached = P.make_dataset(path, 4, 8, num_classes=3, seed=0, cache=True)
    order = ops(plain)
    assert order.index("_ShuffleDataset") > order.index("_ParallelMapDataset")  # upstream first
    cached_order = ops(cached)
    assert cached_order.index("_ShuffleDataset") < cached_order.index("CacheDataset")
    assert sum(len(x) for x, _ in plain) == 12  # every record still delivered once per epoch
    assert sorted(int(v) for _, y in plain for v in tf.argmax(y, 1)) == sorted(
        i % 3 for i in range(12)
    )


def _upstream(dataset):
    """The chain of datasets from the last transformation back to the source."""
    chain, seen = [], [dataset]
    while seen:
        ds = seen.pop(0)
        chain.append(ds)
        seen.extend(ds._inputs())
    return chain
