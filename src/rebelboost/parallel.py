"""Thread counts for the numba kernels, with BLAS out of their way."""

from __future__ import annotations

from contextlib import contextmanager

import numba
from threadpoolctl import threadpool_limits


@contextmanager
def numba_threads(n_jobs: int | None, blas_threads: int | None = 1):
    """Use ``n_jobs`` numba threads inside the block (None or -1: all of them).

    BLAS gets ``blas_threads`` threads there (None: left as it is). Where numba kernels do the
    parallel work, BLAS's own threads only cost: after each small product they spin-wait for
    the next one and take cores from the numba threads (MNIST, depth-2 REBEL trees on 2 cores:
    138 -> 87 ms per iteration with BLAS on one thread).
    """
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
        with threadpool_limits(limits=blas_threads, user_api="blas"):
            yield
    finally:
        numba.set_num_threads(previous)
