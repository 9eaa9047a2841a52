"""Lesson 03 exercises: write a TFRecord file, split its framing by hand, decode raw pixels,
parse a batch with Fixed / default / ragged features.

Inputs travel as JSON (hex for bytes); files are written by the student's
function into the case's ``workdir`` and sent back *as bytes*, so the checker
reads exactly what was written, with its own framing reader
(:func:`helpers.records.read_records`).
"""

from __future__ import annotations

import io
import os
import re
import string
from pathlib import Path
from typing import Any

import numpy as np

from helpers.exercises import CheckFailed, Exercise, guarded, register
from helpers.records import RecordError, frame_record, read_records


def _text(rng: np.random.Generator) -> str:
    pool = list(string.ascii_lowercase + "éø猫 -")
    return "".join(rng.choice(pool, size=int(rng.integers(1, 10))))


# ---------------------------------------------------------------------------
# 03.write_examples
# ---------------------------------------------------------------------------


def _write_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    cases = []
    for i in range(3):
        rows = [
            {
                "id": int(rng.integers(0, 2**40)),
                "name": _text(rng),
                "score": float(np.float32(rng.normal(0, 10))),
            }
            for _ in range(int(rng.integers(2, 9)))
        ]
        cases.append({"path": os.fspath(workdir / f"rows_{i}.tfrecord"), "rows": rows})
    return cases


def _write_call(func: Any, case: dict[str, Any]) -> Any:
    path = Path(case["path"])
    if path.exists():
        path.unlink()
    result = guarded(func, path=case["path"], rows=case["rows"])
    if isinstance(result, dict) and "raised" in result:
        return result
    if not path.exists():
        return {"missing": True}
    return {"file": path.read_bytes().hex()}


def _write_verify(case: dict[str, Any], result: Any) -> None:
    from helpers.features import Example, feature_kind

    rows = case["rows"]
    if "raised" in result:
        raise CheckFailed(f"write_examples raised {result['raised']}")
    if "missing" in result:
        raise CheckFailed(f"write_examples did not create {case['path']}")
    data = bytes.fromhex(result["file"])
    if data[:2] == b"\x1f\x8b":
        raise CheckFailed("the file is GZIP-compressed; write it without compression")
    try:
        payloads = list(read_records(case["path"], fileobj=io.BytesIO(data)))
    except RecordError as err:
        raise CheckFailed(
            f"the file is not valid TFRecord framing ({err.problem} in record {err.index})",
            "write with tf.io.TFRecordWriter, not open(path, 'wb').write(...): the writer adds "
            "each record's length and CRCs",
        ) from None
    if not payloads and rows:
        raise CheckFailed(
            f"the file holds no records, expected {len(rows)}",
            "use `with tf.io.TFRecordWriter(path) as writer:` so the file is flushed and closed",
        )
    if len(payloads) != len(rows):
        raise CheckFailed(
            f"the file holds {len(payloads)} records, expected {len(rows)} (one per row)"
        )
    for i, (payload, row) in enumerate(zip(payloads, rows, strict=True)):
        example = Example()
        try:
            example.ParseFromString(payload)
        except Exception:  # noqa: BLE001 - any parse failure is the same feedback
            raise CheckFailed(
                f"record {i} is not a serialized tf.train.Example",
                "write example.SerializeToString()",
            ) from None
        features = example.features.feature
        expected = {
            "id": ("int64_list", [row["id"]]),
            "name": ("bytes_list", [row["name"].encode("utf-8")]),
            "score": ("float_list", [row["score"]]),
        }
        for key, (kind, want) in expected.items():
            if key not in features:
                raise CheckFailed(f"record {i} has no feature {key!r} (it has {sorted(features)})")
            got_kind = feature_kind(features[key])
            if got_kind != kind:
                raise CheckFailed(f"record {i}: feature {key!r} is a {got_kind}, expected {kind}")
            got = list(getattr(features[key], kind).value)
            if got != want:
                order = ""
                if got in (
                    [r2[key]] if key != "name" else [r2[key].encode("utf-8")] for r2 in rows
                ):
                    order = " (records must be written in the order of `rows`)"
                raise CheckFailed(
                    f"record {i}: feature {key!r} is {got!r}, expected {want!r}{order}"
                )


