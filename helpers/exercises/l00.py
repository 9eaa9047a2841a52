"""Lesson 00 exercises: input-wait share, the profiler's verdict, packing small files.

The files :func:`_pack_cases` writes get their contents from a seed that is
part of their name, so the checker recomputes what they hold instead of
trusting the files the student's code read.
"""

from __future__ import annotations

import io
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from helpers.exercises import CheckFailed, Exercise, register

_VERDICTS = ("highly input-bound", "moderately input-bound", "not input-bound")


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _number(result: Any, what: str) -> float:
    if isinstance(result, bool) or not isinstance(result, (int, float)):
        raise CheckFailed(f"{what} should return a number, got {result!r}")
    return float(result)


# ---------------------------------------------------------------------------
# 00.input_wait_share
# ---------------------------------------------------------------------------


def _share_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    cases = []
    for i in range(4):
        n = int(rng.integers(3, 12))
        # Steps of very different lengths, so the mean of per-step shares differs
        # from the share of total time.
        wait = rng.uniform(0.0005, 0.05, size=n) * rng.choice([1, 20], size=n)
        compute = rng.uniform(0.002, 0.03, size=n)
        if i == 0:
            wait[:] = 0.0  # a pipeline that never makes the model wait
        cases.append({"steps": [[float(w), float(c)] for w, c in zip(wait, compute, strict=True)]})
    return cases


def _share_verify(case: dict[str, Any], result: Any) -> None:
    share = _number(result, "input_wait_share")
    wait = sum(w for w, _ in case["steps"])
    compute = sum(c for _, c in case["steps"])
    expected = wait / (wait + compute)
    if _close(share, expected):
        return
    shown = (
        f"input_wait_share gave {share:.4f} for {len(case['steps'])} steps; expected {expected:.4f}"
    )
    per_step = [w / (w + c) for w, c in case["steps"]]
    if _close(share, sum(per_step) / len(per_step)):
        raise CheckFailed(
            shown + ": that is the *mean of per-step shares*, which weighs a 2 ms step like "
            "a 200 ms one",
            "divide the total wait by the total step time: sum(waits) / sum(waits + computes)",
        )
    if compute and _close(share, wait / compute):
        raise CheckFailed(
            shown + ": you divided by the compute time; a step takes wait + compute",
            "share = wait / (wait + compute), summed over all steps",
        )
    if _close(share, 100 * expected):
        raise CheckFailed(shown + ": return a fraction in [0, 1], not a percentage")
    if _close(share, 1 - expected):
        raise CheckFailed(shown + ": that is the share spent computing, not waiting")
    raise CheckFailed(shown, "sum(wait) / (sum(wait) + sum(compute))")


register(
    Exercise(
        key="00.input_wait_share",
        target="input_wait_share",
        title="share of step time spent waiting for input",
        make_cases=_share_cases,
        verify=_share_verify,
        hint="each step is [wait_seconds, compute_seconds]; the share is total wait over "
        "total step time",
    )
)


# ---------------------------------------------------------------------------
# 00.input_bound_verdict
# ---------------------------------------------------------------------------


def _expected_verdict(share: float) -> str:
    from helpers.train import classify_input_bound

    return classify_input_bound(share)


def _verdict_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    # Clear cases first, so a wrong scale (percent vs fraction) is named before a boundary.
    inside = [float(rng.uniform(0.25, 1.0)), float(rng.uniform(0.07, 0.18))]
    edges = [0.05, 0.2, 0.0, 1.0, float(rng.uniform(0.0, 0.05)), float(np.nextafter(0.2, 0.0))]
    shares = [inside[i] for i in rng.permutation(2)] + [edges[i] for i in rng.permutation(6)]
    return [{"share": share} for share in shares]


def _verdict_verify(case: dict[str, Any], result: Any) -> None:
    share = case["share"]
    expected = _expected_verdict(share)
    if result == expected:
        return
    if result not in _VERDICTS:
        raise CheckFailed(
            f"input_bound_verdict({share!r}) returned {result!r}; return exactly one of "
            + ", ".join(repr(v) for v in _VERDICTS)
        )
    message = f"input_bound_verdict({share!r}) returned {result!r}, expected {expected!r}"
    one_below = {0.2: "moderately input-bound", 0.05: "not input-bound"}
    if share in one_below and result == one_below[share]:
        raise CheckFailed(
            message + f": exactly {share:.0%} already counts as {expected!r}",
            "the profiler's rule is share >= 0.20 -> highly, share >= 0.05 -> moderately "
            "(>=, not >)",
        )
    if share > 0.05 and result == "not input-bound" and share not in one_below:
        raise CheckFailed(
            message + ": the share is a fraction (0.35 means 35 %)",
            "compare with 0.20 and 0.05, or multiply by 100 before comparing with 20 and 5",
        )
    raise CheckFailed(message, "share >= 0.20: highly; share >= 0.05: moderately; else not")


register(
    Exercise(
        key="00.input_bound_verdict",
        target="input_bound_verdict",
        title="the profiler's verdict for an input-wait share",
        make_cases=_verdict_cases,
        verify=_verdict_verify,
        hint="'highly input-bound' from 20 % of step time, 'moderately input-bound' from 5 %, "
        "else 'not input-bound'",
    )
)


# ---------------------------------------------------------------------------
# 00.pack_files
# ---------------------------------------------------------------------------

_PACK_NAME = re.compile(r"^sample_(\d+)_(\d+)\.bin$")
_ENCODED, _LABEL, _FILENAME = "image/encoded", "image/class/label", "image/filename"


