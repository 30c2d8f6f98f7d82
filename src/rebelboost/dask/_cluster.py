"""Dask's adapter to the row-block training of :mod:`rebelboost.blocks`: tasks on a Dask
client (an :class:`~rebelboost.blocks.training.Executor`).

The grower, the booster and every task a block runs are backend-neutral
(:mod:`rebelboost.blocks`); this class is all a backend adds: how to run a task, where, and
how to fetch a value. A Ray or Spark backend is one such class.
"""

from __future__ import annotations

import time
import weakref

from distributed import WorkerPlugin

from ..blocks.training import TreeReductions, nbytes

# Seconds between looks at the workers while placed partitions are computed (a worker that
# left is noticed within this time and its partitions go elsewhere).
PLACEMENT_POLL_S = 0.5
# Seconds between looks at the partitions' futures (whether all are done).
PLACEMENT_WAIT_S = 0.02


class Cluster(TreeReductions):
    """Task submission on a Dask client, counting the bytes the client gathers (maps and
    reductions: :class:`~rebelboost.blocks.training.TreeReductions`).

    A task placed on a worker (:meth:`submit`'s ``worker``) makes that worker its block's
    home, and every task that reads its result asks for the same worker (a loose
    restriction: the scheduler may still move a task where moving its inputs costs less
    than waiting, which the blocks' true sizes, ``__sizeof__``, keep from happening to a
    block of hundreds of MB; and a dead worker's block is recomputed elsewhere). A block's
    partitions are placed strictly while they are computed (:meth:`compute_placed`)."""

    def __init__(self, client):
        self.client = client
        if hasattr(client, "register_plugin"):  # (every worker, and any that joins later)
            client.register_plugin(_ThreadsFromEnvironment(), name="rebelboost-threads")
        self.gathered_bytes = 0
        # future -> the worker of its block (forgotten with the future: a long fit's
        # thousands of tasks are not all remembered)
        self._homes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._loosens: bool | None = None  # whether the scheduler runs _loosen

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

    def compute_placed(self, blocks: list[tuple[list, str | None]]) -> list:
        """Futures of each block's partitions (delayed objects), computed on the block's
        worker (None: anywhere), in order; returns once every one is done or erred.

        A partition computed elsewhere stays with the worker that computed it, and that
        worker then holds more than its share: Dask's work stealing hands a loosely placed
        task that reads nothing (a chunk generated or read from a file) to whichever worker
        is idle first (BENCHMARKS.md, issue 32, stop 36: 1.59x a worker's share at 20M
        rows). So the placement is strict while the partitions are computed, and loosened
        to a preference once they are done, or as soon as a block's worker leaves (its
        partitions, and everything they read, may then run anywhere, as they may later when
        a worker that holds them dies). A scheduler without the state this needs
        (:func:`_loosen`) gets the loose placement throughout."""
        strict = self._can_loosen()
        futures, placed = [], {}
        for parts, worker in blocks:
            if worker is None:
                futures += self.client.compute(parts)
                continue
            block = self.client.compute(parts, workers=[worker], allow_other_workers=not strict)
            futures += block
            placed.setdefault(worker, []).extend(f.key for f in block)
        looked = time.monotonic()
        while placed:  # (not distributed.wait with a timeout: each timeout left the futures
            # referenced until a garbage collection, and the raw rows outlived the fit's
            # `del raw`: 1.5x a worker's share held at the start of training)
            if all(f.done() for f in futures):
                self.client.run_on_scheduler(_loosen, placed)
                break
            time.sleep(PLACEMENT_WAIT_S)
            if time.monotonic() - looked >= PLACEMENT_POLL_S:
                looked = time.monotonic()
                live = set(self.client.nthreads())
                lost = {w: placed.pop(w) for w in list(placed) if w not in live}
                if lost:
                    self.client.run_on_scheduler(_loosen, lost)
        return futures

    def _can_loosen(self) -> bool:
        if self._loosens is None:
            try:
                self._loosens = bool(self.client.run_on_scheduler(_scheduler_can_loosen))
            except Exception:  # (a scheduler that will not run it: loose placement)
                self._loosens = False
        return self._loosens

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


def _scheduler_can_loosen(dask_scheduler) -> bool:
    """Whether the scheduler has the task state and transitions :func:`_loosen` uses."""
    return hasattr(dask_scheduler, "tasks") and hasattr(dask_scheduler, "transitions")


def _loosen(placed: dict, dask_scheduler=None) -> None:
    """On the scheduler: the tasks of ``placed`` (worker -> keys), and every task they read
    that is placed on that worker alone, placed loosely (the worker becomes a preference, as
    ``allow_other_workers=True`` makes it); any of them waiting for a worker that left is
    scheduled anywhere."""
    tasks, waiting = dask_scheduler.tasks, {}
    for worker, keys in placed.items():
        stack, seen = [tasks[k] for k in keys if k in tasks], set()
        while stack:
            ts = stack.pop()
            if ts.key in seen or ts.worker_restrictions != {worker}:
                continue
            seen.add(ts.key)
            ts.loose_restrictions = True
            if ts.state == "no-worker":
                waiting[ts.key] = "processing"
            stack.extend(ts.dependencies)
    if waiting:
        dask_scheduler.transitions(waiting, stimulus_id="rebelboost-loosen")
