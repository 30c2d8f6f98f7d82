"""The row-wise sparse layout of the bins, and its kernel: only the entries outside each
feature's most frequent ("default") bin are added row by row.

Most MNIST pixels are 0: a histogram need not add those rows one by one, since the default
bin's sums are the node's totals minus the other bins (LightGBM's sparse optimisation).
:class:`SparseBins` lists each row's other entries; :func:`add_entries` adds them to a
histogram's cells (:mod:`.dense` describes the cell layout) and the caller sets the default
bins from the totals: :func:`fill_default_bins` on a full grid, or the leaf histograms' own
fill (:mod:`.leaf`). The two fills round in different orders, each fixed: the grid's is the
layer histograms' (:mod:`.layer`), which QuickBoost must match bit for bit.

Exactness: every cell adds its rows in the order given; threads split feature blocks, never
rows, so the result does not depend on the number of threads or the block count.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
from numba import literal_unroll
from numba.extending import overload

from ._intrinsics import add_row, prefetch
from .dense import _FIXED_CHANNELS, N_CODES, float_cells, float_rows, simd_width, threads_pay

# Sparse layout only when at most this fraction of the entries lies outside the default bins:
# an entry costs 4 bytes and an indirect read there, against 1 byte read in the dense layout.
_SPARSE_MAX_DENSITY = 0.5
# The kernel prefetches the entries of the row this many rows ahead.
_PREFETCH_ROWS = 8


class SparseBins(NamedTuple):
    """The entries of a binned matrix outside each feature's most frequent ("default") bin.

    Most MNIST pixels are 0: a histogram need not add those rows one by one, since the default
    bin's sums are the node's totals minus the other bins (LightGBM's sparse optimisation).
    Row ``i``'s other entries in feature block ``b`` are ``entry_feature[e], entry_bin[e]`` for
    ``e`` in ``indptr[b, i]:indptr[b, i + 1]``, features increasing; one block per thread, cut
    so that the blocks hold about equal numbers of entries. Feature and bin are packed in one
    ``uint32`` (one memory stream for the kernel: it is bound by memory latency).
    """

    default_bin: np.ndarray  # (n_features,) intp
    indptr: np.ndarray  # (n_blocks, n_samples + 1) int64
    entries: np.ndarray  # (n_entries,) uint32: feature << 8 | bin
    max_bin: int  # the largest bin code among the entries (checked against each histogram)
    edges: np.ndarray  # (n_blocks + 1,) intp: each block's first feature, then n_features

    @property
    def entry_feature(self) -> np.ndarray:
        return (self.entries >> 8).astype(np.intp)

    @property
    def entry_bin(self) -> np.ndarray:
        return (self.entries & 0xFF).astype(np.uint8)


def sparse_bins(
    bins: np.ndarray, n_blocks: int | None = None, max_density: float = _SPARSE_MAX_DENSITY
) -> SparseBins | None:
    """:class:`SparseBins` of ``bins`` (``n_blocks`` feature blocks: default one per thread).

    None when more than ``max_density`` of the entries lie outside the default bins: there the
    dense layout is cheaper.

    Histograms with it give the default bins by subtraction (rounded differently from a
    row-by-row sum, but the same bits every time, for every search that uses it).
    """
    bins = np.ascontiguousarray(bins)
    if bins.dtype != np.uint8 or bins.ndim != 2:
        raise TypeError(f"bins must be a 2-d uint8 array, got {bins.dtype} with {bins.ndim} dims")
    n, d = bins.shape
    if n == 0 or d == 0 or d >= 1 << 24:  # the packed entries hold 24-bit feature indices
        return None
    counts = _code_counts(bins, min(d, numba.get_num_threads()))
    default_bin = counts.argmax(axis=1).astype(np.intp)
    off_default = n - counts.max(axis=1)  # per feature
    if off_default.sum() > max_density * n * d:
        return None
    n_blocks = max(1, min(d, n_blocks or numba.get_num_threads()))
    cum = np.cumsum(off_default)
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, n_blocks) / n_blocks, side="left") + 1
    edges = np.unique(np.concatenate([[0], np.minimum(cuts, d), [d]]))
    indptr = np.zeros((len(edges) - 1, n + 1), dtype=np.int64)
    entries = np.empty(int(cum[-1]), dtype=np.uint32)
    _fill_entries(bins, default_bin, edges, np.r_[0, cum][edges[:-1]], indptr, entries)
    held = counts > 0  # (the codes the entries hold: every one held but the default)
    held[np.arange(d), default_bin] = False
    codes = np.flatnonzero(held.any(axis=0))
    return SparseBins(default_bin, indptr, entries, int(codes[-1]) if len(codes) else 0,
                      edges.astype(np.intp))


@numba.njit(parallel=True, cache=True, nogil=True)
def _code_counts(bins, n_tasks):
    """(n_features, N_CODES): how many rows hold each code of each feature, counted along the
    rows in ``n_tasks`` blocks of features on numba's threads (a column at a time strides
    through all of the bins)."""
    n, d = bins.shape
    counts = np.zeros((d, N_CODES), dtype=np.int64)
    for t in numba.prange(n_tasks):
        for i in range(n):
            for f in range(t * d // n_tasks, (t + 1) * d // n_tasks):
                counts[f, bins[i, f]] += 1
    return counts


@numba.njit(parallel=True, cache=True, nogil=True)
def _fill_entries(bins, default_bin, edges, starts, indptr, entries):
    """Each block's entries (from ``starts[b]``), row by row, features increasing, and their
    ``indptr``, in one pass over the bins, the blocks on numba's threads (index arrays of
    every entry cost 16 bytes an entry: the setup's peak of memory on sets of many sparse
    columns)."""
    for b in numba.prange(edges.shape[0] - 1):
        at = starts[b]
        indptr[b, 0] = at
        for i in range(bins.shape[0]):
            for f in range(edges[b], edges[b + 1]):
                code = bins[i, f]
                if code != default_bin[f]:
                    entries[at] = (np.uint32(f) << np.uint32(8)) | np.uint32(code)
                    at += 1
            indptr[b, i + 1] = at


@numba.njit(cache=True, nogil=True)
def entry_share(n_entries: int, n_rows: int, n_features: int) -> float:
    """The share of a binned matrix's (row, feature) cells that ``n_entries`` sparse entries
    are: what a histogram adds one by one (the default bins come from the totals)."""
    return n_entries / max(1, n_rows * n_features)


def _share(sparse: SparseBins) -> float:
    """The share of the binned matrix's cells that are entries (:func:`entry_share`)."""
    return entry_share(len(sparse.entries), sparse.indptr.shape[1] - 1,
                       len(sparse.default_bin))


