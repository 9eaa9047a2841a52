"""Phase 3, write: one shard and its offset index, each complete or absent.

A shard is written under a unique temporary name in the output folder, fsync'd
and renamed into place only when complete (:func:`helpers.util.atomic_open`), so
a file under a final shard name is never partial, not even after SIGKILL. Its
offset index (one ``offset length`` line per record, the layout of NVIDIA DALI's
``tfrecord2idx`` and of the ``tfrecord`` package's ``create_index``) is built
while the records are written and lands, the same way, just before the shard.
Records are serialized with ``deterministic=True``: with the planned order this
makes a shard byte-identical whichever process or engine writes it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

from helpers.convert.encode import encode_file, load_features, record_bytes
from helpers.convert.planning import ShardTask
from helpers.convert.probe import Skip
from helpers.convert.readahead import read_ahead
from helpers.convert.settings import display_name
from helpers.records import frame_record, index_name
from helpers.util import atomic_open, atomic_write

__all__ = ["ShardResult", "write_shard"]


@dataclass
class ShardResult:
    """What writing one shard produced: its manifest facts and the files it left out."""

    index: int
    name: str
    records: int = 0
    bytes: int = 0
    sha256: str = ""
    class_counts: dict[str, int] = field(default_factory=dict)
    skipped: list[dict[str, str]] = field(default_factory=list)
    converted: list[dict[str, str]] = field(default_factory=list)
    index_name: str = ""
    index_sha256: str = ""


def write_shard(task: ShardTask, output_dir: str | os.PathLike) -> ShardResult:
    """Write one planned shard and its index into ``output_dir`` (phase 3, one task).

    Safe to run in any process, in any order, more than once: the same task always
    gives the same bytes, and readers never see a partial file.

    Args:
      task: one of :attr:`helpers.convert.Plan.tasks`.
      output_dir: the existing output folder.

    Returns:
      The :class:`ShardResult` that :func:`helpers.convert.write_manifest` needs.

    Raises:
      OSError: writing failed (e.g. ENOSPC); no file of this shard is left behind.
    """
    features = load_features()
    output = os.fspath(output_dir)
    result = _new_result(task)
    digest, lines, offset = hashlib.sha256(), [], 0
    index_path = os.path.join(output, result.index_name)
    try:
        with atomic_open(os.path.join(output, task.name), "wb") as f:
            for item in read_ahead(task.files):
                try:
                    payload, found = encode_file(item.path, item.ext, task.max_pixels)
                except Skip as s:
                    result.skipped.append({"path": display_name(item.rel), "reason": str(s)})
                    continue
                if not found.copy:
                    result.converted.append(
                        {"path": display_name(item.rel), "from": found.note, "to": found.out_format}
                    )
                data = record_bytes(
                    features, payload, item, found.height, found.width, found.out_format
                )
                framed = frame_record(data)
                f.write(framed)
                digest.update(framed)
                lines.append(f"{offset} {len(framed)}\n")
                offset += len(framed)
                counts = result.class_counts
                counts[item.class_text] = counts.get(item.class_text, 0) + 1
            index_text = "".join(lines)
            atomic_write(index_path, index_text)
    except BaseException:
        _remove(index_path)
        raise
    result.records, result.bytes, result.sha256 = len(lines), offset, digest.hexdigest()
    result.index_sha256 = hashlib.sha256(index_text.encode()).hexdigest()
    order = {f.class_text: f.label for f in task.files}
    result.class_counts = dict(sorted(result.class_counts.items(), key=lambda kv: order[kv[0]]))
    return result


def _new_result(task: ShardTask) -> ShardResult:
    return ShardResult(task.index, task.name, index_name=index_name(task.name))


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
