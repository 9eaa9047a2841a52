"""``python -m helpers.protobuf_demo annotate HEX`` / ``compare``."""

from __future__ import annotations

import argparse
import sys

from helpers.protobuf_demo.annotate import annotate
from helpers.protobuf_demo.compare import compare_formats, format_table
from helpers.protobuf_demo.formats import make_image_records
from helpers.protobuf_demo.schemas import build_messages


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m helpers.protobuf_demo",
        description="Protocol buffers by hand: annotate wire bytes, compare formats.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("annotate", help="annotated hex dump of a serialized message")
    a.add_argument("hex", help="the message bytes as hex, e.g. 089601")
    a.add_argument("--proto", help="a .proto file describing the message")
    a.add_argument("--message", help="the message name in --proto")
    c = sub.add_parser("compare", help="size and speed: protobuf vs JSON vs XML")
    c.add_argument("--records", type=int, default=2000)
    c.add_argument("--repeat", type=int, default=5, help="timing rounds of >= 0.2 s (best kept)")
    args = parser.parse_args(argv)
    if args.command == "annotate":
        descriptor = None
        if args.proto:
            with open(args.proto) as f:
                classes = build_messages(f.read(), args.proto)
            name = args.message or next(iter(classes))
            if name not in classes:
                print(
                    f"error: no message {name!r} in {args.proto} (has {', '.join(classes)})",
                    file=sys.stderr,
                )
                return 2
            descriptor = classes[name].DESCRIPTOR
        try:
            print(annotate(bytes.fromhex(args.hex), descriptor))
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        return 0
    results = compare_formats(make_image_records(args.records), repeat=args.repeat)
    print(f"{args.records} records")
    print(format_table(results))
    return 0
