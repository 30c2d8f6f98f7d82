"""The shared engine: one loop and one prediction path give every booster the same features."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification

from rebelboost import (
    AdaBoostMHClassifier,
    MCBoostClassifier,
    OneVsAllAdaBoostClassifier,
    RebelClassifier,
)
from rebelboost.callbacks import IterationInfo

BOOSTERS = [
    RebelClassifier(12, random_state=0),
    RebelClassifier(12, weak_learner="similarity"),
    AdaBoostMHClassifier(12, weak_learner="tree"),
    AdaBoostMHClassifier(6, factorized=False),
    MCBoostClassifier(12),
    MCBoostClassifier(6, algorithm="gd", max_depth=2),
    OneVsAllAdaBoostClassifier(5, max_depth=2),
]
IDS = ["rebel", "rebel-similarity", "mh", "mh-unfactorized", "mcboost-cd", "mcboost-gd", "ova"]


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(300, 6, n_informative=4, n_classes=3, random_state=0)
    return X[:200], y[:200], X[200:]


@pytest.mark.parametrize("estimator", BOOSTERS, ids=IDS)
def test_iteration_ranges_add_up(data, estimator):
    X, y, X_test = data
    model = estimator.fit(X, y)
    n = model.n_estimators_
    whole = model.decision_function(X_test)
    parts = model.decision_function(X_test, stop=n // 2) + model.decision_function(
        X_test, start=n // 2)
    np.testing.assert_allclose(parts, whole, rtol=1e-10, atol=1e-10)
    staged = list(model.staged_decision_function(X_test, start=2, stop=n - 1))
    assert len(staged) == n - 3
    np.testing.assert_allclose(staged[-1], model.decision_function(X_test, start=2, stop=n - 1),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(model.predict(X_test, stop=3), list(model.staged_predict(
        X_test))[2])
    with pytest.raises(ValueError, match="iteration range"):
        model.decision_function(X_test, start=n + 1)


@pytest.mark.parametrize("estimator", BOOSTERS, ids=IDS)
def test_callbacks_and_early_stopping_for_every_booster(data, estimator):
    X, y, _ = data
    seen: list[IterationInfo] = []
    model = estimator.set_params(early_stopping=True, n_iter_no_change=3,
                                 validation_metric="loss").fit(X, y, callbacks=[seen.append])
    assert [i.iteration for i in seen] == list(range(1, len(seen) + 1))
    assert all(i.model is model for i in seen)
    assert [i.validation_loss for i in seen] == model.validation_loss_.tolist()
    assert model.best_iteration_ == model.n_estimators_ <= len(seen)
    best = int(np.argmin(model.validation_loss_))  # kept: the best iteration (ties: first)
    assert model.n_estimators_ == best + 1 or len(seen) == estimator.n_estimators
    stopped = estimator.set_params(early_stopping=False).fit(X, y, callbacks=[
        lambda info: info.iteration == 4])
    assert stopped.n_estimators_ == 4 and len(stopped.train_loss_) == 4
    estimator.set_params(early_stopping=False)


def test_importances_count_only_the_kept_iterations(data):
    X, y, _ = data
    stopped = RebelClassifier(40, early_stopping=True, n_iter_no_change=2, random_state=0)
    stopped.fit(X, y)
    assert stopped.n_estimators_ < len(stopped.validation_loss_)  # some iterations dropped
    features = np.unique(stopped.trees_.feature[stopped.trees_.feature >= 0])
    assert set(np.flatnonzero(stopped.feature_importances_)) == set(features)


def test_training_stops_when_the_loss_reaches_zero():
    X = np.array([[0.0], [1.0]] * 10)
    y = np.array([0, 1] * 10)
    model = AdaBoostMHClassifier(50).fit(X, y)
    assert model.train_loss_[-1] == 0.0 or model.n_estimators_ == 50
    if model.train_loss_[-1] == 0.0:
        assert model.n_estimators_ < 50 and np.all(model.train_loss_[:-1] > 0)


def test_explain_reads_dataframe_rows_and_every_booster(data):
    X, y, X_test = data
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    for estimator in (RebelClassifier(6, random_state=0), MCBoostClassifier(6, algorithm="gd",
                                                                          max_depth=2)):
        model = estimator.fit(frame, y)
        exp = model.explain(frame.iloc[0], top=100)
        assert exp.predicted == model.predict(frame.iloc[:1])[0]
        assert sum(t.margin for t in exp.terms) == pytest.approx(exp.margin)
        assert all(1 <= t.learner <= len(model.learners_) for t in exp.terms)
        assert any(name.startswith("f") for name in exp.feature_margins)


@pytest.mark.parametrize("estimator", BOOSTERS, ids=IDS)
def test_learning_rate_shrinks_the_first_step(data, estimator):
    X, y, X_test = data
    full = clone(estimator).set_params(n_estimators=1, learning_rate=1.0).fit(X, y)
    half = clone(estimator).set_params(n_estimators=1, learning_rate=0.5).fit(X, y)
    np.testing.assert_allclose(half.decision_function(X_test),
                               0.5 * full.decision_function(X_test), rtol=1e-12, atol=1e-12)
    shrunk = clone(estimator).set_params(n_estimators=8, learning_rate=0.3).fit(X, y)
    assert np.all(np.diff(shrunk.train_loss_) <= 1e-12 * shrunk.train_loss_[:-1])


def test_early_stopping_on_the_validation_cost(data):
    X, y, _ = data
    seen: list[IterationInfo] = []
    model = RebelClassifier(60, early_stopping=True, validation_metric="cost",
                            n_iter_no_change=5, random_state=0).fit(X, y, callbacks=[seen.append])
    costs = [i.validation_cost for i in seen]
    assert model.n_estimators_ == int(np.argmin(costs)) + 1
    assert len(seen) == model.n_estimators_ + 5 or len(seen) == 60


def test_a_text_column_at_predict_time_is_named(data):
    X, y, _ = data
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    model = RebelClassifier(3, random_state=0).fit(frame, y)
    frame["f2"] = "v" + frame["f2"].astype(str)
    with pytest.raises(ValueError, match=r"\['f2'\] are not numeric"):
        model.predict(frame)


def test_early_stopping_on_the_cost_keeps_the_first_lowest_error():
    from rebelboost.callbacks import EarlyStopping

    stop = EarlyStopping(patience=3, tol=1e-7, metric="cost")
    errors = [0.30, 0.20, 0.25, 0.20, 0.19, 0.19, 0.22, 0.19]
    asked = [stop(IterationInfo(i + 1, 20, 1.0, 9.9, e)) for i, e in enumerate(errors)]
    # best 0.19 at iteration 5; iterations 6-8 bring nothing lower: stop after 8
    assert asked == [False] * 7 + [True] and stop.best_iteration == 5


@pytest.mark.parametrize(("n", "on"), [(10_000, False), (10_001, True)])
def test_auto_early_stopping_holds_out_a_split_above_ten_thousand_rows(n, on):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] > 0).astype(int)
    model = RebelClassifier(2, weak_learner="stump", early_stopping="auto",
                            random_state=0).fit(X, y)
    assert (model.validation_loss_ is not None) == on
    assert (model.best_iteration_ is not None) == on


@pytest.mark.parametrize("weak_learner", ["vector_tree", "tree", "stump", "similarity"])
def test_every_weak_learner_hands_back_what_its_model_scores(weak_learner):
    """The learner contract: each family's ``fit`` returns a LearnerFit whose update of the
    training scores (``add_to``: weight times slot values) is what the fitted learner adds
    when the model scores the same rows."""
    from rebelboost.learners.contract import LearnerFit
    from rebelboost.learners.rebel_learners import REBEL_LEARNERS, LearnerOptions
    from rebelboost.learners.vector_tree import VectorTreeOptions
    from rebelboost.losses.rebel import RebelLoss

    X, y = make_classification(300, 5, n_informative=4, n_redundant=0, n_classes=3,
                               random_state=1)
    k = 3
    rng = np.random.RandomState(0)
    options = LearnerOptions(depth=1 if weak_learner == "stump" else 2, max_bins=32,
                             quickboost=False, similarity_mode="two-point",
                             scaling="standard",
                             vector_tree=VectorTreeOptions(max_leaves=6, min_samples_leaf=5))
    family = REBEL_LEARNERS[weak_learner](X, y, np.ones(len(y)), 1.0 - np.eye(k), options, rng)
    loss = RebelLoss(1.0 - np.eye(k), family.codes, np.ones(len(y)))
    channels, _ = loss.weights(rng.normal(scale=0.3, size=(len(y), k)))
    fit = family.fit(channels)
    assert isinstance(fit, LearnerFit)
    assert fit.values.shape == (fit.arrays.n_slots, k)
    assert (fit.vector is None) == (weak_learner == "vector_tree")
    trained = np.zeros((len(y), k))
    fit.add_to(trained, 0.5 * fit.values)
    scored = np.zeros((len(y), k))
    fit.arrays.accumulate(X, 0.5 * fit.values[None], scored)
    np.testing.assert_allclose(trained, scored, rtol=1e-12, atol=1e-12)
    assert np.abs(trained).max() > 0  # the learner moved the scores
