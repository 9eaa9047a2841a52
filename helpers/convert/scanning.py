"""Phase 1, scan: list the class folders (one ``os.scandir`` per folder, never glob) and
probe every candidate file's header, in worker processes when there are many.

The result is plain, picklable data (a :class:`ScanResult` whose files are a
:class:`~helpers.convert.table.FileTable`), so
another engine can run :func:`scan` once and hand it to :func:`helpers.convert.plan`.
"""

from __future__ import annotations

import hashlib
import os
import stat
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from helpers.convert.pool import Runner
from helpers.convert.probe import IMAGE_EXTENSIONS, TOO_MANY_PIXELS, Ignore, Skip, probe
from helpers.convert.settings import (
    DEFAULT_MAX_PIXELS,
    ConvertError,
    display_name,
    is_utf8,
)
from helpers.convert.table import FileRecord, FileTable
from helpers.util import progress_bar

__all__ = [
    "IMAGE_EXTENSIONS",
    "JUNK_DIRS",
    "FileRecord",
    "FileTable",
    "Listing",
    "ProbeOutcomes",
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


@dataclass
class Listing:
    """The dataset folder as listed (nothing opened yet): ``entries`` has sizes of 0."""

    classes: list[str]  # folder names, sorted by bytes
    entries: FileTable
    ignored: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)


class ProbeOutcomes:
    """What the probe found for each listed file, as columns (8 + 8 bytes per file).

    ``sizes[i]`` and ``mtimes[i]`` are file ``i``'s size and modification time when
    probed; ``refused[i]`` is ``("skip" | "ignore", reason)`` for the few it refused.
    """

    def __init__(self, n: int):
        self.sizes = array("q", bytes(8 * n))
        self.mtimes = array("q", bytes(8 * n))
        self.refused: dict[int, tuple[str, str]] = {}

    def put(self, start: int, results: Iterable[tuple[str, Any, int, int]]) -> None:
        """Store :func:`probe_batch`'s results for the files from ``start`` on."""
        for i, (status, reason, size, mtime) in enumerate(results, start):
            self.sizes[i], self.mtimes[i] = size, mtime
            if status != "ok":
                self.refused[i] = (status, reason)

    @classmethod
    def of(cls, statuses: ProbeOutcomes | Sequence[tuple[str, Any, int, int]]) -> ProbeOutcomes:
        """``statuses`` as outcomes (a list of ``probe_batch`` results in listing order)."""
        if isinstance(statuses, ProbeOutcomes):
            return statuses
        outcomes = cls(len(statuses))
        outcomes.put(0, statuses)
        return outcomes

    def __len__(self) -> int:
        return len(self.sizes)


@dataclass
class ScanResult:
    """Everything the scan found: classes, usable files, and what was skipped or ignored."""

    dataset_path: str
    classes: list[str]  # display names; label = index
    files: FileTable  # usable images only, in listing order, with their sizes
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
    scan = Listing([], FileTable.empty(dataset))
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
    scan.entries = FileTable.empty(dataset, (display_name(c) for c in scan.classes))
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
            scan.entries.append(rel, label)
    return scan


def _probe_entry(entry: FileRecord, max_pixels: int) -> tuple[str, Any, int, int]:
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


def probe_batch(entries: Iterable[FileRecord], max_pixels: int) -> list[tuple[str, Any, int, int]]:
    """Probe a batch of listed files (a slice of ``Listing.entries``: one task for a worker
    process or another engine)."""
    return [_probe_entry(entry, max_pixels) for entry in entries]


def _no_images_hint(skipped: list[dict[str, str]], max_pixels: int) -> str:
    """What to do when nothing is usable, from the reasons the files were skipped for."""
    too_big = [s for s in skipped if TOO_MANY_PIXELS in s["reason"]]
    if too_big and 2 * len(too_big) >= len(skipped):
        return (
            f"{len(too_big)} of them exceed --max-pixels {max_pixels}: raise it if the images "
            f"are meant to be this large (first: {too_big[0]['path']}: {too_big[0]['reason']})"
        )
    if skipped:
        return f"first: {skipped[0]['path']}: {skipped[0]['reason']}"
    return "put image files directly inside the class folders"


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
    _refuse_clashing_class_names(dataset, listing.classes)
    return listing


