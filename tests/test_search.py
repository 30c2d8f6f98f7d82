"""The split-search engine: histograms, the subtraction trick, exhaustive split search."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from rebelboost.binning import Binner
from rebelboost.search import (
    best_split,
    best_split_per_feature,
    build_histogram,
    rebel_score,
    sign_cost_score,
)
from rebelboost.search.histograms import (
    HistogramPool,
    accumulate_histogram,
    fill_default_bins,
    row_totals,
    sparse_bins,
)
from rebelboost.search.histograms.dense import _add_rows_parallel, _add_rows_serial, _task_starts
from rebelboost.search.histograms.sparse import _code_counts
from rebelboost.search.splits import split_sums

FAST = settings(max_examples=40, deadline=None)


def _reference_histogram(bins, channels, rows, n_bins_total):
    hist = np.zeros((bins.shape[1], n_bins_total, channels.shape[1]))
    for f in range(bins.shape[1]):
        np.add.at(hist[f], bins[rows, f], channels[rows])
    return hist


@st.composite
def binned_problems(draw, max_features=4, max_channels=6):
    """Small data with few distinct values (ties), NaN, constant columns; random channels."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(1, 40))
    d = draw(st.integers(1, max_features))
    n_distinct = draw(st.integers(1, 6))
    nan_rate = draw(st.sampled_from([0.0, 0.0, 0.2, 1.0]))
    X = rng.integers(0, n_distinct, size=(n, d)).astype(float)
    X[rng.random((n, d)) < nan_rate] = np.nan
    if draw(st.booleans()):
        X[:, 0] = 1.5  # a constant column
    max_bins = draw(st.sampled_from([2, 3, 255]))
    n_channels = draw(st.integers(1, max_channels))
    channels = rng.exponential(size=(n, n_channels))
    channels[rng.random((n, n_channels)) < 0.3] = 0.0
    return X, channels, max_bins, rng


# ------------------------------------------------------------------------ histogram


@FAST
@given(binned_problems(max_channels=8), st.data())
def test_histogram_equals_add_at_reference(problem, data):
    X, channels, max_bins, rng = problem
    binner = Binner(max_bins)
    bins = binner.fit_transform(X)
    n = X.shape[0]
    size = data.draw(st.integers(0, n))
    rows = rng.permutation(n)[:size].astype(np.intp)  # any subset, any order
    hist = build_histogram(bins, channels, rows, binner.n_bins_total)
    assert hist.shape == (X.shape[1], binner.n_bins_total, channels.shape[1])
    assert_allclose(hist, _reference_histogram(bins, channels, rows, binner.n_bins_total),
                    rtol=1e-12, atol=1e-12)


