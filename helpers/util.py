"""Small utilities shared by the converter, the pipeline, the benchmarks and the grader.

One definition each: a byte-size parser, an atomic file write, a folder sync, a file
digest, the number of usable cores and a progress bar. Nothing here imports TensorFlow.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
from collections.abc import Iterator
from typing import IO, Any

__all__ = [
    "atomic_open",
    "atomic_write",
    "fsync_dir",
    "parse_size",
    "progress_bar",
    "sha256_file",
    "usable_cores",
]

_SIZE_RE = re.compile(r"\s*([-+]?\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(i?[bB]?)\s*")


def parse_size(text: str | int) -> int:
    """Parse a byte count: ``52428800``, ``50MiB``, ``16M``, ``1.5GB``, ``64k``.

    A bare suffix or one with ``i`` is binary (``4G`` = ``4GiB`` = 4 * 1024**3); a
    suffix with a plain ``B`` is decimal, as disk vendors write it (``4GB`` = 4 * 10**9).

    Args:
      text: an integer, or a number with an optional K/M/G/T suffix.

    Returns:
      The number of bytes.

    Raises:
      ValueError: ``text`` is not a byte count.
    """
    if isinstance(text, bool):
        raise ValueError(f"{text!r} is not a byte count (e.g. 52428800, 50MiB, 16M)")
    if isinstance(text, int):
        return text
    m = _SIZE_RE.fullmatch(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a byte count (e.g. 52428800, 50MiB, 16M)")
    number, prefix, unit = m.groups()
    if unit and not prefix and unit.lower() != "b":
        raise ValueError(f"{text!r} is not a byte count (e.g. 52428800, 50MiB, 16M)")
    base = 1000 if unit.upper() == "B" and prefix else 1024
    power = " KMGT".index(prefix.upper()) if prefix else 0
    return int(float(number) * base**power)


def _temp_name(path: str) -> str:
    folder, name = os.path.split(os.fspath(path))
    return os.path.join(folder, f".{name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on success fsync it and rename it over ``path``.

    Readers see either the old file or the complete new one, never a partial write.
    The temporary name is unique per call (``.<name>.tmp-<pid>-<random>``), so two
    writers never share it, and it is removed if the block raises.

    Args:
      path: the final file.
      mode: ``"w"`` (text, UTF-8, ``\\n`` line ends) or ``"wb"``.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open mode must be 'w' or 'wb', not {mode!r}")
    path = os.fspath(path)
    tmp = _temp_name(path)
    kwargs: dict[str, Any] = {"encoding": "utf-8", "newline": "\n"} if mode == "w" else {}
    try:
        with open(tmp, "x" + mode[1:], **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write(path: str | os.PathLike, data: str | bytes) -> None:
    """Write ``data`` (text or bytes) to ``path`` atomically (see :func:`atomic_open`)."""
    with atomic_open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def fsync_dir(path: str | os.PathLike) -> None:
    """Flush a folder's entries (renames into it) to disk; a no-op where that is not possible."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's contents."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask, not the machine's total)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS / Windows
        return max(1, os.cpu_count() or 1)


def progress_bar(
    total: int | None, desc: str, *, enabled: bool = True, unit: str = "it", leave: bool = False
) -> Any:
    """A tqdm bar (a widget in Jupyter, text on stderr elsewhere); a no-op when not enabled."""
    if enabled:
        from tqdm.auto import tqdm
    else:  # tqdm.auto warns in a kernel without ipywidgets even for a disabled bar
        from tqdm.std import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, leave=leave)
