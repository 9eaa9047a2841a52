"""Lesson 08 exercises: the solutions pass, stubs fail, planted mistakes are named,
and the service rule the checker uses matches a real tf.data service."""

from __future__ import annotations

import collections

import pytest
import tensorflow as tf

from helpers import exercises as ex
from helpers.exercises import CheckFailed
from helpers.exercises.l08 import expected_service_counts
from lesson_suite import exercise_suite

# -- the solutions, as in solutions/08_beyond_one_machine.ipynb ----------------


def shard_count(num_hosts, dataset_bytes, max_shard_bytes):
    per_host = -(-dataset_bytes // (num_hosts * max_shard_bytes))  # ceil without floats
    return num_hosts * max(10, per_host)


def host_dataset(files, num_hosts, host_index):
    if len(files) < num_hosts:
        raise ValueError(
            f"only {len(files)} files for {num_hosts} hosts: some hosts would get no file; "
            "write at least 10 shards per host"
        )
    mine = tf.data.Dataset.from_tensor_slices(files).shard(num_hosts, host_index)
    return mine.interleave(tf.data.TFRecordDataset, cycle_length=4)


def service_counts(num_elements, num_workers, processing_mode, num_consumers, shared_job):
    per_job = num_workers if processing_mode == "parallel_epochs" else 1
    jobs = 1 if shared_job else num_consumers
    return [per_job * jobs] * num_elements


SOLUTIONS = {
    "08.shard_count": shard_count,
    "08.host_dataset": host_dataset,
    "08.service_counts": service_counts,
}


test_lesson_has_its_exercises_in_order, test_solution_passes_on_fresh_inputs, test_stub_fails = (
    exercise_suite("08", SOLUTIONS)
)


# -- 08.shard_count ---------------------------------------------------------------


def _not_a_multiple(num_hosts, dataset_bytes, max_shard_bytes):
    return max(10 * num_hosts, -(-dataset_bytes // max_shard_bytes))


def _ten_in_total(num_hosts, dataset_bytes, max_shard_bytes):
    return num_hosts * max(1, -(-dataset_bytes // (num_hosts * max_shard_bytes)))


def _rounds_down(num_hosts, dataset_bytes, max_shard_bytes):
    return num_hosts * max(10, dataset_bytes // (num_hosts * max_shard_bytes))


def _twice_as_many(num_hosts, dataset_bytes, max_shard_bytes):
    return 2 * shard_count(num_hosts, dataset_bytes, max_shard_bytes)


def _float_count(num_hosts, dataset_bytes, max_shard_bytes):
    return float(shard_count(num_hosts, dataset_bytes, max_shard_bytes))


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_not_a_multiple, "not a multiple of"),
        (_ten_in_total, "at least 10 per host"),
        (_rounds_down, "above max_shard_bytes"),
        (_twice_as_many, "also meet all three rules"),
        (_float_count, "not an int"),
    ],
)
def test_shard_count_mistakes_are_named(mistake, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("08.shard_count", mistake, seed=1)


def test_shard_count_via_math_ceil_passes():
    import math

    def with_ceil(num_hosts, dataset_bytes, max_shard_bytes):
        return num_hosts * max(10, math.ceil(dataset_bytes / (num_hosts * max_shard_bytes)))

    ex.check("08.shard_count", with_ceil, seed=2)


# -- 08.host_dataset --------------------------------------------------------------


def _data_sharding(files, num_hosts, host_index):
    if len(files) < num_hosts:
        raise ValueError(f"{len(files)} files, {num_hosts} hosts")
    return tf.data.TFRecordDataset(files).shard(num_hosts, host_index)


def _shuffled_listing(files, num_hosts, host_index):
    if len(files) < num_hosts:
        raise ValueError(f"{len(files)} files, {num_hosts} hosts")
    listed = tf.data.Dataset.list_files(files)  # shuffle=True by default, a new order per call
    return listed.shard(num_hosts, host_index).interleave(tf.data.TFRecordDataset)


def _blocks_drop_the_tail(files, num_hosts, host_index):
    if len(files) < num_hosts:
        raise ValueError(f"{len(files)} files, {num_hosts} hosts")
    k = len(files) // num_hosts
    return tf.data.TFRecordDataset(files[host_index * k : (host_index + 1) * k])


def _no_refusal(files, num_hosts, host_index):
    mine = tf.data.Dataset.from_tensor_slices(files).shard(num_hosts, host_index)
    return mine.interleave(tf.data.TFRecordDataset)


def _vague_refusal(files, num_hosts, host_index):
    if len(files) < num_hosts:
        raise ValueError("too few files")
    return host_dataset(files, num_hosts, host_index)


def _unbalanced(files, num_hosts, host_index):
    if len(files) < num_hosts:
        raise ValueError(f"{len(files)} files, {num_hosts} hosts")
    # the first num_hosts - 1 hosts get one file each, the last host all the rest
    mine = files[host_index : host_index + 1] if host_index < num_hosts - 1 else files[host_index:]
    return tf.data.TFRecordDataset(mine)


def _repeats(files, num_hosts, host_index):
    return host_dataset(files, num_hosts, host_index).repeat()


def _file_names(files, num_hosts, host_index):
    if len(files) < num_hosts:
        raise ValueError(f"{len(files)} files, {num_hosts} hosts")
    return tf.data.Dataset.from_tensor_slices(files).shard(num_hosts, host_index)


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_data_sharding, r"spread over hosts .* \(DATA\)"),
        (_shuffled_listing, "different records on two calls|read by (hosts|no host)"),
        (_blocks_drop_the_tail, "is read by no host"),
        (_no_refusal, "did not refuse"),
        (_vague_refusal, "does not say how many files"),
        (_unbalanced, r"files per host \["),
        (_repeats, "twice"),
        (_file_names, "a file name"),
    ],
)
def test_host_dataset_mistakes_are_named(mistake, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("08.host_dataset", mistake, seed=3)


def test_host_dataset_other_spellings_pass():
    def strided_python(files, num_hosts, host_index):
        if len(files) < num_hosts:
            raise ValueError(f"{len(files)} files cannot feed {num_hosts} hosts")
        return tf.data.TFRecordDataset(files[host_index::num_hosts])

    def sorted_listing_shuffled_after(files, num_hosts, host_index):
        if len(files) < num_hosts:
            raise ValueError(f"{len(files)} files < {num_hosts} hosts")
        listed = tf.data.Dataset.list_files(files, shuffle=False)
        mine = listed.shard(num_hosts, host_index).shuffle(64)
        return mine.interleave(tf.data.TFRecordDataset, num_parallel_calls=tf.data.AUTOTUNE)

    ex.check("08.host_dataset", strided_python, seed=4)
    ex.check("08.host_dataset", sorted_listing_shuffled_after, seed=4)


def test_host_dataset_returning_a_list_is_named():
    def as_list(files, num_hosts, host_index):
        return list(host_dataset(files, num_hosts, host_index).as_numpy_iterator())

    with pytest.raises(CheckFailed, match="not a tf.data.Dataset"):
        ex.check("08.host_dataset", as_list, seed=5)


# -- 08.service_counts ------------------------------------------------------------


def _modes_swapped(num_elements, num_workers, processing_mode, num_consumers, shared_job):
    other = "distributed_epoch" if processing_mode == "parallel_epochs" else "parallel_epochs"
    return service_counts(num_elements, num_workers, other, num_consumers, shared_job)


def _ignores_consumers(num_elements, num_workers, processing_mode, num_consumers, shared_job):
    return service_counts(num_elements, num_workers, processing_mode, 1, True)


def _shared_job_still_multiplies(
    num_elements, num_workers, processing_mode, num_consumers, shared_job
):
    return service_counts(num_elements, num_workers, processing_mode, num_consumers, False)


def _distributed_split_per_worker(
    num_elements, num_workers, processing_mode, num_consumers, shared_job
):
    counts = service_counts(num_elements, num_workers, processing_mode, num_consumers, shared_job)
    return counts[: num_elements // num_workers] if processing_mode != "parallel_epochs" else counts


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_modes_swapped, "each of the .* workers produces a full epoch|split one epoch"),
        (_ignores_consumers, "each gets a job of its own"),
        (_shared_job_still_multiplies, "share one job_name"),
        (_distributed_split_per_worker, "counts for"),
    ],
)
def test_service_counts_mistakes_are_named(mistake, message):
    with pytest.raises(CheckFailed, match=message):
        ex.check("08.service_counts", mistake, seed=6)