def _refuse_clashing_class_names(dataset: str, classes: list[str]) -> None:
    """Two folders whose class texts (display names) are equal would share a label text:
    refuse before anything is written (e.g. bytes ``caf\\xe9`` and a folder literally named
    ``caf\\xe9``)."""
    first: dict[str, str] = {}
    for name in classes:
        text = display_name(name)
        if text in first:
            raise ConvertError(
                f"class folders {os.fsencode(first[text])!r} and {os.fsencode(name)!r} in "
                f"{display_name(dataset)!r} have the same class text {text!r} (a file name "
                "that is not valid UTF-8 is shown with \\xNN escapes); rename one of them"
            )
        first[text] = name


def probe_files(
    dataset: str, listing: Listing, max_pixels: int, runner: Runner, progress: bool = False
) -> ScanResult:
    """Probe every listed file's header (in ``runner``'s workers) and sort the outcomes.

    Raises:
      ConvertError: no usable image at all.
    """
    n_files = len(listing.entries)
    outcomes = ProbeOutcomes(n_files)
    batch = max(1, min(256, n_files // (runner.workers * 4) or 1))
    starts = range(0, n_files, batch)
    batches = (listing.entries[i : i + batch] for i in starts)
    with progress_bar(n_files, "scan", enabled=progress, unit="img") as bar:
        for index, results in runner.run(probe_batch, batches, max_pixels):
            outcomes.put(starts[index], results)
            bar.update(len(results))
    return sort_outcomes(dataset, listing, outcomes, max_pixels)


def listing_fingerprint(listing: Listing, outcomes: ProbeOutcomes, max_pixels: int) -> str:
    """sha256 over the classes, every listed file's path bytes, size and mtime, and the limit."""
    digest = hashlib.sha256(f"{max_pixels}\n".encode())
    for name in listing.classes:
        digest.update(b"class " + os.fsencode(name) + b"\n")
    for rel, size, mtime in zip(listing.entries.rels, outcomes.sizes, outcomes.mtimes, strict=True):
        digest.update(os.fsencode(rel) + f"\0{size}\0{mtime}\n".encode())
    return digest.hexdigest()


def sort_outcomes(
    dataset: str,
    listing: Listing,
    statuses: ProbeOutcomes | Sequence[tuple[str, Any, int, int]],
    max_pixels: int,
) -> ScanResult:
    """Turn per-entry probe outcomes into the :class:`ScanResult` (usable, skipped, ignored).

    Args:
      statuses: :class:`ProbeOutcomes`, or every ``probe_batch`` result in listing order.

    Raises:
      ConvertError: no usable image at all.
    """
    outcomes = ProbeOutcomes.of(statuses)
    entries = listing.entries
    skipped, ignored = list(listing.skipped), list(listing.ignored)
    for i, (status, reason) in sorted(outcomes.refused.items()):
        target = skipped if status == "skip" else ignored
        target.append({"path": display_name(entries.rels[i]), "reason": reason})
    refused = outcomes.refused

    def usable() -> Iterator[int]:  # a generator, not a list: no object per file
        return (i for i in range(len(entries)) if i not in refused)

    files = FileTable(
        dataset,
        entries.class_texts,
        entries.rels.take(usable()),
        array("i", (entries.labels[i] for i in usable())),
        array("q", (outcomes.sizes[i] for i in usable())),
    )
    if not files:
        raise ConvertError(
            f"no usable images in the {len(listing.classes)} class folder(s) of "
            f"{display_name(dataset)!r} ({len(skipped)} skipped as bad, {len(ignored)} "
            f"ignored); {_no_images_hint(skipped, max_pixels)}"
        )
    non_utf8 = sorted(
        {display_name(rel) for rel in entries.rels if not is_utf8(rel)}
        | {display_name(c) for c in listing.classes if not is_utf8(c)}
    )
    return ScanResult(
        dataset,
        list(files.class_texts),
        files,
        skipped,
        ignored,
        non_utf8,
        listing_fingerprint(listing, outcomes, max_pixels),
        [[i, status, reason] for i, (status, reason) in sorted(outcomes.refused.items())],
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
