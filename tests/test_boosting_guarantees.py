"""Guarantees of REBEL boosting: monotone training loss, numerics over long runs, the K=2
reduction to discrete AdaBoost, and cost-sensitivity paying off on test data."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from rebelboost import RebelClassifier, mean_cost
from rebelboost.binning import Binner
from rebelboost.losses.rebel import STEP_EPS

# ------------------------------------------------------------ monotone training loss


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(4, 60),
    d=st.integers(1, 3),
    k=st.integers(2, 4),
    nan_rate=st.sampled_from([0.0, 0.1, 0.4]),
    learner=st.sampled_from([("stump", 1), ("tree", 2), ("tree", 3), ("vector_tree", None)]),
    cost_sensitive=st.booleans(),
    weighted=st.booleans(),
    max_bins=st.sampled_from([3, 255]),
)
def test_training_loss_never_increases(seed, n, d, k, nan_rate, learner, cost_sensitive,
                                       weighted, max_bins):
    rng = np.random.default_rng(seed)
    k = min(k, n)
    X = np.round(rng.standard_normal((n, d)), 1)
    X[rng.random((n, d)) < nan_rate] = np.nan
    y = rng.integers(0, k, size=n)
    y[:k] = np.arange(k)
    cost = None
    if cost_sensitive:
        cost = rng.choice([0.0, 0.5, 1.0, 10.0], size=(k, k))
        np.fill_diagonal(cost, 0.0)
        cost[np.arange(k), (np.arange(k) + 1) % k] += 1.0  # no all-zero row
    w = rng.uniform(0.1, 3.0, size=n) if weighted else None
    weak, depth = learner
    model = RebelClassifier(12, weak_learner=weak, max_depth=depth, cost_matrix=cost,
                            cost_strategy="loss", max_bins=max_bins, random_state=0,
                            max_leaves=6, min_samples_leaf=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        model.fit(X, y, sample_weight=w)
    losses = np.concatenate([[model.init_loss_], model.train_loss_])
    assert np.isfinite(losses).all() and np.isfinite(model.model_.values).all()
    assert np.all(np.diff(losses) <= 1e-12 * losses[:-1])
    if cost is None:
        assert_allclose(model.init_loss_, k / 2, rtol=1e-12)
    # The surrogate bounds the (weighted) training cost of the final model.
    cm = model.cost_matrix_
    sw = np.ones(n) if w is None else w
    risk = np.sum(sw * cm[y, model.predict(X)]) / sw.sum()
    assert risk <= losses[-1] * (1 + 1e-9)


# ------------------------------------------------------------------------- numerics


def test_long_training_on_separable_data_stays_finite():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 3, size=(30, 2))
    y = np.floor(X[:, 0]).astype(int)  # three classes separated by thresholds on x0
    cost = 1.0 - np.eye(3)
    cost[2, 0] = 5.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # (a bin per value: the class boundaries are thresholds the stumps can take)
        model = RebelClassifier(2000, weak_learner="stump", cost_matrix=cost,
                                cost_strategy="loss", min_data_in_bin=1, random_state=0)
        model.fit(X, y)
        proba = model.predict_proba(X)
        decision = model.decision_function(X)
        pred = model.predict(X)
    assert model.n_estimators_ == 2000
    assert np.isfinite(model.vectors_).all()
    assert np.all(np.abs(model.vectors_) <= 0.5 * np.log1p(1 / STEP_EPS) + 1e-9)
    assert np.all(np.diff(model.train_loss_) <= 0.0)
    assert model.train_loss_[-1] < 1e-50  # the margins keep growing on separable data
    assert np.isfinite(decision).all() and np.abs(decision).max() > 1e3
    assert np.isfinite(proba).all()
    assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(pred, y)
    assert np.isfinite(model.feature_importances_).all()


# ------------------------------------------------- K = 2: REBEL is discrete AdaBoost
#
# With K=2 and C = 1 - I the subcosts are c+ = (1 - onehot(y))/2, c- = onehot(y)/2, so with
# z = +1 for class 1 and -1 for class 0 the loss separates into two classes' terms,
#     class 1: (1/2) sum_n w_n exp(-z_n H_1(x_n)),   class 0: (1/2) sum_n w_n exp(+z_n H_0(x_n)),
# i.e. two AdaBoost exponential losses, of F = H_1 and of F = -H_0. Both start at H = 0 with the
# same per-sample weights, a binary learner f has the same weighted error eps in both, and the
# closed-form steps are a_1 = 1/2 ln((W - eps)/eps) = alpha and a_0 = -alpha. So H_0 = -H_1
# forever (bit for bit: the two classes' channels are identical), the REBEL stump score
# 2 sqrt(eps (W - eps)) per class is minimised by the stump of least weighted error over both
# polarities, and REBEL with stumps is discrete AdaBoost with stumps: H_1 = -H_0 = F, the
# decision H_1 - H_0 = 2F, and argmax_k H_k is class 1 exactly when F > 0.
#
# Conditions for exact equality of the models, which the reference below meets:
# * the same candidate stumps (the binner's thresholds, "bin <= b" emits -1) and, since REBEL
#   also tries a constant learner f = +1 every iteration, AdaBoost's hypothesis set includes
#   the constant classifier too, preferred only when strictly better than the best stump;
# * the same smoothing of alpha as REBEL's step (1/2 ln((W - eps + e)/(eps + e)), e = 1e-10 W);
#   it only matters if a weighted error reaches 0;
# * no (near-)ties between candidates: both break exact ties by the lowest feature, then bin,
#   but floating-point sums of tied candidates can round differently in the two codes. With
#   uniform sample weights, errors are sums of a few distinct weight values and exact ties are
#   common, so the comparison uses continuous random sample weights.


def _discrete_adaboost(X, z, sample_weight, binner, n_iter):
    """Discrete AdaBoost over the binner's stumps (both polarities) and the constant +1."""
    bins = binner.transform(X)
    nb = binner.n_bins_total
    F = np.zeros(len(z))
    pos = z > 0
    model = []  # (feature or -1, threshold, alpha)
    for _ in range(n_iter):
        m = -z * F
        w = sample_weight * np.exp(m - m.max())
        W = w.sum()
        best_err, best = np.inf, None
        for f in range(X.shape[1]):
            w_pos = np.bincount(bins[:, f], weights=w * pos, minlength=nb)
            w_neg = np.bincount(bins[:, f], weights=w * ~pos, minlength=nb)
            # h = -1 on bins <= b, +1 above: errs on z = +1 left and z = -1 right.
            err = np.cumsum(w_pos) + (w_neg.sum() - np.cumsum(w_neg))
            for b in range(binner.n_value_bins_[f] - 1):
                e = min(err[b], W - err[b])  # the better polarity
                if e < best_err:
                    best_err, best = e, (f, b)
        constant_err = min(w[pos].sum(), w[~pos].sum())
        if best is None or constant_err < best_err:
            h, feature, threshold = np.ones(len(z)), -1, 0.0
        else:
            feature, b = best
            h = np.where(bins[:, feature] <= b, -1.0, 1.0)
            threshold = binner.threshold(feature, b)
        err_h = w[h != z].sum()
        e = STEP_EPS * W
        alpha = 0.5 * (np.log(W - err_h + e) - np.log(err_h + e))
        F += alpha * h
        model.append((feature, threshold, alpha))
    return model


