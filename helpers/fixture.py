"""Deterministic generation of the course's committed fixture data (``data/``).

Everything under ``data/`` except ``data/README.md`` is produced by this module
from fixed seeds, so the fixture can be rebuilt (and audited) instead of being
trusted as an opaque blob::

    python -m helpers.fixture                 # (re)write data/
    python -m helpers.fixture --check         # regenerate into a temp dir, compare

What is generated:

* ``images/<class>/<class>_NNNN.jpg`` -- an ImageNet-layout classification set:
  six visually distinct shape/texture classes drawn with PIL on random colour
  gradients, at random positions and scales, with pixel noise, in varied image
  sizes and aspect ratios (JPEG quality 85).
* ``regression/images/disc_NNNN.jpg`` + ``regression/metadata.csv`` -- a
  regression case: each image shows one disc and ``label`` is its radius in
  pixels (plus small Gaussian label noise), written with full float precision.
* ``digits/digits.npz`` -- scikit-learn's bundled 8x8 handwritten digits as raw
  ``uint8`` pixels (0..255) with ``height``/``width``/``depth`` and a
  ``split`` array (first 1500 ``train``, the rest ``test``).
* ``MANIFEST.sha256`` -- ``sha256sum``-compatible checksums of every generated
  file (``cd data && sha256sum -c MANIFEST.sha256`` works).

Generation is byte-for-byte reproducible on the same library versions (NumPy's
PCG64 streams, Pillow's drawing and libjpeg encoder, zlib). A different
Pillow/libjpeg build may encode JPEGs differently; ``--check`` then reports the
differing files and the versions that wrote the manifest.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
from PIL import Image
from tqdm import tqdm

from helpers.shapes import (
    CLASSES,
    REGRESSION_SIZE,
    SEED,
    STREAM_IMAGES,
    draw_image,
    draw_regression_image,
    image_size,
    regression_params,
    rng_for,
)
from helpers.util import sha256_file

__all__ = [
    "CLASSES",
    "DATA_DIR",
    "DIGITS_TRAIN_SIZE",
    "GENERATED_DIRS",
    "IMAGES_PER_CLASS",
    "JPEG_QUALITY",
    "CHECKSUMS_NAME",
    "REGRESSION_COUNT",
    "REGRESSION_SIZE",
    "SEED",
    "check",
    "compare",
    "draw_image",
    "draw_regression_image",
    "generate",
    "image_size",
    "load_digits",
    "main",
    "read_checksums",
    "regression_params",
]

#: The repository's ``data/`` folder (resolved relative to the helpers package).
DATA_DIR: Path = Path(__file__).resolve().parent.parent / "data"


IMAGES_PER_CLASS = 40
REGRESSION_COUNT = 60
DIGITS_TRAIN_SIZE = 1500
JPEG_QUALITY = 85
CHECKSUMS_NAME = "MANIFEST.sha256"
#: Sub-folders of ``data/`` that belong to the fixture (``--check`` flags strays there).
GENERATED_DIRS: tuple[str, ...] = ("images", "regression", "digits")

_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


# --------------------------------------------------------------------------- #
# Writing
# --------------------------------------------------------------------------- #
def _save_jpeg(image: Image.Image, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="JPEG", quality=JPEG_QUALITY, optimize=False, progressive=False)


def _save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Like ``np.savez_compressed`` but with fixed zip timestamps (reproducible bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for name, array in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue(), compresslevel=9)


def _digits_arrays() -> dict[str, np.ndarray]:
    try:
        from sklearn.datasets import load_digits as sk_load_digits
    except ModuleNotFoundError as err:  # only regenerating data/ needs it
        raise ModuleNotFoundError(
            "regenerating data/ needs scikit-learn: pip install '.[fixture]'"
        ) from err

    bunch = sk_load_digits()
    images = np.rint(bunch.images * (255.0 / 16.0)).astype(np.uint8)
    labels = bunch.target.astype(np.int64)
    split = np.where(np.arange(len(labels)) < DIGITS_TRAIN_SIZE, "train", "test").astype("<U5")
    return {
        "images": images,
        "labels": labels,
        "height": np.int64(images.shape[1]),
        "width": np.int64(images.shape[2]),
        "depth": np.int64(1),
        "split": split,
    }


def _versions() -> str:
    import PIL
    import sklearn

    return f"numpy {np.__version__}, Pillow {PIL.__version__}, scikit-learn {sklearn.__version__}"


def read_checksums(path: Path) -> dict[str, str]:
    """Parse the fixture's ``sha256sum``-style checksum list (not the converter's manifest).

    Args:
        path: The checksum file (``<hex>  <relative path>`` lines, ``#`` comments).

    Returns:
        Mapping of relative POSIX path to hex sha256.
    """
    entries: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        digest, _, rel = line.partition("  ")
        entries[rel.strip()] = digest.strip()
    return entries


def _checksum_versions(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# versions:"):
            return line.removeprefix("# versions:").strip()
    return "unknown"


def _write_checksums(output_dir: Path, files: Sequence[Path]) -> dict[str, str]:
    entries = {p.relative_to(output_dir).as_posix(): sha256_file(p) for p in files}
    lines = [
        "# sha256 of every file generated by `python -m helpers.fixture` (verify: "
        "`python -m helpers.fixture --check` or `sha256sum -c MANIFEST.sha256`)",
        f"# versions: {_versions()}",
    ]
    lines += [f"{digest}  {rel}" for rel, digest in sorted(entries.items())]
    (output_dir / CHECKSUMS_NAME).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return entries


def _remove_stale(output_dir: Path, keep: set[str]) -> None:
    """Delete files listed in an old checksum list that this run no longer generates."""
    old = output_dir / CHECKSUMS_NAME
    if not old.is_file():
        return
    for rel in read_checksums(old):
        if rel not in keep and (output_dir / rel).is_file():
            (output_dir / rel).unlink()


def generate(output_dir: Path = DATA_DIR, *, progress: bool = True) -> dict:
    """Write the complete fixture into ``output_dir``.

    Args:
        output_dir: Target folder (created if needed); normally :data:`DATA_DIR`.
            Only the fixture's own files are written; other files are left alone.
        progress: Show a tqdm progress bar on stderr.

    Returns:
        A summary: ``classes`` (images per class), ``regression`` (image count),
        ``digits`` (``{"train": n, "test": n}``), ``files`` (generated file count,
        manifest excluded), ``bytes`` (per part and ``total``) and ``checksums``
        (path of the written checksum list).
    """
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    total = len(CLASSES) * IMAGES_PER_CLASS + REGRESSION_COUNT + 1
    bar = tqdm(total=total, desc="fixture", unit="file", disable=not progress)

    counts: dict[str, int] = {}
    for ci, name in enumerate(CLASSES):
        for i in range(IMAGES_PER_CLASS):
            rng = rng_for(STREAM_IMAGES, ci, i)
            path = output_dir / "images" / name / f"{name}_{i + 1:04d}.jpg"
            _save_jpeg(draw_image(name, rng, image_size(rng)), path)
            written.append(path)
            bar.update()
        counts[name] = IMAGES_PER_CLASS

    reg_dir = output_dir / "regression"
    rows = []
    for i in range(REGRESSION_COUNT):
        fname = f"disc_{i + 1:04d}.jpg"
        _save_jpeg(draw_regression_image(i), reg_dir / "images" / fname)
        written.append(reg_dir / "images" / fname)
        rows.append((fname, repr(regression_params(i)["label"])))
        bar.update()
    with (reg_dir / "metadata.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(("filename", "label"))
        writer.writerows(rows)
    written.append(reg_dir / "metadata.csv")

    digits = _digits_arrays()
    digits_path = output_dir / "digits" / "digits.npz"
    _save_npz(digits_path, digits)
    written.append(digits_path)
    bar.update()
    bar.close()

    keep = {p.relative_to(output_dir).as_posix() for p in written}
    _remove_stale(output_dir, keep)
    _write_checksums(output_dir, written)

    def _size(paths: Iterable[Path]) -> int:
        return sum(p.stat().st_size for p in paths)

    sizes = {
        "images": _size(p for p in written if p.parent.parent == output_dir / "images"),
        "regression": _size(p for p in written if reg_dir in p.parents),
        "digits": digits_path.stat().st_size,
    }
    sizes["total"] = sum(sizes.values())
    n_train = int((digits["split"] == "train").sum())
    return {
        "classes": counts,
        "regression": REGRESSION_COUNT,
        "digits": {"train": n_train, "test": len(digits["labels"]) - n_train},
        "files": len(written),
        "bytes": sizes,
        "checksums": str(output_dir / CHECKSUMS_NAME),
    }


def compare(data_dir: Path, expected: Mapping[str, str]) -> list[str]:
    """Compare a fixture folder with the expected checksums of a fresh generation.

    Args:
        data_dir: The fixture folder to audit.
        expected: Relative POSIX path -> sha256 of every file the generator writes
            (e.g. :func:`read_checksums` of a freshly generated checksum list).

    Returns:
        Problems found, one human-readable line each: ``differs: <path>``,
        ``missing: <path>``, ``unexpected: <path>`` (a stray file inside one of
        :data:`GENERATED_DIRS`) or ``stale manifest entry: <path>``; empty when
        ``data_dir`` matches byte for byte.
    """
    data_dir = Path(data_dir)
    problems: list[str] = []
    for rel, digest in sorted(expected.items()):
        path = data_dir / rel
        if not path.is_file():
            problems.append(f"missing: {rel}")
        elif sha256_file(path) != digest:
            problems.append(f"differs: {rel}")
    for sub in GENERATED_DIRS:
        root = data_dir / sub
        if root.is_dir():
            for path in sorted(root.rglob("*")):
                rel = path.relative_to(data_dir).as_posix()
                if path.is_file() and rel not in expected:
                    problems.append(f"unexpected: {rel}")
    manifest = data_dir / CHECKSUMS_NAME
    if not manifest.is_file():
        problems.append(f"missing: {CHECKSUMS_NAME}")
    else:
        listed = read_checksums(manifest)
        for rel in sorted(set(expected) | set(listed)):
            if listed.get(rel) != expected.get(rel):
                problems.append(f"stale manifest entry: {rel}")
    return problems


def check(data_dir: Path = DATA_DIR, *, progress: bool = False) -> list[str]:
    """Regenerate the fixture into a temporary folder and compare it with ``data_dir``.

    Args:
        data_dir: The committed fixture folder.
        progress: Show a progress bar while regenerating.

    Returns:
        The problems reported by :func:`compare`; empty when ``data_dir``
        matches the regenerated fixture byte for byte.
    """
    with tempfile.TemporaryDirectory(prefix="fixture-check-") as tmp:
        fresh = read_checksums(Path(generate(Path(tmp), progress=progress)["checksums"]))
    return compare(Path(data_dir), fresh)


# --------------------------------------------------------------------------- #
# Loading
# --------------------------------------------------------------------------- #
def load_digits(
    data_dir: Path = DATA_DIR, split: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Load the raw-pixel digits case from ``<data_dir>/digits/digits.npz``.

    Args:
        data_dir: The fixture folder (default: the repository's ``data/``).
        split: ``"train"``, ``"test"`` or ``None`` for all rows.

    Returns:
        ``(images, labels)``: ``uint8`` array ``(N, 8, 8)`` with values 0..255 and
        ``int64`` array ``(N,)`` with digit labels 0..9.

    Raises:
        ValueError: If ``split`` is not ``"train"``, ``"test"`` or ``None``.
    """
    if split not in (None, "train", "test"):
        raise ValueError(f"split must be 'train', 'test' or None, got {split!r}")
    with np.load(Path(data_dir) / "digits" / "digits.npz", allow_pickle=False) as npz:
        images, labels = npz["images"], npz["labels"]
        if split is not None:
            mask = npz["split"] == split
            images, labels = images[mask], labels[mask]
    return images, labels


# --------------------------------------------------------------------------- #
# CLI
# --------------------------------------------------------------------------- #
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.fixture",
        description="Regenerate the course's fixture data deterministically "
        "(image classes, regression CSV, raw-pixel digits, sha256 manifest).",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=DATA_DIR,
        help="fixture folder to write or check (default: %(default)s)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="regenerate into a temporary folder and compare with --output; "
        "exit 1 naming every file that differs",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point.

    Args:
        argv: Arguments (default: ``sys.argv[1:]``).

    Returns:
        Process exit status: 0 on success, 1 if ``--check`` found differences.
    """
    args = _parser().parse_args(argv)
    if args.check:
        problems = check(args.output, progress=not args.quiet)
        if problems:
            for line in problems:
                print(line, file=sys.stderr)
            manifest = args.output / CHECKSUMS_NAME
            written_with = _checksum_versions(manifest) if manifest.is_file() else "unknown"
            print(
                f"fixture check FAILED: {len(problems)} problem(s) in {args.output}\n"
                f"  manifest written with: {written_with}\n"
                f"  this environment:      {_versions()}\n"
                f"  run `python -m helpers.fixture --output {args.output}` to regenerate",
                file=sys.stderr,
            )
            return 1
        print(f"fixture check OK: {args.output} matches the generator")
        return 0
    summary = generate(args.output, progress=not args.quiet)
    print(
        f"wrote {summary['files']} files ({summary['bytes']['total'] / 1e6:.2f} MB) "
        f"to {args.output}: {summary['classes']}, regression={summary['regression']}, "
        f"digits={summary['digits']}"
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
