"""Every TF1 queue API next to its ``tf.data`` replacement, and what to watch out for."""

from __future__ import annotations

#: Queue API (TF1) -> its tf.data replacement -> what to watch out for.
QUEUE_TO_DATA: list[tuple[str, str, str]] = [
    (
        "tf.train.string_input_producer(files, num_epochs=N, shuffle=True)",
        "tf.data.Dataset.from_tensor_slices(files).shuffle(len(files)).repeat(N)",
        "num_epochs needs local_variables_initializer(); repeat(N) needs nothing",
    ),
    (
        "tf.TFRecordReader().read(filename_queue)",
        "tf.data.TFRecordDataset(files)",
        "reads one file after the other, as one reader did; files.interleave(...) reads "
        "several at once (lesson 05)",
    ),
    (
        "tf.parse_single_example(serialized, spec)",
        "dataset.map(lambda s: tf.io.parse_single_example(s, spec))",
        "the same op; batch first and use tf.io.parse_example to parse whole batches",
    ),
    (
        "tf.decode_raw(bytes, tf.uint8)",
        "tf.io.decode_raw(bytes, tf.uint8) inside map()",
        "the same op; set the static shape with tf.reshape",
    ),
    (
        "tf.train.batch(t, batch_size)",
        "dataset.batch(batch_size, drop_remainder=True)",
        "the queue drops the last partial batch unless allow_smaller_final_batch=True",
    ),
    (
        "tf.train.shuffle_batch(t, batch_size, capacity, min_after_dequeue)",
        "dataset.shuffle(min_after_dequeue).batch(batch_size)",
        "shuffle(buffer_size) keeps a buffer, as min_after_dequeue did; seed it to repeat a run",
    ),
    (
        "num_threads=k in shuffle_batch / batch",
        "dataset.map(f, num_parallel_calls=tf.data.AUTOTUNE)",
        "k threads each ran the whole reader/decoder chain",
    ),
    (
        "tf.FIFOQueue + tf.train.QueueRunner",
        "dataset.prefetch(tf.data.AUTOTUNE)",
        "the dataset is the queue; prefetch is the buffer between producer and consumer, "
        "with no threads of yours to start or stop",
    ),
    (
        "tf.RandomShuffleQueue(capacity, min_after_dequeue)",
        "dataset.shuffle(buffer_size)",
        "both keep a buffer and hand out a random element of it; shuffle's buffer_size "
        "plays min_after_dequeue's part",
    ),
    (
        "tf.train.start_queue_runners(sess, coord) + tf.train.Coordinator",
        "for images, labels in dataset: ...",
        "iterating starts the pipeline, leaving the loop stops it; model.fit(dataset) too",
    ),
    (
        "except tf.errors.OutOfRangeError:",
        "(nothing: the for loop ends)",
        "after repeat(N) the dataset ends; next(iterator) by hand raises StopIteration",
    ),
]
