"""Lesson 08 exercises: how many shards for H hosts, which files each host reads,
and what a tf.data service consumer receives in each processing mode.

Cases hold only inputs (numbers, file paths); expected answers are recomputed
here, in the checker's process, from the rules the lesson states:

* ``08.shard_count``: the smallest shard count that is a multiple of the host
  count, gives every host at least :data:`SHARDS_PER_HOST` files and keeps
  every shard at or below ``max_shard_bytes``;
* ``08.host_dataset``: file-level sharding, i.e. every record reaches exactly
  one host, each file is read whole by one host, file counts per host differ by
  at most one, the split is the same on every call, and fewer files than hosts
  is refused with a ``ValueError``;
* ``08.service_counts``: ``parallel_epochs`` gives one full epoch per worker,
  ``distributed_epoch`` one epoch split across the workers; consumers that
  share a ``job_name`` split one job's output, consumers without one each get
  their own job (``tests/test_exercises_l08.py`` checks this rule against a
  real dispatcher and workers).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from helpers.exercises import CheckFailed, Exercise, guarded, register
from helpers.records import write_records

#: The files-per-host rule: every host gets at least this many shards.
SHARDS_PER_HOST = 10
MODES = ("parallel_epochs", "distributed_epoch")

# ---------------------------------------------------------------------------
# 08.shard_count
# ---------------------------------------------------------------------------


def expected_shard_count(num_hosts: int, dataset_bytes: int, max_shard_bytes: int) -> int:
    """The lesson's rule: smallest multiple of ``num_hosts`` with >= 10 per host, shards <= max."""
    per_host = max(SHARDS_PER_HOST, -(-dataset_bytes // (num_hosts * max_shard_bytes)))
    return num_hosts * per_host


def _count_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    mb = 1_000_000
    cases = []
    for kind in ("small", "large", "exact", "one_over", "large", "small"):
        hosts = int(rng.integers(2, 65))
        max_bytes = int(rng.choice([64, 100, 128, 200, 256])) * mb
        per_host = int(rng.integers(SHARDS_PER_HOST + 1, 60))
        if kind == "small":  # the 10-files-per-host floor decides
            total = int(rng.integers(1, SHARDS_PER_HOST * hosts)) * max_bytes // 3
        elif kind == "exact":  # every shard exactly max_shard_bytes
            total = hosts * per_host * max_bytes
        elif kind == "one_over":  # one byte more needs one more shard per host
            total = hosts * per_host * max_bytes + 1
        else:
            total = int(rng.integers(hosts * SHARDS_PER_HOST * max_bytes, 400 * hosts * max_bytes))
        cases.append(
            {"num_hosts": hosts, "dataset_bytes": max(total, 1), "max_shard_bytes": max_bytes}
        )
    return cases


def _count_verify(case: dict[str, Any], result: Any) -> None:
    hosts, total, max_bytes = case["num_hosts"], case["dataset_bytes"], case["max_shard_bytes"]
    call = f"shard_count(num_hosts={hosts}, dataset_bytes={total:_}, max_shard_bytes={max_bytes:_})"
    if isinstance(result, bool) or not isinstance(result, int):
        raise CheckFailed(
            f"{call} returned {result!r} ({type(result).__name__}), not an int",
            "a shard count is a whole number: use integer arithmetic (-(-a // b) rounds up)",
        )
    if result < 1:
        raise CheckFailed(f"{call} returned {result}: at least one shard is needed")
    if result % hosts:
        low, high = result // hosts, result // hosts + 1
        raise CheckFailed(
            f"{call} returned {result}, not a multiple of {hosts} hosts: {result % hosts} hosts "
            f"read {high} files and the others {low}, so the others wait at every epoch's end",
            "round the shards per host up, then multiply by num_hosts",
        )
    if result < SHARDS_PER_HOST * hosts:
        raise CheckFailed(
            f"{call} returned {result}: {result // hosts} shards per host, the rule asks for at "
            f"least {SHARDS_PER_HOST} per host ({SHARDS_PER_HOST * hosts} in all)",
            f"at least {SHARDS_PER_HOST} shards per host, not {SHARDS_PER_HOST} in total",
        )
    size = -(-total // result)
    if size > max_bytes:
        raise CheckFailed(
            f"{call} returned {result}: shards of {size:_} bytes, above max_shard_bytes="
            f"{max_bytes:_}",
            "round up: the shards per host must be at least dataset_bytes / (num_hosts * "
            "max_shard_bytes); integer division // rounds down",
        )
    expected = expected_shard_count(hosts, total, max_bytes)
    if result != expected:
        raise CheckFailed(
            f"{call} returned {result}; {expected} shards also meet all three rules: take the "
            "smallest count, so that each file is as big as the rules allow (every file open "
            "costs a latency)",
            "shards per host = max(10, ceil(dataset_bytes / (num_hosts * max_shard_bytes)))",
        )


register(
    Exercise(
        key="08.shard_count",
        target="shard_count",
        title="how many shards for H hosts (the files-per-host rule)",
        make_cases=_count_cases,
        verify=_count_verify,
        hint="the smallest multiple of num_hosts that gives >= 10 shards per host and shards "
        "of at most max_shard_bytes",
    )
)


# ---------------------------------------------------------------------------
# 08.host_dataset
# ---------------------------------------------------------------------------


def _record_name(case_index: int, file_index: int, record: int) -> str:
    return f"c{case_index}-f{file_index:02d}-r{record:03d}"


def _host_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    cases = []
    for i, refuse in enumerate((False, False, False, True)):
        if refuse:  # fewer files than hosts
            num_files = int(rng.integers(2, 5))
            hosts = num_files + int(rng.integers(1, 4))
        else:
            hosts = int(rng.integers(2, 6))
            num_files = int(rng.integers(max(2 * hosts, 7), 15))
            if num_files % hosts == 0 and i == 0:
                num_files += 1  # one case where the files do not divide evenly
        counts = [int(c) for c in rng.integers(2, 9, size=num_files)]
        files = []
        for f, count in enumerate(counts):
            path = workdir / f"c{i}-train-{f:05d}-of-{num_files:05d}.tfrecord"
            write_records(path, [_record_name(i, f, r).encode() for r in range(count)])
            files.append(os.fspath(path))
        cases.append({"case": i, "files": files, "counts": counts, "num_hosts": hosts})
    return cases


def _read_host(dataset: Any, limit: int) -> Any:
    import tensorflow as tf

    if not isinstance(dataset, tf.data.Dataset):
        return {"type": type(dataset).__name__}
    records = []
    for element in dataset.take(limit).as_numpy_iterator():
        if not isinstance(element, bytes):
            return {"element": type(element).__name__}
        records.append(element.decode("utf-8", "replace"))
    return records


def _host_call(func: Any, case: dict[str, Any]) -> Any:
    files, hosts = list(case["files"]), case["num_hosts"]
    limit = sum(case["counts"]) + 1  # an endless dataset (repeat) shows up as one record too many
    per_host = []
    for host in list(range(hosts)) + [0]:  # host 0 twice: the split must be the same every time
        result = guarded(func, list(files), hosts, host, catch=(ValueError,))
        per_host.append(result if isinstance(result, dict) else _read_host(result, limit))
    return {"hosts": per_host[:-1], "again": per_host[-1]}


def _host_refusal(case: dict[str, Any], hosts_answers: list[Any], call: str) -> None:
    num_files, hosts = len(case["files"]), case["num_hosts"]
    served = [h for h, a in enumerate(hosts_answers) if not (isinstance(a, dict) and "raised" in a)]
    if served:
        idle = [h for h, a in enumerate(hosts_answers) if isinstance(a, list) and not a]
        detail = f"hosts {idle} get no file and sit idle" if idle else "some hosts get no file"
        raise CheckFailed(
            f"{call}: {num_files} files for {hosts} hosts, and host {served[0]} did not refuse: "
            f"{detail} (tf.distribute's FILE policy stops with an error here)",
            "if len(files) < num_hosts: raise ValueError(...) naming both numbers, on every host",
        )
    message = hosts_answers[0]["raised"]
    if str(num_files) not in message or str(hosts) not in message:
        raise CheckFailed(
            f"{call}: refused with {message!r}, which does not say how many files ({num_files}) "
            f"and hosts ({hosts}) there are",
            "name the numbers and what to do: e.g. 'only 3 files for 5 hosts: write at least "
            "10 shards per host'",
        )


def _check_host_types(answers: list[Any], call: str) -> None:
    for host, answer in enumerate(answers):
        if isinstance(answer, dict) and "raised" in answer:
            raise CheckFailed(
                f"{call.format(host=host)} raised {answer['raised']}, but there are enough files",
                "refuse only when len(files) < num_hosts",
            )
        if isinstance(answer, dict) and "type" in answer:
            raise CheckFailed(
                f"{call.format(host=host)} returned a {answer['type']}, not a tf.data.Dataset",
                "return the records dataset: files -> shard -> TFRecordDataset",
            )
        if isinstance(answer, dict):
            raise CheckFailed(
                f"{call.format(host=host)} yields {answer['element']} elements, not the raw "
                "records (bytes)",
                "do not parse the records: just read them with tf.data.TFRecordDataset",
            )


def _host_cover(case: dict[str, Any], answers: list[list[str]], call: str) -> dict[int, int]:
    """Check the disjoint cover at file level; return file index -> host."""
    files, counts = case["files"], case["counts"]
    known = {_record_name(case["case"], f, r): f for f, n in enumerate(counts) for r in range(n)}
    owner: dict[int, set[int]] = {f: set() for f in range(len(files))}
    for host, records in enumerate(answers):
        strange = [r for r in records if r not in known]
        if strange:
            what = "a file name" if strange[0] in files else "not a record of the files"
            raise CheckFailed(
                f"{call.format(host=host)} yields {strange[0]!r}: {what}",
                "read the host's files: ....interleave(tf.data.TFRecordDataset) yields records",
            )
        if len(records) != len(set(records)):
            raise CheckFailed(
                f"{call.format(host=host)} yields some records twice ({len(records)} records, "
                f"{len(set(records))} distinct): one pass over its files, no repeat()"
            )
        mine = {known[r] for r in records}
        for f in mine:
            got = sum(1 for r in records if known[r] == f)
            if got != counts[f]:
                holders = sorted(
                    h for h, rs in enumerate(answers) if any(known[r] == f for r in rs)
                )
                raise CheckFailed(
                    f"{call.format(host=host)} got {got} of the {counts[f]} records of "
                    f"{Path(files[f]).name}; its records are spread over hosts {holders}: that is "
                    "sharding by records (DATA), so every host reads every file and throws "
                    f"{case['num_hosts'] - 1} of every {case['num_hosts']} records away",
                    "shard the list of file names, then read: "
                    "from_tensor_slices(files).shard(num_hosts, host_index) -> TFRecordDataset",
                )
            owner[f].add(host)
    for f, holders in owner.items():
        if len(holders) != 1:
            who = f"hosts {sorted(holders)}" if holders else "no host"
            raise CheckFailed(
                f"{Path(files[f]).name} is read by {who}: every file must go to exactly one host",
                "every host must list the files in the same order (no shuffling before shard), "
                "and the hosts' parts must together cover all files",
            )
    return {f: next(iter(h)) for f, h in owner.items()}


def _host_verify(case: dict[str, Any], result: Any) -> None:
    hosts = case["num_hosts"]
    answers = result["hosts"]
    call = f"host_dataset(<{len(case['files'])} files>, num_hosts={hosts}, host_index={{host}})"
    if len(answers) != hosts:
        raise CheckFailed(f"expected answers for {hosts} hosts, got {len(answers)}")
    if len(case["files"]) < hosts:
        _host_refusal(case, answers, call.format(host="..."))
        return
    _check_host_types([*answers, result["again"]], call)
    if sorted(result["again"]) != sorted(answers[0]):
        raise CheckFailed(
            f"{call.format(host=0)} gave different records on two calls: each host computes "
            "its part on its own, so the split must not depend on chance",
            "no list_files(...) with its default shuffle=True before shard; shuffle after shard",
        )
    owner = _host_cover(case, answers, call)
    per_host = [sum(1 for h in owner.values() if h == host) for host in range(hosts)]
    if max(per_host) - min(per_host) > 1:
        raise CheckFailed(
            f"{call.format(host='...')}: files per host {per_host}; they may differ by one at "
            "most, or some hosts wait for the others every epoch",
            "Dataset.shard(num_hosts, host_index) on the file list deals files out in turn",
        )


register(
    Exercise(
        key="08.host_dataset",
        target="host_dataset",
        title="each host reads its own files (file-level sharding)",
        make_cases=_host_cases,
        verify=_host_verify,
        hint="refuse fewer files than hosts with ValueError; otherwise "
        "tf.data.Dataset.from_tensor_slices(files).shard(num_hosts, host_index)"
        ".interleave(tf.data.TFRecordDataset)",
        call=_host_call,
    )
)


# ---------------------------------------------------------------------------
# 08.service_counts
# ---------------------------------------------------------------------------


def expected_service_counts(
    num_elements: int, num_workers: int, processing_mode: str, num_consumers: int, shared_job: bool
) -> list[int]:
    """How often each element of ``range(num_elements)`` reaches the consumers, in total."""
    per_job = num_workers if processing_mode == "parallel_epochs" else 1
    jobs = 1 if shared_job else num_consumers
    return [per_job * jobs] * num_elements


def _service_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    combos = [(m, s) for m in MODES for s in (False, True)]
    combos += [(str(rng.choice(MODES)), bool(rng.integers(0, 2))) for _ in range(2)]
    cases = []
    for mode, shared in combos:
        cases.append(
            {
                "num_elements": int(rng.integers(4, 25)),
                "num_workers": int(rng.integers(2, 7)),
                "processing_mode": mode,
                "num_consumers": int(rng.integers(2, 5)),
                "shared_job": shared,
            }
        )
    return cases


def _why(case: dict[str, Any]) -> str:
    workers, consumers = case["num_workers"], case["num_consumers"]
    if case["processing_mode"] == "parallel_epochs":
        job = f"in parallel_epochs each of the {workers} workers produces a full epoch"
    else:
        job = f"in distributed_epoch the {workers} workers split one epoch between them"
    if case["shared_job"]:
        return f"{job}; the {consumers} consumers share one job_name, so they split that output"
    return f"{job}; the {consumers} consumers have no job_name, so each gets a job of its own"


def _service_verify(case: dict[str, Any], result: Any) -> None:
    args = ", ".join(f"{k}={v!r}" for k, v in case.items())
    call = f"service_counts({args})"
    expected = expected_service_counts(**case)
    if not isinstance(result, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in result
    ):
        raise CheckFailed(
            f"{call} returned {result!r}: return a list of int, one count per element",
            "[count] * num_elements",
        )
    if len(result) != case["num_elements"]:
        raise CheckFailed(
            f"{call} returned {len(result)} counts for {case['num_elements']} elements",
            "one count per element of range(num_elements)",
        )
    wrong = [i for i, (got, want) in enumerate(zip(result, expected, strict=True)) if got != want]
    if wrong:
        i = wrong[0]
        raise CheckFailed(
            f"{call}: you predict element {i} arrives {result[i]} time(s), it arrives "
            f"{expected[i]} time(s): {_why(case)}",
            "times per job: num_workers (parallel_epochs) or 1 (distributed_epoch); jobs: 1 "
            "when the consumers share a job_name, else num_consumers",
        )


register(
    Exercise(
        key="08.service_counts",
        target="service_counts",
        title="predict what tf.data service consumers receive",
        make_cases=_service_cases,
        verify=_service_verify,
        hint="parallel_epochs: every worker a full epoch; distributed_epoch: every element once "
        "per job; a shared job_name means one job for all consumers",
    )
)
