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
import math
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw
from tqdm import tqdm

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

#: Image classes, in label order (index = integer label used by the lessons).
CLASSES: tuple[str, ...] = ("circle", "square", "triangle", "stripes_h", "stripes_v", "checker")

SEED = 20240607
IMAGES_PER_CLASS = 40
REGRESSION_COUNT = 60
REGRESSION_SIZE = (128, 128)
DIGITS_TRAIN_SIZE = 1500
JPEG_QUALITY = 85
CHECKSUMS_NAME = "MANIFEST.sha256"
#: Sub-folders of ``data/`` that belong to the fixture (``--check`` flags strays there).
GENERATED_DIRS: tuple[str, ...] = ("images", "regression", "digits")

_WIDTH_RANGE = (120, 320)
_HEIGHT_RANGE = (90, 280)
_SUPERSAMPLE = 2
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
# Stream ids that keep the per-item random streams of each part independent.
_STREAM_IMAGES = 1
_STREAM_REGRESSION = 2


# --------------------------------------------------------------------------- #
# Drawing
# --------------------------------------------------------------------------- #
def _rng_for(stream: int, *keys: int) -> np.random.Generator:
    """A generator seeded from (SEED, stream, *keys): independent of draw order."""
    return np.random.default_rng([SEED, stream, *keys])


def _tone(rng: np.random.Generator, dark: bool) -> tuple[int, int, int]:
    """A random RGB colour that is clearly dark (or clearly light)."""
    hue = rng.random(3)
    if dark:
        rgb = 10 + hue * 100
    else:
        rgb = 150 + hue * 100
    r, g, b = (int(v) for v in rgb)
    return r, g, b


def _gradient(
    size: tuple[int, int], c0: Sequence[int], c1: Sequence[int], angle: float
) -> np.ndarray:
    """A ``(h, w, 3)`` float32 array fading linearly from ``c0`` to ``c1`` along ``angle``."""
    w, h = size
    t = np.arange(h, dtype=np.float32)[:, None] * np.float32(math.sin(angle)) + np.arange(
        w, dtype=np.float32
    )[None, :] * np.float32(math.cos(angle))
    t -= t.min()
    t /= max(float(t.max()), 1e-6)
    a = np.asarray(c0, dtype=np.float32)
    b = np.asarray(c1, dtype=np.float32)
    return a + (b - a) * t[..., None]


def _rotated(
    points: Iterable[tuple[float, float]], cx: float, cy: float, deg: float
) -> list[tuple[float, float]]:
    """Rotate ``points`` by ``deg`` degrees about ``(cx, cy)``."""
    rad = math.radians(deg)
    c, s = math.cos(rad), math.sin(rad)
    return [(cx + (x - cx) * c - (y - cy) * s, cy + (x - cx) * s + (y - cy) * c) for x, y in points]


def _texture_box(rng: np.random.Generator, w: int, h: int) -> tuple[int, int, int, int]:
    """A random rectangle covering 60-100% of each side of a ``w`` x ``h`` canvas."""
    bw = int(w * rng.uniform(0.6, 1.0))
    bh = int(h * rng.uniform(0.6, 1.0))
    x0 = int(rng.integers(0, w - bw + 1))
    y0 = int(rng.integers(0, h - bh + 1))
    return x0, y0, x0 + bw, y0 + bh


def _draw_foreground(
    draw: ImageDraw.ImageDraw,
    class_name: str,
    rng: np.random.Generator,
    w: int,
    h: int,
    fill: int,
) -> None:
    """Draw the class-defining shape or texture on a ``w`` x ``h`` canvas."""
    m = min(w, h)
    if class_name == "circle":
        r = rng.uniform(0.22, 0.42) * m
        cx = rng.uniform(r, w - r)
        cy = rng.uniform(r, h - r)
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=fill)
    elif class_name == "square":
        half = rng.uniform(0.2, 0.38) * m
        lim = half * 1.15  # room for the small rotation
        cx = rng.uniform(lim, w - lim)
        cy = rng.uniform(lim, h - lim)
        corners = [
            (cx - half, cy - half),
            (cx + half, cy - half),
            (cx + half, cy + half),
            (cx - half, cy + half),
        ]
        draw.polygon(_rotated(corners, cx, cy, rng.uniform(-8, 8)), fill=fill)
    elif class_name == "triangle":
        side = rng.uniform(0.5, 0.9) * m
        tri_h = side * math.sqrt(3) / 2
        cx = rng.uniform(side / 2 + 2, w - side / 2 - 2)
        cy = rng.uniform(tri_h / 2 + 2, h - tri_h / 2 - 2)
        corners = [
            (cx, cy - tri_h / 2),
            (cx + side / 2, cy + tri_h / 2),
            (cx - side / 2, cy + tri_h / 2),
        ]
        draw.polygon(_rotated(corners, cx, cy, rng.uniform(-8, 8)), fill=fill)
    elif class_name in ("stripes_h", "stripes_v"):
        # The period is a fraction of the extent the stripes repeat along, so
        # any resize of the image keeps 4-9 stripes visible.
        x0, y0, x1, y1 = _texture_box(rng, w, h)
        start, stop = (y0, y1) if class_name == "stripes_h" else (x0, x1)
        period = (stop - start) / rng.uniform(4.0, 9.0)
        duty = rng.uniform(0.4, 0.6)
        pos = start - rng.uniform(0, period)
        while pos < stop:
            a, b = max(pos, start), min(pos + duty * period, stop)
            if b > a:
                box = (x0, a, x1, b) if class_name == "stripes_h" else (a, y0, b, y1)
                draw.rectangle(box, fill=fill)
            pos += period
    elif class_name == "checker":
        x0, y0, x1, y1 = _texture_box(rng, w, h)
        cell_w = (x1 - x0) / rng.uniform(3.5, 8.0)
        cell_h = (y1 - y0) / rng.uniform(3.5, 8.0)
        for j in range(math.ceil((y1 - y0) / cell_h)):
            for i in range(math.ceil((x1 - x0) / cell_w)):
                if (i + j) % 2 == 0:
                    draw.rectangle(
                        (
                            x0 + i * cell_w,
                            y0 + j * cell_h,
                            min(x0 + (i + 1) * cell_w, x1),
                            min(y0 + (j + 1) * cell_h, y1),
                        ),
                        fill=fill,
                    )
    else:
        raise ValueError(f"unknown class {class_name!r}; expected one of {CLASSES}")


