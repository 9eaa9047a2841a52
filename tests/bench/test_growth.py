"""helpers.bench.growth: the scale, resume and Beam sections become figures with targets."""

from __future__ import annotations

import math

from helpers import bench
from helpers.bench import growth


def _bench_with(measurements: dict[str, float], extra: dict) -> bench.Bench:
    b = bench.Bench(bench.Config(images=3000, scale_images=100), log=lambda msg: None)
    for name, value in measurements.items():
        b.add(name, "s", value)
    b.extra.update(extra)
    return b


def test_scale_figures_are_ratios_of_10n_over_n_against_their_targets():
    b = _bench_with(
        {
            "scale_time_per_image_N": 2.0,
            "scale_time_per_image_10N": 2.2,  # 1.1x: met
            "scale_peak_rss_N": 50.0,
            "scale_peak_rss_10N": 75.0,  # 1.5x: missed
            "scale_manifest_bytes_N": 11.0,
            "scale_manifest_bytes_10N": 11.2,
            "scale_startup_N": 4.0,
            "scale_startup_10N": 4.0,
        },
        {},
    )
    figures = {f.id: f for f in growth.growth_figures(b)}
    assert set(figures) == {
        "scale_time_per_image",
        "scale_peak_rss",
        "scale_manifest_bytes",
        "scale_startup",
    }
    assert math.isclose(figures["scale_time_per_image"].value, 1.1)
    assert figures["scale_time_per_image"].met is True
    assert figures["scale_peak_rss"].met is False
    assert "1000 images" in figures["scale_startup"].figure


def test_resume_and_beam_figures_say_whether_the_output_was_identical():
    b = _bench_with(
        {"resume_rerun": 3.0, "resume_full": 6.0, "beam_direct": 30.0, "beam_local": 10.0},
        {
            "resume": {"shards_done_at_kill": 20, "shards": 41, "identical": True},
            "beam": {"images": 3000, "identical": False},
        },
    )
    figures = {f.id: f for f in growth.growth_figures(b)}
    assert figures["resume_rerun"].value == 0.5 and figures["resume_rerun"].met is True
    assert "20 of 41" in figures["resume_rerun"].note
    assert "byte-identical" in figures["resume_rerun"].note
    beam = figures["beam_vs_local"]
    assert beam.value == 3.0 and beam.met is None and beam.target == "reported"
    assert "DIFFERENT" in beam.note


def test_resume_section_repeats_and_the_figure_is_the_median_of_per_repeat_times(monkeypatch):
    from helpers.bench import scale

    runs = iter(
        [(2.0, 1.6, 19, True), (2.0, 1.0, 20, True), (2.2, 1.1, 21, False)]
    )  # rerun/full: 0.8x, 0.5x, 0.5x

    def fake_measure_resume(**kwargs):
        full, rerun, done, identical = next(runs)
        return {"full_s": full, "rerun_s": rerun, "rerun_over_full": rerun / full,
                "shards_done_at_kill": done, "shards": 40, "identical": identical}  # fmt: skip

    monkeypatch.setattr(scale, "measure_resume", fake_measure_resume)
    b = bench.Bench(bench.Config(images=10, repeats=3, cold=False), log=lambda msg: None)
    b.paths, b.images_dir = ["x"] * 10, "images"
    growth.bench_resume(b)
    assert b.m["resume_rerun"].samples == [1.6, 1.0, 1.1]
    (figure,) = growth.growth_figures(b)
    assert math.isclose(figure.value, 1.1 / 2.0)  # ratio of the medians
    assert "19/20/21 of 40" in figure.note and "DIFFERENT" in figure.note


def test_manifest_size_figure_is_absolute_megabytes_with_the_inline_baseline():
    b = _bench_with(
        {},
        {
            "manifest_size": {
                "shards": 1024,
                "classes": 1000,
                "records_per_shard": 1250,
                "class_counts_bytes": 2.1e6,
            }
        },
    )
    b.add("manifest_size_imagenet", "KB", 374.0)
    b.add("manifest_size_imagenet_inline", "KB", 17_935.0)
    (figure,) = growth.growth_figures(b)
    assert figure.id == "manifest_size_imagenet" and figure.target == "< 1 MB"
    assert math.isclose(figure.value, 0.374) and figure.met is True
    assert figure.shown_value == "0.37 MB" and "1024 shards x 1000 classes" in figure.figure
    assert "class_counts.json beside it: 2.10 MB" in figure.note
    b.m["manifest_size_imagenet"].samples = [25_000.0]  # per-shard counts inline again: missed
    assert growth.growth_figures(b)[0].met is False


def test_no_growth_sections_no_figures():
    assert growth.growth_figures(_bench_with({}, {})) == []
