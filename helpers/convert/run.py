"""``convert()``: the phases in order, in this process and its worker pool.

scan -> plan -> prepare the output folder -> write the shards -> write the manifest.
Each phase lives in its own module and can be run by another engine
(``docs/converter.md``, "Running the phases elsewhere").
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

from helpers.convert.advice import sizing_advice
from helpers.convert.finish import summary, write_manifest
from helpers.convert.output import (
    check_paths,
    cleanup,
    describe_write_error,
    prepare_output,
    refuse_existing,
)
from helpers.convert.planning import Plan, plan
from helpers.convert.pool import Runner
from helpers.convert.resume import Journal
from helpers.convert.scanning import Listing, ScanResult, probe_files, read_listing
from helpers.convert.settings import (
    DEFAULT_MAX_PIXELS,
    DEFAULT_SEED,
    DEFAULT_SIZE_PER_RECORD,
    ConvertError,
    Settings,
)
from helpers.convert.shards import ShardResult, write_shard
from helpers.manifest import Manifest
from helpers.util import progress_bar, usable_cores

__all__ = ["convert"]


def convert(
    dataset_path: str | os.PathLike,
    output_path: str | os.PathLike,
    size_per_record: int = DEFAULT_SIZE_PER_RECORD,
    workers: int | None = None,
    overwrite: bool = False,
    progress: bool = True,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    split_name: str = "train",
    seed: int = DEFAULT_SEED,
    log: Callable[[str], None] | None = None,
) -> Manifest:
    """Convert class folders of images to size-based TFRecord shards, indexes and a manifest.

    ``docs/converter.md`` gives the rules (what is copied, converted, skipped or
    ignored; the shard plan and order; atomic output; resuming).

    Args:
      dataset_path: folder with one sub-folder of images per class.
      output_path: folder for the shards, their ``.idx`` indexes, ``labels.txt``,
        ``class_counts.json`` and ``manifest.json`` (created if missing; not inside ``dataset_path``).
      size_per_record: target bytes of images per shard (default 50 MiB).
      workers: worker processes (default: the usable cores, but at most one per
        2000 files: a spawned process costs about half a second); 1 runs here.
      overwrite: replace a finished conversion (or another run's leftovers).
      progress: show progress bars and print warnings and the summary.
      max_pixels: skip images whose header claims more pixels than this.
      split_name: shard name prefix, e.g. ``train`` or ``validation``.
      seed: key of the deterministic record order.
      log: where warnings and the summary go (default: stderr when ``progress``).

    Returns:
      The :class:`helpers.manifest.Manifest` (also readable as the JSON dict).

    Raises:
      ConvertError: bad arguments or input, an output folder in the way, or a write
        failure such as a full disk (completed shards stay: rerun to resume).
      KeyboardInterrupt: after removing temporary files (completed shards stay).
    """
    started = time.perf_counter()
    dataset, output = os.fspath(dataset_path), os.fspath(output_path)
    log = log or ((lambda msg: print(msg, file=sys.stderr)) if progress else (lambda msg: None))
    settings = Settings(size_per_record, max_pixels, seed, split_name)
    settings.check()
    check_paths(dataset, output)
    refuse_existing(output, overwrite)
    listing = read_listing(dataset)
    runner = Runner(_worker_count(workers, len(listing.entries)))
    the_plan, created, done = None, False, {}
    try:
        scanned = _resumable_scan(output, overwrite, dataset, listing, max_pixels)
        scanned = scanned or probe_files(dataset, listing, max_pixels, runner, progress)
        del listing  # the scan holds what is still needed, in fewer bytes
        the_plan = plan(scanned, settings)
        created, done = prepare_output(output, the_plan, overwrite, log)
        kept = len(done)
        _write_shards(the_plan, output, runner, done, progress)
        runner.close()
        manifest = write_manifest(the_plan, done.values(), output)
        Journal(output).remove()
    except BaseException as err:
        runner.close(kill=True)
        if the_plan is not None and os.path.isdir(output) and _prepared(output, the_plan):
            cleanup(output, the_plan, created, len(done))
        if isinstance(err, OSError):
            raise ConvertError(describe_write_error(err, output) + _resume_hint(done)) from err
        raise
    line, advice = sizing_advice(manifest.num_shards, manifest.total_bytes)
    for message in [*manifest.warnings, *advice]:
        log(f"warning: {message}")
    log(summary(manifest, output, time.perf_counter() - started, kept) + "\n" + line)
    return manifest


def _worker_count(workers: int | None, n_files: int) -> int:
    if workers is None:  # one worker per 2000 files at most: starting one costs ~0.5 s
        return max(1, min(usable_cores(), 1 + n_files // 2000))
    if workers < 1:
        raise ConvertError(f"--workers must be at least 1, got {workers}")
    return max(1, min(int(workers), n_files))


def _write_shards(
    the_plan: Plan, output: str, runner: Runner, done: dict[int, ShardResult], progress: bool
) -> None:
    """Phase 3 for every shard not kept from an interrupted run; journal each one done."""
    journal = Journal(output)
    todo = [t for t in the_plan.tasks if t.index not in done]
    with progress_bar(
        sum(len(t.files) for t in todo), "write", enabled=progress, unit="img"
    ) as bar:
        for i, result in runner.run(write_shard, todo, output):
            done[result.index] = result
            journal.append(result)
            bar.update(len(todo[i].files))


def _resumable_scan(
    output: str, overwrite: bool, dataset: str, listing: Listing, max_pixels: int
) -> ScanResult | None:
    """An interrupted run's scan, when its files are unchanged (then no header is read again)."""
    journal = Journal(output)
    if overwrite or not journal.exists():
        return None
    return journal.rescan(dataset, listing, max_pixels)


def _prepared(output: str, the_plan: Plan) -> bool:
    """Whether this run got as far as writing its journal (so the folder's state is ours)."""
    journal = Journal(output)
    return journal.exists() and journal.read()[0] == the_plan.fingerprint


def _resume_hint(done: dict[int, ShardResult]) -> str:
    if done:
        return f" ({len(done)} completed shard(s) kept: rerun the same command to resume)"
    return " (partial output removed)"
