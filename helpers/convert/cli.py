"""The converter's command line: ``python -m helpers.convert --help``."""

from __future__ import annotations

import argparse
import difflib
import functools
import os
import signal
import sys
from typing import Any

from helpers.convert.run import convert
from helpers.convert.settings import (
    DEFAULT_MAX_PIXELS,
    DEFAULT_SEED,
    DEFAULT_SIZE_PER_RECORD,
    ConvertError,
)
from helpers.util import parse_size, usable_cores

__all__ = ["build_parser", "main"]


class _OneLineParser(argparse.ArgumentParser):
    """Argument errors as one line (no usage dump)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(2)


_DESCRIPTION = (
    "Convert class folders of images (DATASET/<class>/<image>) into size-based\n"
    "TFRecord shards with an offset index each (.idx), labels.txt, class_counts.json\n"
    "(records per class in every shard) and manifest.json.\n"
    "JPEG and plain PNG bytes are copied as they are; other images are converted to\n"
    "RGB; bad files are skipped and listed in the manifest. The classic spellings\n"
    "--dataset_path=..., --size_per_record=... and --output_path=... work too.\n"
    "Rerunning the same command after an interruption keeps the completed shards."
)
_EPILOG = (
    "examples:\n"
    "  python -m helpers.convert --dataset-path data/images --output-path /tmp/shards\n"
    "  python -m helpers.convert --dataset_path=images --size_per_record=16777216 "
    "--output_path=tfrecords\n"
    "  python -m helpers.convert --dataset-path data/images --output-path /tmp/shards "
    "--runner DirectRunner   # Apache Beam\n"
    "  python -m helpers.records verify /tmp/shards     # check every CRC and checksum\n\n"
    "exit status: 0 done (skipped files are listed, not fatal; see --strict),\n"
    "1 conversion failed (completed shards kept: rerun to resume), 2 bad arguments\n"
    "or input, 130 interrupted (completed shards kept: rerun to resume)."
)


def build_parser() -> argparse.ArgumentParser:
    """The CLI's argument parser (``python -m helpers.convert --help``)."""
    parser = _OneLineParser(
        prog="python -m helpers.convert",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=_DESCRIPTION,
        epilog=_EPILOG,
    )
    _add_paths_and_sizes(parser)
    _add_run_options(parser)
    return parser


def _add_paths_and_sizes(parser: argparse.ArgumentParser) -> None:
    """Where from, where to, how big: the options a typical converter script had too."""
    parser.add_argument(
        "--dataset-path",
        "--dataset_path",
        dest="dataset_path",
        default="images",
        help="folder with one sub-folder per class (default: %(default)s)",
    )
    parser.add_argument(
        "--output-path",
        "--output_path",
        dest="output_path",
        default="tfrecords",
        help="folder for shards, labels.txt, class_counts.json and manifest.json; created "
        "if missing "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--size-per-record",
        "--size_per_record",
        dest="size_per_record",
        default=str(DEFAULT_SIZE_PER_RECORD),
        metavar="BYTES",
        help="target image bytes per shard, e.g. 52428800, 50MiB, 16M (default: 52428800 = 50 MiB)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help=f"worker processes; 1 = no subprocesses (default: the CPU cores, here "
        f"{usable_cores()}, but at most one per 2000 files)",
    )


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """How the run behaves: resuming, limits, naming, output, and the Beam runner."""
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a finished conversion (or another run's shards) in the output folder, "
        "or start an interrupted one again instead of resuming it",
    )
    parser.add_argument(
        "--max-pixels",
        "--max_pixels",
        dest="max_pixels",
        type=int,
        default=DEFAULT_MAX_PIXELS,
        metavar="N",
        help="skip images whose header claims more pixels (default: %(default)s)",
    )
    parser.add_argument(
        "--split-name",
        "--split_name",
        dest="split_name",
        default="train",
        help="shard name prefix: <split>-00000-of-00004.tfrecord (default: %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help="key of the deterministic record order (default: %(default)s)",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no progress bars, warnings or summary"
    )
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 (after writing) when any file was skipped"
    )
    parser.add_argument(
        "--runner",
        default=None,
        metavar="RUNNER",
        help="run the conversion as an Apache Beam pipeline on RUNNER (DirectRunner, "
        "DataflowRunner, FlinkRunner, SparkRunner; same output bytes); Beam's own options "
        "(--project, --region, --temp_location, --staging_location, --num_workers, "
        "--flink_master, --spark_master_url, --direct_num_workers, ...) are passed to it; "
        "needs pip install -e '.[beam]' (docs/converter.md, 'Running on Apache Beam')",
    )


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    parser = build_parser()
    args, beam_args = parser.parse_known_args(argv)
    if beam_args and args.runner is None:
        parser.error(f"unrecognized arguments: {' '.join(beam_args)}")
    for arg, ours in _misspelt_options(parser, beam_args):
        parser.error(
            f"unrecognized argument {arg} (did you mean {ours}?); with --runner, arguments "
            "the converter does not know go to Beam, which would ignore this one"
        )
    if args.runner is not None and args.workers is not None:
        parser.error(
            "--workers is for the local converter; with --runner use the runner's "
            "options (e.g. --num_workers, --direct_num_workers)"
        )
    try:
        size = parse_size(args.size_per_record)
    except ValueError as err:
        print(f"error: --size-per-record: {err}", file=sys.stderr)
        return 2

    def _terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        manifest = _converter(args, beam_args)(
            args.dataset_path,
            args.output_path,
            size_per_record=size,
            overwrite=args.overwrite,
            progress=not args.quiet,
            max_pixels=args.max_pixels,
            split_name=args.split_name,
            seed=args.seed,
            log=(lambda msg: None) if args.quiet else print,
        )
    except ConvertError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1 if isinstance(err.__cause__, OSError) else 2
    except KeyboardInterrupt:
        print(_interrupted(args.output_path), file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    if args.strict and manifest["skipped"]:
        print(f"error: {len(manifest['skipped'])} file(s) skipped (--strict)", file=sys.stderr)
        return 1
    return 0


def _interrupted(output: str) -> str:
    """The one line after Ctrl-C / SIGTERM: whether anything was kept to resume from."""
    from helpers.convert.resume import JOURNAL_NAME

    if os.path.exists(os.path.join(output, JOURNAL_NAME)):
        return (
            f"interrupted: temporary files removed; completed shards in {output} are kept, "
            "rerun the same command to resume"
        )
    return f"interrupted before any shard was complete: nothing was kept in {output}"


def _misspelt_options(parser: argparse.ArgumentParser, extra: list[str]) -> list[tuple[str, str]]:
    """Extra arguments (bound for Beam) that look like a mistyped converter option."""
    ours: dict[str, str] = {}
    for action in parser._actions:
        long = [option for option in action.option_strings if option.startswith("--")]
        for option in long:  # the first spelling (--size-per-record) is the one suggested
            ours[option.lstrip("-").replace("-", "_")] = long[0]
    found = []
    for arg in extra:
        if not arg.startswith("--"):
            continue
        name = arg.split("=", 1)[0].lstrip("-").replace("-", "_").lower()
        close = difflib.get_close_matches(name, list(ours), n=1, cutoff=0.85)
        if close:
            found.append((arg.split("=", 1)[0], ours[close[0]]))
    return found


def _converter(args: argparse.Namespace, beam_args: list[str]) -> Any:
    """The local converter, or the Beam pipeline when ``--runner`` is given."""
    if args.runner is None:
        return functools.partial(convert, workers=args.workers)
    from helpers.convert.beam import convert_beam

    return functools.partial(convert_beam, runner=args.runner, beam_args=beam_args)
