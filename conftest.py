"""Repo-wide pytest hooks.

nbval compares every output of the solution notebooks. TensorFlow writes
timestamped, PID-bearing lines to the kernel's stderr ("All log messages
before absl::InitializeLog()", CUDA / oneDNN notices) and tqdm draws its bars
there, so stderr streams are never compared: stdout, results and displays are.
Timings and memory addresses in stdout are masked by ``.nbval-sanitize.cfg``.
"""


def pytest_collection_modifyitems(session, config, items):
    seen = set()
    for item in items:
        parent = getattr(item, "parent", None)
        if parent is None or id(parent) in seen or not hasattr(parent, "skip_compare"):
            continue
        seen.add(id(parent))
        parent.skip_compare = tuple(parent.skip_compare) + ("stderr",)
