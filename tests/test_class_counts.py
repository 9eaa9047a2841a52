"""helpers.class_counts: the per-shard class counts file -- layout, round trip, refusals."""

from __future__ import annotations

import hashlib
import json

import pytest

from helpers.class_counts import CLASS_COUNTS_VERSION, ShardClassCounts

CLASSES = ["cat", "chat noir", "猫"]
PER_SHARD = {
    "train-00000-of-00002.tfrecord": {"猫": 2, "cat": 1},
    "train-00001-of-00002.tfrecord": {},
}


def test_dense_rows_one_line_per_shard_round_trip():
    counts = ShardClassCounts.from_shards(CLASSES, PER_SHARD)
    text = counts.data.decode("utf-8")
    assert '  "classes": ["cat", "chat noir", "猫"],' in text
    assert '    "train-00000-of-00002.tfrecord": [1,0,2],\n' in text  # aligned with classes
    assert '    "train-00001-of-00002.tfrecord": [0,0,0]\n' in text
    assert json.loads(text)["format_version"] == CLASS_COUNTS_VERSION == 3
    assert counts.sha256 == hashlib.sha256(counts.data).hexdigest()
    back = ShardClassCounts.parse(counts.data)
    assert back.rows == counts.rows and back.classes == counts.classes and back.data == counts.data
    assert back.of("train-00000-of-00002.tfrecord") == {"cat": 1, "猫": 2}  # label order, no zeros
    assert back.of("train-00001-of-00002.tfrecord") == {}
    assert back.totals() == {"cat": 1, "chat noir": 0, "猫": 2}


def test_no_shards_is_valid_json_with_zero_totals():
    counts = ShardClassCounts.from_shards(CLASSES, {})
    assert json.loads(counts.data)["shards"] == {}
    assert counts.totals() == dict.fromkeys(CLASSES, 0)


def test_a_class_outside_the_list_is_refused():
    with pytest.raises(ValueError, match="'dog' is not one of the 3 classes"):
        ShardClassCounts.from_shards(CLASSES, {"s.tfrecord": {"dog": 1}})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{", "not valid JSON"),
        (b'{"format_version": 2, "classes": [], "shards": {}}', "format_version 3"),
        (b'{"format_version": 3, "classes": [1], "shards": {}}', "'classes' list"),
        (b'{"format_version": 3, "classes": ["a"], "shards": []}', "'shards' object"),
        (b'{"format_version": 3, "classes": ["a"], "shards": {"s": [1, 2]}}', "expected 1 non-negative"),
        (b'{"format_version": 3, "classes": ["a"], "shards": {"s": [-1]}}', "shard 's'"),
        (b'{"format_version": 3, "classes": ["a"], "shards": {"s": [true]}}', "shard 's'"),
    ],
)  # fmt: skip
def test_parse_refuses_other_layouts(data, message):
    with pytest.raises(ValueError, match=message):
        ShardClassCounts.parse(data)


def test_mismatch_names_what_disagrees_with_the_manifest():
    counts = ShardClassCounts.from_shards(CLASSES, PER_SHARD)
    records = {"train-00000-of-00002.tfrecord": 3, "train-00001-of-00002.tfrecord": 0}
    totals = {"cat": 1, "chat noir": 0, "猫": 2}
    assert counts.mismatch(CLASSES, records, totals) is None
    assert "classes differ" in counts.mismatch(CLASSES[:2], records, totals)
    assert "e.g. x.tfrecord" in counts.mismatch(CLASSES, {**records, "x.tfrecord": 1}, totals)
    assert "3 records counted by class, the manifest says 4" in counts.mismatch(
        CLASSES, {**records, "train-00000-of-00002.tfrecord": 4}, totals
    )
    assert "totals differ" in counts.mismatch(CLASSES, records, {**totals, "cat": 2})
