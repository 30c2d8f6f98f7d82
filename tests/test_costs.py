"""Cost-sensitive decisions: subcosts' population minimisers, per-sample costs, the routes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize

from rebelboost import RebelClassifier
from rebelboost.costs import (
    check_sample_cost,
    cost_columns,
    expected_calibration_error,
    min_risk_codes,
    resolve_costs,
)
from rebelboost.losses.rebel import SUBCOSTS, RebelLoss, subcosts

FAST = settings(max_examples=40, deadline=None)


def _random_cost(rng, k):
    cost = np.abs(rng.standard_normal((k, k)))
    np.fill_diagonal(cost, 0.0)
    return cost


def _minimiser(cost, posterior, kind):
    """Closed-form population minimiser ``1/2 ln(E[c-] / E[c+])`` at one x."""
    k = len(posterior)
    c_plus, c_minus = subcosts(cost, np.arange(k), kind)
    with np.errstate(divide="ignore"):
        return 0.5 * np.log((posterior @ c_minus) / (posterior @ c_plus))


# ------------------------------------------------------- population minimisers


@pytest.mark.parametrize("kind", SUBCOSTS)
def test_closed_form_minimiser_matches_numeric_optimisation(kind):
    rng = np.random.default_rng(1)
    for _ in range(30):
        k = int(rng.integers(2, 6))
        cost, posterior = _random_cost(rng, k), rng.dirichlet(np.ones(k))
        c_plus, c_minus = subcosts(cost, np.arange(k), kind)

        def risk(h, c_plus=c_plus, c_minus=c_minus, posterior=posterior):
            return posterior @ (c_plus @ np.exp(h) + c_minus @ np.exp(-h))

        h = minimize(risk, np.zeros(k), method="BFGS", options={"gtol": 1e-12}).x
        assert_allclose(h, _minimiser(cost, posterior, kind), atol=1e-4)


@pytest.mark.parametrize("kind", ["calibrated", "paper"])
def test_calibrated_minimiser_picks_the_least_risk_class(kind):
    """K = 2..8, 300 draws each: argmax of the minimiser = argmin of the risk (ties aside)."""
    rng = np.random.default_rng(2)
    for k in range(2, 9):
        for _ in range(300):
            cost = _random_cost(rng, k)
            posterior = rng.dirichlet(np.full(k, rng.choice([0.3, 1.0, 3.0])))
            risk = posterior @ cost
            order = np.sort(risk)
            if order[1] - order[0] <= 1e-9 * order[-1]:
                continue
            assert np.argmax(_minimiser(cost, posterior, kind)) == np.argmin(risk)


def test_calibrated_minimiser_recovers_the_relative_risks():
    """Calibrated subcosts: ``1 / (1 + exp(2 H_k)) = r_k / E[max cost]`` at the minimiser."""
    rng = np.random.default_rng(3)
    for k in range(2, 9):
        cost, posterior = _random_cost(rng, k), rng.dirichlet(np.ones(k))
        h = _minimiser(cost, posterior, "calibrated")
        assert_allclose(1.0 / (1.0 + np.exp(2 * h)),
                        posterior @ cost / (posterior @ cost.max(axis=1)), rtol=1e-10)


def test_thesis_minimiser_is_not_always_the_least_risk_class():
    rng = np.random.default_rng(4)
    wrong = {}
    for k in range(3, 9):
        wrong[k] = 0
        for _ in range(300):
            cost, posterior = _random_cost(rng, k), rng.dirichlet(np.ones(k))
            wrong[k] += np.argmax(_minimiser(cost, posterior, "thesis")) != np.argmin(
                posterior @ cost)
    assert all(n >= 10 for n in wrong.values()), wrong


@pytest.mark.parametrize("k", [2, 3, 6])
def test_subcosts_agree_for_two_classes_and_zero_one_costs(k):
    rng = np.random.default_rng(k)
    y = rng.integers(0, k, size=40)
    matrices = [1.0 - np.eye(k)] + ([_random_cost(rng, 2)] if k == 2 else [])
    for cost in matrices:
        thesis = subcosts(cost, y, "thesis")
        for kind in ("calibrated", "paper"):
            for ours, theirs in zip(subcosts(cost, y, kind), thesis, strict=True):
                assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


@FAST
@given(st.sampled_from(SUBCOSTS), st.integers(2, 6), st.integers(1, 30), st.floats(1e-2, 20),
       st.integers(0, 2**32 - 1))
def test_every_subcost_bounds_the_per_sample_cost(kind, k, n, scale, seed):
    """The loss with per-sample cost rows bounds the mean cost of ``argmax H``."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, size=n)
    rows = np.abs(rng.standard_normal((n, k))) * 10.0 ** rng.uniform(-3, 3, size=(n, 1))
    rows[rng.random((n, k)) < 0.3] = 0.0
    rows[np.arange(n), (y + 1) % k] += 0.5
    rows[np.arange(n), y] = 0.0
    scores = rng.standard_normal((n, k)) * scale
    loss = RebelLoss(None, y, np.ones(n), kind, rows)
    risk = rows[np.arange(n), np.argmax(scores, axis=1)].mean()
    assert loss.loss(scores) >= risk * (1 - 1e-12)


