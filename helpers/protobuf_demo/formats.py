"""The same image records as protobuf, JSON and XML (lesson 01's comparison)."""

from __future__ import annotations

import functools
import json
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from helpers.protobuf_demo.schemas import build_messages

#: The lesson's schema: an image's metadata, as a converter would record it.
IMAGE_RECORD_PROTO = """\
syntax = "proto3";
package course;

// One image's metadata, as a dataset converter would record it.
message ImageRecord {
  int64 id = 1;
  string filename = 2;
  int32 label = 3;            // class index
  double score = 4;           // annotator confidence
  repeated int32 bbox = 5;    // x, y, width, height in pixels (packed)
  repeated string tags = 6;
  bool verified = 7;
  int64 taken_at_ms = 8;      // Unix time in milliseconds
}

message ImageRecords {
  repeated ImageRecord records = 1;
}
"""

_TAGS = ("outdoor", "indoor", "blurry", "night", "crowd", "close-up", "animal", "vehicle")


def image_record_classes(pool: Any = None) -> tuple[type, type]:
    """``(ImageRecord, ImageRecords)`` built from :data:`IMAGE_RECORD_PROTO` (new pool each call)."""
    classes = build_messages(IMAGE_RECORD_PROTO, "course/image_record.proto", pool)
    return classes["ImageRecord"], classes["ImageRecords"]


def make_image_records(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` plausible image-metadata dicts (every field of ``ImageRecord``), deterministic.

    Floats are rounded to 4 decimals so every format can round-trip them exactly.
    """
    rng = np.random.default_rng(seed)
    records = []
    for i in range(n):
        w, h = (int(v) for v in rng.integers(16, 320, size=2))
        records.append(
            {
                "id": 1_000_000 + i,
                "filename": f"train/class_{int(rng.integers(0, 1000)):03d}/img_{i:06d}.jpg",
                "label": int(rng.integers(0, 1000)),
                "score": round(float(rng.random()), 4),
                "bbox": [int(rng.integers(0, 320)), int(rng.integers(0, 320)), w, h],
                "tags": [
                    str(t) for t in rng.choice(_TAGS, size=int(rng.integers(0, 4)), replace=False)
                ],
                "verified": bool(rng.random() < 0.5),
                "taken_at_ms": 1_600_000_000_000 + int(rng.integers(0, 10**11)),
            }
        )
    return records


def records_to_message(records: Sequence[dict[str, Any]], container_cls: type) -> Any:
    """Build the container message (``ImageRecords``) from dicts."""
    container = container_cls()
    item_cls = message_factory.GetMessageClass(
        container.DESCRIPTOR.fields_by_name["records"].message_type
    )
    container.records.extend(item_cls(**r) for r in records)
    return container


def message_to_record(message: Any) -> dict[str, Any]:
    """One message -> a dict with every field (repeated fields as lists), like ``json.loads`` gives."""
    return {
        name: list(getattr(message, name)) if repeated else getattr(message, name)
        for name, repeated in _field_layout(message.DESCRIPTOR)
    }


@functools.lru_cache(maxsize=256)
def _field_layout(descriptor: Descriptor) -> tuple[tuple[str, bool], ...]:
    return tuple((f.name, f.is_repeated) for f in descriptor.fields)


def to_json(records: Sequence[dict[str, Any]]) -> bytes:
    """A JSON array, compact separators (the smallest JSON the ``json`` module writes)."""
    return json.dumps(records, separators=(",", ":")).encode("utf-8")


def from_json(data: bytes) -> list[dict[str, Any]]:
    """Inverse of :func:`to_json`."""
    return json.loads(data)


def _xml_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def to_xml(records: Sequence[dict[str, Any]], root: str = "records", item: str = "record") -> bytes:
    """An XML document: one element per record, one child element per value.

    Repeated values become repeated child elements (``<tags>a</tags><tags>b</tags>``),
    the usual XML mapping of a list.
    """
    top = ET.Element(root)
    for record in records:
        node = ET.SubElement(top, item)
        for key, value in record.items():
            for v in value if isinstance(value, list) else [value]:
                ET.SubElement(node, key).text = _xml_text(v)
    return ET.tostring(top, encoding="utf-8")


_FROM_TEXT: dict[int, Callable[[str], Any]] = {
    FieldDescriptor.TYPE_DOUBLE: float,
    FieldDescriptor.TYPE_FLOAT: float,
    FieldDescriptor.TYPE_BOOL: lambda s: s == "true",
    FieldDescriptor.TYPE_STRING: str,
}


def from_xml(data: bytes, descriptor: Descriptor) -> list[dict[str, Any]]:
    """Parse :func:`to_xml` output back to typed dicts, using a message schema for the types.

    XML carries no types: the schema says which text is an int, a float or a bool.
    """
    convert = {f.name: _FROM_TEXT.get(f.type, int) for f in descriptor.fields}
    repeated = {f.name for f in descriptor.fields if f.is_repeated}
    records = []
    for node in ET.fromstring(data):
        record: dict[str, Any] = {name: [] for name in repeated}
        for child in node:
            value = convert[child.tag](child.text or "")
            if child.tag in repeated:
                record[child.tag].append(value)
            else:
                record[child.tag] = value
        records.append(record)
    return records
