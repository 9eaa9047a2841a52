"""helpers.protobuf_demo: the mini .proto parser, the wire-format tools, the format comparison."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from google.protobuf import json_format, text_format
from google.protobuf.message import EncodeError

from helpers import protobuf_demo as pbd
from helpers.features import Example, example_from_dict

SAMPLE = """
syntax = "proto3";
package demo;

/* a block comment */
enum Color {
  COLOR_UNSPECIFIED = 0;
  RED = 1;
  GREEN = 2;
}

message Outer {
  message Inner { sint32 delta = 1; }
  string name = 1;                 // a line comment
  Inner inner = 2;
  repeated Inner inners = 3;
  map<string, int64> counts = 4;
  oneof choice {
    float f = 5;
    bytes b = 6;
  }
  optional int32 maybe = 7;
  Color color = 8;
  repeated double values = 9;
  fixed64 big = 16;
  reserved 10, 11;
}
"""


@pytest.fixture(scope="module")
def sample():
    return pbd.build_messages(SAMPLE, "sample.proto")


def test_build_messages_gives_working_classes(sample):
    Outer, Inner = sample["Outer"], sample["Outer.Inner"]
    msg = Outer(name="x", inner=Inner(delta=-3), color=2, values=[1.5, 2.5], big=2**64 - 1)
    msg.inners.add(delta=4)
    msg.counts["a"] = 7
    msg.f = 0.25
    msg.maybe = 0
    back = Outer.FromString(msg.SerializeToString())
    assert back == msg
    assert back.WhichOneof("choice") == "f"
    assert back.HasField("maybe") and back.maybe == 0
    with pytest.raises(ValueError, match="presence"):
        back.HasField("name")
    assert Outer.DESCRIPTOR.fields_by_name["color"].enum_type.values_by_number[2].name == "GREEN"


def test_proto3_optional_gets_a_synthetic_oneof(sample):
    desc = sample["Outer"].DESCRIPTOR
    assert [o.name for o in desc.oneofs] == ["choice", "_maybe"]


def test_proto2_defaults_required_and_packed():
    src = """
    syntax = "proto2";
    package p2;
    message R {
      required string sensor = 1;
      optional int32 level = 2 [default = -1];
      optional string unit = 3 [default = "C"];
      repeated int32 samples = 4 [packed = true];
      repeated int32 loose = 5;
    }
    """
    R = pbd.build_messages(src, "p2.proto")["R"]
    r = R()
    assert r.level == -1 and r.unit == "C" and not r.HasField("level")
    assert not r.IsInitialized()
    with pytest.raises(EncodeError, match="sensor"):
        r.SerializeToString()
    r.sensor, r.level = "t", 0
    r.samples.extend([1, 2])
    r.loose.extend([1, 2])
    data = r.SerializeToString()
    assert b"\x10\x00" in data  # an explicitly set 0 is written in proto2
    assert b"\x22\x02\x01\x02" in data  # packed: one LEN field
    assert b"\x28\x01\x28\x02" in data  # not packed: one key per element


@pytest.mark.parametrize(
    "source, message",
    [
        ('syntax = "proto2"; message M { int32 x = 1; }', "needs optional, required or repeated"),
        ('syntax = "proto3"; message M { required int32 x = 1; }', "no required"),
        ('syntax = "proto3"; message M { int32 x = 1 [default = 3]; }', "no custom defaults"),
        ('syntax = "proto3"; message M { Missing x = 1; }', "unknown type 'Missing'"),
        ('syntax = "proto3"; message M { int32 x = 1; int32 y = 1; }', "used twice"),
        ('syntax = "proto3"; message M { int32 x = 0; }', "not allowed"),
        ('syntax = "proto3"; import "other.proto";', "not supported"),
        ('syntax = "proto3"; message M { int32 x = 1 }', "expected ';'"),
        ('syntax = "proto4";', "proto2 or proto3"),
        ('syntax = "proto3"; enum E { A = 1; }', "first value must be 0"),
    ],
)
def test_parser_names_the_problem(source, message):
    with pytest.raises(pbd.ProtoSyntaxError, match=message):
        pbd.parse_proto(source, "bad.proto")


def test_parser_reports_the_line():
    with pytest.raises(pbd.ProtoSyntaxError, match="line 3"):
        pbd.parse_proto('syntax = "proto3";\nmessage M {\n  int32 x = ;\n}\n', "bad.proto")


def test_proto_source_round_trips_tf_example():
    descs = [
        Example.DESCRIPTOR,
        *(
            Example.DESCRIPTOR.file.pool.FindMessageTypeByName(f"tensorflow.{n}")
            for n in ("Features", "Feature", "BytesList", "FloatList", "Int64List")
        ),
    ]
    source = pbd.proto_source(*descs)
    assert "map<string, Feature> feature = 1;" in source
    assert "oneof kind {" in source
    assert "repeated float value = 1 [packed = true];" in source
    mine = pbd.build_messages(source, "my_example.proto")["Example"]
    ex = example_from_dict({"label": 7, "name": "cat", "xy": [0.5, -1.25]})
    data = ex.SerializeToString(deterministic=True)
    assert mine.FromString(data).SerializeToString(deterministic=True) == data
    assert text_format.MessageToString(mine.FromString(data)) == text_format.MessageToString(ex)


def test_proto_source_of_a_file_round_trips(sample):
    source = pbd.proto_source(sample["Outer"].DESCRIPTOR.file)
    again = pbd.build_messages(source, "again.proto")
    assert set(again) == set(sample)
    assert pbd.proto_source(again["Outer"].DESCRIPTOR.file) == source


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


def test_annotate_names_fields_and_decodes_values():
    ImageRecord, _ = pbd.image_record_classes()
    r = ImageRecord(id=150, filename="cat.jpg", score=0.5, bbox=[10, 300], verified=True)
    text = pbd.annotate(r.SerializeToString(), ImageRecord.DESCRIPTOR)
    lines = text.splitlines()
    assert lines[0].startswith("0000  08 96 01") and "(id)" in lines[0] and lines[0].endswith("150")
    assert "'cat.jpg' (7 bytes)" in text
    assert "packed [10, 300]" in text
    assert "0.5" in text and "true" in text
    plain = pbd.annotate(r.SerializeToString())
    assert "(id)" not in plain and "VARINT 150" in plain


def test_annotate_recurses_into_tf_example():
    ex = example_from_dict({"depth": 1, "n": [-1]})
    text = pbd.annotate(ex.SerializeToString(deterministic=True), Example.DESCRIPTOR)
    assert "Features message" in text and "FeatureEntry message" in text
    assert "'depth' (5 bytes)" in text
    assert "packed [-1]" in text


def test_make_image_records_is_deterministic_and_fits_the_schema():
    a, b = pbd.make_image_records(20, seed=3), pbd.make_image_records(20, seed=3)
    assert a == b and a != pbd.make_image_records(20, seed=4)
    ImageRecord, ImageRecords = pbd.image_record_classes()
    msg = pbd.records_to_message(a, ImageRecords)
    assert [pbd.message_to_record(m) for m in msg.records] == a


def test_json_and_xml_round_trip():
    records = pbd.make_image_records(30, seed=1)
    ImageRecord, _ = pbd.image_record_classes()
    assert pbd.from_json(pbd.to_json(records)) == records
    xml = pbd.to_xml(records)
    assert xml.startswith(b"<records><record><id>")
    assert pbd.from_xml(xml, ImageRecord.DESCRIPTOR) == records


def test_compare_formats_sizes_and_ratios():
    results = pbd.compare_formats(pbd.make_image_records(200), repeat=2, min_seconds=0.001)
    by_name = {r.name.split(" ")[0] + (" msg" if "message" in r.name else ""): r for r in results}
    assert by_name["protobuf"].size == by_name["protobuf msg"].size
    assert by_name["protobuf"].size < by_name["JSON"].size < by_name["XML"].size
    assert all(r.encode_s > 0 and r.decode_s > 0 for r in results)
    table = pbd.format_table(results)
    assert "XML (ElementTree)" in table and "1.0×" in table


def test_best_time_is_positive_and_small():
    seconds = pbd.best_time(lambda: sum(range(100)), repeat=2, min_seconds=0.001)
    assert 0 < seconds < 0.01


def test_json_format_matches_the_lesson_claims():
    ImageRecord, _ = pbd.image_record_classes()
    r = ImageRecord(id=5, taken_at_ms=2**60, label=0)
    text = json_format.MessageToJson(r, indent=None)
    assert '"takenAtMs": "1152921504606846976"' in text and "label" not in text
    assert json_format.Parse(text, ImageRecord()) == r


def test_cli_annotate_and_compare(tmp_path, capsys):
    proto = tmp_path / "r.proto"
    proto.write_text(pbd.IMAGE_RECORD_PROTO)
    assert pbd.main(["annotate", "089601", "--proto", str(proto), "--message", "ImageRecord"]) == 0
    assert "(id)" in capsys.readouterr().out
    assert pbd.main(["annotate", "0896"]) == 1
    assert pbd.main(["annotate", "08", "--proto", str(proto), "--message", "Nope"]) == 2
    assert pbd.main(["compare", "--records", "50"]) == 0
    assert "protobuf" in capsys.readouterr().out


def test_numpy_ints_work_in_records():
    ImageRecord, _ = pbd.image_record_classes()
    r = ImageRecord(id=np.int64(3), label=np.int32(2))
    assert pbd.message_to_record(r)["id"] == 3
