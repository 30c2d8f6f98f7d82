"""Histograms of every node of a tree layer in one pass over a feature-major copy of the bins.

Every tree learner grows layer by layer (:mod:`rebelboost.learners.grower`), and every node of
a layer needs a histogram of the same per-sample channels over its own rows.
:func:`column_histograms` builds them all at once: each parallel task owns a block of features,
walks each feature's rows in increasing index and adds a row's channels to the histogram of the
node it belongs to (``node_of_row``), in a small private scratch that stays in cache. So a layer
costs one pass over the data whatever its node count, the per-feature scratch (256 bins x
channels x nodes) stays in L1/L2, and the rows' channels are read in increasing address order.

Storage (:class:`BinColumns`): a feature whose entries mostly sit in one "default" bin (MNIST's
zero pixels) keeps only its other entries, as (row, bin) pairs by increasing row; the default
bin is then the node's totals minus the feature's other bins (LightGBM's sparse optimisation).
Other features keep a dense column of bins.

Exactness: every (node, feature, bin, channel) sum is accumulated one row at a time by increasing
row index, starting from +0.0; node totals the same way. Threads split the features, never the
rows, and a feature's histogram does not depend on which other features or nodes are built with
it, so any subset of features or nodes gives the same bits as the full build. That is what lets
QuickBoost finish its surviving features here and still pick the exhaustive search's split.
(Timings: BENCHMARKS.md, "Histogram kernels and the layer grower".)
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from ._intrinsics import add_row, prefetch
from .dense import N_CODES, PARALLEL_ADDS, simd_width
from .pool import HistogramPool

# A feature is stored sparse when at most this fraction of its rows lie outside its default bin:
# a sparse entry costs 5 bytes and a gathered read of the row's channels, a dense one 1 byte.
_SPARSE_MAX_DENSITY = 0.5
# Sparse features prefetch the channels of the row this many entries ahead.
_PREFETCH_ENTRIES = 16


class BinColumns(NamedTuple):
    """A uint8 bin matrix stored by feature, each feature sparse or dense.

    Sparse feature ``f`` (``default_bin[f] >= 0``): its rows outside bin ``default_bin[f]`` are
    ``entry_row[e]`` with bins ``entry_bin[e]``, ``e`` in ``indptr[f]:indptr[f + 1]``, rows
    increasing. Dense feature ``f`` (``default_bin[f] == -1``): its bins are
    ``dense[dense_slot[f]]``.
    """

    n_samples: int
    default_bin: np.ndarray  # (n_features,) intp, -1: dense
    indptr: np.ndarray  # (n_features + 1,) int64
    entry_row: np.ndarray  # (n_entries,) uint32
    entry_bin: np.ndarray  # (n_entries,) uint8
    dense_slot: np.ndarray  # (n_features,) intp, -1: sparse
    dense: np.ndarray  # (n_dense, n_samples) uint8
    max_bin: int  # the largest code stored (checked against each histogram)

    @property
    def n_features(self) -> int:
        return self.default_bin.shape[0]

    def cost(self) -> np.ndarray:
        """Rows each feature's pass visits (entries, or every row for a dense feature)."""
        return np.where(self.default_bin >= 0, np.diff(self.indptr), self.n_samples)


def bin_columns(bins: np.ndarray, max_density: float = _SPARSE_MAX_DENSITY) -> BinColumns:
    """:class:`BinColumns` of the (n_samples, n_features) uint8 ``bins``.

    A feature is sparse when at most ``max_density`` of its rows lie outside its most frequent
    bin (0: every feature dense).
    """
    bins = np.asarray(bins)
    if bins.dtype != np.uint8 or bins.ndim != 2:
        raise TypeError(f"bins must be a 2-d uint8 array, got {bins.dtype} with {bins.ndim} dims")
    n, d = bins.shape
    if n >= 1 << 32:
        raise ValueError("at most 2**32 - 1 rows are supported")
    by_feature = np.ascontiguousarray(bins.T)
    default_bin = np.full(d, -1, dtype=np.intp)
    dense_slot = np.full(d, -1, dtype=np.intp)
    indptr = np.zeros(d + 1, dtype=np.int64)
    rows, codes, dense = [], [], []
    for f in range(d):
        column = by_feature[f]
        counts = np.bincount(column, minlength=N_CODES)
        common = int(counts.argmax()) if n else 0
        if n and n - counts[common] <= max_density * n:
            default_bin[f] = common
            where = np.flatnonzero(column != common)
            rows.append(where.astype(np.uint32))
            codes.append(column[where])
            indptr[f + 1] = indptr[f] + len(where)
        else:
            dense_slot[f] = len(dense)
            dense.append(column)
            indptr[f + 1] = indptr[f]
    entry_row = np.concatenate(rows) if rows else np.zeros(0, np.uint32)
    entry_bin = np.concatenate(codes) if codes else np.zeros(0, np.uint8)
    dense_arr = np.stack(dense) if dense else np.zeros((0, n), np.uint8)
    max_bin = int(bins.max(initial=0))
    return BinColumns(n, default_bin, indptr, entry_row, entry_bin, dense_slot, dense_arr,
                      max_bin)