def test_histogram_on_wide_random_bins():
    rng = np.random.default_rng(0)
    n, d, c, nbt = 500, 37, 5, 256
    bins = rng.integers(0, nbt, size=(n, d)).astype(np.uint8)
    channels = rng.standard_normal((n, c))
    rows = rng.choice(n, 300, replace=False).astype(np.intp)
    assert_allclose(build_histogram(bins, channels, rows, nbt),
                    _reference_histogram(bins, channels, rows, nbt), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n_channels", [1, 4, 5, 7, 9, 13, 21, 23])
def test_the_generic_kernel_adds_every_channel_count_in_row_order(n_channels):
    """The dense kernel without a ``width`` (the compiled grower's: one compile for every
    channel count, fixed counts in unrolled loops) fills the cells bit for bit as one row at
    a time in the rows' order, for float and integer cells and strided channels, on the
    calling thread and on every thread, in tiles of any size."""
    rng = np.random.default_rng(n_channels)
    n, d, n_bins = 400, 11, 9
    bins = rng.integers(0, n_bins, size=(n, d)).astype(np.uint8)
    rows = rng.permutation(n)[:300].astype(np.intp)
    caps = np.full(d, n_bins - 1, np.int32)
    offsets = np.arange(d + 1, dtype=np.int64) * n_bins
    features = rng.permutation(d).astype(np.intp)
    wide = rng.standard_normal((n, 2 * n_channels)) * 10.0 ** rng.integers(-8, 8, (n, 1))
    for channels in (np.ascontiguousarray(wide[rows, :n_channels]), wide[rows, ::2],
                     rng.integers(-50, 50, (len(rows), n_channels))):
        expected = np.zeros((offsets[-1], n_channels), dtype=channels.dtype)
        for i, r in enumerate(rows):  # (one add per cell and row, in row order)
            for f in features:
                expected[offsets[f] + min(bins[r, f], caps[f])] += channels[i]
        for kernel, tile in ((_add_rows_serial, 3), (_add_rows_serial, d),
                             (_add_rows_parallel, 2)):
            hist = np.full_like(expected, 7)
            kernel(bins, channels, rows, 0, len(rows), features, _task_starts(d, 3), hist, caps,
                   offsets, tile, True, None, ())
            assert_array_equal(hist, expected)


@pytest.mark.parametrize("n_channels", [3, 7])
def test_float32_rows_add_into_the_cells_as_their_float64_values(n_channels):
    """The boosters' float32 channels (``CHANNEL_DTYPE``) go into float64 cells widened
    exactly: the loop over channels (3), a fixed count's SIMD adds (7) and an explicit
    ``width`` give the histogram of the same values as float64 rows, bit for bit."""
    rng = np.random.default_rng(n_channels)
    n, d, n_bins = 400, 6, 9
    bins = rng.integers(0, n_bins, size=(n, d)).astype(np.uint8)
    rows = np.sort(rng.permutation(n)[:300]).astype(np.intp)
    caps = np.full(d, n_bins - 1, np.int32)
    offsets = np.arange(d + 1, dtype=np.int64) * n_bins
    features = np.arange(d, dtype=np.intp)
    narrow = (rng.exponential(size=(len(rows), n_channels))
              * 10.0 ** rng.integers(-30, 1, (len(rows), 1))).astype(np.float32)
    for kernel, width in ((_add_rows_serial, ()), (_add_rows_parallel, ()),
                          (_add_rows_serial, (0,) * n_channels)):
        want = np.zeros((offsets[-1], n_channels))
        got = np.zeros_like(want)
        for channels, hist in ((narrow.astype(np.float64), want), (narrow, got)):
            kernel(bins, channels, rows, 0, len(rows), features, _task_starts(d, 2), hist,
                   caps, offsets, 4, True, None, width)
        assert_array_equal(got, want)
        assert np.any(want != want.astype(np.float32))  # (the sums are float64 sums)


def _sparse_problem(rng, n=300, d=9, n_channels=5, zero_rate=0.8):
    X = rng.integers(1, 40, size=(n, d)).astype(float)
    X[rng.random((n, d)) < zero_rate] = 0.0  # most entries in one bin, like MNIST's pixels
    X[rng.random((n, d)) < 0.05] = np.nan
    X[:, 0] = 3.0  # a constant column: every entry in the default bin
    binner = Binner(255)
    channels = rng.exponential(size=(n, n_channels))
    channels[rng.random(channels.shape) < 0.2] = 0.0
    return binner.fit_transform(X), channels, binner.n_bins_total


def test_sparse_bins_list_exactly_the_entries_outside_the_default_bins():
    rng = np.random.default_rng(3)
    bins, _, _ = _sparse_problem(rng)
    for n_blocks in (1, 2, 4, 50):
        sparse = sparse_bins(bins, n_blocks)
        rebuilt = np.tile(sparse.default_bin.astype(np.uint8), (bins.shape[0], 1))
        for blk in range(sparse.indptr.shape[0]):
            for i in range(bins.shape[0]):
                span = slice(sparse.indptr[blk, i], sparse.indptr[blk, i + 1])
                features = sparse.entry_feature[span]
                assert np.all(np.diff(features) > 0)
                assert not np.any(rebuilt[i, features] != sparse.default_bin[features])  # once
                rebuilt[i, features] = sparse.entry_bin[span]
        np.testing.assert_array_equal(rebuilt, bins)
        assert sparse.max_bin == int(sparse.entry_bin.max(initial=0))
        counts = [np.bincount(bins[:, f], minlength=256).max() for f in range(bins.shape[1])]
        np.testing.assert_array_equal(  # (the codes counted along the rows, in blocks)
            _code_counts(bins, n_blocks if n_blocks <= bins.shape[1] else 1),
            [np.bincount(bins[:, f], minlength=256) for f in range(bins.shape[1])])
        assert [np.sum(bins[:, f] == sparse.default_bin[f]) for f in range(bins.shape[1])] == counts
    dense = np.random.default_rng(0).integers(0, 200, size=(100, 5)).astype(np.uint8)
    assert sparse_bins(dense) is None  # no bin holds most entries: the dense layout is cheaper
    assert sparse_bins(dense, max_density=1.0) is not None


def test_pooled_histograms_are_fresh_every_time():
    rng = np.random.default_rng(5)
    bins, channels, nbt = _sparse_problem(rng)
    pool = HistogramPool()
    for sparse in (None, sparse_bins(bins)):
        for size in (300, 17, 0, 300):  # a reused buffer holds the last node's sums until reset
            rows = rng.permutation(bins.shape[0])[:size].astype(np.intp)
            pooled = build_histogram(bins, channels, rows, nbt, sparse, pool)
            np.testing.assert_array_equal(pooled, build_histogram(bins, channels, rows, nbt,
                                                                  sparse))
    assert len(pool._buffers) == 1


@FAST
@given(st.integers(0, 2**32 - 1), st.integers(1, 3), st.sampled_from([1, 2, 5, 7, 20, 21]))
def test_sparse_histogram_equals_reference_and_its_increments(seed, n_blocks, n_channels):
    rng = np.random.default_rng(seed)
    bins, channels, nbt = _sparse_problem(rng, n=int(rng.integers(1, 300)),
                                          n_channels=n_channels,
                                          zero_rate=float(rng.uniform(0.3, 1.0)))
    sparse = sparse_bins(bins, n_blocks, max_density=1.0)
    rows = rng.permutation(bins.shape[0])[: rng.integers(0, bins.shape[0] + 1)].astype(np.intp)
    hist = build_histogram(bins, channels, rows, nbt, sparse)
    assert_allclose(hist, _reference_histogram(bins, channels, rows, nbt), rtol=1e-12,
                    atol=1e-12 * max(1.0, channels.sum()))
    # In pieces, through both kernels (row-wise entries for all features, dense rows skipping
    # the default bin for a few), then the default bins: the same bits as in one go.
    row_channels = np.ascontiguousarray(channels[rows])
    pieces = np.zeros_like(hist)
    cut = int(rng.integers(0, len(rows) + 1))
    accumulate_histogram(bins, rows, row_channels, 0, cut, None, pieces, sparse)
    accumulate_histogram(bins, rows, row_channels, cut, len(rows), np.arange(bins.shape[1]),
                         pieces, sparse)
    fill_default_bins(pieces, np.arange(bins.shape[1]), sparse.default_bin,
                      row_totals(row_channels))
    np.testing.assert_array_equal(pieces, hist)


# --------------------------------------------------------------------- split search


def _np_rebel_score(left, right):
    k = left.shape[0] // 2
    return float(np.sum(np.sqrt((right[:k] + left[k:]) * (right[k:] + left[:k]))))


def _np_sign_cost_score(left, right):
    return float(min(left[0], left[1]) + min(right[0], right[1]))


def _brute_force(X, channels, binner, score):
    """Best score per feature over every raw threshold and both sides of NaN.

    Works on raw values and per-sample weights only: a split sends ``x <= t`` (and NaN if
    ``missing_left``) left. Splits that leave a side without samples do not count.
    """
    n, d = X.shape
    best = np.full(d, np.inf)
    for f in range(d):
        col = X[:, f]
        nan = np.isnan(col)
        thresholds = [-np.inf, *binner.thresholds_[f], np.inf]
        for t in thresholds:
            for missing_left in (False, True):
                left = (col <= t) | (nan & missing_left)
                if left.all() or not left.any():
                    continue
                s = score(channels[left].sum(axis=0), channels[~left].sum(axis=0))
                best[f] = min(best[f], s)
    return best


def _raw_split_score(X, channels, binner, split, score):
    t = binner.threshold(split.feature, split.bin)
    col = X[:, split.feature]
    left = (col <= t) | (np.isnan(col) & split.missing_left)
    assert left.any() and not left.all(), "the chosen split leaves a side empty"
    return score(channels[left].sum(axis=0), channels[~left].sum(axis=0))


@FAST
@given(binned_problems(), st.booleans())
def test_stump_search_equals_brute_force(problem, cost_layer):
    X, channels, max_bins, _ = problem
    if cost_layer:  # a fixed-a tree layer: two channels (g+, g-)
        channels = np.ascontiguousarray(np.column_stack([channels[:, 0], channels[:, -1]]))
        score, np_score = sign_cost_score, _np_sign_cost_score
    else:
        if channels.shape[1] % 2:
            channels = np.ascontiguousarray(channels[:, :-1] if channels.shape[1] > 1
                                            else np.column_stack([channels, channels]))
        score, np_score = rebel_score, _np_rebel_score
    binner = Binner(max_bins)
    bins = binner.fit_transform(X)
    hist = build_histogram(bins, channels, np.arange(X.shape[0], dtype=np.intp),
                           binner.n_bins_total)
    args = (hist, binner.layout, score)
    expected = _brute_force(X, channels, binner, np_score)
    scale = channels.sum() + 1e-300

    per_feature, _, _ = best_split_per_feature(*args)
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(np.isfinite(per_feature), finite)
    assert_allclose(per_feature[finite], expected[finite], rtol=1e-9, atol=1e-12 * scale)

    split = best_split(*args)
    if not finite.any():
        assert split is None
        return
    assert split is not None
    assert_allclose(split.score, expected.min(), rtol=1e-9, atol=1e-12 * scale)
    # The winner, replayed on raw values and per-sample weights, scores what it claims.
    assert_allclose(_raw_split_score(X, channels, binner, split, np_score), split.score,
                    rtol=1e-9, atol=1e-12 * scale)
    # The reported sums are the winner's sums.
    left, right = split_sums(hist[split.feature], split.bin, split.missing_left,
                             binner.missing_bin)
    assert_allclose(score(left, right), split.score, rtol=1e-9, atol=1e-12 * scale)


def test_ties_go_to_the_lowest_feature_then_bin():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 5, size=60).astype(float)
    X = np.column_stack([np.full(60, 3.0), x, x, x])  # constant column, then three copies
    y = (x >= 2).astype(int)
    channels = np.zeros((60, 4))
    channels[np.arange(60), 2 + y] = 1.0  # w- on the true class
    channels[np.arange(60), 1 - y] = 1.0  # w+ on the other one
    binner = Binner(255)
    bins = binner.fit_transform(X)
    hist = build_histogram(bins, channels, np.arange(60, dtype=np.intp), binner.n_bins_total)
    scores, _, _ = best_split_per_feature(hist, binner.layout, rebel_score)
    assert scores[0] == np.inf  # a constant feature has no split
    assert scores[1] == scores[2] == scores[3]  # identical histograms score bit for bit alike
    split = best_split(hist, binner.layout, rebel_score)
    assert (split.feature, split.bin, split.missing_left) == (1, 1, False)
    assert split.score == pytest.approx(0.0, abs=1e-12)  # a perfect split

    # Symmetric tie inside one feature: the lower bin wins.
    x = np.array([0.0, 1.0, 2.0, 3.0])
    w = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0]])  # g+ / g- pattern +--+
    binner = Binner(255)
    bins = binner.fit_transform(x[:, None])
    hist = build_histogram(bins, w, np.arange(4, dtype=np.intp), binner.n_bins_total)
    split = best_split(hist, binner.layout, sign_cost_score)
    assert (split.bin, split.score) == (0, 1.0)  # bins 0 and 2 both cost 1


