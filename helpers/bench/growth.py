"""How costs grow with the dataset, resuming after a kill, and the Beam path: bench sections.

Four sections of ``make bench`` built on :mod:`helpers.bench.scale`,
:mod:`helpers.bench.manifest_size` and :mod:`helpers.bench.beam`, each recorded as
measurements on the :class:`Bench` and turned into figures against a baseline
taken in the same run:

* scale: N and 10*N small images into the same shard count: time per image,
  peak RSS of the converter process, manifest bytes and ``make_dataset``
  start-up at 10*N over the same figure at N;
* manifest size: ``manifest.json`` of 1,024 shards x 1,000 classes (synthetic shard
  results through the finish phase), against an absolute target of 1 MB, with the
  format-2 manifest (per-shard class counts inline) as the baseline;
* resume: a rerun after a SIGKILL at about half way, over an uninterrupted run;
* beam: the Beam DirectRunner path over the local converter on the bench's images
  (reported, no target: DirectRunner is a test runner).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from helpers.bench.machine import drop_caches
from helpers.bench.results import Figure, make_figure
from helpers.bench.settings import MB

if TYPE_CHECKING:
    from helpers.bench.run import Bench

__all__ = ["bench_beam", "bench_manifest_size", "bench_resume", "bench_scale", "growth_figures"]

_SCALE_KEYS = {
    "scale_time_per_image": ("s_per_image", "ms", 1e3, "converter time per image"),
    "scale_peak_rss": ("peak_rss", "MB", 1e-6, "converter process peak RSS"),
    "scale_manifest_bytes": ("manifest_bytes", "KB", 1e-3, "manifest.json size, same shard count"),
}


def bench_scale(bench: Bench) -> None:
    """Convert N and 10*N images; keep both runs' figures."""
    from helpers.bench.scale import measure_scale

    n = bench.config.scale_images
    bench.log(f"scale: converting {n} and {10 * n} small images into the same shard count")
    result = measure_scale(n=n, factor=10, shards=16, workers=bench.cores)
    small, large = result["runs"][n], result["runs"][10 * n]
    for fig_id, (key, unit, scale, _) in _SCALE_KEYS.items():
        bench.add(f"{fig_id}_N", unit, small[key] * scale)
        bench.add(f"{fig_id}_10N", unit, large[key] * scale)
    bench.add("scale_startup_N", "s", small["make_dataset"]["build_s"])
    bench.add("scale_startup_10N", "s", large["make_dataset"]["build_s"])
    bench.extra["scale"] = result


def bench_manifest_size(bench: Bench) -> None:
    """manifest.json of an ImageNet-shaped conversion (synthetic shard results), in KB."""
    from helpers.bench.manifest_size import measure_manifest_size

    result = measure_manifest_size(workdir=bench.config.workdir)
    bench.log(
        f"manifest size: {result['shards']} shards x {result['classes']} classes, "
        f"{result['records']} records (synthetic shard results through write_manifest)"
    )
    bench.add("manifest_size_imagenet", "KB", result["manifest_bytes"] / 1e3)
    bench.add("manifest_size_imagenet_inline", "KB", result["inline_manifest_bytes"] / 1e3)
    bench.extra["manifest_size"] = result


def bench_resume(bench: Bench) -> None:
    """Kill a conversion half way, rerun it; time against an uninterrupted run (each repeat)."""
    from helpers.bench.scale import measure_resume

    cold = bench.config.cold and drop_caches()
    repeats = 1 if bench.config.quick else bench.config.repeats
    bench.log(
        f"resume: the {len(bench.paths)} bench images, SIGKILL at about half the shards, "
        f"then the same command ({'cold' if cold else 'warm'} page cache), {repeats} repeats"
    )
    runs = []
    for r in range(repeats):
        result = measure_resume(
            shards=40, workers=bench.cores, dataset=bench.images_dir,
            before_run=drop_caches if cold else None,
        )  # fmt: skip
        bench.log(
            f"resume, repeat {r + 1}/{repeats}: full {result['full_s']:.2f} s, "
            f"rerun {result['rerun_s']:.2f} s ({result['rerun_over_full']:.2f}x), "
            f"{result['shards_done_at_kill']}/{result['shards']} shards done at the kill"
        )
        bench.add("resume_rerun", "s", result["rerun_s"])
        bench.add("resume_full", "s", result["full_s"])
        runs.append(result)
    bench.extra["resume"] = {
        "cold": cold,
        "runs": runs,
        "shards": runs[0]["shards"],
        "shards_done_at_kill": [run["shards_done_at_kill"] for run in runs],
        "identical": all(run["identical"] for run in runs),
    }


