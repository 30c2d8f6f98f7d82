"""Quantized integer histograms of the vector-leaf tree (issue 27)."""

import numpy as np
import pytest

from rebelboost.learners.rebel_learners import VectorTreeFamily
from rebelboost.learners.row_set import LocalRows
from rebelboost.learners.vector_tree import VectorTreeGrower, VectorTreeOptions
from rebelboost.parallel import numba_threads
from rebelboost.search.binned import BinnedData
from rebelboost.search.quantize import check_bits, quantize_channels, stochastic_round


def _data(n=3000, d=6, k=3, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    X[rng.rand(n, d) < 0.05] = np.nan
    channels = rng.exponential(size=(n, 2 * k)) * (1 + (X[:, :1] > 0))
    return BinnedData.fit(X, None, 32, 0), channels, k


def test_stochastic_rounding_unbiased_and_exact_on_integers():
    # 200,000 draws of x + integer: the mean of floor(x + u) is x within 5 standard errors
    # (the draws are Bernoulli(frac(x)) plus the integer part: sd <= 0.5 / sqrt(n)).
    n = 200_000
    for x in (0.3, 2.75, 7.01):
        mean = stochastic_round(np.full(n, x), seed=3).mean()
        assert abs(mean - x) < 5 * 0.5 / np.sqrt(n)
    ints = np.arange(-5, 50, dtype=float)
    np.testing.assert_array_equal(stochastic_round(ints, seed=9), ints)


def test_quantized_channels_scale_and_exact_counts():
    data, channels, k = _data()
    q, scales = quantize_channels(channels, None, np.ones(len(channels)), 8, 1)
    assert q.dtype == np.uint8 and q.max() <= 255
    np.testing.assert_array_equal(q[:, -1], 1)  # unit weights stay exact
    # unbiased: the sum over many rows is close to the exact sum
    rel = np.abs(q[:, :-1].sum(0) * scales[:-1] - channels.sum(0)) / channels.sum(0)
    assert rel.max() < 0.01


def test_histogram_matches_numpy_reference_and_subtraction_is_exact():
    data, channels, k = _data()
    rows = LocalRows(data, channels, histogram_bits=10, seed=4)
    features = np.arange(data.bins.shape[1], dtype=np.intp)
    offsets = data.cell_offsets
    shape = (offsets[-1], 2 * k + 1)  # compact: each feature's value bins, its missing bin
    root = rows.root()
    parent = rows.histogram(root, rows.sums(root), features, np.empty(shape, rows.hist_dtype))
    left, right = rows.split(root, 2, 10, True)
    small = rows.histogram(left, rows.sums(left), features, np.empty(shape, rows.hist_dtype))
    big = rows.histogram(right, rows.sums(right), features, np.empty(shape, rows.hist_dtype))
    ref = np.zeros(shape, dtype=np.int64)
    for r in rows.rows_of(left):
        for f in features:
            ref[offsets[f] + min(data.bins[r, f], data.layout.n_value_bins[f])] += \
                rows.quantized[r]
    np.testing.assert_array_equal(small, ref)
    np.testing.assert_array_equal(parent - small, big)
    deq = rows.dequantize(small, features, np.zeros(shape))
    np.testing.assert_array_equal(deq, ref * rows.scales)


def _fit_trees(bits, threads, n_trees=3):
    data, channels, k = _data(n=40_000, d=8)
    family = VectorTreeFamily.__new__(VectorTreeFamily)
    family.data, family.n_classes, family.sample_weight = data, k, np.ones(len(channels))
    family.options = VectorTreeOptions(histogram_bits=bits, subsample=0.8)
    family.grower = VectorTreeGrower(data.binner, k, family.options, np.random.RandomState(0))
    with numba_threads(threads):
        return [family.fit(channels * (1 + t)) for t in range(n_trees)]


@pytest.mark.parametrize("bits", [6, 16])
def test_one_and_two_threads_give_the_same_trees(bits):
    one, two = _fit_trees(bits, 1), _fit_trees(bits, 2)
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(a.values, b.values)
        np.testing.assert_array_equal(a.slot_of_row, b.slot_of_row)
        assert a.arrays.feature.tobytes() == b.arrays.feature.tobytes()


def test_leaf_vectors_from_exact_sums_match_float_tree_on_same_splits():
    # with many bits the splits are the float tree's, and the leaf vectors those of its sums
    # up to their rounding (the quantized tree's are exact sums, rounded once)
    flt, qnt = _fit_trees(None, 2, 1)[0], _fit_trees(16, 2, 1)[0]
    assert flt.arrays.feature.tobytes() == qnt.arrays.feature.tobytes()
    np.testing.assert_array_equal(flt.slot_of_row, qnt.slot_of_row)
    np.testing.assert_allclose(flt.values, qnt.values, rtol=1e-12, atol=1e-12)


def test_bad_bits():
    with pytest.raises(ValueError, match="histogram_bits"):
        check_bits(1)
    with pytest.raises(TypeError, match="histogram_bits"):
        check_bits(8.0)


def test_estimator_parameter_reproducible_and_close_to_float():
    from rebelboost import RebelClassifier
    from rebelboost.datasets.bundled import load_pendigits

    d = load_pendigits()  # (bundled with the package: tests read no data from outside it)
    X, y = d.X_train[:2000].astype(float), d.y_train[:2000]
    Xt, yt = d.X_test[:1000].astype(float), d.y_test[:1000]
    a = RebelClassifier(30, histogram_bits=12, random_state=0).fit(X, y)
    b = RebelClassifier(30, histogram_bits=12, random_state=0, n_jobs=1).fit(X, y)
    np.testing.assert_array_equal(a.decision_function(Xt), b.decision_function(Xt))
    f = RebelClassifier(30, random_state=0).fit(X, y)
    assert abs(np.mean(a.predict(Xt) != yt) - np.mean(f.predict(Xt) != yt)) < 0.02
    with pytest.raises(ValueError, match="histogram_bits"):
        RebelClassifier(3, histogram_bits=1).fit(X, y)


def test_sparse_layout_and_fractional_weights_reproducible():
    # mostly-zero rows take the sparse layout (float cells of exact integer sums);
    # fractional sample weights quantize the count channel too; GOSS amplifies channels
    from rebelboost import RebelClassifier
    rng = np.random.RandomState(0)
    X = np.where(rng.rand(3000, 12) < 0.85, 0.0, rng.randn(3000, 12))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0)
    w = rng.uniform(0.5, 2.0, len(y))
    fits = [RebelClassifier(15, histogram_bits=8, subsample=0.5, sampling="goss",
                            random_state=3, n_jobs=j).fit(X, y, sample_weight=w)
            for j in (1, 2)]
    np.testing.assert_array_equal(fits[0].decision_function(X), fits[1].decision_function(X))
    assert np.mean(fits[0].predict(X) == y) > 0.8
