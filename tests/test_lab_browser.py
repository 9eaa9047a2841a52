"""A learner's first session, in a real browser: JupyterLab started as ``make lab`` starts it.

Chromium (Debian's ``chromium`` package, never a downloaded browser) opens lesson 02,
runs all cells, and the test asserts what a learner sees:

- no stderr box anywhere: native start-up lines written on file descriptor 2 (TensorFlow's,
  and one the test plants the same way) stay out of the cells,
  blank exercises raise no traceback, a check prints no checker frames;
- every blank exercise's check says, in one line, that it is not attempted yet;
- typing a correct answer into an exercise cell and running its check shows a pass,
  and the lesson's progress cell (its last cell) then counts it.

Screenshots go to ``build/lab-*.png``. Skips (with the reason) without Chromium or
Playwright.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path(os.environ.get("TFRECORD_COURSE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LESSON = "02_example_feature_types.ipynb"
STDERR_BOX = '.jp-RenderedText[data-mime-type="application/vnd.jupyter.stderr"]'
NATIVE_LINE = (
    b"E0000 00:00:1.0  1 cuda_platform.cc:52] failed call to cuInit: UNKNOWN ERROR (303)\n"
)
ANSWER = """def uint64_feature(values):
    as_int64 = np.asarray(values, dtype=np.uint64).view(np.int64)
    return tf.train.Feature(int64_list=tf.train.Int64List(value=as_int64.tolist()))
