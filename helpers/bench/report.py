"""The chart (bench.png) and the markdown page (docs/benchmarks.md)."""

from __future__ import annotations

import math
import os
from typing import Any

from helpers.bench.results import Figure, format_table, jsonable
from helpers.bench.settings import ABSOLUTE_TARGETS, DEFAULT_REPEATS
from helpers.bench.stats import fmt_rate

SHORT_LABELS = {
    "convert_steady_warm": "converter steady state, warm  vs  plain copy",
    "convert_steady_cold": "converter steady state, cold  vs  plain copy",
    "convert_whole_run": "converter whole run  vs  single-threaded script",
    "pipeline_vs_ceiling": "TFRecord pipeline  vs  decode ceiling",
    "pipeline_vs_per_file_slow": "TFRecord  vs  per-file, 10 ms/open (simulated)",
    "pipeline_vs_generator": "TFRecord  vs  generator + PIL",
    "pipeline_memory": "peak memory  vs  computed buffers",
    "input_wait_share": "input-wait share, MobileNet training",
    "scale_time_per_image": "time per image, 10N  vs  N images",
    "scale_peak_rss": "converter peak RSS, 10N  vs  N images",
    "scale_manifest_bytes": "manifest bytes, 10N  vs  N images",
    "scale_startup": "make_dataset start-up, 10N  vs  N",
    "manifest_size_imagenet": "manifest.json, 1,024 shards x 1,000 classes",
    "resume_rerun": "rerun after SIGKILL  vs  a full run",
    "beam_vs_local": "Beam DirectRunner  vs  local converter",
}


def target_score(value: float | None, op: str, threshold: float) -> float | None:
    """How far a value is from its target, as a factor: >= 1 means met.

    ``value / threshold`` for ``>=`` / ``>`` targets, ``threshold / value`` for
    ``<=`` / ``<`` ones (so that for every figure, bigger is better).
    """
    if value is None or not math.isfinite(value) or threshold is None or op == "--":
        return None  # not measured, or reported without a target
    if op.startswith(">"):
        return value / threshold
    return threshold / value if value > 0 else float("inf")


