"""The benchmark's fixed sizes and the targets of each figure."""

from __future__ import annotations

GEN_VERSION = 2  # bump when synthetic_jpeg changes, so cached image sets are regenerated
DEFAULT_IMAGES = 3000
DEFAULT_REPEATS = 3
DEFAULT_CLASSES = 10
DEFAULT_WIDTH = 500
DEFAULT_HEIGHT = 375
SIZE_PER_RECORD = (
    16 * 1024 * 1024
)  # a typical converter script's example (--size_per_record=16777216)
SCALE_IMAGES = 5000  # N of the scale figures (N and 10*N small images)
BATCH_SIZE = 32
IMAGE_SIZE = 224
OPEN_DELAY_S = 0.010
MB = 1e6

# Each figure's target: (operator, threshold); "--" is reported without a target.
TARGETS: dict[str, tuple[str, float]] = {
    "convert_steady_warm": (">=", 0.5),
    "convert_steady_cold": (">=", 0.5),
    "convert_whole_run": (">=", 3.0),
    "pipeline_vs_ceiling": (">=", 0.9),
    "pipeline_vs_per_file_slow": (">=", 5.0),
    "pipeline_vs_generator": (">=", 3.0),
    "pipeline_memory": ("<=", 2.0),
    "input_wait_share": ("<", 0.05),
    "scale_time_per_image": ("<=", 1.2),
    "scale_peak_rss": ("<=", 1.2),
    "scale_manifest_bytes": ("<=", 1.1),
    "manifest_size_imagenet": ("<", 1.0),
    "scale_startup": ("<=", 1.2),
    "resume_rerun": ("<=", 0.6),
    "beam_vs_local": ("--", float("nan")),
}

#: Figures whose target is an amount in a unit, not a ratio: id -> the unit of value and threshold.
ABSOLUTE_TARGETS: dict[str, str] = {"manifest_size_imagenet": "MB"}
