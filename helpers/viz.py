"""Pictures for lessons 04-06: image grids, throughput bars and training curves.

Every function draws with pyplot and returns the ``Figure`` (so a test can
inspect it); it never calls ``plt.show()`` itself. In a notebook, follow the
call with ``plt.show()``: the figure is shown once, and closed. Reading sample
images from shards (:func:`samples_per_class`) uses TensorFlow, imported
lazily so plotting alone stays cheap.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = [
    "class_grid",
    "grouped_bars",
    "image_grid",
    "samples_per_class",
    "throughput_bars",
    "training_curves",
]


def _as_uint8(image: Any) -> np.ndarray:
    """A displayable ``(H, W, 3)`` or ``(H, W)`` uint8 array from uint8, 0..255 or [-1, 1] data."""
    array = np.asarray(image)
    if array.ndim == 3 and array.shape[-1] == 1:
        array = array[..., 0]
    if array.dtype == np.uint8:
        return array
    array = array.astype(np.float32)
    if array.size and array.min() < 0.0:  # MobileNet range [-1, 1]
        array = (array + 1.0) * 127.5
    elif array.size and array.max() <= 1.0:  # [0, 1]
        array = array * 255.0
    return np.clip(np.rint(array), 0, 255).astype(np.uint8)


def image_grid(
    images: Sequence[Any],
    titles: Sequence[str] | None = None,
    ncols: int = 6,
    cell_inches: float = 1.6,
    suptitle: str | None = None,
) -> Figure:
    """Show images in a grid, each with an optional title.

    Args:
      images: arrays ``(H, W, 3)`` / ``(H, W)`` as uint8, floats in 0..1 or in
        MobileNet's ``[-1, 1]`` (detected from the values); sizes may differ.
      titles: one caption per image.
      ncols: images per row.
      cell_inches: width and height of one cell.
      suptitle: a title over the whole grid.

    Returns:
      The figure.

    Raises:
      ValueError: no images, or a title count that does not match.
    """
    if not len(images):
        raise ValueError("no images to show")
    if titles is not None and len(titles) != len(images):
        raise ValueError(f"{len(images)} images but {len(titles)} titles")
    ncols = max(1, min(ncols, len(images)))
    nrows = math.ceil(len(images) / ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(ncols * cell_inches, nrows * cell_inches + 0.3), squeeze=False
    )
    for i, ax in enumerate(axes.flat):
        ax.set_axis_off()
        if i >= len(images):
            continue
        array = _as_uint8(images[i])
        ax.imshow(array, cmap="gray" if array.ndim == 2 else None)
        if titles is not None:
            ax.set_title(str(titles[i]), fontsize=8)
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout()
    return fig


def class_grid(
    samples: Mapping[str, Sequence[Any]], cell_inches: float = 1.3, suptitle: str | None = None
) -> Figure:
    """One row per class: the class name on the left, its sample images to the right.

    Args:
      samples: class name -> images (as for :func:`image_grid`), e.g. from
        :func:`samples_per_class`.
      cell_inches: size of one cell.
      suptitle: a title over the grid.

    Returns:
      The figure.
    """
    if not samples:
        raise ValueError("no classes to show")
    ncols = max(1, max(len(v) for v in samples.values()))
    nrows = len(samples)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(ncols * cell_inches + 1.0, nrows * cell_inches + 0.3), squeeze=False
    )
    for row, (name, images) in enumerate(samples.items()):
        for col in range(ncols):
            ax = axes[row][col]
            ax.set_xticks([])
            ax.set_yticks([])
            for spine in ax.spines.values():
                spine.set_visible(False)
            if col < len(images):
                array = _as_uint8(images[col])
                ax.imshow(array, cmap="gray" if array.ndim == 2 else None)
            if col == 0:
                ax.set_ylabel(name, rotation=0, ha="right", va="center", fontsize=9)
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout()
    return fig


def samples_per_class(
    source: str | os.PathLike | Sequence[str | os.PathLike],
    per_class: int = 6,
    classes: Sequence[str] | None = None,
) -> dict[str, list[np.ndarray]]:
    """Decode the first ``per_class`` images of every class from TFRecord shards.

    Reads the course's image records (:data:`helpers.features.IMAGE_KEYS`)
    in file order, decodes ``image/encoded`` (JPEG or PNG) at its stored size
    and groups by ``image/class/label``. Stops as soon as every class has
    enough images.

    Args:
      source: a converter output directory, a manifest, a shard or a list of shards.
      per_class: images wanted per class.
      classes: class names by label; default: the manifest's classes (else
        the records' ``image/class/text``).

    Returns:
      class name -> list of uint8 ``(H, W, 3)`` arrays, in label order.
    """
    import tensorflow as tf

    from helpers.features import IMAGE_KEYS
    from helpers.pipeline import decode_image, image_feature_spec, resolve_shards

    shards = resolve_shards(source)
    names = list(classes) if classes is not None else list(shards.classes or [])
    spec = image_feature_spec()
    found: dict[int, list[np.ndarray]] = {}
    texts: dict[int, str] = {}
    wanted = len(names) if names else None
    records = tf.data.TFRecordDataset(shards.files, compression_type=shards.compression or "")
    for raw in records:
        parsed = tf.io.parse_single_example(raw, spec)
        label = int(parsed[IMAGE_KEYS["label"]])
        texts.setdefault(label, parsed[IMAGE_KEYS["text"]].numpy().decode("utf-8", "replace"))
        bucket = found.setdefault(label, [])
        if len(bucket) < per_class:
            bucket.append(decode_image(parsed[IMAGE_KEYS["encoded"]]).numpy())
        full = [k for k, v in found.items() if len(v) >= per_class]
        if wanted is not None and len(full) >= wanted:
            break
    out: dict[str, list[np.ndarray]] = {}
    for label in sorted(found):
        name = names[label] if label < len(names) else (texts.get(label) or str(label))
        out[name] = found[label]
    return out


def _bar_labels(ax: Any, bars: Any, values: Sequence[float], fmt: str) -> None:
    for bar, value in zip(bars, values, strict=True):
        ax.annotate(
            format(value, fmt),
            (bar.get_x() + bar.get_width(), bar.get_y() + bar.get_height() / 2),
            xytext=(3, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
        )


def throughput_bars(
    rates: Mapping[str, float],
    title: str = "",
    unit: str = "images/s",
    baseline: str | None = None,
    log: bool = False,
) -> Figure:
    """Horizontal bars, one per pipeline (top to bottom in the given order).

    Args:
      rates: label -> rate.
      title: chart title.
      unit: the x-axis unit.
      baseline: a key of ``rates``; each bar is then also labelled with its
        ratio to that bar (``x2.5``).
      log: logarithmic x axis (when rates span orders of magnitude).

    Returns:
      The figure.
    """
    if not rates:
        raise ValueError("no rates to plot")
    if baseline is not None and baseline not in rates:
        raise ValueError(f"baseline {baseline!r} is not one of {list(rates)}")
    labels = list(rates)
    values = [float(rates[k]) for k in labels]
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(labels) + 1.2))
    y = np.arange(len(labels))[::-1]
    bars = ax.barh(y, values, color="#4c72b0")
    if baseline is not None:
        base = float(rates[baseline])
        texts = [f"{v:,.0f} (x{v / base:.1f})" if base > 0 else f"{v:,.0f}" for v in values]
        for bar, text in zip(bars, texts, strict=True):
            ax.annotate(
                text,
                (bar.get_width(), bar.get_y() + bar.get_height() / 2),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                fontsize=8,
            )
    else:
        _bar_labels(ax, bars, values, ",.0f")
    ax.set_yticks(y, labels)
    ax.set_xlabel(unit)
    if log:
        ax.set_xscale("log")
    ax.set_xlim(right=max(values) * (3 if log else 1.3))
    ax.set_title(title)
    fig.tight_layout()
    return fig


def grouped_bars(
    table: Mapping[str, Mapping[str, float]],
    title: str = "",
    unit: str = "images/s",
    log: bool = True,
) -> Figure:
    """Grouped vertical bars: one group per condition, one bar per method.

    Args:
      table: condition (e.g. ``"local disk"``) -> method -> rate. Every
        condition should list the same methods.
      title: chart title.
      unit: the y-axis unit.
      log: logarithmic y axis (default: generator and TFRecord rates differ a lot).

    Returns:
      The figure.
    """
    if not table:
        raise ValueError("nothing to plot")
    conditions = list(table)
    methods: list[str] = []
    for rows in table.values():
        methods.extend(m for m in rows if m not in methods)
    width = 0.8 / len(methods)
    fig, ax = plt.subplots(figsize=(max(6.5, 2.6 * len(conditions)), 4.6))
    x = np.arange(len(conditions))
    for i, method in enumerate(methods):
        values = [float(table[c].get(method, np.nan)) for c in conditions]
        bars = ax.bar(x + (i - (len(methods) - 1) / 2) * width, values, width, label=method)
        for bar, value in zip(bars, values, strict=True):
            if np.isfinite(value):
                ax.annotate(
                    f"{value:,.0f}",
                    (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    xytext=(0, 2),
                    textcoords="offset points",
                    ha="center",
                    fontsize=8,
                )
    ax.set_xticks(x, conditions)
    ax.set_ylabel(unit)
    if log:
        ax.set_yscale("log")
    ax.legend(
        fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=min(3, len(methods))
    )
    ax.set_title(title)
    fig.tight_layout()
    return fig


def training_curves(
    history: Mapping[str, Sequence[float]], chance: float | None = None, title: str = ""
) -> Figure:
    """Loss and accuracy per epoch, training vs validation, side by side.

    Args:
      history: ``loss``, ``accuracy`` and optionally ``val_loss``,
        ``val_accuracy`` lists (e.g. from :func:`helpers.train.train` or
        ``model.fit(...).history``).
      chance: accuracy of guessing (``1 / num_classes``), drawn as a dashed line.
      title: a title over both panels.

    Returns:
      The figure.
    """
    if "loss" not in history or not len(history["loss"]):
        raise ValueError("history has no 'loss' values")
    epochs = np.arange(1, len(history["loss"]) + 1)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, key, name in ((left, "loss", "loss"), (right, "accuracy", "accuracy")):
        if key in history:
            ax.plot(epochs, history[key], "o-", label=f"training {name}")
        if f"val_{key}" in history:
            ax.plot(epochs, history[f"val_{key}"], "s-", label=f"validation {name}")
        ax.set_xlabel("epoch")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    if chance is not None:
        right.axhline(chance, color="grey", linestyle="--", label=f"chance ({chance:.0%})")
    right.set_ylim(0, 1)
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
