"""helpers.records: CRC32C, framing, pure-Python reader/writer vs TF, verify and inspect.

Covers issue 8 cases 16-18b: truncated shards, flipped bytes, cuts at a record
boundary (which TF reads silently), manifest count/checksum mismatches, missing
and stray shards, GZIP read as uncompressed, and a bit flip inside JPEG data
that still decodes (caught by the manifest's per-record sha256).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from helpers import convert as C
from helpers import features as F
from helpers import manifest as M
from helpers import records as R
from helpers.util import sha256_file

ROOT = Path(__file__).resolve().parents[1]

# --------------------------------------------------------------------------- CRC32C


@pytest.mark.parametrize(
    ("data", "crc"),
    [
        (b"", 0x00000000),
        (b"123456789", 0xE3069283),  # the CRC catalogue's check value
        (b"\x00" * 32, 0x8A9136AA),  # RFC 3720 B.4
        (b"\xff" * 32, 0x62A8AB43),
        (bytes(range(32)), 0x46DD794E),
        (bytes(range(31, -1, -1)), 0x113FDB5C),
    ],
)
def test_crc32c_known_vectors(data, crc):
    assert R.crc32c(data) == crc
    assert R.crc32c_py(data) == crc


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2048))
def test_crc32c_py_matches_c_and_mask_roundtrip(data):
    crc = R.crc32c(data)
    assert R.crc32c_py(data) == crc
    assert R.unmask_crc(R.masked_crc(data)) == crc


def test_frame_layout():
    framed = R.frame_record(b"hello")
    length, length_crc = struct.unpack("<QI", framed[:12])
    assert length == 5 and framed[12:17] == b"hello" and len(framed) == 5 + 16
    assert length_crc == R.masked_crc(framed[:8])
    assert struct.unpack("<I", framed[17:])[0] == R.masked_crc(b"hello")


# --------------------------------------------------------------------------- vs TensorFlow

PAYLOADS = [b"", b"x", bytes(range(256)) * 3, np.random.default_rng(0).bytes(100_000), b"\xff" * 7]


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_pure_writer_tf_reader(tmp_path, compression):
    path = tmp_path / "pure.tfrecord"
    assert R.write_records(path, PAYLOADS, compression=compression) == len(PAYLOADS)
    ds = tf.data.TFRecordDataset(str(path), compression_type=compression or "")
    assert [r.numpy() for r in ds] == PAYLOADS


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_tf_writer_pure_reader(tmp_path, compression):
    path = tmp_path / "tf.tfrecord"
    options = tf.io.TFRecordOptions(compression_type=compression or "")
    with tf.io.TFRecordWriter(str(path), options=options) as writer:
        for p in PAYLOADS:
            writer.write(p)
    assert list(R.read_records(path, compression=compression)) == PAYLOADS
    if compression is None:  # the framing is byte-identical
        R.write_records(tmp_path / "pure.tfrecord", PAYLOADS)
        assert (tmp_path / "pure.tfrecord").read_bytes() == path.read_bytes()


# --------------------------------------------------------------------------- corruption

N = 5


def payload(i: int) -> bytes:
    return F.serialize_example({"i": i, "blob": bytes([i]) * (40 + 10 * i)})


def offset(k: int) -> int:
    """Byte offset of record ``k`` in a shard of :func:`payload` records."""
    return sum(len(payload(i)) + 16 for i in range(k))


@pytest.fixture
def shards(tmp_path) -> Path:
    """Two shards of N records each plus a manifest in the converter's format."""
    out = tmp_path / "out"
    out.mkdir()
    entries = []
    for s in range(2):
        name = C.shard_name("train", s, 2)
        R.write_records(out / name, [payload(i) for i in range(N)])
        index = R.write_index(out / name)
        data = (out / name).read_bytes()
        entries.append(
            M.ShardEntry(
                name, N, len(data), hashlib.sha256(data).hexdigest(), {"c": N},
                os.path.basename(index), sha256_file(index),
            )
        )  # fmt: skip
    M.write_manifest_file(M.Manifest("train", "ds", ["c"], {}, {}, entries), out)
    (out / "labels.txt").write_text("c\n")
    return out


def verify_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "helpers.records", "verify", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def errors(out: Path) -> list[str]:
    return [e for r in R.verify_paths([str(out)]) for e in r.errors]


def test_verify_clean(shards):
    assert errors(shards) == []
    proc = verify_cli(shards)
    assert proc.returncode == 0 and "2 shards, 10 records, 0 with problems" in proc.stdout


