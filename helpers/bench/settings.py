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
)  # the seed converter's example value (--size_per_record=16777216)
BATCH_SIZE = 32
IMAGE_SIZE = 224
OPEN_DELAY_S = 0.010
MB = 1e6

# Targets of issue 6: (figure id, operator, threshold).
TARGETS: dict[str, tuple[str, float]] = {
    "convert_steady_warm": (">=", 0.5),
    "convert_steady_cold": (">=", 0.5),
    "convert_whole_run": (">=", 3.0),
    "pipeline_vs_ceiling": (">=", 0.9),
    "pipeline_vs_per_file_slow": (">=", 5.0),
    "pipeline_vs_generator": (">=", 3.0),
    "pipeline_memory": ("<=", 2.0),
    "input_wait_share": ("<", 0.05),
}
