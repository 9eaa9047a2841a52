"""Plain-language notes under the table: noise, cold cache, and the diagnostics behind misses.

:func:`build_notes` reads as its steps: each ``_..._notes`` function looks at one
part of the run and returns zero or more sentences.
"""

from __future__ import annotations

from collections.abc import Sequence

from helpers.bench.results import Figure
from helpers.bench.run import Bench
from helpers.bench.settings import OPEN_DELAY_S
from helpers.bench.stats import fmt_rate, median, ratio

CpuPerImage = dict[str, float]


def build_notes(bench: Bench, figures: Sequence[Figure]) -> list[str]:
    """Plain-language notes: noise, cold cache, and the diagnostics behind misses."""
    cpu = _cpu_ms_per_image(bench)
    return [
        *_load_notes(bench),
        *_cold_cache_notes(bench),
        *_durable_write_notes(bench),
        *_no_decode_notes(bench),
        *_cpu_notes(cpu),
        *_converter_limit_notes(bench, cpu),
        *_slow_storage_limit_notes(bench, cpu),
        *_generator_notes(bench, cpu),
        *_memory_notes(bench),
        *_train_notes(bench),
        *_profile_notes(bench),
        *(f"section {section} failed: {err}" for section, err in bench.errors.items()),
    ]


def _cpu_ms_per_image(bench: Bench) -> CpuPerImage:
    return {
        name: median(meas.extra.get("cpu_ms_per_image", []))
        for name, meas in bench.m.items()
        if meas.extra.get("cpu_ms_per_image")
    }


def _load_notes(bench: Bench) -> list[str]:
    load = [s.get("loadavg_before") for s in bench.extra.get("sections", {}).values()]
    load = [x[0] for x in load if x]
    if not load:
        return []
    return [
        f"1-minute load average during the run: {min(load):.1f}-{max(load):.1f} on "
        f"{bench.cores} cores (shared machine: wall-clock figures are noisy; medians shown)."
    ]


def _cold_cache_notes(bench: Bench) -> list[str]:
    if "cold" in bench.notes:
        return [bench.notes["cold"]]
    if "drop_caches" in bench.extra:
        d = bench.extra["drop_caches"]
        return [
            f"cold cache: /proc/sys/vm/drop_caches works here (page cache "
            f"{d['cached_mb_before']:.0f} -> {d['cached_mb_after']:.0f} MB); it was dropped "
            "before each cold run."
        ]
    return []


def _durable_write_notes(bench: Bench) -> list[str]:
    m = bench.m
    if "copy_fsync_warm" not in m or "copy_warm" not in m:
        return []
    return [
        "durable-write limit: the same copy with an fsync per class file runs at "
        f"{fmt_rate(m['copy_fsync_warm'].median, m['copy_fsync_warm'].mb_per_s)} "
        f"(the converter fsyncs every shard; the plain copy runs at "
        f"{fmt_rate(m['copy_warm'].median, m['copy_warm'].mb_per_s)})."
    ]


def _no_decode_notes(bench: Bench) -> list[str]:
    ident = bench.extra.get("bytes_identical")
    conv = bench.extra.get("converter_manifest")
    if not (ident and conv):
        return []
    return [
        f"no decoding in the converter: {ident['identical']}/{ident['checked']} sampled records "
        f"hold the file's exact bytes; manifest lists {conv['converted']} converted files."
    ]


def _cpu_notes(cpu: CpuPerImage) -> list[str]:
    if not cpu:
        return []
    return [
        "CPU per image (all threads; steadier than wall time on a loaded machine): "
        + ", ".join(f"{k.removeprefix('pipe_')} {v:.2f} ms" for k, v in sorted(cpu.items()))
        + "."
    ]


def _converter_limit_notes(bench: Bench, cpu: CpuPerImage) -> list[str]:
    steady_cpu = cpu.get(f"convert_w{bench.cores}_steady")
    copy = cpu.get("copy_warm")
    if not (steady_cpu and copy):
        return []
    cores = bench.cores
    return [
        f"converter steady state, the limit: {steady_cpu:.2f} ms CPU per image (workers "
        f"included) against {copy:.3f} ms for the plain copy; even on "
        f"{cores} idle cores that caps the warm ratio at {cores} x "
        f"{copy:.3f} / {steady_cpu:.2f} = {cores * copy / steady_cpu:.2f}x (0.5x needs <= "
        f"{cores * copy / 0.5:.2f} ms per image)."
    ]


