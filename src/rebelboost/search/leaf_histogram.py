"""Leaf histograms of the vector-leaf grower: per (feature, bin) sums of the rows' channels
over one leaf's rows, built directly or by subtraction from the parent's.

A leaf histogram is compact, ``(n_cells, C)``: feature ``f`` owns rows
``offsets[f]:offsets[f + 1]`` (:meth:`~rebelboost.binning.BinLayout.cell_offsets`), its
value bins then its missing bin, so it holds only the cells a split search reads (MNIST:
63,795 cells instead of 784 x 256) and whole-histogram passes (clearing, subtraction) run
over contiguous memory. Bin ``b`` of feature ``f`` is cell ``offsets[f] + min(b,
n_value_bins[f])`` (the missing bin's code is at least every value bin count). Dense bins:
one task per block of features streams the leaf's rows in the given order; sparse bins
(:class:`.histogram.SparseBins`): the entries outside each feature's default bin are added
by :func:`.histogram.add_sparse_entries` and the default bin is the leaf's totals minus its
other bins. Threads split the features, never the rows, so every sum is accumulated in row
order whatever the thread count.
"""

from __future__ import annotations

import functools

import numba
import numpy as np

from .binned import BinnedData
from .histogram import add_sparse_entries

# Histogram additions (rows x features x channels) from which the kernels use every thread.
PARALLEL_ADDS = 1 << 20


def feature_cells(offsets: np.ndarray, features: np.ndarray) -> np.ndarray:
    """The rows of a leaf histogram that hold ``features``' cells, feature by feature."""
    cells = [np.arange(offsets[f], offsets[f + 1]) for f in features]
    return np.concatenate(cells) if cells else np.empty(0, dtype=np.intp)


def big_histograms(n_value_bins: np.ndarray, n_classes: int) -> bool:
    """Whether histograms are large enough for the multi-threaded scan and subtraction."""
    n_features = len(n_value_bins)
    return (int(np.sum(n_value_bins)) + n_features) * (2 * n_classes + 1) >= PARALLEL_ADDS // 4


def build_leaf_histogram(data: BinnedData, row_channels: np.ndarray, rows: np.ndarray,
                         totals: np.ndarray, features: np.ndarray, out: np.ndarray
                         ) -> np.ndarray:
    """Writes the histogram of ``rows`` over ``features`` into the cells of ``out``
    (n_cells, C); ``row_channels[i]`` are row ``rows[i]``'s channels and ``totals`` their sums
    (a sparse feature's default bin is the rest). Sparse bins fill every feature's cells."""
    sparse = data.sparse
    n_value_bins = np.ascontiguousarray(data.layout.n_value_bins, dtype=np.int32)
    offsets = data.cell_offsets
    parallel = len(rows) * out.shape[1] * max(1, len(features)) >= PARALLEL_ADDS
    if sparse is None:
        dense_histogram(data.bins, row_channels, rows, features, out, n_value_bins, offsets,
                        parallel)
    else:
        out[:] = 0
        add_sparse_entries(sparse, row_channels, rows, out, offsets, n_value_bins, parallel)
        fill = _fill_defaults if parallel else _fill_defaults_serial
        fill(out, offsets, sparse.default_bin, totals)
    return out


def dense_histogram(bins: np.ndarray, row_channels: np.ndarray, rows: np.ndarray,
                    features: np.ndarray, out: np.ndarray, n_value_bins: np.ndarray,
                    offsets: np.ndarray, parallel: bool) -> None:
    """The dense kernel: ``out``'s cells of ``features`` (float or integer) = the sums of
    ``row_channels[i]`` over ``rows[i]``'s bins, each cell in row order; threads split the
    features, each fills them a tile at a time."""
    starts = _task_starts(len(features), numba.get_num_threads() if parallel else 1)
    kernel = _dense_histogram if parallel else _dense_histogram_serial
    n_features = max(1, len(n_value_bins))
    kernel(bins, row_channels, rows, features, starts, out, n_value_bins, offsets,
           feature_tile(out.shape[0] / n_features, out.shape[1]))


def subtract_histogram(big: np.ndarray, small: np.ndarray, parallel: bool) -> None:
    """``big -= small`` (a parent's histogram becomes its larger child's)."""
    (_subtract if parallel else _subtract_serial)(big, small)


