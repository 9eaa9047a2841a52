"""A .proto source using most of the language, shared by the protobuf_demo tests."""

from __future__ import annotations

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
