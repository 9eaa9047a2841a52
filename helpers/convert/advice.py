"""Shard sizing advice: the chosen shard count and size against the usual rules of thumb.

The rules (TensorFlow's performance guide and the TFRecord tools' advice): at
least 10 shards per host that reads them in parallel (so ``interleave`` and file
shuffling have files to mix), shards around 100 MB (large sequential reads, few
open files), and no shard below 64 MiB or above 1 GiB when the dataset is large
enough to allow it. Small datasets (under 10 x 64 MiB) cannot meet both the
count and the size rule; for them only the count matters, and only once ten
shards would still hold at least 1 MiB each.
"""

from __future__ import annotations

__all__ = ["MAX_SHARD", "MIN_SHARD", "MIN_SHARDS_PER_HOST", "TARGET_SHARD", "sizing_advice"]

MIN_SHARDS_PER_HOST = 10
MIN_SHARD = 64 * 2**20
MAX_SHARD = 2**30
TARGET_SHARD = 100 * 10**6


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB" if n < 1e9 else f"{n / 1e9:.2f} GB"


def sizing_advice(num_shards: int, total_bytes: int, hosts: int = 1) -> tuple[str, list[str]]:
    """One line describing the shards, and warnings when the size per shard is off.

    Args:
      num_shards: shards written.
      total_bytes: their total size.
      hosts: machines that will read them in parallel.

    Returns:
      ``(line, warnings)``; a warning says what ``--size-per-record`` to use instead.
    """
    average = total_bytes / max(1, num_shards)
    line = (
        f"shards: {num_shards} x {_mb(average)} on average (rules of thumb: >= "
        f"{MIN_SHARDS_PER_HOST} per reading host, ~100 MB each, 64 MiB-1 GiB)"
    )
    wanted = MIN_SHARDS_PER_HOST * hosts
    large_enough = total_bytes >= wanted * MIN_SHARD
    suggest = int(min(max(total_bytes / wanted, MIN_SHARD), TARGET_SHARD)) if large_enough else 0
    warnings = []
    if num_shards < wanted and total_bytes >= wanted * 2**20:  # 10 shards would be >= 1 MiB
        size = suggest or total_bytes // wanted
        warnings.append(
            f"only {num_shards} shard(s) for {hosts} reading host(s): fewer than {wanted}, so "
            f"file-level shuffling and parallel reads have little to work with; use "
            f"--size-per-record {size} (about {_mb(size)})"
        )
    elif average < MIN_SHARD and large_enough:
        warnings.append(
            f"{num_shards} shards of {_mb(average)}: below 64 MiB each, the per-file cost "
            f"(opens, metadata, small reads) dominates; use --size-per-record {suggest} "
            f"(about {_mb(suggest)})"
        )
    if average > MAX_SHARD:
        size = suggest or TARGET_SHARD
        warnings.append(
            f"shards of {_mb(average)}: above 1 GiB each, a single slow or failed read costs a "
            f"lot and shuffling gets coarse; use --size-per-record {size} (about {_mb(size)})"
        )
    return line, warnings
