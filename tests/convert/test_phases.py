"""The phase API: scan, plan, write_shard, write_manifest run by hand give convert()'s bytes."""

from __future__ import annotations

import pickle

from convert_common import files_of, jpeg_bytes, make_dataset, run, write

from helpers import convert as C
from helpers.convert.advice import sizing_advice


def test_phases_in_any_order_give_the_same_bytes_as_convert(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=3, per_class=8)
    write(ds / "class_2" / "bad.jpg", b"\xff\xd8\xff\xe0 not really")
    ref = tmp_path / "ref"
    run(ds, ref, size_per_record=3000)

    settings = C.Settings(size_per_record=3000)
    scanned = C.scan(ds)
    the_plan = C.plan(scanned, settings)
    assert C.plan(C.scan(ds), settings) == the_plan  # deterministic
    out = tmp_path / "by_hand"
    out.mkdir()
    tasks = pickle.loads(pickle.dumps(the_plan.tasks))  # what another engine would ship
    results = [C.write_shard(task, out) for task in reversed(tasks)]
    C.write_manifest(the_plan, results, out)
    assert files_of(out) == files_of(ref)


def test_a_git_lfs_pointer_image_is_named_as_such(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=1, per_class=2)
    write(
        ds / "class_0" / "photo.jpg",
        b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"ab" * 32 + b"\nsize 52731\n",
    )
    write(ds / "class_0" / "real.jpg", jpeg_bytes(seed=4))
    manifest = run(ds, tmp_path / "out")
    (skipped,) = manifest["skipped"]
    assert skipped["path"] == "class_0/photo.jpg"
    assert "git-LFS pointer" in skipped["reason"] and "git lfs pull" in skipped["reason"]


def test_sizing_advice_against_the_rules():
    line, warnings = sizing_advice(40, 4 * 10**9)  # 40 x 100 MB: by the book
    assert "40 x 100.0 MB" in line and warnings == []
    _, warnings = sizing_advice(5, 10**9)  # too few for one reading host
    assert (
        len(warnings) == 1
        and "fewer than 10" in warnings[0]
        and "--size-per-record 100000000" in warnings[0]
    )
    _, warnings = sizing_advice(4000, 4 * 10**9)  # 1 MB shards
    assert len(warnings) == 1 and "below 64 MiB" in warnings[0]
    _, warnings = sizing_advice(2, 5 * 2**30)  # 2.5 GiB shards
    assert "above 1 GiB" in warnings[-1]
    _, warnings = sizing_advice(1, 2 * 10**6)  # a tiny dataset: one shard is fine
    assert warnings == []
    _, warnings = sizing_advice(20, 4 * 10**9, hosts=4)  # 4 hosts need 40
    assert "fewer than 40" in warnings[0]
