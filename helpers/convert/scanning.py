"""Phase 1, scan: list the class folders (one ``os.scandir`` per folder, never glob) and
probe every candidate file's header, in worker processes when there are many.

The result is plain, picklable data (:class:`ScanResult` of :class:`FileRecord`), so
another engine can run :func:`scan` once and hand it to :func:`helpers.convert.plan`.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from typing import Any

from helpers.convert.pool import Runner
from helpers.convert.probe import IMAGE_EXTENSIONS, Ignore, Skip, probe
from helpers.convert.settings import (
    DEFAULT_MAX_PIXELS,
    ConvertError,
    display_name,
    is_utf8,
)
from helpers.util import progress_bar

__all__ = [
    "IMAGE_EXTENSIONS",
    "JUNK_DIRS",
    "FileRecord",
    "Listing",
    "ScanResult",
    "list_dataset",
    "listing_fingerprint",
    "probe_batch",
    "probe_files",
    "scan",
    "sort_outcomes",
]

# Names that are never classes even though they are folders (archive / NAS / Python junk).
JUNK_DIRS = frozenset({"__MACOSX", "__pycache__", "@eaDir", "lost+found"})


@dataclass(slots=True)
class _Entry:
    path: str  # absolute path (may hold surrogate-escaped bytes)
    rel: str  # "class/file" relative to the dataset root
    label: int
    ext: str  # lower-case extension, used only to tell "bad image" from "not an image"


@dataclass
class Listing:
    """The dataset folder as listed (nothing opened yet)."""

    classes: list[str] = field(default_factory=list)  # folder names, sorted by bytes
    entries: list[_Entry] = field(default_factory=list)
    ignored: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class FileRecord:
    """One usable image, as probed: the unit the plan orders and shards.

    Attributes:
      path: absolute path (may hold surrogate-escaped bytes of a non-UTF-8 name).
      rel: ``class/file`` relative to the dataset folder (``image/filename``).
      label: the class index.
      class_text: the class name as shown (``image/class/text``).
      ext: lower-case extension (only tells "bad image" from "not an image").
      size: bytes on disk when probed (the plan's shard sizes use it).
      mtime_ns: modification time when probed (only for the resume fingerprint).
    """

    path: str
    rel: str
    label: int
    class_text: str
    ext: str
    size: int
    mtime_ns: int = 0


@dataclass
class ScanResult:
    """Everything the scan found: classes, usable files, and what was skipped or ignored."""

    dataset_path: str
    classes: list[str]  # display names; label = index
    files: list[FileRecord]
    skipped: list[dict[str, str]]
    ignored: list[dict[str, str]]
    non_utf8_names: list[str]
    #: sha256 over the listing, every entry's size and mtime and ``max_pixels``: when it
    #: is unchanged, so are the probe outcomes (a resumed run reuses them, see .resume)
    listing_fingerprint: str = ""
    #: ``[entry index, "skip" | "ignore", reason]`` for every listed file the probe refused
    probe_outcomes: list[list[Any]] = field(default_factory=list)


def _sort_key(entry: os.DirEntry) -> bytes:
    return os.fsencode(entry.name)


def list_dataset(dataset: str) -> Listing:
    """List classes and candidate files (one ``os.scandir`` per folder, never glob)."""
    scan = Listing()
    with os.scandir(dataset) as it:
        top = sorted(it, key=_sort_key)
    for entry in top:
        rel = entry.name
        if entry.name.startswith("."):
            scan.ignored.append({"path": display_name(rel), "reason": "hidden"})
        elif entry.is_symlink() and entry.is_dir():
            scan.ignored.append(
                {"path": display_name(rel), "reason": "symlinked folder (not followed)"}
            )
        elif entry.is_dir(follow_symlinks=False):
            if entry.name in JUNK_DIRS:
                scan.ignored.append({"path": display_name(rel), "reason": "junk folder"})
            else:
                scan.classes.append(entry.name)
        else:
            scan.ignored.append(
                {"path": display_name(rel), "reason": "file outside a class folder"}
            )
    for label, cls in enumerate(scan.classes):
        folder = os.path.join(dataset, cls)
        try:
            with os.scandir(folder) as it:
                children = sorted(it, key=_sort_key)
        except OSError as err:
            raise ConvertError(
                f"cannot list class folder {display_name(folder)}: {err.strerror}; fix its "
                "permissions or move it out of the dataset folder"
            ) from None
        for entry in children:
            rel = f"{cls}/{entry.name}"
            shown = display_name(rel)
            if entry.name.startswith("."):
                scan.ignored.append({"path": shown, "reason": "hidden"})
                continue
            if entry.is_symlink():
                try:
                    st = os.stat(entry.path)
                except OSError as err:
                    scan.skipped.append(
                        {"path": shown, "reason": f"broken symlink ({err.strerror or err})"}
                    )
                    continue
                if stat.S_ISDIR(st.st_mode):
                    scan.ignored.append(
                        {"path": shown, "reason": "symlinked folder (not followed)"}
                    )
                    continue
                if not stat.S_ISREG(st.st_mode):
                    scan.ignored.append({"path": shown, "reason": "not a regular file"})
                    continue
            elif entry.is_dir(follow_symlinks=False):
                scan.ignored.append({"path": shown + "/", "reason": "nested folder (not searched)"})
                continue
            elif not entry.is_file(follow_symlinks=False):
                scan.ignored.append({"path": shown, "reason": "not a regular file"})
                continue
            ext = os.path.splitext(entry.name)[1].lower()
            scan.entries.append(_Entry(entry.path, rel, label, ext))
    return scan


def _probe_entry(entry: _Entry, max_pixels: int) -> tuple[str, Any, int, int]:
    """Probe one file on disk.

    Returns:
      ``(status, reason, size, mtime_ns)``: status ``"ok"`` (reason ``None``; the
      probe is repeated on the bytes actually written), ``"skip"`` or ``"ignore"``.
    """
    size = mtime = 0
    try:
        with open(entry.path, "rb") as f:
            st = os.fstat(f.fileno())
            size, mtime = st.st_size, st.st_mtime_ns
            probe(f, size, entry.ext, max_pixels)  # raises Skip / Ignore
            return "ok", None, size, mtime
    except Skip as s:
        return "skip", str(s), size, mtime
    except Ignore as s:
        return "ignore", str(s), size, mtime
    except OSError as err:
        return "skip", f"cannot read ({err.strerror or err})", size, mtime


def probe_batch(entries: list[_Entry], max_pixels: int) -> list[tuple[str, Any, int, int]]:
    """Probe a batch of listed files (one task for a worker process or another engine)."""
    return [_probe_entry(entry, max_pixels) for entry in entries]


def read_listing(dataset: str) -> Listing:
    """:func:`list_dataset` with the errors a user can fix turned into :class:`ConvertError`."""
    try:
        listing = list_dataset(dataset)
    except OSError as err:
        raise ConvertError(
            f"cannot list dataset folder {display_name(dataset)!r}: {err.strerror}"
        ) from None
    if not listing.classes:
        raise ConvertError(
            f"no class folders in {display_name(dataset)!r}; expected "
            f"{display_name(dataset)}/<class name>/<image files>"
        )
    return listing


def probe_files(
    dataset: str, listing: Listing, max_pixels: int, runner: Runner, progress: bool = False
) -> ScanResult:
    """Probe every listed file's header (in ``runner``'s workers) and sort the outcomes.

    Raises:
      ConvertError: no usable image at all.
    """
    n_files = len(listing.entries)
    statuses: list[Any] = [None] * n_files
    batch = max(1, min(256, n_files // (runner.workers * 4) or 1))
    batches = [listing.entries[i : i + batch] for i in range(0, n_files, batch)]
    with progress_bar(n_files, "scan", enabled=progress, unit="img") as bar:
        for index, results in runner.run(probe_batch, batches, max_pixels):
            statuses[index * batch : index * batch + len(results)] = results
            bar.update(len(results))
    return sort_outcomes(dataset, listing, statuses, max_pixels)


def listing_fingerprint(listing: Listing, stats: list[tuple[int, int]], max_pixels: int) -> str:
    """sha256 over the classes, every listed file's path bytes, size and mtime, and the limit."""
    digest = hashlib.sha256(f"{max_pixels}\n".encode())
    for name in listing.classes:
        digest.update(b"class " + os.fsencode(name) + b"\n")
    for entry, (size, mtime) in zip(listing.entries, stats, strict=True):
        digest.update(os.fsencode(entry.rel) + f"\0{size}\0{mtime}\n".encode())
    return digest.hexdigest()


