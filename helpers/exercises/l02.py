"""Lesson 02 exercises: the type traps of ``tf.train.Feature``.

Values that JSON cannot carry (bytes, tensors, NumPy arrays) travel as hex,
text or nested lists and are rebuilt in the student's kernel by each
exercise's ``call``; verification recomputes the expected feature here.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

import numpy as np

from helpers.exercises import CheckFailed, Exercise, guarded, register
from helpers.features import Feature, feature_kind

_KINDS = ("bytes_list", "float_list", "int64_list")


def _guarded(func: Any, *args: Any) -> Any:
    """:func:`helpers.exercises.guarded`; an OverflowError, IndexError or KeyError is data too."""
    return guarded(func, *args, catch=(TypeError, ValueError, OverflowError, IndexError, KeyError))


def _encode_feature(result: Any) -> Any:
    from helpers.exercises import to_jsonable

    if isinstance(result, dict) and "raised" in result:
        return result
    if isinstance(result, Feature):
        return {"feature": to_jsonable(result)}
    return {"type": f"{type(result).__module__}.{type(result).__name__}"}


def _feature_of(result: Any, what: str) -> Feature:
    """The Feature in an encoded result, or a CheckFailed naming what came back instead."""
    if "raised" in result:
        raise CheckFailed(f"{what} raised {result['raised']}")
    if "type" in result:
        raise CheckFailed(f"{what} returned a {result['type']}, not a tf.train.Feature")
    return result["feature"]


def _text(rng: np.random.Generator) -> str:
    pool = string.ascii_letters + string.digits + " _-" + "éüßñ猫犬☕" + "🙂"
    return "".join(rng.choice(list(pool), size=int(rng.integers(1, 12))))


# ---------------------------------------------------------------------------
# 02.bytes_feature
# ---------------------------------------------------------------------------


def _bytes_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    cases = []
    for kind in ("bytes", "str", "tensor_bytes", "tensor_str", "bytes", "str", "tensor_str"):
        if kind.endswith("bytes"):
            cases.append({"kind": kind, "hex": rng.bytes(int(rng.integers(0, 24))).hex()})
        else:
            cases.append({"kind": kind, "text": _text(rng)})
    return cases


def _bytes_value(case: dict[str, Any]) -> Any:
    raw = bytes.fromhex(case["hex"]) if "hex" in case else case["text"]
    if case["kind"].startswith("tensor"):
        import tensorflow as tf

        return tf.constant(raw)
    return raw


def _bytes_call(func: Any, case: dict[str, Any]) -> Any:
    return _guarded(func, _bytes_value(case))


def _bytes_verify(case: dict[str, Any], result: Any) -> None:
    expected = bytes.fromhex(case["hex"]) if "hex" in case else case["text"].encode("utf-8")
    shown = {
        "bytes": f"bytes {expected!r}",
        "str": f"str {case.get('text')!r}",
        "tensor_bytes": f"tf.constant({expected!r})",
        "tensor_str": f"tf.constant({case.get('text')!r})",
    }[case["kind"]]
    if "raised" in result:
        if case["kind"].startswith("tensor"):
            raise CheckFailed(
                f"bytes_feature({shown}) raised {result['raised']}: a BytesList does not unpack "
                "an EagerTensor; turn it into bytes with value.numpy() first"
            )
        if case["kind"] == "str":
            raise CheckFailed(
                f"bytes_feature({shown}) raised {result['raised']}: a BytesList holds bytes "
                "only; encode a str with value.encode('utf-8')"
            )
    feature = _feature_of(result, f"bytes_feature({shown})")
    kind = feature_kind(feature)
    if kind != "bytes_list":
        raise CheckFailed(f"bytes_feature({shown}) holds a {kind}; it must be a bytes_list")
    got = list(feature.bytes_list.value)
    if got == [expected]:
        return
    if len(got) != 1:
        raise CheckFailed(
            f"bytes_feature({shown}) holds {len(got)} values, expected one: wrap the value "
            "in a one-element list (value=[value]), do not pass the bytes themselves as the list"
        )
    if case["kind"].endswith("str") and got[0] != expected:
        raise CheckFailed(
            f"bytes_feature({shown}) stored {got[0]!r}, expected the UTF-8 bytes {expected!r}: "
            "encode text as UTF-8, the encoding tf.io / tf.strings assume"
        )
    raise CheckFailed(f"bytes_feature({shown}) stored {got[0]!r}, expected {expected!r}")


register(
    Exercise(
        key="02.bytes_feature",
        target="bytes_feature",
        title="bytes, str or a scalar string tensor -> a BytesList feature",
        make_cases=_bytes_cases,
        verify=_bytes_verify,
        call=_bytes_call,
        encode=_encode_feature,
        hint="unwrap tensors with .numpy(), encode str with .encode('utf-8'), then "
        "tf.train.Feature(bytes_list=tf.train.BytesList(value=[value])).",
    )
)


# ---------------------------------------------------------------------------
# 02.record_to_example
# ---------------------------------------------------------------------------

_RECORD_KINDS = {
    "id": "int64_list",
    "name": "bytes_list",
    "score": "float_list",
    "tags": "bytes_list",
    "verified": "int64_list",
    "taken_at_ms": "int64_list",
}


def _record_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    cases = []
    for i in range(6):
        n_tags = 0 if i in (0, 3) else int(rng.integers(1, 4))
        cases.append(
            {
                "record": {
                    "id": int(rng.integers(-(2**40), 2**62)),
                    "name": _text(rng),
                    "score": float(rng.normal(0, 100)),
                    "tags": [_text(rng) for _ in range(n_tags)],
                    "verified": bool(i % 2),
                    "taken_at": _taken_at(rng, round_up=i % 2 == 0),
                }
            }
        )
    return cases


def _taken_at(rng: np.random.Generator, round_up: bool) -> float:
    """A Unix time in seconds with a sub-millisecond part, so rounding and truncating differ.

    ``round_up``: the part is 0.6-0.9 ms (``round`` goes up, ``int`` goes down);
    otherwise 0.1-0.4 ms (both agree).
    """
    millis = int(rng.integers(1_500_000_000_000, 1_900_000_000_000))
    part = float(rng.uniform(0.6, 0.9) if round_up else rng.uniform(0.1, 0.4))
    return (millis + part) / 1000


def _expected_record(record: dict[str, Any]) -> dict[str, list[Any]]:
    return {
        "id": [record["id"]],
        "name": [record["name"].encode("utf-8")],
        "score": [float(np.float32(record["score"]))],
        "tags": [t.encode("utf-8") for t in record["tags"]],
        "verified": [int(record["verified"])],
        "taken_at_ms": [round(record["taken_at"] * 1000)],
    }


def _record_verify(case: dict[str, Any], result: Any) -> None:
    from helpers.features import Example

    record = case["record"]
    if "raised" in result:
        extra = ""
        if not record["tags"] and result.get("empty_tags"):
            extra = (
                " (this record has no tags: an empty list has no type to infer, so say "
                "bytes_list yourself)"
            )
        raise CheckFailed(f"record_to_example raised {result['raised']}{extra}")
    if "type" in result:
        raise CheckFailed(f"record_to_example returned a {result['type']}, not a tf.train.Example")
    example = result["example"]
    if not isinstance(example, Example):
        raise CheckFailed("record_to_example must return a tf.train.Example")
    features = example.features.feature
    expected = _expected_record(record)
    for key, want in expected.items():
        if key not in features:
            if key == "taken_at_ms" and "taken_at" in features:
                raise CheckFailed(
                    "feature 'taken_at_ms' is missing and 'taken_at' is there: a FloatList "
                    "rounds a Unix time to float32 (off by up to a minute); store whole "
                    "milliseconds as int64 under 'taken_at_ms'"
                )
            raise CheckFailed(f"feature {key!r} is missing (the record has keys {sorted(record)})")
        kind = feature_kind(features[key])
        want_kind = _RECORD_KINDS[key]
        if kind is None and want:
            raise CheckFailed(f"feature {key!r} is an empty Feature; it needs a {want_kind}")
        if kind is not None and kind != want_kind:
            why = {
                "float_list": "a float belongs in a FloatList",
                "int64_list": "ints and bools belong in an Int64List",
                "bytes_list": "text belongs in a BytesList (UTF-8)",
            }[want_kind]
            raise CheckFailed(f"feature {key!r} is a {kind}; {why}")
        got = list(getattr(features[key], want_kind).value)
        if got != want:
            if key == "taken_at_ms" and got and abs(got[0] - want[0]) == 1:
                raise CheckFailed(
                    f"feature 'taken_at_ms' is {got[0]}, expected {want[0]} for taken_at "
                    f"{record['taken_at']!r}: round() to the nearest millisecond, int() truncates"
                )
            raise CheckFailed(f"feature {key!r} holds {got!r}, expected {want!r}")
    extra = sorted(set(features) - set(expected))
    if extra:
        raise CheckFailed(f"unexpected feature(s) {extra}: write exactly {sorted(expected)}")


def _record_call(func: Any, case: dict[str, Any]) -> Any:
    result = _guarded(func, case["record"])
    record = case["record"]
    if isinstance(result, dict) and "raised" in result and not record["tags"]:
        # Is the empty tag list the cause? The same record with one tag tells.
        retry = _guarded(func, {**record, "tags": ["tag"]})
        result = {**result, "empty_tags": not (isinstance(retry, dict) and "raised" in retry)}
    return result


def _record_encode(result: Any) -> Any:
    from helpers.exercises import to_jsonable
    from helpers.features import Example

    if isinstance(result, dict) and "raised" in result:
        return result
    if isinstance(result, Example):
        return {"example": to_jsonable(result)}
    return {"type": f"{type(result).__module__}.{type(result).__name__}"}


register(
    Exercise(
        key="02.record_to_example",
        target="record_to_example",
        title="an image record (int, str, float, list, bool, timestamp) -> a tf.train.Example",
        make_cases=_record_cases,
        verify=_record_verify,
        call=_record_call,
        encode=_record_encode,
        hint="id -> Int64List, name -> BytesList (UTF-8), score -> FloatList, tags -> "
        "BytesList (maybe empty), verified -> Int64List 0/1, taken_at (float seconds) -> "
        "'taken_at_ms' = round(taken_at * 1000) in an Int64List.",
    )
)


# ---------------------------------------------------------------------------
# 02.uint64_feature
# ---------------------------------------------------------------------------


def _uint64_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    cases = []
    for _ in range(5):
        n = int(rng.integers(1, 7))
        low = rng.integers(0, 2**63, size=n, dtype=np.uint64)
        high = rng.integers(2**63, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True)
        values = [int(v) for v in rng.permutation(np.concatenate([low, high]))]
        cases.append({"values": values})
    cases.append({"values": [0, 2**63 - 1, 2**63, 2**64 - 1]})
    return cases


def _uint64_call(func: Any, case: dict[str, Any]) -> Any:
    return _guarded(func, list(case["values"]))


def _uint64_verify(case: dict[str, Any], result: Any) -> None:
    values = case["values"]
    if "raised" in result:
        raise CheckFailed(
            f"uint64_feature raised {result['raised']}: an Int64List refuses values above "
            "2**63-1; store the same 64 bits as int64 instead"
        )
    feature = _feature_of(result, "uint64_feature")
    kind = feature_kind(feature)
    if kind != "int64_list":
        raise CheckFailed(f"uint64_feature gave a {kind}; it must be an int64_list")
    got = list(feature.int64_list.value)
    if len(got) != len(values):
        raise CheckFailed(f"{len(got)} values stored for {len(values)} given")
    back = [int(v) for v in np.asarray(got, dtype=np.int64).view(np.uint64)]
    for value, stored, restored in zip(values, got, back, strict=True):
        if restored == value:
            continue
        if stored == 2**63 - 1:
            raise CheckFailed(
                f"{value} was stored as {stored}: clipping to 2**63-1 loses the value; "
                "reinterpret the 64 bits (two's complement) instead"
            )
        raise CheckFailed(
            f"{value} was stored as {stored}, which reads back as {restored} with "
            "np.asarray(stored, np.int64).view(np.uint64)"
        )


register(
    Exercise(
        key="02.uint64_feature",
        target="uint64_feature",
        title="store uint64 values (up to 2**64-1) losslessly in an Int64List",
        make_cases=_uint64_cases,
        verify=_uint64_verify,
        call=_uint64_call,
        encode=_encode_feature,
        hint="np.asarray(values, dtype=np.uint64).view(np.int64) keeps the bits; a reader "
        "undoes it with .view(np.uint64).",
    )
)


# ---------------------------------------------------------------------------
# 02.tensor_feature
# ---------------------------------------------------------------------------

_DTYPES = ("float32", "float64", "int32", "int64", "uint8")


def _tensor_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    cases = []
    for i, dtype in enumerate((*_DTYPES, str(rng.choice(_DTYPES)))):
        ndim = int(rng.integers(1, 4)) if i else 2  # at least one matrix: shape must survive
        shape = [int(s) for s in rng.integers(2 if i == 0 else 1, 5, size=ndim)]
        if dtype.startswith("float"):
            values = rng.normal(0, 10, size=shape).astype(dtype)
        else:
            info = np.iinfo(dtype)
            values = rng.integers(max(info.min, -(2**40)), min(info.max, 2**40), size=shape)
            values = values.astype(dtype)
        cases.append({"values": values.tolist(), "dtype": dtype})
    return cases


def _tensor_call(func: Any, case: dict[str, Any]) -> Any:
    return _guarded(func, np.asarray(case["values"], dtype=case["dtype"]))


def _tensor_verify(case: dict[str, Any], result: Any) -> None:
    import tensorflow as tf
    from google.protobuf.message import DecodeError
    from tensorflow.core.framework import tensor_pb2

    array = np.asarray(case["values"], dtype=case["dtype"])
    what = f"tensor_feature(<{array.dtype} array of shape {array.shape}>)"
    if "raised" in result:
        raise CheckFailed(
            f"{what} raised {result['raised']}",
            "tf.io.serialize_tensor returns a scalar string tensor: .numpy() gives its bytes",
        )
    feature = _feature_of(result, what)
    kind = feature_kind(feature)
    if kind != "bytes_list":
        raise CheckFailed(
            f"{what} gave a {kind}: a flat list loses the shape (and a FloatList the dtype); "
            "store tf.io.serialize_tensor(array) in a BytesList"
        )
    values = list(feature.bytes_list.value)
    if len(values) != 1:
        raise CheckFailed(f"{what} holds {len(values)} byte strings; store exactly one")
    data = values[0]
    if data == array.tobytes():
        raise CheckFailed(
            f"{what} stored array.tobytes(): raw bytes keep neither shape nor dtype; "
            "use tf.io.serialize_tensor, which writes a TensorProto with both"
        )
    try:
        proto = tensor_pb2.TensorProto.FromString(data)
        parsed = tf.make_ndarray(proto)
    except (DecodeError, TypeError, ValueError) as err:
        raise CheckFailed(
            f"{what}: the bytes are not a serialized TensorProto ({type(err).__name__}); "
            "use tf.io.serialize_tensor(array).numpy()"
        ) from None
    if parsed.dtype != array.dtype:
        raise CheckFailed(
            f"{what}: the stored tensor is {parsed.dtype}, the array was {array.dtype}; "
            "serialize the array as it is (no casting)"
        )
    if parsed.shape != array.shape:
        raise CheckFailed(
            f"{what}: the stored tensor has shape {parsed.shape}, expected {array.shape}; "
            "do not flatten before serializing"
        )
    if not np.array_equal(parsed, array):
        raise CheckFailed(f"{what}: the stored values differ from the array's")


register(
    Exercise(
        key="02.tensor_feature",
        target="tensor_feature",
        title="a NumPy array of any shape and dtype -> a BytesList feature via serialize_tensor",
        make_cases=_tensor_cases,
        verify=_tensor_verify,
        call=_tensor_call,
        encode=_encode_feature,
        hint="serialize_tensor keeps the dtype and shape that a plain tobytes() loses; a "
        "BytesList holds Python bytes, not a tensor (section 4 shows how to get them)",
    )
)
