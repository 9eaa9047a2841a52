"""TF1 queue-based input pipelines, run through ``tf.compat.v1`` in graph mode.

Before ``tf.data`` (TF 1.4, November 2017) a TensorFlow input pipeline was a
chain of queues living *inside* the graph, kept full by Python threads::

    filenames ──string_input_producer──▶ [filename queue]
        ──TFRecordReader.read──▶ parse_single_example ──▶ decode_raw
        ──shuffle_batch──▶ [RandomShuffleQueue] ──dequeue_many──▶ model

Each ``*_producer`` / ``*batch`` call adds a queue plus a ``QueueRunner`` (the
recipe for the threads that fill it) to the graph. Nothing moves until
``start_queue_runners`` starts those threads; a ``Coordinator`` stops them;
the end of the data arrives as ``tf.errors.OutOfRangeError`` once the
filename queue has handed out ``num_epochs`` epochs and every queue behind it
is drained.

Everything here builds its own ``tf.Graph`` (see :func:`graph_mode`) and runs
it in a ``tf.compat.v1.Session``; eager execution stays on for everything
else in the process. TensorFlow's deprecation warnings for these APIs are
silenced inside :func:`graph_mode`; :func:`deprecation_note` shows what they
say, and :data:`QUEUE_TO_DATA` maps every queue API to its ``tf.data``
replacement.

CLI::

    python -m helpers.legacy table                 # the queue API -> tf.data table
    python -m helpers.legacy train [--epochs N]    # softmax regression on the digits, both ways

One module per job: ``graph`` (graph mode, quiet deprecations), ``table`` (queue API ->
tf.data), ``digits`` (raw-byte records), ``queues``, ``datasets`` (the tf.data
equivalents), ``softmax`` (training both ways), ``cli``.
"""

from __future__ import annotations

from helpers.legacy.cli import main
from helpers.legacy.datasets import dataset_batches, expected_batches
from helpers.legacy.digits import DIGIT_SPEC, decode_digit, write_digit_records
from helpers.legacy.graph import deprecation_note, graph_mode, quiet
from helpers.legacy.queues import (
    QueueRun,
    min_after_dequeue_blocks,
    queue_batches,
    queue_runner_shuffle,
    run_queue_pipeline,
    steps_until_out_of_range,
    threaded_producers,
)
from helpers.legacy.softmax import (
    TrainResult,
    evaluate_softmax,
    train_softmax_dataset,
    train_softmax_queue,
)
from helpers.legacy.table import QUEUE_TO_DATA

__all__ = [
    "DIGIT_SPEC",
    "QUEUE_TO_DATA",
    "QueueRun",
    "TrainResult",
    "dataset_batches",
    "decode_digit",
    "deprecation_note",
    "evaluate_softmax",
    "expected_batches",
    "graph_mode",
    "main",
    "min_after_dequeue_blocks",
    "queue_batches",
    "queue_runner_shuffle",
    "quiet",
    "run_queue_pipeline",
    "steps_until_out_of_range",
    "threaded_producers",
    "train_softmax_dataset",
    "train_softmax_queue",
    "write_digit_records",
]
