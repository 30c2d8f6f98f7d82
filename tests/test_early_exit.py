"""Exact early exit: the labels of full evaluation, bit for bit, ties and rounding included."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_blobs, make_classification

from rebelboost import (
    AdaBoostMHClassifier,
    MCBoostClassifier,
    OneVsAllAdaBoostClassifier,
    RebelClassifier,
)
from rebelboost.engine import AdditiveModel
from rebelboost.engine.early_exit import reachable_leaves
from rebelboost.learners.category_sets import masks_to_bitsets
from rebelboost.learners.leaf_tree import LeafTreeArrays
from rebelboost.learners.tree import TreeArrays


@st.composite
def tree_models(draw):
    """A random tree model and rows: few distinct values (ties), mixed magnitudes (rounding),
    pass nodes, always-true tests, NaN rows, several learners per stage."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_trees, depth = draw(st.integers(1, 60)), draw(st.integers(1, 3))
    k, d, n = draw(st.integers(2, 6)), draw(st.integers(1, 4)), draw(st.integers(1, 150))
    n_internal = 2**depth - 1
    feature = rng.integers(-1, d, (n_trees, n_internal)).astype(np.int32)
    threshold = np.round(rng.standard_normal((n_trees, n_internal)), 1)
    threshold[rng.random(threshold.shape) < 0.1] = np.inf
    missing_left = rng.random((n_trees, n_internal)) < 0.5
    trees = TreeArrays(feature, threshold, missing_left, np.ones((n_trees, 2**depth)))
    kind = draw(st.sampled_from(["ties", "scales", "normal", "dominant"]))
    shape = (n_trees, 2**depth, k)
    if kind == "ties":  # few distinct values: exact ties between classes are common
        values = rng.integers(-2, 3, shape) * 0.5
    elif kind == "scales":  # magnitudes far apart: the rounding of full sums decides
        values = rng.standard_normal(shape) * 10.0 ** rng.integers(-17, 17, shape)
    elif kind == "dominant":  # a few big learners first, then small ones: many early exits
        values = rng.standard_normal(shape) * np.geomspace(100, 1e-3, n_trees)[:, None, None]
    else:
        values = rng.standard_normal(shape)
    n_stages = draw(st.integers(1, n_trees))
    ends = np.sort(rng.choice(np.arange(1, n_trees), n_stages - 1, replace=False)) \
        if n_stages > 1 else np.zeros(0, np.int64)
    model = AdditiveModel(trees, values, np.append(ends, n_trees).astype(np.int64))
    X = np.round(rng.standard_normal((n, d)), 1)
    X[rng.random((n, d)) < 0.1] = np.nan
    return model, X


