"""What ``make_dataset(skip_corrupt=True)`` delivered per shard, against the manifest.

``ignore_errors`` silently drops the rest of a file after its first bad
record; :class:`CorruptionReport` says exactly how many records were lost.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

import numpy as np
import tensorflow as tf

logger = logging.getLogger(__name__)


@dataclass
class CorruptionReport:
    """What ``make_dataset(skip_corrupt=True)`` delivered per shard vs the manifest.

    TF's ``ignore_errors`` drops the rest of a file after its first bad record,
    silently; the pipeline counts the images each shard actually delivered and
    records the count here when the shard is finished. ``lost`` is exact for
    shards whose record count the manifest gives; without a manifest the
    expected count is unknown (run ``python -m helpers.records verify``).

    Attributes:
      expected: shard path -> manifest record count (``None`` if unknown).
      delivered: shard path -> images delivered on its last complete pass.
      passes: shard path -> number of complete passes seen.
    """

    expected: dict[str, int | None] = field(default_factory=dict)
    delivered: dict[str, int] = field(default_factory=dict)
    passes: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def _record(self, shard: tf.Tensor, count: tf.Tensor) -> np.int64:
        name = shard.numpy().decode("utf-8", "replace")
        n = int(count.numpy())
        with self._lock:
            self.delivered[name] = n
            self.passes[name] = self.passes.get(name, 0) + 1
            expected = self.expected.get(name)
        if expected is not None and n < expected:
            logger.warning(
                "%s: delivered %d of %d records; %d lost (a corrupt or truncated record ends "
                "the file for ignore_errors)",
                name,
                n,
                expected,
                expected - n,
            )
        elif expected is None:
            logger.info("%s: delivered %d records (no manifest count to compare)", name, n)
        return np.int64(n)

    @property
    def complete(self) -> bool:
        """True once every shard has been read to its end at least once."""
        return bool(self.expected) and all(f in self.delivered for f in self.expected)

    def lost_by_shard(self) -> dict[str, int | None]:
        """Shard -> records lost (``None``: count unknown or shard not finished yet)."""
        out: dict[str, int | None] = {}
        for f, expected in self.expected.items():
            got = self.delivered.get(f)
            out[f] = None if expected is None or got is None else max(expected - got, 0)
        return out

    @property
    def lost(self) -> int:
        """Records lost in finished shards with a known manifest count."""
        return int(sum(v for v in self.lost_by_shard().values() if v))

    @property
    def delivered_total(self) -> int:
        """Images delivered by finished shards on their last pass."""
        return int(sum(self.delivered.values()))

    def summary(self) -> str:
        """One line per damaged or unverifiable shard, plus a total."""
        lines = []
        for f, lost in self.lost_by_shard().items():
            if f not in self.delivered:
                lines.append(f"{f}: not finished")
            elif lost is None:
                lines.append(f"{f}: {self.delivered[f]} delivered, expected count unknown")
            elif lost:
                lines.append(
                    f"{f}: {self.delivered[f]} of {self.expected[f]} delivered, {lost} lost"
                )
        lines.append(
            f"total: {self.delivered_total} delivered, {self.lost} lost "
            f"({len(self.delivered)}/{len(self.expected)} shards finished)"
        )
        return "\n".join(lines)