def plot_results(results: dict[str, Any], path: str | os.PathLike) -> str:
    """Draw the chart: every figure against its target, and the workers sweep.

    Args:
      results: the results dict (as written to JSON).
      path: the PNG to write.

    Returns:
      The path written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures = [f if isinstance(f, dict) else jsonable(f) for f in results["figures"]]
    fig, axes = plt.subplots(1, 2, figsize=(14, 5.4), gridspec_kw={"width_ratios": [1.6, 1]})
    ax = axes[0]
    labels, scores, texts, colors = [], [], [], []
    for f in figures:
        value = f.get("value")
        score = target_score(value, f["op"], f["threshold"])
        labels.append(SHORT_LABELS.get(f["id"], f["figure"]))
        scores.append(min(score, 100.0) if score is not None else 0.0)
        if value is None:
            shown = "n/a"
        elif f["id"] == "input_wait_share":
            shown = f"{value:.1%}"
        elif f["id"] in ABSOLUTE_TARGETS:
            shown = f"{value:.2f} {ABSOLUTE_TARGETS[f['id']]}"
        else:
            shown = f"{value:.2f}x"
        texts.append(
            f"{shown}  (target {f['target']})" if f["op"] != "--" else f"{shown}  (no target)"
        )
        colors.append({True: "tab:green", False: "tab:red"}.get(f.get("met"), "tab:gray"))
    ys = list(range(len(labels)))[::-1]
    ax.barh(ys, scores, color=colors, height=0.6)
    ax.axvline(1.0, color="black", lw=1.5)
    for y, score, text in zip(ys, scores, texts, strict=True):
        # a figure without a target (or not measured) has no bar: its text starts at the line
        ax.text(score * 1.05 if score > 0 else 1.05, y, text, va="center", fontsize=8)
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xscale("log")
    finite = [s for s in scores if s > 0]
    ax.set_xlim(min([0.1, *finite]) * 0.8, max([10.0, *finite]) * 4)
    ax.set_xlabel("result / target  (right of the line = target met)")
    ax.set_title("Each figure against its target, baselines taken in the same run", fontsize=10)
    ax.grid(axis="x", alpha=0.3)

    ax = axes[1]
    sweep = results.get("sweep", {})
    series = (
        ("convert", "images_per_s", "mb_per_s", "converter, whole run", "o", "-"),
        ("convert", "steady_images_per_s", "steady_mb_per_s", "converter, steady state", "^", "--"),
        ("read", "images_per_s", "mb_per_s", "TFRecord read + decode + resize", "s", "-"),
    )
    for key, field_name, mb_name, label, marker, style in series:
        rows = [r for r in sweep.get(key) or [] if r.get(field_name)]
        if not rows:
            continue
        xs = [r["workers"] for r in rows]
        vals = [r[field_name] for r in rows]
        ax.plot(xs, vals, marker=marker, ls=style, label=label)
        for x, v, r in zip(xs, vals, rows, strict=True):
            if r.get(mb_name):
                ax.annotate(
                    f"{r[mb_name]:.0f} MB/s",
                    (x, v),
                    textcoords="offset points",
                    xytext=(5, 4),
                    fontsize=7,
                )
    cores = results.get("machine", {}).get("cores", 1) or 1
    ax.set_xticks(list(range(1, cores + 1)))
    ax.set_xlim(0.7, cores + 0.5)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("workers (converter processes / tf.data threads)")
    ax.set_ylabel("images / s")
    ax.set_title("Throughput by number of workers", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    machine = results.get("machine", {})
    config = results.get("config", {})
    fig.suptitle(
        f"helpers benchmarks: {config.get('images')} JPEGs, medians of {config.get('repeats')} "
        f"repeats; {machine.get('cores')} cores {machine.get('cpu_model', '')}, "
        f"TensorFlow {machine.get('tensorflow', '?')}",
        fontsize=10,
    )
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(os.fspath(path))), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return os.fspath(path)


def render_markdown(results: dict[str, Any], chart: str = "docs/bench.png") -> str:
    """The README section: command, machine, the table, the chart, the sweep and notes."""
    figures = [
        f
        if isinstance(f, Figure)
        else Figure(**{k: v for k, v in f.items() if k in Figure.__dataclass_fields__})
        for f in results["figures"]
    ]
    for f in figures:  # JSON null -> nan
        for name in ("measured", "baseline", "value"):
            if getattr(f, name) is None:
                setattr(f, name, float("nan"))
    machine = results.get("machine", {})
    config = results.get("config", {})
    lines = [
        "## Benchmarks",
        "",
        "`make bench` (`python -m helpers.bench --output bench-results`) generates "
        f"{config.get('images')} synthetic 500x375 JPEGs (~{results.get('dataset', {}).get('mean_kb', 0):.0f} KB "
        "each) outside the repository, measures every figure and its baseline in the same run "
        f"(median of {config.get('repeats')} repeats, interleaved"
        + (
            f"; this run used `--repeats {config.get('repeats')}`, the default is {DEFAULT_REPEATS}"
            if config.get("repeats") != DEFAULT_REPEATS
            else ""
        )
        + "), prints this table and writes `bench-results/results.json` and "
        "`bench-results/bench.png`.",
        "",
        f"Taken {results.get('created', '')[:16].replace('T', ' ')} UTC on {machine.get('cores')} cores of "
        f"{machine.get('cpu_model')}, {machine.get('ram_gb')} GB RAM, TensorFlow "
        f"{machine.get('tensorflow')}, Python {machine.get('python')}; whole run "
        f"{results.get('wall_seconds', 0) / 60:.1f} min.",
        "",
        format_table(figures, markdown=True),
        "",
        f"![benchmarks]({chart})",
        "",
    ]
    sweep = results.get("sweep", {})
    if sweep.get("convert") or sweep.get("read"):
        lines += [
            "| workers | converter, whole run | converter, steady state | TFRecord read + decode |",
            "|---|---|---|---|",
        ]
        read = {r["workers"]: r for r in sweep.get("read", [])}
        for row in sweep.get("convert", []):
            w = row["workers"]
            rd = read.get(w, {})
            lines.append(
                f"| {w} | {fmt_rate(row.get('images_per_s') or float('nan'), row.get('mb_per_s'))} | "
                f"{fmt_rate(row.get('steady_images_per_s') or float('nan'), row.get('steady_mb_per_s'))} | "
                f"{fmt_rate(rd.get('images_per_s') or float('nan'), rd.get('mb_per_s'))} |"
            )
        lines.append("")
    notes = figure_notes(figures) + list(results.get("notes") or [])
    if notes:
        lines += ["Notes:", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(lines)


def figure_notes(figures: list[Figure]) -> list[str]:
    """Each figure's own note (what its table row cannot say), with its per-repeat ratios."""
    notes = []
    for figure in figures:
        if not figure.note:
            continue
        repeats = ""
        if len(figure.samples or []) > 1 and figure.target.endswith("x"):  # ratios, not shares
            repeats = "; per repeat: " + ", ".join(f"{v:.2f}x" for v in figure.samples)
        notes.append(f"{figure.figure}: {figure.note}{repeats}")
    return notes


# ---------------------------------------------------------------------------
