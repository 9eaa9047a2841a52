"""An annotated hex dump of a serialized message: :func:`annotate`."""

from __future__ import annotations

import struct
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from helpers.protobuf_demo.wire import (
    WIRE_TYPES,
    decode_varint,
    encode_varint,
    parse_wire,
    zigzag_decode,
)


def _hex(raw: bytes, limit: int = 12) -> str:
    shown = " ".join(f"{b:02x}" for b in raw[:limit])
    return shown + (" …" if len(raw) > limit else "")


_I32 = {
    FieldDescriptor.TYPE_FLOAT: "<f",
    FieldDescriptor.TYPE_FIXED32: "<I",
    FieldDescriptor.TYPE_SFIXED32: "<i",
}
_I64 = {
    FieldDescriptor.TYPE_DOUBLE: "<d",
    FieldDescriptor.TYPE_FIXED64: "<Q",
    FieldDescriptor.TYPE_SFIXED64: "<q",
}
_SIGNED_VARINT = {FieldDescriptor.TYPE_INT32: 32, FieldDescriptor.TYPE_INT64: 64}


def _varint_value(value: int, field: FieldDescriptor | None) -> str:
    if field is None:
        return str(value)
    if field.type in (FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SINT64):
        return f"{zigzag_decode(value)}  (zigzag {value})"
    if field.type in _SIGNED_VARINT and value >= 1 << 63:
        return f"{value - (1 << 64)}  (two's complement)"
    if field.type == FieldDescriptor.TYPE_BOOL:
        return "true" if value else "false"
    if field.type == FieldDescriptor.TYPE_ENUM:
        enum_value = field.enum_type.values_by_number.get(value)
        return f"{enum_value.name} ({value})" if enum_value else str(value)
    return str(value)


def _packed_values(payload: bytes, field: FieldDescriptor) -> list[Any]:
    if field.type in _I32 or field.type in _I64:
        fmt = _I32.get(field.type) or _I64[field.type]
        size = struct.calcsize(fmt)
        return [struct.unpack(fmt, payload[i : i + size])[0] for i in range(0, len(payload), size)]
    values, pos = [], 0
    while pos < len(payload):
        raw, pos = decode_varint(payload, pos)
        values.append(_varint_value(raw, field).split("  ")[0])
    return values


def _short(values: list[Any], limit: int = 6) -> str:
    shown = ", ".join(f"{v:.7g}" if isinstance(v, float) else str(v) for v in values[:limit])
    return f"[{shown}{', …' if len(values) > limit else ''}]"


def annotate(
    data: bytes, descriptor: Descriptor | None = None, _base: int = 0, _depth: int = 0
) -> str:
    """An annotated hex dump: one line per field, nested messages indented.

    Args:
      data: wire-format bytes.
      descriptor: the message's descriptor (``Message.DESCRIPTOR``) to name fields
        and decode values by type; without it only the wire structure is shown.

    Returns:
      Lines ``offset  bytes  field N (name)  WIRETYPE  value``.
    """
    lines = []
    pad = "  " * _depth
    for wf in parse_wire(data, _base):
        field = descriptor.fields_by_number.get(wf.number) if descriptor is not None else None
        raw = b""  # the key and any length prefix, shown in hex
        head = encode_varint(wf.number << 3 | wf.wire_type)
        name = f"{wf.number} ({field.name})" if field is not None else str(wf.number)
        nested = None
        if wf.wire_type == 0:
            raw = head + encode_varint(int(wf.value))  # type: ignore[arg-type]
            shown = _varint_value(int(wf.value), field)  # type: ignore[arg-type]
        elif wf.wire_type in (1, 5):
            raw = head + wf.value  # type: ignore[operator]
            fmt = None
            if field is not None:
                fmt = (_I64 if wf.wire_type == 1 else _I32).get(field.type)
            if fmt:
                shown = (
                    f"{struct.unpack(fmt, wf.value)[0]:.9g}"
                    if fmt in ("<f", "<d")
                    else str(struct.unpack(fmt, wf.value)[0])
                )  # type: ignore[arg-type]
            else:
                shown = f"raw {wf.value.hex()}"  # type: ignore[union-attr]
        else:
            payload: bytes = wf.value  # type: ignore[assignment]
            raw = head + encode_varint(len(payload)) + payload
            ftype = field.type if field is not None else None
            if ftype == FieldDescriptor.TYPE_STRING:
                shown = f"{payload.decode('utf-8', 'replace')!r} ({len(payload)} bytes)"
            elif ftype == FieldDescriptor.TYPE_MESSAGE:
                shown = f"{field.message_type.name} message ({len(payload)} bytes):"  # type: ignore[union-attr]
                nested = (payload, field.message_type)  # type: ignore[union-attr]
            elif field is not None and ftype != FieldDescriptor.TYPE_BYTES:
                shown = f"packed {_short(_packed_values(payload, field))}"
            else:
                preview = payload[:16]
                shown = f"{preview!r}{'…' if len(payload) > 16 else ''} ({len(payload)} bytes)"
        lines.append(
            f"{wf.start:04x}  {pad}{_hex(raw):<38} field {name:<18} {WIRE_TYPES[wf.wire_type]:<6} {shown}"
        )
        if nested is not None:
            start = wf.end - len(nested[0])
            lines.append(annotate(nested[0], nested[1], start, _depth + 1))
    return "\n".join(line for line in lines if line)
