"""One benchmark run: every measurement and its same-run baseline, interleaved repeat by repeat."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from helpers.bench.baselines import copy_per_class
from helpers.bench.children import (
    json_child,
    profile_converter,
    run_converter,
    run_script_converter,
)
from helpers.bench.growth import growth_figures
from helpers.bench.images import (
    dataset_bytes,
    generate_images,
    link_subset,
    list_dataset,
    warm_cache,
)
from helpers.bench.machine import drop_caches, loadavg, meminfo_cached_mb
from helpers.bench.probes import reference_memory
from helpers.bench.results import Figure, Measurement, make_figure
from helpers.bench.settings import (
    BATCH_SIZE,
    DEFAULT_CLASSES,
    DEFAULT_HEIGHT,
    DEFAULT_IMAGES,
    DEFAULT_REPEATS,
    DEFAULT_WIDTH,
    GEN_VERSION,
    IMAGE_SIZE,
    MB,
    OPEN_DELAY_S,
    SCALE_IMAGES,
)
from helpers.bench.stats import steady_rate
from helpers.util import usable_cores


@dataclass
class Config:
    """What one run measures, and how much."""

    images: int = DEFAULT_IMAGES
    repeats: int = DEFAULT_REPEATS
    classes: int = DEFAULT_CLASSES
    workdir: str = ""
    output: str = "bench-results"
    cold: bool = True
    train_steps: int = 8
    train_windows: int = 3
    train_alpha: float = 0.25
    train_size: int = IMAGE_SIZE
    pipeline_steps: int = 25
    subset_fraction: float = 0.2
    quick: bool = False
    profile: bool = False
    scale_images: int = SCALE_IMAGES
    growth: bool = True  # the scale, resume and Beam sections


class Bench:
    """Runs every measurement; keeps measurements, figures and notes."""

    def __init__(self, config: Config, log: Callable[[str], None] = print):
        self.config = config
        self.log = log
        self.m: dict[str, Measurement] = {}
        self.notes: dict[str, str] = {}
        self.errors: dict[str, str] = {}
        self.extra: dict[str, Any] = {}
        self.cores = usable_cores()

    # -- bookkeeping -------------------------------------------------------

    def measurement(
        self, name: str, unit: str, bytes_per_image: float | None = None
    ) -> Measurement:
        if name not in self.m:
            self.m[name] = Measurement(name, unit, bytes_per_image=bytes_per_image)
        elif bytes_per_image and not self.m[name].bytes_per_image:
            self.m[name].bytes_per_image = bytes_per_image
        return self.m[name]

    def add(self, name: str, unit: str, value: float, bytes_per_image: float | None = None) -> None:
        self.measurement(name, unit, bytes_per_image).samples.append(float(value))

    def add_cpu(self, name: str, cpu_seconds: float, images: int) -> None:
        """Record CPU milliseconds per image (all processes and threads) next to a rate."""
        value = 1e3 * cpu_seconds / images if images > 0 else float("nan")
        self.measurement(name, "img/s").extra.setdefault("cpu_ms_per_image", []).append(value)

    def guarded(self, section: str, fn: Callable[[], None]) -> None:
        started = time.perf_counter()
        load = loadavg()
        try:
            fn()
        except Exception as err:  # one failing section must not lose the others
            self.errors[section] = f"{type(err).__name__}: {err}"
            self.log(f"  ! {section} failed: {self.errors[section]}")
        self.extra.setdefault("sections", {})[section] = {
            "seconds": round(time.perf_counter() - started, 1),
            "loadavg_before": load,
            "loadavg_after": loadavg(),
        }

    # -- data --------------------------------------------------------------

    def prepare(self) -> None:
        c = self.config
        tag = f"n{c.images}-c{c.classes}-{DEFAULT_WIDTH}x{DEFAULT_HEIGHT}-v{GEN_VERSION}"
        self.images_dir = os.path.join(c.workdir, f"images-{tag}")
        stamp = generate_images(self.images_dir, c.images, c.classes, log=self.log)
        self.extra["generation"] = stamp
        self.paths, self.labels, self.classes = list_dataset(self.images_dir)
        self.total_bytes = dataset_bytes(self.paths)
        self.bpi = self.total_bytes / len(self.paths)
        # The subset must start as many converter workers as the full set (one per 64 files),
        # or the difference of the two runs would not cancel the pool's start-up.
        n_small = min(c.images // 2, max(int(c.images * c.subset_fraction), 65 * self.cores))
        n_small = max(c.classes, n_small)
        self.subset_dir = os.path.join(c.workdir, f"subset-{tag}-{n_small}")
        self.subset_count = link_subset(self.images_dir, self.subset_dir, n_small)
        self.out_dir = os.path.join(c.workdir, "out")
        self.shards_dir = os.path.join(c.workdir, f"shards-{tag}")
        shutil.rmtree(self.shards_dir, ignore_errors=True)  # written by this run's converter
        self.log(
            f"image set: {len(self.paths)} JPEGs, {self.total_bytes / MB:.0f} MB "
            f"({self.bpi / 1e3:.0f} KB mean) in {len(self.classes)} classes at {self.images_dir}"
            f"{' (cached)' if stamp.get('reused') else ''}; subset {self.subset_count} images"
        )

    # -- converter ---------------------------------------------------------

    def bench_converter(self) -> None:
        c = self.config
        n_big, n_small = len(self.paths), self.subset_count
        warm_cache(self.paths)
        workers_list = list(range(1, self.cores + 1))
        for r in range(c.repeats):
            self.log(f"converter, warm, repeat {r + 1}/{c.repeats}")
            t0, cpu0 = time.perf_counter(), time.process_time()
            images, nbytes = copy_per_class(self.images_dir, self.out_dir)
            self.add("copy_warm", "img/s", images / (time.perf_counter() - t0), self.bpi)
            self.add_cpu("copy_warm", time.process_time() - cpu0, images)
            shutil.rmtree(self.out_dir, ignore_errors=True)
            os.sync()
            t0 = time.perf_counter()
            copy_per_class(self.images_dir, self.out_dir, fsync=True)
            self.add("copy_fsync_warm", "img/s", images / (time.perf_counter() - t0), self.bpi)
            for w in reversed(workers_list) if r % 2 else workers_list:
                big, manifest, cpu_big = run_converter(self.images_dir, self.out_dir, w)
                if manifest["num_records"] != n_big:
                    raise RuntimeError(f"converter wrote {manifest['num_records']} of {n_big}")
                if w == self.cores:
                    self.extra["converter_manifest"] = {
                        "num_shards": manifest["num_shards"],
                        "total_bytes": manifest["total_bytes"],
                        "converted": len(manifest["converted"]),
                        "skipped": len(manifest["skipped"]),
                    }
                small, _, cpu_small = run_converter(self.subset_dir, self.out_dir, w)
                self.add(f"convert_w{w}_whole", "img/s", n_big / big, self.bpi)
                self.add_cpu(f"convert_w{w}_whole", cpu_big, n_big)
                self.add_cpu(f"convert_w{w}_steady", cpu_big - cpu_small, n_big - n_small)
                self.add(f"convert_w{w}_seconds", "s", big)
                self.add(f"convert_w{w}_small_seconds", "s", small)
                self.add(
                    f"convert_w{w}_steady",
                    "img/s",
                    steady_rate(n_big, big, n_small, small),
                    self.bpi,
                )
            seconds, records, cpu = run_script_converter(self.images_dir, self.out_dir)
            if records != n_big:
                raise RuntimeError(f"the single-threaded script wrote {records} of {n_big}")
            self.add("script_whole", "img/s", n_big / seconds, self.bpi)
            self.add_cpu("script_whole", cpu, n_big)
            self.add("seed_seconds", "s", seconds)
        shutil.rmtree(self.out_dir, ignore_errors=True)
        self.check_no_decode()
        if c.profile:
            raw = os.path.join(os.path.abspath(c.output), "profile-convert.txt")
            os.makedirs(c.output, exist_ok=True)
            prof = profile_converter(self.images_dir, self.out_dir, raw)
            if prof is None:
                self.notes["profile"] = "--profile: py-spy not found (pip install py-spy)"
            else:
                self.extra["profile_convert"] = prof

    def bench_converter_cold(self) -> None:
        c = self.config
        n_big, n_small = len(self.paths), self.subset_count
        before = meminfo_cached_mb()
        if not drop_caches():
            self.notes["cold"] = (
                "cold page cache not measured: writing /proc/sys/vm/drop_caches was refused "
                "(needs root)"
            )
            self.log("  " + self.notes["cold"])
            return
        after = meminfo_cached_mb()
        self.extra["drop_caches"] = {"cached_mb_before": before, "cached_mb_after": after}
        for r in range(c.repeats):
            self.log(f"converter, cold page cache, repeat {r + 1}/{c.repeats}")
            drop_caches()
            t0 = time.perf_counter()
            images, _ = copy_per_class(self.images_dir, self.out_dir)
            self.add("copy_cold", "img/s", images / (time.perf_counter() - t0), self.bpi)
            shutil.rmtree(self.out_dir, ignore_errors=True)
            drop_caches()
            big, _, _ = run_converter(self.images_dir, self.out_dir, self.cores)
            drop_caches()
            small, _, _ = run_converter(self.subset_dir, self.out_dir, self.cores)
            self.add("convert_cold_seconds", "s", big)
            self.add(
                "convert_steady_cold", "img/s", steady_rate(n_big, big, n_small, small), self.bpi
            )
        shutil.rmtree(self.out_dir, ignore_errors=True)
        warm_cache(self.paths)

    def check_no_decode(self) -> None:
        """The converter stores JPEG bytes untouched: compare a sample of records with the files."""
        from helpers.features import IMAGE_KEYS, example_to_dict
        from helpers.records import read_records

        if not os.path.isfile(os.path.join(self.shards_dir, "manifest.json")):
            run_converter(self.images_dir, self.shards_dir, self.cores)
        shard = sorted(n for n in os.listdir(self.shards_dir) if n.endswith(".tfrecord"))[0]
        checked = same = 0
        for raw in read_records(os.path.join(self.shards_dir, shard)):
            record = example_to_dict(raw)
            rel = record[IMAGE_KEYS["filename"]][0].decode()
            with open(os.path.join(self.images_dir, rel), "rb") as f:
                same += f.read() == record[IMAGE_KEYS["encoded"]][0]
            checked += 1
            if checked >= 50:
                break
        self.extra["bytes_identical"] = {"checked": checked, "identical": same}

    # -- pipeline ----------------------------------------------------------

    def bench_pipeline(self) -> None:
        import tensorflow as tf

        from helpers import pipeline

        c = self.config
        self.extra["tensorflow"] = tf.__version__
        if not os.path.isfile(os.path.join(self.shards_dir, "manifest.json")):
            run_converter(self.images_dir, self.shards_dir, self.cores)
        with open(os.path.join(self.shards_dir, "manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
        self.record_bytes = manifest["total_bytes"] / manifest["num_records"]
        num_classes = len(self.classes)
        encoded_list = []
        for path in self.paths:
            with open(path, "rb") as f:
                encoded_list.append(f.read())
        # One tensor, built once: from_tensor_slices on a Python list would copy it per build.
        encoded = tf.constant(encoded_list)
        labels = tf.constant(self.labels, tf.int64)
        del encoded_list
        steps = c.pipeline_steps
        slow = pipeline.slow_open(OPEN_DELAY_S, 0.0)
        self.extra["slow_storage"] = str(slow)

        def ceiling() -> tf.data.Dataset:
            def prep(data: tf.Tensor, label: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
                image = pipeline.preprocess_image(data, IMAGE_SIZE)
                return image, tf.one_hot(label, num_classes)

            ds = tf.data.Dataset.from_tensor_slices((encoded, labels))
            ds = ds.map(prep, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
            return ds.batch(BATCH_SIZE, drop_remainder=True).prefetch(tf.data.AUTOTUNE)

        def tfrecord(**kwargs: Any) -> tf.data.Dataset:
            opts = {"batch_size": BATCH_SIZE, "image_size": IMAGE_SIZE, "training": False}
            return pipeline.make_dataset(self.shards_dir, **{**opts, **kwargs})

        def threads(n: int) -> Callable[[], tf.data.Dataset]:
            def build() -> tf.data.Dataset:
                options = tf.data.Options()
                options.threading.private_threadpool_size = n
                return tfrecord().with_options(options)

            return build

        def per_file_slow() -> tf.data.Dataset:
            return pipeline.per_file_dataset(
                self.paths,
                self.labels,
                BATCH_SIZE,
                IMAGE_SIZE,
                num_classes=num_classes,
                storage=slow,
            )

        def generator() -> tf.data.Dataset:
            return pipeline.generator_dataset(
                self.paths, self.labels, BATCH_SIZE, IMAGE_SIZE, num_classes=num_classes
            )

        # The slow baselines read the first batches of the same images (their rate is steady).
        sub_batches = len(self.paths) // BATCH_SIZE
        runs: list[tuple[str, Callable[[], tf.data.Dataset], int | None]] = [
            ("pipe_ceiling", ceiling, steps),
            ("pipe_tfrecord", tfrecord, steps),
            ("pipe_tfrecord_slow", lambda: tfrecord(storage=slow), steps),
            ("pipe_per_file_slow", per_file_slow, max(1, min(12, sub_batches - 1))),
            ("pipe_generator", generator, max(1, min(10, sub_batches - 1))),
        ]
        runs += [(f"pipe_threads{n}", threads(n), steps) for n in range(1, self.cores)]
        # One untimed pass of each kind first: traces functions, warms kernels.
        for _name, build, _steps in runs[:2]:
            for _ in build().take(2):
                pass
        for r in range(c.repeats):
            self.log(f"pipeline, repeat {r + 1}/{c.repeats}")
            order = runs if r % 2 == 0 else list(reversed(runs))
            for name, build, n_steps in order:
                cpu0 = time.process_time()
                result = pipeline.measure_throughput(build(), steps=n_steps, warmup=1)
                cpu = time.process_time() - cpu0
                images = result["images"] + BATCH_SIZE * result["warmup_batches"]
                self.add(name, "img/s", result["images_per_s"], self.bpi)
                self.add_cpu(name, cpu, int(images))
        self.m[f"pipe_threads{self.cores}"] = Measurement(
            f"pipe_threads{self.cores}",
            "img/s",
            list(self.m["pipe_tfrecord"].samples),
            self.bpi,
            {"same_as": "pipe_tfrecord"},
        )

    def bench_memory(self) -> None:
        c = self.config
        reps = 1 if c.quick else min(c.repeats, 2)
        for r in range(reps):
            self.log(f"pipeline memory (subprocess), run {r + 1}/{reps}")
            out = json_child([sys.executable, "-m", "helpers.bench", "_memory", self.shards_dir])
            self.add("memory_growth", "MB", out["growth_mb"])
            self.measurement("memory_growth", "MB").extra.setdefault("runs", []).append(out)
        self.extra["memory_reference"] = reference_memory(
            self.record_bytes, images_in_flight=self.cores
        )

    def bench_train(self) -> None:
        c = self.config
        self.log(
            f"input wait: MobileNet alpha={c.train_alpha} {c.train_size}px, "
            f"{c.train_windows} x {c.train_steps} steps (subprocess)"
        )
        cmd = [
            sys.executable,
            "-m",
            "helpers.bench",
            "_train",
            self.shards_dir,
            str(c.train_steps),
            str(c.train_windows),
            str(c.train_alpha),
            str(c.train_size),
        ]
        out = json_child(cmd, timeout=900)
        for share in out["shares"]:
            self.add("input_wait_share", "share", share)
        self.extra["train"] = out

    # -- figures -----------------------------------------------------------

    def figures(self) -> list[Figure]:
        """Every figure against its same-run baseline, with the run's notes attached."""
        out = [
            *self._converter_figures(),
            *self._pipeline_figures(),
            *self._probe_figures(),
            *growth_figures(self),
        ]
        for f in out:
            if f.id in self.notes:
                f.note = (f.note + "; " if f.note else "") + self.notes[f.id]
        return out

    def _converter_figures(self) -> list[Figure]:
        m = self.m.get
        cores = self.cores
        out = [
            make_figure(
                "convert_steady_warm",
                f"converter steady state, {cores} workers, warm cache",
                "plain-Python copy, 1 file/class",
                m(f"convert_w{cores}_steady"),
                m("copy_warm"),
                "dN/dT between the full set and a subset; the copy does not fsync, the "
                "converter fsyncs every shard",
            ),
        ]
        if "convert_steady_cold" in self.m:
            out.append(
                make_figure(
                    "convert_steady_cold",
                    f"converter steady state, {cores} workers, cold cache",
                    "plain-Python copy, cold cache",
                    m("convert_steady_cold"),
                    m("copy_cold"),
                    "page cache dropped before every run",
                )
            )
        out.append(
            make_figure(
                "convert_whole_run",
                f"converter whole run, {len(self.paths)} images, start-up included",
                "typical single-threaded converter script",
                m(f"convert_w{cores}_whole"),
                m("script_whole"),
                "both run as their own process (CLI)",
            )
        )
        return out

    def _pipeline_figures(self) -> list[Figure]:
        m = self.m.get
        return [
            make_figure(
                "pipeline_vs_ceiling",
                "TFRecord pipeline (decode + resize 224, batch, prefetch)",
                "same decode + resize on in-memory bytes",
                m("pipe_tfrecord"),
                m("pipe_ceiling"),
            ),
            make_figure(
                "pipeline_vs_per_file_slow",
                f"TFRecord pipeline, {OPEN_DELAY_S * 1e3:g} ms per file open (simulated)",
                "one file per image, same simulated storage",
                m("pipe_tfrecord_slow"),
                m("pipe_per_file_slow"),
            ),
            make_figure(
                "pipeline_vs_generator",
                "TFRecord pipeline",
                "Python generator + PIL decode",
                m("pipe_tfrecord"),
                m("pipe_generator"),
            ),
        ]

    def _probe_figures(self) -> list[Figure]:
        out = []
        mem = self.m.get("memory_growth")
        ref = self.extra.get("memory_reference")
        if mem is not None and ref is not None:
            baseline = Measurement("memory_reference", "MB", [ref["total_mb"]])
            out.append(
                make_figure(
                    "pipeline_memory",
                    "pipeline peak memory, default knobs (RSS growth)",
                    "shuffle buffer of records + batches in flight",
                    mem,
                    baseline,
                )
            )
        share = self.m.get("input_wait_share")
        if share is not None:
            out.append(
                make_figure(
                    "input_wait_share",
                    "input-wait share, lesson 06 MobileNet training",
                    "--",
                    share,
                    None,
                    value=share.median,
                )
            )
        return out

    def sweep(self) -> dict[str, list[dict[str, Any]]]:
        convert, read = [], []
        for w in range(1, self.cores + 1):
            for kind, name, rows in (
                ("whole", f"convert_w{w}_whole", convert),
                ("read", f"pipe_threads{w}", read),
            ):
                meas = self.m.get(name)
                if meas is None:
                    continue
                row = {"workers": w, "images_per_s": meas.median, "mb_per_s": meas.mb_per_s}
                if kind == "whole":
                    steady = self.m.get(f"convert_w{w}_steady")
                    row["steady_images_per_s"] = steady.median if steady else None
                    row["steady_mb_per_s"] = steady.mb_per_s if steady else None
                rows.append(row)
        return {"convert": convert, "read": read}