def test_missing_right_is_tried_before_missing_left():
    # NaN rows weigh nothing: both sides of NaN tie exactly, and "missing right" wins.
    X = np.array([[0.0], [1.0], [np.nan], [2.0]])
    channels = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])
    binner = Binner(255)
    bins = binner.fit_transform(X)
    hist = build_histogram(bins, channels, np.arange(4, dtype=np.intp), binner.n_bins_total)
    split = best_split(hist, binner.layout, sign_cost_score)
    assert (split.bin, split.missing_left, split.score) == (1, False, 0.0)


def test_no_feature_can_split():
    X = np.column_stack([np.full(10, 2.0), np.full(10, -1.0)])
    binner = Binner(255)
    bins = binner.fit_transform(X)
    hist = build_histogram(bins, np.ones((10, 4)), np.arange(10, dtype=np.intp),
                           binner.n_bins_total)
    assert best_split(hist, binner.layout, rebel_score) is None


def test_rebel_score_is_half_the_step_loss():
    from rebelboost.losses.rebel import binary_sums

    rng = np.random.default_rng(5)
    left, right = rng.exponential(size=6), rng.exponential(size=6)
    s_plus, s_minus = binary_sums(right, left, 3)  # the left side emits -1
    assert rebel_score(left, right) == pytest.approx(np.sum(np.sqrt(s_plus * s_minus)))
    assert rebel_score(left, right) == pytest.approx(rebel_score(right, left))  # polarity free


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 6), n_bins=st.integers(0, 40),
       scale=st.sampled_from([1.0, 1e-160, 1e-300]), min_count=st.sampled_from([0.0, 1.0, 4.0]),
       has_missing=st.booleans(), parallel=st.booleans())
