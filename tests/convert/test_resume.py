"""Interrupted conversions: no partial shard ever, and a rerun resumes byte-identically."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from convert_common import PY, ROOT, cli, files_of, make_dataset, run, write

from helpers import convert as C
from helpers import records as R
from helpers.convert.resume import Journal

SLOW = Path(__file__).with_name("slow_convert.py")


def _wait_for_shards(out: Path, proc: subprocess.Popen, count: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if out.is_dir() and sum(1 for p in out.glob("train-*.tfrecord")) >= count:
            return
        if proc.poll() is not None:
            raise AssertionError(f"converter exited early: {proc.returncode} {proc.stderr.read()}")
        time.sleep(0.02)
    raise AssertionError("no shards appeared")


def _slow(args: list[str], **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [PY, str(SLOW), "0.1", *args], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True, **kw
    )


def test_sigkill_then_rerun_resumes_and_sigint_keeps_completed_shards(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=4, per_class=75, w=10, h=8)  # 300 small images
    ref = tmp_path / "ref"
    manifest = run(ds, ref, size_per_record=8_000)
    n = manifest["num_shards"]
    assert n >= 20
    args = ["--dataset-path", str(ds), "--size-per-record", "8000", "--workers", "1", "--quiet"]

    # SIGKILL the whole process group partway
    out = tmp_path / "killed"
    proc = _slow([*args, "--output-path", str(out)], start_new_session=True)
    _wait_for_shards(out, proc, 3)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    finals = sorted(out.glob("train-*.tfrecord"))
    assert 3 <= len(finals) < n and not (out / "manifest.json").exists()
    for p in finals:  # every file under a final name is complete and correct
        assert p.read_bytes() == (ref / p.name).read_bytes()
        assert len(list(R.read_records(p))) > 0
    # the same command again (no --overwrite): keeps the completed shards, writes the rest
    again = cli(*args[:-1], "--output-path", str(out))
    assert again.returncode == 0, again.stderr
    kept = int(again.stdout.split("kept ")[1].split(" ")[0])
    assert len(finals) - 1 <= kept <= len(finals)  # the journal line of the last one may be lost
    assert files_of(out) == files_of(ref)  # byte-identical shards, indexes, labels and manifest

    # changed input: an interrupted run of other files is refused unless --overwrite
    out = tmp_path / "changed"
    proc = _slow([*args, "--output-path", str(out)], start_new_session=True)
    _wait_for_shards(out, proc, 2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    write(ds / "class_0" / "img_000.jpg", (ds / "class_1" / "img_000.jpg").read_bytes())
    refused = cli(*args, "--output-path", str(out))
    assert refused.returncode == 2 and "(other input files: 300 images, " in refused.stderr
    redone = cli(*args, "--output-path", str(out), "--overwrite")
    assert redone.returncode == 0, redone.stderr
    assert all(r.ok for r in R.verify_paths([str(out)]))

    # SIGINT (Ctrl-C) to the main process: exit 130, one line; completed shards stay for a rerun
    ref2 = tmp_path / "ref2"
    run(ds, ref2, size_per_record=8_000)
    out = tmp_path / "interrupted"
    proc = _slow([*args, "--output-path", str(out)])
    _wait_for_shards(out, proc, 2)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 130
    err = proc.stderr.read().strip().splitlines()
    assert len(err) == 1 and err[0].startswith("interrupted"), err
    assert not any(".tmp-" in p.name for p in out.iterdir())
    assert cli(*args, "--output-path", str(out)).returncode == 0
    assert files_of(out) == files_of(ref2)


def _children(pid: int) -> list[int]:
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry.name))
    return kids


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie nobody reaps is dead too


def test_workers_exit_when_the_converter_is_killed(tmp_path):
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc to find the worker processes")
    ds = make_dataset(tmp_path / "ds", classes=4, per_class=75, w=10, h=8)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [PY, "-m", "helpers.convert", "--dataset-path", str(ds), "--output-path",
         str(tmp_path / "out"), "--size-per-record", "8000", "--workers", "2", "--quiet"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while len(workers) < 2 and time.monotonic() < deadline and proc.poll() is None:
        workers = [k for k in _children(proc.pid) if "spawn_main" in _cmdline(k)]
        time.sleep(0.01)
    assert len(workers) == 2, "the converter did not start two workers"
    proc.kill()  # the parent only, as the OOM killer would
    proc.wait(timeout=30)
    deadline = time.monotonic() + 20
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    survivors = [w for w in workers if _alive(w)]
    for w in survivors:
        os.kill(w, signal.SIGKILL)
    assert not survivors, "worker processes outlived the killed converter"
    proc.stdout.close()  # nothing else holds the pipe open any more: this does not hang
    proc.stderr.close()


def test_a_refused_rerun_says_what_changed(tmp_path):
    ds = make_dataset(tmp_path / "ds", classes=2, per_class=4)
    out = tmp_path / "out"
    out.mkdir()
    journal = Journal(str(out))
    before = C.plan(C.scan(ds), C.Settings(size_per_record=3000))
    journal.start(before, {})

    def why(settings: C.Settings) -> str:
        return journal.difference(C.plan(C.scan(ds), settings))

    assert why(C.Settings(size_per_record=3000)) == (
        "its plan fingerprint differs (written by another version of the converter?)"
    )  # nothing changed: the same plan is not refused by the converter in the first place
    assert why(C.Settings(size_per_record=4000, seed=1)) == (
        "other settings: --size-per-record was 3000, now 4000; --seed was 0, now 1"
    )
    write(ds / "class_0" / "extra.jpg", (ds / "class_1" / "img_000.jpg").read_bytes())
    assert why(C.Settings(size_per_record=3000)).startswith("other input files: 8 images, ")
    os.unlink(ds / "class_0" / "extra.jpg")
    os.utime(ds / "class_0" / "img_000.jpg", ns=(1, 1))  # touched: same bytes, new mtime
    assert "modification time differs" in why(C.Settings(size_per_record=3000))
    Path(journal.path).write_text("not json\n")
    assert (
        why(C.Settings(size_per_record=3000)) == "its journal .convert-journal.jsonl is unreadable"
    )
