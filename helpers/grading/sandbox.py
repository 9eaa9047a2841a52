"""How a student's kernel is launched: resource limits, a clean environment, bubblewrap.

Every kernel starts through a tiny launcher (``python -c LAUNCHER``) that sets
hard resource limits and then ``exec``\\ s ipykernel, so the limits hold for
the kernel and everything it spawns:

- ``RLIMIT_DATA`` = the memory limit. It counts private writable memory (heap,
  anonymous mmaps, thread stacks): what a memory bomb allocates. Measured on
  this course's stack (TF 2.21, 2 cores): an ipykernel that imported
  TensorFlow and ran a ``tf.data`` pipeline has VmSize 2.4 GB but VmData
  0.5 GB and RSS 0.74 GB. ``RLIMIT_AS`` would have to cover the 2.4 GB of
  reserved address space, which grows with the core count (per-thread stacks
  and malloc arenas), so it is not used. Python code that goes over the limit
  gets a ``MemoryError`` in its cell; the RSS watchdog in
  :mod:`helpers.grading.runner` catches the rest (native allocations, child
  processes) by killing the kernel.
- ``RLIMIT_FSIZE`` caps any single file the kernel writes; ``RLIMIT_CORE`` = 0
  keeps a segfault from dumping a core file.

With ``--sandbox`` the launcher runs under bubblewrap (:func:`bwrap_prefix`):
no network (own network namespace, so not even the grader's loopback), its
own PID/IPC/UTS namespaces, no capabilities, a read-only view of ``/`` with a
private ``/tmp``, the submissions, the output folder, the instructor's
solutions and the grader's home folder hidden, and only the submission's own
working directory writable. The kernel talks to the grader over Unix sockets
in that directory (ZeroMQ ``ipc`` transport), which works across network
namespaces.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

#: Sets hard limits, then becomes the kernel (argv: DATA FSIZE PROGRAM ARGS...).
LAUNCHER = (
    "import os, resource, sys\n"
    "for name, value in (('RLIMIT_DATA', int(sys.argv[1])), ('RLIMIT_FSIZE', int(sys.argv[2])),"
    " ('RLIMIT_CORE', 0)):\n"
    "    limit = getattr(resource, name)\n"
    "    hard = resource.getrlimit(limit)[1]\n"
    "    if hard != resource.RLIM_INFINITY:\n"
    "        value = min(value, hard)\n"
    "    resource.setrlimit(limit, (value, value))\n"
    "os.execv(sys.argv[3], sys.argv[3:])\n"
)

#: Environment variables passed through from the grader (everything else is dropped,
#: so tokens and keys in the instructor's environment never reach student code).
PASS_ENV = (
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "CUDA_VISIBLE_DEVICES",
    "TF_CPP_MIN_LOG_LEVEL",
    "TF_ENABLE_ONEDNN_OPTS",
    "PYTHONHASHSEED",
    "OMP_NUM_THREADS",
)

TMPFS_BYTES = 256 << 20


class SandboxUnavailable(RuntimeError):
    """``--sandbox`` was asked for but bubblewrap is missing or cannot run here."""


def launcher_cmd(memory: int, file_size: int, program: list[str]) -> list[str]:
    """The command that applies the limits and then runs ``program``."""
    return [sys.executable, "-c", LAUNCHER, str(int(memory)), str(int(file_size)), *program]


def kernel_env(workdir: Path, pythonpath: Iterable[str] = ()) -> dict[str, str]:
    """A clean environment for a student's kernel, rooted in its working directory."""
    env = {k: os.environ[k] for k in PASS_ENV if k in os.environ}
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([venv_bin, env.get("PATH", os.defpath)])
    home = workdir / "home"
    env.update(
        HOME=str(home),
        TMPDIR=str(workdir / "tmp"),
        IPYTHONDIR=str(home / ".ipython"),
        MPLCONFIGDIR=str(home / ".matplotlib"),
        MPLBACKEND="Agg",
        JUPYTER_PLATFORM_DIRS="1",
        PYDEVD_DISABLE_FILE_VALIDATION="1",
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONNOUSERSITE="1",
        PYTHONPATH=os.pathsep.join(dict.fromkeys([str(ROOT), *map(str, pythonpath)])),
        TFRECORD_COURSE_NO_PROGRESS="1",
    )
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    for sub in ("home", "tmp"):
        (workdir / sub).mkdir(parents=True, exist_ok=True)
    return env


