"""The wire format by hand: varints, zigzag, field keys, and a message as a list of fields."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

#: Wire types: the low three bits of every field key.
WIRE_TYPES: dict[int, str] = {0: "VARINT", 1: "I64", 2: "LEN", 3: "SGROUP", 4: "EGROUP", 5: "I32"}


def encode_varint(value: int) -> bytes:
    """Base-128 varint: 7 bits per byte, least significant group first, top bit = "more".

    Args:
      value: ``0 <= value < 2**64``; a negative value is encoded as its 64-bit two's
        complement (10 bytes), which is what an ``int64`` field does with it.

    Returns:
      1 to 10 bytes.
    """
    if value < 0:
        value += 1 << 64
    if not 0 <= value < 1 << 64:
        raise ValueError(f"{value} does not fit in 64 bits")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def decode_varint(data: bytes, pos: int = 0) -> tuple[int, int]:
    """Decode one varint starting at ``data[pos]``.

    Returns:
      ``(value, position after it)``; ``value`` is unsigned (0..2**64-1).

    Raises:
      ValueError: truncated, or longer than 10 bytes.
    """
    result = shift = 0
    start = pos
    while True:
        if pos >= len(data):
            raise ValueError(f"truncated varint at byte {start}")
        byte = data[pos]
        result |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return result & ((1 << 64) - 1), pos
        shift += 7
        if shift >= 70:
            raise ValueError(f"varint at byte {start} is longer than 10 bytes")


def zigzag_encode(value: int) -> int:
    """``sint32``/``sint64``: map 0, -1, 1, -2, ... to 0, 1, 2, 3, ... so small negatives stay short."""
    return (value << 1) ^ (value >> 63) if value < 0 else value << 1


def zigzag_decode(value: int) -> int:
    """Inverse of :func:`zigzag_encode`."""
    return (value >> 1) ^ -(value & 1)


def field_key(number: int, wire_type: int) -> bytes:
    """The varint that starts every field: ``number << 3 | wire_type``."""
    return encode_varint(number << 3 | wire_type)


@dataclass(frozen=True)
class WireField:
    """One field as it sits on the wire.

    Attributes:
      number: the field number from the schema.
      wire_type: 0 VARINT, 1 I64, 2 LEN, 5 I32.
      value: an ``int`` for VARINT; the raw 8 / 4 bytes for I64 / I32; the
        payload (without its length prefix) for LEN.
      start: offset of the field's key in the buffer.
      end: offset just past the field.
    """

    number: int
    wire_type: int
    value: int | bytes
    start: int
    end: int

    def as_tuple(self) -> tuple[int, int, int | bytes]:
        return (self.number, self.wire_type, self.value)


def parse_wire(data: bytes, base: int = 0) -> list[WireField]:
    """Split a serialized message into its fields, without any schema.

    Args:
      data: wire-format bytes.
      base: added to every offset (for nested messages).

    Returns:
      The fields in wire order (repeated fields appear once per element unless packed).

    Raises:
      ValueError: truncated data, a group, or an unknown wire type.
    """
    fields = []
    pos = 0
    while pos < len(data):
        start = pos
        key, pos = decode_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise ValueError(f"field number 0 at byte {base + start}: not a protobuf message")
        value: int | bytes
        if wire_type == 0:
            value, pos = decode_varint(data, pos)
        elif wire_type in (1, 5):
            size = 8 if wire_type == 1 else 4
            value = bytes(data[pos : pos + size])
            if len(value) < size:
                raise ValueError(f"truncated {WIRE_TYPES[wire_type]} field at byte {base + start}")
            pos += size
        elif wire_type == 2:
            length, pos = decode_varint(data, pos)
            value = bytes(data[pos : pos + length])
            if len(value) < length:
                raise ValueError(f"truncated LEN field at byte {base + start}")
            pos += length
        else:
            name = WIRE_TYPES.get(wire_type, "unknown")
            raise ValueError(
                f"wire type {wire_type} ({name}) at byte {base + start} is not supported"
            )
        fields.append(WireField(number, wire_type, value, base + start, base + pos))
    return fields


def encode_fields(fields: Iterable[Sequence[Any]]) -> bytes:
    """The inverse of :func:`parse_wire`: ``(number, wire_type, value)`` triples -> bytes.

    Args:
      fields: triples; VARINT values are ints, I64 / I32 values 8 / 4 raw bytes,
        LEN values the payload bytes.

    Returns:
      The serialized message.
    """
    out = bytearray()
    for number, wire_type, value in fields:
        out += field_key(number, wire_type)
        if wire_type == 0:
            out += encode_varint(int(value))
        elif wire_type in (1, 5):
            if len(value) != (8 if wire_type == 1 else 4):
                raise ValueError(
                    f"field {number}: {WIRE_TYPES[wire_type]} needs {8 if wire_type == 1 else 4} bytes"
                )
            out += value
        elif wire_type == 2:
            out += encode_varint(len(value)) + bytes(value)
        else:
            raise ValueError(f"field {number}: wire type {wire_type} is not supported")
    return bytes(out)
