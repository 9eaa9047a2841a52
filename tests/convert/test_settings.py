"""helpers.convert.settings: the printable form of file names used in every message."""

from __future__ import annotations

import os

import pytest

from helpers.convert.settings import display_name


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("class_00/img_001.jpg", "class_00/img_001.jpg"),
        ("café/猫 1.png", "café/猫 1.png"),  # printable non-ASCII stays as it is
        ("a\nb\tc\x7f.jpg", "a\\x0ab\\x09c\\x7f.jpg"),  # control characters are escaped
        (os.fsdecode(b"latin/a\xe9.jpg"), "latin/a\\xe9.jpg"),  # undecodable bytes too
        ("nbsp\u00a0name", "nbsp\u00a0name"),  # not printable to Python, but valid and kept
    ],
)
def test_display_name(name, shown):
    assert display_name(name) == shown
