"""Run numba kernels on a chosen number of threads."""

from __future__ import annotations

from contextlib import contextmanager

import numba


@contextmanager
def numba_threads(n_jobs: int | None):
    """Use ``n_jobs`` numba threads inside the block (None or -1: all of them)."""
    available = numba.config.NUMBA_NUM_THREADS
    if n_jobs is None or n_jobs == -1:
        wanted = available
    elif n_jobs < 0:
        wanted = max(1, available + 1 + n_jobs)
    elif n_jobs == 0:
        raise ValueError("n_jobs == 0 has no meaning; use None, -1 or a positive count")
    else:
        wanted = min(n_jobs, available)
    previous = numba.get_num_threads()
    numba.set_num_threads(wanted)
    try:
        yield
    finally:
        numba.set_num_threads(previous)