@pytest.mark.parametrize(
    ("where", "problem"),
    [
        (lambda k: offset(k) + 5, "truncated header"),
        (lambda k: offset(k) + 12 + 3, "truncated data"),
        (lambda k: offset(k) + 12 + len(payload(k)) + 2, "truncated data CRC"),
    ],
    ids=["in-header", "in-data", "in-footer"],
)
def test_truncated_shard_names_file_and_record(shards, where, problem):
    shard = shards / C.shard_name("train", 1, 2)
    k = 3
    shard.write_bytes(shard.read_bytes()[: where(k)])
    with pytest.raises(R.RecordError, match=f"record {k} at byte {offset(k)}: {problem}"):
        list(R.read_records(shard))
    proc = verify_cli(shards)
    assert proc.returncode == 1
    assert f"{shard}: record {k} at byte {offset(k)}: {problem}" in proc.stdout
    assert "manifest says 5" in proc.stdout


def test_flipped_byte_names_record(shards):
    shard = shards / C.shard_name("train", 0, 2)
    data = bytearray(shard.read_bytes())
    data[offset(2) + 12 + 10] ^= 0x40  # inside record 2's payload
    shard.write_bytes(bytes(data))
    proc = verify_cli(shard, "--manifest", shards / "manifest.json")
    assert proc.returncode == 1
    assert f"{shard}: record 2 at byte {offset(2)}: data CRC mismatch" in proc.stdout
    with pytest.raises(tf.errors.DataLossError):  # TF notices this one too
        list(tf.data.TFRecordDataset(str(shard)))


def test_flipped_length_byte(shards):
    shard = shards / C.shard_name("train", 0, 2)
    data = bytearray(shard.read_bytes())
    data[offset(1)] ^= 0x01
    shard.write_bytes(bytes(data))
    assert any("record 1" in e and "length CRC mismatch" in e for e in errors(shards))


def test_cut_at_record_boundary_needs_the_manifest(shards):
    shard = shards / C.shard_name("train", 0, 2)
    shard.write_bytes(shard.read_bytes()[: offset(3)])
    # TF's reader and a CRC-only check both see a clean, shorter file ...
    assert len(list(tf.data.TFRecordDataset(str(shard)))) == 3
    assert R.verify(shard).ok
    # ... only the manifest's count gives it away
    errs = errors(shards)
    assert any("3 records readable, manifest says 5" in e and "record boundary" in e for e in errs)
    assert verify_cli(shards).returncode == 1


def test_cut_inside_header_is_silent_in_tf_but_not_here(shards):
    shard = shards / C.shard_name("train", 0, 2)
    shard.write_bytes(shard.read_bytes()[: offset(3) + 7])
    assert len(list(tf.data.TFRecordDataset(str(shard)))) == 3  # TF: no error
    assert any("record 3" in e and "truncated header" in e for e in errors(shards))


def test_manifest_count_and_checksum_mismatch(shards):
    manifest = json.loads((shards / "manifest.json").read_text())
    manifest["shards"][0]["records"] = 6
    manifest["shards"][1]["sha256"] = "0" * 64
    (shards / "manifest.json").write_text(json.dumps(manifest))
    errs = errors(shards)
    assert any(C.shard_name("train", 0, 2) in e and "manifest says 6" in e for e in errs)
    assert any(C.shard_name("train", 1, 2) in e and "sha256 differs" in e for e in errs)
    assert verify_cli(shards).returncode == 1


def test_missing_and_stray_shards(shards):
    (shards / C.shard_name("train", 1, 2)).unlink()
    shutil.copy(shards / C.shard_name("train", 0, 2), shards / "train-00002-of-00002.tfrecord")
    (shards / ".train-00001-of-00002.tfrecord.tmp-123").write_bytes(b"ignored temp file")
    proc = verify_cli(shards)
    assert proc.returncode == 1
    assert (
        f"{shards / C.shard_name('train', 1, 2)}: listed in the manifest but missing" in proc.stdout
    )
    assert "train-00002-of-00002.tfrecord: not listed in the manifest" in proc.stdout
    assert "tmp-123" not in proc.stdout


def test_gzip_shard_read_as_uncompressed(shards):
    shard = shards / C.shard_name("train", 0, 2)
    shard.write_bytes(gzip.compress(shard.read_bytes()))
    errs = errors(shards)
    assert any("record 0" in e and "GZIP" in e for e in errs)
    assert list(R.read_records(shard, compression="GZIP")) == [payload(i) for i in range(N)]
    with pytest.raises(tf.errors.DataLossError):
        list(tf.data.TFRecordDataset(str(shard)))


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda p: p.write_bytes(p.read_bytes().replace(b"[5]", b"[4]")), "sha256 differs"),
        (lambda p: p.unlink(), "missing"),
    ],
    ids=["tampered", "missing"],
)
def test_class_counts_sidecar_is_checked_against_the_manifest(shards, damage, problem):
    sidecar = shards / M.CLASS_COUNTS_NAME
    damage(sidecar)
    (report,) = [r for r in R.verify_paths([str(shards)]) if not r.ok]
    assert report.path == str(sidecar) and report.kind == "class counts"
    assert any(problem in e and "rerun the converter" in e for e in report.errors)
    proc = verify_cli(shards)
    assert proc.returncode == 1
    assert f"BAD {sidecar}: class counts\n    {sidecar}: {problem}" in proc.stdout
    assert "2 shards, 10 records, 1 with problems" in proc.stdout


def test_a_folder_of_shards_without_a_manifest_is_not_reported_as_fine(shards):
    (shards / "manifest.json").unlink()
    proc = verify_cli(shards)
    assert proc.returncode == 1, proc.stdout
    assert "no manifest.json" in proc.stdout and "name the files" in proc.stdout
    (shards / ".convert-journal.jsonl").write_text("")
    assert "rerun the same `python -m helpers.convert` command" in verify_cli(shards).stdout
    # named as files, another tool's shards are checked by CRC and by the index beside each
    named = sorted(str(p) for p in shards.glob("*.tfrecord"))
    assert verify_cli(*named).returncode == 0
    index = Path(R.index_name(named[0]))
    lines = index.read_text().splitlines()
    index.write_text("\n".join(lines[1:] + lines[:1]) + "\n")  # lines out of order
    proc = verify_cli(*named)
    assert proc.returncode == 1 and f"{index}: line 1 says record 0" in proc.stdout


@pytest.mark.parametrize("key", ["num_records", "num_shards", "total_bytes", "num_classes"])
def test_verify_names_a_stored_total_that_its_shards_do_not_add_up_to(shards, key):
    path = shards / "manifest.json"
    data = json.loads(path.read_text())
    data[key] += 1
    path.write_text(json.dumps(data, indent=2) + "\n")
    (message,) = errors(shards)
    assert message.startswith(f"{path}: {key} is {data[key]}") and "add up to" in message


def test_verify_checks_the_label_map_against_the_classes(shards):
    labels = shards / "labels.txt"
    labels.write_text("dog\n")
    (message,) = errors(shards)
    assert message.startswith(f"{labels}: does not list the manifest's classes")
    labels.unlink()
    (message,) = errors(shards)
    assert message.startswith(f"{labels}: missing")


def test_verify_cli_usage_errors(tmp_path):
    proc = verify_cli(tmp_path)
    assert proc.returncode == 2 and "no shards found" in proc.stderr


# --------------------------------------------------------------------------- JPEG bit flip


def _flip_decodable_bit(jpeg: bytes) -> bytes:
    """Flip one bit in the entropy-coded data such that TF still decodes the image."""
    sos = jpeg.index(b"\xff\xda")
    start = sos + 2 + int.from_bytes(jpeg[sos + 2 : sos + 4], "big")
    for pos in range((start + len(jpeg)) // 2, len(jpeg) - 4):
        if 0xFF in jpeg[pos - 1 : pos + 2] or jpeg[pos] == 0xFE:
            continue
        flipped = jpeg[:pos] + bytes([jpeg[pos] ^ 0x01]) + jpeg[pos + 1 :]
        try:
            tf.io.decode_jpeg(flipped, channels=3)
        except tf.errors.InvalidArgumentError:
            continue
        return flipped
    raise AssertionError("no decodable bit flip found")


def test_bit_flip_in_reframed_jpeg_data_caught_by_the_shard_sha256(tmp_path):
    """A change with valid CRCs (the record was rewritten, not damaged on disk) still
    decodes; only the manifest's whole-shard sha256 catches it."""
    ds = tmp_path / "ds"
    rng = np.random.default_rng(3)
    for i in range(3):
        (ds / "cls").mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (48, 64, 3), np.uint8)).save(
            ds / "cls" / f"{i}.jpg", quality=90
        )
    out = tmp_path / "out"
    C.convert(ds, out, workers=1, progress=False)
    shard = out / "train-00000-of-00001.tfrecord"
    payloads = list(R.read_records(shard))
    example = F.Example()
    example.ParseFromString(payloads[1])
    original = example.features.feature[F.IMAGE_KEYS["encoded"]].bytes_list.value[0]
    flipped = _flip_decodable_bit(original)
    example.features.feature[F.IMAGE_KEYS["encoded"]].bytes_list.value[0] = flipped
    payloads[1] = F.serialize_example(example)
    R.write_records(shard, payloads)  # a re-framed copy: every CRC is valid again

    decoded = tf.io.decode_jpeg(flipped, channels=3).numpy()  # TF decodes it without complaint
    assert decoded.shape == (48, 64, 3)
    assert not np.array_equal(decoded, tf.io.decode_jpeg(original, channels=3).numpy())
    assert R.verify(shard).ok  # CRCs alone cannot tell
    proc = verify_cli(out)
    assert proc.returncode == 1
    assert f"{shard}: sha256 differs from the manifest" in proc.stdout