register(
    Exercise(
        key="03.write_examples",
        target="write_examples",
        title="write rows as tf.train.Example records to a TFRecord file",
        make_cases=_write_cases,
        verify=_write_verify,
        call=_write_call,
        hint="with tf.io.TFRecordWriter(path) as writer: for row in rows: "
        "writer.write(example.SerializeToString()), with id -> Int64List, name -> "
        "BytesList (UTF-8), score -> FloatList.",
    )
)


# ---------------------------------------------------------------------------
# 03.split_records
# ---------------------------------------------------------------------------


def _split_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    cases = []
    for i in range(5):
        sizes = [int(s) for s in rng.choice([0, 1, 5, 40, 300, 3000], size=int(rng.integers(1, 6)))]
        payloads = [rng.bytes(s) for s in sizes]
        data = bytearray(b"".join(frame_record(p) for p in payloads))
        if i in (1, 3):  # corrupt one payload byte
            candidates = [j for j, p in enumerate(payloads) if p]
            if not candidates:
                payloads.append(rng.bytes(8))
                data += frame_record(payloads[-1])
                candidates = [len(payloads) - 1]
            j = int(rng.choice(candidates))
            offset = sum(len(p) + 16 for p in payloads[:j]) + 12
            data[offset + int(rng.integers(0, len(payloads[j])))] ^= 1 << int(rng.integers(0, 8))
        cases.append({"hex": bytes(data).hex()})
    return cases


def _split_call(func: Any, case: dict[str, Any]) -> Any:
    try:
        return func(bytes.fromhex(case["hex"]))
    except NotImplementedError:
        raise
    except ValueError as err:  # the expected answer for a corrupted file
        return {"raised": f"{type(err).__name__}: {err}"}


def _split_verify(case: dict[str, Any], result: Any) -> None:
    data = bytes.fromhex(case["hex"])
    try:
        expected = list(read_records("<case>", fileobj=io.BytesIO(data)))
        problem = None
    except RecordError as err:
        expected, problem = None, err
    if problem is not None:
        if isinstance(result, dict) and "raised" in result:
            return
        raise CheckFailed(
            f"record {problem.index} has a wrong data CRC but your function returned "
            f"{type(result).__name__} instead of raising ValueError",
            "compare helpers.records.masked_crc(payload) with the 4-byte footer and raise "
            "ValueError when they differ",
        )
    if isinstance(result, dict) and "raised" in result:
        raise CheckFailed(f"a valid file made your function raise {result['raised']}")
    if not isinstance(result, list):
        raise CheckFailed(
            f"split_records returned a {type(result).__name__}; return a list of bytes"
        )
    if len(result) != len(expected):
        raise CheckFailed(
            f"found {len(result)} records, the file holds {len(expected)}: each record is "
            "8 (length) + 4 (length CRC) + length + 4 (data CRC) bytes"
        )
    for i, (got, want) in enumerate(zip(result, expected, strict=True)):
        if got != want:
            if isinstance(got, bytes) and len(got) == len(want) + 4 and got.startswith(want):
                raise CheckFailed(f"record {i} still ends with its 4-byte data CRC")
            raise CheckFailed(
                f"record {i}: {len(got) if isinstance(got, bytes) else got!r} bytes differ from "
                f"the {len(want)}-byte payload (the length is a little-endian uint64: '<Q')"
            )


register(
    Exercise(
        key="03.split_records",
        target="split_records",
        title="split a TFRecord file's bytes into payloads, checking every CRC",
        make_cases=_split_cases,
        verify=_split_verify,
        call=_split_call,
        hint="loop: length = struct.unpack('<Q', data[pos:pos+8])[0]; check the length CRC "
        "(data[pos+8:pos+12]) and the data CRC (the 4 bytes after the payload) with "
        "helpers.records.masked_crc; raise ValueError on a mismatch.",
        unavailable=("helpers.records.read_records",),
    )
)


# ---------------------------------------------------------------------------
# 03.decode_digit
# ---------------------------------------------------------------------------


