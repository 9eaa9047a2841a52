"""What a pipeline's buffers hold in host memory: :func:`estimate_pipeline_memory`.

The one estimator of the course: lesson 05's table and the benchmark's memory
yardstick both use it. It models what :func:`helpers.pipeline.make_dataset`
does: without ``cache`` the shuffle buffer holds *serialized records* (it sits
before the decoding ``map``); with ``cache`` it holds decoded images.
"""

from __future__ import annotations

from helpers.pipeline.preprocess import ImageSize, size_pair

#: Mean serialized record of an ImageNet photo at its original size (a ~110 kB JPEG).
IMAGENET_RECORD_BYTES = 110_000


def estimate_pipeline_memory(
    image_size: ImageSize = 224,
    batch_size: int = 32,
    *,
    shuffle_buffer: int = 1000,
    cache_images: int = 0,
    record_bytes: float = IMAGENET_RECORD_BYTES,
    shuffle_decoded: bool | None = None,
    cycle_length: int = 2,
    read_buffer_bytes: int = 256 * 1024,
    prefetch_batches: int = 2,
    parallel_calls: int = 2,
    channels: int = 3,
    bytes_per_value: int = 4,
) -> dict[str, int]:
    """Rough host-memory cost of ``make_dataset``'s buffers, in bytes (lesson 05, bench).

    An element after the ``map`` is a decoded ``(h, w, channels)`` image of
    ``bytes_per_value`` bytes per value (float32: 4). The parts:

    * ``shuffle_buffer``: ``shuffle_buffer`` serialized records of
      ``record_bytes`` each when the pipeline does not cache (``make_dataset``
      shuffles before decoding), decoded elements when it does;
    * ``cache``: ``cache_images`` decoded elements (an in-memory ``cache``);
    * ``interleave_buffers``: one read buffer per open shard
      (``TFRecordDataset``'s default is 256 KiB);
    * ``map_in_flight``: ``parallel_calls`` images being decoded;
    * ``batch``: the batch being assembled;
    * ``prefetch``: ``prefetch_batches`` finished batches waiting.

    Args:
      image_size: output size.
      batch_size: images per batch.
      shuffle_buffer: elements in the shuffle buffer.
      cache_images: images held by an in-memory ``cache`` (the dataset size); 0 = no cache.
      record_bytes: mean serialized record size (the encoded image and its features).
      shuffle_decoded: whether the shuffle buffer holds decoded images; ``None``
        (default) = as ``make_dataset``: decoded exactly when ``cache_images`` > 0.
      cycle_length: shards open at once.
      read_buffer_bytes: read buffer per open shard.
      prefetch_batches: batches waiting in ``prefetch``.
      parallel_calls: map calls in flight.
      channels: image channels.
      bytes_per_value: 4 for float32, 1 for uint8.

    Returns:
      ``element``, ``shuffle_buffer``, ``cache``, ``interleave_buffers``,
      ``map_in_flight``, ``batch``, ``prefetch``, ``total`` (the sum of the parts).
    """
    h, w = size_pair(image_size)
    element = h * w * channels * bytes_per_value
    if shuffle_decoded is None:
        shuffle_decoded = cache_images > 0
    shuffled = element if shuffle_decoded else record_bytes
    parts = {
        "shuffle_buffer": int(shuffle_buffer * shuffled),
        "cache": cache_images * element,
        "interleave_buffers": cycle_length * read_buffer_bytes,
        "map_in_flight": parallel_calls * element,
        "batch": batch_size * element,
        "prefetch": prefetch_batches * batch_size * element,
    }
    return {"element": element, **parts, "total": sum(parts.values())}
