"""A split's children built, subtracted and scanned in one pass: the separate kernels' bits."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_compiled_grower import _data

from rebelboost import RebelClassifier
from rebelboost.ensemble import _compiled_stages
from rebelboost.learners import compiled_grower, vector_tree
from rebelboost.search.histograms.dense import add_rows
from rebelboost.search.histograms.sparse import (
    _fill_defaults_serial,
    add_entries,
    leaf_entries,
    row_totals,
    sparse_bins,
)
from rebelboost.search.vector_children import (
    TILES_PER_THREAD,
    children_claimed,
    claimed_tiles,
    search_children,
    shared_tiles,
    sparse_blocks,
    sparse_children_claimed,
)
from rebelboost.search.vector_scan import best_vector_split


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("parallel", [False, True])
def test_one_pass_gives_the_separate_kernels_histograms_and_splits(seed, parallel):
    """Random bins, channels, missing bins, skipped (categorical) features, leaf limits: the
    small child's histogram, the parent's minus it, and each child's best split are those
    of add_rows, a subtraction and best_vector_split, bit for bit."""
    rng = np.random.default_rng(seed)
    n, d, k = int(rng.integers(20, 400)), int(rng.integers(1, 40)), int(rng.integers(2, 6))
    caps = rng.integers(1, 60, size=d).astype(np.int32)  # value bins per feature
    has_missing = rng.random(d) < 0.4
    bins = (rng.random((n, d)) * (caps + has_missing)).astype(np.uint8)  # code caps: missing
    channels = np.ascontiguousarray(np.c_[rng.exponential(size=(n, 2 * k)) ** 3,
                                          rng.integers(0, 3, size=n)], dtype=np.float64)
    offsets = np.r_[0, np.cumsum(caps.astype(np.intp) + 1)]
    features = np.sort(rng.choice(d, size=int(rng.integers(1, d + 1)), replace=False))
    scanned = np.where(rng.random(len(features)) < 0.2, 0,
                       1 + has_missing[features]).astype(np.int8)
    prior = rng.uniform(0.0, 0.5, size=k)
    min_count = float(rng.integers(0, 4))
    parent_rows = np.sort(rng.choice(n, size=int(rng.integers(2, n + 1)), replace=False))
    small_rows = np.sort(rng.choice(parent_rows, size=len(parent_rows) // 2, replace=False))

    parent = np.full((offsets[-1], 2 * k + 1), np.nan)
    add_rows(bins, channels[parent_rows], parent_rows, features, parent, caps, offsets, False)
    want_small = np.full_like(parent, np.nan)
    add_rows(bins, channels[small_rows], small_rows, features, want_small, caps, offsets,
             False)
    cells = np.concatenate([np.arange(offsets[f], offsets[f + 1]) for f in features])
    want_big = parent.copy()
    want_big[cells] -= want_small[cells]

    small = np.full_like(parent, np.nan)
    big = parent.copy()
    found = search_children(bins, channels[small_rows], small_rows, features, scanned, small,
                            big, caps, offsets, prior, min_count, (True, True), parallel)
    np.testing.assert_array_equal(small[cells], want_small[cells])
    np.testing.assert_array_equal(big[cells], want_big[cells])
    numeric = features[scanned > 0]
    for hist, got in zip((want_small, want_big), found, strict=True):
        want = (None if not len(numeric) else
                best_vector_split(hist, numeric, caps, has_missing, offsets, prior, min_count,
                                  8 if parallel else 1))
        if want is None:
            assert got is None
            continue
        j, score, split_bin, missing_left = got
        assert features[j] == numeric[want.feature]
        assert (score, split_bin, missing_left) == (want.score, want.bin, want.missing_left)


@pytest.mark.parametrize("seed", range(4))
def test_claimed_tiles_subtract_and_scan_a_built_child(seed):
    """The small child's histogram built beforehand (sparse bins, blocks of rows): the
    claimed tiles only subtract and scan, on two threads and on one, with the one-pass
    search's results."""
    rng = np.random.default_rng(seed)
    n, d, k = 300, 12, 3
    caps = rng.integers(1, 30, size=d).astype(np.int32)
    bins = (rng.random((n, d)) * caps).astype(np.uint8)
    channels = np.ascontiguousarray(np.c_[rng.exponential(size=(n, 2 * k)), np.ones(n)])
    offsets = np.r_[0, np.cumsum(caps.astype(np.intp) + 1)]
    features = np.arange(d)
    scanned = np.ones(d, dtype=np.int8)
    prior = np.full(k, 0.1)
    rows = np.sort(rng.choice(n, size=100, replace=False))
    parent = np.zeros((offsets[-1], 2 * k + 1))
    add_rows(bins, channels, np.arange(n), features, parent, caps, offsets, False)
    want_small, want_big = np.zeros_like(parent), parent.copy()
    want = search_children(bins, channels[rows], rows, features, scanned, want_small,
                           want_big, caps, offsets, prior, 1.0, (True, True), False)
    tiles = np.r_[np.arange(0, d, 2), d].astype(np.intp)
    for threads in (1, 2):
        small, big = want_small.copy(), parent.copy()
        scores = np.full((2, d), np.inf)
        split_bins = np.zeros((2, d), dtype=np.int32)
        missing_left = np.zeros((2, d), dtype=bool)
        children_claimed(bins, channels[rows], rows, features, tiles, small, big, caps,
                         offsets, (), scanned, prior, 1.0, False, True, True, scores,
                         split_bins, missing_left, np.zeros(1, dtype=np.int64), threads)
        np.testing.assert_array_equal(big, want_big)
        for side in range(2):
            j = want[side][0]
            assert (j, scores[side, j], split_bins[side, j], missing_left[side, j]) == want[side]
            assert scores[side].min() == scores[side, j]



