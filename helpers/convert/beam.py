"""The conversion as an Apache Beam pipeline: ``python -m helpers.convert ... --runner R``.

The pipeline runs the converter's own phases (``docs/converter.md``, "Running the
phases elsewhere"), so its output is byte-identical to :func:`helpers.convert.convert`'s
and every later change to the format reaches it without a copy:

====================  ============================================================
``List``              :func:`~helpers.convert.scanning.read_listing` (one element)
``Probe`` (parallel)  :func:`~helpers.convert.scanning.probe_batch` over batches of files
``Plan`` (global)     :func:`~helpers.convert.scanning.sort_outcomes` then
                      :func:`~helpers.convert.planning.plan`
``PrepareOutput``     :func:`~helpers.convert.output.prepare_output` (after the scan
                      succeeded: clears an old conversion with ``overwrite``, keeps
                      shards a local run journalled as complete)
``WriteShard``        :func:`~helpers.convert.shards.write_shard` per shard (parallel,
                      atomic, with its index)
``WriteManifest``     :func:`~helpers.convert.finish.write_manifest` (global, last)
====================  ============================================================

Paths are local, or on a filesystem every worker and the submitting machine mount at
the same place (NFS, a Cloud Storage FUSE mount): ``gs://`` / ``s3://`` URLs are
refused with a message saying so. Beam is an optional extra (``pip install -e '.[beam]'``).
:func:`helpers.bench.beam.measure_beam_vs_local` times this pipeline on DirectRunner against the local
converter (for ``make bench``).
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from helpers.convert import encode
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
from helpers.convert.resume import Journal
from helpers.convert.scanning import (
    Listing,
    ProbeOutcomes,
    probe_batch,
    read_listing,
    sort_outcomes,
)
from helpers.convert.settings import (
    DEFAULT_MAX_PIXELS,
    DEFAULT_SEED,
    DEFAULT_SIZE_PER_RECORD,
    ConvertError,
    Settings,
)
from helpers.convert.shards import ShardResult, write_shard
from helpers.manifest import Manifest, read_manifest

__all__ = ["INSTALL_HINT", "build_pipeline", "convert_beam", "import_beam"]

INSTALL_HINT = "Apache Beam is not installed: pip install -e '.[beam]'"
PROBE_BATCH = 64  # files per probe element: enough to hide Beam's per-element cost
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_WHILE = re.compile(r" \[while running '[^']*'\]$")


def import_beam() -> Any:
    """``apache_beam``, or :class:`ConvertError` with the one-line install hint."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # Beam's import warns about Google Cloud clients we never use
    try:
        import apache_beam
    except ImportError:
        raise ConvertError(INSTALL_HINT) from None
    finally:
        root.setLevel(level)
    return apache_beam


def _refuse_url(path: str, what: str) -> None:
    if _URL.match(path):
        raise ConvertError(
            f"{what} {path!r} is a URL; the Beam converter reads and writes file paths only: "
            "use a folder every worker mounts at the same path (NFS, or the bucket through "
            "Cloud Storage FUSE, e.g. /gcs/BUCKET/images)"
        )


# --- the steps (module-level functions: picklable for any runner) ---------------------


def _list(_: Any, dataset: str) -> Listing:
    return read_listing(dataset)


def _batches(listing: Listing) -> list[tuple[int, list[Any]]]:
    entries = listing.entries
    return [(i, entries[i : i + PROBE_BATCH]) for i in range(0, len(entries), PROBE_BATCH)]


def _light_in_workers(driver_pid: int) -> None:
    """Load only TensorFlow's protobuf modules in worker processes (never in the driver,
    which may be a notebook that imports TensorFlow later; see ``encode.LIGHT``)."""
    if os.getpid() != driver_pid:
        encode.LIGHT = True


def _probe(start_batch: tuple[int, list[Any]], max_pixels: int, driver_pid: int) -> tuple:
    _light_in_workers(driver_pid)
    start, batch = start_batch
    return start, probe_batch(batch, max_pixels)


def _plan(probed: list[tuple], listing: Listing, dataset: str, settings: Settings) -> Plan:
    outcomes = ProbeOutcomes(len(listing.entries))
    for start, batch in probed:
        outcomes.put(start, batch)
    return plan(sort_outcomes(dataset, listing, outcomes, settings.max_pixels), settings)


def _prepare(the_plan: Plan, output: str, overwrite: bool) -> tuple[Plan, dict]:
    _, kept = prepare_output(output, the_plan, overwrite, lambda msg: print(msg, file=sys.stderr))
    return the_plan, kept


def _todo(prepared: tuple[Plan, dict]) -> list[Any]:
    the_plan, kept = prepared
    return [task for task in the_plan.tasks if task.index not in kept]


def _write(task: Any, output: str, driver_pid: int) -> ShardResult:
    _light_in_workers(driver_pid)
    return write_shard(task, output)


