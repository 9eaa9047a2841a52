"""``python -m helpers.bench``: parse the arguments, run, write the results."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from typing import Any

from helpers.bench.baselines import seed_style_convert
from helpers.bench.growth import bench_beam, bench_manifest_size, bench_resume, bench_scale
from helpers.bench.machine import loadavg, machine_info
from helpers.bench.notes import build_notes
from helpers.bench.probes import memory_probe, train_probe
from helpers.bench.report import figure_notes, plot_results, render_markdown
from helpers.bench.results import Figure, format_table, jsonable, write_results
from helpers.bench.run import Bench, Config
from helpers.bench.settings import (
    DEFAULT_CLASSES,
    DEFAULT_IMAGES,
    DEFAULT_REPEATS,
    SCALE_IMAGES,
    SIZE_PER_RECORD,
)
from helpers.util import atomic_write

# CLI
# ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The CLI's argument parser (``python -m helpers.bench --help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m helpers.bench",
        description="Converter and pipeline benchmarks against same-run baselines.",
    )
    parser.add_argument(
        "--output", default="bench-results", help="results folder (default: %(default)s)"
    )
    parser.add_argument(
        "--images",
        type=int,
        default=None,
        help=f"images in the synthetic set (default {DEFAULT_IMAGES}; --quick: 600)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help=f"repeats per figure, medians reported (default {DEFAULT_REPEATS}; --quick: 1)",
    )
    parser.add_argument(
        "--classes", type=int, default=DEFAULT_CLASSES, help="class folders (default: %(default)s)"
    )
    parser.add_argument(
        "--workdir",
        default=None,
        help="where the image set, subsets and shards live (default: "
        "$TMPDIR/tfrecord-course-bench); reused by later runs",
    )
    parser.add_argument(
        "--quick", action="store_true", help="600 images, 1 repeat, no cold cache: a smoke run"
    )
    parser.add_argument("--no-cold", action="store_true", help="skip the cold page-cache runs")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also profile one converter run with py-spy (if installed; a dev tool, not a "
        "dependency) into OUTPUT/profile-convert.txt",
    )
    parser.add_argument(
        "--train-steps",
        type=int,
        default=None,
        help="timed training steps per window, 3 windows (default 8; --quick: 4 x 1)",
    )
    parser.add_argument(
        "--update-docs",
        action="store_true",
        help="also write docs/bench.png and docs/benchmarks.md",
    )
    parser.add_argument(
        "--scale-images",
        type=int,
        default=None,
        help=f"N of the scale figures: N and 10*N small images (default {SCALE_IMAGES}; "
        "--quick: 500)",
    )
    parser.add_argument(
        "--no-growth",
        action="store_true",
        help="skip the scale, manifest-size, resume-after-kill and Apache Beam sections",
    )
    parser.add_argument("--docs-dir", default="docs", help=argparse.SUPPRESS)
    return parser


def _internal(argv: list[str]) -> int:
    """Hidden sub-commands run in child processes: _seed-convert, _memory, _train."""
    cmd, args = argv[0], argv[1:]
    if cmd == "_seed-convert":
        records = seed_style_convert(args[0], args[1])
        print(json.dumps({"records": records}))
    elif cmd == "_memory":
        print(json.dumps(memory_probe(args[0])))
    elif cmd == "_train":
        shards, steps, windows, alpha, size = args[:5]
        print(json.dumps(train_probe(shards, int(steps), int(windows), float(alpha), int(size), 3)))
    else:
        print(f"unknown internal command {cmd}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks; print the table; write results.json and bench.png."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].startswith("_"):
        return _internal(argv)
    args = build_parser().parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    config = _config_from(args)
    problem = _config_problem(config)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    os.makedirs(config.workdir, exist_ok=True)
    started = time.perf_counter()
    created = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {msg}", flush=True)

    bench = Bench(config, log)
    load_start = loadavg()
    _run_sections(bench)
    figures = bench.figures()
    machine = machine_info(bench.extra.get("tensorflow"))
    machine["loadavg_start"], machine["loadavg_end"] = load_start, loadavg()
    results = jsonable(
        {
            "schema": 1,
            "created": created,
            "command": "python -m helpers.bench " + " ".join(argv),
            "machine": machine,
            "config": asdict(config),
            "dataset": _dataset_summary(bench),
            "figures": figures,
            "measurements": {k: v for k, v in sorted(bench.m.items())},
            "sweep": bench.sweep(),
            "extra": bench.extra,
            "errors": bench.errors,
            "notes": build_notes(bench, figures),
            "wall_seconds": time.perf_counter() - started,
        }
    )
    _write_and_print(results, figures, args)
    return 1 if bench.errors else 0


def _config_from(args: argparse.Namespace) -> Config:
    """The run's :class:`Config`: the arguments, with ``--quick``'s smaller defaults."""
    return Config(
        images=args.images or (600 if args.quick else DEFAULT_IMAGES),
        repeats=args.repeats or (1 if args.quick else DEFAULT_REPEATS),
        classes=args.classes,
        workdir=os.path.abspath(
            args.workdir or os.path.join(tempfile.gettempdir(), "tfrecord-course-bench")
        ),
        output=args.output,
        cold=not (args.no_cold or args.quick),
        train_steps=args.train_steps or (4 if args.quick else 8),
        train_windows=1 if args.quick else 3,
        pipeline_steps=10 if args.quick else 25,
        quick=args.quick,
        profile=args.profile,
        scale_images=args.scale_images or (500 if args.quick else SCALE_IMAGES),
        growth=not args.no_growth,
    )


def _config_problem(config: Config) -> str | None:
    """Why the run cannot start, or ``None``."""
    if config.images < 4 * config.classes or config.repeats < 1:
        return "need --images >= 4 x --classes and --repeats >= 1"
    repo = os.path.realpath(os.getcwd())
    if os.path.realpath(config.workdir).startswith(repo + os.sep) and os.path.isdir(
        os.path.join(repo, ".git")
    ):
        return "--workdir must be outside the repository"
    return None


def _run_sections(bench: Bench) -> None:
    """Every section in turn; one that fails is recorded and the others still run."""
    bench.prepare()
    bench.guarded("converter", bench.bench_converter)
    if bench.config.cold:
        bench.guarded("converter_cold", bench.bench_converter_cold)
    bench.guarded("pipeline", bench.bench_pipeline)
    if hasattr(bench, "record_bytes"):
        bench.guarded("memory", bench.bench_memory)
        bench.guarded("train", bench.bench_train)
    if bench.config.growth:
        bench.guarded("scale", lambda: bench_scale(bench))
        bench.guarded("manifest_size", lambda: bench_manifest_size(bench))
        bench.guarded("resume", lambda: bench_resume(bench))
        bench.guarded("beam", lambda: bench_beam(bench))


def _dataset_summary(bench: Bench) -> dict[str, Any]:
    return {
        "images": len(bench.paths),
        "classes": len(bench.classes),
        "bytes": bench.total_bytes,
        "mean_kb": bench.bpi / 1e3,
        "subset_images": bench.subset_count,
        "workdir": bench.config.workdir,
        "size_per_record": SIZE_PER_RECORD,
    }


def _write_and_print(
    results: dict[str, Any], figures: list[Figure], args: argparse.Namespace
) -> None:
    """results.json and bench.png (and the docs with ``--update-docs``); the table on stdout."""
    json_path = write_results(results, args.output)
    png = plot_results(results, os.path.join(args.output, "bench.png"))
    print()
    print(format_table(figures))
    print()
    for note in figure_notes(figures) + results["notes"]:
        print(f"- {note}")
    if args.update_docs:
        os.makedirs(args.docs_dir, exist_ok=True)
        shutil.copyfile(png, os.path.join(args.docs_dir, "bench.png"))
        atomic_write(
            os.path.join(args.docs_dir, "benchmarks.md"),
            render_markdown(results, chart=f"{args.docs_dir}/bench.png"),
        )
    print(f"\nwrote {json_path} and {png} in {results['wall_seconds'] / 60:.1f} min")
