"""How a student's kernel is launched: resource limits, a clean environment, bubblewrap.

Every kernel starts through a tiny launcher (``python -c LAUNCHER``) that sets
hard resource limits and then ``exec``\\ s the kernel, so the limits hold for
the kernel and everything it spawns:

- ``RLIMIT_DATA`` = the memory limit. It counts private writable memory (heap,
  anonymous mmaps, thread stacks): what a memory bomb allocates. Measured on
  this course's stack (TF 2.21, 2 cores): an ipykernel that imported
  TensorFlow and ran a ``tf.data`` pipeline has VmSize 2.4 GB but VmData
  0.5 GB and RSS 0.74 GB. ``RLIMIT_AS`` would have to cover the 2.4 GB of
  reserved address space, which grows with the core count, so it is not used.
  The RSS watchdog in :mod:`helpers.grading.runner` catches the rest.
- ``RLIMIT_FSIZE`` caps any single file the kernel writes; ``RLIMIT_CORE`` = 0
  keeps a segfault from dumping a core file.

By default (``--no-sandbox`` opts out) the launcher runs under bubblewrap
(:func:`bwrap_prefix`), which binds an *allowlist*, never ``/``: the Python
environments (the venv and its base interpreter), the ``helpers`` package,
the fixture ``data/``, the system libraries (``/usr``, ``/lib*``, a few files
of ``/etc``), a fresh ``/dev`` and ``/proc``, size-limited private ``/tmp``,
``/var/tmp`` and ``/dev/shm``, and the kernel's own folder, the only
writable place. Everything else (``tests/``, ``solutions/``, ``build/``,
``.git``, other submissions, the grader's output and working files, ``/run``
and its sockets, home folders) does not exist inside. No network (own
network namespace), its own PID/IPC/UTS namespaces, no capabilities. When the
grader may create a ``pids`` cgroup (root, or a delegated cgroup), the
kernel's processes are counted there (``pids.max``); otherwise the watchdog
counts them. The PID namespace means killing its first process kills every
process the submission started.
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

#: Puts itself into a pids cgroup, then becomes the program (``sh -c CGROUP_JOIN PROCS PROGRAM
#: ARGS...``): a shell, because a second Python start-up per kernel costs seconds under load.
CGROUP_JOIN = 'echo $$ > "$0" && exec "$@"'

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

#: System paths a Python kernel needs, bound read-only when they exist.
SYSTEM_PATHS = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/opt/conda")
ETC_PATHS = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/mime.types",
    "/etc/ssl",
    "/etc/fonts",
    "/etc/matplotlibrc",
    "/etc/alternatives",
    "/sys/devices/system/cpu",
)
#: Inside the repository only these are visible (never tests/, solutions/, build/, .git).
REPO_PATHS = ("helpers", "data")

INSTALL_HINT = (
    "the sandbox needs bubblewrap (`bwrap`), which is not installed: "
    "`sudo apt-get install bubblewrap` (Fedora: `sudo dnf install bubblewrap`), "
    "or grade with --no-sandbox (unsafe: student code runs with your rights)"
)


class SandboxUnavailable(RuntimeError):
    """The sandbox was asked for but bubblewrap is missing or cannot run here."""


def launcher_cmd(memory: int, file_size: int, program: list[str]) -> list[str]:
    """The command that applies the limits and then runs ``program``."""
    return [sys.executable, "-c", LAUNCHER, str(int(memory)), str(int(file_size)), *program]


def kernel_env(kernel_dir: Path, pythonpath: Iterable[str] = ()) -> dict[str, str]:
    """A clean environment for a student's kernel, rooted in its own folder."""
    env = {k: os.environ[k] for k in PASS_ENV if k in os.environ}
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([venv_bin, env.get("PATH", os.defpath)])
    home = kernel_dir / "home"
    env.update(
        HOME=str(home),
        TMPDIR=str(kernel_dir / "tmp"),
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
        (kernel_dir / sub).mkdir(parents=True, exist_ok=True)
    return env


def find_bwrap() -> str:
    """The bubblewrap executable, checked to work here.

    Raises:
      SandboxUnavailable: with what to install or why it cannot run.
    """
    exe = shutil.which("bwrap")
    if exe is None:
        raise SandboxUnavailable(INSTALL_HINT)
    try:
        probe = subprocess.run(
            [
                exe,
                *_system_binds(),
                *[arg for p in allowlist() for arg in ("--ro-bind", str(p), str(p))],
                "--unshare-net",
                "--unshare-pid",
                "--",
                sys.executable,
                "-c",
                "",
            ],
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
            "/proc/sys/kernel/unprivileged_userns_clone), or grade with --no-sandbox"
        )
    return exe


def _is_inside(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def allowlist(readable: Iterable[Path] = ()) -> list[Path]:
    """Everything the kernel may read: Python, the package, the data, the system libraries."""
    paths = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent.parent]
    paths += [ROOT / p for p in REPO_PATHS]
    paths += [Path(p) for p in readable]
    found: list[Path] = []
    for path in paths:
        path = Path(os.path.abspath(path))
        if path.exists() and not any(_is_inside(path, f) for f in found):
            found = [f for f in found if not _is_inside(f, path)] + [path]
    return found


def _system_binds() -> list[str]:
    args: list[str] = []
    for name in (*SYSTEM_PATHS, *ETC_PATHS):
        path = Path(name)
        if path.is_symlink():  # /bin -> usr/bin on merged-/usr systems
            args += ["--symlink", os.readlink(path), name]
        elif path.exists():
            args += ["--ro-bind", name, name]
    return args


def bwrap_prefix(
    bwrap: str,
    kernel_dir: Path,
    cwd: Path,
    readable: Iterable[Path] = (),
    read_only: Iterable[Path] = (),
    writable: Iterable[Path] = (),
    tmpfs_bytes: int = TMPFS_BYTES,
) -> list[str]:
    """The bubblewrap command line that wraps one kernel.

    Args:
      bwrap: the ``bwrap`` executable.
      kernel_dir: the kernel's own folder: the only writable place.
      cwd: where the kernel starts (inside ``kernel_dir``).
      readable: more files or folders to show read-only (an exercises module,
        a kernelspec's interpreter).
      read_only: folders inside ``kernel_dir`` the kernel may read but not
        change (the copies of the inputs).
      writable: more folders the kernel may write in (its socket folder).
      tmpfs_bytes: size of each private ``/tmp``, ``/var/tmp``, ``/dev/shm``.
    """
    kernel_dir, cwd = Path(os.path.abspath(kernel_dir)), Path(os.path.abspath(cwd))
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
        *_system_binds(),
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    for scratch in ("/tmp", "/var/tmp", "/dev/shm"):
        args += ["--size", str(tmpfs_bytes), "--tmpfs", scratch]
    for path in allowlist(readable):  # after the tmpfs: the course may live under /tmp
        args += ["--ro-bind", str(path), str(path)]
    for path in (kernel_dir, *writable):
        args += ["--bind", str(path), str(path)]
    for path in read_only:
        args += ["--ro-bind", str(path), str(path)]
    args += [
        # the root bubblewrap builds is a tmpfs: read-only, or it would take unlimited writes
        "--remount-ro",
        "/",
        "--chdir",
        str(cwd),
        # ipykernel exits when its parent looks like init (PID 1 in the new namespace).
        "--unsetenv",
        "JPY_PARENT_PID",
        "--",
    ]
    return args


# ---------------------------------------------------------------------------
# Counting a submission's processes
# ---------------------------------------------------------------------------


def pids_cgroup_root() -> Path | None:
    """A ``pids`` cgroup folder this process may create children in, or None."""
    for base in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
        if (base / "pids.max").exists() or (base / "cgroup.procs").exists():
            controllers = base / "cgroup.controllers"
            if controllers.exists() and "pids" not in controllers.read_text().split():
                continue
            if os.access(base, os.W_OK):
                return base
    return None


def make_pids_cgroup(name: str, limit: int) -> Path | None:
    """A new cgroup limited to ``limit`` processes (and threads), or None if not allowed here."""
    base = pids_cgroup_root()
    if base is None:
        return None
    path = base / name
    try:
        path.mkdir()
        (path / "pids.max").write_text(str(limit))
    except OSError:
        remove_cgroup(path)
        return None
    return path


def cgroup_prefix(cgroup: Path | None) -> list[str]:
    """The command prefix that moves the kernel (and all it starts) into ``cgroup``."""
    if cgroup is None:
        return []
    return ["/bin/sh", "-c", CGROUP_JOIN, str(cgroup / "cgroup.procs")]


def cgroup_pids(cgroup: Path) -> list[int]:
    try:
        return [int(p) for p in (cgroup / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def remove_cgroup(cgroup: Path) -> None:
    try:
        cgroup.rmdir()
    except OSError:
        pass


def namespace_members(ns_inode: str) -> list[int]:
    """Every process whose PID namespace is ``ns_inode`` (e.g. ``pid:[4026532]``)."""
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry.name}/ns/pid") == ns_inode:
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def session_members(sid: int) -> list[int]:
    """Every process in the session ``sid`` (the unsandboxed kernel's)."""
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if os.getsid(int(entry.name)) == sid:
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids
