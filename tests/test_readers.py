"""The converter's shards read by independent readers: Grain (through RecordSource) and the
``tfrecord`` package (through the exported index), record for record equal to TensorFlow's."""

from __future__ import annotations

import importlib.util
import json
import pickle
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from helpers import convert as C
from helpers import records as R

grain = pytest.importorskip("grain", reason="the 'readers' extra (pip install -e '.[readers]')")
# The tfrecord package registers its own copy of tensorflow/core/example/*.proto in the
# default protobuf pool, which clashes with TensorFlow's in one process: it runs in a
# child process here (which also keeps it independent of this package's imports).
_TFRECORD_READ = """
import hashlib, json, sys
from tfrecord.reader import tfrecord_iterator
from tfrecord.tools.tfrecord2idx import create_index
shard, index, theirs, parts = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
create_index(shard, theirs)
records = []
for k in range(parts):  # read through the index in slices, as `parts` workers would
    records += [bytes(v).hex() for v in tfrecord_iterator(shard, index, shard=(k, parts))]
print(json.dumps(records))
"""


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> tuple[Path, list[bytes]]:
    """Three classes of small JPEGs in several shards, and every record as TensorFlow reads it."""
    root = tmp_path_factory.mktemp("readers")
    rng = np.random.default_rng(5)
    for c in range(3):
        (root / "ds" / f"c{c}").mkdir(parents=True)
        for i in range(14):
            size = (int(rng.integers(8, 40)), int(rng.integers(8, 40)))
            Image.fromarray(rng.integers(0, 256, (*size, 3), np.uint8)).save(
                root / "ds" / f"c{c}" / f"{i}.jpg", quality=80
            )
    manifest = C.convert(root / "ds", root / "out", size_per_record=6000, workers=1, progress=False)
    assert manifest["num_shards"] >= 4 and min(s["records"] for s in manifest["shards"]) >= 2
    files = [str(root / "out" / s["file"]) for s in manifest["shards"]]
    return root / "out", [r.numpy() for r in tf.data.TFRecordDataset(files)]


def test_record_source_random_access(converted):
    out, expected = converted
    source = R.RecordSource(out)
    assert len(source) == len(expected)
    order = np.random.default_rng(0).permutation(len(source))
    assert [source[int(i)] for i in order] == [expected[i] for i in order]
    assert source[-1] == expected[-1]
    with pytest.raises(IndexError):
        source[len(source)]
    clone = pickle.loads(pickle.dumps(source))  # for worker processes
    assert [clone[i] for i in range(len(clone))] == expected
    with ThreadPoolExecutor(8) as pool:  # one source shared by threads
        assert list(pool.map(source.__getitem__, range(len(source)))) == expected


def test_grain_reads_the_shards_through_record_source(converted):
    out, expected = converted
    dataset = grain.MapDataset.source(R.RecordSource(out))
    assert len(dataset) == len(expected) and list(dataset) == expected
    shuffled = dataset.shuffle(seed=7)  # a seeded global shuffle across all shards
    first = [shuffled[i] for i in range(len(shuffled))]
    assert sorted(first) == sorted(expected) and first != expected
    assert [shuffled[i] for i in range(len(shuffled))] == first  # same seed, same order
    batches = shuffled.batch(4, drop_remainder=False, batch_fn=list)
    k = 3  # resume exactly at step k: nothing before it is read again
    resumed = [batches[i] for i in range(k, len(batches))]
    assert [r for b in resumed for r in b] == first[4 * k :]
    parsed = tf.io.parse_single_example(
        first[0], {"image/encoded": tf.io.FixedLenFeature([], tf.string)}
    )
    assert tf.io.decode_jpeg(parsed["image/encoded"]).shape[-1] == 3


def test_tfrecord_package_reads_the_shards_with_the_exported_index(converted, tmp_path):
    if importlib.util.find_spec("tfrecord") is None:
        pytest.skip("the 'readers' extra (pip install -e '.[readers]')")
    out, expected = converted
    got = []
    for shard in sorted(out.glob("*.tfrecord")):
        index = out / R.index_name(shard.name)
        theirs = tmp_path / (shard.name + ".theirs")
        proc = subprocess.run(
            [sys.executable, "-c", _TFRECORD_READ, str(shard), str(index), str(theirs), "3"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert index.read_bytes() == theirs.read_bytes()  # byte for byte the index it writes
        got += [bytes.fromhex(h) for h in json.loads(proc.stdout)]
    files = [str(p) for p in sorted(out.glob("*.tfrecord"))]
    assert got == [r.numpy() for r in tf.data.TFRecordDataset(files)]
    assert sorted(got) == sorted(expected)
