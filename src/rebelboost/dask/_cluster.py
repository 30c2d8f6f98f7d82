"""Dask's adapter to the row-block training of :mod:`rebelboost.blocks`: tasks on a Dask
client (an :class:`~rebelboost.blocks.training.Executor`).

The grower, the booster and every task a block runs are backend-neutral
(:mod:`rebelboost.blocks`); this class is all a backend adds: how to run a task, where, and
how to fetch a value. A Ray or Spark backend is one such class.
"""

from __future__ import annotations

import weakref
from operator import getitem

from distributed import WorkerPlugin

from ..blocks.training import nbytes


class Cluster:
    """Task submission on a Dask client, counting the bytes the client gathers.

    A task placed on a worker (a block's partitions, :meth:`submit`'s ``worker``) makes that
    worker its block's home, and every task that reads its result asks for the same worker
    (a loose restriction: the scheduler may still move a task where moving its inputs costs
    less than waiting, which the blocks' true sizes, ``__sizeof__``, keep from happening to
    a block of hundreds of MB; and a dead worker's block is recomputed elsewhere)."""

    def __init__(self, client):
        self.client = client
        if hasattr(client, "register_plugin"):  # (every worker, and any that joins later)
            client.register_plugin(_ThreadsFromEnvironment(), name="rebelboost-threads")
        self.gathered_bytes = 0
        # future -> the worker of its block (forgotten with the future: a long fit's
        # thousands of tasks are not all remembered)
        self._homes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def submit(self, func, *args, worker: str | None = None):
        """``func(*args)`` as a task that asks for ``worker`` (default: the home of its first
        argument that has one), else anywhere."""
        from distributed import Future

        if worker is None:
            worker = next((self._homes[a] for a in args
                           if isinstance(a, Future) and a in self._homes), None)
        if worker is None:
            return self.client.submit(func, *args, pure=False)
        future = self.client.submit(func, *args, pure=False, workers=[worker],
                                    allow_other_workers=True)
        self._homes[future] = worker
        return future

    def map(self, func, futures, *args):
        return [self.submit(func, f, *args) for f in futures]

    def unpack(self, futures, n: int) -> list[list]:
        """``n`` futures per tuple-valued future: ``[[f[0] ...], [f[1] ...]]``."""
        return [[self.submit(getitem, f, i) for f in futures] for i in range(n)]

    def reduce(self, func, futures):
        """``func`` applied pairwise in a fixed order (a tree over the blocks' order), so the
        result is the same whichever worker computes what; a future."""
        level = list(futures)
        while len(level) > 1:
            level = self.reduce_level(func, level)
        return level[0]

    def reduce_level(self, func, futures: list) -> list:
        """One level of :meth:`reduce`: ``func`` of each pair in order (the last one alone
        if odd); futures."""
        return self._level(func, list(futures), self.submit)

    def reduce_gather(self, func, futures, fan_in: int = 2):
        """:meth:`reduce`'s value, the last levels (``fan_in`` values or fewer) summed here:
        one worker-to-worker hop fewer, the same order of additions."""
        level = list(futures)
        while len(level) > fan_in:
            level = self._level(func, level, self.submit)
        level = self.gather(level)
        while len(level) > 1:
            level = self._level(func, level, lambda f, a, b: f(a, b))
        return level[0]

    @staticmethod
    def _level(func, level, call):
        nxt = [call(func, a, b) for a, b in zip(level[::2], level[1::2], strict=False)]
        if len(level) % 2:
            nxt.append(level[-1])
        return nxt

    def training_allocation(self, on: bool) -> None:
        """glibc's mmap threshold on every worker for the rounds of splits (``on``) and back
        after them (:func:`~rebelboost._malloc.training_allocation`: Dask's memory trimming
        pins it at 128 KiB, and a kddcup fit's rounds then took 1.4x the time)."""
        from .._malloc import training_allocation

        self.client.run(training_allocation, on, on_error="ignore")  # (an optimisation)

    def gather(self, future):
        value = self.client.gather(future)
        self.gathered_bytes += nbytes(value)
        return value


class _ThreadsFromEnvironment(WorkerPlugin):
    """A worker plugin: numba's thread count as the worker's environment says
    (:func:`~rebelboost.parallel.follow_thread_environment`), before any task starts numba's
    threads. A worker of ``LocalCluster(env={"NUMBA_NUM_THREADS": ...})`` imports its
    parent's main module, and numba, before that environment is set; its first compilation
    then failed."""

    def setup(self, worker) -> None:
        from ..parallel import follow_thread_environment

        follow_thread_environment()