"""

sync_api = pytest.importorskip(
    "playwright.sync_api",
    reason="playwright is not installed (pip install -e '.[dev]'): browser test skipped",
)
if not CHROMIUM.exists():
    pytest.skip(
        f"{CHROMIUM} not found (apt-get install chromium): browser test skipped",
        allow_module_level=True,
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_server(url: str, proc: subprocess.Popen, log: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"make lab exited early:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(
        f"JupyterLab did not answer within {timeout:.0f} s:\n{log.read_text()[-3000:]}"
    )


@pytest.fixture
def lab(tmp_path):
    """``make lab`` on a copy of the lesson (the browser's autosave must not touch lessons/)."""
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    nb = json.loads((ROOT / "lessons" / LESSON).read_text())
    # TensorFlow writes its start-up lines from C++ on file descriptor 2 (whether it prints
    # any depends on the machine); this cell writes one the same way, on every machine.
    native = {
        "cell_type": "code",
        "execution_count": None,
        "id": "native-stderr",
        "metadata": {},
        "outputs": [],
        "source": "import os\n\nos.write(2, " + repr(NATIVE_LINE) + ")",
    }
    nb["cells"].insert(1, native)
    (lessons / LESSON).write_text(json.dumps(nb))
    settings = tmp_path / "lab-settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    # render every cell (JupyterLab 4 only keeps the visible ones in the page by default)
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    news = tmp_path / "lab-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    port, token = _free_port(), "course-browser-test"
    env = dict(
        os.environ,
        TFRECORD_COURSE_PROGRESS=str(tmp_path / "progress.json"),  # a fresh learner
        JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "lab-settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
    )
    args = f"--no-browser --port={port} --ServerApp.ip=127.0.0.1 --IdentityProvider.token={token}"
    if os.geteuid() == 0:  # CI containers run as root; JupyterLab refuses that by default
        args += " --allow-root"
    log = tmp_path / "lab.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            # -o: the venv is already bootstrapped (make test did it); never reinstall here
            [
                "make",
                "-s",
                "-o",
                ".venv/.installed",
                "lab",
                f"LAB_DIR={lessons}",
                f"LAB_ARGS={args}",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for_server(f"{base}/api/status?token={token}", proc, log)
        yield {"url": f"{base}/lab/tree/{LESSON}?token={token}", "log": log}
    finally:
        try:
            request = urllib.request.Request(f"{base}/api/shutdown?token={token}", method="POST")
            urllib.request.urlopen(request, timeout=10).close()
            proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)


def _cells(page) -> list[dict[str, str]]:
    """Every code cell's source and rendered output text, in order."""
    return page.evaluate(
        """() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')].map(cell => ({
            source: cell.querySelector('.cm-content')?.innerText ?? '',
            output: cell.querySelector('.jp-OutputArea')?.innerText ?? '',
            prompt: cell.querySelector('.jp-InputPrompt')?.innerText ?? '',
        }))"""
    )


def _wait_idle(page, timeout_s: float = 300) -> None:
    page.wait_for_selector(
        ".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=timeout_s * 1000
    )


def _run_all(page) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        prompts = [c["prompt"] for c in _cells(page)]
        if prompts and all(re.search(r"\[\d+\]", p) for p in prompts):
            return
        time.sleep(1)
    raise AssertionError(f"Run All did not finish: prompts {prompts}")


def _run_cell(page, index: int) -> None:
    """Run one cell and wait until its prompt shows a new execution count."""
    cell = page.locator(".jp-Notebook .jp-CodeCell").nth(index)
    prompt = cell.locator(".jp-InputPrompt")
    before = prompt.inner_text()
    prompt.click()  # select the cell (command mode)
    page.keyboard.press("Control+Enter")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        now = prompt.inner_text()
        if now != before and re.search(r"\[\d+\]", now):
            return
        time.sleep(0.5)
    raise AssertionError(f"cell {index} did not finish running (prompt {prompt.inner_text()!r})")


def test_a_learner_runs_a_lesson_and_passes_an_exercise(lab):
    out_dir = ROOT / "build"
    out_dir.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as play:
        browser = play.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(lab["url"])
            page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=120_000)
            # the notebook names the course kernel; wait until it has started
            page.get_by_text("TFRecord course | Idle").wait_for(timeout=180_000)
            _wait_idle(page)
            _run_all(page)
            _wait_idle(page)
            page.screenshot(path=str(out_dir / "lab-run-all.png"))

            cells = _cells(page)
            boxes = page.locator(STDERR_BOX)
            assert boxes.count() == 0, "stderr boxes after Run All: " + " | ".join(
                boxes.nth(i).inner_text()[:300] for i in range(min(boxes.count(), 3))
            )
            checks = [i for i, c in enumerate(cells) if re.match(r"\s*check\(", c["source"])]
            assert len(checks) == 4, [c["source"][:40] for c in cells]
            for i in checks:
                lines = [ln for ln in cells[i]["output"].splitlines() if ln.strip()]
                assert len(lines) == 1 and "not attempted yet" in lines[0], cells[i]
            assert "Lesson 02: 0 of 4 exercises passed" in cells[-1]["output"], cells[-1]
            everything = "\n".join(c["output"] for c in cells)
            assert not re.search(r"absl::InitializeLog|cuInit|cuda drivers|Traceback", everything)

            # type a correct answer into the uint64 exercise and run it and its check
            exercise = next(i for i, c in enumerate(cells) if "def uint64_feature" in c["source"])
            editor = page.locator(".jp-Notebook .jp-CodeCell").nth(exercise).locator(".cm-content")
            editor.click()
            page.keyboard.press("Control+A")
            page.keyboard.insert_text(ANSWER)
            page.keyboard.press("Escape")
            _run_cell(page, exercise)
            _run_cell(page, exercise + 1)
            _run_cell(page, len(cells) - 1)
            cells = _cells(page)
            assert "✔ passed: 02.uint64_feature" in cells[exercise + 1]["output"], cells[
                exercise + 1
            ]
            assert "Lesson 02: 1 of 4 exercises passed" in cells[-1]["output"], cells[-1]
            assert page.locator(STDERR_BOX).count() == 0
            page.locator(".jp-Notebook .jp-CodeCell").nth(exercise).scroll_into_view_if_needed()
            page.screenshot(path=str(out_dir / "lab-exercise-passed.png"))
            page.locator(".jp-Notebook .jp-CodeCell").nth(
                len(cells) - 1
            ).scroll_into_view_if_needed()
            page.screenshot(path=str(out_dir / "lab-progress.png"))
        finally:
            browser.close()
