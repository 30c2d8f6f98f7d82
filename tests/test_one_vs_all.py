"""One-vs-all discrete AdaBoost, and scikit-learn's checks on the three boosters."""

from __future__ import annotations

import numpy as np
import pytest
from adaboost_reference import reference_adaboost
from sklearn.utils.estimator_checks import parametrize_with_checks

from rebelboost.ensemble.adaboost_mh import AdaBoostMHClassifier
from rebelboost.ensemble.mcboost import MCBoostClassifier
from rebelboost.ensemble.one_vs_all import OneVsAllAdaBoostClassifier


def _data(seed, n=150, k=4, d=5):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 1.5, (k, d))
    codes = rng.integers(0, k, n)
    codes[:k] = np.arange(k)
    return centers[codes] + rng.normal(size=(n, d)), codes


def test_each_class_loss_never_increases():
    X, codes = _data(0)
    sw = np.random.default_rng(1).uniform(0.1, 3, len(codes))
    model = OneVsAllAdaBoostClassifier(20, n_jobs=1).fit(X, codes, sample_weight=sw)
    loss = np.vstack([np.ones(4), model.class_train_loss_])
    assert np.all(np.diff(loss, axis=0) <= 1e-12 * loss[:-1])
    assert model.trees_.feature.shape[0] == 4 * 20
    assert model.score(X, codes) > 0.8
    assert len(list(model.staged_predict(X))) == 20


def test_each_class_is_the_reference_adaboost():
    """Class k's scores are discrete AdaBoost on k-vs-rest (exact absent ties)."""
    X, codes = _data(2, n=90, k=3)
    Xt, _ = _data(3, n=100, k=3)
    model = OneVsAllAdaBoostClassifier(8, n_jobs=1).fit(X, codes)
    scores = model._scores(Xt)
    for c in range(3):
        ref = reference_adaboost(X, (codes == c).astype(int), 8)
        np.testing.assert_allclose(scores[:, c], ref(Xt), rtol=1e-8, atol=1e-10)


def test_binary_case_is_discrete_adaboost():
    """K = 2: the two problems mirror each other (F_0 = -F_1), so the prediction is AdaBoost's
    on class 1 (exact when no two learners tie on the edge and no test score is 0)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = (X[:, 0] + 0.7 * X[:, 1] + rng.normal(0, 0.8, 80) > 0).astype(int)
    Xt = rng.normal(size=(200, 3))
    model = OneVsAllAdaBoostClassifier(15, n_jobs=1).fit(X, y)
    scores = model._scores(Xt)
    np.testing.assert_array_equal(scores[:, 0], -scores[:, 1])
    reference = reference_adaboost(X, y, 15)
    np.testing.assert_array_equal(model.predict(Xt), (reference(Xt) > 0).astype(int))


def test_save_load(tmp_path):
    X, codes = _data(4, n=60)
    X[::7, 1] = np.nan
    model = OneVsAllAdaBoostClassifier(5, n_jobs=1).fit(X, codes)
    model.save(tmp_path / "ova.json")
    loaded = OneVsAllAdaBoostClassifier.load(tmp_path / "ova.json")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    with pytest.raises(ValueError, match="not a rebelboost model file"):
        (tmp_path / "bad.json").write_text("{}")
        OneVsAllAdaBoostClassifier.load(tmp_path / "bad.json")


# Checks expected to fail, with the reason (none so far).
EXPECTED_FAILURES: dict[str, str] = {}


@parametrize_with_checks(
    [
        AdaBoostMHClassifier(6, n_jobs=1),
        AdaBoostMHClassifier(4, weak_learner="tree", factorized=False, n_jobs=1),
        MCBoostClassifier(6, algorithm="cd", n_jobs=1),
        MCBoostClassifier(4, algorithm="gd", max_depth=2, n_jobs=1),
        OneVsAllAdaBoostClassifier(3, n_jobs=1),
    ],
    expected_failed_checks=lambda estimator: EXPECTED_FAILURES,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