def _compose(
    size: tuple[int, int],
    rng: np.random.Generator,
    paint: Callable[[ImageDraw.ImageDraw, int, int], object],
    noise: tuple[float, float],
) -> Image.Image:
    """Blend a foreground mask over a random gradient and add Gaussian pixel noise.

    ``paint(draw, w, h)`` draws the foreground (fill 255) on a supersampled ``L``
    mask of size ``(w, h)``; the mask is box-filtered down to ``size``, which
    gives anti-aliased edges at a fraction of the cost of drawing in colour.
    """
    w, h = size
    dark_bg = bool(rng.random() < 0.5)
    bg = _gradient(size, _tone(rng, dark_bg), _tone(rng, dark_bg), rng.uniform(0, 2 * math.pi))
    fg = np.asarray(_tone(rng, not dark_bg), dtype=np.float32)
    mask = Image.new("L", (w * _SUPERSAMPLE, h * _SUPERSAMPLE), 0)
    paint(ImageDraw.Draw(mask), w * _SUPERSAMPLE, h * _SUPERSAMPLE)
    alpha = np.asarray(mask.resize(size, Image.Resampling.BOX), dtype=np.float32)[..., None]
    arr = bg + (fg - bg) * (alpha / np.float32(255.0))
    sigma = rng.uniform(*noise)
    arr += rng.normal(0.0, sigma, size=arr.shape).astype(np.float32)
    return Image.fromarray(np.clip(np.rint(arr), 0, 255).astype(np.uint8), mode="RGB")


def draw_image(class_name: str, rng: np.random.Generator, size: tuple[int, int]) -> Image.Image:
    """Draw one image of ``class_name``.

    The shape (circle, square, triangle) or texture (horizontal stripes, vertical
    stripes, checkerboard) is drawn in a dark colour on a light gradient or vice
    versa, at a random position and scale, then Gaussian noise is added.

    Args:
        class_name: One of :data:`CLASSES`.
        rng: Source of all randomness (colours, geometry, noise).
        size: ``(width, height)`` of the returned image in pixels.

    Returns:
        An RGB ``PIL.Image.Image`` of the requested size.

    Raises:
        ValueError: If ``class_name`` is not in :data:`CLASSES`.
    """
    if class_name not in CLASSES:
        raise ValueError(f"unknown class {class_name!r}; expected one of {CLASSES}")
    w, h = (int(v) for v in size)
    return _compose(
        (w, h),
        rng,
        lambda draw, cw, ch: _draw_foreground(draw, class_name, rng, cw, ch, 255),
        noise=(3.0, 9.0),
    )


def image_size(rng: np.random.Generator) -> tuple[int, int]:
    """A random ``(width, height)`` within the fixture's size ranges.

    Args:
        rng: Source of randomness.

    Returns:
        ``(width, height)`` with width in 120..320 and height in 90..280.
    """
    w = int(rng.integers(_WIDTH_RANGE[0], _WIDTH_RANGE[1] + 1))
    h = int(rng.integers(_HEIGHT_RANGE[0], _HEIGHT_RANGE[1] + 1))
    return w, h


def regression_params(index: int) -> dict[str, float]:
    """Generator parameters of regression image ``index`` (what the label measures).

    Args:
        index: Zero-based image index, ``0 <= index < REGRESSION_COUNT``.

    Returns:
        ``{"radius": r, "label": r + noise, "cx": ..., "cy": ...}``: ``radius`` is
        the drawn disc radius in pixels, ``label`` the value written to the CSV.
    """
    rng = _rng_for(_STREAM_REGRESSION, index)
    w, h = REGRESSION_SIZE
    radius = float(rng.uniform(8.0, 0.42 * min(w, h)))
    cx = float(rng.uniform(radius + 1, w - radius - 1))
    cy = float(rng.uniform(radius + 1, h - radius - 1))
    label = radius + float(rng.normal(0.0, 0.5))
    return {"radius": radius, "label": label, "cx": cx, "cy": cy}


def draw_regression_image(index: int) -> Image.Image:
    """Draw regression image ``index``: one disc whose radius is the label.

    Args:
        index: Zero-based image index.

    Returns:
        An RGB image of size :data:`REGRESSION_SIZE`.
    """
    p = regression_params(index)
    rng = _rng_for(_STREAM_REGRESSION, index, 1)
    s = _SUPERSAMPLE
    r, cx, cy = p["radius"] * s, p["cx"] * s, p["cy"] * s
    return _compose(
        REGRESSION_SIZE,
        rng,
        lambda draw, _w, _h: draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=255),
        noise=(2.0, 6.0),
    )


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
            rng = _rng_for(_STREAM_IMAGES, ci, i)
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
