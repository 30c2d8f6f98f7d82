"""Leaf histograms of the vector-leaf grower: per (feature, bin) sums of the rows' channels
over one leaf's rows, built directly or by subtraction from the parent's.

A leaf histogram is compact, ``(n_cells, C)``: feature ``f`` owns rows
``offsets[f]:offsets[f + 1]`` (:meth:`~rebelboost.binning.BinLayout.cell_offsets`), its
value bins then its missing bin, so it holds only the cells a split search reads (MNIST:
63,795 cells instead of 784 x 256) and whole-histogram passes (clearing, subtraction) run
over contiguous memory. Bin ``b`` of feature ``f`` is cell ``offsets[f] + min(b,
n_value_bins[f])`` (the missing bin's code is at least every value bin count). Dense bins:
the dense kernel (:func:`.dense.add_rows`) adds the leaf's rows in the given order; sparse
bins (:class:`.sparse.SparseBins`): the entries outside each feature's default bin are added
and the default bin is the leaf's totals minus its other bins, a block of features at a time
(:func:`.sparse.leaf_entries`).
Threads split the features, never the rows, so every sum is accumulated in row order whatever
the thread count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numba
import numpy as np

from .dense import PARALLEL_ADDS, add_rows, threads_pay
from .sparse import leaf_entries

if TYPE_CHECKING:
    from ..binned import BinnedData


def feature_cells(offsets: np.ndarray, features: np.ndarray) -> np.ndarray:
    """The rows of a leaf histogram that hold ``features``' cells, feature by feature."""
    features = np.asarray(features, dtype=np.intp)
    starts = np.asarray(offsets)[features].astype(np.intp)
    sizes = np.asarray(offsets)[features + 1].astype(np.intp) - starts
    # each feature's cells: its start plus 0, 1, ... (one arange over all, shifted per run)
    shift = np.repeat(starts - (np.cumsum(sizes) - sizes), sizes)
    return np.arange(int(sizes.sum()), dtype=np.intp) + shift


# Histogram cells x channels from which a leaf's scan and subtraction run on every thread
# where the threads sleep between parallel regions (:mod:`rebelboost.parallel`)
BIG_HISTOGRAM_CELLS = PARALLEL_ADDS // 4


def big_histograms(n_value_bins: np.ndarray, n_classes: int) -> bool:
    """Whether histograms are large enough for the multi-threaded scan and subtraction."""
    n_features = len(n_value_bins)
    return (int(np.sum(n_value_bins)) + n_features) * (2 * n_classes + 1) >= BIG_HISTOGRAM_CELLS


def build_leaf_histogram(data: BinnedData, row_channels: np.ndarray, rows: np.ndarray,
                         totals: np.ndarray, features: np.ndarray, out: np.ndarray
                         ) -> np.ndarray:
    """Writes the histogram of ``rows`` over ``features`` into the cells of ``out``
    (n_cells, C); ``row_channels[i]`` are row ``rows[i]``'s channels and ``totals`` their sums
    (a sparse feature's default bin is the rest). Sparse bins fill every feature's cells."""
    sparse = data.sparse
    n_value_bins = np.ascontiguousarray(data.layout.n_value_bins, dtype=np.int32)
    offsets = data.cell_offsets
    parallel = threads_pay(len(rows), max(1, len(features)), out.shape[1], data.entry_fraction)
    if sparse is None:
        add_rows(data.bins, row_channels, rows, features, out, n_value_bins, offsets, parallel)
    else:  # (every cell is cleared and every default bin set: threads pay for big ones too)
        leaf_entries(sparse, row_channels, rows, out, offsets, n_value_bins, totals,
                     parallel or out.size >= BIG_HISTOGRAM_CELLS)
    return out


def subtract_histogram(big: np.ndarray, small: np.ndarray, parallel: bool) -> None:
    """``big -= small`` (a parent's histogram becomes its larger child's)."""
    (_subtract if parallel else _subtract_serial)(big, small)


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