def _digit_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    from helpers.features import serialize_example

    cases = []
    shapes = [(8, 8, 1), (5, 11, 1), (7, 3, 3)]
    for i in range(5):
        h, w, d = shapes[i] if i < len(shapes) else (int(v) for v in rng.integers(2, 13, size=3))
        image = rng.integers(0, 256, size=(h, w, d), dtype=np.uint8)
        record = {
            "height": h,
            "width": w,
            "depth": d,
            "label": int(rng.integers(0, 10)),
            "image_raw": image.tobytes(),
        }
        cases.append({"hex": serialize_example(record).hex()})
    return cases


def _digit_call(func: Any, case: dict[str, Any]) -> Any:
    result = guarded(func, bytes.fromhex(case["hex"]))
    if isinstance(result, dict):
        return result
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        return {"shape_of_result": type(result).__name__}
    image, label = result
    return {"image": np.asarray(image), "label": label}


def _digit_verify(case: dict[str, Any], result: Any) -> None:
    from helpers.features import example_to_dict

    record = example_to_dict(bytes.fromhex(case["hex"]))
    h, w, d = record["height"][0], record["width"][0], record["depth"][0]
    want = np.frombuffer(record["image_raw"][0], dtype=np.uint8).reshape(h, w, d)
    if "raised" in result:
        _explain_digit_error(result["raised"], h, w, d)
    if "shape_of_result" in result:
        raise CheckFailed(
            f"decode_digit returned a {result['shape_of_result']}; return (image, label)"
        )
    image, label = result["image"], result["label"]
    if image.dtype != np.uint8:
        raise CheckFailed(
            f"the image is {image.dtype}; the pixels are uint8 bytes: np.frombuffer(raw, np.uint8)"
        )
    if image.shape != want.shape:
        if image.shape == (w, h, d) and h != w:
            raise CheckFailed(
                f"the image has shape {image.shape}, expected {want.shape}: height comes first "
                "(rows, then columns, then channels)"
            )
        raise CheckFailed(
            f"the image has shape {image.shape}, expected (height, width, depth) = {want.shape}"
        )
    if not np.array_equal(image, want):
        raise CheckFailed("the pixel values differ from the record's image_raw bytes")
    if (
        isinstance(label, bool)
        or not isinstance(label, (int, np.integer))
        or label != record["label"][0]
    ):
        raise CheckFailed(f"label {label!r}, expected the int {record['label'][0]}")


def _explain_digit_error(raised: str, h: int, w: int, d: int) -> None:
    """Raise the CheckFailed that names why decode_digit raised on an (h, w, d) image."""
    call = f"decode_digit raised {raised} on a {h} x {w} x {d} image"
    sized = re.search(r"cannot reshape array of size (\d+) into shape \(([\d, ]+)\)", raised)
    wide_items = sized is not None and int(sized.group(1)) < h * w * d
    if "buffer size must be a multiple of element size" in raised or wide_items:
        raise CheckFailed(
            call + ": np.frombuffer reads float64 unless told otherwise (8 bytes per value), "
            "so the pixels do not add up",
            "np.frombuffer(image_raw, dtype=np.uint8): one byte per pixel value",
        )
    if sized is not None and int(sized.group(1)) == h * w * d:
        shape = tuple(int(v) for v in sized.group(2).replace(" ", "").split(",") if v)
        if shape != (h, w, d):
            raise CheckFailed(
                call + f": the pixels are right but the shape {shape} is not the record's",
                "read height, width and depth from the record: images are not all 8 x 8",
            )
    raise CheckFailed(call)


register(
    Exercise(
        key="03.decode_digit",
        target="decode_digit",
        title="raw-pixel Example bytes -> (uint8 image of shape (height, width, depth), label)",
        make_cases=_digit_cases,
        verify=_digit_verify,
        call=_digit_call,
        hint="parse the bytes back into a tf.train.Example; the image's shape is stored in "
        "its own int64 features, and raw pixels are uint8 (np.frombuffer needs the dtype).",
    )
)


# ---------------------------------------------------------------------------
# 03.parse_batch
# ---------------------------------------------------------------------------


