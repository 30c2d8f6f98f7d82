"""A small fit boosted in one compiled call is the booster loop's fit, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from test_compiled_grower import _assert_same_models, _categorical_data, _data

from rebelboost import RebelClassifier
from rebelboost.ensemble import _compiled_stages
from rebelboost.learners import compiled_grower
from rebelboost.losses.rebel import pairwise_sum

CASES = [
    {},
    {"max_leaves": 31, "learning_rate": 0.3, "min_samples_leaf": 10},
    {"max_depth": 3, "max_leaves": 7, "min_samples_leaf": 3, "leaf_smoothing": 0.0},
    {"max_leaves": 5, "learning_rate": 1.0, "zero_weights": True},
    {"cost": "loss"},
    {"sample_cost": True},
    {"target_loss": "stop"},
    {"gather_bytes": 8 * 3},  # children's channels gathered a few rows at a time
    {"scan_tasks": 3},  # leaves scanned in feature blocks on every thread
    {"categorical": True},  # category sets (few and many levels, missing categories)
    {"categorical": True, "max_leaves": 5, "learning_rate": 1.0, "cost": "loss"},
    {"categorical": True, "category_tasks": True},  # their search on every thread
]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("case", CASES)
def test_stages_in_one_call_are_the_loops(monkeypatch, seed, case):
    """Models fitted with the booster's loop and in one compiled call: the same trees, leaf
    values, training losses, histogram additions and importances, on dense and sparse bins,
    missing values, weights of zero, cost-sensitive training losses and per-row costs, a fit
    that stops at its target loss, fits in several calls of a few stages, and category
    sets."""
    params, fit_params = dict(case), {}
    n, k = (60, 300, 700, 1500)[seed], 2 + seed % 4
    categorical = params.pop("categorical", False)
    if categorical:
        X, y = _categorical_data(seed, n, k, missing=seed % 2 == 1)
    else:
        X, y = _data(seed, n, 3 + 3 * seed, k, missing=seed % 2 == 1, binary=seed == 3)
    rng = np.random.default_rng(seed)
    if params.pop("zero_weights", False):
        fit_params["sample_weight"] = rng.uniform(0.0, 2.0, n)
        fit_params["sample_weight"][::5] = 0.0
    if params.pop("cost", None):
        params.update(cost_matrix=rng.uniform(0.5, 3.0, (k, k)) * (1 - np.eye(k)),
                      cost_strategy="loss")
    if params.pop("sample_cost", False):
        fit_params["sample_cost"] = rng.uniform(0.0, 2.0, (n, k))
        fit_params["sample_cost"][np.arange(n), y] = 0.0
    if params.pop("target_loss", None):  # halfway down a full fit's loss: stops early
        losses = RebelClassifier(40, random_state=seed, **params).fit(X, y).train_loss_
        params["target_loss"] = 0.5 * (losses[0] + losses[-1])
    gather_bytes = params.pop("gather_bytes", None)
    tasks = params.pop("scan_tasks", None)
    category_tasks = params.pop("category_tasks", None)
    fits, calls = [], []
    real = _compiled_stages._boost
    for in_one_call in (False, True):
        if in_one_call:
            monkeypatch.setattr(_compiled_stages, "_boost",
                                lambda *args: calls.append(args[0]) or real(*args))
            if seed % 2:  # in chunks of 7 stages: the same stages
                monkeypatch.setattr(_compiled_stages, "CHUNK", 7)
            if gather_bytes:  # (from the one call: the loop's trees gather whole children)
                monkeypatch.setattr(compiled_grower, "GATHER_BYTES", gather_bytes)
            if tasks:
                monkeypatch.setattr(_compiled_stages, "scan_tasks", lambda *args: tasks)
            if category_tasks:
                monkeypatch.setattr(compiled_grower, "category_tasks", lambda *args: 4)
        else:
            monkeypatch.setattr(_compiled_stages, "applies", lambda booster: False)
        fits.append(RebelClassifier(40, random_state=seed, **params).fit(X, y, **fit_params))
        monkeypatch.undo()
    assert calls  # the second fit took the compiled call (one per fit, or chunks of 7)
    assert max(calls) == (40 if seed % 2 == 0 else 7)
    if "target_loss" in params:
        assert len(fits[1].train_loss_) < 40
    assert len(fits[0].train_loss_) == len(fits[1].train_loss_)
    assert (fits[1].trees_.category_words is not None) == categorical
    _assert_same_models(*fits, X)


def test_a_root_on_threads_in_one_call(monkeypatch):
    """A root histogram that pays for threads: the call builds it on them; the loop's
    model, bit for bit."""
    from rebelboost.search.histograms.dense import threads_pay

    X, y = _data(5, 3000, 60, 3, missing=True)
    assert threads_pay(len(y), X.shape[1], 2 * 3 + 1)
    calls, fits = [], []
    real = _compiled_stages._boost
    for in_one_call in (False, True):
        if in_one_call:
            monkeypatch.setattr(_compiled_stages, "_boost",
                                lambda *args: calls.append(True) or real(*args))
        else:
            monkeypatch.setattr(_compiled_stages, "applies", lambda booster: False)
        fits.append(RebelClassifier(10, n_jobs=2, random_state=0).fit(X, y))
        monkeypatch.undo()
    assert calls
    _assert_same_models(*fits, X)


def test_fits_the_call_does_not_take_keep_the_loop(monkeypatch):
    """Sampling, quantized histograms, an eval set, callbacks and verbose output: the
    booster's loop (and the same models as before)."""
    calls = []
    real = _compiled_stages._boost
    monkeypatch.setattr(_compiled_stages, "_boost",
                        lambda *args: calls.append(True) or real(*args))
    X, y = _data(0, 300, 4, 3)
    RebelClassifier(5, subsample=0.8).fit(X, y)
    RebelClassifier(5, colsample_bytree=0.5).fit(X, y)
    RebelClassifier(5, histogram_bits=12).fit(X, y)
    RebelClassifier(5, weak_learner="tree").fit(X, y)
    RebelClassifier(5).fit(X, y, eval_set=(X, y))
    RebelClassifier(5).fit(X, y, callbacks=[lambda info: None])
    assert not calls
    RebelClassifier(5).fit(X, y)
    assert len(calls) == 1


@pytest.mark.parametrize("n", [*range(0, 140), 255, 256, 257, 1000, 4097, 65537])
def test_pairwise_sum_is_numpys(n):
    """The compiled loop's loss adds the row sums as numpy's ``sum`` does, bit for bit."""
    rng = np.random.default_rng(n)
    values = rng.random(n) * 10.0 ** rng.integers(-8, 8, n)
    assert pairwise_sum(values) == values.sum()
