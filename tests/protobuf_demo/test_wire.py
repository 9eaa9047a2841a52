"""helpers.protobuf_demo.wire: varints, zigzag, fields by hand."""

from __future__ import annotations

import struct

import pytest

from helpers import protobuf_demo as pbd


@pytest.mark.parametrize("value", [0, 1, 127, 128, 150, 300, 2**31 - 1, 2**63, 2**64 - 1])
def test_varint_matches_protobuf(sample, value):
    Outer = pbd.build_messages('syntax = "proto3"; message V { uint64 v = 1; }', f"v{value}.proto")[
        "V"
    ]
    wire = Outer(v=value).SerializeToString()
    expected = wire[1:] if value else b""
    if value:
        assert pbd.encode_varint(value) == expected
    assert pbd.decode_varint(pbd.encode_varint(value)) == (value, len(pbd.encode_varint(value)))


def test_varint_details():
    assert pbd.encode_varint(150) == b"\x96\x01"
    assert len(pbd.encode_varint(-1)) == 10
    assert pbd.decode_varint(pbd.encode_varint(-1))[0] == 2**64 - 1
    with pytest.raises(ValueError, match="64 bits"):
        pbd.encode_varint(2**64)
    with pytest.raises(ValueError, match="truncated"):
        pbd.decode_varint(b"\x96")
    with pytest.raises(ValueError, match="longer than 10"):
        pbd.decode_varint(b"\xff" * 11)


@pytest.mark.parametrize("value", [0, -1, 1, -2, 2, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)])
def test_zigzag(value):
    encoded = pbd.zigzag_encode(value)
    assert encoded >= 0 and pbd.zigzag_decode(encoded) == value
    assert pbd.zigzag_encode(-1) == 1 and pbd.zigzag_encode(1) == 2


def test_zigzag_matches_sint64():
    V = pbd.build_messages('syntax = "proto3"; message S { sint64 v = 1; }', "s.proto")["S"]
    for value in (-1, -300, 12345, -(2**63)):
        assert V(v=value).SerializeToString()[1:] == pbd.encode_varint(pbd.zigzag_encode(value))


def test_parse_wire_and_encode_fields_are_inverse(sample):
    Outer, Inner = sample["Outer"], sample["Outer.Inner"]
    msg = Outer(name="héllo", inner=Inner(delta=-3), big=5, values=[1.0], b=b"\x00" * 200)
    data = msg.SerializeToString()
    fields = pbd.parse_wire(data)
    assert [f.number for f in fields] == [1, 2, 6, 9, 16]
    assert fields[-1].wire_type == 1 and fields[-1].value == struct.pack("<Q", 5)
    assert fields[2].value == b"\x00" * 200 and fields[0].start == 0
    assert fields[-1].end == len(data)
    assert pbd.encode_fields(f.as_tuple() for f in fields) == data


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x08", "truncated varint"),
        (b"\x12\x05ab", "truncated LEN"),
        (b"\x09\x00", "truncated I64"),
        (b"\x0b", "not supported"),
        (b"\x00\x01", "field number 0"),
    ],
)
def test_parse_wire_rejects_bad_bytes(data, message):
    with pytest.raises(ValueError, match=message):
        pbd.parse_wire(data)


def test_encode_fields_checks_fixed_sizes():
    with pytest.raises(ValueError, match="needs 4 bytes"):
        pbd.encode_fields([(1, 5, b"\x00")])
