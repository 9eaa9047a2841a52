"""helpers.convert.encode: the record bytes, and the protobuf-only import in owned processes."""

from __future__ import annotations

import os
import subprocess

import pytest
from convert_common import PY, ROOT

from helpers import convert as C
from helpers import features as F


def test_light_protobuf_import_in_owned_processes():
    code = (
        "import sys; from helpers.convert import encode; encode.LIGHT = True; "
        "f = encode.load_features(); "
        "ex = f.image_example(b'xy', 2, 'cat', b'cat/\\xff.jpg', 3, 4, 'png'); "
        "sys.stdout.write(f.serialize_example(ex).hex() + ' ' + str('tensorflow.python' in sys.modules))"
    )
    proc = subprocess.run([PY, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    hexbytes, loaded = proc.stdout.split()
    assert loaded == "False", proc.stderr
    expected = F.serialize_example(F.image_example(b"xy", 2, "cat", b"cat/\xff.jpg", 3, 4, "png"))
    assert bytes.fromhex(hexbytes) == expected


@pytest.mark.parametrize(
    ("rel", "class_text", "label", "fmt"),
    [
        ("class_00/img_000001.jpg", "class_00", 0, "jpeg"),
        ("caf\u00e9/\u732b 1.png", "caf\u00e9", 7, "png"),
        ("latin/a\udce9.jpg", "latin", 2**40, "jpeg"),  # non-UTF-8 file name bytes
    ],
)
def test_record_builder_matches_the_generic_example_builder(rel, class_text, label, fmt):
    payload = os.urandom(3000)
    item = C.FileRecord("/unused", rel, label, class_text, ".jpg", len(payload))
    fast = C.record_bytes(F, payload, item, 375, 500, fmt)
    generic = F.serialize_example(
        F.image_example(payload, label, class_text, os.fsencode(rel), 375, 500, fmt)
    )
    assert fast == generic