@functools.lru_cache(maxsize=64)
def _task_starts(n_features: int, n_tasks: int) -> np.ndarray:
    """Feature ranges of the histogram tasks (the same for every leaf: cached, read-only)."""
    starts = np.linspace(0, n_features, max(1, min(n_tasks, n_features)) + 1).astype(np.intp)
    starts.flags.writeable = False
    return starts


# Bytes of histogram cells one pass over the rows fills: the features of a tile have their
# cells (n_bins x (2K + 1) channels x 8 bytes: 43 KB at K = 10 and 256 bins) in the core's
# cache while the rows stream by, and the rows' bins and channels are read once per tile. A
# block of 392 features at once spilled them and every addition missed: an MNIST-sized dense
# root histogram at K = 10 took 1.87 s on one thread, 0.36-0.66 s in tiles of 4-8 features
# (benchmarks/bench_roofline.py).
TILE_BYTES = 1 << 18


def feature_tile(cells_per_feature: float, n_channels: int) -> int:
    """Features per tile of the dense kernel (at least one; 8-byte cells assumed)."""
    return max(1, int(TILE_BYTES // (max(cells_per_feature, 1.0) * n_channels * 8)))


@numba.njit(cache=True, nogil=True, inline="always")
def _dense_task(bins, row_channels, rows, features, j0, j1, hist, n_value_bins, offsets,
                tile):
    n_channels = row_channels.shape[1]
    for j in range(j0, j1):
        f = features[j]
        hist[offsets[f]:offsets[f + 1], :] = 0  # (float or integer cells)
    for t0 in range(j0, j1, tile):
        t1 = min(t0 + tile, j1)
        for i in range(rows.shape[0]):  # (each cell still adds its rows in row order)
            r = rows[i]
            for j in range(t0, t1):
                f = features[j]
                cell = offsets[f] + min(np.intp(bins[r, f]), np.intp(n_value_bins[f]))
                for c in range(n_channels):
                    hist[cell, c] += row_channels[i, c]


@numba.njit(parallel=True, cache=True, nogil=True)
def _dense_histogram(bins, row_channels, rows, features, starts, hist, n_value_bins, offsets,
                     tile):
    """Histogram of ``rows`` over ``features``, by increasing row; tasks own feature blocks,
    each filled ``tile`` features at a time."""
    for t in numba.prange(starts.shape[0] - 1):
        _dense_task(bins, row_channels, rows, features, starts[t], starts[t + 1], hist,
                    n_value_bins, offsets, tile)


@numba.njit(cache=True, nogil=True)
def _dense_histogram_serial(bins, row_channels, rows, features, starts, hist, n_value_bins,
                            offsets, tile):
    _dense_task(bins, row_channels, rows, features, 0, features.shape[0], hist, n_value_bins,
                offsets, tile)


@numba.njit(cache=True, nogil=True, inline="always")
def _fill_default(hist, f, offsets, default_bin, totals):
    """A sparse feature's default bin: the rows' totals minus its other cells."""
    start, stop = offsets[f], offsets[f + 1]
    d = start + min(default_bin[f], stop - 1 - start)
    for c in range(hist.shape[1]):
        rest = hist[stop - 1, c] if d != stop - 1 else 0.0  # the missing bin, then the values
        for cell in range(start, stop - 1):
            if cell != d:
                rest += hist[cell, c]
        hist[d, c] = totals[c] - rest


@numba.njit(parallel=True, cache=True, nogil=True)
def _fill_defaults(hist, offsets, default_bin, totals):
    for f in numba.prange(offsets.shape[0] - 1):
        _fill_default(hist, f, offsets, default_bin, totals)


@numba.njit(cache=True, nogil=True)
def _fill_defaults_serial(hist, offsets, default_bin, totals):
    for f in range(offsets.shape[0] - 1):
        _fill_default(hist, f, offsets, default_bin, totals)


@numba.njit(parallel=True, cache=True, nogil=True)
def _subtract(big, small):
    for i in numba.prange(big.shape[0]):
        for c in range(big.shape[1]):  # (elementwise: a slice expression would allocate)
            big[i, c] -= small[i, c]


@numba.njit(cache=True, nogil=True)
def _subtract_serial(big, small):
    for i in range(big.shape[0]):
        for c in range(big.shape[1]):
            big[i, c] -= small[i, c]