def _finish(results: list[ShardResult], prepared: tuple[Plan, dict], output: str) -> str:
    the_plan, kept = prepared
    write_manifest(the_plan, [*kept.values(), *results], output)
    Journal(output).remove()
    return output


def build_pipeline(
    pipeline: Any, dataset: str, output: str, settings: Settings, overwrite: bool = False
) -> Any:
    """Add the conversion's steps to ``pipeline``; returns the ``WriteManifest`` PCollection."""
    beam = import_beam()
    single = beam.pvalue.AsSingleton
    pid = os.getpid()
    listing = pipeline | "Start" >> beam.Create([None]) | "List" >> beam.Map(_list, dataset)
    prepared = (
        listing
        | "Batch" >> beam.FlatMap(_batches)
        | "SpreadProbes" >> beam.Reshuffle()
        | "Probe" >> beam.Map(_probe, settings.max_pixels, pid)
        | "GatherProbes" >> beam.combiners.ToList()
        | "Plan" >> beam.Map(_plan, single(listing), dataset, settings)
        | "PrepareOutput" >> beam.Map(_prepare, output, overwrite)
    )
    return (
        prepared
        | "Shards" >> beam.FlatMap(_todo)
        | "SpreadShards" >> beam.Reshuffle()
        | "WriteShard" >> beam.Map(_write, output, pid)
        | "GatherShards" >> beam.combiners.ToList()
        | "WriteManifest" >> beam.Map(_finish, single(prepared), output)
    )


def _as_convert_error(err: Exception, output: str) -> ConvertError:
    """The user-facing error inside a runner's wrapped exception (or the runner's own).

    A write error becomes the local converter's message, caused by the ``OSError``
    (so the CLI exits 1, as locally).
    """
    seen, cause = set(), err
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, ConvertError):  # without the "[while running 'Step']" Beam adds
            return ConvertError(_WHILE.sub("", str(cause)))
        if isinstance(cause, OSError):
            error = ConvertError(describe_write_error(cause, output))
            error.__cause__ = cause
            return error
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    found = re.search(r"ConvertError: ([^\n]+)", str(err))
    if found:
        return ConvertError(found.group(1).strip().rstrip("'\""))
    last = (str(err).strip().splitlines() or [type(err).__name__])[-1]
    return ConvertError(f"the Beam pipeline failed: {last}")


def convert_beam(
    dataset_path: str | os.PathLike,
    output_path: str | os.PathLike,
    size_per_record: int = DEFAULT_SIZE_PER_RECORD,
    overwrite: bool = False,
    progress: bool = True,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    split_name: str = "train",
    seed: int = DEFAULT_SEED,
    log: Callable[[str], None] | None = None,
    runner: str = "DirectRunner",
    beam_args: Sequence[str] = (),
) -> Manifest:
    """:func:`helpers.convert.convert` as an Apache Beam pipeline on ``runner``.

    Same arguments, checks, output bytes, skipped-file reporting and summary as the
    local converter; ``beam_args`` are Beam pipeline options (``--project``,
    ``--temp_location``, ``--num_workers``, ``--flink_master``,
    ``--direct_num_workers``, ...). Shards a local run journalled as complete are
    kept; Beam itself retries failed work, and a failed pipeline is simply rerun.

    Raises:
      ConvertError: bad arguments or input (also when found inside the pipeline), an
        output folder in the way, a URL path, Beam not installed, or the pipeline failed.
    """
    started = time.perf_counter()
    beam = import_beam()
    dataset, output = os.fspath(dataset_path), os.fspath(output_path)
    log = log or ((lambda msg: print(msg, file=sys.stderr)) if progress else (lambda msg: None))
    settings = Settings(size_per_record, max_pixels, seed, split_name)
    settings.check()
    _refuse_url(dataset, "dataset path")
    _refuse_url(output, "output path")
    check_paths(dataset, output)
    refuse_existing(output, overwrite)
    from apache_beam.options.pipeline_options import PipelineOptions

    options = PipelineOptions(list(beam_args), runner=runner)
    options.get_all_options(display_warnings=True)  # "Did you mean ...?" for a misspelt option
    try:
        with beam.Pipeline(options=options) as pipeline:
            build_pipeline(pipeline, dataset, output, settings, overwrite)
    except BaseException as err:
        cleanup(output, None, False, 1)  # temporary files only: completed shards stay
        if not isinstance(err, Exception):  # Ctrl-C
            raise
        error = _as_convert_error(err, output)
        raise error from error.__cause__ or err
    manifest = read_manifest(output)
    line, advice = sizing_advice(manifest.num_shards, manifest.total_bytes)
    for message in [*manifest.warnings, *advice]:
        log(f"warning: {message}")
    log(summary(manifest, output, time.perf_counter() - started) + "\n" + line)
    log(f"(ran as an Apache Beam {beam.__version__} pipeline on {runner})")
    return manifest