def _width(sparse: SparseBins, n_rows: int, n_channels: int) -> tuple:
    """The SIMD adds (:func:`.dense.simd_width`) for the entries of ``n_rows`` rows."""
    adds = n_rows * len(sparse.default_bin) * n_channels * _share(sparse)  # (expected)
    return simd_width(adds, n_channels)


def add_entries(sparse: SparseBins, row_channels: np.ndarray, rows: np.ndarray,
                hist: np.ndarray, offsets: np.ndarray, caps: np.ndarray,
                parallel: bool | None = None, r0: int = 0, r1: int | None = None) -> None:
    """Add the entries of ``rows[r0:r1]`` outside their features' default bins to the cells of
    ``hist`` (n_cells, C; bin ``b`` of feature ``f`` is cell ``offsets[f] + min(b, caps[f])``),
    in place; ``row_channels[r]`` belongs to ``rows[r]``. The default bins are left to the
    caller. ``parallel`` None: on every thread where :func:`.dense.threads_pay`."""
    row_channels = float_rows(row_channels)
    rows = np.ascontiguousarray(rows, dtype=np.intp)
    r1 = len(rows) if r1 is None else r1
    n_channels = row_channels.shape[1]
    if n_channels == 0 or r1 <= r0:
        return
    n_features = len(sparse.default_bin)
    share = _share(sparse)
    serial = (not threads_pay(r1 - r0, n_features, n_channels, share) if parallel is None
              else not parallel)
    width = _width(sparse, r1 - r0, n_channels)
    kernel = _sparse_serial if serial else _sparse_parallel
    kernel(sparse.indptr, sparse.entries, row_channels.reshape(-1), n_channels, rows, r0, r1,
           hist, offsets, np.ascontiguousarray(caps, dtype=np.intp), width)


def leaf_entries(sparse: SparseBins, row_channels: np.ndarray, rows: np.ndarray,
                 hist: np.ndarray, offsets: np.ndarray, caps: np.ndarray, totals: np.ndarray,
                 parallel: bool) -> None:
    """Every cell of the compact leaf histogram ``hist`` (n_cells, C) from the entries of
    ``rows`` (:func:`add_entries`), each default bin the rest of ``totals`` (the rows'
    channel sums): a feature block's cells cleared, added and completed by the thread that
    owns them (``parallel``), where clearing the whole histogram first held the calling
    thread alone (MNIST: 10.7 MB a leaf)."""
    row_channels = float_rows(row_channels)
    rows = np.ascontiguousarray(rows, dtype=np.intp)
    n_channels = row_channels.shape[1]
    width = _width(sparse, len(rows), n_channels)
    kernel = _leaf_parallel if parallel else _leaf_serial
    kernel(sparse.indptr, sparse.entries, row_channels.reshape(-1), n_channels, rows, hist,
           offsets, np.ascontiguousarray(caps, dtype=np.intp), width, sparse.edges,
           sparse.default_bin, np.ascontiguousarray(totals, dtype=np.float64))


