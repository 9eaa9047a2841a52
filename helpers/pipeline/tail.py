"""The tail every reader in the package shares: cache, shuffle, repeat, augment, batch, prefetch."""

from __future__ import annotations

import os

import tensorflow as tf

from helpers.pipeline.preprocess import augment as augment_image


def finish_pipeline(
    dataset: tf.data.Dataset,
    *,
    batch_size: int,
    training: bool,
    cache: bool | str,
    shuffle_buffer: int,
    augment: bool,
    drop_remainder: bool,
    prefetch: int | None,
    repeat: bool | int,
    seed: int | None,
    num_parallel_calls: int | None,
    deterministic: bool | None,
) -> tf.data.Dataset:
    """cache -> shuffle -> repeat -> augment -> batch -> prefetch (shared by all builders)."""
    if cache is True:
        dataset = dataset.cache()
    elif isinstance(cache, (str, os.PathLike)) and os.fspath(cache):
        dataset = dataset.cache(os.fspath(cache))
    if training and shuffle_buffer and shuffle_buffer > 0:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    if repeat is True:
        dataset = dataset.repeat()
    elif repeat and int(repeat) > 1:
        dataset = dataset.repeat(int(repeat))
    if augment and training:
        # new augmentations every epoch, the same sequence for the same seed
        seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(
            2, drop_remainder=True
        )

        def augment_pair(pair: tuple[tf.Tensor, tf.Tensor], s: tf.Tensor) -> tuple:
            return augment_image(pair[0], s), pair[1]

        dataset = tf.data.Dataset.zip((dataset, seeds)).map(
            augment_pair, num_parallel_calls=num_parallel_calls, deterministic=deterministic
        )
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    if prefetch:
        dataset = dataset.prefetch(prefetch)
    return dataset