def _adaboost_scores(model, X):
    F = np.zeros(X.shape[0])
    for feature, threshold, alpha in model:
        h = np.ones(X.shape[0]) if feature < 0 else np.where(X[:, feature] <= threshold, -1, 1)
        F += alpha * h
    return F


@pytest.mark.parametrize("imbalanced", [False, True])
def test_rebel_k2_stumps_equal_discrete_adaboost(imbalanced):
    rng = np.random.default_rng(42)
    n, n_test, n_iter = 150, 1000, 40
    X_all = rng.standard_normal((n + n_test, 3))
    noise = 0.8 * rng.standard_normal(n + n_test)
    if imbalanced:
        # Ternary features, a weak signal and 85% class 1: the constant learner wins some
        # iterations (with many thresholds some stump nearly always beats it).
        X_all = rng.integers(0, 3, size=(n + n_test, 3)).astype(float)
        y_all = (0.3 * X_all[:, 0] + noise > -0.6).astype(int)
    else:
        y_all = (X_all[:, 0] + 0.6 * X_all[:, 1] ** 2 - 0.5 + noise > 0).astype(int)
    X, y, X_test = X_all[:n], y_all[:n], X_all[n:]
    sample_weight = rng.uniform(0.5, 1.5, size=n)

    model = RebelClassifier(n_iter, weak_learner="stump", max_bins=255, min_data_in_bin=1,
                            random_state=0)
    model.fit(X, y, sample_weight=sample_weight)
    reference = _discrete_adaboost(X, 2.0 * y - 1.0, sample_weight, Binner(255).fit(X), n_iter)

    assert model.n_estimators_ == n_iter
    np.testing.assert_array_equal(model.trees_.feature[:, 0], [f for f, _, _ in reference])
    stumps = model.trees_.feature[:, 0] >= 0
    assert stumps.sum() >= n_iter // 2  # the comparison is about stumps, mostly
    if imbalanced:
        assert not stumps.all()  # and the constant learner is exercised too
    assert_allclose(model.trees_.threshold[stumps, 0],
                    [t for f, t, _ in reference if f >= 0], rtol=0, atol=0)
    # a = (-alpha, alpha) up to the learner's polarity, which REBEL folds into the sign of a.
    assert_allclose(model.vectors_[:, 0], -model.vectors_[:, 1], rtol=0, atol=0)
    alpha = np.array([a for _, _, a in reference])
    assert_allclose(model.vectors_[:, 1], alpha, rtol=1e-9, atol=1e-12)

    for data in (X, X_test):
        F = _adaboost_scores(reference, data)
        H = model._scores(data)
        assert_allclose(H[:, 1], F, rtol=1e-9, atol=1e-9)
        assert_allclose(model.decision_function(data), 2.0 * F, rtol=1e-9, atol=1e-9)
        np.testing.assert_array_equal(model.predict(data), (F > 0).astype(int))