def test_vector_scan_equals_the_one_scan_bit_for_bit(seed, k, n_bins, scale, min_count,
                                                     has_missing, parallel):
    """The vector-leaf scan with its losses in SIMD lanes picks the split, and the score to
    the last bit, that the one scalar scan (``scan_feature``) does: bins without weight,
    light sides, a missing bin, weights whose products underflow (``scale``), a prior; the
    features of a block in batches of candidates (features of several sizes, some with
    missing values, more than one batch fills)."""
    from rebelboost.search import vector_scan
    from rebelboost.search.scores import VECTOR_LEAF
    from rebelboost.search.splits import scan_feature

    rng = np.random.default_rng(seed)
    n_features = 12
    n_value_bins = rng.integers(0, n_bins + 1, size=n_features).astype(np.int32)
    n_value_bins[0] = n_bins
    offsets = np.r_[0, np.cumsum(n_value_bins + 1)].astype(np.intp)
    hist = rng.exponential(size=(offsets[-1], 2 * k + 1)) * scale
    hist[rng.random(hist.shape) < 0.3] = 0.0
    hist[:, -1] = rng.integers(0, 4, size=offsets[-1])  # sample weight: some bins empty
    prior = rng.exponential(size=k) * scale * (rng.random() < 0.7)
    features = rng.permutation(n_features).astype(np.intp)
    missing = has_missing & (rng.random(n_features) < 0.7)
    got = (vector_scan._scan_vector_features if parallel
           else vector_scan._scan_vector_features_serial)(
        hist, features, n_value_bins, missing, offsets, prior, min_count, 2)
    for j, f in enumerate(features):
        want = scan_feature(hist[offsets[f]:offsets[f + 1]], n_value_bins[f], missing[f],
                            n_value_bins[f], VECTOR_LEAF, prior, min_count, True)
        assert (got[0][j], got[1][j], got[2][j]) == want or (
            np.isinf(want[0]) and np.isinf(got[0][j]))