def _file_bytes(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=int(rng.integers(1, 3000)), dtype=np.uint8).tobytes()


def _pack_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    cases = []
    for i in range(3):
        folder = workdir / f"case{i}"
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for j in range(int(rng.integers(3, 9))):
            seed = int(rng.integers(0, 2**31 - 1))
            path = folder / f"sample_{j}_{seed}.bin"
            path.write_bytes(_file_bytes(seed))
            paths.append(os.fspath(path))
        labels = [int(v) for v in rng.integers(0, 10, size=len(paths))]
        out = folder / "packed" / "train-00000-of-00001.tfrecord"
        out.parent.mkdir()
        cases.append({"paths": paths, "labels": labels, "out_path": os.fspath(out)})
    return cases


def _pack_call(func: Any, case: dict[str, Any]) -> dict[str, Any]:
    """Run the student's function, then hand the file it wrote to the checker."""
    returned = func(**case)
    out = Path(case["out_path"])
    data = out.read_bytes() if out.is_file() else None
    return {"returned": returned, "file": data}


def _packed_records(case: dict[str, Any], answer: Any) -> list[bytes]:
    """The records of the file the student wrote, one per path, or CheckFailed."""
    from helpers.records import RecordError, read_records

    paths = case["paths"]
    data = answer.get("file")
    if data is None:
        raise CheckFailed(
            f"no file at out_path ({Path(case['out_path']).name})",
            "write it with `with tf.io.TFRecordWriter(out_path) as writer:`",
        )
    try:
        records = list(read_records(case["out_path"], fileobj=io.BytesIO(data)))
    except RecordError as err:
        raise CheckFailed(
            f"out_path is not a valid TFRecord file ({err})",
            "write records with tf.io.TFRecordWriter, inside `with` so it is closed",
        ) from None
    if len(records) != len(paths):
        raise CheckFailed(
            f"out_path holds {len(records)} records for {len(paths)} files",
            "write one record per file (and close the writer: `with ... as writer`)",
        )
    return records


def _check_packed_record(i: int, raw: bytes, path: str, label: int) -> None:
    """Record ``i`` is an Example holding the file's bytes, its label and its base name."""
    from helpers.features import Example

    example = Example()
    try:
        example.ParseFromString(raw)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError
        raise CheckFailed(
            f"record {i} is not a tf.train.Example",
            "writer.write(example.SerializeToString())",
        ) from None
    features = example.features.feature
    for key in (_ENCODED, _LABEL, _FILENAME):
        if key not in features:
            raise CheckFailed(
                f"record {i} has no {key!r} feature (it has {sorted(features)})",
                "use the feature names image/encoded, image/class/label, image/filename",
            )
    name = os.path.basename(path)
    match = _PACK_NAME.match(name)
    if match is None:
        raise CheckFailed(f"{name} is not a file this checker made")
    expected_bytes = _file_bytes(int(match.group(2)))
    encoded = list(features[_ENCODED].bytes_list.value)
    if len(encoded) != 1:
        raise CheckFailed(
            f"record {i}: image/encoded should hold one bytes value (the file), "
            f"it holds {len(encoded)} (kind {features[_ENCODED].WhichOneof('kind')})",
            "tf.train.BytesList(value=[file_bytes])",
        )
    if encoded[0] in (path.encode(), name.encode()):
        raise CheckFailed(
            f"record {i}'s image/encoded holds the file's *name*, not its contents",
            "read the bytes: open(path, 'rb').read()",
        )
    if encoded[0] != expected_bytes:
        raise CheckFailed(
            f"record {i}'s image/encoded holds {len(encoded[0])} bytes that are not the "
            f"contents of {name} ({len(expected_bytes)} bytes); records must follow the "
            "order of paths",
            "one record per path, in order, with open(path, 'rb').read() as image/encoded",
        )
    kind = features[_LABEL].WhichOneof("kind")
    if kind != "int64_list":
        raise CheckFailed(
            f"record {i}'s image/class/label is a {kind}; a class label is an integer",
            "tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))",
        )
    if list(features[_LABEL].int64_list.value) != [label]:
        raise CheckFailed(
            f"record {i} has label {list(features[_LABEL].int64_list.value)}, expected "
            f"[{label}] (labels[{i - 1}] belongs to paths[{i - 1}])"
        )
    stored = list(features[_FILENAME].bytes_list.value)
    if stored != [name.encode()]:
        hint = "store os.path.basename(path).encode()"
        if stored and stored[0] == path.encode():
            raise CheckFailed(
                f"record {i} stores the full path {path!r}: that ties the dataset to this "
                "machine's folders",
                hint,
            )
        raise CheckFailed(f"record {i} has image/filename {stored!r}, expected [{name!r}]", hint)


def _pack_verify(case: dict[str, Any], answer: Any) -> None:
    paths, labels = case["paths"], case["labels"]
    records = _packed_records(case, answer)
    for i, (raw, path, label) in enumerate(zip(records, paths, labels, strict=True), start=1):
        _check_packed_record(i, raw, path, label)
    returned = answer.get("returned")
    if returned != len(paths):
        raise CheckFailed(
            f"pack_files returned {returned!r}; return the number of records written ({len(paths)})"
        )


register(
    Exercise(
        key="00.pack_files",
        target="pack_files",
        title="many small files -> one TFRecord file",
        make_cases=_pack_cases,
        verify=_pack_verify,
        call=_pack_call,
        hint="with tf.io.TFRecordWriter(out_path) as writer: for each path, an Example with "
        "image/encoded (the file's bytes), image/class/label (int64) and image/filename "
        "(its base name); return the count",
    )
)