def _batch_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    from helpers.features import bytes_feature, serialize_example

    cases = []
    for _ in range(3):
        records = []
        n = int(rng.integers(3, 9))
        missing = set(int(i) for i in rng.choice(n, size=max(1, n // 3), replace=False))
        for i in range(n):
            record: dict[str, Any] = {
                "id": int(rng.integers(0, 2**40)),
                "tags": bytes_feature([_text(rng) for _ in range(int(rng.integers(0, 4)))]),
            }
            if i not in missing:
                record["score"] = float(np.float32(rng.normal(0, 5)))
            records.append(serialize_example(record).hex())
        cases.append({"records": records})
    return cases


def _batch_call(func: Any, case: dict[str, Any]) -> Any:
    import tensorflow as tf

    serialized = tf.constant([bytes.fromhex(r) for r in case["records"]])
    result = guarded(func, serialized)
    if not isinstance(result, dict) or "raised" in result:
        return result if isinstance(result, dict) else {"type": type(result).__name__}
    out: dict[str, Any] = {}
    for key, value in result.items():
        if isinstance(value, tf.SparseTensor):
            out[key] = {"sparse": True}
        elif isinstance(value, tf.RaggedTensor):
            out[key] = {"ragged": value.to_list()}
        elif hasattr(value, "numpy"):
            out[key] = {"dense": np.asarray(value.numpy())}
        else:
            out[key] = {"other": type(value).__name__}
    return {"parsed": out}


def _batch_verify(case: dict[str, Any], result: Any) -> None:
    from helpers.features import example_to_dict

    records = [example_to_dict(bytes.fromhex(r)) for r in case["records"]]
    if "raised" in result:
        raise CheckFailed(f"parse_batch raised {result['raised']}")
    if "type" in result:
        raise CheckFailed(
            f"parse_batch returned a {result['type']}; return the dict parse_example gives"
        )
    parsed = result["parsed"]
    for key in ("id", "score", "tags"):
        if key not in parsed:
            raise CheckFailed(f"the result has no {key!r} (it has {sorted(parsed)})")
    ids = parsed["id"].get("dense")
    if ids is None or ids.tolist() != [r["id"][0] for r in records]:
        raise CheckFailed("'id' must be a dense int64 tensor with one id per record, in order")
    scores = parsed["score"].get("dense")
    want_scores = [r["score"][0] if "score" in r else -1.0 for r in records]
    if scores is None:
        raise CheckFailed("'score' must be a dense float32 tensor (FixedLenFeature with a default)")
    if scores.shape != (len(records),):
        raise CheckFailed(f"'score' has shape {scores.shape}, expected ({len(records)},)")
    for i, (got, want) in enumerate(zip(scores.tolist(), want_scores, strict=True)):
        if got != want:
            if "score" not in records[i]:
                raise CheckFailed(
                    f"record {i} has no score: expected the default -1.0, got {got}",
                    "tf.io.FixedLenFeature([], tf.float32, default_value=-1.0)",
                )
            raise CheckFailed(f"record {i}: score {got}, expected {want}")
    tags = parsed["tags"]
    if "sparse" in tags:
        raise CheckFailed(
            "'tags' is a SparseTensor (that is what VarLenFeature gives); use "
            "tf.io.RaggedFeature(tf.string) to get a RaggedTensor"
        )
    if "ragged" not in tags:
        raise CheckFailed("'tags' must be a tf.RaggedTensor (one row of strings per record)")
    want_tags = [r.get("tags", []) for r in records]
    if tags["ragged"] != want_tags:
        raise CheckFailed(f"'tags' is {tags['ragged']!r}, expected {want_tags!r}")


register(
    Exercise(
        key="03.parse_batch",
        target="parse_batch",
        title="parse a batch: fixed id, score with a default, ragged tags",
        make_cases=_batch_cases,
        verify=_batch_verify,
        call=_batch_call,
        hint="one batched parse with a feature spec: a fixed-length feature for what every "
        "record has, a default_value for what some records miss, a ragged feature for "
        "lists of varying length.",
    )
)
