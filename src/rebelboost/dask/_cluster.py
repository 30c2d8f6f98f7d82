"""Dask's adapter to the row-block training of :mod:`rebelboost.blocks`: tasks on a Dask
client (an :class:`~rebelboost.blocks.training.Executor`).

The grower, the booster and every task a block runs are backend-neutral
(:mod:`rebelboost.blocks`); this class is all a backend adds: how to run a task, where, and
how to fetch a value. A Ray or Spark backend is one such class.
"""

from __future__ import annotations

import weakref

from distributed import WorkerPlugin

from ..blocks.training import TreeReductions, nbytes


class Cluster(TreeReductions):
    """Task submission on a Dask client, counting the bytes the client gathers (maps and
    reductions: :class:`~rebelboost.blocks.training.TreeReductions`).

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

    def workers(self) -> list[str]:
        """The workers' addresses in address order, asked of the scheduler. (Not the client's
        ``scheduler_info()``: a periodic refresh of its cache lists no workers, and where it
        landed between the fetch and the read, a fit saw none: issue 32.)"""
        return sorted(self.client.nthreads())

    def training_allocation(self, on: bool) -> None:
        """glibc's mmap threshold and NumPy's hugepage advice on every worker for the rounds
        of splits (``on``) and back after them (:func:`~rebelboost._malloc.training_allocation`:
        Dask's memory trimming pins the threshold at 128 KiB, and a kddcup fit's rounds then
        took 1.4x the time; fresh hugepage-advised arrays stall on the kernel's compaction)."""
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
