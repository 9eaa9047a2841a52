"""Baselines on the same images as the TFRecord pipeline (lesson 05).

A one-file-per-image tf.data pipeline (:func:`per_file_dataset`) and a
Python generator with PIL decoding (:func:`generator_dataset`, the slow
baseline of a common tutorial), over an ImageNet-layout folder listed by
:func:`list_image_folder`.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

# One list of image extensions for the converter and these readers (the converter's).
from helpers.convert import IMAGE_EXTENSIONS
from helpers.pipeline.preprocess import (
    AUTOTUNE,
    ImageSize,
    preprocess_image,
    size_pair,
)
from helpers.pipeline.schema import check_num_classes, label_fn
from helpers.pipeline.storage import SimulatedSlowStorage
from helpers.pipeline.tail import finish_pipeline


@dataclass
class ImageFolder:
    """An ImageNet-layout folder listed: ``paths[i]`` has label ``labels[i]``.

    Attributes:
      paths: image file paths, class by class, sorted within a class.
      labels: integer labels in ``[0, len(classes))``.
      classes: sorted class folder names (index = label, like the converter).
    """

    paths: list[str]
    labels: list[int]
    classes: list[str]


def list_image_folder(
    root: str | os.PathLike, extensions: Sequence[str] = IMAGE_EXTENSIONS
) -> ImageFolder:
    """List ``root/<class>/<image>`` by listing (not globbing); hidden entries are skipped.

    Args:
      root: dataset root with one folder per class.
      extensions: accepted file name endings (case-insensitive).

    Returns:
      An :class:`ImageFolder`; labels come from the sorted class names.

    Raises:
      FileNotFoundError: ``root`` is not a directory or holds no images.
    """
    root = os.fspath(root)
    if not os.path.isdir(root):
        raise FileNotFoundError(f"{root}: not a directory")
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir() and not e.name.startswith("."))
    paths: list[str] = []
    labels: list[int] = []
    lowered = tuple(x.lower() for x in extensions)
    for label, name in enumerate(classes):
        folder = os.path.join(root, name)
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if (
                entry.is_file()
                and not entry.name.startswith(".")
                and entry.name.lower().endswith(lowered)
            ):
                paths.append(entry.path)
                labels.append(label)
    if not paths:
        raise FileNotFoundError(
            f"{root}: no images in class folders (extensions {sorted(extensions)})"
        )
    return ImageFolder(paths, labels, classes)


def _checked_inputs(
    image_paths: Sequence[str | os.PathLike],
    labels: Sequence[int],
    num_classes: int | None,
    one_hot: bool,
) -> tuple[list[str], list[int], int | None]:
    """Paths as strings, labels as ints, ``num_classes`` checked; bad labels refused here."""
    paths = [os.fspath(p) for p in image_paths]
    labels = [int(v) for v in labels]
    if one_hot and num_classes is None:
        raise ValueError(
            "one_hot=True needs num_classes (e.g. len(list_image_folder(root).classes))"
        )
    num_classes = None if num_classes is None else check_num_classes(num_classes)
    _check_labels_py(paths, labels, num_classes)
    return paths, labels, num_classes


def _check_labels_py(paths: Sequence[str], labels: Sequence[int], num_classes: int | None) -> None:
    if len(paths) != len(labels):
        raise ValueError(f"{len(paths)} image paths but {len(labels)} labels")
    if not paths:
        raise ValueError("no images given")
    for path, label in zip(paths, labels, strict=True):
        bad = label < 0 or (num_classes is not None and label >= num_classes)
        if bad:
            raise ValueError(
                f"{path}: label {label} is outside [0, {num_classes}); labels must be integers "
                "in [0, num_classes) (tf.one_hot would silently give all zeros)"
            )


def per_file_dataset(
    image_paths: Sequence[str | os.PathLike],
    labels: Sequence[int],
    batch_size: int = 32,
    image_size: ImageSize = 224,
    *,
    num_classes: int | None = None,
    training: bool = False,
    num_parallel_calls: int | None = AUTOTUNE,
    parallel_reads: int | None = None,
    deterministic: bool = False,
    cache: bool | str = False,
    shuffle_buffer: int = 1000,
    augment: bool = False,
    drop_remainder: bool = True,
    prefetch: int | None = AUTOTUNE,
    repeat: bool | int = False,
    one_hot: bool = True,
    seed: int | None = None,
    storage: SimulatedSlowStorage | None = None,
    resize_method: str = "bilinear",
) -> tf.data.Dataset:
    """One file per image with tf.data: ``read_file`` + decode in a parallel map.

    Same preprocessing and output as :func:`make_dataset`, for comparisons on
    the same images. With a ``storage`` simulation each image's read is
    delayed, in ``parallel_reads`` concurrent readers (an ``interleave`` of
    one-element datasets, so the delays overlap).

    Args:
      image_paths: image files.
      labels: integer labels in ``[0, num_classes)``, one per path.
      batch_size: images per batch.
      image_size: output side or ``(h, w)``.
      num_classes: one-hot depth (required with ``one_hot``).
      training: shuffle the file list (and allow augmentation).
      num_parallel_calls: parallel read + decode calls; ``None`` = sequential.
      parallel_reads: concurrent reads under ``storage`` (``None`` -> AUTOTUNE,
        i.e. the number of CPU cores; 1 = one read at a time).
      deterministic: keep the order reproducible.
      cache: as in :func:`make_dataset`.
      shuffle_buffer: file-list shuffle buffer when training.
      augment: random flip / crop / brightness when training.
      drop_remainder: drop the last short batch.
      prefetch: batches to prefetch; ``None``/0 = none.
      repeat: True = forever, an int = that many epochs.
      one_hot: one-hot float32 labels, else int32.
      seed: shuffle / augmentation seed.
      storage: a :class:`SimulatedSlowStorage` (simulation).
      resize_method: ``tf.image.resize`` method.

    Returns:
      A dataset of ``(images, labels)`` batches.
    """
    paths, labels, num_classes = _checked_inputs(image_paths, labels, num_classes, one_hot)
    h, w = size_pair(image_size)
    label_out = label_fn(num_classes, one_hot)
    det = deterministic if num_parallel_calls is not None else None
    sizes = [os.path.getsize(p) for p in paths] if storage is not None else [0] * len(paths)
    dataset = tf.data.Dataset.from_tensor_slices(
        (tf.constant(paths), tf.constant(labels, tf.int64), tf.constant(sizes, tf.int64))
    )
    if training and shuffle_buffer:
        dataset = dataset.shuffle(min(shuffle_buffer, len(paths)) or 1, seed=seed)

    def decode(contents: tf.Tensor, label: tf.Tensor, path: tf.Tensor) -> tuple:
        return preprocess_image(contents, (h, w), resize_method), label_out(label, path)

    if storage is None:

        def load(path: tf.Tensor, label: tf.Tensor, nbytes: tf.Tensor) -> tuple:
            return decode(tf.io.read_file(path), label, path)

        dataset = dataset.map(load, num_parallel_calls=num_parallel_calls, deterministic=det)
    else:
        reads = AUTOTUNE if parallel_reads is None else parallel_reads

        def slow_read(path: tf.Tensor, label: tf.Tensor, nbytes: tf.Tensor) -> tf.data.Dataset:
            def attach(contents: tf.Tensor) -> tuple:
                return contents, label, path

            return storage.read_file_dataset(path, nbytes).map(attach)

        # reads == 1: a plain sequential interleave (a parallel one would prefetch the next file)
        read_calls = None if reads == 1 else reads
        dataset = dataset.interleave(
            slow_read,
            cycle_length=reads,
            num_parallel_calls=read_calls,
            deterministic=deterministic if read_calls is not None else None,
        ).map(decode, num_parallel_calls=num_parallel_calls, deterministic=det)
    return finish_pipeline(
        dataset,
        batch_size=batch_size,
        training=training,
        cache=cache,
        shuffle_buffer=0,  # the file list was shuffled above
        augment=augment,
        drop_remainder=drop_remainder,
        prefetch=prefetch,
        repeat=repeat,
        seed=seed,
        num_parallel_calls=num_parallel_calls,
        deterministic=det,
    )


def generator_dataset(
    image_paths: Sequence[str | os.PathLike],
    labels: Sequence[int],
    batch_size: int = 32,
    image_size: ImageSize = 224,
    *,
    num_classes: int | None = None,
    one_hot: bool = True,
    shuffle: bool = False,
    seed: int | None = None,
    drop_remainder: bool = True,
    prefetch: int | None = None,
    storage: SimulatedSlowStorage | None = None,
) -> tf.data.Dataset:
    """The slow baseline: a Python generator that opens, decodes (PIL) and resizes each image.

    One image at a time, in the Python interpreter, holding the GIL: the way
    a common tutorial's directory-reading generator worked (9,360 images took ~90 min
    there against ~5 s from TFRecords). PIL's decoder and bilinear resize are
    not TF's, so pixels differ slightly from :func:`make_dataset`'s.

    Args:
      image_paths: image files.
      labels: integer labels in ``[0, num_classes)``.
      batch_size: images per batch.
      image_size: output side or ``(h, w)``.
      num_classes: one-hot depth (required with ``one_hot``).
      one_hot: one-hot float32 labels, else int32.
      shuffle: shuffle the order in Python each pass.
      seed: shuffle seed.
      drop_remainder: drop the last short batch.
      prefetch: batches to prefetch (default none: the bare baseline).
      storage: a :class:`SimulatedSlowStorage` (simulation, slept in Python).

    Returns:
      A dataset of ``(images, labels)`` batches, like :func:`make_dataset`.
    """
    from PIL import Image

    paths, labels, num_classes = _checked_inputs(image_paths, labels, num_classes, one_hot)
    h, w = size_pair(image_size)
    rng = np.random.default_rng(seed)

    def generate() -> Iterable[tuple[np.ndarray, np.ndarray | np.int32]]:
        order = rng.permutation(len(paths)) if shuffle else range(len(paths))
        for i in order:
            path, label = paths[i], labels[i]
            if storage is not None:
                data = storage.read_bytes(path)
            else:
                with open(path, "rb") as f:
                    data = f.read()
            with Image.open(io.BytesIO(data)) as img:
                img = img.convert("RGB")
                if img.size != (w, h):
                    img = img.resize((w, h), Image.Resampling.BILINEAR)
                array = np.asarray(img, dtype=np.float32) / 127.5 - 1.0
            if one_hot:
                target = np.zeros(num_classes, np.float32)
                target[label] = 1.0
                yield array, target
            else:
                yield array, np.int32(label)

    label_spec = (
        tf.TensorSpec([num_classes], tf.float32) if one_hot else tf.TensorSpec([], tf.int32)
    )
    dataset = tf.data.Dataset.from_generator(
        generate, output_signature=(tf.TensorSpec([h, w, 3], tf.float32), label_spec)
    )
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    if prefetch:
        dataset = dataset.prefetch(prefetch)
    return dataset
