"""REBEL's loss: subcosts, closed-form steps, weights in a common scale, numerics."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.optimize import minimize

from rebelboost import mean_cost
from rebelboost.losses.rebel import (
    STEP_EPS,
    RebelLoss,
    binary_sums,
    step_loss,
    step_vector,
    subcosts,
)

FAST = settings(max_examples=40, deadline=None)


def _direct_loss(channels: np.ndarray, f: np.ndarray, a: np.ndarray) -> float:
    """Loss after the step ``f a`` straight from per-sample weights ``[w+, w-]``."""
    k = a.shape[0]
    step = f[:, None] * a[None, :]
    return float(np.sum(channels[:, :k] * np.exp(step) + channels[:, k:] * np.exp(-step)))


def _sums(channels: np.ndarray, f: np.ndarray, k: int):
    return binary_sums(channels[f > 0].sum(axis=0), channels[f < 0].sum(axis=0), k)


@st.composite
def cost_matrices(draw, min_classes=2, max_classes=5):
    """Valid cost matrices: non-negative, zero diagonal, every row with a positive entry."""
    k = draw(st.integers(min_classes, max_classes))
    entry = st.one_of(st.just(0.0), st.floats(1e-3, 1e3), st.floats(0.0, 1.0))
    cost = np.array(draw(st.lists(entry, min_size=k * k, max_size=k * k))).reshape(k, k)
    np.fill_diagonal(cost, 0.0)
    for i in range(k):
        if cost[i].sum() == 0:
            cost[i, (i + 1) % k] = draw(st.floats(1e-3, 1e3))
    return cost


# ----------------------------------------------------------------- closed-form steps


@pytest.mark.parametrize("seed", range(8))
def test_closed_form_step_matches_numeric_optimiser(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(5, 60)), int(rng.integers(2, 6))
    # Weights over several orders of magnitude, some exactly zero.
    channels = rng.exponential(size=(n, 2 * k)) * 10.0 ** rng.uniform(-2, 2, size=(n, 2 * k))
    channels[rng.random((n, 2 * k)) < 0.2] = 0.0
    channels[0, :k] += 1.0  # make sure no class is empty on both sides
    channels[1, k:] += 1.0
    f = rng.choice([-1.0, 1.0], size=n)
    f[:2] = [1.0, -1.0]
    s_plus, s_minus = _sums(channels, f, k)
    a = step_vector(s_plus, s_minus)

    def objective(v):
        step = f[:, None] * v[None, :]
        e_plus, e_minus = np.exp(step), np.exp(-step)
        value = np.sum(channels[:, :k] * e_plus + channels[:, k:] * e_minus)
        grad = np.sum(f[:, None] * (channels[:, :k] * e_plus - channels[:, k:] * e_minus), axis=0)
        return value, grad

    res = minimize(objective, np.zeros(k), jac=True, method="BFGS", options={"gtol": 1e-10})
    closed_loss = 2.0 * np.sum(np.sqrt(s_plus * s_minus))
    assert_allclose(a, res.x, atol=1e-4)
    assert_allclose(closed_loss, res.fun, rtol=1e-8)
    assert_allclose(_direct_loss(channels, f, a), closed_loss, rtol=1e-8)
    assert_allclose(step_loss(s_plus, s_minus, a), closed_loss, rtol=1e-8)
    # The closed form is the minimum: the optimiser cannot beat it.
    assert closed_loss <= res.fun * (1 + 1e-10)


def test_polarity_flip_gives_same_loss_with_negated_step():
    rng = np.random.default_rng(3)
    channels = rng.exponential(size=(40, 6))
    f = rng.choice([-1.0, 1.0], size=40)
    sp, sm = _sums(channels, f, 3)
    sp2, sm2 = _sums(channels, -f, 3)
    assert_allclose(sp, sm2)
    assert_allclose(sm, sp2)
    assert_allclose(step_vector(sp2, sm2), -step_vector(sp, sm))


side_sum = st.one_of(
    st.just(0.0), st.floats(5e-324, 1e-300), st.floats(1e-6, 1e6), st.floats(1e-300, 1.0)
)


@FAST
@given(st.lists(st.tuples(side_sum, side_sum), min_size=1, max_size=6))
def test_smoothed_step_is_finite_and_never_raises_the_loss(pairs):
    s_plus = np.array([p for p, _ in pairs])
    s_minus = np.array([m for _, m in pairs])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = step_vector(s_plus, s_minus)
        per_class = s_plus * np.exp(a) + s_minus * np.exp(-a)
    assert np.isfinite(a).all()
    assert np.all(np.abs(a) <= 0.5 * np.log1p(1.0 / STEP_EPS) + 1e-9)
    total = s_plus + s_minus
    # Never worse than no step (a = 0), never better than the unsmoothed optimum, and at most
    # 2 sqrt(eps) * total above it.
    assert np.all(per_class <= total * (1 + 1e-12))
    optimum = 2.0 * np.sqrt(s_plus) * np.sqrt(s_minus)  # no underflow of the product
    assert np.all(per_class >= optimum * (1 - 1e-12))
    slack = 2.0 * np.sqrt(STEP_EPS) * total * (1 + 1e-9) + 1e-300  # + subnormal granularity
    assert np.all(per_class <= optimum + slack)
    assert step_loss(s_plus, s_minus, a) <= total.sum() * (1 + 1e-12)
    assert np.all(a[total == 0] == 0.0)


def test_empty_side_gives_large_finite_step():
    s_plus = np.array([0.0, 2.0, 0.0, 1.0])
    s_minus = np.array([3.0, 0.0, 0.0, 1.0])
    a = step_vector(s_plus, s_minus)
    assert np.isfinite(a).all()
    assert a[0] > 10 and a[1] < -10  # pushes hard, toward the side with weight
    assert a[2] == 0.0 and a[3] == 0.0
    assert step_loss(s_plus, s_minus, a) < 1e-4 * 5 + 2.0  # classes 0, 1 almost free


# ------------------------------------------------------------------------- subcosts


@pytest.mark.parametrize("k", [2, 3, 5, 10])
def test_cost_neutral_subcosts_and_initial_loss(k):
    rng = np.random.default_rng(k)
    y = rng.integers(0, k, size=50)
    onehot = np.eye(k)[y]
    c_plus, c_minus = subcosts(1.0 - np.eye(k), y)
    assert_allclose(c_plus, (1.0 - onehot) / 2.0, rtol=1e-15)
    assert_allclose(c_minus, onehot / 2.0, rtol=1e-15)
    for w in (np.ones(50), rng.uniform(0.1, 5.0, size=50)):
        loss = RebelLoss(1.0 - np.eye(k), y, w)
        assert_allclose(loss.loss(np.zeros((50, k))), k / 2.0, rtol=1e-12)


@FAST
@given(cost_matrices(), st.integers(0, 2**32 - 1))
def test_subcosts_match_the_thesis_formula(cost, seed):
    k = cost.shape[0]
    y = np.random.default_rng(seed).integers(0, k, size=20)
    c_plus, c_minus = subcosts(cost, y)
    assert np.isfinite(c_plus).all() and np.isfinite(c_minus).all()
    assert (c_plus >= 0).all() and (c_minus >= 0).all()
    rows = cost[y]
    peak = rows.max(axis=1)
    norms = peak * np.sqrt(np.sum((rows / peak[:, None]) ** 2, axis=1))  # overflow-safe norm
    expected_plus = np.sqrt(k - 1) / 2 * rows * (rows / norms[:, None])
    assert_allclose(c_plus, expected_plus, rtol=1e-10, atol=1e-300)
    assert_allclose(c_minus[np.arange(20), y], norms / (2 * np.sqrt(k - 1)), rtol=1e-10,
                    atol=1e-300)
    off = np.ones_like(c_minus, dtype=bool)
    off[np.arange(20), y] = False
    assert (c_minus[off] == 0).all()
    # The AM-GM pairing that makes the loss bound the cost: 2 sqrt(c+_k c-_y) = C[y, k]
    # (costs below 1e-100 of their row's norm may underflow in c+).
    pair = 2.0 * np.sqrt(c_plus) * np.sqrt(c_minus[np.arange(20), y][:, None])
    assert_allclose(pair, rows, rtol=1e-10, atol=1e-100 * rows.max() + 1e-300)


@pytest.mark.parametrize("seed", range(3))
def test_population_minimiser_is_the_least_risk_class_for_two_classes(seed):
    """With enough data and capacity ``argmax H`` is the Bayes decision (K = 2, any costs)."""
    rng = np.random.default_rng(seed)
    y = np.arange(2)
    for _ in range(200):
        cost = np.array([[0.0, rng.exponential()], [rng.exponential(), 0.0]])
        posterior = rng.dirichlet(np.ones(2))
        c_plus, c_minus = subcosts(cost, y)

        def expected_loss(h, c_plus=c_plus, c_minus=c_minus, posterior=posterior):
            return posterior @ (c_plus @ np.exp(h) + c_minus @ np.exp(-h))

        h = minimize(expected_loss, np.zeros(2), method="BFGS", options={"gtol": 1e-12}).x
        closed = 0.5 * np.log((posterior @ c_minus) / (posterior @ c_plus))
        assert_allclose(h, closed, atol=1e-4)
        risk = posterior @ cost
        if abs(risk[0] - risk[1]) > 1e-6 * risk.max():
            assert np.argmax(closed) == np.argmin(risk)


@FAST
@given(
    cost_matrices(),
    st.integers(1, 30),
    st.floats(1e-3, 30.0),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_surrogate_loss_bounds_the_empirical_risk(cost, n, scale, weighted, seed):
    rng = np.random.default_rng(seed)
    k = cost.shape[0]
    y = rng.integers(0, k, size=n)
    scores = rng.standard_normal((n, k)) * scale
    w = rng.uniform(0.01, 3.0, size=n) if weighted else np.ones(n)
    loss = RebelLoss(cost, y, w)
    pred = np.argmax(scores, axis=1)
    risk = float(np.sum(w * cost[y, pred]) / w.sum())
    if not weighted:
        assert risk == pytest.approx(mean_cost(y, pred, cost, np.arange(k)))
    assert loss.loss(scores) >= risk * (1 - 1e-12)
    if risk > 0:
        assert loss.log_loss(scores) >= np.log(risk) - 1e-12


# -------------------------------------------------------------------------- weights


@pytest.mark.parametrize("seed", range(4))
def test_loss_and_weights_match_the_definition(seed):
    rng = np.random.default_rng(seed)
    n, k = 30, 4
    cost = rng.uniform(0.5, 5.0, size=(k, k))
    np.fill_diagonal(cost, 0.0)
    y = rng.integers(0, k, size=n)
    w = rng.uniform(0.1, 2.0, size=n)
    scores = rng.standard_normal((n, k)) * 2.0
    c_plus, c_minus = subcosts(cost, y)
    wn = (w / w.sum())[:, None]
    true_plus, true_minus = wn * c_plus * np.exp(scores), wn * c_minus * np.exp(-scores)
    direct = float(np.sum(true_plus) + np.sum(true_minus))
    loss = RebelLoss(cost, y, w)
    assert_allclose(loss.loss(scores), direct, rtol=1e-12)
    assert_allclose(loss.log_loss(scores), np.log(direct), rtol=1e-12)
    channels, scale = loss.weights(scores)
    assert channels.shape == (n, 2 * k) and channels.flags.c_contiguous
    assert channels.max() == 1.0
    assert_allclose(scale * channels, np.hstack([true_plus, true_minus]), rtol=1e-12, atol=0)
    # A common factor on sample_weight changes nothing.
    assert_allclose(RebelLoss(cost, y, 7.0 * w).loss(scores), direct, rtol=1e-12)


@pytest.mark.parametrize("kind", ["thesis", "paper", "calibrated"])
def test_class_cost_rows_keep_a_table_and_the_same_weights(kind):
    """Per-row costs that are their class's row give a K x K table of log subcosts (not two
    n x K arrays) and the loss and weights of the cost matrix; other per-row costs keep
    every row."""
    rng = np.random.default_rng(3)
    n, k = 200, 4
    cost = rng.uniform(0.5, 5.0, size=(k, k))
    np.fill_diagonal(cost, 0.0)
    y = rng.integers(0, k - 1, size=n)  # class 3 has no row
    w = rng.uniform(0.1, 2.0, size=n)
    scores = rng.standard_normal((n, k)) * 2.0
    by_matrix = RebelLoss(cost, y, w, kind)
    by_rows = RebelLoss(None, y, w, kind, cost[y])
    other = cost[y].copy()
    other[7, 1] += 0.5  # one row differs from its class's: per-row subcosts
    per_row = RebelLoss(None, y, w, kind, other)
    assert by_rows._log_plus.shape == (k, k) and per_row._log_plus.shape == (n, k)
    c_plus, c_minus = subcosts(None, y, kind, other)
    wn = (w / w.sum())[:, None]
    direct = float(np.sum(wn * c_plus * np.exp(scores)) + np.sum(wn * c_minus * np.exp(-scores)))
    assert_allclose(per_row.loss(scores), direct, rtol=1e-12)
    for a, b in [(by_matrix, by_rows)]:
        assert_allclose(a.log_loss(scores), b.log_loss(scores), rtol=1e-14)
        assert_allclose(a.weights(scores)[0], b.weights(scores)[0], rtol=1e-14)


@pytest.mark.parametrize("magnitude", [1e3, 1e4, 1e5])
def test_weights_and_loss_stay_sane_for_huge_scores(magnitude):
    rng = np.random.default_rng(int(magnitude))
    n, k = 25, 3
    y = rng.integers(0, k, size=n)
    cost = 1.0 - np.eye(k)
    cost[0, 2] = 10.0
    loss = RebelLoss(cost, y, np.ones(n))
    c_plus, c_minus = subcosts(cost, y)
    for sign in (1.0, -1.0, None):
        scores = rng.standard_normal((n, k)) * magnitude
        if sign is not None:  # every sample right (sign=+1) or wrong by a huge margin
            margin = np.where(np.eye(k)[y] > 0, 1.0, -1.0) * sign * magnitude
            scores = margin + rng.standard_normal((n, k))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            channels, scale = loss.weights(scores)
            log_loss = loss.log_loss(scores)
            value = loss.loss(scores)
        assert np.isfinite(channels).all() and channels.min() >= 0.0
        assert channels.max() == 1.0
        assert np.isfinite(log_loss)
        # The log-loss is the log-sum-exp of the terms: within log(#terms) of the largest.
        with np.errstate(divide="ignore"):
            terms = np.concatenate([
                (np.log(c_plus / n) + scores)[c_plus > 0],
                (np.log(c_minus / n) - scores)[c_minus > 0],
            ])
        assert terms.max() - 1e-9 <= log_loss <= terms.max() + np.log(terms.size) + 1e-9
        if abs(log_loss) < 700:
            assert_allclose(value, np.exp(log_loss), rtol=1e-12)
        else:
            assert value == (np.inf if log_loss > 0 else 0.0)
        # The channel holding the largest term is the one scaled to 1.
        with np.errstate(divide="ignore"):
            log_w = np.concatenate([np.log(c_plus) + scores, np.log(c_minus) - scores], axis=1)
        big = np.argmax(log_w.ravel())
        assert channels.ravel()[big] == 1.0
        assert np.isfinite(scale) or log_loss > 700


@pytest.mark.parametrize("n", [40, 20_000])  # (one compiled call; the kernels on threads)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_weights_total_is_the_loss_bit_for_bit(n, seed):
    """The booster takes its initial loss from :meth:`weights_and_loss` instead of a pass of
    its own (:meth:`RebelLoss.loss`): the two must be the same number, for any costs,
    weights and scores, on one thread's kernels and the parallel ones."""
    rng = np.random.default_rng(seed)
    k = 5
    cost = rng.uniform(0.5, 5.0, size=(k, k)) * (rng.random((k, k)) > 0.2)
    np.fill_diagonal(cost, 0.0)
    y = rng.integers(0, k, size=n)
    loss = RebelLoss(cost, y, rng.uniform(0.1, 3.0, size=n))
    for scores in (np.zeros((n, k)), rng.standard_normal((n, k)) * 3.0):
        assert loss.weights_and_loss(scores)[2] == loss.loss(scores)
