"""AdaBoost.MH with factorized stumps / Hamming trees (Kégl 2014, Appendices B and C)."""

from __future__ import annotations

import numpy as np
import pytest
from adaboost_reference import reference_adaboost

from rebelboost.binning import Binner
from rebelboost.ensemble.adaboost_mh import AdaBoostMHClassifier
from rebelboost.learners.hamming_tree import factorized_learner
from rebelboost.losses.adaboost_mh import AdaBoostMHLoss, initial_weights
from rebelboost.search.binned import BinnedData


def _problem(seed, n=60, d=4, k=4, n_values=7):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, n_values, size=(n, d)).astype(float) + rng.normal(0, 0.01, (1, d))
    codes = rng.integers(0, k, n)
    codes[:k] = np.arange(k)
    sw = rng.uniform(0.2, 2.0, n)
    scores = rng.normal(0, 0.7, (n, k))
    return X, codes, sw, scores


def test_initial_weights_follow_the_paper():
    codes = np.array([0, 2, 1, 2])
    w = initial_weights(codes, 3, np.ones(4))
    expected = np.full((4, 3), 1 / (2 * 2))
    expected[np.arange(4), codes] = 0.5
    np.testing.assert_allclose(w, expected / 4)
    assert w.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(8))
def test_stump_search_equals_brute_force_and_appendix_c(seed):
    X, codes, sw, scores = _problem(seed)
    k = 4
    binner = Binner(255)
    bins = binner.fit_transform(X)
    loss = AdaBoostMHLoss(codes, k, sw)
    w = loss.weights(scores)
    learner = factorized_learner(BinnedData(binner, bins), loss, w, depth=1)

    # Brute force over every stump phi = (x_j > t ? +1 : -1) and the constant phi = +1.
    y = loss.y
    best_edge, best = np.abs((w * y).sum(axis=0)).sum(), None  # constant classifier first
    for j in range(X.shape[1]):
        v = np.unique(X[:, j])
        for t in v[:-1] + (v[1:] - v[:-1]) / 2:
            phi = np.where(X[:, j] <= t, -1.0, 1.0)
            gamma = (w * y * phi[:, None]).sum(axis=0)  # class-wise edges (9) with v = 1
            edge = np.abs(gamma).sum()  # (10) with the votes (12)
            if edge > best_edge * (1 + 1e-9):
                best_edge, best = edge, (j, t)
    assert learner.edge == pytest.approx(best_edge, rel=1e-10)
    if best is None:
        assert learner.tree.feature[0, 0] == -1
    else:
        assert learner.tree.feature[0, 0] == best[0]
        assert learner.tree.threshold[0, 0] == pytest.approx(best[1])
    # Votes (12), coefficient (11), and the risk factor Z = sqrt(1 - gamma^2).
    gamma = (w * y * learner.phi[:, None]).sum(axis=0)
    np.testing.assert_array_equal(learner.votes, np.where(gamma >= 0, 1.0, -1.0))
    g = learner.edge
    assert learner.alpha == pytest.approx(0.5 * np.log((1 + g) / (1 - g)), rel=1e-9)
    before = loss.risk(scores)
    after = loss.risk(scores + learner.alpha * learner.phi[:, None] * learner.votes)
    assert after / before == pytest.approx(np.sqrt(1 - g**2), rel=1e-9)
    # Appendix B's reweighting: w' = w exp(-h y) / Z.
    h = learner.alpha * learner.phi[:, None] * learner.votes
    w_next = w * np.exp(-h * y)
    np.testing.assert_allclose(
        loss.weights(scores + h), w_next / w_next.sum(), rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("seed", range(4))
def test_hamming_tree_edge_at_least_the_stump_edge(seed):
    X, codes, sw, scores = _problem(seed, n=120)
    binner = Binner(255)
    bins = binner.fit_transform(X)
    loss = AdaBoostMHLoss(codes, 4, sw)
    w = loss.weights(scores)
    stump = factorized_learner(BinnedData(binner, bins), loss, w, depth=1)
    tree = factorized_learner(BinnedData(binner, bins), loss, w, depth=3)
    assert tree.edge >= stump.edge * (1 - 1e-12)
    assert tree.tree.feature[0, 0] == stump.tree.feature[0, 0]  # the root is the stump
    # The stored tree reproduces phi on the training rows.
    np.testing.assert_array_equal(tree.tree.outputs(X)[:, 0], tree.phi)


@pytest.mark.parametrize(
    "params",
    [{}, {"weak_learner": "tree", "max_depth": 2}, {"factorized": False},
     {"factorized": False, "weak_learner": "tree", "max_depth": 2}],
)
def test_training_risk_never_increases(params):
    X, codes, sw, _ = _problem(3, n=150, d=5, k=5, n_values=20)
    model = AdaBoostMHClassifier(25, n_jobs=1, **params).fit(X, codes, sample_weight=sw)
    risk = np.concatenate([[1.0], model.train_loss_])
    assert np.all(np.diff(risk) <= 1e-12 * risk[:-1])
    assert risk[-1] < 1.0
    assert len(list(model.staged_predict(X))) == 25
    last = list(model.staged_decision_function(X))[-1]
    np.testing.assert_allclose(last, model.decision_function(X))


def test_binary_case_is_discrete_adaboost():
    """K = 2: the factorized votes are always (v, -v), the edge is the binary edge and alpha is
    AdaBoost's, so the predictions are discrete AdaBoost's (with stumps and constant learners).
    Exact when no two learners tie on the edge (continuous features, distinct values <=
    max_bins so the binned thresholds are all the midpoints) and no test score is 0."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = (X[:, 0] + 0.7 * X[:, 1] + rng.normal(0, 0.8, 80) > 0).astype(int)
    Xt = rng.normal(size=(200, 3))
    model = AdaBoostMHClassifier(15, n_jobs=1).fit(X, y)
    np.testing.assert_array_equal(model.votes_[:, 0], -model.votes_[:, 1])
    reference = reference_adaboost(X, y, 15)
    np.testing.assert_array_equal(model.predict(Xt), (reference(Xt) > 0).astype(int))
    np.testing.assert_allclose(model.decision_function(Xt), 2 * reference(Xt), rtol=1e-8,
                               atol=1e-10)


def test_string_labels_save_load_and_errors(tmp_path):
    X, codes, _, _ = _problem(1, n=80)
    labels = np.array(["a", "b", "c", "d"])[codes]
    model = AdaBoostMHClassifier(10, weak_learner="tree", n_jobs=1).fit(X, labels)
    assert set(model.predict(X)) <= set(labels)
    path = tmp_path / "mh.json.gz"
    model.save(path)
    loaded = AdaBoostMHClassifier.load(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.votes_, model.votes_)
    with pytest.raises(ValueError, match="single class"):
        AdaBoostMHClassifier(3).fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="non-negative"):
        AdaBoostMHClassifier(3).fit(X, codes, sample_weight=-np.ones(len(X)))
    with pytest.raises(ValueError):
        AdaBoostMHClassifier(0).fit(X, codes)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :2])