def column_histograms(
    columns: BinColumns,
    channels: np.ndarray,
    node_of_row: np.ndarray,
    n_nodes: int,
    n_bins_total: int,
    features: np.ndarray | None = None,
    pool: HistogramPool | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Histograms (n_nodes, n_features, n_bins_total, C) of the nodes and their totals (n_nodes, C).

    Row ``r`` belongs to node ``node_of_row[r]``; rows labelled outside ``[0, n_nodes)`` are left
    out. Only the listed ``features`` (default: all) are built; the other features' cells are
    left as they were (with a ``pool``, whatever an earlier build left there). The totals are
    the nodes' channel sums by increasing row (:func:`node_totals`).
    """
    n_bins_total = int(n_bins_total)
    if not 1 <= n_bins_total <= N_CODES:
        raise ValueError(f"n_bins_total must be in [1, {N_CODES}], got {n_bins_total}")
    if columns.max_bin >= n_bins_total:
        raise ValueError("the bins hold codes beyond n_bins_total")
    channels = np.ascontiguousarray(channels, dtype=np.float64)
    node_of_row = np.ascontiguousarray(node_of_row, dtype=np.int32)
    n = columns.n_samples
    if channels.ndim != 2 or channels.shape[0] != n or node_of_row.shape != (n,):
        raise ValueError("channels and node labels must have one row per sample")
    if features is None:
        features = np.arange(columns.n_features, dtype=np.intp)
    features = np.ascontiguousarray(features, dtype=np.intp)
    n_channels = channels.shape[1]
    shape = (int(n_nodes), columns.n_features, n_bins_total, n_channels)
    hist = np.zeros(shape) if pool is None else pool.empty(shape)
    totals = node_totals(channels, node_of_row, n_nodes)
    if len(features) == 0 or n_channels == 0 or n_nodes == 0:
        return hist, totals
    cost = columns.cost()[features]
    adds = int(cost.sum()) * n_channels
    n_tasks = 1 if adds < PARALLEL_ADDS else numba.get_num_threads()
    starts = _balanced_starts(cost, n_tasks)
    width = simd_width(adds, n_channels)
    kernel = _columns_serial if n_tasks == 1 else _columns_parallel
    kernel(columns.default_bin, columns.indptr, columns.entry_row, columns.entry_bin,
           columns.dense_slot, columns.dense, channels.reshape(-1), n_channels, node_of_row,
           features, starts, totals, hist, width)
    return hist, totals


def node_totals(channels: np.ndarray, node_of_row: np.ndarray, n_nodes: int) -> np.ndarray:
    """Channel sums (n_nodes, C) of each node's rows, by increasing row; others left out."""
    channels = np.ascontiguousarray(channels, dtype=np.float64)
    node_of_row = np.ascontiguousarray(node_of_row, dtype=np.int32)
    return _node_totals(channels, node_of_row, int(n_nodes))


def split_node(
    columns: BinColumns,
    node_of_row: np.ndarray,
    node: int,
    feature: int,
    bin_threshold: int,
    missing_bin: int,
    missing_left: bool,
    left: int,
    right: int,
) -> None:
    """Relabel node ``node``'s rows ``left`` (``bin <= bin_threshold``, missing by the flag) or
    ``right``, in place. ``left`` and ``right`` must be labels no row holds yet."""
    _split_node(columns.default_bin, columns.indptr, columns.entry_row, columns.entry_bin,
                columns.dense_slot, columns.dense, node_of_row, node, feature, bin_threshold,
                missing_bin, missing_left, left, right)


def _balanced_starts(cost: np.ndarray, n_tasks: int) -> np.ndarray:
    """Cut the features into ``n_tasks`` consecutive blocks of about equal cost."""
    cum = np.cumsum(cost)
    if n_tasks <= 1 or len(cost) <= 1 or cum[-1] == 0:
        return np.array([0, len(cost)], dtype=np.int64)
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, n_tasks) / n_tasks, side="left") + 1
    return np.unique(np.concatenate([[0], np.minimum(cuts, len(cost)), [len(cost)]])).astype(
        np.int64
    )


