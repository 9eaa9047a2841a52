"""A SIMULATED slow storage for lesson 05: it sleeps, it does no I/O.

Every reader in the package accepts a ``storage`` and delays each file open
(and each MB) with TF's own sleep op, so parallel readers overlap their waits
as they would on a network file system.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

logger = logging.getLogger(__name__)


def _sleep_transformation(micros: tf.Tensor) -> Callable[[tf.data.Dataset], tf.data.Dataset]:
    """A dataset transformation that sleeps ``micros`` before each element.

    Uses TF's own ``SleepDataset`` op (a C++ sleep on the thread that pulls the
    element), so parallel ``interleave`` workers overlap their delays. A
    ``tf.py_function`` that calls ``time.sleep`` does not: measured on TF 2.21,
    such sleeps never overlapped more than the number of CPU cores, whatever
    ``num_parallel_calls`` said. The py_function version is only a fallback.
    """
    try:
        from tensorflow.python.data.experimental.ops import testing as tf_data_testing

        return tf_data_testing.sleep(micros)
    except (ImportError, AttributeError):  # pragma: no cover - future TF without the op
        logger.warning("SleepDataset unavailable: simulated delays will not overlap in parallel")

        def apply(dataset: tf.data.Dataset) -> tf.data.Dataset:
            def sleep_then(*element: Any) -> Any:
                def _sleep(us: Any) -> np.int64:
                    time.sleep(float(us) / 1e6)
                    return np.int64(0)

                done = tf.py_function(_sleep, [micros], tf.int64)
                with tf.control_dependencies([done]):
                    out = tuple(tf.identity(e) for e in element)
                return out if len(out) > 1 else out[0]

            return dataset.map(sleep_then)

        return apply


@dataclass(frozen=True)
class SimulatedSlowStorage:
    """A SIMULATION of slow storage (network file system, HDD): it sleeps, it does no I/O.

    Every file read costs ``delay_per_open_s`` (the latency of opening a file,
    paid once per image for one-file-per-image reading, once per shard for
    TFRecords) plus ``delay_per_mb_s`` for each MB (10**6 bytes) of the file,
    charged when the file is opened, as if it were fetched whole. Each reader
    is delayed independently: aggregate bandwidth is not capped, so parallel
    readers (``interleave`` workers, parallel reads) overlap their delays,
    which is what makes ``cycle_length`` matter on such storage.

    Note ``cycle_length=AUTOTUNE`` resolves to the number of CPU cores: a sleep
    (like real I/O latency) is not CPU work, so on slow storage set
    ``cycle_length`` / ``interleave_parallel_calls`` explicitly (8-16).

    Attributes:
      delay_per_open_s: seconds per file open.
      delay_per_mb_s: seconds per MB read.
    """

    delay_per_open_s: float = 0.0
    delay_per_mb_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("delay_per_open_s", "delay_per_mb_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0 seconds, got {value!r}")

    def __str__(self) -> str:
        return (
            f"SIMULATED slow storage: {self.delay_per_open_s * 1e3:g} ms per file open + "
            f"{self.delay_per_mb_s * 1e3:g} ms per MB (sleeps, not real I/O)"
        )

    def delay_s(self, nbytes: int) -> float:
        """Simulated seconds to open and read a file of ``nbytes`` bytes."""
        return self.delay_per_open_s + self.delay_per_mb_s * nbytes / 1e6

    def _delay_us(self, nbytes: tf.Tensor) -> tf.Tensor:
        per_byte_us = self.delay_per_mb_s  # seconds per 1e6 bytes == microseconds per byte
        micros = self.delay_per_open_s * 1e6 + tf.cast(nbytes, tf.float64) * per_byte_us
        return tf.cast(tf.round(micros), tf.int64)

    def _delayed(self, value: Any, nbytes: tf.Tensor) -> tf.data.Dataset:
        # take(1): SleepDataset also sleeps on the call that finds the end of its input.
        return (
            tf.data.Dataset.from_tensors(value)
            .apply(_sleep_transformation(self._delay_us(nbytes)))
            .take(1)
        )

    def tfrecord_dataset(
        self,
        filename: tf.Tensor,
        nbytes: tf.Tensor,
        compression: str | None = None,
        buffer_size: int | None = None,
    ) -> tf.data.Dataset:
        """A ``TFRecordDataset`` for one shard whose open costs the simulated delay.

        Call it inside ``interleave`` so parallel cycle elements overlap delays.

        Args:
          filename: scalar string tensor.
          nbytes: scalar int64 tensor, the file size.
          compression: ``None``, ``"GZIP"`` or ``"ZLIB"``.
          buffer_size: ``TFRecordDataset`` read buffer in bytes (``None``: TF's default).

        Returns:
          The shard's records, after one simulated open + transfer delay.
        """
        compression_type = compression or ""

        def open_shard(name: tf.Tensor) -> tf.data.Dataset:
            return tf.data.TFRecordDataset(
                name, compression_type=compression_type, buffer_size=buffer_size
            )

        return self._delayed(filename, nbytes).flat_map(open_shard)

    def read_file_dataset(self, path: tf.Tensor, nbytes: tf.Tensor) -> tf.data.Dataset:
        """A one-element dataset with ``tf.io.read_file(path)``, after the simulated delay.

        Args:
          path: scalar string tensor.
          nbytes: scalar int64 tensor, the file size.

        Returns:
          A dataset of one scalar string (the file contents).
        """
        return self._delayed(path, nbytes).map(tf.io.read_file)

    def read_bytes(self, path: str | os.PathLike) -> bytes:
        """Python read with the simulated delay (``time.sleep``), for generators.

        Args:
          path: a file.

        Returns:
          The file's bytes.
        """
        with open(path, "rb") as f:
            data = f.read()
        time.sleep(self.delay_s(len(data)))
        return data


def slow_open(delay_per_open_s: float = 0.01, delay_per_mb_s: float = 0.01) -> SimulatedSlowStorage:
    """A :class:`SimulatedSlowStorage` (default: 10 ms per open, 10 ms per MB ~ 100 MB/s).

    Pass it as ``storage=`` to :func:`make_dataset`, :func:`per_file_dataset` or
    :func:`generator_dataset`. It is a simulation (sleeps): label charts with
    ``str(storage)``.

    Args:
      delay_per_open_s: seconds per file open.
      delay_per_mb_s: seconds per MB (10**6 bytes) read.

    Returns:
      The storage simulation.
    """
    return SimulatedSlowStorage(float(delay_per_open_s), float(delay_per_mb_s))
