"""Leaf histograms of the vector-leaf grower: per (feature, bin) sums of the rows' channels
over one leaf's rows, built directly or by subtraction from the parent's.

Only the cells a split search reads are written (each feature's value bins and the missing
bin), so a reused buffer need not be cleared whole. Dense bins: one task per block of
features streams the leaf's rows in the given order; sparse bins (:class:`.histogram.SparseBins`):
the entries outside each feature's default bin are added by :func:`.histogram.add_sparse_entries`
and the default bin is the leaf's totals minus its other bins. Threads split the features,
never the rows, so every sum is accumulated in row order whatever the thread count.
"""

from __future__ import annotations

import functools

import numba
import numpy as np

from .binned import BinnedData
from .histogram import add_sparse_entries

# Histogram additions (rows x features x channels) from which the kernels use every thread.
PARALLEL_ADDS = 1 << 20


def big_histograms(n_value_bins: np.ndarray, n_classes: int) -> bool:
    """Whether histograms are large enough for the multi-threaded scan and subtraction."""
    n_features = len(n_value_bins)
    return (int(np.sum(n_value_bins)) + n_features) * (2 * n_classes + 1) >= PARALLEL_ADDS // 4


def build_leaf_histogram(data: BinnedData, row_channels: np.ndarray, rows: np.ndarray,
                         totals: np.ndarray, features: np.ndarray, out: np.ndarray
                         ) -> np.ndarray:
    """Writes the histogram of ``rows`` over ``features`` into the cells of ``out``
    (n_features, n_bins, C) that a search reads; ``row_channels[i]`` are row ``rows[i]``'s
    channels and ``totals`` their sums (a sparse feature's default bin is the rest)."""
    sparse = data.sparse
    layout = data.layout
    n_value_bins = np.ascontiguousarray(layout.n_value_bins, dtype=np.int32)
    parallel = len(rows) * out.shape[2] * max(1, len(features)) >= PARALLEL_ADDS
    if sparse is None:
        dense_histogram(data.bins, row_channels, rows, features, out, n_value_bins,
                        layout.missing_bin, parallel)
    else:
        clear = _clear_sparse if parallel else _clear_sparse_serial
        clear(out, n_value_bins, layout.missing_bin)
        add_sparse_entries(sparse, row_channels, rows, out, parallel)
        fill = _fill_defaults if parallel else _fill_defaults_serial
        fill(out, n_value_bins, layout.missing_bin, sparse.default_bin, totals)
    return out


def dense_histogram(bins: np.ndarray, row_channels: np.ndarray, rows: np.ndarray,
                    features: np.ndarray, out: np.ndarray, n_value_bins: np.ndarray,
                    missing_bin: int, parallel: bool) -> None:
    """The dense kernel: ``out``'s cells of ``features`` (float or integer) = the sums of
    ``row_channels[i]`` over ``rows[i]``'s bins, each cell in row order; threads split the
    features, each fills them a tile at a time."""
    starts = _task_starts(len(features), numba.get_num_threads() if parallel else 1)
    kernel = _dense_histogram if parallel else _dense_histogram_serial
    kernel(bins, row_channels, rows, features, starts, out, n_value_bins, missing_bin,
           feature_tile(out.shape[1], out.shape[2]))


def subtract_histogram(big: np.ndarray, small: np.ndarray, n_value_bins: np.ndarray,
                       missing_bin: int, parallel: bool) -> None:
    """``big -= small`` on the cells a search reads (a parent's histogram becomes its larger
    child's)."""
    subtract = _subtract_used if parallel else _subtract_used_serial
    subtract(big, small, n_value_bins, missing_bin)


@functools.lru_cache(maxsize=64)
def _task_starts(n_features: int, n_tasks: int) -> np.ndarray:
    """Feature ranges of the histogram tasks (the same for every leaf: cached, read-only)."""
    starts = np.linspace(0, n_features, max(1, min(n_tasks, n_features)) + 1).astype(np.intp)
    starts.flags.writeable = False
    return starts


@numba.njit(cache=True, nogil=True, inline="always")
def _clear_used(hist, f, n_value_bins, missing_bin):
    for b in range(n_value_bins[f]):
        hist[f, b, :] = 0  # (float or integer cells)
    hist[f, missing_bin, :] = 0


