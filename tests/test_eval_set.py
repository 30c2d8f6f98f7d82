"""``fit(eval_set=...)``: an evaluation set scored after every iteration (LightGBM's and
XGBoost's ``eval_set``) and, with ``early_stopping`` on, the set training stops on."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_array_equal

from rebelboost import RebelClassifier


def _data(n=600, d=5, k=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1] + 0.8 * rng.standard_normal(n), [-0.6, 0.6])
    return X, y


def test_the_eval_set_is_scored_every_iteration_and_changes_no_tree():
    X, y = _data()
    X_val, y_val = _data(n=300, seed=1)
    seen = []
    params = dict(n_estimators=15, max_depth=3, random_state=0)
    with_eval = RebelClassifier(**params).fit(
        X, y, eval_set=[(X_val, y_val)],
        callbacks=[lambda info: seen.append(info.validation_cost)])
    plain = RebelClassifier(**params).fit(X, y)
    assert_array_equal(with_eval.decision_function(X_val), plain.decision_function(X_val))
    assert with_eval.best_iteration_ is None and len(with_eval.validation_loss_) == 15
    staged = [np.mean(p != y_val) for p in with_eval.staged_predict(X_val)]
    np.testing.assert_allclose(seen, staged, rtol=0, atol=1e-15)


def test_early_stopping_keeps_the_best_iteration_on_the_eval_set():
    X, y = _data(seed=2)
    X_val, y_val = _data(n=300, seed=3)
    model = RebelClassifier(n_estimators=200, learning_rate=1.0, max_depth=4, random_state=0,
                            early_stopping=True, n_iter_no_change=5).fit(
        X, y, eval_set=(X_val, y_val))
    run = len(model.validation_loss_)
    assert model.best_iteration_ == model.n_estimators_ < run < 200
    full = RebelClassifier(n_estimators=run, learning_rate=1.0, max_depth=4,
                           random_state=0).fit(X, y)
    errors = [np.mean(p != y_val) for p in full.staged_predict(X_val)]
    assert errors[model.best_iteration_ - 1] == min(errors)  # the best one, kept
    assert_array_equal(model.predict(X_val), list(full.staged_predict(X_val))[
        model.best_iteration_ - 1])


def test_categorical_eval_sets_are_encoded_like_the_training_set():
    rng = np.random.default_rng(4)
    colour = rng.choice(["red", "green", "blue"], 400)
    X = pd.DataFrame({"colour": pd.Categorical(colour), "x": rng.standard_normal(400)})
    y = (colour == "red").astype(int) + (X["x"] > 0.5)
    X_val = pd.DataFrame({"colour": pd.Categorical(["red", "teal", "blue"]),
                          "x": [0.0, 1.0, 2.0]})
    model = RebelClassifier(n_estimators=5, random_state=0).fit(
        X, y, eval_set=(X_val, np.array([1, 1, 1])))
    scores = list(model.staged_decision_function(X_val))[-1]
    assert np.isfinite(model.validation_loss_).all() and scores.shape == (3, 3)


@pytest.mark.parametrize("eval_set, weight, message", [
    ([], None, "one"),
    ((np.zeros((3, 5)),), None, "pair"),
    ((np.zeros((3, 4)), [0, 1, 2]), None, "eval_set: X has 4 features"),
    ((np.zeros((3, 5)), [0, 1]), None, "3 rows and y 2 labels"),
    ((np.zeros((3, 5)), [0, 1, 7]), None, r"labels \[7\] are not among"),
    ((np.zeros((3, 5)), ["0", "1", "2"]), None, "not among"),
    ((np.zeros((3, 5)), [0, 1, 2]), [1, -1, 1], "non-negative"),
])
def test_bad_eval_sets_get_a_clear_error(eval_set, weight, message):
    X, y = _data(n=100)
    with pytest.raises(ValueError, match=message):
        RebelClassifier(n_estimators=2).fit(X, y, eval_set=eval_set, eval_sample_weight=weight)