@pytest.mark.parametrize("seed", range(6))
def test_claimed_sparse_blocks_give_the_serial_kernels_children(seed):
    """Sparse bins (1-4 feature blocks, missing bins, a feature subset, both children or
    the larger only): the claimed blocks' smaller child (entries added, default bins
    filled), larger child (subtracted) and scans are those of the serial kernels, bit for
    bit, on one thread and on two."""
    rng = np.random.default_rng(seed)
    n, d, k = int(rng.integers(30, 400)), int(rng.integers(2, 30)), int(rng.integers(2, 6))
    caps = rng.integers(1, 40, size=d).astype(np.int32)  # value bins; code caps: missing
    busy = rng.random((n, d)) < rng.uniform(0.05, 0.4)
    bins = np.where(busy, rng.random((n, d)) * (caps + 1), 0).astype(np.uint8)
    sparse = sparse_bins(bins, n_blocks=int(rng.integers(1, 5)))
    assert sparse is not None
    channels = np.ascontiguousarray(np.c_[rng.exponential(size=(n, 2 * k)) ** 3,
                                          rng.integers(0, 3, size=n)], dtype=np.float64)
    offsets = np.r_[0, np.cumsum(caps.astype(np.intp) + 1)]
    caps_p = caps.astype(np.intp)
    features = np.sort(rng.choice(d, size=int(rng.integers(1, d + 1)), replace=False))
    scanned = (rng.integers(0, 3, size=len(features))).astype(np.int8)
    prior = np.full(k, 0.1)

    def histogram(rows):  # the serial kernels: entries added, default bins filled
        hist = np.zeros((offsets[-1], 2 * k + 1))
        add_entries(sparse, channels[rows], rows, hist, offsets, caps_p, parallel=False)
        _fill_defaults_serial(hist, offsets, sparse.default_bin, row_totals(channels[rows]))
        return hist

    parent = histogram(np.arange(n))
    rows = np.sort(rng.choice(n, size=int(rng.integers(1, n)), replace=False))
    want_small = histogram(rows)
    want_big = parent - want_small
    blocks = sparse_blocks(sparse.edges, features)
    tiles = np.r_[np.arange(0, len(features), 3), len(features)].astype(np.intp)
    for scan_small in (True, False):
        want = [np.full((2, len(features)), np.inf), np.zeros((2, len(features)), np.int32),
                np.zeros((2, len(features)), bool)]
        children_claimed(bins, channels[rows], rows, features, tiles, want_small.copy(),
                         parent.copy(), caps, offsets, (), scanned, prior, 1.0, False,
                         scan_small, True, *want, np.zeros(1, dtype=np.int64), 1)
        for threads in (1, 2):
            small, big = np.full_like(parent, np.nan), parent.copy()
            got = [np.full((2, len(features)), np.inf), np.zeros((2, len(features)), np.int32),
                   np.zeros((2, len(features)), bool)]
            sparse_children_claimed(sparse.indptr, sparse.entries, sparse.default_bin,
                                    channels[rows], rows, row_totals(channels[rows]), features,
                                    blocks, small, big, caps_p, offsets, scanned, prior, 1.0,
                                    scan_small, True, *got, np.zeros(1, dtype=np.int64), threads)
            np.testing.assert_array_equal(small, want_small)
            np.testing.assert_array_equal(big, want_big)
            for a, b in zip(got, want, strict=True):
                np.testing.assert_array_equal(a, b)

