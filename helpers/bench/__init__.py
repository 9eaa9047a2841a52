"""Benchmarks: the converter against the I/O limit, the pipeline against the decode limit.

::

    python -m helpers.bench --output bench-results [--images 3000] [--repeats 3] [--quick]
        [--workdir DIR] [--no-cold] [--update-docs]

(``make bench`` runs the first line.) One run measures every figure of issue 6
*and its baseline*, interleaved repeat by repeat so that a burst of load on a
shared machine hits both, and reports medians:

======================================  ===============================================
figure                                  baseline (same run)
======================================  ===============================================
converter images/s, steady state        plain-Python copy of the same bytes into one
(all cores)                             file per class (the I/O limit), warm and cold
converter whole run, start-up included  a typical single-threaded converter script
                                        (``tf.io.read_file`` per image, one Example per
                                        image, one ``TFRecordWriter``)
TFRecord pipeline images/s              the same decode + resize 224 on in-memory bytes
(decode + resize, batch, prefetch)      (the decode ceiling)
TFRecord pipeline, 10 ms per file open  a one-file-per-image tf.data pipeline, same
(simulated)                             simulated storage
TFRecord pipeline                       a Python generator decoding with PIL
pipeline peak memory (default knobs)    one shuffle buffer of serialized records +
                                        decoded batches in flight (computed)
input-wait share, MobileNet training    -- (target < 5 %)
manifest.json size, 1,024 shards x      the same manifest with per-shard class counts
1,000 classes (target < 1 MB)           inline (format version 2)
======================================  ===============================================

plus converter and reader throughput for 1 .. all cores, in images/s and MB/s.

The synthetic image set (ImageNet-like 500x375 JPEGs of textured noise, ~100 KB
each) is generated *outside* the repository, in ``--workdir`` (default: a
folder in the system temp directory), in parallel, and reused by later runs
with the same parameters. Results go to ``OUTPUT/results.json`` and
``OUTPUT/bench.png``; ``--update-docs`` also writes ``docs/bench.png`` and
``docs/benchmarks.md`` (the README section).

How each figure is taken:

* *Converter steady state* is a difference of two runs of the CLI, one on the
  whole set (N images) and one on a subset (N/5, but enough files to start as
  many workers; hard links to the same files): ``(N - n) / (T_N - T_n)``.
  Start-up (process spawn, imports, the manifest) cancels out. The converter fsyncs every shard; the copy baseline
  does not (so on a warm cache it runs at memory speed, as the issue asks);
  the copy *with* an fsync per file is reported next to it, to show what the
  disk allows.
* *Cold* runs drop the page cache first (``echo 3 > /proc/sys/vm/drop_caches``,
  needs root); without that permission they are reported as not measured.
* *Pipeline* figures time ``measure_throughput`` of :mod:`helpers.pipeline`
  after a warm-up; the process CPU time per image is recorded too, since on a
  shared machine it is steadier than wall time.
* *Peak memory* runs in a subprocess: RSS (psutil) is sampled every 5 ms and
  the kernel's high-water mark (``VmHWM``, reset through ``clear_refs``) is
  read while one epoch of the default training pipeline runs; the figure is
  peak RSS minus the RSS after TensorFlow has warmed up.
* *Input wait* trains the small MobileNet of lesson 06 in a subprocess with
  :func:`helpers.train.measure_input_wait` over a few windows of steps.
* *Manifest size* writes the finish phase's files for synthetic shard results of
  an ImageNet-shaped conversion (:mod:`helpers.bench.manifest_size`, about a
  second, no image involved) and measures ``manifest.json``.

Nothing here is a test: the figures are ratios against baselines taken in the
same run, and a missed target is reported, not raised.

One module per job: ``settings`` (sizes, targets), ``stats`` (medians, ratios),
``results`` (measurements, figures, results.json), ``machine``, ``images`` (the
synthetic set), ``baselines`` (plain copy, single-threaded converter),
``children`` (child processes, profiling), ``probes`` (memory, input wait),
``growth`` (scale, manifest size, resume, Beam sections), ``scale``,
``manifest_size``, ``beam``, ``run`` (:class:`Bench`), ``notes``, ``report``
(chart, markdown), ``cli``.
"""

from __future__ import annotations

from helpers.bench.baselines import copy_per_class, seed_style_convert
from helpers.bench.children import summarize_profile
from helpers.bench.cli import build_parser, main
from helpers.bench.images import (
    dataset_bytes,
    generate_images,
    link_subset,
    list_dataset,
    synthetic_jpeg,
)
from helpers.bench.machine import drop_caches, machine_info
from helpers.bench.notes import build_notes
from helpers.bench.probes import reference_memory
from helpers.bench.report import plot_results, render_markdown
from helpers.bench.results import Figure, Measurement, format_table, make_figure, write_results
from helpers.bench.run import Bench, Config
from helpers.bench.stats import check_target, median, ratio, steady_rate

__all__ = [
    "Bench",
    "Config",
    "Figure",
    "Measurement",
    "build_notes",
    "build_parser",
    "check_target",
    "copy_per_class",
    "dataset_bytes",
    "drop_caches",
    "format_table",
    "generate_images",
    "link_subset",
    "list_dataset",
    "machine_info",
    "main",
    "make_figure",
    "median",
    "plot_results",
    "ratio",
    "reference_memory",
    "render_markdown",
    "seed_style_convert",
    "steady_rate",
    "summarize_profile",
    "synthetic_jpeg",
    "write_results",
]
