"""helpers.protobuf_demo.schemas and render: protoc-compiled classes, errors, .proto text."""

from __future__ import annotations

import re

import pytest
from google.protobuf import text_format
from google.protobuf.message import EncodeError

from helpers import protobuf_demo as pbd
from helpers.features import Example, example_from_dict

from .support import SAMPLE


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
        ('syntax = "proto2"; message M { int32 x = 1; }', '"required", "optional", or "repeated"'),
        ('syntax = "proto3"; message M { required int32 x = 1; }', "Required fields are not"),
        ('syntax = "proto3"; message M { int32 x = 1 [default = 3]; }', "default values are not"),
        ('syntax = "proto3"; message M { Missing x = 1; }', '"Missing" is not defined'),
        ('syntax = "proto3"; message M { int32 x = 1; int32 y = 1; }', "already been used"),
        ('syntax = "proto3"; message M { int32 x = 0; }', "must be positive"),
        ('syntax = "proto3"; import "other.proto";', "other.proto: File not found"),
        ('syntax = "proto3"; message M { int32 x = 1 }', 'Expected ";"'),
        ('syntax = "proto4";', '"proto2" and "proto3"'),
        ('syntax = "proto3"; enum E { A = 1; }', "first enum value must be zero"),
    ],
)
def test_protoc_names_the_problem(source, message):
    with pytest.raises(pbd.ProtoSyntaxError, match=re.escape(message)):
        pbd.parse_proto(source, "bad.proto")


def test_protoc_errors_name_the_file_and_line_not_the_temporary_folder():
    with pytest.raises(pbd.ProtoSyntaxError) as info:
        pbd.parse_proto('syntax = "proto3";\nmessage M {\n  int32 x = ;\n}\n', "bad.proto")
    assert str(info.value).startswith("bad.proto, line 3: ")
    assert "proto-" not in str(info.value)


def test_parse_proto_is_protocs_descriptor():
    """What protoc records: the file name, json_name of every field, proto3 optional's oneof."""
    file = pbd.parse_proto(SAMPLE, "demo/sample.proto")
    assert file.name == "demo/sample.proto" and file.package == "demo" and file.syntax == "proto3"
    outer = next(m for m in file.message_type if m.name == "Outer")
    assert {f.name: f.json_name for f in outer.field}["maybe"] == "maybe"
    assert [o.name for o in outer.oneof_decl] == ["choice", "_maybe"]
    assert [(r.start, r.end) for r in outer.reserved_range] == [(10, 11), (11, 12)]


def test_well_known_imports_and_odd_file_names():
    source = 'syntax = "proto3"; import "google/protobuf/timestamp.proto";\n'
    source += "message Shot { google.protobuf.Timestamp at = 1; }"
    Shot = pbd.build_messages(source, "../../outside.proto")["Shot"]
    assert Shot.DESCRIPTOR.file.name == "outside.proto"  # never written outside the temp folder
    shot = Shot()
    shot.at.seconds = 5
    assert Shot.FromString(shot.SerializeToString()).at.seconds == 5


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