def sort_outcomes(
    dataset: str, listing: Listing, statuses: list[tuple[str, Any, int, int]], max_pixels: int
) -> ScanResult:
    """Turn per-entry probe outcomes into the :class:`ScanResult` (usable, skipped, ignored).

    Raises:
      ConvertError: no usable image at all.
    """
    class_texts = [display_name(c) for c in listing.classes]
    files, skipped, ignored, outcomes = [], list(listing.skipped), list(listing.ignored), []
    for i, (entry, (status, info, size, mtime)) in enumerate(
        zip(listing.entries, statuses, strict=True)
    ):
        if status == "ok":
            text = class_texts[entry.label]
            files.append(
                FileRecord(entry.path, entry.rel, entry.label, text, entry.ext, size, mtime)
            )
        else:
            target = skipped if status == "skip" else ignored
            target.append({"path": display_name(entry.rel), "reason": info})
            outcomes.append([i, status, info])
    if not files:
        raise ConvertError(
            f"no usable images in the {len(listing.classes)} class folder(s) of "
            f"{display_name(dataset)!r} ({len(skipped)} skipped as bad, {len(ignored)} "
            "ignored); put image files directly inside the class folders"
        )
    non_utf8 = sorted(
        {display_name(e.rel) for e in listing.entries if not is_utf8(e.rel)}
        | {display_name(c) for c in listing.classes if not is_utf8(c)}
    )
    stats = [(size, mtime) for _, _, size, mtime in statuses]
    fingerprint = listing_fingerprint(listing, stats, max_pixels)
    return ScanResult(
        dataset, class_texts, files, skipped, ignored, non_utf8, fingerprint, outcomes
    )


def scan(
    dataset_path: str | os.PathLike,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    workers: int = 1,
    progress: bool = False,
) -> ScanResult:
    """List ``dataset_path`` and probe every file: phase 1 of a conversion, on its own.

    Args:
      dataset_path: folder with one sub-folder of images per class.
      max_pixels: skip images whose header claims more pixels than this.
      workers: probe in this many spawned processes (1: in this process).
      progress: show a progress bar.

    Returns:
      A :class:`ScanResult`: the input of :func:`helpers.convert.plan`.

    Raises:
      ConvertError: the folder cannot be listed, has no class folders or no usable image.
    """
    dataset = os.fspath(dataset_path)
    listing = read_listing(dataset)
    runner = Runner(max(1, min(workers, len(listing.entries))))
    try:
        return probe_files(dataset, listing, max_pixels, runner, progress)
    finally:
        runner.close()
