"""The one dense histogram kernel: rows' channels added into (feature, bin) cells, row by row.

A histogram here is a 2-d array of cells, ``(n_cells, C)``, float or integer: bin ``b`` of
feature ``f`` is cell ``offsets[f] + min(b, caps[f])``. The compact leaf histograms
(:mod:`.leaf`) give each feature its value bins then its missing bin; a full
``(n_features, n_bins_total, C)`` grid (:mod:`.grid`) is the same with every bin its own cell.

Exactness: each cell adds its rows in the order given, starting from +0.0 (``fresh``) or from
the value already there. Threads split the features, never the rows, so the bits do not depend
on the number of threads, on the tiles, or on how a node's rows are cut into ranges.
"""

from __future__ import annotations

import functools

import numba
import numpy as np
from numba import literal_unroll, types
from numba.extending import overload

from ._intrinsics import add_row, prefetch_ahead

# Histogram additions (rows x features x channels) from which the kernels use every thread.
PARALLEL_ADDS = 1 << 20
# The rows' channels the kernels add into float64 cells: float64, or float32 (the boosters'
# lean per-row state, widened exactly as it is added).
ROW_DTYPES = (np.float64, np.float32)
# Bins are uint8 codes: a feature has at most this many bins.
N_CODES = 256
# Additions from which the kernels (dense, sparse, layer) are compiled for their channel count
# (a one-time compile of a few seconds, cached on disk): the sparse and layer kernels' generic
# inner loop cost 1.5-2x (measured on MNIST). Up to 64 channels (the unrolled add is C/4
# vector adds).
_SPECIALIZE_MIN_ADDS = 1 << 20
_SPECIALIZE_MAX_CHANNELS = 64

# Bytes of histogram cells one pass over the rows fills: the features of a tile have their
# cells (n_bins x (2K + 1) channels x 8 bytes: 43 KB at K = 10 and 256 bins) in the core's
# cache while the rows stream by, and the rows' bins and channels are read once per tile. A
# block of 392 features at once spilled them and every addition missed: an MNIST-sized dense
# root histogram at K = 10 took 1.87 s on one thread, 0.36-0.66 s in tiles of 4-8 features
# (benchmarks/bench_roofline.py).
TILE_BYTES = 1 << 18


def threads_pay(n_rows: int, n_features: int, n_channels: int,
                entry_fraction: float = 1.0) -> bool:
    """Whether a histogram's additions pay for starting numba's threads: rows x features x
    channels, times the share of (row, feature) cells added one by one (sparse bins add only
    their entries: :attr:`~..binned.BinnedData.entry_fraction`), from :data:`PARALLEL_ADDS`
    on. The one rule of every histogram kernel's caller, Python or compiled."""
    return n_rows * n_features * n_channels * entry_fraction >= PARALLEL_ADDS


#: :func:`threads_pay` for compiled callers.
threads_pay_compiled = numba.njit(cache=True, nogil=True)(threads_pay)