def test_a_leaf_scan_takes_the_threads_from_its_cells(monkeypatch):
    """One block on the calling thread below ``PARALLEL_SCAN_CELLS`` cells x channels where
    idle OpenMP threads spin (below ``BIG_HISTOGRAM_CELLS`` where they sleep) or on
    one thread, four a thread from there; the pick is the same in blocks."""
    from rebelboost.search import vector_scan

    monkeypatch.setattr(vector_scan.numba, "get_num_threads", lambda: 2)
    monkeypatch.setattr(vector_scan.numba, "threading_layer", lambda: "omp")
    monkeypatch.setenv("GOMP_SPINCOUNT", "10k")
    cells = vector_scan.PARALLEL_SCAN_CELLS
    assert vector_scan.scan_tasks(cells // 7 - 1, 7) == 1
    assert vector_scan.scan_tasks(cells // 7 + 1, 7) == 8
    monkeypatch.delenv("GOMP_SPINCOUNT")
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    assert vector_scan.scan_tasks(cells // 7 + 1, 7) == 1
    passive = vector_scan.BIG_HISTOGRAM_CELLS
    assert vector_scan.scan_tasks(passive // 7 - 1, 7) == 1
    assert vector_scan.scan_tasks(passive // 7 + 1, 7) == 8
    monkeypatch.setattr(vector_scan.numba, "get_num_threads", lambda: 1)
    assert vector_scan.scan_tasks(passive, 7) == 1
    rng = np.random.default_rng(0)
    n_value_bins = rng.integers(1, 30, size=9).astype(np.int32)
    offsets = np.r_[0, np.cumsum(n_value_bins + 1)].astype(np.intp)
    hist = rng.exponential(size=(offsets[-1], 7))
    args = (hist, np.arange(9, dtype=np.intp), n_value_bins, np.ones(9, dtype=np.bool_),
            offsets, np.zeros(3), 1.0)
    picks = {vector_scan.best_in_tasks(*args, tasks) for tasks in (1, 2, 3, 8)}
    assert len(picks) == 1 and next(iter(picks))[0] >= 0


@pytest.mark.parametrize("seed", range(30))
def test_the_pick_takes_the_lowest_score_and_the_first_among_ties(seed):
    """``pick_index`` (compiled, the vector scan's) and ``pick_split`` take the lowest score,
    the lowest index among scores within rounding (``TIE_RTOL``) of it, and none when all
    are inf: checked against that rule written out."""
    from rebelboost.search.splits import TIE_RTOL, Split, pick_index, pick_split

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    scores = rng.choice([1.0, 1.0 + 1e-13, 1.0 + 1e-9, 2.0, np.inf], n)
    if seed % 5 == 0:
        scores[:] = np.inf
    bins = rng.integers(0, 255, n)
    missing_left = rng.random(n) < 0.5
    lowest = min(scores)
    first = next((i for i, s in enumerate(scores) if s <= lowest * (1 + TIE_RTOL)), None)
    want = None if not np.isfinite(lowest) else Split(
        float(scores[first]), first, int(bins[first]), bool(missing_left[first]))
    assert pick_split(scores, bins, missing_left) == want
    j = pick_index(scores)
    assert (j < 0) == (want is None)
    if want is not None:
        assert j == want.feature and scores[j] == want.score
