"""The output folder: checks before anything is read, preparing it, and cleaning up.

An output folder that holds a finished conversion (``manifest.json``) is refused
unless ``overwrite``; one left by an interrupted run with the same plan is
resumed (:mod:`.resume`); with ``overwrite`` the old manifest, class counts, shards,
indexes and label map are removed -- after the new input was scanned successfully -- so old
and new shards are never mixed. Stale temporary files are always removed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Callable

from helpers.convert.planning import Plan
from helpers.convert.resume import JOURNAL_NAME, Journal
from helpers.convert.settings import LABELS_NAME, ConvertError, display_name
from helpers.convert.shards import ShardResult
from helpers.manifest import CLASS_COUNTS_NAME, MANIFEST_NAME
from helpers.records import INDEX_SUFFIX, index_name, is_shard_name

__all__ = [
    "check_paths",
    "cleanup",
    "describe_write_error",
    "existing_outputs",
    "prepare_output",
    "refuse_existing",
]

# .<name>.tmp-<pid> (older runs) and .<name>.tmp-<pid>-<random> (helpers.util.atomic_open)
_TMP_RE = re.compile(r"^\..+\.tmp-\d+(-[0-9a-f]+)?$")


def existing_outputs(output: str) -> list[str]:
    """Names in ``output`` a conversion would clash with (shards, indexes, manifest, counts, labels)."""
    try:
        names = os.listdir(output)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(
        n
        for n in names
        if n in (MANIFEST_NAME, CLASS_COUNTS_NAME, LABELS_NAME)
        or is_shard_name(n)
        or (n.endswith(INDEX_SUFFIX) and not n.startswith("."))
    )


def _is_inside(child: str, parent: str) -> bool:
    child, parent = os.path.realpath(child), os.path.realpath(parent)
    return child == parent or child.startswith(parent.rstrip(os.sep) + os.sep)


def check_paths(dataset: str, output: str) -> None:
    """Refuse a missing dataset folder and an output path that cannot be used, before scanning."""
    if not os.path.exists(dataset):
        raise ConvertError(
            f"dataset path {display_name(dataset)!r} does not exist; pass --dataset-path DIR "
            "with one sub-folder of images per class"
        )
    if not os.path.isdir(dataset):
        raise ConvertError(
            f"dataset path {display_name(dataset)!r} is not a folder; pass the folder that "
            "holds one sub-folder per class"
        )
    if _is_inside(output, dataset):
        raise ConvertError(
            f"output path {display_name(output)!r} is inside the dataset path "
            f"{display_name(dataset)!r}; choose an output folder outside it"
        )
    if os.path.exists(output) and not os.path.isdir(output):
        raise ConvertError(f"output path {display_name(output)!r} exists and is not a folder")
    ancestor = os.path.abspath(output)
    while not os.path.exists(ancestor) and os.path.dirname(ancestor) != ancestor:
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        raise ConvertError(
            f"cannot create output folder {display_name(output)!r}: {display_name(ancestor)!r} "
            "is a file; choose another --output-path"
        )
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ConvertError(
            f"cannot write to {display_name(ancestor)!r} (permission denied); choose an "
            "--output-path you can write to"
        )


def refuse_existing(output: str, overwrite: bool) -> None:
    """Refuse a finished conversion, or foreign shards without a journal, unless ``overwrite``."""
    clash = existing_outputs(output)
    if overwrite or not clash:
        return
    if MANIFEST_NAME not in clash and os.path.exists(os.path.join(output, JOURNAL_NAME)):
        return  # an interrupted run of ours: prepare_output decides whether to resume
    shown = ", ".join(clash[:3]) + (", ..." if len(clash) > 3 else "")
    if MANIFEST_NAME in clash:
        why = " (a finished conversion)"
    else:
        why = " (no manifest and no resume journal: written by another tool or run?)"
    raise ConvertError(
        f"output folder {display_name(output)!r} already holds {shown}{why}; pass "
        "--overwrite to replace them, or choose another --output-path"
    )


def _remove_stale_temps(output: str) -> int:
    removed = 0
    for name in os.listdir(output):
        if _TMP_RE.match(name):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(output, name))
                removed += 1
    return removed


def prepare_output(
    output: str, plan: Plan, overwrite: bool, log: Callable[[str], None]
) -> tuple[bool, dict[int, ShardResult]]:
    """Create or clear the output folder; find the shards an interrupted run completed.

    Returns:
      ``(created, kept)``: whether this call created the folder, and the completed
      shards to keep, by task index.

    Raises:
      ConvertError: an interrupted run's journal with another plan (without ``overwrite``).
    """
    created = not os.path.isdir(output)
    if created:
        os.makedirs(output)
    stale = _remove_stale_temps(output)
    if stale:
        log(f"removed {stale} temporary file(s) left by an interrupted run")
    journal = Journal(output)
    kept: dict[int, ShardResult] = {}
    if journal.exists() and not overwrite:
        fingerprint, _ = journal.read()
        if fingerprint != plan.fingerprint:
            raise ConvertError(
                f"output folder {display_name(output)!r} holds an interrupted conversion of "
                f"other input files or settings ({journal.difference(plan)}); rerun with the "
                "same files and options to resume it, or pass --overwrite to start again"
            )
        kept = journal.keep_completed(plan)
    keep = {r.name for r in kept.values()} | {r.index_name for r in kept.values()}
    for name in [MANIFEST_NAME, *existing_outputs(output)]:
        if name not in keep:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(output, name))
    journal.start(plan, kept)
    return created, kept


def describe_write_error(err: OSError, output: str) -> str:
    """One line naming the file that could not be written and what to do."""
    where = display_name(err.filename) if isinstance(err.filename, str) else display_name(output)
    if err.errno == errno.ENOSPC:
        what = (
            "no space left on the device (ENOSPC); free some space and rerun the same "
            "command to resume, or choose another --output-path"
        )
    elif err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        what = f"{err.strerror}; choose an --output-path you can write to"
    else:
        what = f"{err.strerror or err}"
    return f"cannot write {where}: {what}"


def cleanup(output: str, plan: Plan | None, created: bool, completed: int) -> None:
    """After an error or interrupt: remove temporary files, and everything if nothing completed.

    Completed shards (listed in the journal) stay, so rerunning the same command
    resumes; with none completed the journal, label map and a folder this run
    created are removed too.
    """
    if not os.path.isdir(output):
        return
    _remove_stale_temps(output)
    if completed == 0 and plan is not None:
        for name in [
            JOURNAL_NAME,
            LABELS_NAME,
            CLASS_COUNTS_NAME,
            MANIFEST_NAME,
            *plan.shard_names,
        ]:
            for target in {name, index_name(name)}:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(output, target))
        if created:
            with contextlib.suppress(OSError):
                os.rmdir(output)  # only succeeds when empty