def find_bwrap() -> str:
    """The bubblewrap executable, checked to work here.

    Raises:
      SandboxUnavailable: with what to install or why it cannot run.
    """
    exe = shutil.which("bwrap")
    if exe is None:
        raise SandboxUnavailable(
            "--sandbox needs bubblewrap (the `bwrap` command), which is not installed. "
            "Install it (Debian/Ubuntu: `sudo apt-get install bubblewrap`; Fedora: "
            "`sudo dnf install bubblewrap`) or grade without --sandbox."
        )
    try:
        probe = subprocess.run(
            [exe, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "true"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise SandboxUnavailable(f"bubblewrap ({exe}) cannot run: {err}") from None
    if probe.returncode != 0:
        raise SandboxUnavailable(
            f"bubblewrap ({exe}) cannot create a sandbox here: {probe.stderr.strip()} "
            "(unprivileged user namespaces may be disabled; see "
            "/proc/sys/kernel/unprivileged_userns_clone)"
        )
    return exe


def _is_inside(path: Path, parent: Path) -> bool:
    try:
        path.relative_to(parent)
        return True
    except ValueError:
        return False


def bwrap_prefix(
    bwrap: str,
    workdir: Path,
    cwd: Path,
    hide: Iterable[Path] = (),
    readable: Iterable[Path] = (),
) -> list[str]:
    """The bubblewrap command line that wraps one kernel.

    Args:
      bwrap: the ``bwrap`` executable.
      workdir: the submission's own directory: the only writable place.
      cwd: where the kernel starts (inside ``workdir``).
      hide: folders to make invisible (empty tmpfs on top), unless the course
        itself (repo, Python prefixes, ``readable``) lives inside them.
      readable: files or folders that must stay visible read-only even where
        ``/tmp`` or a hidden folder would cover them (e.g. an exercises module).
    """
    workdir, cwd = workdir.resolve(), cwd.resolve()
    readable = [Path(p).resolve() for p in readable]
    needed = [ROOT, Path(sys.prefix), Path(sys.base_prefix), *readable]
    needed = [p.resolve() for p in needed]

    def hideable(path: Path) -> bool:
        # the workdir may lie inside a hidden folder: it is bound again on top
        return not any(_is_inside(n, path) for n in needed)

    args = [
        bwrap,
        "--die-with-parent",
        "--new-session",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "grader",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--size",
        str(TMPFS_BYTES),
        "--tmpfs",
        "/dev/shm",
        "--size",
        str(TMPFS_BYTES),
        "--tmpfs",
        "/tmp",
        "--size",
        str(TMPFS_BYTES),
        "--tmpfs",
        "/var/tmp",
    ]
    # The course may itself live under /tmp (a CI clone, a venv there): the
    # tmpfs above would hide it and the kernel could not start. Bind it back,
    # read-only, before the hidden folders go on top (they may lie inside it).
    scratch = [Path("/tmp"), Path("/var/tmp"), Path("/dev/shm")]
    for path in dict.fromkeys(needed):
        if path.exists() and any(_is_inside(path, s) for s in scratch):
            args += ["--ro-bind", str(path), str(path)]
    targets: list[Path] = []
    for path in hide:
        path = Path(path).resolve()
        if path.exists() and hideable(path):
            targets.append(path)
    home = Path.home().resolve()
    if home.is_dir() and home != Path("/"):
        if hideable(home):
            targets.append(home)
        else:  # the venv or the repo lives in the home folder: hide everything else in it
            targets.extend(p for p in home.iterdir() if hideable(p.resolve()))
    for path in targets:
        if path.is_dir() and not path.is_symlink():
            args += ["--tmpfs", str(path)]
        elif path.exists():
            args += ["--ro-bind", "/dev/null", str(path)]
    for path in readable:  # under /tmp they are bound already; here: inside a hidden folder
        if path.exists() and any(_is_inside(path, t) for t in targets):
            args += ["--ro-bind", str(path), str(path)]
    args += [
        "--bind",
        str(workdir),
        str(workdir),
        "--chdir",
        str(cwd),
        # ipykernel exits when its parent looks like init (PID 1 in the new namespace).
        "--unsetenv",
        "JPY_PARENT_PID",
        "--",
    ]
    return args