@pytest.fixture(scope="module")
def service():
    """A dispatcher and two workers on ports chosen by the OS, as in the lesson."""
    svc = tf.data.experimental.service
    dispatcher = svc.DispatchServer(svc.DispatcherConfig(port=0))
    address = dispatcher.target.split("://")[1]
    workers = [
        svc.WorkerServer(svc.WorkerConfig(dispatcher_address=address, port=0)) for _ in range(2)
    ]
    yield dispatcher.target, len(workers)
    for worker in workers:
        worker.stop()
    dispatcher.stop()


@pytest.mark.parametrize("mode", ["parallel_epochs", "distributed_epoch"])
@pytest.mark.parametrize("shared_job", [False, True])
def test_the_checkers_rule_matches_a_real_service(service, mode, shared_job):
    target, num_workers = service
    n, consumers = 12, 2
    job_name = f"shared-{mode}" if shared_job else None
    iterators = [
        iter(
            tf.data.Dataset.range(n).apply(
                tf.data.experimental.service.distribute(mode, target, job_name=job_name)
            )
        )
        for _ in range(consumers)
    ]
    seen = collections.Counter()
    live = list(iterators)
    while live:  # read the consumers in turn, like trainers running side by side
        for it in list(live):
            try:
                seen[int(next(it))] += 1
            except StopIteration:
                live.remove(it)
    measured = [seen[i] for i in range(n)]
    assert measured == expected_service_counts(n, num_workers, mode, consumers, shared_job)
