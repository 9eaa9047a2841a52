"""helpers.pipeline.baselines: one file per image, the Python generator, folder listing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers import pipeline as P

from .support import IMAGE_SIZE, NUM_CLASSES, _collect, _encode


def test_per_file_and_generator_give_the_tfrecord_images(dataset_dir: dict) -> None:
    common = dict(num_classes=NUM_CLASSES, drop_remainder=False)
    tfr_x, tfr_y = _collect(
        P.make_dataset(
            dataset_dir["dir"],
            6,
            IMAGE_SIZE,
            training=False,
            deterministic=True,
            cycle_length=1,
            **common,
        )
    )
    per_x, per_y = _collect(
        P.per_file_dataset(
            dataset_dir["files"], dataset_dir["labels"], 6, IMAGE_SIZE, deterministic=True, **common
        )
    )
    gen_x, gen_y = _collect(
        P.generator_dataset(dataset_dir["files"], dataset_dir["labels"], 6, IMAGE_SIZE, **common)
    )
    np.testing.assert_array_equal(per_y, tfr_y)
    np.testing.assert_array_equal(per_x, tfr_x)  # same bytes, same decoder: identical
    np.testing.assert_array_equal(gen_y, tfr_y)
    # PIL's JPEG decoder and resize filter differ a little from TF's
    assert np.abs(gen_x - tfr_x).mean() < 0.05


def test_baselines_refuse_bad_labels(dataset_dir: dict) -> None:
    files, labels = dataset_dir["files"][:2], [0, 3]
    with pytest.raises(ValueError, match=r"label 3 is outside \[0, 3\)"):
        P.per_file_dataset(files, labels, 2, 16, num_classes=3)
    with pytest.raises(ValueError, match="label 3"):
        P.generator_dataset(files, labels, 2, 16, num_classes=3)
    with pytest.raises(ValueError, match="num_classes"):
        P.per_file_dataset(files, [0, 1], 2, 16)


def test_list_image_folder_skips_hidden_and_non_images(tmp_path: Path) -> None:
    for cls in ("b", "a", ".ipynb_checkpoints"):
        (tmp_path / cls).mkdir()
        (tmp_path / cls / "x.JPG").write_bytes(_encode(np.zeros((4, 4, 3), np.uint8)))
    (tmp_path / "a" / ".hidden.jpg").write_bytes(b"")
    (tmp_path / "a" / "README.txt").write_text("hi")
    folder = P.list_image_folder(tmp_path)
    assert folder.classes == ["a", "b"]
    assert [Path(p).relative_to(tmp_path).as_posix() for p in folder.paths] == [
        "a/x.JPG",
        "b/x.JPG",
    ]
    assert folder.labels == [0, 1]
