"""helpers.bench.stats and figures: medians, ratios, targets."""

from __future__ import annotations

import math

import pytest

from helpers import bench


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
