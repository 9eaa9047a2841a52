"""Per-shard class counts: the ``class_counts.json`` file beside ``manifest.json``.

From manifest format version 3 the converter writes each shard's records per class
here instead of inline in the manifest: with ImageNet's 1,000 classes a shard of
about 1,250 records holds about 700 of them, so 1,024 inline ``{class: count}``
dicts made the manifest tens of MB, parsed by every ``make_dataset`` call. The
manifest keeps the dataset-wide totals and names this file with its sha256
(:mod:`helpers.manifest`), and only code that asks for per-shard counts reads it.

The layout is dense: the classes once, then per shard file name one list of counts
aligned with ``classes`` (label order), written one shard per line with no spaces::

    {
      "format_version": 3,
      "classes": ["n01440764", "n01443537", ...],
      "shards": {
        "train-00000-of-01024.tfrecord": [2,0,1,...],
        ...
      }
    }

Dense lists are smaller than any sparse form as soon as a shard holds more than
about a third of the classes (a sparse entry must also spell the class or label),
which the converter's mixed record order makes the normal case; they read straight
into a shards x classes matrix, and the file stays plain JSON. Nothing here imports
TensorFlow.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

__all__ = ["CLASS_COUNTS_NAME", "CLASS_COUNTS_VERSION", "ShardClassCounts"]

CLASS_COUNTS_NAME = "class_counts.json"
#: the manifest format version that introduced this file (it is stored in the file)
CLASS_COUNTS_VERSION = 3


@dataclass(frozen=True, eq=False)
class ShardClassCounts:
    """Records per class of every shard, dense: ``rows[file][label]``.

    Attributes:
      classes: class names; a position is a label.
      rows: shard file name -> one count per class, in shard order.
    """

    classes: tuple[str, ...]
    rows: dict[str, tuple[int, ...]]

    @classmethod
    def from_shards(
        cls, classes: Sequence[str], per_shard: Mapping[str, Mapping[str, int]]
    ) -> ShardClassCounts:
        """From ``{shard file: {class: count}}`` (absent classes count 0).

        Raises:
          ValueError: a count names a class that is not in ``classes``.
        """
        position = {name: i for i, name in enumerate(classes)}
        rows = {}
        for file, counts in per_shard.items():
            row = [0] * len(position)
            for name, n in counts.items():
                if name not in position:
                    raise ValueError(f"{file}: class {name!r} is not one of the {len(row)} classes")
                row[position[name]] = int(n)
            rows[file] = tuple(row)
        return cls(tuple(classes), rows)

    def of(self, file: str) -> dict[str, int]:
        """One shard's ``{class: count}``, in label order, classes without records left out."""
        return {name: n for name, n in zip(self.classes, self.rows[file], strict=True) if n}

    def totals(self) -> dict[str, int]:
        """Records per class over all shards, every class (zeros included)."""
        return dict(self._totals)

    @cached_property
    def _totals(self) -> dict[str, int]:
        sums = [sum(column) for column in zip(*self.rows.values(), strict=True)]
        return dict(zip(self.classes, sums or [0] * len(self.classes), strict=True))

    def mismatch(
        self, classes: Sequence[str], records: Mapping[str, int], totals: Mapping[str, int]
    ) -> str | None:
        """How these counts disagree with a manifest's classes, shard records and totals, or None."""
        if list(self.classes) != list(classes):
            return f"its {len(self.classes)} classes differ from the manifest's {len(classes)}"
        if set(self.rows) != set(records):
            odd = sorted(set(self.rows) ^ set(records))
            return f"its shards differ from the manifest's (e.g. {odd[0]})"
        for file, n in records.items():
            if sum(self.rows[file]) != n:
                return (
                    f"{file} has {sum(self.rows[file])} records counted by class, "
                    f"the manifest says {n}"
                )
        if self._totals != dict(totals):
            return "its totals differ from the manifest's class_counts"
        return None

    @cached_property
    def data(self) -> bytes:
        """The file's exact bytes (UTF-8, fixed layout: reproducible)."""
        head = [
            "{",
            f'  "format_version": {CLASS_COUNTS_VERSION},',
            f'  "classes": {json.dumps(list(self.classes), ensure_ascii=False)},',
        ]
        lines = [
            f"    {json.dumps(file, ensure_ascii=False)}: [{','.join(map(str, row))}]"
            for file, row in self.rows.items()
        ]
        body = ['  "shards": {', ",\n".join(lines), "  }"] if lines else ['  "shards": {}']
        return ("\n".join([*head, *body, "}"]) + "\n").encode("utf-8")

    @cached_property
    def sha256(self) -> str:
        """Hex sha256 of :attr:`data` (what the manifest records)."""
        return hashlib.sha256(self.data).hexdigest()

    @classmethod
    def parse(cls, data: bytes) -> ShardClassCounts:
        """Read the file's contents back (:attr:`data` stays these exact bytes).

        Raises:
          ValueError: not JSON, or not this layout (the message says what is wrong).
        """
        try:
            parsed = json.loads(data)
        except ValueError as err:  # JSONDecodeError, UnicodeDecodeError
            raise ValueError(f"not valid JSON ({err})") from None
        if not isinstance(parsed, dict) or parsed.get("format_version") != CLASS_COUNTS_VERSION:
            raise ValueError(f"expected a JSON object with format_version {CLASS_COUNTS_VERSION}")
        classes, shards = parsed.get("classes"), parsed.get("shards")
        if not isinstance(classes, list) or not all(isinstance(c, str) for c in classes):
            raise ValueError("expected a 'classes' list of names")
        if not isinstance(shards, dict):
            raise ValueError("expected a 'shards' object (shard file -> counts)")
        rows = {}
        for file, row in shards.items():
            if not _is_count_list(row, len(classes)):
                raise ValueError(
                    f"shard {file!r}: expected {len(classes)} non-negative integer counts "
                    "(one per class)"
                )
            rows[file] = tuple(row)
        counts = cls(tuple(classes), rows)
        counts.__dict__["data"] = bytes(data)  # the cached_property: the digest is the file's
        return counts


def _is_count_list(row: Any, length: int) -> bool:
    return (
        isinstance(row, list)
        and len(row) == length
        and all(type(n) is int and n >= 0 for n in row)  # bool is an int subclass: refused
    )