def test_unknown_subcosts_is_a_value_error():
    with pytest.raises(ValueError, match="subcosts must be one of"):
        subcosts(1.0 - np.eye(3), np.arange(3), "bogus")


# --------------------------------------------------------------- sample costs


def _sample_cost_problem():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 3))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    rows = np.abs(rng.standard_normal((120, 3))) + 0.1
    rows[np.arange(120), y] = 0.0
    return X, y, rows


@pytest.mark.parametrize("edit, message", [
    (lambda c: c[:, :2], r"shape \(120, 3\)"),
    (lambda c: c[:-1], r"shape \(120, 3\)"),
    (lambda c: np.where(np.arange(3) == 2, np.nan, c), "NaN or infinity"),
    (lambda c: np.where(c > 1.0, np.inf, c), "NaN or infinity"),
    (lambda c: np.where(c > 1.0, -c, c), "negative"),
    (lambda c: c + 0.1, "zero at each sample's true class"),
    (lambda c: np.where(np.arange(120)[:, None] == 7, 0.0, c), r"rows 7 are all zero"),
    (lambda c: np.full((120, 3), "a"), "numeric"),
])
def test_bad_sample_cost_is_a_value_error_naming_the_problem(edit, message):
    X, y, rows = _sample_cost_problem()
    with pytest.raises(ValueError, match=message):
        RebelClassifier(5).fit(X, y, sample_cost=edit(rows))


def test_sample_cost_and_cost_matrix_together_is_a_value_error():
    X, y, rows = _sample_cost_problem()
    with pytest.raises(ValueError, match="not both"):
        RebelClassifier(5, cost_matrix=1 - np.eye(3)).fit(X, y, sample_cost=rows)


@pytest.mark.parametrize("kind", SUBCOSTS)
def test_sample_cost_rows_of_a_matrix_give_the_matrix_model(kind):
    X, y, _ = _sample_cost_problem()
    cost = _random_cost(np.random.default_rng(5), 3)
    by_matrix = RebelClassifier(15, subcosts=kind, cost_matrix=cost, random_state=0).fit(X, y)
    by_rows = RebelClassifier(15, subcosts=kind, random_state=0).fit(X, y, sample_cost=cost[y])
    assert_allclose(by_rows.decision_function(X), by_matrix.decision_function(X), rtol=1e-10)
    assert_allclose(by_rows.cost_matrix_, cost, rtol=1e-12)


def test_sample_cost_sets_the_class_mean_cost_matrix_and_changes_the_model():
    X, y, rows = _sample_cost_problem()
    kw = dict(subcosts="calibrated", cost_strategy="loss", random_state=0)
    model = RebelClassifier(15, **kw).fit(X, y, sample_cost=rows)
    expected = np.array([rows[y == c].mean(axis=0) for c in range(3)])
    assert_allclose(model.cost_matrix_, expected, rtol=1e-12)
    assert np.all(np.diag(model.cost_matrix_) == 0)
    plain = RebelClassifier(15, cost_matrix=expected, **kw).fit(X, y)
    assert not np.allclose(model.decision_function(X), plain.decision_function(X))
    # The posterior route sees the costs only through their class means.
    kw["cost_strategy"] = "posterior"
    by_rows = RebelClassifier(15, **kw).fit(X, y, sample_cost=rows)
    by_means = RebelClassifier(15, cost_matrix=expected, **kw).fit(X, y)
    assert_array_equal(by_rows.predict(X), by_means.predict(X))


def test_sample_cost_with_early_stopping_splits_the_costs_with_the_rows():
    X, y, rows = _sample_cost_problem()
    model = RebelClassifier(30, early_stopping=True, n_iter_no_change=3, random_state=0)
    model.fit(X, y, sample_cost=rows)
    assert model.validation_loss_ is not None and model.n_estimators_ >= 1


def test_check_sample_cost_accepts_a_data_frame_like():
    class Frame:
        def __init__(self, a):
            self.a = a

        def to_numpy(self):
            return self.a

    _, y, rows = _sample_cost_problem()
    assert_array_equal(check_sample_cost(Frame(rows), y, 3), rows)
    cost, decisions, kept = resolve_costs(None, rows, y, 3)
    assert kept is not None and cost.shape == (3, 3) and decisions is None


# --------------------------------------------------------------------- routes


