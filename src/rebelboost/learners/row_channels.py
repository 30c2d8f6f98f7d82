"""A leaf's rows' channels, read where the rows lie scattered over the row-major arrays: their
sums, and gathered copies (the compact rows a histogram kernel reads) with the same sums.

Sums add the rows in the given order, so a gathered copy's totals
(:func:`~rebelboost.search.histograms.sparse.row_totals`) are the row sums bit for bit; a
leaf's rows are read once for both (:class:`.row_set.LocalRows`). Channels may be float32
(the boosters' lean state): a gathered copy keeps their dtype, an amplified channel is rounded
to it, and sums are float64 of those values.
"""

from __future__ import annotations

import numba
import numpy as np

from ..exact_sums import as_channel
from ..search.histograms._intrinsics import prefetch_far_ahead

# Rows from which a gather or a partition of the Python row set uses every thread.
PARALLEL_ROWS = 1 << 15


@numba.njit(cache=True, nogil=True)
def row_sums(channels, rows, amplify, row_weight):
    """Channel sums (times ``amplify``; None: 1) and the sample weight of ``rows``, in row
    order."""
    c = channels.shape[1]
    out = np.zeros(c + 1)
    n = rows.shape[0]
    for i in range(n):
        prefetch_far_ahead(channels, rows, i, n, 0)
        r = rows[i]
        s = 1.0 if amplify is None else amplify[r]
        for j in range(c):
            out[j] += as_channel(channels, channels[r, j] * s)
        out[c] += as_channel(channels, row_weight[r])
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _gather_into(out, channels, rows, amplify, row_weight, i0, i1):
    c = channels.shape[1]
    for i in range(i0, i1):
        prefetch_far_ahead(channels, rows, i, i1, 0)
        r = rows[i]
        s = 1.0 if amplify is None else amplify[r]
        for j in range(c):
            out[i, j] = channels[r, j] * s
        out[i, c] = row_weight[r]


@numba.njit(cache=True, nogil=True)
def _gather(channels, rows, amplify, row_weight):
    """The histogram channels of ``rows`` (their weights, amplified, and sample weight), in
    the channels' dtype."""
    out = np.empty((rows.shape[0], channels.shape[1] + 1), channels.dtype)
    _gather_into(out, channels, rows, amplify, row_weight, 0, rows.shape[0])
    return out


@numba.njit(parallel=True, cache=True, nogil=True)
def _gather_parallel(channels, rows, amplify, row_weight, n_tasks):
    """:func:`_gather` in ``n_tasks`` blocks of rows on every thread."""
    n = rows.shape[0]
    out = np.empty((n, channels.shape[1] + 1), channels.dtype)
    bounds = np.linspace(0, n, n_tasks + 1).astype(np.intp)
    for t in numba.prange(n_tasks):
        _gather_into(out, channels, rows, amplify, row_weight, bounds[t], bounds[t + 1])
    return out


def row_tasks(n_rows: int, n_threads: int) -> int:
    """Blocks of rows a gather or a partition of ``n_rows`` runs in on ``n_threads``: four a
    thread, of at least 4,096 rows, from :data:`PARALLEL_ROWS`; 1 (the calling thread)
    below. (The blocks' count never changes the result.)"""
    if n_threads < 2 or n_rows < PARALLEL_ROWS:
        return 1
    return min(4 * n_threads, n_rows // 4096)


def gather(channels, rows, amplify, row_weight) -> np.ndarray:
    """:func:`_gather`, on every thread for many rows."""
    n_tasks = row_tasks(len(rows), numba.get_num_threads())
    if n_tasks > 1:
        return _gather_parallel(channels, rows, amplify, row_weight, n_tasks)
    return _gather(channels, rows, amplify, row_weight)
