"""Lesson 01 exercises: the solutions pass, stubs fail, planted mistakes are named."""

from __future__ import annotations

import pytest
from google.protobuf import json_format

from helpers import exercises as ex
from helpers.exercises import CheckFailed
from helpers.protobuf_demo import image_record_classes
from lesson_suite import exercise_suite

ImageRecord, _ = image_record_classes()


# -- the solutions, as in solutions/01_protobuf_basics.ipynb ------------------


def encode_varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _decode_varint(data, pos):
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def decode_fields(data):
    fields, pos = [], 0
    while pos < len(data):
        key, pos = _decode_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = _decode_varint(data, pos)
        elif wire_type == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire_type == 5:
            value, pos = data[pos : pos + 4], pos + 4
        elif wire_type == 2:
            length, pos = _decode_varint(data, pos)
            value, pos = data[pos : pos + length], pos + length
        else:
            raise ValueError(f"unsupported wire type {wire_type}")
        fields.append((number, wire_type, value))
    return fields


def json_to_protobuf(json_text):
    return json_format.Parse(json_text, ImageRecord()).SerializeToString()


SOLUTIONS = {
    "01.encode_varint": encode_varint,
    "01.decode_fields": decode_fields,
    "01.json_to_protobuf": json_to_protobuf,
}


test_lesson_has_its_exercises_in_order, test_solution_passes_on_fresh_inputs, test_stub_fails = (
    exercise_suite("01", SOLUTIONS)
)


@pytest.mark.parametrize("seed", range(5))
def test_solutions_pass_on_many_draws(seed):
    for key, func in SOLUTIONS.items():
        ex.check(key, func, seed=seed)


# -- planted mistakes ---------------------------------------------------------


def varint_big_endian(value):
    groups = []
    while True:
        groups.append(value & 0x7F)
        value >>= 7
        if not value:
            break
    groups.reverse()
    return bytes([g | 0x80 for g in groups[:-1]] + [groups[-1]])


def varint_no_continuation(value):
    out = bytearray()
    while True:
        out.append(value & 0x7F)
        value >>= 7
        if not value:
            return bytes(out)


def varint_always_continuation(value):
    return bytes(b | 0x80 for b in encode_varint(value))


def varint_list(value):
    return list(encode_varint(value))


@pytest.mark.parametrize(
    "func, message",
    [
        (varint_big_endian, "wrong order"),
        (varint_no_continuation, "continuation bit is missing"),
        (varint_always_continuation, "last byte must not have the continuation bit"),
        (varint_list, "not bytes"),
    ],
)
def test_varint_mistakes_are_named(func, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("01.encode_varint", func)


def _fields_with(data, wire_mask=7, one_byte_key=False, keep_prefix=False):
    fields, pos = [], 0
    while pos < len(data):
        if one_byte_key:
            key = data[pos]
            pos += 1
            real_key, pos_after = _decode_varint(data, pos - 1)
            pos = pos_after  # advance correctly so the rest still parses
        else:
            key, pos = _decode_varint(data, pos)
            real_key = key
        number, wire_type = (key & 0x7F) >> 3 if one_byte_key else key >> 3, key & wire_mask
        real_type = real_key & 7
        start = pos
        if real_type == 0:
            value, pos = _decode_varint(data, pos)
        elif real_type in (1, 5):
            size = 8 if real_type == 1 else 4
            value, pos = data[pos : pos + size], pos + size
        else:
            length, pos = _decode_varint(data, pos)
            value, pos = data[pos : pos + length], pos + length
            if keep_prefix:
                value = data[start:pos]
        fields.append((number, wire_type, value))
    return fields


@pytest.mark.parametrize(
    "func, message",
    [
        (lambda d: _fields_with(d, wire_mask=3), r"key & 7"),
        (lambda d: _fields_with(d, one_byte_key=True), "two or more bytes"),
        (lambda d: _fields_with(d, keep_prefix=True), "length prefix"),
        (lambda d: decode_fields(d)[:-1], "found .* fields, the message has"),
        (lambda d: {"fields": decode_fields(d)}, "return a list"),
    ],
)
def test_decode_fields_mistakes_are_named(func, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("01.decode_fields", func)


def json_as_text(json_text):
    return json_text.encode("utf-8")


def json_by_hand(json_text):
    import json

    return ImageRecord(**json.loads(json_text)).SerializeToString()


def json_returns_message(json_text):
    return json_format.Parse(json_text, ImageRecord())


def json_drops_tags(json_text):
    msg = json_format.Parse(json_text, ImageRecord())
    del msg.tags[:]
    msg.tags.append("oops")
    return msg.SerializeToString()


@pytest.mark.parametrize(
    "func, message",
    [
        (json_as_text, "JSON text, not protobuf wire bytes"),
        (json_by_hand, "raised TypeError.*camelCase"),
        (json_returns_message, "not bytes"),
        (json_drops_tags, "field 'tags'"),
    ],
)
def test_json_mistakes_are_named(func, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("01.json_to_protobuf", func)


# -- issue 13: helpers as oracles, messages ---------------------------------------


def test_wrapping_the_course_encoder_is_not_an_answer():
    from helpers import protobuf_demo

    def wrapper(value):
        return protobuf_demo.encode_varint(value)

    with pytest.raises(CheckFailed, match=r"encode_varint is switched off.*use your own code"):
        ex.check("01.encode_varint", wrapper, seed=3)
    assert protobuf_demo.encode_varint(300) == b"\xac\x02"  # restored after the check


def test_wrapping_the_course_wire_parser_is_not_an_answer():
    from helpers.protobuf_demo import parse_wire

    def decode_fields(data):
        return [f.as_tuple() for f in parse_wire(data)]

    with pytest.raises(CheckFailed, match=r"parse_wire is switched off"):
        ex.check("01.decode_fields", decode_fields, seed=3)


def test_no_bytes_for_zero_is_shown_as_no_bytes():
    def skips_zero(value):
        out = bytearray()
        while value:
            out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
            value >>= 7
        return bytes(out)

    with pytest.raises(CheckFailed) as info:
        ex.check("01.encode_varint", skips_zero, seed=3)
    message = str(info.value)
    assert "gave b'' (no bytes at all), expected 00" in message
    assert "gave , expected" not in message