# Bytes of histogram cells one pass over the rows fills: the features of a tile have their
# cells (n_bins x (2K + 1) channels x 8 bytes: 43 KB at K = 10) in the core's cache while the
# rows stream by, and the rows' bins and channels are read once per tile. A block of 392
# features at once spilled them and every addition missed: an MNIST-sized dense root
# histogram at K = 10 took 1.87 s on one thread, 0.36-0.66 s in tiles of 4-8 features
# (benchmarks/bench_roofline.py).
TILE_BYTES = 1 << 18


def feature_tile(n_bins_total: int, n_channels: int) -> int:
    """Features per tile of the dense kernel (at least one; 8-byte cells assumed)."""
    return max(1, TILE_BYTES // (n_bins_total * n_channels * 8))


@numba.njit(cache=True, nogil=True, inline="always")
def _dense_task(bins, row_channels, rows, features, j0, j1, hist, n_value_bins, missing_bin,
                tile):
    n_channels = row_channels.shape[1]
    for j in range(j0, j1):
        _clear_used(hist, features[j], n_value_bins, missing_bin)
    for t0 in range(j0, j1, tile):
        t1 = min(t0 + tile, j1)
        for i in range(rows.shape[0]):  # (each cell still adds its rows in row order)
            r = rows[i]
            for j in range(t0, t1):
                f = features[j]
                b = bins[r, f]
                for c in range(n_channels):
                    hist[f, b, c] += row_channels[i, c]


@numba.njit(parallel=True, cache=True, nogil=True)
def _dense_histogram(bins, row_channels, rows, features, starts, hist, n_value_bins,
                     missing_bin, tile):
    """Histogram of ``rows`` over ``features``, by increasing row; tasks own feature blocks,
    each filled ``tile`` features at a time."""
    for t in numba.prange(starts.shape[0] - 1):
        _dense_task(bins, row_channels, rows, features, starts[t], starts[t + 1], hist,
                    n_value_bins, missing_bin, tile)


@numba.njit(cache=True, nogil=True)
def _dense_histogram_serial(bins, row_channels, rows, features, starts, hist, n_value_bins,
                            missing_bin, tile):
    _dense_task(bins, row_channels, rows, features, 0, features.shape[0], hist, n_value_bins,
                missing_bin, tile)


@numba.njit(cache=True, nogil=True, inline="always")
def _fill_default(hist, f, n_value_bins, missing_bin, default_bin, totals):
    """A sparse feature's default bin: the rows' totals minus its other bins."""
    d = default_bin[f]
    for c in range(hist.shape[2]):
        rest = hist[f, missing_bin, c] if d != missing_bin else 0.0
        for b in range(n_value_bins[f]):
            if b != d:
                rest += hist[f, b, c]
        hist[f, d, c] = totals[c] - rest


@numba.njit(parallel=True, cache=True, nogil=True)
def _clear_sparse(hist, n_value_bins, missing_bin):
    for f in numba.prange(hist.shape[0]):
        _clear_used(hist, f, n_value_bins, missing_bin)


@numba.njit(cache=True, nogil=True)
def _clear_sparse_serial(hist, n_value_bins, missing_bin):
    for f in range(hist.shape[0]):
        _clear_used(hist, f, n_value_bins, missing_bin)


@numba.njit(parallel=True, cache=True, nogil=True)
def _fill_defaults(hist, n_value_bins, missing_bin, default_bin, totals):
    for f in numba.prange(hist.shape[0]):
        _fill_default(hist, f, n_value_bins, missing_bin, default_bin, totals)


@numba.njit(cache=True, nogil=True)
def _fill_defaults_serial(hist, n_value_bins, missing_bin, default_bin, totals):
    for f in range(hist.shape[0]):
        _fill_default(hist, f, n_value_bins, missing_bin, default_bin, totals)


@numba.njit(cache=True, nogil=True, inline="always")
def _subtract_feature(big, small, f, n_value_bins, missing_bin):
    for b in range(n_value_bins[f]):
        big[f, b, :] -= small[f, b, :]
    big[f, missing_bin, :] -= small[f, missing_bin, :]


@numba.njit(parallel=True, cache=True, nogil=True)
def _subtract_used(big, small, n_value_bins, missing_bin):
    """``big -= small`` on the cells a search reads."""
    for f in numba.prange(big.shape[0]):
        _subtract_feature(big, small, f, n_value_bins, missing_bin)


@numba.njit(cache=True, nogil=True)
def _subtract_used_serial(big, small, n_value_bins, missing_bin):
    for f in range(big.shape[0]):
        _subtract_feature(big, small, f, n_value_bins, missing_bin)
