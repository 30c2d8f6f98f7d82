"""Binning: thresholds between distinct values, bin/threshold agreement, missing values."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rebelboost.binning import Binner, merge_value_counts, value_counts
from rebelboost.learners import grow_rebel_tree
from rebelboost.search.binned import BinnedData

FAST = settings(max_examples=50, deadline=None)

finite_or_nan = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(-5, 5),
    st.sampled_from([0.0, -0.0, 1.0, 1.0 + 2**-52, np.nextafter(1.0, 0.0), 1e308, -1e308]),
    st.just(np.nan),
)


def _check_binner(binner: Binner, X: np.ndarray, codes: np.ndarray) -> None:
    n, d = X.shape
    assert codes.dtype == np.uint8 and codes.shape == X.shape and codes.flags.c_contiguous
    assert len(binner.thresholds_) == d
    for j in range(d):
        col = X[:, j]
        nan = np.isnan(col)
        thr = binner.thresholds_[j]
        n_bins = binner.n_value_bins_[j]
        assert binner.has_missing_[j] == nan.any()
        assert n_bins <= binner.max_bins
        assert len(thr) <= binner.max_bins - 1
        assert np.all(np.diff(thr) > 0)
        # NaN, and only NaN, goes to the missing bin.
        np.testing.assert_array_equal(codes[:, j] == binner.missing_bin, nan)
        values = np.unique(col[~nan])
        if values.size == 0:
            assert n_bins == 0 and len(thr) == 0
            continue
        assert n_bins == len(thr) + 1
        assert codes[~nan, j].max() < n_bins
        # Every value bin holds training rows.
        np.testing.assert_array_equal(np.unique(codes[~nan, j]), np.arange(n_bins))
        # Each threshold lies between two adjacent distinct values: lo <= t < hi, and strictly
        # above lo whenever a double fits strictly between them (a midpoint of adjacent doubles
        # rounds to one of them).
        for t in thr:
            i = np.searchsorted(values, t, side="right") - 1
            assert 0 <= i < len(values) - 1, "threshold outside the training range"
            lo, hi = values[i], values[i + 1]
            assert lo <= t < hi
            if np.nextafter(lo, np.inf) < hi:
                assert lo < t
        # bin(x) <= b exactly when x <= threshold(b).
        for b in range(n_bins):
            t = binner.threshold(j, b)
            np.testing.assert_array_equal(codes[~nan, j] <= b, col[~nan] <= t)
        assert binner.threshold(j, n_bins - 1) == np.inf


@FAST
@given(
    hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, max_side=30),
               elements=finite_or_nan),
    st.sampled_from([2, 3, 4, 7, 255]),
)
def test_binner_invariants(X, max_bins):
    binner = Binner(max_bins)
    codes = binner.fit_transform(X)
    _check_binner(binner, X, codes)


@FAST
@given(st.integers(0, 2**32 - 1), st.integers(1, 300), st.sampled_from([2, 3, 5]),
       st.sampled_from([4, 255]), st.booleans())
def test_a_feature_gets_at_most_a_bin_per_min_data_in_bin_rows(seed, n, min_rows, max_bins,
                                                               coarse):
    """With ``min_data_in_bin`` the binner keeps its invariants and gives a feature at most
    one bin per ``min_data_in_bin`` rows (two at least); a feature with no more distinct
    values than that keeps a bin per value, and else its bins are the quantile bins of that
    many bins."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    if coarse:  # few distinct values, some rare
        X = np.round(X * rng.uniform(0.5, 4))
    X[rng.random(X.shape) < 0.05] = np.nan
    binner = Binner(max_bins, min_data_in_bin=min_rows)
    codes = binner.fit_transform(X)
    _check_binner(binner, X, codes)
    plain = Binner(max_bins).fit(X)
    for j in range(2):
        col = codes[~np.isnan(X[:, j]), j]
        if col.size == 0:
            continue
        cap = min(max_bins, max(2, col.size // min_rows))
        assert binner.n_value_bins_[j] <= cap
        np.testing.assert_array_equal(binner.thresholds_[j], Binner(cap).fit(X).thresholds_[j])
        if len(np.unique(X[~np.isnan(X[:, j]), j])) <= cap:
            np.testing.assert_array_equal(binner.thresholds_[j], plain.thresholds_[j])


def test_min_data_in_bin_caps_the_bins_of_a_small_feature():
    x = np.arange(40.0)  # 40 distinct values: 8 quantile bins of 5 rows at min_data_in_bin=5
    binner = Binner(255, min_data_in_bin=5).fit(x[:, None])
    np.testing.assert_array_equal(np.bincount(binner.transform(x[:, None])[:, 0]), [5] * 8)
    few = np.repeat([0.0, 1.0, 2.0], [1, 30, 9])  # 3 values <= 8: a bin each, the rare one too
    assert Binner(255, min_data_in_bin=5).fit(few[:, None]).n_value_bins_[0] == 3
    assert Binner(255).fit(x[:, None]).n_value_bins_[0] == 40
    with pytest.raises(ValueError, match="min_data_in_bin"):
        Binner(255, min_data_in_bin=0)


@FAST
@given(st.integers(0, 2**32 - 1), st.sampled_from([2, 5, 16, 255]))
def test_bins_and_thresholds_agree_on_unseen_values(seed, max_bins):
    rng = np.random.default_rng(seed)
    X = np.round(rng.standard_normal((80, 3)), int(rng.integers(0, 3)))
    X[rng.random(X.shape) < 0.1] = np.nan
    binner = Binner(max_bins).fit(X)
    Z = np.concatenate([rng.standard_normal((200, 3)) * 3, X, X + 1e-12, X - 1e-12,
                        np.full((1, 3), np.inf), np.full((1, 3), -np.inf)])
    codes = binner.transform(Z)
    for j in range(3):
        ok = ~np.isnan(Z[:, j])
        for b in range(binner.n_value_bins_[j]):
            np.testing.assert_array_equal(codes[ok, j] <= b, Z[ok, j] <= binner.threshold(j, b))


@pytest.mark.parametrize("n_thresholds", [0, 1, 2, 3, 7, 8, 9, 127, 128, 129, 253, 254])
def test_bin_codes_are_searchsorted_for_every_count_of_thresholds(n_thresholds):
    """The bin search (the same 256 places halved for every feature) gives numpy's
    ``searchsorted(side="left")`` of each feature's thresholds: values at, between, beyond
    and near them, infinities, signed zeros; NaN in the missing bin."""
    rng = np.random.default_rng(n_thresholds)
    binner = Binner(255).fit(np.zeros((2, 2)))
    binner.thresholds_ = [np.sort(rng.standard_normal(n_thresholds)),
                          np.round(np.linspace(-3, 3, n_thresholds), 1)]
    columns = []
    for thr in binner.thresholds_:
        columns.append(np.concatenate([
            thr, np.nextafter(thr, np.inf), np.nextafter(thr, -np.inf),
            rng.standard_normal(300) * 4, [np.inf, -np.inf, 0.0, -0.0, np.nan, 1e308]]))
    X = np.stack(columns, axis=1)
    codes = binner.transform(X)
    for j, thr in enumerate(binner.thresholds_):
        want = np.where(np.isnan(X[:, j]), binner.missing_bin,
                        np.searchsorted(thr, X[:, j], side="left"))
        np.testing.assert_array_equal(codes[:, j], want)


def test_quantile_bins_are_balanced():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4000, 2))
    X[:, 1] = np.round(X[:, 1] * 20)  # many ties
    binner = Binner(8)
    codes = binner.fit_transform(X)
    _check_binner(binner, X, codes)
    counts = np.bincount(codes[:, 0], minlength=8)
    assert binner.n_value_bins_[0] == 8
    assert counts.min() > 4000 / 8 * 0.8 and counts.max() < 4000 / 8 * 1.2
    assert 2 <= binner.n_value_bins_[1] <= 8


