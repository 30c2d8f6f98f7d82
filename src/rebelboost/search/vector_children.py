"""A split's two children searched in one pass over the features: the smaller child's
histogram built from its rows, the larger child's by subtraction from the parent's (in place),
and both scanned under the vector-leaf loss while a tile of features' cells is still in the
core's cache.

The separate kernels (:func:`.histograms.dense.add_rows`, :func:`.histograms.leaf.
subtract_histogram`, :func:`.vector_scan.best_vector_split` twice) each start numba's threads
and each pass over the whole histogram (4.6 MB at 216 features of ~125 bins and K = 10): on
mfeat_factors they were 0.85 of the fit's wall time, and a second thread gave 1.3x (1.7x
now; BENCHMARKS.md, issue 28, stop 30). Here one parallel region does all of it, tile by
tile. Every cell adds the same rows in the same order, subtracts the same
cells, and every feature is scanned by the same function, so the children's histograms and
best splits are those of the separate kernels, bit for bit (``tests/test_vector_children.py``).

The threads claim the tiles one at a time (:func:`children_claimed`), so the compiled grower
(:mod:`rebelboost.learners.compiled_grower`) runs every split of a few thousand rows this way
too: the calling thread starts at once, and a thread that wakes late only takes what is left.
Over sparse bins the tiles are the entries' feature blocks (:func:`sparse_children_claimed`):
each block's entries added, its default bins filled, subtracted and scanned by one thread.
"""

from __future__ import annotations

import numba
import numpy as np

from .histograms._intrinsics import fetch_add
from .histograms.dense import _task, feature_tile, simd_width
from .histograms.sparse import _leaf_block
from .splits import pick_index
from .vector_scan import scan_tile

# Tiles of features a thread claims in the compiled grower's leaves: most are small, and a
# thread that wakes late should still find work left (:func:`children_claimed`).
TILES_PER_THREAD = 4


