"""File operations on folders a student's kernel can write, done so the kernel cannot redirect them.

A kernel may replace any file or folder it can write with a symbolic link, a
FIFO, a hard link or a 3,000-level tree between two of the grader's looks. So
the grader

- never opens anything it *trusts* (its log, the cases it verifies against)
  in the kernel's folder: those live in a separate folder the kernel cannot
  see or write (:mod:`helpers.grading.submission` lays the folders out);
- reads what the kernel *produces* (answer files) through a directory file
  descriptor it opened itself, with ``O_NOFOLLOW`` and ``O_NONBLOCK``,
  accepting only a regular file and at most ``limit`` bytes;
- removes the kernel's folder with ``rm -rf`` (iterative, never follows a
  link) and, if that is missing or fails, an iterative fd-based walk; a
  failure is reported, never raised.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import subprocess

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class UnsafeFile(OSError):
    """The path is a link, not a regular file, or too large; ``str(err)`` says which."""


def open_dir(name: str, dir_fd: int | None = None) -> int:
    """A file descriptor of the folder ``name`` (relative to ``dir_fd``), never through a link."""
    return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def make_private_dir(name: str, dir_fd: int) -> int:
    """Create ``name`` inside ``dir_fd`` (it must not exist yet) and return its descriptor."""
    os.mkdir(name, 0o700, dir_fd=dir_fd)
    return open_dir(name, dir_fd)


def read_file_at(dir_fd: int, name: str, limit: int, *, close_dir: bool = False) -> bytes:
    """The bytes of the regular file ``name`` in the folder ``dir_fd``.

    ``close_dir`` closes ``dir_fd`` afterwards (for a descriptor opened just for this).

    Raises:
      FileNotFoundError: there is no such entry.
      UnsafeFile: a link, FIFO, device or folder, or more than ``limit`` bytes.
    """
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise UnsafeFile(f"{name} is a symbolic link") from None
        raise
    finally:
        if close_dir:
            os.close(dir_fd)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFile(f"{name} is not a regular file")
        if info.st_size > limit:
            raise UnsafeFile(f"{name} is {info.st_size} bytes, over the {limit}-byte limit")
        data = f.read(limit + 1)
    if len(data) > limit:  # it grew while being read
        raise UnsafeFile(f"{name} is over the {limit}-byte limit")
    return data


def tree_usage(path: str, max_entries: int = 200_000) -> tuple[int, int]:
    """``(bytes, entries)`` under ``path``, never following links; stops at ``max_entries``.

    Iterative (no recursion limit) and tolerant of entries vanishing while it walks.
    """
    total = count = 0
    stack = [path]
    while stack and count < max_entries:
        top = stack.pop()
        try:
            with os.scandir(top) as it:
                for entry in it:
                    count += 1
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    total += info.st_blocks * 512
                    if stat.S_ISDIR(info.st_mode):
                        stack.append(entry.path)
        except OSError:
            continue
    return total, count


def _remove_walk(path: str) -> None:
    """Iterative removal through directory descriptors (a fallback when ``rm`` fails)."""
    root = os.open(path, _DIR_FLAGS)
    stack: list[tuple[int, str | None]] = [(root, None)]  # (dir fd, its name in the parent)
    while stack:
        fd, _ = stack[-1]
        pushed = False
        for entry in list(os.scandir(fd)):
            try:
                os.chmod(entry.name, 0o700, dir_fd=fd, follow_symlinks=False)
            except OSError:
                pass
            if entry.is_dir(follow_symlinks=False):
                try:
                    child = open_dir(entry.name, fd)
                except OSError:
                    continue
                stack.append((child, entry.name))
                pushed = True
                break
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.name, dir_fd=fd)
        if pushed:
            continue
        fd, name = stack.pop()
        os.close(fd)
        if stack and name is not None:
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(name, dir_fd=stack[-1][0])
    os.rmdir(path)


def remove_tree(path: str) -> str:
    """Remove ``path`` and everything in it; return ``""`` or why it could not be removed.

    Never raises and never follows a symbolic link, however deep the tree.
    """
    if not os.path.lexists(path):
        return ""
    if os.path.islink(path) or not os.path.isdir(path):
        try:
            os.unlink(path)
            return ""
        except OSError as err:
            return f"{path}: {err.strerror}"
    rm = shutil.which("rm")
    if rm is not None:
        try:
            subprocess.run(
                [rm, "-rf", "--one-file-system", "--", path],
                capture_output=True,
                timeout=600,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            pass
    if not os.path.lexists(path):
        return ""
    try:
        _remove_walk(path)
        return ""
    except OSError as err:
        return f"{path} could not be removed completely ({err.strerror or err})"


def printable(name: str) -> str:
    """A folder name as printable text: undecodable bytes and control characters escaped."""
    raw = os.fsencode(name)
    text = raw.decode("utf-8", errors="backslashreplace")
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)