def test_one_bin_per_distinct_value_and_adjacent_doubles():
    # 1, 1+ulp, 1+2ulp: the midpoint of the last two rounds (ties to even) up to 1+2ulp itself.
    one_ulp = np.nextafter(1.0, 2.0)
    two_ulp = np.nextafter(one_ulp, 2.0)
    assert one_ulp + (two_ulp - one_ulp) / 2 == two_ulp
    x = np.array([3.0, 1.0, one_ulp, 1.0, two_ulp, 2.0, np.nan, 3.0])
    binner = Binner(255)
    codes = binner.fit_transform(x[:, None])[:, 0]
    _check_binner(binner, x[:, None], codes[:, None])
    assert binner.n_value_bins_[0] == 5
    np.testing.assert_array_equal(codes, [4, 0, 1, 0, 2, 3, 255, 4])


def test_thresholds_near_the_float_limits():
    X = np.array([
        [-1.7e308, -1.5e308],
        [1.7e308, 1.5e308],  # column 1: the gap between adjacent values overflows
        [-1e308, -1.5e308],
        [0.0, 1.5e308],
        [5e-324, 1.5e308],
        [-5e-324, -1.5e308],
    ])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        binner = Binner(255)
        codes = binner.fit_transform(X)
    _check_binner(binner, X, codes)
    np.testing.assert_array_equal(binner.n_value_bins_, [6, 2])
    assert -1.5e308 < binner.threshold(1, 0) < 1.5e308


def test_all_nan_and_constant_columns():
    X = np.column_stack([np.full(6, np.nan), np.full(6, 2.0), [1, 2, np.nan, 1, 2, 2]])
    binner = Binner(10)
    codes = binner.fit_transform(X)
    _check_binner(binner, X, codes)
    np.testing.assert_array_equal(binner.n_value_bins_, [0, 1, 2])
    np.testing.assert_array_equal(binner.has_missing_, [True, False, True])
    assert binner.missing_bin == 10 and binner.n_bins_total == 11