def _cost_problem(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = np.digitize(X[:, 0] + 0.5 * rng.standard_normal(n), [-0.6, 0.6])
    cost = np.array([[0.0, 1.0, 8.0], [1.0, 0.0, 1.0], [6.0, 1.0, 0.0]])
    return X, y, cost


def test_posterior_route_predicts_the_least_expected_cost_class():
    # (on 600 or 1,500 rows min risk is cheaper out of fold by < 2 se, not enough: argmax;
    # on 3,000, 0.262 against 0.294)
    X, y, cost = _cost_problem(n=3000)
    model = RebelClassifier(20, cost_matrix=cost, cost_strategy="posterior", random_state=0)
    model.fit(X, y)
    assert model.cost_strategy_ == "posterior" and model.cost_route_ == "min_risk"
    assert_array_equal(model.predict(X), np.argmin(model.expected_cost(X), axis=1))
    neutral = RebelClassifier(20, random_state=0).fit(X, y)
    # The model itself is the cost-neutral one; only the decision differs.
    assert_allclose(model.decision_function(X), neutral.decision_function(X), rtol=1e-12)
    staged = list(model.staged_predict(X))
    assert_array_equal(staged[-1], model.predict(X))


def test_auto_route_keeps_the_route_the_guard_picks():
    X, y, cost = _cost_problem()
    model = RebelClassifier(20, cost_matrix=cost, cost_strategy="auto", random_state=0)
    model.fit(X, y)
    assert set(model.route_costs_) == {"argmax", "min_risk", "loss"}
    assert model.cost_route_ in model.route_costs_
    assert model.cost_strategy_ == ("loss" if model.cost_route_ == "loss" else "posterior")
    # The route kept is never dearer out of fold than argmax.
    costs = model.route_costs_
    assert costs[model.cost_route_] <= costs["argmax"]


@pytest.mark.parametrize("strategy", ["posterior", "auto"])
def test_zero_one_costs_take_the_loss_route_without_extra_fits(strategy):
    X, y, _ = _cost_problem()
    model = RebelClassifier(10, cost_strategy=strategy, random_state=0).fit(X, y)
    plain = RebelClassifier(10, random_state=0).fit(X, y)
    assert model.cost_strategy_ == "loss" and model.temperature_ == 1.0
    assert_allclose(model.decision_function(X), plain.decision_function(X))


def test_expected_calibration_error_is_zero_when_calibrated_and_large_when_not():
    rng = np.random.default_rng(1)
    proba = rng.dirichlet(np.ones(3), size=50000)
    codes = np.array([rng.choice(3, p=p) for p in proba])
    assert expected_calibration_error(proba, codes) < 0.01
    top = np.eye(3)[np.argmax(proba, axis=1)]
    confident = 0.98 * top + 0.01 * (1 - top)
    assert expected_calibration_error(confident, codes) > 0.1


def test_min_risk_codes_is_the_argmin_of_expected_cost():
    proba = np.array([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]])
    cost = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [10.0, 10.0, 0.0]])
    assert_array_equal(min_risk_codes(proba, cost), [2, 2])


# --------------------------------------------------------------- cost columns


def test_cost_columns_reads_one_column_per_class_in_class_order():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"x": [1.0, 2.0], "cost_b": [3.0, 0.0], "cost_a": [0.0, 5.0]})
    cost, names = cost_columns(frame, np.array(["a", "b"]))
    assert_array_equal(cost, [[0.0, 3.0], [5.0, 0.0]])
    assert names == ["cost_a", "cost_b"]


@pytest.mark.parametrize("columns, message", [
    ({"cost_a": [0.0, 1.0]}, r"missing \['cost_b'\]"),
    ({"cost_a": [0.0, 1.0], "cost_b": [1.0, 0.0], "cost_c": [1.0, 1.0]}, "no class for"),
    ({"cost_a": ["x", "y"], "cost_b": [1.0, 0.0]}, "numeric"),
])
def test_bad_cost_columns_are_a_value_error(columns, message):
    pd = pytest.importorskip("pandas")
    with pytest.raises(ValueError, match=message):
        cost_columns(pd.DataFrame(columns), np.array(["a", "b"]))


# ---------------------------------------------------------------- model files


def test_posterior_route_survives_a_model_file(tmp_path):
    X, y, cost = _cost_problem()
    model = RebelClassifier(20, cost_matrix=cost, cost_strategy="posterior", random_state=0)
    model.fit(X, y)
    model.save(tmp_path / "m.json")
    loaded = RebelClassifier.load(tmp_path / "m.json")
    assert_allclose(loaded.predict_proba(X), model.predict_proba(X), rtol=1e-12)
    assert_array_equal(loaded.predict(X), model.predict(X))


def test_sample_cost_model_survives_a_model_file(tmp_path):
    X, y, rows = _sample_cost_problem()
    model = RebelClassifier(15, subcosts="calibrated", cost_strategy="loss", random_state=0)
    model.fit(X, y, sample_cost=rows)
    model.save(tmp_path / "m.json")
    loaded = RebelClassifier.load(tmp_path / "m.json")
    assert_allclose(loaded.cost_matrix_, model.cost_matrix_, rtol=1e-15)
    assert_array_equal(loaded.predict(X), model.predict(X))