def _slow_storage_limit_notes(bench: Bench, cpu: CpuPerImage) -> list[str]:
    if "pipe_tfrecord" not in cpu or "pipe_per_file_slow" not in bench.m:
        return []
    best = bench.cores * 1e3 / cpu["pipe_tfrecord"]
    per_file = bench.m["pipe_per_file_slow"].median
    return [
        f"slow-storage ratio, the limit: the per-file pipeline overlaps its "
        f"{OPEN_DELAY_S * 1e3:g} ms opens (AUTOTUNE concurrency) and reached "
        f"{per_file:,.0f} img/s, i.e. about {per_file * OPEN_DELAY_S:.1f} opens in flight; "
        f"the TFRecord pipeline's {cpu['pipe_tfrecord']:.2f} ms CPU per decoded image allows "
        f"at most {best:,.0f} img/s on {bench.cores} idle cores, so the ratio cannot exceed "
        f"{ratio(best, per_file):.1f}x here. 5x would need <= "
        f"{bench.cores * 1e3 / (5 * per_file):.2f} ms CPU per decoded image (or a baseline "
        "with fewer reads in flight)."
    ]


def _generator_notes(bench: Bench, cpu: CpuPerImage) -> list[str]:
    if "pipe_tfrecord" not in cpu or "pipe_generator" not in cpu:
        return []
    return [
        "generator ratio on idle cores, from CPU cost: "
        f"{bench.cores} x {cpu['pipe_generator']:.2f} / {cpu['pipe_tfrecord']:.2f} = "
        f"{bench.cores * cpu['pipe_generator'] / cpu['pipe_tfrecord']:.1f}x (the generator "
        "decodes on one Python thread)."
    ]


def _memory_notes(bench: Bench) -> list[str]:
    notes = []
    runs = bench.m["memory_growth"].extra.get("runs") if "memory_growth" in bench.m else None
    if runs:
        rate = median(r["images"] / r["seconds"] for r in runs if r.get("seconds"))
        notes.append(
            f"default knobs (training=True: shuffle 1000, prefetch AUTOTUNE), one full epoch "
            f"including the shuffle-buffer fill: {rate:,.0f} img/s."
        )
    ref = bench.extra.get("memory_reference")
    if ref:
        notes.append(
            "memory yardstick (helpers.pipeline.estimate_pipeline_memory): shuffle buffer 1000 x "
            f"{bench.record_bytes / 1e3:.0f} KB records = {ref['shuffle_buffer_mb']:.0f} MB + 3 "
            f"decoded batches of 32 x 224x224x3 float32 = {ref['batches_mb']:.0f} MB + "
            f"{bench.cores} images being decoded = {ref['decode_mb']:.0f} MB + read buffers "
            f"{ref.get('read_buffers_mb', 0):.1f} MB; a shuffle buffer of 1000 *decoded* images "
            f"would be {1000 * ref['image_mb']:.0f} MB."
        )
    return notes


def _train_notes(bench: Bench) -> list[str]:
    tr = bench.extra.get("train")
    if not tr:
        return []
    return [
        f"input wait: MobileNet alpha {tr['alpha']} at {tr['image_size']} px on {tr['device']}, "
        f"{tr['steps_per_window']} steps per window, shares "
        + ", ".join(f"{s:.1%}" for s in tr["shares"])
        + f"; mean step {median(tr['mean_step_ms']):.0f} ms."
    ]


def _profile_notes(bench: Bench) -> list[str]:
    notes = []
    prof = bench.extra.get("profile_convert")
    if prof and prof.get("inclusive"):
        wanted = ("_probe (", "_encode_item", "image_example", "_write_shard", "_jpeg_scan_start")
        shown = [f"{k} {v:.0%}" for k, v in prof["inclusive"] if k.startswith(wanted)]
        notes.append(
            "converter profile (py-spy, 1 worker, share of busy samples, inclusive): "
            + ", ".join(shown)
        )
    if "profile" in bench.notes:
        notes.append(bench.notes["profile"])
    return notes
