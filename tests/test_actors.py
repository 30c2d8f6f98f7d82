"""The booster's tasks on one actor per worker (:mod:`rebelboost.dask._actors`): the same
values as the scheduler's tasks, values passed between workers, memory given back when the
client lets go of a value, errors as raised, and no scheduler task per round of splits."""

from __future__ import annotations

import gc
import json
import operator
import time

import dask.array as da
import distributed
import numpy as np
import pytest
from numpy.testing import assert_array_equal

from rebelboost.dask import DaskRebelClassifier
from rebelboost.dask import estimator as dask_estimator
from rebelboost.dask._actors import ActorExecutor
from rebelboost.dask._cluster import Cluster


def _blocks(client, n=5):
    """``n`` arrays, the first three on one worker, the others on the other."""
    workers = sorted(client.nthreads())
    return [client.submit(np.arange, 4 * i, 4 * i + 4, dtype=float, pure=False,
                          workers=[workers[i >= 3]]) for i in range(n)]


def _stored(client, keys=None) -> list[int]:
    """How many values the actors (those of ``keys``, the actors' futures' keys; None:
    all) of each worker hold, sorted."""
    def count(dask_worker, keys=keys):
        return sum(len(a.values) for k, a in dask_worker.state.actors.items()
                   if keys is None or k in keys)

    return sorted(client.run(count).values())


def _program(executor, blocks):
    """Every kind of step the booster takes: maps, tuples unpacked, reductions (one pair
    across the workers), a task on values of both workers, nested gathers."""
    doubled = executor.map(operator.mul, blocks, 2.0)
    pairs = executor.map(np.divmod, doubled, 3.0)
    quotients, remainders = executor.unpack(pairs, 2)
    largest = executor.reduce(max, executor.map(np.max, quotients))
    shifted = executor.map(operator.sub, remainders, largest)
    across = executor.submit(np.add, shifted[0], shifted[-1])
    total = executor.reduce_gather(operator.add, shifted)
    return executor.gather([across, [largest, quotients]]), total


def test_the_same_values_as_the_schedulers_tasks(client):
    blocks = _blocks(client)
    cluster = Cluster(client)
    actors = ActorExecutor(cluster, blocks)
    assert len(actors.workers) == 2
    (across, (largest, quotients)), total = _program(actors, actors.blocks)
    (t_across, (t_largest, t_quotients)), t_total = _program(cluster, blocks)
    assert_array_equal(across, t_across)
    assert largest == t_largest == 12.0  # (38 // 3)
    for a, b in zip(quotients, t_quotients, strict=True):
        assert_array_equal(a, b)
    assert_array_equal(total, t_total)
    assert cluster.gathered_bytes > 0
    actors.close()


def test_values_go_when_the_client_lets_go_and_errors_come_as_raised(client):
    blocks = _blocks(client)
    actors = ActorExecutor(Cluster(client), blocks)
    keys = [f.key for f in actors._actor_futures]
    roots = actors.blocks
    assert _stored(client, keys) == [2, 3]  # the blocks
    steps = [actors.map(operator.add, roots, float(i)) for i in range(4)]
    actors.gather(steps)
    assert _stored(client, keys) == [2 + 2 * 4, 3 + 3 * 4]
    del steps
    gc.collect()
    actors.gather(actors.map(np.sum, roots))  # (the next call carries what to forget)
    assert _stored(client, keys) == [2 + 2, 3 + 3]
    with pytest.raises(ValueError, match="operands could not be broadcast"):
        actors.gather(actors.submit(np.add, roots[0], np.zeros(3)))
    actors.close()  # the actors go (Dask releases them soon after)
    deadline = time.monotonic() + 30
    while _stored(client, keys) != [0, 0] and time.monotonic() < deadline:
        gc.collect()  # (the raised error's frames hold an actor's handle in a cycle)
        time.sleep(0.1)
    assert _stored(client, keys) == [0, 0]


def test_rounds_of_splits_are_not_scheduler_tasks(client, monkeypatch):
    """The scheduler runs the same tasks for a fit of 2 trees as for one of 6: the trees'
    rounds go to the actors; with ``ROUNDS_ON_ACTORS`` off, each tree adds tasks."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 5))
    y = np.digitize(X[:, 0] + X[:, 1] ** 2, [0.0, 1.0])
    Xd, yd = da.from_array(X, chunks=(750, 5)), da.from_array(y, chunks=750)
    counts, files = {}, []
    for on in (True, False):
        monkeypatch.setattr(dask_estimator, "ROUNDS_ON_ACTORS", on)
        for n in (2, 6):
            with distributed.get_task_stream(client) as stream:
                model = DaskRebelClassifier(n, max_leaves=15, random_state=0,
                                            histogram_bits=12).fit(Xd, yd)
            counts[on, n] = len(stream.data)
        files.append(json.dumps(model.to_dict()))
    assert counts[True, 2] == counts[True, 6]
    assert counts[False, 6] > counts[False, 2] + 4 * 5  # (rounds of tasks, every tree)
    assert files[0] == files[1]


class _GathersFirst:
    """A booster whose making gathers the blocks: an exchange with every other actor."""

    def __init__(self, executor, blocks):
        self.values = executor.gather(blocks)

    def initial_loss(self) -> float:
        return float(sum(self.values))


def test_an_actor_waiting_on_an_exchange_leaves_the_workers_actor_thread_free(client):
    """An actor growing trees among its peers works on a thread of its own: on the worker's
    one actor thread, its waits on the other workers kept every other actor of that worker
    (another fit's) from running, and two fits at once could each wait on the other."""
    from rebelboost.dask._actors import BlockStore, WorkerLost

    first, second = sorted(client.nthreads())
    here, there, neighbour = (
        client.submit(BlockStore, [0], value, actor=True, workers=[worker]).result()
        for value, worker in ((1.0, first), (2.0, second), (3.0, first)))
    waiting = here.start(0, [here, there], [0, 1], [0, 0], _GathersFirst)
    time.sleep(0.5)  # (``there`` never starts: ``here`` waits for its block)
    assert not waiting.done()
    assert neighbour.run([], [0], []).result(timeout=20) == [3.0]
    there.start(1, [here, there], [0, 1], [0, 0], _GathersFirst).result(timeout=20)
    assert waiting.result(timeout=20) == 3.0  # (the exchange completed: 1.0 + 2.0)
    stuck = here.start(0, [here, there], [0, 1], [0, 0], _GathersFirst)
    here.stop("the test is over").result(timeout=20)
    with pytest.raises(WorkerLost, match="the test is over"):
        stuck.result(timeout=20)