def test_subsample_still_sees_rare_missing_values():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 2))
    X[7, 0] = np.nan  # one NaN that a 50-row subsample almost surely misses
    X[:, 1] = np.nan
    X[11, 1] = 0.5  # one value in an otherwise all-NaN column
    binner = Binner(16, subsample=50, random_state=0)
    codes = binner.fit_transform(X)
    assert binner.has_missing_[0]
    assert codes[7, 0] == binner.missing_bin
    assert binner.n_value_bins_.max() <= 16
    assert binner.n_value_bins_[1] >= 1  # the column has a value, even if unseen in the subsample


@pytest.mark.parametrize("max_bins", [2, 255])
def test_bad_max_bins(max_bins):
    Binner(max_bins)
    with pytest.raises(ValueError):
        Binner(max_bins - 1 if max_bins == 2 else max_bins + 1)


@FAST
@given(st.integers(0, 2**32 - 1), st.integers(1, 3), st.sampled_from([3, 8, 255]),
       st.sampled_from([None, 20]))
def test_raw_thresholds_reproduce_training_splits(seed, depth, max_bins, subsample):
    """A fitted tree applied to raw X (thresholds, NaN sides) gives the outputs it was trained
    with on binned X: prediction never bins, yet must agree with training."""
    rng = np.random.default_rng(seed)
    n, d, k = 60, 3, 3
    X = np.round(rng.standard_normal((n, d)) * 2, 1)
    X[rng.random((n, d)) < 0.15] = np.nan
    channels = rng.exponential(size=(n, 2 * k))
    binner = Binner(max_bins, subsample=subsample, random_state=seed % 1000)
    bins = binner.fit_transform(X)
    learner = grow_rebel_tree(BinnedData(binner, bins), channels, depth)
    assert learner is not None
    np.testing.assert_array_equal(learner.arrays.outputs(X)[:, 0], learner.output)


@settings(max_examples=200, deadline=None)
@given(st.lists(hnp.arrays(np.float32, st.integers(0, 40),
                           elements=st.sampled_from([-2.5, -1.0, -0.0, 0.0, 0.5, 3.0, np.nan])
                           | st.floats(-4, 4, width=32)),
                min_size=1, max_size=4))
def test_merged_value_counts_are_those_of_all_rows(parts):
    """A distributed binner's summary: the parts' value counts merged (in one pass over
    sorted values) equal the value counts of all their rows, -0.0 and 0.0 as one value."""
    values, counts = merge_value_counts(*[value_counts(p) for p in parts])
    expected = value_counts(np.concatenate(parts))
    np.testing.assert_array_equal(values, expected[0])
    np.testing.assert_array_equal(counts, expected[1])
    assert counts.dtype == np.int64 and values.dtype == np.float64


@pytest.mark.parametrize("threads", [1, 2])
def test_columns_value_counts_on_threads_are_the_serial_ones(monkeypatch, threads):
    """Value counts taken on threads (numpy's sort releases the interpreter's lock): each
    numeric column's, in column order, and none for the others."""
    from rebelboost import binning
    from rebelboost.parallel import numba_threads

    monkeypatch.setattr(binning, "PARALLEL_VALUES", 0)
    monkeypatch.setattr(binning, "PARALLEL_ROWS", 0)
    rng = np.random.default_rng(7)
    X = np.round(rng.normal(size=(300, 9)), 1)
    X[rng.random(X.shape) < 0.1] = np.nan
    numeric = rng.random(9) < 0.7
    with numba_threads(threads):
        got = binning.column_value_counts(X, numeric)
    assert len(got) == 9
    for j, (values, counts) in enumerate(got):
        want = value_counts(X[:, j]) if numeric[j] else (np.empty(0), np.empty(0, np.int64))
        np.testing.assert_array_equal(values, want[0])
        np.testing.assert_array_equal(counts, want[1])


def test_binning_in_a_fit_takes_its_n_jobs_threads(monkeypatch):
    """A fit with ``n_jobs=1`` bins on one thread (its value counts take no thread pool);
    with two, on two."""
    import numba

    from rebelboost import RebelClassifier, binning

    pools = []

    class Pool(binning.ThreadPoolExecutor):
        def __init__(self, workers):
            pools.append(workers)
            super().__init__(workers)

    monkeypatch.setattr(binning, "ThreadPoolExecutor", Pool)
    monkeypatch.setattr(binning, "PARALLEL_VALUES", 0)
    monkeypatch.setattr(binning, "PARALLEL_ROWS", 0)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 4)), np.arange(200) % 3
    RebelClassifier(2, n_jobs=1).fit(X, y)
    assert pools == []
    RebelClassifier(2, n_jobs=2).fit(X, y)
    assert pools == ([2] if numba.config.NUMBA_NUM_THREADS >= 2 else [])  # (numba's pool)
