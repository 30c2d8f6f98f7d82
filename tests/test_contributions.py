"""Exact contributions (path-dependent TreeSHAP) against brute-force Shapley values."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebelboost import AdaBoostMHClassifier, RebelClassifier, load_model
from rebelboost.contributions import ContributionsUnavailable, contributions
from rebelboost.engine.early_exit import explicit_trees
from rebelboost.engine.model import AdditiveModel
from rebelboost.learners.leaf_tree import LeafTreeArrays
from rebelboost.tree_tables import leaf_covers


def _data(n=300, d=5, k=3, seed=0, nan_every=6):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] + X[:, 2] > 0.5).astype(int) * (k - 2)
    y = np.minimum(y + (X[:, 3] > 1.2), k - 1)
    if nan_every:
        X[::nan_every, 1] = np.nan
    return X, y


def brute_force(model: AdditiveModel, x: np.ndarray) -> np.ndarray:
    """(d + 1, K) Shapley values by enumerating feature subsets, with the path-dependent value
    function ``v(S) = E[H(x) | x_S]`` read from the raw trees (pass nodes and all)."""
    feature, threshold, missing_left, left, right = explicit_trees(model.learners)
    covers, values = model.covers, model.values
    d, k = x.shape[0], values.shape[2]

    def cover(t, child):
        if child < 0:
            return covers[t, ~child]
        return cover(t, left[t, child]) + cover(t, right[t, child])

    def value(t, child, subset):
        if child < 0:
            return values[t, ~child]
        f = feature[t, child]
        if f < 0:
            return value(t, left[t, child], subset)
        if f in subset:
            v = x[f]
            if np.isnan(threshold[t, child]):  # a categorical node: its set of codes
                go_left = model.learners.goes_left(t, child, v)
            else:
                go_left = missing_left[t, child] if np.isnan(v) else v <= threshold[t, child]
            return value(t, left[t, child] if go_left else right[t, child], subset)
        whole = cover(t, child)
        share = cover(t, left[t, child]) / whole if whole > 0 else 0.5
        return (share * value(t, left[t, child], subset)
                + (1 - share) * value(t, right[t, child], subset))

    def v(subset):
        return sum((value(t, 0, subset) for t in range(len(model.learners))), np.zeros(k))

    memo = {s: v(set(s)) for r in range(d + 1) for s in itertools.combinations(range(d), r)}
    phi = np.zeros((d + 1, k))
    for i in range(d):
        others = [j for j in range(d) if j != i]
        for r in range(d):
            weight = math.factorial(r) * math.factorial(d - r - 1) / math.factorial(d)
            for s in itertools.combinations(others, r):
                phi[i] += weight * (memo[tuple(sorted((*s, i)))] - memo[s])
    phi[d] = memo[()]
    return phi


@pytest.mark.parametrize("learner", ["vector_tree", "tree", "stump"])
def test_fitted_models_match_brute_force(learner):
    X, y = _data(d=5)
    params = {"max_leaves": 8} if learner == "vector_tree" else {"max_depth": 3}
    if learner == "stump":
        params = {}
    model = RebelClassifier(12, weak_learner=learner, random_state=0, **params).fit(X, y)
    rows = X[:6]  # row 0 has a missing value
    got = model.contributions(rows)
    for x, phi in zip(rows, got, strict=True):
        np.testing.assert_allclose(phi, brute_force(model.model_, x), rtol=0, atol=1e-12)


@pytest.mark.parametrize("learner", ["vector_tree", "tree", "stump"])
def test_contributions_sum_to_the_scores(learner):
    X, y = _data(n=400, d=6, k=4, seed=1)
    model = RebelClassifier(25, weak_learner=learner, random_state=0).fit(X, y)
    phi = model.contributions(X)
    assert phi.shape == (400, 7, 4)
    scores = model.decision_function(X)
    np.testing.assert_allclose(phi.sum(axis=1), scores, rtol=1e-9,
                               atol=1e-9 * np.abs(scores).max())
    # the bias is the cover-weighted mean score: on the training rows, their mean score
    np.testing.assert_allclose(phi[0, -1], scores.mean(axis=0), atol=1e-9)
    np.testing.assert_array_equal(phi[:, -1], np.broadcast_to(phi[0, -1], (400, 4)))


def test_two_classes_and_other_boosters():
    X, y = _data(k=2, seed=2)
    model = RebelClassifier(10, random_state=0).fit(X, y)
    phi = model.contributions(X)
    np.testing.assert_allclose(phi[:, :, 1].sum(1) - phi[:, :, 0].sum(1),
                               model.decision_function(X), atol=1e-10)
    X, y = _data(k=3, seed=3)
    mh = AdaBoostMHClassifier(10, max_depth=2).fit(X, y)
    np.testing.assert_allclose(mh.contributions(X).sum(1), mh.decision_function(X), atol=1e-10)


def test_features_the_model_never_reads_get_zero():
    X, y = _data(d=6, seed=4)
    X[:, 5] = 0.0  # constant: never split on
    model = RebelClassifier(10, random_state=0).fit(X, y)
    assert np.all(model.contributions(X)[:, 5] == 0.0)


def test_covers_survive_the_model_file(tmp_path):
    X, y = _data()
    model = RebelClassifier(8, random_state=0).fit(X, y)
    model.save(tmp_path / "m.json")
    again = load_model(tmp_path / "m.json")
    np.testing.assert_array_equal(again.model_.covers, model.model_.covers)
    np.testing.assert_array_equal(again.contributions(X), model.contributions(X))


def test_covers_are_the_training_weight_per_leaf():
    X, y = _data()
    w = np.random.RandomState(0).uniform(0.5, 2.0, len(y))
    model = RebelClassifier(5, random_state=0).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(model.model_.covers.sum(axis=1), w.sum())
    leaves = model.model_.learners.leaves(X)
    np.testing.assert_allclose(model.model_.covers[2, leaves[7, 2]], w[leaves[:, 2]
                               == leaves[7, 2]].sum())
    # routed in blocks of a few rows (as a wide or long training set is): the same covers
    blocked = leaf_covers(model.model_.learners, X, w, block_cells=X.shape[1] * 64)
    np.testing.assert_allclose(blocked, model.model_.covers, rtol=1e-12)


@pytest.mark.parametrize("params, callbacks", [
    ({}, None),  # the one-call loop (small data)
    ({"n_estimators": 6}, [lambda info: None]),  # the Python loop (a callback sees stages)
    ({"n_estimators": 6, "subsample": 0.7}, None),  # rows outside the sample routed
    ({"n_estimators": 6, "weak_learner": "tree"}, None),
    ({"n_estimators": 6, "weak_learner": "stump"}, None),
])
def test_the_fits_covers_are_its_training_rows_routed_again(params, callbacks, monkeypatch):
    """The booster sums each tree's covers from its training rows' leaves (the fit routes
    no rows after training); they must be what routing those rows through the fitted trees
    gives, bit for bit (NaN, rounded values and row weights included)."""
    def no_routing(*args, **kwargs):
        raise AssertionError("the fit routed its rows again for the covers")

    monkeypatch.setattr("rebelboost.ensemble._base.leaf_covers", no_routing)
    X, y = _data(n=400, seed=5, nan_every=4)
    X = np.round(X, 1)
    w = np.random.RandomState(1).uniform(0.5, 2.0, len(y))
    model = RebelClassifier(random_state=0, **params).fit(X, y, sample_weight=w,
                                                         callbacks=callbacks)
    routed = leaf_covers(model.model_.learners, X, w)
    assert model.model_.covers.shape == routed.shape
    np.testing.assert_array_equal(model.model_.covers, routed)


def test_models_without_exact_contributions_say_why():
    X, y = _data(nan_every=0)
    sim = RebelClassifier(5, weak_learner="similarity", random_state=0).fit(X, y)
    with pytest.raises(ContributionsUnavailable, match="similarit.*no exact split"):
        sim.contributions(X)
    model = RebelClassifier(5, random_state=0).fit(X, y)
    model.model_.covers = None  # as loaded from a format-2 file
    with pytest.raises(ContributionsUnavailable, match="before format 3"):
        model.contributions(X)


def test_golden_format_1_file_refuses_rather_than_guesses():
    from pathlib import Path

    old = load_model(Path(__file__).parent / "data" / "golden" / "rebel_tree2-vowel.json.gz")
    with pytest.raises(ContributionsUnavailable, match="holds no training covers"):
        old.contributions(np.zeros((1, old.n_features_in_)))


@st.composite
def random_trees(draw):
    """A few random leaf-wise trees over 4 features (features repeat on paths), with random
    covers (some zero) and 3-class leaf values."""
    n_trees, d, k = draw(st.integers(1, 3)), 4, 3
    max_leaves = 7
    m = max_leaves - 1
    arrays = [np.zeros((n_trees, m), np.int32), np.zeros((n_trees, m)),
              np.zeros((n_trees, m), bool), np.full((n_trees, m), -1, np.int32),
              np.full((n_trees, m), -1, np.int32)]
    feature, threshold, missing_left, left, right = arrays
    for t in range(n_trees):
        n_splits = draw(st.integers(1, m))
        open_slots = [(0, "left"), (0, "right")]  # children still leaves
        for node in range(1, n_splits):
            parent, side = open_slots.pop(draw(st.integers(0, len(open_slots) - 1)))
            (left if side == "left" else right)[t, parent] = node
            open_slots += [(node, "left"), (node, "right")]
        for leaf, (parent, side) in enumerate(open_slots):
            (left if side == "left" else right)[t, parent] = ~leaf
        for node in range(n_splits):
            feature[t, node] = draw(st.integers(0, d - 1))
            threshold[t, node] = draw(st.sampled_from([-1.0, 0.0, 1.0]))
            missing_left[t, node] = draw(st.booleans())
        for node in range(n_splits, m):
            feature[t, node] = -1
    trees = LeafTreeArrays(*arrays)
    covers = np.array(draw(st.lists(st.sampled_from([0.0, 1.0, 2.5, 7.0]),
                                    min_size=n_trees * max_leaves,
                                    max_size=n_trees * max_leaves))).reshape(n_trees, -1)
    covers[:, 0] += 1.0  # some training weight in every tree
    values = np.array(draw(st.lists(st.floats(-3, 3), min_size=n_trees * max_leaves * k,
                                    max_size=n_trees * max_leaves * k)))
    model = AdditiveModel(trees, values.reshape(n_trees, max_leaves, k),
                          np.array([n_trees]), covers)
    rows = np.array(draw(st.lists(st.sampled_from([-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0,
                                                   np.nan]), min_size=2 * d, max_size=2 * d)))
    return model, rows.reshape(2, d)


@settings(max_examples=60, deadline=None)
@given(random_trees())
def test_random_trees_match_brute_force(case):
    model, rows = case
    got = contributions(model, rows)
    for x, phi in zip(rows, got, strict=True):
        np.testing.assert_allclose(phi, brute_force(model, x), rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.sum(axis=1), model.scores(rows), rtol=0, atol=1e-12)


def test_categorical_splits_match_brute_force():
    """TreeSHAP through nodes that send a set of category codes left."""
    import pandas as pd

    rng = np.random.default_rng(3)
    n = 400
    colour = rng.integers(0, 7, n)
    X = pd.DataFrame({"colour": pd.Categorical(np.array(list("abcdefg"))[colour]),
                      "u": rng.normal(size=n), "v": rng.normal(size=n)})
    X.loc[::9, "colour"] = np.nan
    y = (colour % 3 + (X["u"] > 0.5)) % 3
    model = RebelClassifier(6, max_leaves=6, random_state=0).fit(X, y)
    assert np.isnan(model.model_.learners.threshold).any()
    encoded = model._encode(X).to_numpy()
    for x in encoded[:12]:
        phi = contributions(model.model_, x[None])[0]
        np.testing.assert_allclose(phi, brute_force(model.model_, x), rtol=0, atol=1e-12)
