"""The converter as an Apache Beam pipeline (DirectRunner): byte-identical to the local converter."""

from __future__ import annotations

import json
import os

import pytest
from convert_common import cli, files_of, jpeg_bytes, make_dataset, png_bytes, run, write
from PIL import Image
from test_probe import cmyk_jpeg

from helpers import convert as C
from helpers.fixture import DATA_DIR

pytest.importorskip("apache_beam")

from helpers.convert.beam import INSTALL_HINT, convert_beam  # noqa: E402

MODES = {
    "in_process": [],
    "multi_processing": ["--direct_running_mode=multi_processing", "--direct_num_workers=2"],
}


def dirty_folder(root):
    """Good images plus every kind of trouble the local converter reports."""
    ds = make_dataset(root, classes=3, per_class=5)
    good = jpeg_bytes(seed=9)
    write(ds / "class_0" / "truncated.jpg", good[: len(good) // 2])
    write(ds / "class_0" / "empty.jpg", b"")
    write(ds / "class_1" / "png_named.jpg", png_bytes(Image.new("RGB", (9, 7), (1, 2, 3))))
    write(ds / "class_1" / "cmyk.jpg", cmyk_jpeg())
    write(ds / "class_2" / "README", b"not an image\n")
    write(ds / "class_2" / ".DS_Store", b"\0\0\0\1Bud1")
    write(ds / "README.txt", b"a file outside the class folders\n")
    (ds / "class_2" / "nested").mkdir()
    (ds / "empty_class").mkdir()
    with open(os.path.join(os.fsencode(ds / "class_2"), b"latin1_\xe9t\xe9.jpg"), "wb") as f:
        f.write(jpeg_bytes(seed=52))
    return ds


@pytest.fixture(scope="module")
def dirty(tmp_path_factory):
    return dirty_folder(tmp_path_factory.mktemp("dirty") / "ds")


def _assert_same_as_local(ds, tmp_path, beam_args, size_per_record):
    local, beam = tmp_path / "local", tmp_path / "beam"
    expected = run(ds, local, size_per_record=size_per_record)
    got = convert_beam(
        ds, beam, size_per_record=size_per_record, progress=False, beam_args=beam_args
    )
    assert got == expected
    assert expected["num_shards"] > 1  # several shards: the parallel write really runs
    assert sorted(os.listdir(beam)) == sorted(os.listdir(local))  # no journal or temp left
    assert files_of(beam) == files_of(local)  # every shard, index, labels.txt, manifest.json
    return expected


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(MODES))
def test_fixture_byte_identical(tmp_path, mode):
    manifest = _assert_same_as_local(DATA_DIR / "images", tmp_path, MODES[mode], 400_000)
    assert manifest["num_records"] == sum(manifest["class_counts"].values()) > 100


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(MODES))
def test_dirty_folder_byte_identical_and_reported_the_same(tmp_path, dirty, mode):
    manifest = _assert_same_as_local(dirty, tmp_path, MODES[mode], 3000)
    skipped = {s["path"] for s in manifest["skipped"]}
    assert skipped == {"class_0/truncated.jpg", "class_0/empty.jpg"}
    assert [c["path"] for c in manifest["converted"]] == ["class_1/cmyk.jpg"]
    ignored = {i["path"] for i in manifest["ignored"]["entries"]}
    assert {"class_2/README", "class_2/.DS_Store", "README.txt", "class_2/nested/"} <= ignored
    assert manifest["non_utf8_names"] == ["class_2/latin1_\\xe9t\\xe9.jpg"]
    assert manifest["class_counts"]["empty_class"] == 0


def test_cli_runner_matches_the_local_cli(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=2, per_class=3)
    write(ds / "class_1" / "bad.jpg", b"\xff\xd8\xff\xe0 not really")
    local = cli("--dataset-path", str(ds), "--output-path", str(tmp_path / "local"), "--quiet")
    beam = cli(
        "--dataset_path=" + str(ds),
        "--output_path=" + str(tmp_path / "beam"),
        "--runner",
        "DirectRunner",
        "--direct_num_workers=1",  # a Beam option, passed through
    )
    assert local.returncode == 0 and beam.returncode == 0, beam.stderr
    assert files_of(tmp_path / "beam") == files_of(tmp_path / "local")
    assert "skipped class_1/bad.jpg" in beam.stdout and "DirectRunner" in beam.stdout
    again = cli("--dataset-path", str(ds), "--output-path", str(tmp_path / "beam"), "--runner",
                "DirectRunner")  # fmt: skip
    assert again.returncode == 2 and "--overwrite" in again.stderr  # a finished conversion


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--num_workers=4"], "unrecognized arguments: --num_workers=4"),
        (["--runner", "DirectRunner", "--workers", "2"], "--direct_num_workers"),
        (["--runner", "DirectRunner", "--output-path", "gs://bucket/out"], "Cloud Storage FUSE"),
        (  # Beam would drop a misspelt converter option and run with the default
            ["--runner", "DirectRunner", "--size-per-recrod", "100000"],
            "unrecognized argument --size-per-recrod (did you mean --size-per-record?)",
        ),
    ],
)
def test_cli_refuses_what_it_cannot_do(tmp_path, args, message):
    ds = make_dataset(tmp_path / "ds", classes=1, per_class=1)
    result = cli("--dataset-path", str(ds), "--output-path", str(tmp_path / "out"), *args)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_without_beam_the_cli_says_how_to_install_it(tmp_path):
    blocker = tmp_path / "site" / "apache_beam"
    write(blocker / "__init__.py", b"raise ImportError('No module named apache_beam')\n")
    ds = make_dataset(tmp_path / "ds", classes=1, per_class=1)
    path = os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])
    result = cli("--dataset-path", str(ds), "--output-path", str(tmp_path / "out"),
                 "--runner", "DirectRunner", env={"PYTHONPATH": path})  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"error: {INSTALL_HINT}"]
    assert "pip install -e '.[beam]'" in INSTALL_HINT