def claimed_tiles(n_features: int, tile: int, n_threads: int) -> np.ndarray:
    """Edges of the feature tiles that :func:`children_claimed`'s threads claim in the
    compiled grower: at most ``tile`` features each (the cache's share) and at least
    :data:`TILES_PER_THREAD` a thread where there are features enough. (Each tile is a pass
    over the child's rows: evening the tiles out into a multiple of the threads, as
    :func:`shared_tiles` does, made sleep's 13 features 8 passes instead of 7 and its fits
    1.12x slower.)"""
    step = max(1, min(tile, -(-n_features // (TILES_PER_THREAD * max(1, n_threads)))))
    return np.append(np.arange(0, n_features, step), n_features).astype(np.intp)


def shared_tiles(n_features: int, tile: int, n_threads: int) -> np.ndarray:
    """Edges of the feature tiles of a large child's search (:func:`search_children`), where
    every thread works from the start: at most ``tile`` features each (the cache's share), as
    many as the threads share evenly (a multiple of ``n_threads`` where there are features
    enough), their widths within one of each other. (Tiles of the cache's share alone made
    50 features 3 tiles: one of two threads added 32 features' cells, the other 18.)"""
    n_threads = max(1, n_threads)
    by_cache = -(-n_features // max(1, tile))
    n_tiles = max(1, min(n_features, -(-by_cache // n_threads) * n_threads))
    return (np.arange(n_tiles + 1) * n_features // n_tiles).astype(np.intp)


def scan_kinds(is_categorical: np.ndarray, has_missing: np.ndarray) -> np.ndarray:
    """What the children's search scans per feature (``scanned``): 0 nothing (a categorical
    feature: built and subtracted only), 1 its value bins, 2 also its missing bin."""
    return np.where(is_categorical, 0, 1 + np.asarray(has_missing, dtype=np.int8)).astype(
        np.int8)


@numba.njit(cache=True, nogil=True, inline="always")
def _tile(bins, row_channels, rows, features, j0, j1, small, big, caps, offsets, width,
          scanned, prior, min_count, build, scan_small, scan_big, scores, split_bins,
          missing_left):
    """Features ``j0:j1``: the small child's cells built (``build``; else they are), the big
    child's subtracted where it is scanned, and the numeric ones (``scanned[j]``) scanned for
    each child wanted (row 0: small, 1: big)."""
    if build:
        _task(bins, row_channels, rows, 0, rows.shape[0], features, j0, j1, small, caps,
              offsets, j1 - j0, True, None, width)
    if scan_big:
        for j in range(j0, j1):
            f = features[j]
            _subtract_cells(big, small, offsets[f], offsets[f + 1])
    scan_tile(features, j0, j1, small, big, caps, offsets, scanned, prior, min_count,
              scan_small, scan_big, scores, split_bins, missing_left)


@numba.njit(cache=True, nogil=True, inline="always")
def _subtract_cells(big, small, start, stop):
    """``big[start:stop] -= small[start:stop]``, cell by cell (a slice would allocate)."""
    for cell in range(start, stop):
        for c in range(small.shape[1]):
            big[cell, c] -= small[cell, c]


@numba.njit(parallel=True, cache=True, nogil=True)
def children_claimed(bins, row_channels, rows, features, tiles, small, big, caps, offsets,
                     width, scanned, prior, min_count, build, scan_small, scan_big, scores,
                     split_bins, missing_left, counter, n_threads):
    """:func:`_children_serial` on ``n_threads`` threads, each claiming the next tile from
    ``counter`` (an int64 array of one) until none is left: the calling thread starts at
    once and a thread that wakes late takes only what is left, so a region of a few hundred
    microseconds pays even where sleeping threads take ~100 us to wake
    (:mod:`rebelboost.parallel`). The same cells and scans as on one thread. ``build``: the
    small child's cells are built here (else they are, and only subtracted and scanned)."""
    counter[0] = 0
    for _ in numba.prange(n_threads):
        _claim_tiles(bins, row_channels, rows, features, tiles, small, big, caps, offsets,
                     width, scanned, prior, min_count, build, scan_small, scan_big, scores,
                     split_bins, missing_left, counter)


# (called from the parallel loop, not inlined into it: numba's parallel passes over the
# inlined tiles took most of the kernel's compile)
@numba.njit(cache=True, nogil=True)
def _claim_tiles(bins, row_channels, rows, features, tiles, small, big, caps, offsets, width,
                 scanned, prior, min_count, build, scan_small, scan_big, scores, split_bins,
                 missing_left, counter):
    """One thread's share of :func:`children_claimed`: the next tile of ``counter`` until
    none is left."""
    n_tiles = tiles.shape[0] - 1
    while True:
        t = fetch_add(counter, 1)
        if t >= n_tiles:
            break
        _tile(bins, row_channels, rows, features, tiles[t], tiles[t + 1], small, big, caps,
              offsets, width, scanned, prior, min_count, build, scan_small, scan_big, scores,
              split_bins, missing_left)


@numba.njit(parallel=True, cache=True, nogil=True)
def sparse_children_claimed(indptr, entries, default_bin, row_channels, rows, totals, features,
                            blocks, small, big, caps, offsets, scanned, prior, min_count,
                            scan_small, scan_big, scores, split_bins, missing_left, counter,
                            n_threads):
    """:func:`children_claimed` for sparse bins (:class:`.histograms.sparse.SparseBins`):
    the tiles are the entries' feature blocks (``blocks[0]``: their first features and the
    end; ``blocks[1]``: where each block's features start in ``features``). A block's cells
    of the small child are cleared, its entries of ``rows`` added and its default bins set
    from ``totals`` (the rows' channel sums; :func:`.histograms.sparse._leaf_block`, as a
    sparse leaf histogram's blocks are built), the big child's cells subtracted (every cell of
    the block: ``scan_big``) and the features scanned: the cells, sums and scans of the
    serial kernels (:func:`.histograms.sparse._sparse_serial`, the leaf histograms' default
    fill), bit for bit."""
    n_tiles = blocks.shape[1] - 1
    n_channels = small.shape[1]
    flat = row_channels.reshape(-1)
    counter[0] = 0
    for _ in numba.prange(n_threads):
        while True:
            b = fetch_add(counter, 1)
            if b >= n_tiles:
                break
            f0, f1 = blocks[0, b], blocks[0, b + 1]
            _leaf_block(indptr, entries, flat, n_channels, rows, small, offsets, caps, (),
                        blocks[0], default_bin, totals, b)
            if scan_big:
                _subtract_cells(big, small, offsets[f0], offsets[f1])
            scan_tile(features, blocks[1, b], blocks[1, b + 1], small, big, caps, offsets,
                      scanned, prior, min_count, scan_small, scan_big, scores, split_bins,
                      missing_left)


def sparse_blocks(edges: np.ndarray, features: np.ndarray) -> np.ndarray:
    """:func:`sparse_children_claimed`'s ``blocks`` for sparse bins cut at feature ``edges``
    and a tree's (increasing) ``features``."""
    return np.stack([edges, np.searchsorted(features, edges)]).astype(np.intp)


@numba.njit(cache=True, nogil=True)
def _children_serial(bins, row_channels, rows, features, tiles, small, big, caps, offsets,
                     width, scanned, prior, min_count, scan_small, scan_big, scores,
                     split_bins, missing_left):
    for t in range(tiles.shape[0] - 1):
        _tile(bins, row_channels, rows, features, tiles[t], tiles[t + 1], small, big, caps,
              offsets, width, scanned, prior, min_count, True, scan_small, scan_big, scores,
              split_bins, missing_left)


def search_children(bins: np.ndarray, row_channels: np.ndarray, rows: np.ndarray,
                    features: np.ndarray, scanned: np.ndarray, small: np.ndarray,
                    big: np.ndarray, caps: np.ndarray, offsets: np.ndarray, prior: np.ndarray,
                    min_count: float, scan: tuple[bool, bool], parallel: bool
                    ) -> list[tuple[int, float, int, bool] | None]:
    """Fills ``small`` with the histogram of ``rows`` (their channels ``row_channels``) over
    ``features``, subtracts it from ``big`` (the parent's histogram, which becomes the larger
    child's) and scans each child whose ``scan`` flag is set: per child (small, big) None or
    ``(j, score, bin, missing_left)`` of the best split, ``j`` indexing ``features``.

    ``scanned[j]``: 0 for a feature the scan skips (a categorical one: built and subtracted
    only), 1 for a numeric one, 2 for a numeric one with a missing bin. ``caps``: each
    feature's value bins (int32). Dense bins and float histograms only."""
    n_channels = small.shape[1]
    n_features = max(1, len(caps))
    tile = feature_tile(small.shape[0] / n_features, n_channels)
    tiles = shared_tiles(len(features), tile, numba.get_num_threads() if parallel else 1)
    width = simd_width(len(rows) * len(features) * n_channels, n_channels)
    scores = np.full((2, len(features)), np.inf)
    split_bins = np.zeros((2, len(features)), dtype=np.int32)
    missing_left = np.zeros((2, len(features)), dtype=np.bool_)
    if parallel:
        children_claimed(bins, row_channels, rows, features, tiles, small, big, caps, offsets,
                         width, scanned, prior, min_count, True, scan[0], scan[1], scores,
                         split_bins, missing_left, np.zeros(1, dtype=np.int64),
                         numba.get_num_threads())
    else:
        _children_serial(bins, row_channels, rows, features, tiles, small, big, caps, offsets,
                         width, scanned, prior, min_count, scan[0], scan[1], scores,
                         split_bins, missing_left)
    found = []
    for side in range(2):
        j = pick_index(scores[side]) if scan[side] else -1
        found.append(None if j < 0 else (j, float(scores[side, j]), int(split_bins[side, j]),
                                         bool(missing_left[side, j])))
    return found
