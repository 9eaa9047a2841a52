"""Protocol buffers in lesson 01: schemas compiled by protoc, wire bytes by hand, format sizes.

Lesson 01 uses this package to show what a protocol buffer *is* before
``tf.train.Example`` turns out to be one (``from helpers import protobuf_demo as pbd``):

=============  ===============================================================
``schemas``    :func:`build_messages` / :func:`parse_proto`: ``.proto`` text
               compiled by the real ``protoc`` (bundled with ``grpcio-tools``)
               into descriptors and message classes, at run time
``render``     :func:`proto_source` renders any descriptor (``tf.train.Example``'s
               included) back to ``.proto`` text; :func:`field_table`
``wire``       :func:`encode_varint`, :func:`decode_varint`, :func:`zigzag_encode`,
               :func:`parse_wire`, :func:`encode_fields`: the wire format byte by byte
``annotate``   :func:`annotate`: an annotated hex dump of a message
``formats``    the lesson's ``ImageRecord`` schema and records as protobuf, JSON, XML
``compare``    :func:`compare_formats`: their sizes and speeds (:func:`best_time`)
``cli``        ``python -m helpers.protobuf_demo annotate HEX [--proto F --message M]``
               and ``python -m helpers.protobuf_demo compare [--records N]``
=============  ===============================================================
"""

from __future__ import annotations

from helpers.protobuf_demo.annotate import annotate
from helpers.protobuf_demo.cli import main
from helpers.protobuf_demo.compare import FormatResult, best_time, compare_formats, format_table
from helpers.protobuf_demo.formats import (
    IMAGE_RECORD_PROTO,
    from_json,
    from_xml,
    image_record_classes,
    make_image_records,
    message_to_record,
    records_to_message,
    to_json,
    to_xml,
)
from helpers.protobuf_demo.render import field_table, proto_source
from helpers.protobuf_demo.schemas import ProtoSyntaxError, build_file, build_messages, parse_proto
from helpers.protobuf_demo.wire import (
    WIRE_TYPES,
    WireField,
    decode_varint,
    encode_fields,
    encode_varint,
    field_key,
    parse_wire,
    zigzag_decode,
    zigzag_encode,
)

__all__ = [
    "IMAGE_RECORD_PROTO",
    "WIRE_TYPES",
    "FormatResult",
    "ProtoSyntaxError",
    "WireField",
    "annotate",
    "best_time",
    "build_file",
    "build_messages",
    "compare_formats",
    "decode_varint",
    "encode_fields",
    "encode_varint",
    "field_key",
    "field_table",
    "format_table",
    "from_json",
    "from_xml",
    "image_record_classes",
    "main",
    "make_image_records",
    "message_to_record",
    "parse_proto",
    "parse_wire",
    "proto_source",
    "records_to_message",
    "to_json",
    "to_xml",
    "zigzag_decode",
    "zigzag_encode",
]
