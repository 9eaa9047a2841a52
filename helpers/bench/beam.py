"""The Apache Beam converter against the local one, on the benchmark's images.

DirectRunner is Beam's local test runner: the ratio it gives is that runner's overhead
on one machine, not what a cluster does. What the figure guards is that the cluster
path exists, runs the same phases and writes the same bytes (``identical``).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from helpers.bench.images import generate_images
from helpers.bench.settings import DEFAULT_CLASSES, DEFAULT_HEIGHT, DEFAULT_WIDTH, GEN_VERSION
from helpers.bench.stats import median, ratio
from helpers.convert.run import convert
from helpers.util import sha256_file, usable_cores

__all__ = ["measure_beam_vs_local"]


def measure_beam_vs_local(
    n_images: int = 3000,
    workdir: str | os.PathLike | None = None,
    repeats: int = 1,
    beam_args: Sequence[str] | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Time the local converter and the DirectRunner pipeline on the same synthetic images.

    The images are the benchmark's (:func:`helpers.generate_images`, cached in
    ``workdir``); both engines convert them with default settings into fresh folders,
    repeat by repeat in alternating order, and their outputs are compared. DirectRunner
    is Beam's test runner: the ratio is its overhead here, not a cluster's speed.

    Args:
      n_images: synthetic 500x375 JPEGs to convert.
      workdir: where the images and outputs go (default: the bench's temp folder).
      repeats: timed runs per engine; medians are reported.
      beam_args: Beam options (default: multi-processing with one worker per core,
        as many processes as the local converter uses).
      log: progress messages.

    Returns:
      ``{"images", "bytes", "local_s", "beam_s", "ratio" (beam / local), "identical"
      (every output file equal), "runner", "beam_args", "repeats", "cores"}``.
    """
    from helpers.convert.beam import convert_beam  # Beam is an optional extra

    cores = usable_cores()
    if beam_args is None:
        beam_args = ["--direct_running_mode=multi_processing", f"--direct_num_workers={cores}"]
    work = os.fspath(workdir or os.path.join(tempfile.gettempdir(), "tfrecord-course-bench"))
    tag = f"n{n_images}-c{DEFAULT_CLASSES}-{DEFAULT_WIDTH}x{DEFAULT_HEIGHT}"
    images = os.path.join(work, f"images-{tag}-v{GEN_VERSION}")
    stamp = generate_images(images, n_images, log=log)
    engines = {
        "local": lambda out: convert(images, out, overwrite=True, progress=False),
        "beam": lambda out: convert_beam(
            images, out, overwrite=True, progress=False, beam_args=beam_args
        ),
    }
    seconds: dict[str, list[float]] = {"local": [], "beam": []}
    for repeat in range(repeats):
        for name in sorted(engines, reverse=repeat % 2 == 1):
            started = time.perf_counter()
            engines[name](os.path.join(work, f"beam-vs-local-{name}"))
            seconds[name].append(time.perf_counter() - started)
            log(f"{name}: {seconds[name][-1]:.1f} s")
    outputs = [os.path.join(work, f"beam-vs-local-{name}") for name in ("local", "beam")]
    local_s, beam_s = median(seconds["local"]), median(seconds["beam"])
    return {
        "images": n_images,
        "bytes": stamp["bytes"],
        "local_s": local_s,
        "beam_s": beam_s,
        "ratio": ratio(beam_s, local_s),
        "identical": _same_files(*outputs),
        "runner": "DirectRunner",
        "beam_args": list(beam_args),
        "repeats": repeats,
        "cores": cores,
    }


def _same_files(a: str, b: str) -> bool:
    names = sorted(os.listdir(a))
    return names == sorted(os.listdir(b)) and all(
        sha256_file(os.path.join(a, n)) == sha256_file(os.path.join(b, n)) for n in names
    )
