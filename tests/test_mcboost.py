"""MCBoost (Saberian and Vasconcelos 2011): codewords, loss, CD- and GD-MCBoost."""

from __future__ import annotations

import numpy as np
import pytest
from adaboost_reference import reference_adaboost

from rebelboost.ensemble.mcboost import MCBoostClassifier
from rebelboost.losses.mcboost import MCBoostLoss, line_search, simplex_codewords


@pytest.mark.parametrize("k", range(2, 31))
def test_simplex_codewords_are_a_regular_simplex(k):
    y = simplex_codewords(k)
    assert y.shape == (k, k - 1)
    np.testing.assert_allclose(np.linalg.norm(y, axis=1), 1.0, rtol=1e-12)
    dist = np.linalg.norm(y[:, None] - y[None], axis=2)[~np.eye(k, dtype=bool)]
    np.testing.assert_allclose(dist, dist[0], rtol=1e-12)
    np.testing.assert_allclose(y.sum(axis=0), 0.0, atol=1e-12)  # centred at the origin
    gram = y @ y.T
    np.testing.assert_allclose(gram[~np.eye(k, dtype=bool)], -1.0 / (k - 1), atol=1e-12)


def test_binary_codewords_and_loss_are_adaboosts():
    np.testing.assert_array_equal(simplex_codewords(2), [[1.0], [-1.0]])
    codes = np.array([0, 1, 1])
    f = np.array([0.3, -1.2, 0.5])
    loss = MCBoostLoss(codes, simplex_codewords(2), np.ones(3))
    scores = np.column_stack([f, -f])
    y = np.where(codes == 0, 1.0, -1.0)
    assert loss.risk(scores) == pytest.approx(np.mean(1 + np.exp(-y * f)))


def test_loss_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    k, n = 4, 7
    cw = simplex_codewords(k)
    codes = rng.integers(0, k, n)
    sw = rng.uniform(0.5, 2, n)
    f = rng.normal(size=(n, k - 1))
    loss = MCBoostLoss(codes, cw, sw)
    risk = loss.risk(f @ cw.T)
    terms = loss.terms(f @ cw.T)
    scale = risk / (terms.sum())  # terms are rescaled; the gradient scales with them
    grad = loss.gradient(terms) * scale
    eps = 1e-6
    for i in range(n):
        for j in range(k - 1):
            step = np.zeros_like(f)
            step[i, j] = eps
            num = (loss.risk((f + step) @ cw.T) - loss.risk((f - step) @ cw.T)) / (2 * eps)
            assert -num == pytest.approx(grad[i, j], rel=1e-5, abs=1e-9)


def test_line_search_finds_the_minimum():
    rng = np.random.default_rng(1)
    a, b = rng.uniform(0, 1, 50), rng.normal(0, 1, 50)
    alpha = line_search(a, b)
    d1 = (a * b * np.exp(alpha * b)).sum()
    assert abs(d1) < 1e-10
    # one-sided: the minimum is at the bound, and never above the value at 0
    assert line_search(np.ones(3), np.array([1.0, 2.0, 0.5])) == -30.0
    assert line_search(np.ones(2), np.zeros(2)) == 0.0


def _data(seed, n=150, k=4, d=5):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 1.5, (k, d))
    codes = rng.integers(0, k, n)
    codes[:k] = np.arange(k)
    X = centers[codes] + rng.normal(size=(n, d))
    return X, codes


@pytest.mark.parametrize(
    "params",
    [{"algorithm": "cd"}, {"algorithm": "cd", "max_depth": 2},
     {"algorithm": "gd"}, {"algorithm": "gd", "max_depth": 2}],
)
def test_risk_never_increases(params):
    X, codes = _data(0)
    sw = np.random.default_rng(2).uniform(0.1, 3, len(codes))
    model = MCBoostClassifier(30, n_jobs=1, **params).fit(X, codes, sample_weight=sw)
    risk = np.concatenate([[4.0], model.train_loss_])  # K at f = 0
    assert np.all(np.diff(risk) <= 1e-12 * risk[:-1])
    assert risk[-1] < 2.0
    assert model.score(X, codes) > 0.8
    # Stored trees and leaf scores reproduce the training-time scores' predictions.
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(model.classes_[proba.argmax(axis=1)], model.predict(X))
    staged = list(model.staged_decision_function(X))
    assert len(staged) == 30
    np.testing.assert_allclose(staged[-1], model.decision_function(X))


def test_cd_cycles_components_and_gd_leaves_are_codewords():
    X, codes = _data(1)
    cd = MCBoostClassifier(9, algorithm="cd", n_jobs=1).fit(X, codes)
    np.testing.assert_array_equal(cd.components_, np.arange(9) % 3)
    gd = MCBoostClassifier(5, algorithm="gd", max_depth=2, n_jobs=1).fit(X, codes)
    leaf = gd.trees_.leaf_value
    np.testing.assert_array_equal(leaf, np.round(leaf))
    gram = gd.codewords_ @ gd.codewords_.T
    for t in range(5):
        np.testing.assert_allclose(
            gd.leaf_scores_[t], gd.alphas_[t] * gram[leaf[t].astype(int)], rtol=1e-12)


@pytest.mark.parametrize("algorithm", ["cd", "gd"])
def test_binary_case_is_discrete_adaboost(algorithm):
    """K = 2: codewords +-1, loss 1 + exp(-y f), weights y exp(-y f); a free-sign stump (or a
    depth-1 codeword tree) maximising sum g w is AdaBoost's best stump or constant, and the exact
    line search gives AdaBoost's alpha. Same predictions when no two learners tie on the edge
    (continuous features, distinct values <= max_bins) and no test score is 0."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = (X[:, 0] + 0.7 * X[:, 1] + rng.normal(0, 0.8, 80) > 0).astype(int)
    Xt = rng.normal(size=(200, 3))
    model = MCBoostClassifier(15, algorithm=algorithm, n_jobs=1).fit(X, y)
    # class 0 has codeword +1, so f = s_0 and AdaBoost's labels are y' = 1 - y
    reference = reference_adaboost(X, 1 - y, 15)
    np.testing.assert_array_equal(model.predict(Xt), (reference(Xt) < 0).astype(int))
    np.testing.assert_allclose(model.decision_function(Xt), -2 * reference(Xt), rtol=1e-7,
                               atol=1e-9)


def test_save_load_and_errors(tmp_path):
    X, codes = _data(2, n=80)
    model = MCBoostClassifier(6, algorithm="gd", max_depth=2, n_jobs=1).fit(X, codes + 10)
    path = tmp_path / "mc.json"
    model.save(path)
    loaded = MCBoostClassifier.load(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_allclose(loaded.codewords_, model.codewords_)
    with pytest.raises(ValueError, match="AdaBoostMHClassifier|MCBoostClassifier"):
        from rebelboost.ensemble.adaboost_mh import AdaBoostMHClassifier

        AdaBoostMHClassifier.load(path)
    with pytest.raises(ValueError):
        MCBoostClassifier(algorithm="xx").fit(X, codes)
    with pytest.raises(ValueError, match="NaN|infinity"):
        MCBoostClassifier(3).fit(X, np.where(codes == 0, np.nan, codes))
