"""helpers.convert.table, the record order and the pool: the compact forms hold the same data."""

from __future__ import annotations

import os
import pickle
from array import array

import pytest

from helpers.convert import planning
from helpers.convert.pool import Runner
from helpers.convert.readahead import read_ahead
from helpers.convert.table import FileRecord, FileTable, Strings

NAMES = ["a/1.jpg", "b/ünï.png", "c/" + os.fsdecode(b"latin-\xe9.jpg"), "d/", ""]


def test_strings_round_trip_every_name_exactly():
    s = Strings(NAMES)
    assert len(s) == 5 and list(s) == NAMES and s == NAMES
    assert [s[i] for i in range(-5, 5)] == NAMES * 2
    assert os.fsencode(s[2]) == b"c/latin-\xe9.jpg"  # a non-UTF-8 name keeps its bytes
    assert s[1:3] == NAMES[1:3] and s.take([4, 0, 0]) == ["", "a/1.jpg", "a/1.jpg"]
    assert pickle.loads(pickle.dumps(s)) == s
    with pytest.raises(IndexError):
        s[5]
    assert s != NAMES[:4] and Strings() == []


def test_file_table_rows_slices_and_takes():
    t = FileTable.empty("/data", ("cat", "dog"))
    t.append("cat/1.JPG", 0, 10)
    t.append("dog/2.png", 1, 20)
    t.append("dog/3", 1, 30)
    assert t[1] == FileRecord("/data/dog/2.png", "dog/2.png", 1, "dog", ".png", 20)
    assert t[0].ext == ".jpg" and t[2].ext == "" and t[-1].size == 30
    assert [r.rel for r in t] == ["cat/1.JPG", "dog/2.png", "dog/3"]
    part = t[1:]
    assert len(part) == 2 and part.total_size == 50 and part[0] == t[1]
    taken = t.take(array("I", [2, 0]))
    assert [r.rel for r in taken] == ["dog/3", "cat/1.JPG"] and list(taken.labels) == [1, 0]
    assert pickle.loads(pickle.dumps(taken)) == taken != t


def test_record_order_is_the_full_key_order_even_when_prefixes_tie(monkeypatch):
    rels = [f"class_{i % 7}/img_{i}.jpg" for i in range(3000)]
    by_key = sorted(range(3000), key=lambda r: planning.order_key(5, rels[r]))
    assert list(planning.record_order(rels, 5)) == by_key
    real = planning.order_key

    def tied(seed, rel):  # the first 8 bytes collide for every file in groups of 3
        digest = real(seed, rel)
        return real(seed, str(hash(rel) % 100))[:8] + digest[8:]

    monkeypatch.setattr(planning, "order_key", tied)
    expected = sorted(range(3000), key=lambda r: tied(5, rels[r]))
    assert list(planning.record_order(rels, 5)) == expected


@pytest.mark.parametrize(
    ("sizes", "limit", "bounds"),
    [
        ([5, 5, 5, 5], 10, [(0, 2), (2, 4)]),
        ([5, 50, 5], 10, [(0, 1), (1, 2), (2, 3)]),  # a larger file gets a shard of its own
        ([0, 0, 0], 10, [(0, 3)]),
        ([], 10, []),
        ([11], 10, [(0, 1)]),
    ],
)
def test_shard_bounds(sizes, limit, bounds):
    assert planning.shard_bounds(iter(sizes), limit) == bounds


def test_runner_returns_every_task_once_with_few_in_flight():
    runner = Runner(2)
    try:
        got = dict(runner.run(len, (("x" * i) for i in range(60))))
    finally:
        runner.close()
    assert got == {i: i for i in range(60)}


def test_read_ahead_hints_the_next_files_and_yields_in_order(tmp_path, monkeypatch):
    files = []
    for i in range(5):
        path = tmp_path / f"{i}.jpg"
        path.write_bytes(b"x" * 10)
        files.append(FileRecord(str(path), f"c/{i}.jpg", 0, "c", ".jpg", 10))
    files.append(FileRecord(str(tmp_path / "gone.jpg"), "c/gone.jpg", 0, "c", ".jpg", 1))
    hinted, seen = [], []
    real_open = os.open
    monkeypatch.setattr(os, "posix_fadvise", lambda fd, *a: hinted.append(fd), raising=False)
    monkeypatch.setattr(os, "open", lambda p, *a: seen.append(p) or real_open(p, *a))
    out = []
    for item in read_ahead(files, window=2):
        out.append(item)
        assert len(seen) == min(len(out) + 2, len(files))  # always two files ahead
    assert out == files and len(hinted) == 5  # the missing file is left to the reader