# ---------------------------------------------------------------- cost-sensitivity


def _blobs(n_per_class, rng):
    means = np.array([[0.0, 0.0], [1.5, 0.0], [0.75, 1.3]])
    X = np.concatenate([m + rng.standard_normal((n_per_class, 2)) for m in means])
    y = np.repeat(np.arange(3), n_per_class)
    return X, y


def test_cost_sensitive_model_has_lower_test_cost():
    rng = np.random.default_rng(7)
    X, y = _blobs(400, rng)
    X_test, y_test = _blobs(3000, rng)
    cost = 1.0 - np.eye(3)
    cost[0, 1] = 10.0  # calling a class-0 sample class 1 is ten times worse
    kw = {"n_estimators": 60, "max_depth": 2, "random_state": 0}
    neutral = RebelClassifier(**kw).fit(X, y)
    sensitive = RebelClassifier(cost_matrix=cost, **kw).fit(X, y)
    neutral_cost = mean_cost(y_test, neutral.predict(X_test), cost, neutral.classes_)
    sensitive_cost = mean_cost(y_test, sensitive.predict(X_test), cost, sensitive.classes_)
    assert sensitive_cost < 0.8 * neutral_cost
    assert sensitive.cost_score(X_test, y_test) == sensitive_cost
    # It gets there by avoiding the expensive mistake, at the price of cheap ones.
    expensive = np.mean((y_test == 0) & (sensitive.predict(X_test) == 1))
    assert expensive < 0.5 * np.mean((y_test == 0) & (neutral.predict(X_test) == 1))
