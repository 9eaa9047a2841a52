"""Lesson 01 exercises: varints, the wire format by hand, JSON -> protobuf bytes.

Cases hold only inputs; every expected answer is recomputed here, in the
checker's process, from those inputs (with :mod:`helpers.protobuf_demo`,
whose encoders are tested against the protobuf library itself).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from helpers.exercises import CheckFailed, Exercise, register
from helpers.protobuf_demo import (
    WIRE_TYPES,
    encode_fields,
    encode_varint,
    image_record_classes,
    make_image_records,
    message_to_record,
    parse_wire,
)

# ---------------------------------------------------------------------------
# 01.encode_varint
# ---------------------------------------------------------------------------


def _varint_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    values = [0, 1, 127, 128, int(rng.integers(129, 16384))]
    for bits in (21, 32, 49, 63):
        values.append(int(rng.integers(1 << (bits - 7), 1 << bits, dtype=np.uint64)))
    values.append(int(rng.integers(1 << 63, (1 << 64) - 1, dtype=np.uint64, endpoint=True)))
    return [{"value": v} for v in values]


def _groups(value: int) -> list[int]:
    out = []
    while True:
        out.append(value & 0x7F)
        value >>= 7
        if not value:
            return out


def _hex(data: bytes) -> str:
    """Bytes as hex pairs; no bytes at all shown as such (not as an empty string)."""
    return data.hex(" ") if data else "b'' (no bytes at all)"


def _varint_verify(case: dict[str, Any], result: Any) -> None:
    value = case["value"]
    expected = encode_varint(value)
    if not isinstance(result, bytes):
        raise CheckFailed(
            f"encode_varint({value}) returned a {type(result).__name__}, not bytes",
            "build a bytearray / list of ints and return bytes(...)",
        )
    if result == expected:
        return
    if not result:
        raise CheckFailed(
            f"encode_varint({value}) gave b'' (no bytes at all), expected {_hex(expected)}: "
            "every varint has at least one byte, 0 included",
            "take the first 7-bit group before testing whether anything is left "
            "(a `while True:` loop, or `while value > 127:` plus a last byte)",
        )
    groups = _groups(value)
    most_significant_first = bytes([g | 0x80 for g in reversed(groups[1:])] + [groups[0]])
    if len(groups) > 1 and result in (most_significant_first, bytes(reversed(expected))):
        raise CheckFailed(
            f"encode_varint({value}) gave {_hex(result)}, expected {_hex(expected)}: "
            "the 7-bit groups are in the wrong order (the least significant group comes first)"
        )
    if len(groups) > 1 and result == bytes(groups):
        raise CheckFailed(
            f"encode_varint({value}) gave {_hex(result)}, expected {_hex(expected)}: "
            "the continuation bit is missing: every byte except the last needs 0x80 set"
        )
    if result and result[-1] & 0x80:
        raise CheckFailed(
            f"encode_varint({value}) gave {_hex(result)}, expected {_hex(expected)}: "
            "the last byte must not have the continuation bit (0x80) set"
        )
    raise CheckFailed(f"encode_varint({value}) gave {_hex(result)}, expected {_hex(expected)}")


register(
    Exercise(
        key="01.encode_varint",
        target="encode_varint",
        title="encode an unsigned integer as a protobuf varint",
        make_cases=_varint_cases,
        verify=_varint_verify,
        hint="loop: take value & 0x7F, shift value right by 7; if anything is left, "
        "set 0x80 on the byte you just took. 300 -> ac 02.",
        unavailable=("helpers.protobuf_demo.encode_varint",),
    )
)


# ---------------------------------------------------------------------------
# 01.decode_fields
# ---------------------------------------------------------------------------

_NUMBERS = (1, 2, 3, 5, 9, 15, 16, 17, 100, 2047, 2048, 70000)


def _random_fields(rng: np.random.Generator) -> list[tuple[int, int, Any]]:
    fields: list[tuple[int, int, Any]] = []
    for _ in range(int(rng.integers(4, 9))):
        number = int(rng.choice(_NUMBERS))
        wire_type = int(rng.choice([0, 0, 1, 2, 2, 5]))
        if wire_type == 0:
            bits = int(rng.choice([7, 14, 35, 64]))
            value: Any = int(rng.integers(0, 1 << bits, dtype=np.uint64, endpoint=False))
        elif wire_type in (1, 5):
            value = rng.bytes(8 if wire_type == 1 else 4)
        else:
            value = rng.bytes(int(rng.choice([0, 3, 40, 200])))
        fields.append((number, wire_type, value))
    # make sure every case has a two-byte key and every wire type at least once
    fields.append((int(rng.choice([16, 100, 2047])), 0, int(rng.integers(1, 1 << 20))))
    fields.append((int(rng.choice([1, 4])), 2, rng.bytes(int(rng.integers(130, 300)))))
    fields.append((int(rng.choice([3, 20])), 1, rng.bytes(8)))
    fields.append((int(rng.choice([6, 30])), 5, rng.bytes(4)))
    order = rng.permutation(len(fields))
    return [fields[i] for i in order]


def _fields_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    return [{"hex": encode_fields(_random_fields(rng)).hex()} for _ in range(5)]


def _fields_call(func: Any, case: dict[str, Any]) -> Any:
    return func(bytes.fromhex(case["hex"]))


def _norm(item: Any) -> tuple[Any, ...] | None:
    if not isinstance(item, (list, tuple)) or len(item) != 3:
        return None
    number, wire_type, value = item
    if isinstance(value, bytearray):
        value = bytes(value)
    return (number, wire_type, value)


def _fields_verify(case: dict[str, Any], result: Any) -> None:
    data = bytes.fromhex(case["hex"])
    expected = [f.as_tuple() for f in parse_wire(data)]
    if not isinstance(result, list):
        raise CheckFailed(
            f"decode_fields returned a {type(result).__name__}; return a list of "
            "(field_number, wire_type, value) tuples"
        )
    got = [_norm(item) for item in result]
    if any(g is None for g in got):
        raise CheckFailed("every item must be a (field_number, wire_type, value) triple")
    for i, (g, e) in enumerate(zip(got, expected, strict=False)):
        if g == e:
            continue
        number, wire_type, value = e
        where = f"field #{i + 1} (number {number}, {WIRE_TYPES[wire_type]})"
        if g[1] != wire_type:  # type: ignore[index]
            if g[1] == (encode_varint(number << 3 | wire_type)[0] & 3):  # type: ignore[index]
                raise CheckFailed(
                    f"{where}: wire type {g[1]}, expected {wire_type}: the wire type is the "  # type: ignore[index]
                    "low three bits of the key (key & 7), not two"
                )
            raise CheckFailed(f"{where}: wire type {g[1]}, expected {wire_type}")  # type: ignore[index]
        if g[0] != number:  # type: ignore[index]
            if number >= 16:
                raise CheckFailed(
                    f"{where}: field number {g[0]}, expected {number}: field numbers from 16 on "  # type: ignore[index]
                    "need a key of two or more bytes; decode the key as a varint, then key >> 3"
                )
            raise CheckFailed(f"{where}: field number {g[0]}, expected {number}")  # type: ignore[index]
        if wire_type == 2 and isinstance(g[2], bytes) and g[2] != value:  # type: ignore[index]
            prefixed = encode_varint(len(value)) + value
            if g[2] == prefixed:  # type: ignore[index]
                raise CheckFailed(
                    f"{where}: the value still starts with its length prefix; return only the "
                    f"{len(value)} payload bytes"
                )
            raise CheckFailed(
                f"{where}: {len(g[2])} payload bytes, expected {len(value)}: read the length "  # type: ignore[index]
                "as a varint (a LEN length of 128 or more takes two bytes)"
            )
        if wire_type in (1, 5) and not isinstance(g[2], bytes):  # type: ignore[index]
            raise CheckFailed(
                f"{where}: return the {8 if wire_type == 1 else 4} raw bytes of an "
                f"{WIRE_TYPES[wire_type]} field, not {type(g[2]).__name__}"  # type: ignore[index]
            )
        shown = value.hex(" ") if isinstance(value, bytes) else value
        raise CheckFailed(f"{where}: value {g[2]!r}, expected {shown}")  # type: ignore[index]
    if len(got) != len(expected):
        raise CheckFailed(
            f"found {len(got)} fields, the message has {len(expected)}: keep going until the "
            "last byte and do not skip or invent fields"
        )


register(
    Exercise(
        key="01.decode_fields",
        target="decode_fields",
        title="split wire bytes into (field number, wire type, value) without a schema",
        make_cases=_fields_cases,
        verify=_fields_verify,
        call=_fields_call,
        hint="read a varint key; number = key >> 3, wire type = key & 7; then a varint (0), "
        "8 raw bytes (1), a varint length + that many bytes (2) or 4 raw bytes (5). "
        "Use your encode_varint's inverse: a decode_varint(data, pos) -> (value, pos).",
        unavailable=("helpers.protobuf_demo.parse_wire",),
    )
)


# ---------------------------------------------------------------------------
# 01.json_to_protobuf
# ---------------------------------------------------------------------------


def _json_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    from google.protobuf import json_format

    record_cls, _ = image_record_classes()
    seed = int(rng.integers(0, 2**31 - 1))
    cases = []
    for record in make_image_records(4, seed=seed):
        if rng.random() < 0.5:
            record["label"] = 0  # a default value: JSON leaves it out
        record["taken_at_ms"] = int(rng.integers(2**53, 2**62))  # beyond a JS number's precision
        text = json_format.MessageToJson(record_cls(**record), indent=None)
        cases.append({"json_text": text})
    return cases


def _json_call(func: Any, case: dict[str, Any]) -> Any:
    try:
        return func(**case)
    except NotImplementedError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError) as err:
        # building an ImageRecord from json.loads(...) by hand fails here: say why
        return {"raised": f"{type(err).__name__}: {err}"}


def _json_encode(result: Any) -> Any:
    if isinstance(result, dict) and "raised" in result:
        return result
    if isinstance(result, (bytes, bytearray)):
        return {"bytes": bytes(result).hex()}
    return {"type": type(result).__name__}


def _json_verify(case: dict[str, Any], result: Any) -> None:
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError

    record_cls, _ = image_record_classes()
    expected = json_format.Parse(case["json_text"], record_cls())
    if "raised" in result:
        raise CheckFailed(
            f"your function raised {result['raised']}: protobuf's JSON mapping writes names "
            "in camelCase (takenAtMs), int64 values as strings and leaves defaults out, so "
            "json.loads + ImageRecord(**d) does not fit it"
        )
    if "bytes" not in result:
        raise CheckFailed(
            f"json_to_protobuf returned a {result['type']}, not bytes",
            "finish with message.SerializeToString()",
        )
    data = bytes.fromhex(result["bytes"])
    if data[:1] == b"{":
        raise CheckFailed(
            "these bytes are JSON text, not protobuf wire bytes",
            "parse the JSON into an ImageRecord with json_format.Parse, then SerializeToString()",
        )
    try:
        got = record_cls.FromString(data)
    except DecodeError as err:
        raise CheckFailed(f"the bytes are not a valid ImageRecord ({err})") from None
    if got != expected:
        got_record, expected_record = message_to_record(got), message_to_record(expected)
        for name, want in expected_record.items():
            if got_record[name] != want:
                raise CheckFailed(
                    f"field {name!r} is {got_record[name]!r} after decoding, the JSON says {want!r}",
                    "let json_format.Parse do the mapping (camelCase names, int64 as strings)",
                )
        raise CheckFailed("the decoded message differs from the JSON")


register(
    Exercise(
        key="01.json_to_protobuf",
        target="json_to_protobuf",
        title="turn an ImageRecord in protobuf's JSON mapping into wire bytes",
        make_cases=_json_cases,
        verify=_json_verify,
        call=_json_call,
        encode=_json_encode,
        hint="json_format.Parse(json_text, ImageRecord()) understands camelCase names "
        "(takenAtMs) and int64 values written as strings; then .SerializeToString().",
    )
)