CASES = [
    {},
    {"missing": True, "colsample_bytree": 0.6},
    {"subsample": 0.7, "min_samples_leaf": 3},
    {"categorical": True, "n_jobs": 1},
    {"zero_weights": True, "max_leaves": 9},
]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("case", CASES)
def test_python_grower_trees_are_the_same_with_the_one_pass(monkeypatch, seed, case):
    """Fits through the Python grower with and without the one-pass children search: the
    same trees, leaf values, losses and histogram additions (missing values, feature and row
    sampling, a categorical column, weights of zero, one thread and two)."""
    case = dict(case)
    missing, categorical = case.pop("missing", False), case.pop("categorical", False)
    zero_weights = case.pop("zero_weights", False)
    n, d, k = (300, 1200, 2500)[seed], 3 + 4 * seed, 2 + seed
    X, y = _data(seed, n, d, k, missing=missing)
    if categorical:
        X = pd.DataFrame(X, columns=[f"x{i}" for i in range(d)])
        X["c"] = pd.Categorical(np.where(X["x1"] > 0.3, "u", np.where(X["x2"] > 0, "v", "w")))
    weight = None
    if zero_weights:
        weight = np.random.default_rng(seed).uniform(0.0, 2.0, n)
        weight[::5] = 0.0
    fits, used = [], []
    real = vector_tree.search_children
    for one_pass in (False, True):
        monkeypatch.setattr(_compiled_stages, "applies", lambda booster: False)
        monkeypatch.setattr(compiled_grower, "applies", lambda grower, rows: False)
        if one_pass:
            monkeypatch.setattr(vector_tree, "search_children",
                                lambda *args: used.append(True) or real(*args))
        else:
            monkeypatch.setattr(vector_tree.VectorTreeGrower, "_search_children",
                                lambda *args: False)
        params = {"n_jobs": 2, **case}
        fits.append(RebelClassifier(12, random_state=seed, **params).fit(
            X, y, sample_weight=weight))
        monkeypatch.undo()
    assert used
    a, b = fits
    for name in ("feature", "threshold", "missing_left", "left", "right"):
        np.testing.assert_array_equal(getattr(a.trees_, name), getattr(b.trees_, name))
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    np.testing.assert_array_equal(a.train_loss_, b.train_loss_)
    np.testing.assert_array_equal(a.histogram_updates_, b.histogram_updates_)


@pytest.mark.parametrize("seed", range(4))
def test_a_sparse_leaf_histogram_by_blocks_is_the_serial_kernels(seed):
    """leaf_entries (each feature block's cells cleared, its entries added, its default bins
    filled, by the thread that owns the block) writes every cell of a leaf histogram with
    the bits of the kernels one after another (clear all, add the entries, fill the
    defaults), on one thread and on two."""
    import numba

    rng = np.random.default_rng(seed)
    n, d, k = int(rng.integers(30, 400)), int(rng.integers(2, 30)), int(rng.integers(2, 6))
    caps = rng.integers(1, 40, size=d).astype(np.intp)
    busy = rng.random((n, d)) < rng.uniform(0.05, 0.4)
    bins = np.where(busy, rng.random((n, d)) * (caps + 1), 0).astype(np.uint8)
    sparse = sparse_bins(bins, n_blocks=int(rng.integers(1, 5)))
    channels = np.ascontiguousarray(np.c_[rng.exponential(size=(n, 2 * k)) ** 3,
                                          rng.integers(0, 3, size=n)], dtype=np.float64)
    offsets = np.r_[0, np.cumsum(caps + 1)]
    rows = np.sort(rng.choice(n, size=int(rng.integers(1, n)), replace=False))
    totals = row_totals(channels[rows])
    want = np.zeros((offsets[-1], 2 * k + 1))
    add_entries(sparse, channels[rows], rows, want, offsets, caps, parallel=False)
    _fill_defaults_serial(want, offsets, sparse.default_bin, totals)
    before = numba.get_num_threads()
    for threads, parallel in ((1, False), (1, True), (2, True)):
        got = np.full_like(want, np.nan)
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        try:
            leaf_entries(sparse, channels[rows], rows, got, offsets, caps, totals, parallel)
        finally:
            numba.set_num_threads(before)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kind", ["shared", "claimed"])
@pytest.mark.parametrize("n_features", [1, 2, 7, 13, 50, 51, 784])
@pytest.mark.parametrize("tile", [1, 7, 18, 1000])
@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_feature_tiles_cover_the_features_within_the_cache_share(kind, n_features, tile,
                                                                  n_threads):
    """Both kinds of tiles cover the features, at most ``tile`` wide. Shared tiles (a large
    child's) come in a multiple of the threads, evenly wide, no more than the cache needs;
    claimed ones (the compiled grower's) give each thread several, of equal widths."""
    edges = (shared_tiles if kind == "shared" else claimed_tiles)(n_features, tile, n_threads)
    widths = np.diff(edges)
    assert edges[0] == 0 and edges[-1] == n_features and (widths > 0).all()
    assert widths.max() <= tile
    if kind == "claimed":
        assert (widths[:-1] == widths[0]).all()  # (the last one short)
        assert len(widths) >= min(n_features, TILES_PER_THREAD * n_threads) / 2
        return
    assert widths.max() - widths.min() <= 1
    assert len(widths) % n_threads == 0 or len(widths) == n_features  # (one a tile)
    by_cache = -(-n_features // tile)
    assert len(widths) <= -(-by_cache // n_threads) * n_threads
    # the busiest thread (tiles dealt in turn) adds at most a feature a tile more than an
    # even share
    per = [widths[t::n_threads].sum() for t in range(n_threads)]
    assert max(per) <= n_features / n_threads + -(-len(widths) // n_threads)


def test_fifty_features_on_two_threads_are_shared_evenly():
    # (tiles of the cache's share made three: 32 features' work for one thread, 18 for the
    # other)
    assert np.diff(shared_tiles(50, 18, 2)).tolist() == [12, 13, 12, 13]