def row_totals(row_channels: np.ndarray) -> np.ndarray:
    """Channel totals of a node's rows, summed in row order (one definition for every search)."""
    return _column_sums(float_rows(row_channels))


def fill_default_bins(
    hist: np.ndarray, features: np.ndarray, default_bin: np.ndarray, totals: np.ndarray
) -> None:
    """Set each listed feature's default bin of the (n_features, n_bins_total, C) grid ``hist``
    to ``totals`` minus its other bins (subtracted in bin order, as the layer histograms do),
    in place."""
    totals = np.ascontiguousarray(totals, dtype=np.float64)
    if totals.shape != (hist.shape[2],):
        raise ValueError("totals do not match the histogram's channels")
    _fill_default_bins(hist, np.ascontiguousarray(features, dtype=np.intp), default_bin, totals)


@numba.njit(cache=True, nogil=True, inline="always")
def _sparse_rows(indptr, entries, channels, n_channels, rows, r0, r1, blk, flat, offsets, caps,
                 width):
    """Block ``blk``'s entries of rows ``r0:r1`` added to the flat cells: ``len(width)``
    channels a row in unrolled SIMD adds, or (no ``width``) ``n_channels`` one by one.

    The rows' entries lie anywhere in memory, so the next rows' are prefetched. (A private
    scratch of the features' cells measured no faster here: the entries skip the one busy
    bin, and the rest spread over the bins.)
    """
    if len(width) > 0:
        n_channels = len(width)
    for r in range(r0, r1):
        if r + _PREFETCH_ROWS < r1:
            ahead = rows[r + _PREFETCH_ROWS]
            prefetch(entries, indptr[blk, ahead])
            prefetch(channels, (r + _PREFETCH_ROWS) * n_channels)
        i = rows[r]
        src = r * n_channels
        for e in range(indptr[blk, i], indptr[blk, i + 1]):
            code = entries[e]
            f = np.intp(code >> 8)
            at = (offsets[f] + min(np.intp(code & 0xFF), caps[f])) * n_channels
            if len(width) == 0:
                for c in range(n_channels):
                    flat[at + c] += channels[src + c]
            else:
                add_row(flat, at, channels, src, width)


@numba.njit(cache=True, nogil=True)
def _fixed_channel_entries(indptr, entries, channels, n_channels, rows, r0, r1, blk, flat,
                           offsets, caps):
    """Whether :func:`_sparse_rows` added the block's entries, ``n_channels`` one of
    :data:`.dense._FIXED_CHANNELS`; else nothing is added. Called, not inlined (as
    :func:`.dense._fixed_channel_rows`)."""
    done = False
    for width in literal_unroll(_FIXED_CHANNELS):
        if not done and n_channels == len(width):
            _sparse_rows(indptr, entries, channels, n_channels, rows, r0, r1, blk, flat, offsets,
                         caps, width)
            done = True
    return done


def _fixed_sparse_rows(indptr, entries, channels, n_channels, rows, r0, r1, blk, flat, offsets,
                       caps):
    """:func:`_fixed_channel_entries` where the cells are float64 and the channels float32 or
    float64 (else False: the loop over channels). (Compiled only:
    :func:`_fixed_sparse_rows_typed`.)"""
    raise NotImplementedError


@overload(_fixed_sparse_rows, jit_options={"nogil": True})
def _fixed_sparse_rows_typed(indptr, entries, channels, n_channels, rows, r0, r1, blk, flat,
                             offsets, caps):
    if not float_cells(channels, flat):
        return (lambda indptr, entries, channels, n_channels, rows, r0, r1, blk, flat, offsets,
                caps: False)
    return (lambda indptr, entries, channels, n_channels, rows, r0, r1, blk, flat, offsets,
            caps: _fixed_channel_entries(indptr, entries, channels, n_channels, rows, r0, r1,
                                         blk, flat, offsets, caps))