# --------------------------------------------------------------------------- inspect


def test_inspect_cli(shards):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "helpers.records",
            "inspect",
            str(shards / C.shard_name("train", 0, 2)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"{N} records" in proc.stdout
    assert "blob" in proc.stdout and "int64_list" in proc.stdout and "record 0:" in proc.stdout


def test_inspect_function(shards):
    info = R.inspect(shards / C.shard_name("train", 0, 2), limit=2)
    assert info["records"] == N and len(info["samples"]) == 2
    assert info["features"]["i"] == {"kind": "int64_list", "lengths": [1]}


# --------------------------------------------------------------------------- locate, LFS, names


def test_damage_is_located_by_file_record_and_byte_offset(shards):
    victim = shards / C.shard_name("train", 1, 2)
    data = bytearray(victim.read_bytes())
    data[offset(3) + 12 + 5] ^= 0x40  # a flipped bit inside record 3's payload
    victim.write_bytes(bytes(data))
    proc = verify_cli(shards)
    assert proc.returncode == 1
    assert f"{victim}: record 3 at byte {offset(3)}: data CRC mismatch" in proc.stdout


def test_git_lfs_pointer_named_in_place_of_a_shard(shards):
    victim = shards / C.shard_name("train", 0, 2)
    victim.write_text(
        "version https://git-lfs.github.com/spec/v1\n"
        "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n"
    )
    report = R.verify(victim)
    assert not report.ok and "git-LFS pointer file" in report.errors[0]
    assert "git lfs pull" in verify_cli(shards).stdout
    source = R.RecordSource(shards)  # random access names it too, not "truncated record"
    with pytest.raises(R.RecordError, match="git-LFS pointer file"):
        source[0]
    assert source[N] == payload(0)  # the other shard is unaffected


def test_index_checked_and_rebuilt_by_the_cli(shards):
    name = C.shard_name("train", 0, 2)
    index = shards / R.index_name(name)
    good = index.read_text()
    assert good.splitlines()[2] == f"{offset(2)} {len(payload(2)) + 16}"
    index.write_text(good.replace(f"{offset(2)} ", f"{offset(2) + 1} ", 1))
    proc = verify_cli(shards)
    assert proc.returncode == 1 and "sha256 differs from the manifest" in proc.stdout
    index.unlink()
    rebuilt = subprocess.run(
        [sys.executable, "-m", "helpers.records", "index", str(shards / name)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert rebuilt.returncode == 0 and index.read_text() == good
    assert verify_cli(shards).returncode == 0


def test_index_cli_names_a_folder_or_a_missing_file_with_what_to_do(shards, capsys):
    assert R.main(["index", str(shards), str(shards / "nope.tfrecord")]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"error: {shards}: a folder; name its shard files ({shards}/*.tfrecord)",
        f"error: {shards / 'nope.tfrecord'}: no such file; check the path",
    ]


def test_count_answers_from_the_manifest(shards):
    proc = subprocess.run(
        [sys.executable, "-m", "helpers.records", "count", str(shards), "--per-shard"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[-1] == f"{2 * N} records in 2 shards"
    for s in range(2):  # the shards themselves are not needed
        (shards / C.shard_name("train", s, 2)).unlink()
    assert R.main(["count", str(shards)]) == 0


def test_a_path_under_home_may_be_spelled_with_a_tilde(shards, monkeypatch):
    monkeypatch.setenv("HOME", str(shards.parent))
    source = R.RecordSource("~/out")
    assert len(source) == 2 * N and source[N] == payload(0)
    files = R.RecordSource([f"~/out/{C.shard_name('train', 1, 2)}"])
    assert len(files) == N and files[1] == payload(1)
    assert M.read_manifest("~/out").num_records == 2 * N


def test_shard_and_index_names():
    assert R.index_name("train-00000-of-00004.tfrecord") == "train-00000-of-00004.idx"
    assert R.index_name("/d/x.tfrecord-00001-of-00010") == "/d/x-00001-of-00010.idx"
    assert R.is_shard_name("train-00000-of-00004.tfrecord")
    assert R.is_shard_name("data.tfrecord.gz")
    for name in ("train-00000-of-00004.idx", ".train.tfrecord.tmp-1-ab", "x.tfrecord.partial"):
        assert not R.is_shard_name(name)
    assert R.inspect is R.inspect_shard  # the old name still works