@numba.njit(cache=True, nogil=True, inline="always")
def _columns_task(default_bin, indptr, entry_row, entry_bin, dense_slot, dense, channels,
                  n_channels, node_of_row, features, j0, j1, totals, hist, width):
    """Features ``features[j0:j1]``: each into a private scratch, then out to ``hist``."""
    if len(width) > 0:
        n_channels = len(width)  # a compile-time constant: constant strides below
    n_nodes, n_features, n_bins_total = hist.shape[0], hist.shape[1], hist.shape[2]
    node_stride = N_CODES * n_channels
    cell = n_bins_total * n_channels
    flat = hist.reshape(-1)
    scratch = np.zeros(n_nodes * node_stride)
    rest = np.empty(n_channels)
    n = node_of_row.shape[0]
    for j in range(j0, j1):
        f = features[j]
        slot = dense_slot[f]
        if slot >= 0:
            for r in range(n):
                k = node_of_row[r]
                if k < 0 or k >= n_nodes:
                    continue
                at = k * node_stride + np.intp(dense[slot, r]) * n_channels
                if len(width) == 0:
                    for c in range(n_channels):
                        scratch[at + c] += channels[r * n_channels + c]
                else:
                    add_row(scratch, at, channels, r * n_channels, width)
        else:
            e1 = indptr[f + 1]
            for e in range(indptr[f], e1):
                if e + _PREFETCH_ENTRIES < e1:
                    prefetch(channels, np.intp(entry_row[e + _PREFETCH_ENTRIES]) * n_channels)
                r = np.intp(entry_row[e])
                k = node_of_row[r]
                if k < 0 or k >= n_nodes:
                    continue
                at = k * node_stride + np.intp(entry_bin[e]) * n_channels
                if len(width) == 0:
                    for c in range(n_channels):
                        scratch[at + c] += channels[r * n_channels + c]
                else:
                    add_row(scratch, at, channels, r * n_channels, width)
        d = default_bin[f]
        for k in range(n_nodes):
            base = k * node_stride
            if d >= 0:  # the default bin: the node's totals minus the other bins
                for c in range(n_channels):
                    rest[c] = totals[k, c]
                for b in range(n_bins_total):
                    if b != d:
                        for c in range(n_channels):
                            rest[c] -= scratch[base + b * n_channels + c]
                for c in range(n_channels):
                    scratch[base + d * n_channels + c] = rest[c]
            out = (k * n_features + f) * cell  # hist[k, f] is one contiguous block
            for i in range(cell):
                flat[out + i] = scratch[base + i]
                scratch[base + i] = 0.0


@numba.njit(parallel=True, cache=True, nogil=True)
def _columns_parallel(default_bin, indptr, entry_row, entry_bin, dense_slot, dense, channels,
                      n_channels, node_of_row, features, starts, totals, hist, width):
    for t in numba.prange(starts.shape[0] - 1):
        _columns_task(default_bin, indptr, entry_row, entry_bin, dense_slot, dense, channels,
                      n_channels, node_of_row, features, starts[t], starts[t + 1], totals, hist,
                      width)


@numba.njit(cache=True, nogil=True)
def _columns_serial(default_bin, indptr, entry_row, entry_bin, dense_slot, dense, channels,
                    n_channels, node_of_row, features, starts, totals, hist, width):
    _columns_task(default_bin, indptr, entry_row, entry_bin, dense_slot, dense, channels,
                  n_channels, node_of_row, features, starts[0], starts[-1], totals, hist, width)


@numba.njit(cache=True, nogil=True)
def _node_totals(channels, node_of_row, n_nodes):
    n_channels = channels.shape[1]
    totals = np.zeros((n_nodes, n_channels))
    for r in range(channels.shape[0]):
        k = node_of_row[r]
        if 0 <= k < n_nodes:
            for c in range(n_channels):
                totals[k, c] += channels[r, c]
    return totals


@numba.njit(cache=True, nogil=True)
def _split_node(default_bin, indptr, entry_row, entry_bin, dense_slot, dense, node_of_row, node,
                feature, bin_threshold, missing_bin, missing_left, left, right):
    slot = dense_slot[feature]
    if slot >= 0:
        for r in range(node_of_row.shape[0]):
            if node_of_row[r] == node:
                b = dense[slot, r]
                go_left = missing_left if b == missing_bin else b <= bin_threshold
                node_of_row[r] = left if go_left else right
        return
    d = default_bin[feature]
    usual = left if (missing_left if d == missing_bin else d <= bin_threshold) else right
    for r in range(node_of_row.shape[0]):
        if node_of_row[r] == node:
            node_of_row[r] = usual
    for e in range(indptr[feature], indptr[feature + 1]):
        r = entry_row[e]
        if node_of_row[r] == usual:
            b = entry_bin[e]
            go_left = missing_left if b == missing_bin else b <= bin_threshold
            node_of_row[r] = left if go_left else right