def feature_tile(cells_per_feature: float, n_channels: int) -> int:
    """Features per tile of the dense kernel (at least one; 8-byte cells assumed)."""
    return max(1, int(TILE_BYTES // (max(cells_per_feature, 1.0) * n_channels * 8)))


def simd_width(adds: float, n_channels: int) -> tuple:
    """The ``width`` argument of the histogram kernels: a tuple as long as the channel
    count (numba compiles a kernel with constant strides and unrolled SIMD adds for it) where
    the work pays for that compile, else empty (the generic kernel)."""
    specialize = adds >= _SPECIALIZE_MIN_ADDS and n_channels <= _SPECIALIZE_MAX_CHANNELS
    return (0,) * n_channels if specialize else ()


def add_rows(bins: np.ndarray, row_channels: np.ndarray, rows: np.ndarray,
             features: np.ndarray, out: np.ndarray, caps: np.ndarray, offsets: np.ndarray,
             parallel: bool, r0: int = 0, r1: int | None = None, fresh: bool = True,
             skip: np.ndarray | None = None) -> None:
    """Add ``row_channels[i]`` to the cells of row ``rows[i]``'s bins, ``i`` in ``r0:r1``, for
    each of ``features`` (distinct), in place.

    ``fresh``: those features' cells are cleared first. ``skip[f]``: a bin of feature ``f``
    whose rows are left out (-1: none), for a sparse layout's default bin, which the caller
    sets from the totals. ``parallel``: threads take blocks of features.
    """
    r1 = len(rows) if r1 is None else r1
    starts = _task_starts(len(features), numba.get_num_threads() if parallel else 1)
    kernel = _add_rows_parallel if parallel else _add_rows_serial
    n_features = max(1, len(caps))
    n_channels = out.shape[1]
    floats = (out.dtype == np.float64 and row_channels.dtype in ROW_DTYPES
              and out.flags.c_contiguous and row_channels.flags.c_contiguous)
    width = simd_width((r1 - r0) * len(features) * n_channels, n_channels) if floats else ()
    kernel(bins, row_channels, rows, r0, r1, features, starts, out, caps, offsets,
           feature_tile(out.shape[0] / n_features, n_channels), fresh, skip, width)


@functools.lru_cache(maxsize=64)
def _task_starts(n_features: int, n_tasks: int) -> np.ndarray:
    """Feature ranges of the tasks (the same for every leaf: cached, read-only)."""
    starts = np.linspace(0, n_features, max(1, min(n_tasks, n_features)) + 1).astype(np.intp)
    starts.flags.writeable = False
    return starts


# Channel counts (2K + 1: vector-leaf trees of K = 2 to 10 classes) that the generic kernel
# (``width`` empty: the compiled grower's, whose one compile serves every channel count) adds
# with constant strides and unrolled SIMD adds, one loop per count in the same compiled
# kernel: 1.4-1.7x faster a (row, feature) at 5-11 channels than the loop over channels
# (BENCHMARKS.md, issue 27, stop 51), for ~0.15 s more compile a count.
_FIXED_CHANNELS = tuple((0,) * c for c in range(5, 22, 2))


@numba.njit(cache=True, nogil=True, inline="always")
def _tile_rows(bins, row_channels, rows, r0, r1, features, t0, t1, hist, caps, offsets, skip,
               width):
    """Rows ``r0:r1`` added to features ``t0:t1``'s cells: ``len(width)`` channels a row in
    unrolled SIMD adds with constant strides (float64, C-ordered), or (no ``width``) the
    channels one by one.

    A row's cells are all found (its bins read, capped, offset) before any is added: the
    loads interleaved with the adds' stores cost up to 1.8x on an AVX2 machine (AMD EPYC,
    2,000,000 x 50 bins, 7 channels, one thread: 0.58 -> 0.33 s; BENCHMARKS.md, issue 27,
    stop 69)."""
    n_channels = row_channels.shape[1]
    if len(width) > 0:
        n_channels = len(width)
        flat_hist = hist.reshape(-1)
        flat_channels = row_channels.reshape(-1)
    first = features[t0]
    n_tile = t1 - t0
    scratch = np.empty(5 * n_tile, dtype=np.intp)  # (one allocation: small nodes pay it often)
    tile_features, tile_offsets = scratch[:n_tile], scratch[n_tile:2 * n_tile]
    tile_caps, tile_skip = scratch[2 * n_tile:3 * n_tile], scratch[3 * n_tile:4 * n_tile]
    cells = scratch[4 * n_tile:]
    for j in range(n_tile):
        f = features[t0 + j]
        tile_features[j], tile_offsets[j], tile_caps[j] = f, offsets[f], caps[f]
        tile_skip[j] = -1 if skip is None else skip[f]
    for i in range(r0, r1):  # (each cell still adds its rows in row order)
        r = rows[i]
        prefetch_ahead(bins, rows, i, r1, first)
        n_cells = 0
        for j in range(n_tile):
            b = np.intp(bins[r, tile_features[j]])
            if skip is not None:
                if b == tile_skip[j]:
                    continue
            cells[n_cells] = tile_offsets[j] + min(b, tile_caps[j])
            n_cells += 1
        for j in range(n_cells):
            cell = cells[j]
            if len(width) == 0:
                for c in range(n_channels):
                    hist[cell, c] += row_channels[i, c]
            else:
                add_row(flat_hist, cell * n_channels, flat_channels, i * n_channels, width)


@numba.njit(cache=True, nogil=True)
def _fixed_channel_rows(bins, row_channels, rows, r0, r1, features, t0, t1, hist, caps,
                        offsets):
    """Whether :func:`_tile_rows` added the tile's rows with a fixed channel count (one of
    :data:`_FIXED_CHANNELS`); else nothing is added. Called, not inlined: compiled once for
    every kernel that calls it (inlined into the threaded kernels, its loops made their
    compile 20 s longer)."""
    n_channels = row_channels.shape[1]
    done = False
    for width in literal_unroll(_FIXED_CHANNELS):
        if not done and n_channels == len(width):
            _tile_rows(bins, row_channels, rows, r0, r1, features, t0, t1, hist, caps, offsets,
                       None, width)
            done = True
    return done


def float_rows(channels: np.ndarray, contiguous: bool = True) -> np.ndarray:
    """``channels`` as the kernels read them: float32 or float64 kept (float32 is never
    widened into a copy), any other dtype as float64; C-ordered if ``contiguous``."""
    dtype = channels.dtype if channels.dtype in ROW_DTYPES else np.float64
    if contiguous:
        return np.ascontiguousarray(channels, dtype=dtype)
    return np.asarray(channels, dtype=dtype)


def float_cells(row_channels, hist) -> bool:
    """Whether numba array types are float rows (:data:`ROW_DTYPES`) and float64 cells, both
    C-ordered: the arrays a fixed channel count's loop reads flat (integer cells and strided
    channels keep the loop over channels)."""
    return (isinstance(row_channels, types.Array) and isinstance(hist, types.Array)
            and row_channels.dtype in (types.float64, types.float32)
            and hist.dtype == types.float64 and row_channels.layout == hist.layout == "C")


def _fixed_tile_rows(bins, row_channels, rows, r0, r1, features, t0, t1, hist, caps, offsets,
                     skip, width):
    """:func:`_fixed_channel_rows` where the cells are float64 and the channels float32 or
    float64, both C-ordered, with no ``width`` given and no ``skip`` (else False: the caller's
    own loop; and the fixed counts' loops are not compiled into it). (Compiled only:
    :func:`_fixed_tile_rows_typed`.)"""
    raise NotImplementedError


@overload(_fixed_tile_rows, jit_options={"nogil": True})
def _fixed_tile_rows_typed(bins, row_channels, rows, r0, r1, features, t0, t1, hist, caps,
                           offsets, skip, width):
    fixed = (float_cells(row_channels, hist) and len(width) == 0
             and isinstance(skip, types.NoneType))
    if not fixed:  # (the caller's loop)
        return (lambda bins, row_channels, rows, r0, r1, features, t0, t1, hist, caps,
                offsets, skip, width: False)
    return (lambda bins, row_channels, rows, r0, r1, features, t0, t1, hist, caps, offsets,
            skip, width: _fixed_channel_rows(bins, row_channels, rows, r0, r1, features, t0, t1,
                                             hist, caps, offsets))


@numba.njit(cache=True, nogil=True, inline="always")
def _task(bins, row_channels, rows, r0, r1, features, j0, j1, hist, caps, offsets, tile, fresh,
          skip, width):
    if fresh:
        for j in range(j0, j1):
            f = features[j]
            hist[offsets[f]:offsets[f + 1], :] = 0  # (float or integer cells)
    for t0 in range(j0, j1, tile):
        t1 = min(t0 + tile, j1)
        if _fixed_tile_rows(bins, row_channels, rows, r0, r1, features, t0, t1, hist, caps,
                            offsets, skip, width):
            continue
        _tile_rows(bins, row_channels, rows, r0, r1, features, t0, t1, hist, caps, offsets,
                   skip, width)


# (called, not inlined, by both kernels: compiled once for them, and numba's parallel passes
# see one call instead of the inlined loops, which took most of the kernel's compile)
@numba.njit(cache=True, nogil=True)
def _called_task(bins, row_channels, rows, r0, r1, features, j0, j1, hist, caps, offsets, tile,
                 fresh, skip, width):
    _task(bins, row_channels, rows, r0, r1, features, j0, j1, hist, caps, offsets, tile, fresh,
          skip, width)


@numba.njit(parallel=True, cache=True, nogil=True)
def _add_rows_parallel(bins, row_channels, rows, r0, r1, features, starts, hist, caps,
                       offsets, tile, fresh, skip, width):
    """Tasks own blocks of features, each filled ``tile`` features at a time."""
    for t in numba.prange(starts.shape[0] - 1):
        _called_task(bins, row_channels, rows, r0, r1, features, starts[t], starts[t + 1], hist,
                     caps, offsets, tile, fresh, skip, width)


# (inlined by numba into its callers: compiled on its own, it had LLVM optimize its callee
# once more, about 1 s of a fresh install's first fit: BENCHMARKS.md, issue 27, stop 71)
@numba.njit(cache=True, nogil=True, inline="always")
def _add_rows_serial(bins, row_channels, rows, r0, r1, features, starts, hist, caps, offsets,
                     tile, fresh, skip, width):
    _called_task(bins, row_channels, rows, r0, r1, features, np.intp(0), features.shape[0],
                 hist, caps, offsets, tile, fresh, skip, width)
