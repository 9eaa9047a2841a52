"""The baselines the converter is measured against: a plain copy and a typical single-threaded converter script."""

from __future__ import annotations

import os

from helpers.bench.settings import SIZE_PER_RECORD


def copy_per_class(
    dataset_path: str | os.PathLike, output_path: str | os.PathLike, fsync: bool = False
) -> tuple[int, int]:
    """The I/O limit: append every image's bytes to one file per class, in plain Python.

    Args:
      dataset_path: ImageNet-layout folder.
      output_path: folder for ``<class>.bin`` files (created).
      fsync: fsync each class file (what a durable writer pays).

    Returns:
      ``(images, bytes)`` copied.
    """
    dataset, output = os.fspath(dataset_path), os.fspath(output_path)
    os.makedirs(output, exist_ok=True)
    images = total = 0
    for cls in sorted(os.listdir(dataset)):
        folder = os.path.join(dataset, cls)
        if cls.startswith(".") or not os.path.isdir(folder):
            continue
        with open(os.path.join(output, cls + ".bin"), "wb") as out:
            for name in sorted(os.listdir(folder)):
                with open(os.path.join(folder, name), "rb") as f:
                    data = f.read()
                out.write(data)
                images += 1
                total += len(data)
            if fsync:
                out.flush()
                os.fsync(out.fileno())
    return images, total


def seed_style_convert(
    dataset_path: str | os.PathLike,
    output_path: str | os.PathLike,
    size_per_record: int = SIZE_PER_RECORD,
) -> int:
    """A typical single-threaded converter script: ``tf.io.read_file`` per image, one writer at a time.

    Class folders in listing order get labels 0..N-1; each image becomes an
    Example with its file name, label and bytes; a new ``out_K.tfrecord`` is
    started once the image bytes written pass ``size_per_record``. The
    baseline the converter's whole-run figure is compared with.

    Args:
      dataset_path: ImageNet-layout folder.
      output_path: folder for ``out_K.tfrecord`` (created).
      size_per_record: image bytes per output file.

    Returns:
      The number of records written.
    """
    import tensorflow as tf

    dataset, output = os.fspath(dataset_path), os.fspath(output_path)
    os.makedirs(output, exist_ok=True)
    shard, in_shard, records = 0, 0, 0
    writer = tf.io.TFRecordWriter(os.path.join(output, f"out_{shard}.tfrecord"))
    for label, category in enumerate(sorted(os.listdir(dataset))):
        folder = os.path.join(dataset, category)
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            contents = tf.io.read_file(path)
            in_shard += os.path.getsize(path)
            feature = {
                "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[name.encode()])),
                "category": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                "data": tf.train.Feature(bytes_list=tf.train.BytesList(value=[contents.numpy()])),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
            records += 1
            if in_shard >= size_per_record:
                writer.close()
                shard, in_shard = shard + 1, 0
                writer = tf.io.TFRecordWriter(os.path.join(output, f"out_{shard}.tfrecord"))
    writer.close()
    return records