def test_an_error_found_inside_the_pipeline_is_the_local_error(tmp_path):
    ds = tmp_path / "ds"
    write(ds / "a" / "README", b"hello\n")
    write(ds / "a" / "bad.jpg", b"\xff\xd8\xff")
    with pytest.raises(C.ConvertError) as local:
        run(ds, tmp_path / "local")
    with pytest.raises(C.ConvertError) as beam:
        convert_beam(ds, tmp_path / "beam", progress=False)
    assert str(beam.value) == str(local.value)
    assert not (tmp_path / "beam").exists()  # nothing written before the scan succeeded


def test_overwrite_replaces_an_older_conversion(tmp_path, caplog):
    ds = make_dataset(tmp_path / "ds", classes=2, per_class=4)
    out = tmp_path / "out"
    run(ds, out, size_per_record=500)  # many small shards
    old = set(os.listdir(out))
    write(ds / "class_0" / "more.jpg", jpeg_bytes(seed=77))
    manifest = convert_beam(
        ds, out, size_per_record=10**6, overwrite=True, progress=False,
        beam_args=["--direct_num_worker=1"],  # misspelt: Beam ignores it, with a warning
    )  # fmt: skip
    assert "Did you mean '--direct_num_workers'" in caplog.text
    assert manifest["num_shards"] == 1 and manifest["num_records"] == 9
    assert len(old) > 4
    assert sorted(os.listdir(out)) == [
        "class_counts.json",
        "labels.txt",
        "manifest.json",
        "train-00000-of-00001.idx",
        "train-00000-of-00001.tfrecord",
    ]
    assert json.loads((out / "manifest.json").read_text())["num_records"] == 9


def test_a_write_error_is_the_local_write_error(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=1, per_class=2)
    errors = {}
    for engine, fn in (("local", run), ("beam", convert_beam)):
        out = tmp_path / engine
        (out / "train-00000-of-00001.tfrecord").mkdir(parents=True)  # in the way, not removable
        kw = {"progress": False} if engine == "beam" else {}
        with pytest.raises(C.ConvertError) as caught:
            fn(ds, out, overwrite=True, **kw)
        errors[engine] = caught.value
    assert isinstance(errors["beam"].__cause__, OSError)  # so the CLI exits 1, as locally
    beam, local = str(errors["beam"]), str(errors["local"])
    assert "cannot write" in beam and beam.replace("/beam/", "/local/") in local


@pytest.mark.slow
def test_measure_beam_vs_local_times_both_on_the_same_images(tmp_path):
    from helpers.bench.beam import measure_beam_vs_local

    result = measure_beam_vs_local(24, workdir=tmp_path, beam_args=[], log=lambda msg: None)
    assert result["images"] == 24 and result["bytes"] > 24 * 1000
    assert result["local_s"] > 0 and result["beam_s"] > 0
    assert result["ratio"] == pytest.approx(result["beam_s"] / result["local_s"])
    assert result["identical"] is True
    manifest = json.loads((tmp_path / "beam-vs-local-beam" / "manifest.json").read_text())
    assert manifest["num_records"] == 24


def test_shards_a_local_run_journalled_are_kept(tmp_path):
    from helpers.convert.resume import Journal

    ds = make_dataset(tmp_path / "ds", classes=2, per_class=6)
    run(ds, tmp_path / "ref", size_per_record=3000)
    the_plan = C.plan(C.scan(ds), C.Settings(size_per_record=3000))
    assert len(the_plan.tasks) > 2  # so Beam writes some shards itself
    out = tmp_path / "out"
    out.mkdir()  # an interrupted local run: two shards written and journalled, no manifest
    done = {r.index: r for r in (C.write_shard(t, out) for t in the_plan.tasks[:2])}
    Journal(str(out)).start(the_plan, done)
    inodes = {r.name: os.stat(out / r.name).st_ino for r in done.values()}
    convert_beam(ds, out, size_per_record=3000, progress=False)  # no --overwrite needed
    assert {name: os.stat(out / name).st_ino for name in inodes} == inodes  # not rewritten
    assert files_of(out) == files_of(tmp_path / "ref")  # journal gone, output complete
