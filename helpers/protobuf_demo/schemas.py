"""``.proto`` text -> descriptors and message classes, compiled by the real ``protoc``.

``protoc`` comes with the ``grpcio-tools`` package (no separate install, no
network, no generated files in the repository): :func:`parse_proto` writes the
source into a temporary folder, runs ``python -m grpc_tools.protoc
--descriptor_set_out`` on it in a child process and
reads back the ``FileDescriptorProto`` -- exactly what code generation starts
from. :func:`build_messages` adds it to a descriptor pool and asks the
``protobuf`` package for the message classes. The well-known types
(``import "google/protobuf/timestamp.proto";``) are on the include path.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor

__all__ = ["ProtoSyntaxError", "build_file", "build_messages", "parse_proto"]

# protoc's diagnostics: "<file>:<line>:<column>: <message>"
_DIAGNOSTIC = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<column>\d+): (?P<message>.+)$")


class ProtoSyntaxError(ValueError):
    """``protoc`` refused a ``.proto`` source; the message names the file and the line."""


def _virtual_name(name: str) -> str:
    """The file name recorded in the descriptor: a relative path without ``..``."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts or os.path.isabs(name):
        return os.path.basename(name) or "lesson.proto"
    return "/".join(parts)


def _protoc_errors(text: str, folder: str) -> str:
    """protoc's diagnostics as ``name, line N: message`` lines (temporary paths removed)."""
    lines = []
    for raw in text.replace(folder + os.sep, "").splitlines():
        m = _DIAGNOSTIC.match(raw.strip())
        if m:
            lines.append(f"{m['file']}, line {m['line']}: {m['message']}")
        elif raw.strip():
            lines.append(raw.strip())
    return "\n".join(lines) or "protoc failed without a message"


def _protoc_includes() -> str:
    """The well-known ``.proto`` files bundled with ``grpcio-tools`` (found without importing it)."""
    spec = importlib.util.find_spec("grpc_tools")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "protoc comes with the grpcio-tools package: pip install 'grpcio-tools>=1.76,<2'"
        )
    return os.path.join(list(spec.submodule_search_locations)[0], "_proto")


def _compile(source: str, name: str) -> descriptor_pb2.FileDescriptorSet:
    """Run protoc on ``source`` saved as ``name``; the set holds its imports, then the file.

    protoc runs in a child process: its C++ runtime and TensorFlow's must not
    share one (loading both in a process that imported TensorFlow crashes it).
    """
    includes = _protoc_includes()
    with tempfile.TemporaryDirectory(prefix="proto-") as folder:
        path = os.path.join(folder, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        out = os.path.join(folder, "descriptor-set.pb")
        cmd = [sys.executable, "-m", "grpc_tools.protoc", f"-I{folder}", f"-I{includes}"]
        cmd += ["--include_imports", f"--descriptor_set_out={out}", name]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        if proc.returncode != 0:
            raise ProtoSyntaxError(_protoc_errors(proc.stderr + proc.stdout, folder))
        with open(out, "rb") as f:
            return descriptor_pb2.FileDescriptorSet.FromString(f.read())


def parse_proto(source: str, name: str = "lesson.proto") -> descriptor_pb2.FileDescriptorProto:
    """Compile ``.proto`` text into a ``FileDescriptorProto`` with ``protoc``.

    Args:
      source: the ``.proto`` file's text.
      name: the file name recorded in the descriptor (must be unique per pool).

    Returns:
      The file descriptor as a protobuf message.

    Raises:
      ProtoSyntaxError: protoc refused the source; the message names the line.
    """
    return _compile(source, _virtual_name(name)).file[-1]


def build_file(source: str, name: str = "lesson.proto", pool: Any = None) -> Any:
    """Add a ``.proto`` source (and what it imports) to a descriptor pool; return its file.

    Args:
      source: the ``.proto`` text.
      name: its file name.
      pool: a ``DescriptorPool``; a new private one by default (so names never clash
        with TensorFlow's own messages).

    Returns:
      The ``FileDescriptor``.
    """
    pool = pool if pool is not None else descriptor_pool.DescriptorPool()
    files = _compile(source, _virtual_name(name)).file
    for dependency in files[:-1]:
        try:
            pool.FindFileByName(dependency.name)
        except KeyError:
            pool.Add(dependency)
    return pool.Add(files[-1])


def _walk(desc: Descriptor) -> Iterable[Descriptor]:
    yield desc
    for nested in desc.nested_types:
        if not nested.GetOptions().map_entry:
            yield from _walk(nested)


def build_messages(source: str, name: str = "lesson.proto", pool: Any = None) -> dict[str, type]:
    """Message classes for every message in a ``.proto`` source, by (nested) name.

    Args:
      source: the ``.proto`` text.
      name: its file name.
      pool: a ``DescriptorPool`` (a new private one by default).

    Returns:
      ``{"ImageRecord": <class>, "Outer.Inner": <class>, ...}`` (names without package).
    """
    file = build_file(source, name, pool)
    prefix = f"{file.package}." if file.package else ""
    classes: dict[str, type] = {}
    for top in file.message_types_by_name.values():
        for desc in _walk(top):
            classes[desc.full_name[len(prefix) :]] = message_factory.GetMessageClass(desc)
    return classes
