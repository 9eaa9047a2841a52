"""Running TF1 code today: a private ``tf.Graph`` in graph mode, with TF's deprecation noise handled."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import tensorflow as tf

v1 = tf.compat.v1


@contextlib.contextmanager
def graph_mode(seed: int | None = 0, silence: bool = True) -> Iterator[tf.Graph]:
    """A fresh ``tf.Graph`` as the default graph, eager execution untouched outside it.

    Args:
      seed: graph-level random seed (``tf.compat.v1.set_random_seed``); ``None`` for none.
      silence: run the block under :func:`quiet` (no deprecation warnings).

    Yields:
      The graph; build ops inside the ``with`` block and run them in
      ``tf.compat.v1.Session(graph=graph)``.
    """
    graph = tf.Graph()
    hush = quiet() if silence else contextlib.nullcontext()
    with graph.as_default(), hush:
        if seed is not None:
            v1.set_random_seed(seed)
        yield graph


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Hide TensorFlow's chatter about the queue APIs while the block runs.

    Two kinds: deprecation warnings (printed on first *use* of each API, e.g.
    ``start_queue_runners``) and the ``INFO`` line plus traceback that a
    ``Coordinator`` logs when a thread reports an error (the error itself is
    still re-raised by ``coord.join``). In a notebook TensorFlow's Python
    logger writes to stdout, so without this the cell output would change
    with line numbers and thread timing.
    """
    from tensorflow.python.util import deprecation

    logger = tf.get_logger()
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with deprecation.silence():
            yield
    finally:
        logger.setLevel(level)


def deprecation_note(api: Any) -> str | None:
    """The "Instructions for updating" paragraph TensorFlow attaches to a deprecated API.

    Args:
      api: e.g. ``tf.compat.v1.train.shuffle_batch`` or ``tf.compat.v1.TFRecordReader``.

    Returns:
      The note as one line, or ``None`` if the API carries none.
    """
    for obj in (api, getattr(api, "__init__", None)):
        doc = getattr(obj, "__doc__", None) or ""
        start = doc.find("Instructions for updating:")
        if start < 0:
            continue
        body = doc[start + len("Instructions for updating:") :].strip()
        return " ".join(body.split("\n\n")[0].split())
    return None
