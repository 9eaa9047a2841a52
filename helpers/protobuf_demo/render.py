"""Descriptors back to text: ``.proto`` source (:func:`proto_source`) and a field table."""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor

FDP = descriptor_pb2.FieldDescriptorProto
_NOT_SCALAR = {FDP.TYPE_GROUP, FDP.TYPE_MESSAGE, FDP.TYPE_ENUM}
#: scalar field type number -> its .proto name (``int64``, ``sint32``, ...)
_SCALAR_NAMES = {
    t: FDP.Type.Name(t).removeprefix("TYPE_").lower()
    for t in FDP.Type.values()
    if t not in _NOT_SCALAR
}


def _type_ref(field: descriptor_pb2.FieldDescriptorProto, package: str) -> str:
    if field.type in _SCALAR_NAMES:
        return _SCALAR_NAMES[field.type]
    name = field.type_name.lstrip(".")
    return name[len(package) + 1 :] if package and name.startswith(package + ".") else name


def _render_field(
    field: descriptor_pb2.FieldDescriptorProto, syntax: str, package: str, in_oneof: bool
) -> str:
    if in_oneof:
        label = ""
    elif field.label == FDP.LABEL_REPEATED:
        label = "repeated "
    elif field.label == FDP.LABEL_REQUIRED:
        label = "required "
    elif syntax == "proto2" or field.proto3_optional:
        label = "optional "
    else:
        label = ""
    options = []
    if field.HasField("default_value"):
        quoted = field.type in (FDP.TYPE_STRING, FDP.TYPE_BYTES)
        options.append(
            f'default = "{field.default_value}"' if quoted else f"default = {field.default_value}"
        )
    if field.options.HasField("packed"):
        options.append(f"packed = {'true' if field.options.packed else 'false'}")
    if field.options.deprecated:
        options.append("deprecated = true")
    opts = f" [{', '.join(options)}]" if options else ""
    return f"{label}{_type_ref(field, package)} {field.name} = {field.number}{opts};"


def _render_message(
    msg: descriptor_pb2.DescriptorProto, syntax: str, package: str, indent: str
) -> list[str]:
    lines = [f"{indent}message {msg.name} {{"]
    inner = indent + "  "
    entries = {n.name: n for n in msg.nested_type if n.options.map_entry}
    for nested in msg.nested_type:
        if not nested.options.map_entry:
            lines += _render_message(nested, syntax, package, inner)
    for enum in msg.enum_type:
        lines += _render_enum(enum, inner)
    real_oneofs = {
        i for i, f in enumerate(msg.field) if f.HasField("oneof_index") and not f.proto3_optional
    }
    done_oneofs: set[int] = set()
    for i, field in enumerate(msg.field):
        entry_name = field.type_name.rsplit(".", 1)[-1]
        if (
            field.label == FDP.LABEL_REPEATED
            and entry_name in entries
            and field.type == FDP.TYPE_MESSAGE
        ):
            key, value = entries[entry_name].field
            lines.append(
                f"{inner}map<{_type_ref(key, package)}, {_type_ref(value, package)}> "
                f"{field.name} = {field.number};"
            )
        elif i in real_oneofs:
            index = field.oneof_index
            if index in done_oneofs:
                continue
            done_oneofs.add(index)
            lines.append(f"{inner}oneof {msg.oneof_decl[index].name} {{")
            for member in msg.field:
                if member.HasField("oneof_index") and member.oneof_index == index:
                    lines.append(f"{inner}  {_render_field(member, syntax, package, True)}")
            lines.append(f"{inner}}}")
        else:
            lines.append(f"{inner}{_render_field(field, syntax, package, False)}")
    lines.append(f"{indent}}}")
    return lines


def _render_enum(enum: descriptor_pb2.EnumDescriptorProto, indent: str) -> list[str]:
    lines = [f"{indent}enum {enum.name} {{"]
    lines += [f"{indent}  {v.name} = {v.number};" for v in enum.value]
    lines.append(f"{indent}}}")
    return lines


def proto_source(*descriptors: Any) -> str:
    """Render message descriptors (e.g. ``tf.train.Example.DESCRIPTOR``) as ``.proto`` text.

    Args:
      descriptors: message descriptors, or ``FileDescriptor`` objects (all their messages).

    Returns:
      ``.proto`` text with a ``syntax`` and ``package`` line taken from the first one.
    """
    if not descriptors:
        raise ValueError("give at least one descriptor")
    lines: list[str] = []
    header = None
    for desc in descriptors:
        file_proto = descriptor_pb2.FileDescriptorProto()
        file = desc if not isinstance(desc, Descriptor) else desc.file
        file.CopyToProto(file_proto)
        syntax = file_proto.syntax or "proto2"
        if header is None:
            header = [f'syntax = "{syntax}";']
            if file_proto.package:
                header.append(f"package {file_proto.package};")
        if isinstance(desc, Descriptor):
            msg_proto = descriptor_pb2.DescriptorProto()
            desc.CopyToProto(msg_proto)
            messages, enums = [msg_proto], []
        else:
            messages, enums = list(file_proto.message_type), list(file_proto.enum_type)
        for enum in enums:
            lines += [""] + _render_enum(enum, "")
        for msg in messages:
            lines += [""] + _render_message(msg, syntax, file_proto.package, "")
    return "\n".join((header or []) + lines) + "\n"


def field_table(descriptor: Descriptor) -> str:
    """A text table of a message's fields: number, name, type, label and presence.

    Args:
      descriptor: ``SomeMessage.DESCRIPTOR``.

    Returns:
      One line per field, in field-number order.
    """
    lines = [f"{'number':>6}  {'name':<14} {'type':<12} {'label':<9} presence"]
    for f in sorted(descriptor.fields, key=lambda f: f.number):
        if f.message_type is not None:
            type_name = f.message_type.name
        elif f.enum_type is not None:
            type_name = f.enum_type.name
        else:
            type_name = _SCALAR_NAMES.get(f.type, str(f.type))
        if f.is_repeated:
            label = "repeated"
        elif f.is_required:
            label = "required"
        else:
            label = "singular"
        presence = "tracked" if f.has_presence else "none (zero = unset)"
        if f.is_repeated:
            presence = "- (a list)"
        lines.append(f"{f.number:>6}  {f.name:<14} {type_name:<12} {label:<9} {presence}")
    return "\n".join(lines)
