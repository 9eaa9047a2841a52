"""``make_dataset``'s knobs, in three named groups: reading, decoding, feeding.

Every knob is still a keyword of :func:`helpers.pipeline.make_dataset`
(``make_dataset(src, 32, 224, cycle_length=8, cache=True)``); the groups say
which stage of the pipeline a knob acts on, and a :class:`DatasetOptions`
can be built once and reused (``make_dataset(src, options=opts)``)::

    files -> interleave [ReadOptions] -> map [DecodeOptions]
          -> cache -> shuffle -> repeat -> augment -> batch -> prefetch [FeedOptions]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from helpers.pipeline.corruption import CorruptionReport
from helpers.pipeline.preprocess import AUTOTUNE
from helpers.pipeline.storage import SimulatedSlowStorage

__all__ = ["DatasetOptions", "DecodeOptions", "FeedOptions", "ReadOptions"]


@dataclass(frozen=True)
class ReadOptions:
    """Which shards are open at once and how they are read (the ``interleave``).

    Attributes:
      cycle_length: shards read concurrently; ``None`` -> ``AUTOTUNE`` (= the
        number of CPU cores; raise it on slow storage). 1 = one file at a time.
      block_length: consecutive records taken from a shard before moving on.
      interleave_parallel_calls: threads reading shards; ``None`` = sequential.
        (With ``cycle_length=1`` and parallel calls TF still opens the next
        file early: pass ``None`` for strictly one file at a time.)
      read_buffer_bytes: ``TFRecordDataset`` read buffer per open shard
        (``None``: TF's default, 256 KiB locally; 1-100 MB helps on remote storage).
      compression: ``None`` / ``"GZIP"`` / ``"ZLIB"``; default from the manifest.
      storage: a :class:`~helpers.pipeline.SimulatedSlowStorage` delaying each
        shard open (a simulation for lesson 05).
    """

    cycle_length: int | None = None
    block_length: int = 1
    interleave_parallel_calls: int | None = AUTOTUNE
    read_buffer_bytes: int | None = None
    compression: str | None = None
    storage: SimulatedSlowStorage | None = None


@dataclass(frozen=True)
class DecodeOptions:
    """How a record becomes ``(image, label)`` (the ``map``), and what happens to bad ones.

    Attributes:
      num_classes: one-hot depth; default from the manifest's classes.
      one_hot: one-hot float32 labels (categorical_crossentropy); else int32.
      num_parallel_calls: parallel decode calls; ``None`` = sequential map.
      keys: feature-name overrides for :func:`~helpers.pipeline.image_feature_spec`.
      resize_method: ``tf.image.resize`` method.
      check: run :func:`~helpers.pipeline.check_schema` on the first record
        before building.
      skip_corrupt: skip unreadable / undecodable records instead of failing.
        ``ignore_errors`` ends a shard at its first bad record, so each shard's
        delivered count goes to ``corruption_report`` (and a warning is logged
        for every shard short of its manifest count).
      corruption_report: a :class:`~helpers.pipeline.CorruptionReport` to fill
        (with ``skip_corrupt``); one is made (logging only) when omitted.
    """

    num_classes: int | None = None
    one_hot: bool = True
    num_parallel_calls: int | None = AUTOTUNE
    keys: Mapping[str, str] | None = None
    resize_method: str = "bilinear"
    check: bool = True
    skip_corrupt: bool = False
    corruption_report: CorruptionReport | None = None


@dataclass(frozen=True)
class FeedOptions:
    """What happens to decoded elements: cache, shuffle, repeat, augment, batch, prefetch.

    Attributes:
      training: shuffle files and records (and allow augmentation).
      cache: False, True (memory: decoded float32 images, s*s*3*4 bytes each)
        or a file path prefix (iterate a full epoch once to complete it).
      shuffle_buffer: records in the shuffle buffer (0 = no record shuffle);
        serialized records without ``cache``, decoded images with it.
      augment: random flip / crop / brightness (training only; after cache).
      drop_remainder: drop the last short batch (static batch shape).
      prefetch: batches to prefetch (``AUTOTUNE``); ``None``/0 = no prefetch.
      repeat: True = forever, an int = that many epochs, False = once.
      deterministic: keep a reproducible element order (with ``seed``); False
        lets a fast shard overtake a slow one (faster).
      seed: seed for file order, shuffle and augmentation.
    """

    training: bool = True
    cache: bool | str = False
    shuffle_buffer: int = 1000
    augment: bool = False
    drop_remainder: bool = True
    prefetch: int | None = AUTOTUNE
    repeat: bool | int = False
    deterministic: bool = False
    seed: int | None = None

    @property
    def shuffles(self) -> bool:
        """True when records are shuffled (training with a non-empty buffer)."""
        return bool(self.training and self.shuffle_buffer and self.shuffle_buffer > 0)


_GROUPS = {"read": ReadOptions, "decode": DecodeOptions, "feed": FeedOptions}
_GROUP_OF = {f.name: group for group, cls in _GROUPS.items() for f in dataclasses.fields(cls)}


@dataclass(frozen=True)
class DatasetOptions:
    """All of ``make_dataset``'s knobs: ``read``, ``decode`` and ``feed`` groups."""

    read: ReadOptions = field(default_factory=ReadOptions)
    decode: DecodeOptions = field(default_factory=DecodeOptions)
    feed: FeedOptions = field(default_factory=FeedOptions)

    @classmethod
    def knob_names(cls) -> list[str]:
        """Every knob, by its ``make_dataset`` keyword."""
        return sorted(_GROUP_OF)

    def with_knobs(self, **knobs: Any) -> DatasetOptions:
        """A copy with some knobs changed, given by their flat ``make_dataset`` names.

        Raises:
          TypeError: a name is not a knob (the message lists the valid ones).
        """
        changes: dict[str, dict[str, Any]] = {group: {} for group in _GROUPS}
        for name, value in knobs.items():
            group = _GROUP_OF.get(name)
            if group is None:
                raise TypeError(
                    f"make_dataset() got an unexpected keyword argument {name!r}; "
                    f"the knobs are: {', '.join(self.knob_names())}"
                )
            changes[group][name] = value
        return DatasetOptions(
            **{
                group: dataclasses.replace(getattr(self, group), **changes[group])
                for group in _GROUPS
            }
        )
