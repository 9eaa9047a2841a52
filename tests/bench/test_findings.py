"""Performance fixes made from the benchmark's findings."""

from __future__ import annotations

from helpers import bench


def test_default_training_pipeline_shuffles_serialized_records_before_decoding(tmp_path):
    """Without a cache the shuffle buffer holds records, not decoded float32 images."""
    import tensorflow as tf

    from helpers import features as F
    from helpers import pipeline as P

    path = tmp_path / "train-00000-of-00001.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(12):
            image = bench.synthetic_jpeg(i, width=24, height=16)
            writer.write(F.serialize_example(F.image_example(image, i % 3, "c", b"c/x", 16, 24)))

    def ops(ds):
        return [type(d).__name__ for d in _upstream(ds)]

    plain = P.make_dataset(path, 4, 8, num_classes=3, seed=0)
    cached = P.make_dataset(path, 4, 8, num_classes=3, seed=0, cache=True)
    order = ops(plain)
    assert order.index("_ShuffleDataset") > order.index("_ParallelMapDataset")  # upstream first
    cached_order = ops(cached)
    assert cached_order.index("_ShuffleDataset") < cached_order.index("CacheDataset")
    assert sum(len(x) for x, _ in plain) == 12  # every record still delivered once per epoch
    assert sorted(int(v) for _, y in plain for v in tf.argmax(y, 1)) == sorted(
        i % 3 for i in range(12)
    )


def _upstream(dataset):
    """The chain of datasets from the last transformation back to the source."""
    chain, seen = [], [dataset]
    while seen:
        ds = seen.pop(0)
        chain.append(ds)
        seen.extend(ds._inputs())
    return chain
