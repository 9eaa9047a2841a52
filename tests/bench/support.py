"""A tiny class-folder image set for the benchmark tests."""

from __future__ import annotations

from helpers import bench


def _tiny_dataset(root, classes=2, per_class=3, size=(40, 30)):
    for c in range(classes):
        folder = root / f"class_{c}"
        folder.mkdir(parents=True)
        for i in range(per_class):
            data = bench.synthetic_jpeg(c * 100 + i, width=size[0], height=size[1])
            (folder / f"img_{i}.jpg").write_bytes(data)
    return root
