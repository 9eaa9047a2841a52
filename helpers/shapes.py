"""The fixture's pictures: six learnable shape classes and the regression discs, drawn.

Pure drawing from seeded NumPy streams (no files): :func:`draw_image` paints one
image of a class on a random colour gradient at a random position, scale and
rotation; :func:`draw_regression_image` paints one disc whose radius is the label.
:mod:`helpers.fixture` saves them as the committed ``data/`` set, so any change
here changes the fixture's bytes (``python -m helpers.fixture --check`` says so).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np
from PIL import Image, ImageDraw

__all__ = [
    "CLASSES",
    "REGRESSION_SIZE",
    "SEED",
    "draw_image",
    "draw_regression_image",
    "image_size",
    "regression_params",
    "rng_for",
]

#: Image classes, in label order (index = integer label used by the lessons).
CLASSES: tuple[str, ...] = ("circle", "square", "triangle", "stripes_h", "stripes_v", "checker")
SEED = 20240607
REGRESSION_SIZE = (128, 128)

_WIDTH_RANGE = (120, 320)
_HEIGHT_RANGE = (90, 280)
_SUPERSAMPLE = 2
# Stream ids that keep the per-item random streams of each part independent.
STREAM_IMAGES = 1
STREAM_REGRESSION = 2


# --------------------------------------------------------------------------- #
# Drawing
# --------------------------------------------------------------------------- #
def rng_for(stream: int, *keys: int) -> np.random.Generator:
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
    rng = rng_for(STREAM_REGRESSION, index)
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
    rng = rng_for(STREAM_REGRESSION, index, 1)
    s = _SUPERSAMPLE
    r, cx, cy = p["radius"] * s, p["cx"] * s, p["cy"] * s
    return _compose(
        REGRESSION_SIZE,
        rng,
        lambda draw, _w, _h: draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=255),
        noise=(2.0, 6.0),
    )