@numba.njit(cache=True, nogil=True, inline="always")
def _sparse_block(indptr, entries, channels, n_channels, rows, r0, r1, blk, hist, offsets,
                  caps, width):
    """Block ``blk``'s entries of rows ``r0:r1`` added to ``hist`` in place, row by row
    (``channels`` flat: row ``rows[r]``'s start at ``r * n_channels``;
    :func:`_sparse_rows`, a fixed channel count's loop where there is one)."""
    flat = hist.reshape(-1)
    if len(width) == 0 and _fixed_sparse_rows(indptr, entries, channels, n_channels, rows, r0,
                                              r1, blk, flat, offsets, caps):
        return
    _sparse_rows(indptr, entries, channels, n_channels, rows, r0, r1, blk, flat, offsets, caps,
                 width)


@numba.njit(parallel=True, cache=True, nogil=True)
def _sparse_parallel(indptr, entries, channels, n_channels, rows, r0, r1, hist, offsets,
                     caps, width):
    """:func:`_sparse_block` over the feature blocks, in parallel (they own disjoint cells)."""
    for blk in numba.prange(indptr.shape[0]):
        _sparse_block(indptr, entries, channels, n_channels, rows, r0, r1, blk, hist,
                      offsets, caps, width)


@numba.njit(cache=True, nogil=True)
def _sparse_serial(indptr, entries, channels, n_channels, rows, r0, r1, hist, offsets, caps,
                   width):
    """:func:`_sparse_block` over the feature blocks, on the calling thread."""
    for blk in range(indptr.shape[0]):
        _sparse_block(indptr, entries, channels, n_channels, rows, r0, r1, blk, hist,
                      offsets, caps, width)


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
    """Every feature's default bin (:func:`_fill_default`), the features on numba's threads."""
    for f in numba.prange(offsets.shape[0] - 1):
        _fill_default(hist, f, offsets, default_bin, totals)


@numba.njit(cache=True, nogil=True)
def _fill_defaults_serial(hist, offsets, default_bin, totals):
    for f in range(offsets.shape[0] - 1):
        _fill_default(hist, f, offsets, default_bin, totals)


@numba.njit(cache=True, nogil=True, inline="always")
def _leaf_block(indptr, entries, channels, n_channels, rows, hist, offsets, caps, width, edges,
                default_bin, totals, blk):
    """Block ``blk``'s features' cells of a leaf histogram: cleared, the rows' entries added
    (:func:`_sparse_block`), each default bin the rest of ``totals``."""
    f0, f1 = edges[blk], edges[blk + 1]
    hist[offsets[f0]:offsets[f1]] = 0.0
    _sparse_block(indptr, entries, channels, n_channels, rows, 0, rows.shape[0], blk, hist,
                  offsets, caps, width)
    for f in range(f0, f1):
        _fill_default(hist, f, offsets, default_bin, totals)


@numba.njit(parallel=True, cache=True, nogil=True)
def _leaf_parallel(indptr, entries, channels, n_channels, rows, hist, offsets, caps, width,
                   edges, default_bin, totals):
    for blk in numba.prange(indptr.shape[0]):
        _leaf_block(indptr, entries, channels, n_channels, rows, hist, offsets, caps, width,
                    edges, default_bin, totals, blk)


@numba.njit(cache=True, nogil=True)
def _leaf_serial(indptr, entries, channels, n_channels, rows, hist, offsets, caps, width,
                 edges, default_bin, totals):
    for blk in range(indptr.shape[0]):
        _leaf_block(indptr, entries, channels, n_channels, rows, hist, offsets, caps, width,
                    edges, default_bin, totals, blk)


@numba.njit(cache=True, nogil=True)
def _column_sums(row_channels):
    return add_column_sums(np.zeros(row_channels.shape[1]), row_channels)


@numba.njit(cache=True, nogil=True)
def add_column_sums(total, row_channels):
    """``total`` plus the rows of ``row_channels``, added one after another (a running sum
    in row order: summed block by block, the bits of one pass over all the rows)."""
    for r in range(row_channels.shape[0]):
        for c in range(row_channels.shape[1]):
            total[c] += row_channels[r, c]
    return total


@numba.njit(parallel=True, cache=True, nogil=True)
def _fill_default_bins(hist, features, default_bin, totals):
    n_bins_total, n_channels = hist.shape[1], hist.shape[2]
    for j in numba.prange(features.shape[0]):
        f = features[j]
        d = default_bin[f]
        if d < 0 or d >= n_bins_total:
            continue
        rest = totals.copy()
        for b in range(n_bins_total):
            if b != d:
                for c in range(n_channels):
                    rest[c] -= hist[f, b, c]
        for c in range(n_channels):
            hist[f, d, c] = rest[c]