@st.composite
def category_tree_models(draw):
    """A random stack of leaf-wise trees whose nodes test thresholds or sets of category codes
    (codes beyond every set, and NaN, included), and rows of codes and values."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_trees, n_internal = draw(st.integers(1, 40)), draw(st.integers(1, 7))
    k, n, n_codes = draw(st.integers(2, 5)), draw(st.integers(1, 120)), draw(st.integers(1, 70))
    d, n_categorical = 3, draw(st.integers(1, 3))  # features 0 .. n_categorical - 1: codes
    shape = (n_trees, n_internal)
    feature = rng.integers(0, d, shape).astype(np.int32)
    threshold = np.round(rng.standard_normal(shape), 1)
    categorical = feature < n_categorical
    threshold[categorical] = np.nan
    masks = rng.random((n_trees * n_internal, n_codes)) < rng.random()
    words = masks_to_bitsets(masks).reshape(n_trees, n_internal, -1)
    words[~categorical] = 0
    left, right = np.empty(shape, np.int32), np.empty(shape, np.int32)
    for t in range(n_trees):  # grown by splitting a random open side at each new node
        sides = [(0, left), (0, right)]
        for node in range(1, n_internal):
            parent, side = sides.pop(int(rng.integers(len(sides))))
            side[t, parent] = node
            sides += [(node, left), (node, right)]
        for leaf, (parent, side) in enumerate(sides):
            side[t, parent] = ~leaf
    trees = LeafTreeArrays(feature, threshold, rng.random(shape) < 0.5, left, right, words)
    values = (rng.standard_normal((n_trees, n_internal + 1, k))
              * np.geomspace(10, 1e-2, n_trees)[:, None, None])  # (early exits are common)
    model = AdditiveModel(trees, values, np.arange(1, n_trees + 1, dtype=np.int64))
    X = np.round(rng.standard_normal((n, d)), 1)
    X[:, :n_categorical] = rng.integers(0, n_codes + 3, (n, n_categorical))
    X[rng.random((n, d)) < 0.1] = np.nan
    return model, X


def _check(model: AdditiveModel, X: np.ndarray, start: int, stop, every: int) -> np.ndarray:
    codes, used = model.predict_codes(X, start, stop, "exact", every)
    expected = np.argmax(model.scores(X, start, stop), axis=1)
    np.testing.assert_array_equal(codes, expected)
    t0, t1 = model.learner_range(start, stop)
    assert np.all((used >= 0) & (used <= t1 - t0))
    return used


@settings(max_examples=400, deadline=None)
@given(tree_models(), st.sampled_from([1, 2, 3, 7]), st.data())
def test_exact_exit_labels_equal_full_evaluation(case, every, data):
    model, X = case
    _check(model, X, 0, None, every)
    start = data.draw(st.integers(0, model.n_stages))
    stop = data.draw(st.integers(start, model.n_stages))
    _check(model, X, start, stop, every)


@settings(max_examples=200, deadline=None)
@given(category_tree_models(), st.sampled_from([1, 2, 5]))
def test_exact_exit_through_categorical_nodes(case, every):
    """Trees with sets of category codes exit exactly too (their rows routed by the sets)."""
    model, X = case
    _check(model, X, 0, None, every)
    _check(model, X, 1, None, every)


def test_the_margin_keeps_a_tie_made_by_rounding():
    """Class 1 leads by one ulp of 1 and class 0 can gain 0.75 ulp: exactly, class 1 wins, but
    full evaluation rounds class 0 up to a tie, which argmax gives to class 0. The margin stops
    the exit the bound alone would allow."""
    ulp = 2.0**-52
    trees = TreeArrays(np.full((2, 1), -1, np.int32), np.zeros((2, 1)), np.zeros((2, 1), bool),
                       np.ones((2, 2)))
    values = np.zeros((2, 2, 2))
    values[0, :] = [1.0 + ulp, 1.0 + 2 * ulp]
    values[1, :, 0] = 0.75 * ulp
    model = AdditiveModel(trees, values, np.array([2]))
    codes, used = model.predict_codes(np.zeros((1, 1)), early_exit="exact", check_every=1)
    assert codes[0] == np.argmax(model.scores(np.zeros((1, 1))), axis=1)[0] == 0
    assert used[0] == 2


def test_reachable_leaves():
    feature = np.array([[-1, 0, 0], [0, -1, 0]], np.int32)
    threshold = np.array([[0.0, np.inf, 0.0], [np.inf, 0.0, 0.0]])
    missing_left = np.array([[False, True, False], [True, False, False]])
    trees = TreeArrays(feature, threshold, missing_left, np.ones((2, 4)))
    np.testing.assert_array_equal(reachable_leaves(trees),
                                  [[True, False, False, False], [True, False, False, False]])


BOOSTERS = [
    RebelClassifier(25, random_state=0),
    RebelClassifier(25, weak_learner="tree", random_state=0),
    RebelClassifier(25, weak_learner="stump", random_state=0),
    RebelClassifier(25, max_leaves=6, min_samples_leaf=1, random_state=0),
    RebelClassifier(10, weak_learner="similarity"),
    RebelClassifier(25, cost_matrix=np.array([[0, 1, 4], [1, 0, 1], [2, 1, 0]]),
                    cost_strategy="loss"),
    RebelClassifier(25, cost_matrix=np.array([[0, 1, 4], [1, 0, 1], [2, 1, 0]])),
    AdaBoostMHClassifier(25, weak_learner="tree"),
    AdaBoostMHClassifier(8, factorized=False),
    MCBoostClassifier(25),
    MCBoostClassifier(8, algorithm="gd", max_depth=2),
    OneVsAllAdaBoostClassifier(8, max_depth=2),
]
IDS = ["rebel", "rebel-paper-trees", "rebel-stumps", "rebel-small-leaves", "rebel-similarity",
       "rebel-costs", "rebel-posterior", "mh", "mh-unfactorized", "mcboost-cd", "mcboost-gd",
       "ova"]


@pytest.mark.parametrize("estimator", BOOSTERS, ids=IDS)
def test_every_booster_predicts_the_same_labels(estimator):
    X, y = make_classification(500, 6, n_informative=4, n_classes=3, random_state=1)
    X[::17, 2] = np.nan if estimator.get_params().get("weak_learner") != "similarity" else 0.0
    model = estimator.fit(X[:300], y[:300])
    X_test = X[300:]
    full = model.classes_[model._decide(model.model_.scores(X_test))]
    np.testing.assert_array_equal(model.predict(X_test), full)  # the default is unchanged
    np.testing.assert_array_equal(model.predict(X_test, early_exit="exact"), full)
    for row in X_test[:20]:  # one row at a time (the serial kernel)
        assert model.predict(row[None], early_exit="exact")[0] == model.predict(row[None])[0]
    n = model.n_estimators_
    np.testing.assert_array_equal(model.predict(X_test, start=1, stop=n - 1, early_exit="exact"),
                                  model.predict(X_test, start=1, stop=n - 1))


def test_easy_rows_exit_early():
    X, y = make_blobs(600, 4, centers=4, cluster_std=0.5, random_state=0)
    model = RebelClassifier(60, random_state=0).fit(X[:400], y[:400])
    codes, used = model.model_.predict_codes(X[400:], early_exit="exact")
    np.testing.assert_array_equal(model.classes_[codes], model.predict(X[400:]))
    n = len(model.model_.learners)
    assert used.max() < n and used.mean() < 2 / 3 * n  # (60 trees: exits at 32-48, mean 37.6)


def test_unknown_early_exit_is_refused():
    X, y = make_blobs(60, 2, centers=2, random_state=0)
    model = RebelClassifier(3).fit(X, y)
    with pytest.raises(ValueError, match="early_exit"):
        model.predict(X, early_exit="approximate")


def test_float64_rows_skip_validate_data_but_not_its_checks():
    X, y = make_blobs(80, 3, centers=3, random_state=0)
    model = RebelClassifier(5).fit(X, y)
    assert model._check_X(X) is X  # passed as it is
    np.testing.assert_array_equal(model.predict(np.asfortranarray(X)), model.predict(X.tolist()))
    np.testing.assert_array_equal(model.predict(X[:, ::-1][:, ::-1]), model.predict(X))
    bad = X.copy()
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        model.predict(bad)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :2])
    with pytest.raises(ValueError, match="0 sample"):
        model.predict(X[:0])
    named = RebelClassifier(5).fit(pd.DataFrame(X, columns=["a", "b", "c"]), y)
    with pytest.warns(UserWarning, match="feature names"):
        named.predict(X)


@settings(max_examples=100, deadline=None)
@given(tree_models(), st.sampled_from([1.0, 0.99, 0.9, 0.5]), st.sampled_from([1, 3]))
def test_soft_cascade_keeps_the_calibrated_fraction(case, keep, every):
    model, X = case
    cascade = model.calibrate_cascade(X, keep, check_every=every)
    codes, used = model.predict_codes(X, early_exit=cascade)
    full = np.argmax(model.scores(X), axis=1)
    assert np.mean(codes == full) >= keep - 1e-12  # on the calibration rows
    assert np.all(used <= len(model.learners))
    if model.n_stages > 1:
        with pytest.raises(ValueError, match="calibrated"):
            model.predict_codes(X, stop=model.n_stages - 1, early_exit=cascade)


@settings(max_examples=60, deadline=None)
@given(category_tree_models(), st.sampled_from([1.0, 0.9, 0.5]))
def test_soft_cascade_through_categorical_nodes(case, keep):
    model, X = case
    cascade = model.calibrate_cascade(X, keep, check_every=2)
    codes, _ = model.predict_codes(X, early_exit=cascade)
    assert np.mean(codes == np.argmax(model.scores(X), axis=1)) >= keep - 1e-12


def test_categorical_columns_exit_early():
    """An estimator's categorical splits take exact and soft exits: the full labels, from
    fewer learners, unseen and missing categories included."""
    rng = np.random.default_rng(0)
    n = 900
    X = pd.DataFrame({"shop": pd.Categorical(rng.choice([f"s{i}" for i in range(30)], n)),
                      "x": rng.standard_normal(n)})
    y = X["shop"].cat.codes.to_numpy() % 3 + 3 * (X["x"].to_numpy() > 0.5)
    model = RebelClassifier(60, categorical_features=["shop"], random_state=0).fit(
        X[:600], y[:600])
    test = X[600:].copy()
    test["shop"] = test["shop"].cat.add_categories(["new"])
    test.loc[test.index[:20], "shop"] = "new"
    test.loc[test.index[20:40], "shop"] = np.nan
    full = model.predict(test)
    np.testing.assert_array_equal(model.predict(test, early_exit="exact"), full)
    codes, used = model.model_.predict_codes(model.encode(test), early_exit="exact")
    np.testing.assert_array_equal(model.classes_[codes], full)
    assert used.mean() < 0.9 * len(model.model_.learners)
    cascade = model.calibrate_cascade(test[:150], keep=0.98)
    assert np.mean(model.predict(test[150:], early_exit=cascade) == full[150:]) > 0.9


def test_soft_cascade_of_an_estimator_saves_learners():
    X, y = make_classification(1500, 8, n_informative=5, n_classes=4, random_state=0)
    model = RebelClassifier(60, random_state=0).fit(X[:800], y[:800])
    cascade = model.calibrate_cascade(X[800:1100], keep=0.98)
    labels = model.predict(X[1100:], early_exit=cascade)
    assert np.mean(labels == model.predict(X[1100:])) > 0.9
    _, used = model.model_.predict_codes(X[1100:], early_exit=cascade)
    _, exact = model.model_.predict_codes(X[1100:], early_exit="exact")
    assert used.mean() < exact.mean()
