"""helpers.bench.probes and children: the memory yardstick and the profile summary."""

from __future__ import annotations

import pytest

from helpers import bench


def test_reference_memory_components():
    ref = bench.reference_memory(100_000, shuffle_buffer=1000, batch_size=32, image_size=224)
    assert ref["shuffle_buffer_mb"] == pytest.approx(100.0)
    assert ref["image_mb"] == pytest.approx(224 * 224 * 3 * 4 / 1e6)
    assert ref["batches_mb"] == pytest.approx(3 * 32 * ref["image_mb"])
    assert ref["read_buffers_mb"] == pytest.approx(2 * 256 * 1024 / 1e6)
    assert ref["total_mb"] == pytest.approx(
        ref["shuffle_buffer_mb"] + ref["batches_mb"] + ref["decode_mb"] + ref["read_buffers_mb"]
    )


def test_reference_memory_is_the_pipeline_estimate():
    """One estimator: the bench's yardstick is helpers.pipeline.estimate_pipeline_memory in MB."""
    from helpers import pipeline as P

    ref = bench.reference_memory(80_000, shuffle_buffer=500, images_in_flight=4)
    est = P.estimate_pipeline_memory(
        224, 32, shuffle_buffer=500, record_bytes=80_000, parallel_calls=4, cycle_length=4
    )
    assert ref["total_mb"] == pytest.approx(est["total"] / 1e6)
    assert ref["shuffle_buffer_mb"] == pytest.approx(est["shuffle_buffer"] / 1e6)


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
