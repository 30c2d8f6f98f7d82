"""Row-wise histogram kernels: per (feature, bin) sums of per-sample channels over given rows.

A booster describes its split problem as C float64 channels per sample; a node's histogram sums
them over the node's rows for every feature and bin, and a split score needs only that. The tree
layers build their histograms with :mod:`.columns` (one pass per layer); the kernels here add
rows in a given order, which QuickBoost needs for its heaviest-first prefixes
(:func:`accumulate_histogram`).

Exactness: every (feature, bin, channel) sum is accumulated one row at a time, in the order the
rows are given, starting from +0.0 (or from the value already there, for
:func:`accumulate_histogram`). Threads split the *features*, never the rows, so the result does
not depend on the number of threads, the block size or which kernel variant runs.

Sparse data (:class:`SparseBins`, used when most entries sit in their feature's most frequent
bin, as MNIST's zero pixels do): those "default" bins are not summed row by row but set to the
node's totals minus the feature's other bins (:func:`fill_default_bins`), and the other entries
are read from a packed row-wise list. Every search that uses the layout fills the default bins
the same way, so exhaustive and pruned searches still agree bit for bit.

How the kernel is fast (measurements in BENCHMARKS.md, "Histogram kernels and the layer grower"):

* One parallel task per thread, each owning a contiguous block of features, streams the rows once.
* A task accumulates into a private scratch histogram laid out ``(bin, feature, channel)``, so the
  cells of the busy bins of all its features are adjacent and stay in cache.
* The per-row channel vector is added with fixed-width SIMD loads, adds and stores
  (``add_row``) when the channel count is a compile-time constant; each channel count gets its
  own compiled kernel (cached on disk), used only for large problems.
* Small problems run on the calling thread: waking the thread pool costs more than they do.

(Over 400 lines: dense and sparse kernels, each with a parallel and a serial driver, and the
checks of their public entry points.)
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numba
import numpy as np

from ._intrinsics import add_row, prefetch

# Largest scratch histogram (bytes) one parallel task may use; beyond it the features are split
# into more tasks than threads.
_BLOCK_BYTES = 1 << 23
# Below this many additions (rows x features x channels) the kernel runs on the calling thread:
# waking the thread pool costs more than the work (much more when other processes share the cores).
_PARALLEL_MIN_ADDS = 1 << 22
# Additions from which a histogram is worth a kernel compiled for its channel count (a one-time
# compile of a few seconds, cached on disk) rather than the generic kernel.
_SPECIALIZE_MIN_ADDS = 1 << 23
# The same for the sparse kernel, where the generic inner loop costs 1.5-2x (measured on MNIST).
_SPARSE_SPECIALIZE_MIN_ADDS = 1 << 20
# Channel counts up to this get a specialised kernel (its inner add is unrolled C/4 times).
_SPECIALIZE_MAX_CHANNELS = 64
# Bins are uint8 codes, so a scratch histogram with this many bin rows can take any of them.
_SCRATCH_BINS = 256
# Sparse layout only when at most this fraction of the entries lies outside the default bins:
# an entry costs 4 bytes and an indirect read there, against 1 byte read in the dense layout.
_SPARSE_MAX_DENSITY = 0.5
# The sparse kernel prefetches the entries of the row this many rows ahead.
_PREFETCH_ROWS = 8


def _block_size(n_features: int, n_channels: int, n_threads: int) -> int:
    per_thread = -(-n_features // n_threads)
    per_feature = _SCRATCH_BINS * max(1, n_channels) * 8
    return int(max(1, min(per_thread, _BLOCK_BYTES // per_feature)))


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
    counts = np.stack([np.bincount(bins[:, f], minlength=_SCRATCH_BINS) for f in range(d)])
    default_bin = counts.argmax(axis=1).astype(np.intp)
    off_default = n - counts.max(axis=1)  # per feature
    if off_default.sum() > max_density * n * d:
        return None
    n_blocks = max(1, min(d, n_blocks or numba.get_num_threads()))
    cum = np.cumsum(off_default)
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, n_blocks) / n_blocks, side="left") + 1
    edges = np.unique(np.concatenate([[0], np.minimum(cuts, d), [d]]))
    indptr = np.zeros((len(edges) - 1, n + 1), dtype=np.int64)
    packed = []
    offset = 0
    for b, (f0, f1) in enumerate(zip(edges[:-1], edges[1:], strict=True)):
        block = bins[:, f0:f1]
        rows, cols = np.nonzero(block != default_bin[f0:f1])  # row-major: features increase
        indptr[b, 1:] = offset + np.cumsum(np.bincount(rows, minlength=n))
        indptr[b, 0] = offset
        packed.append(((cols + f0).astype(np.uint32) << 8) | block[rows, cols])
        offset += len(rows)
    entries = np.concatenate(packed)
    return SparseBins(default_bin, indptr, entries, int((entries & 0xFF).max(initial=0)))


def build_histogram(
    bins: np.ndarray,
    channels: np.ndarray,
    rows: np.ndarray,
    n_bins_total: int,
    sparse: SparseBins | None = None,
    pool=None,
) -> np.ndarray:
    """Histogram of shape (n_features, n_bins_total, n_channels) over ``rows``.

    ``bins`` is the C-ordered (n_samples, n_features) uint8 matrix, ``channels`` a C-ordered
    (n_samples, n_channels) float64 matrix, ``rows`` the sample indices of the node (any order;
    sums are accumulated in that order). Bin codes at or above ``n_bins_total`` are not counted.
    With ``sparse`` (:func:`sparse_bins` of ``bins``) each default bin is the node's totals
    (:func:`row_totals`) minus the feature's other bins (:func:`fill_default_bins`). With a
    ``pool`` (a :class:`~.columns.HistogramPool`) the histogram is that pool's buffer (valid
    until the pool's next use).
    """
    bins, channels, rows = _check(bins, channels, rows, n_bins_total)
    n_features = bins.shape[1]
    shape = (n_features, n_bins_total, channels.shape[1])
    hist = np.zeros(shape) if pool is None else pool.zeros(shape)
    features = np.arange(n_features, dtype=np.intp)
    if sparse is None:
        _run(bins, channels, rows, 0, len(rows), features, hist, False, True, _no_skip(bins))
        return hist
    _check_sparse(sparse, bins, n_bins_total)
    _run_sparse(sparse, channels, rows, 0, len(rows), hist, False)
    fill_default_bins(hist, features, sparse.default_bin, row_totals(channels[rows]))
    return hist


def accumulate_histogram(
    bins: np.ndarray,
    rows: np.ndarray,
    row_channels: np.ndarray,
    r0: int,
    r1: int,
    features: np.ndarray | None,
    hist: np.ndarray,
    sparse: SparseBins | None = None,
) -> None:
    """Add rows ``rows[r0:r1]`` to the histogram ``hist`` of the listed ``features``, in place.

    ``row_channels[r]`` holds the channels of sample ``rows[r]`` (gathered in row order, as an
    incremental search keeps them). Each (feature, bin) continues its running sum in the given
    row order, so accumulating a node's rows in several consecutive ranges gives the same bits as
    one :func:`build_histogram` over all of them. ``hist`` is the C-ordered
    (n_features, n_bins_total, n_channels) float64 histogram; ``features`` are distinct feature
    indices (any order; None: all); the other features' histograms are left alone. With
    ``sparse``, rows in a feature's default bin are not added: call :func:`fill_default_bins`
    before reading those bins.
    """
    n_bins_total = hist.shape[1]
    bins, row_channels, rows = _check(bins, row_channels, rows, n_bins_total, by_position=True)
    if not (hist.flags.c_contiguous and hist.dtype == np.float64):
        raise ValueError("hist must be a C-ordered float64 array")
    if row_channels.shape[1] != hist.shape[2] or bins.shape[1] != hist.shape[0]:
        raise ValueError("hist shape does not match the bins and channels")
    if not 0 <= r0 <= r1 <= len(rows):
        raise ValueError(f"row range [{r0}, {r1}) is outside the {len(rows)} rows")
    if sparse is not None:
        _check_sparse(sparse, bins, n_bins_total)
    if features is None and sparse is not None:
        _run_sparse(sparse, row_channels, rows, r0, r1, hist, True)
        return
    if features is None:
        features = np.arange(bins.shape[1], dtype=np.intp)
    features = np.ascontiguousarray(features, dtype=np.intp)
    if len(features) and (features.min() < 0 or features.max() >= bins.shape[1]):
        raise ValueError("feature index out of range")
    if len(np.unique(features)) != len(features):
        raise ValueError("features must be distinct")  # two tasks would write one histogram
    skip = _no_skip(bins) if sparse is None else sparse.default_bin
    _run(bins, row_channels, rows, r0, r1, features, hist, True, False, skip)


def add_sparse_entries(sparse: SparseBins, row_channels: np.ndarray, rows: np.ndarray,
                       hist: np.ndarray, offsets: np.ndarray, n_value_bins: np.ndarray,
                       parallel: bool | None = None) -> None:
    """Add the entries of ``rows`` outside their features' default bins to the compact leaf
    histogram ``hist`` (n_cells, C; :mod:`.leaf_histogram`'s ``offsets``) in place
    (``row_channels[r]`` belongs to ``rows[r]``); the default bins are left to the caller.
    ``parallel`` None: on every thread from ``_PARALLEL_MIN_ADDS`` expected additions."""
    _run_sparse(sparse, np.ascontiguousarray(row_channels, dtype=np.float64),
                np.ascontiguousarray(rows, dtype=np.intp), 0, len(rows), hist, True, parallel,
                (offsets, np.ascontiguousarray(n_value_bins, dtype=np.intp)))


def row_totals(row_channels: np.ndarray) -> np.ndarray:
    """Channel totals of a node's rows, summed in row order (one definition for every search)."""
    return _column_sums(np.ascontiguousarray(row_channels, dtype=np.float64))


def fill_default_bins(
    hist: np.ndarray, features: np.ndarray, default_bin: np.ndarray, totals: np.ndarray
) -> None:
    """Set each listed feature's default bin to ``totals`` minus its other bins, in place."""
    totals = np.ascontiguousarray(totals, dtype=np.float64)
    if totals.shape != (hist.shape[2],):
        raise ValueError("totals do not match the histogram's channels")
    _fill_default_bins(hist, np.ascontiguousarray(features, dtype=np.intp), default_bin, totals)


def _check(bins, channels, rows, n_bins_total, by_position=False):
    if bins.dtype != np.uint8 or bins.ndim != 2:
        raise TypeError(f"bins must be a 2-d uint8 array, got {bins.dtype} with {bins.ndim} dims")
    if not 1 <= n_bins_total <= _SCRATCH_BINS:
        raise ValueError(f"n_bins_total must be in [1, {_SCRATCH_BINS}], got {n_bins_total}")
    rows = np.ascontiguousarray(rows, dtype=np.intp)
    channels = np.ascontiguousarray(channels, dtype=np.float64)
    if channels.ndim != 2 or (channels.shape[0] != (len(rows) if by_position else bins.shape[0])):
        raise ValueError(f"channels of shape {channels.shape} do not match the samples")
    return np.ascontiguousarray(bins), channels, rows


def _no_skip(bins):
    return np.full(bins.shape[1], -1, dtype=np.intp)


def _check_sparse(sparse: SparseBins, bins: np.ndarray, n_bins_total: int) -> None:
    if sparse.indptr.shape[1] != bins.shape[0] + 1 or sparse.default_bin.shape != (bins.shape[1],):
        raise ValueError("sparse bins do not match the bins")
    if sparse.max_bin >= n_bins_total:
        raise ValueError("sparse bins hold codes beyond n_bins_total")


def _run(bins, channels, rows, r0, r1, features, hist, by_position, fresh, skip) -> None:
    n_channels = channels.shape[1]
    if len(features) == 0 or n_channels == 0:
        return
    adds = (r1 - r0) * len(features) * n_channels
    serial = adds < _PARALLEL_MIN_ADDS
    n_threads = 1 if serial else numba.get_num_threads()
    block = _block_size(len(features), n_channels, n_threads)
    # The tuple's length is part of its numba type: a non-empty one compiles a kernel for
    # exactly that many channels.
    specialize = adds >= _SPECIALIZE_MIN_ADDS and n_channels <= _SPECIALIZE_MAX_CHANNELS
    width = (0,) * n_channels if specialize else ()
    kernel = _accumulate_serial if serial else _accumulate_parallel
    kernel(bins, channels.reshape(-1), n_channels, rows, r0, r1, features, hist, block,
           by_position, fresh, width, skip)


def _run_sparse(sparse, channels, rows, r0, r1, hist, by_position, parallel=None,
                cells=None) -> None:
    """Add rows ``r0:r1``'s entries outside the default bins, for every feature: bin ``b``
    of feature ``f`` is row ``offsets[f] + min(b, caps[f])`` of ``hist`` seen as (cells, C);
    ``cells`` ``(offsets, caps)``, None for a (features, bins, C) histogram."""
    n_channels = channels.shape[1]
    if n_channels == 0 or r1 <= r0:
        return
    offsets, caps = _grid_cells(hist.shape[0], hist.shape[1]) if cells is None else cells
    n_entries = len(sparse.entries) * (r1 - r0) / max(1, sparse.indptr.shape[1] - 1)
    adds = n_entries * n_channels  # expected
    serial = adds < _PARALLEL_MIN_ADDS if parallel is None else not parallel
    specialize = adds >= _SPARSE_SPECIALIZE_MIN_ADDS and n_channels <= _SPECIALIZE_MAX_CHANNELS
    width = (0,) * n_channels if specialize else ()
    kernel = _sparse_serial if serial else _sparse_parallel
    kernel(sparse.indptr, sparse.entries, channels.reshape(-1), n_channels, rows, r0, r1, hist,
           offsets, caps, by_position, width)


@functools.lru_cache(maxsize=16)
def _grid_cells(n_features: int, n_bins_total: int) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, caps)`` of a (features, bins, C) histogram: every bin its own cell."""
    offsets = np.arange(n_features, dtype=np.intp) * n_bins_total
    caps = np.full(n_features, n_bins_total - 1, dtype=np.intp)
    offsets.flags.writeable = caps.flags.writeable = False
    return offsets, caps


@numba.njit(cache=True, nogil=True, inline="always")
def _accumulate_block(
    bins, channels, n_channels, rows, r0, r1, features, j0, nf, hist, by_position, fresh, width,
    skip,
):
    """Add rows ``r0:r1`` to ``hist`` for ``features[j0:j0 + nf]``; one task of the kernel.

    Copies those features' histograms into a private ``(bin, feature, channel)`` scratch (unless
    ``fresh``: they are all zeros), streams the rows once, and copies the scratch back. ``width``
    empty: generic code; else specialised for ``len(width)`` channels. ``channels`` is flat: the
    channels of row ``r`` start at ``k * n_channels``, ``k = r`` if ``by_position`` else
    ``rows[r]``. Rows in bin ``skip[f]`` of feature ``f`` are not added (-1: none skipped).
    """
    if len(width) > 0:
        n_channels = len(width)  # a compile-time constant: constant strides below
    n_bins_total = hist.shape[1]
    stride = nf * n_channels  # scratch[b * stride + j * n_channels + c]
    scratch = np.zeros(_SCRATCH_BINS * stride)
    if not fresh:
        for j in range(nf):
            f = features[j0 + j]
            for b in range(n_bins_total):
                at = b * stride + j * n_channels
                for c in range(n_channels):
                    scratch[at + c] = hist[f, b, c]
    for r in range(r0, r1):
        i = rows[r]
        src = (r if by_position else i) * n_channels
        for j in range(nf):
            f = features[j0 + j]
            b = np.intp(bins[i, f])
            if b == skip[f]:
                continue
            at = b * stride + j * n_channels
            if len(width) == 0:
                for c in range(n_channels):
                    scratch[at + c] += channels[src + c]
            else:
                add_row(scratch, at, channels, src, width)
    for j in range(nf):
        f = features[j0 + j]
        for b in range(n_bins_total):
            at = b * stride + j * n_channels
            for c in range(n_channels):
                hist[f, b, c] = scratch[at + c]


@numba.njit(parallel=True, cache=True, nogil=True)
def _accumulate_parallel(
    bins, channels, n_channels, rows, r0, r1, features, hist, block, by_position, fresh, width,
    skip,
):
    """:func:`_accumulate_block` over blocks of ``block`` features, in parallel."""
    n_blocks = (features.shape[0] + block - 1) // block
    for blk in numba.prange(n_blocks):
        j0 = blk * block
        nf = min(features.shape[0], j0 + block) - j0
        _accumulate_block(bins, channels, n_channels, rows, r0, r1, features, j0, nf, hist,
                          by_position, fresh, width, skip)


@numba.njit(cache=True, nogil=True)
def _accumulate_serial(
    bins, channels, n_channels, rows, r0, r1, features, hist, block, by_position, fresh, width,
    skip,
):
    """:func:`_accumulate_block` over blocks of ``block`` features, on the calling thread."""
    n_blocks = (features.shape[0] + block - 1) // block
    for blk in range(n_blocks):
        j0 = blk * block
        nf = min(features.shape[0], j0 + block) - j0
        _accumulate_block(bins, channels, n_channels, rows, r0, r1, features, j0, nf, hist,
                          by_position, fresh, width, skip)



@numba.njit(cache=True, nogil=True, inline="always")
def _sparse_block(indptr, entries, channels, n_channels, rows, r0, r1, blk, hist, offsets,
                  caps, by_position, width):
    """Block ``blk``'s entries of rows ``r0:r1`` added to ``hist`` in place, row by row.

    The rows' entries lie anywhere in memory, so the next rows' are prefetched. (A private
    scratch as in :func:`_accumulate_block` measured no faster here: the entries skip the one
    busy bin, and the rest spread over the bins.)
    """
    if len(width) > 0:
        n_channels = len(width)
    flat = hist.reshape(-1)
    for r in range(r0, r1):
        if r + _PREFETCH_ROWS < r1:
            ahead = rows[r + _PREFETCH_ROWS]
            prefetch(entries, indptr[blk, ahead])
            prefetch(channels, (r + _PREFETCH_ROWS if by_position else ahead) * n_channels)
        i = rows[r]
        src = (r if by_position else i) * n_channels
        for e in range(indptr[blk, i], indptr[blk, i + 1]):
            code = entries[e]
            f = np.intp(code >> 8)
            at = (offsets[f] + min(np.intp(code & 0xFF), caps[f])) * n_channels
            if len(width) == 0:
                for c in range(n_channels):
                    flat[at + c] += channels[src + c]
            else:
                add_row(flat, at, channels, src, width)


@numba.njit(parallel=True, cache=True, nogil=True)
def _sparse_parallel(indptr, entries, channels, n_channels, rows, r0, r1, hist, offsets,
                     caps, by_position, width):
    """:func:`_sparse_block` over the feature blocks, in parallel (they own disjoint cells)."""
    for blk in numba.prange(indptr.shape[0]):
        _sparse_block(indptr, entries, channels, n_channels, rows, r0, r1, blk, hist,
                      offsets, caps, by_position, width)


@numba.njit(cache=True, nogil=True)
def _sparse_serial(indptr, entries, channels, n_channels, rows, r0, r1, hist, offsets, caps,
                   by_position, width):
    """:func:`_sparse_block` over the feature blocks, on the calling thread."""
    for blk in range(indptr.shape[0]):
        _sparse_block(indptr, entries, channels, n_channels, rows, r0, r1, blk, hist,
                      offsets, caps, by_position, width)


@numba.njit(cache=True, nogil=True)
def _column_sums(row_channels):
    n_rows, n_channels = row_channels.shape
    total = np.zeros(n_channels)
    for r in range(n_rows):
        for c in range(n_channels):
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