def bench_beam(bench: Bench) -> None:
    """The Beam DirectRunner path against the local converter on the bench's image set."""
    from helpers.bench.beam import measure_beam_vs_local

    result = measure_beam_vs_local(
        bench.config.images, workdir=bench.config.workdir, repeats=1, log=bench.log
    )
    bench.add("beam_direct", "s", result["beam_s"])
    bench.add("beam_local", "s", result["local_s"])
    bench.extra["beam"] = result


def growth_figures(bench: Bench) -> list[Figure]:
    """The figures of the three sections that ran."""
    m = bench.m.get
    out = []
    if "scale_startup_N" in bench.m:
        n = bench.config.scale_images
        for fig_id, (_, _, _, label) in _SCALE_KEYS.items():
            out.append(
                make_figure(
                    fig_id,
                    f"{label}, {10 * n} images",
                    f"the same, {n} images",
                    m(f"{fig_id}_10N"),
                    m(f"{fig_id}_N"),
                )  # fmt: skip
            )
        out.append(
            make_figure(
                "scale_startup",
                f"make_dataset build time, {10 * n} images",
                f"the same, {n} images",
                m("scale_startup_10N"),
                m("scale_startup_N"),
            )  # fmt: skip
        )
    if "manifest_size_imagenet" in bench.m:
        out.append(_manifest_size_figure(bench))
    if "resume_rerun" in bench.m:
        extra: dict[str, Any] = bench.extra["resume"]
        out.append(
            make_figure(
                "resume_rerun",
                "rerun after SIGKILL at half way (time)",
                "an uninterrupted run",
                m("resume_rerun"),
                m("resume_full"),
                f"{'cold' if extra.get('cold') else 'warm'} page cache; "
                f"{_shards_at_kill(extra)} of {extra['shards']} shards done at the kill; "
                f"output {'byte-identical' if extra['identical'] else 'DIFFERENT'}",
            )
        )
    if "beam_direct" in bench.m:
        beam = bench.extra["beam"]
        out.append(
            make_figure(
                "beam_vs_local",
                f"Beam DirectRunner conversion, {beam['images']} images (time)",
                "local converter, same images",
                m("beam_direct"),
                m("beam_local"),
                "DirectRunner is Beam's local test runner: reported, no target; output "
                + ("byte-identical" if beam["identical"] else "DIFFERENT"),
            )
        )
    return out


def _shards_at_kill(extra: dict[str, Any]) -> str:
    """'20' or '19/20/21': shards complete when each repeat was killed (older results: one int)."""
    done = extra["shards_done_at_kill"]
    return "/".join(str(d) for d in done) if isinstance(done, list) else str(done)


def _manifest_size_figure(bench: Bench) -> Figure:
    """Bytes of manifest.json against the absolute target (MB), the inline format as baseline."""
    size = bench.m["manifest_size_imagenet"]
    info = bench.extra.get("manifest_size", {})
    sidecar = info.get("class_counts_bytes")
    return make_figure(
        "manifest_size_imagenet",
        f"manifest.json size, {info.get('shards', 1024)} shards x {info.get('classes', 1000)} "
        f"classes x {info.get('records_per_shard', 1250)} records",
        "the same, per-shard class counts inline (format 2)",
        size,
        bench.m.get("manifest_size_imagenet_inline"),
        "synthetic shard results through write_manifest"
        + (f"; class_counts.json beside it: {sidecar / MB:.2f} MB" if sidecar else ""),
        value=size.median * 1e3 / MB,
    )
