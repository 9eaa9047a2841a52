"""Resuming an interrupted conversion: a journal of the shards already complete.

Before the first shard is written, the converter writes ``.convert-journal.jsonl``
in the output folder: a first line with the plan fingerprint, then one line per
shard as it completes (appended and fsync'd by the parent process, after the
shard and its index are in place). A rerun with the same fingerprint keeps every
listed shard whose file still has the recorded size and sha256 and whose index
still has its recorded digest, and writes only the rest; the result is
byte-identical to an uninterrupted run. The journal is removed once the manifest
is written. A different fingerprint (changed files or settings) is refused. The
first line also holds a fingerprint of the listing (every file's size and mtime)
and the probe's refusals, so a rerun over unchanged files skips the header probe.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Any

from helpers.convert.planning import Plan
from helpers.convert.scanning import (
    Listing,
    ProbeOutcomes,
    ScanResult,
    listing_fingerprint,
    sort_outcomes,
)
from helpers.convert.shards import ShardResult
from helpers.util import atomic_write, sha256_file

__all__ = ["JOURNAL_NAME", "Journal"]

JOURNAL_NAME = ".convert-journal.jsonl"
_CHECK_THREADS = 4  # hashlib releases the GIL: 4 threads read a cold disk about twice as fast


def _stat(path: str) -> tuple[int, int] | None:
    """``(size, mtime_ns)`` of ``path``, or ``None`` when it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _inputs(plan: Plan) -> dict[str, int]:
    """What the plan converts, in numbers a person can compare."""
    files = plan.scan.files
    return {"classes": len(plan.scan.classes), "images": len(files), "bytes": sum(files.sizes)}


def _describe(inputs: dict[str, int]) -> str:
    return (
        f"{inputs.get('images')} images, {inputs.get('bytes')} bytes in "
        f"{inputs.get('classes')} classes"
    )


class Journal:
    """The journal file of one output folder."""

    def __init__(self, output_dir: str):
        self.path = os.path.join(output_dir, JOURNAL_NAME)
        self.output_dir = output_dir

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def header(self) -> dict[str, Any]:
        """The first line: plan and listing fingerprints, the probe's refusals."""
        with open(self.path, encoding="utf-8") as f:
            try:
                return json.loads(f.readline())
            except json.JSONDecodeError:
                return {}

    def rescan(self, dataset: str, listing: Listing, max_pixels: int) -> ScanResult | None:
        """The scan result of the interrupted run, when no listed file changed since.

        Costs one ``stat`` per file instead of reading every file's header again: a
        resumed run then spends its time on the shards still to write.
        """
        header = self.header()
        entries = listing.entries
        outcomes = ProbeOutcomes(len(entries))
        for i, rel in enumerate(entries.rels):
            st = _stat(os.path.join(entries.root, rel))
            if st is None:
                return None
            outcomes.sizes[i], outcomes.mtimes[i] = st
        for i, status, reason in header.get("probe_outcomes", []):
            outcomes.refused[i] = (status, reason)
        if header.get("listing_fingerprint") != listing_fingerprint(listing, outcomes, max_pixels):
            return None
        return sort_outcomes(dataset, listing, outcomes, max_pixels)

    def read(self) -> tuple[str | None, list[ShardResult]]:
        """The fingerprint and the completed shards listed (a torn last line is ignored)."""
        fingerprint, results = None, []
        with open(self.path, encoding="utf-8") as f:
            for n, line in enumerate(f):
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    break  # killed while appending: everything before it is valid
                if n == 0:
                    fingerprint = entry.get("plan_fingerprint")
                else:
                    results.append(ShardResult(**entry))
        return fingerprint, results

    def keep_completed(self, plan: Plan) -> dict[int, ShardResult]:
        """Listed shards that still match the plan and their recorded size and digests.

        The digests are checked in a few threads: reading the kept shards back is
        most of a resumed run's fixed cost, and parallel reads finish it sooner.
        """
        _, results = self.read()
        listed = [
            r for r in results if r.index < len(plan.tasks) and plan.tasks[r.index].name == r.name
        ]
        with ThreadPoolExecutor(max_workers=_CHECK_THREADS) as pool:
            intact = list(pool.map(self._intact, listed))
        return {r.index: r for r, ok in zip(listed, intact, strict=True) if ok}

    def _intact(self, r: ShardResult) -> bool:
        """Whether shard ``r`` and its index are on disk with the size and digests recorded."""
        shard = os.path.join(self.output_dir, r.name)
        index = os.path.join(self.output_dir, r.index_name)
        try:
            if os.path.getsize(shard) != r.bytes:
                return False
            return sha256_file(shard) == r.sha256 and sha256_file(index) == r.index_sha256
        except OSError:
            return False

    def start(self, plan: Plan, kept: dict[int, ShardResult]) -> None:
        """Write the journal afresh: the fingerprint, then the shards kept."""
        head = {
            "plan_fingerprint": plan.fingerprint,
            "listing_fingerprint": plan.scan.listing_fingerprint,
            "settings": plan.settings.as_dict(),  # to say what changed when a rerun differs
            "inputs": _inputs(plan),
            "probe_outcomes": plan.scan.probe_outcomes,
        }
        lines = [json.dumps(head)]
        lines += [json.dumps(asdict(kept[i])) for i in sorted(kept)]
        atomic_write(self.path, "\n".join(lines) + "\n")

    def difference(self, plan: Plan) -> str:
        """Why this journal's run is not ``plan``'s, for the refusal message."""
        head = self.header()
        if not head.get("plan_fingerprint"):
            return f"its journal {JOURNAL_NAME} is unreadable"
        was = head.get("settings")
        if was is None:  # a journal from before settings were recorded
            return "its plan fingerprint differs"
        changed = [
            f"--{key.replace('_', '-')} was {was.get(key)!r}, now {value!r}"
            for key, value in plan.settings.as_dict().items()
            if was.get(key) != value
        ]
        if changed:
            return "other settings: " + "; ".join(changed)
        before, now = head.get("inputs", {}), _inputs(plan)
        if before != now:
            return f"other input files: {_describe(before)} then, {_describe(now)} now"
        if head.get("listing_fingerprint") != plan.scan.listing_fingerprint:
            return (
                "other input files: as many images and bytes, but a file's size or "
                "modification time differs (touched, re-saved or replaced?)"
            )
        return "its plan fingerprint differs (written by another version of the converter?)"

    def append(self, result: ShardResult) -> None:
        """Record a completed shard (one fsync'd line)."""
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(asdict(result)) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def remove(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
