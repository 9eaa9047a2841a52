"""Tests for helpers.util: one definition of each small shared helper."""

from __future__ import annotations

import hashlib
import os

import pytest

from helpers.util import atomic_open, atomic_write, parse_size, sha256_file, usable_cores


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("52428800", 52_428_800),
        (52428800, 52_428_800),
        ("50MiB", 50 * 2**20),
        ("16M", 16 * 2**20),
        ("4G", 4 * 2**30),
        ("4GiB", 4 * 2**30),
        ("4GB", 4 * 10**9),
        ("1.5GB", 1_500_000_000),
        ("64k", 64 * 1024),
        ("64KB", 64_000),
        ("10B", 10),
    ],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "lots", "4X", "4 i", "G", True])
def test_parse_size_refuses(bad):
    with pytest.raises(ValueError, match="byte count"):
        parse_size(bad)


def test_atomic_write_text_and_bytes(tmp_path):
    atomic_write(tmp_path / "a.txt", "one\ntwo\n")
    atomic_write(tmp_path / "b.bin", b"\x00\x01")
    assert (tmp_path / "a.txt").read_text() == "one\ntwo\n"
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "b.bin"]


def test_atomic_open_keeps_old_file_on_error(tmp_path):
    target = tmp_path / "m.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_open(target) as f:
        f.write("half")
        raise RuntimeError("interrupted")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["m.json"]


def test_atomic_open_refuses_other_modes(tmp_path):
    with pytest.raises(ValueError, match="mode"), atomic_open(tmp_path / "x", "a"):
        pass


def test_sha256_file(tmp_path):
    data = os.urandom(3 << 20)
    (tmp_path / "f").write_bytes(data)
    assert sha256_file(tmp_path / "f") == hashlib.sha256(data).hexdigest()


def test_usable_cores_is_the_affinity_mask():
    assert usable_cores() == len(os.sched_getaffinity(0))
