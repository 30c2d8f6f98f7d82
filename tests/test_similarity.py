"""Localized similarities: closed forms, the eigenvector route, and the training guarantee."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebelboost.learners.similarity import (
    ONE_POINT,
    TWO_POINT,
    SimilarityArrays,
    binarize,
    bound_loss,
    fit_similarity,
    refine_step,
)
from rebelboost.losses.rebel import RebelLoss


def _weights(rng, n, k):
    return rng.exponential(size=(n, 2 * k)) * (rng.random((n, 2 * k)) < 0.7)


def test_k_by_k_eigenvector_equals_the_n_by_n_one():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n, k = rng.integers(3, 40), rng.integers(2, 6)
        ch = _weights(rng, n, k)
        V, total = ch[:, :k] - ch[:, k:], ch[:, :k].sum(0) + ch[:, k:].sum(0)
        U = V / np.sqrt(total)
        _, vecs = np.linalg.eigh(U @ U.T)  # N x N, fine at this size
        top = vecs[:, -1]
        b = binarize(V, total)
        assert np.array_equal(b, np.where(top >= 0, 1.0, -1.0)) or np.array_equal(
            b, np.where(-top >= 0, 1.0, -1.0)
        ) or np.allclose(top[b != np.sign(top)], 0, atol=1e-12)


def test_isolating_closed_form_equals_direct_evaluation():
    rng = np.random.default_rng(1)
    n, k = 30, 4
    ch = _weights(rng, n, k)
    V, total = ch[:, :k] - ch[:, k:], ch[:, :k].sum(0) + ch[:, k:].sum(0)
    closed = bound_loss(total, 2.0 * V - V.sum(0))
    for i in range(n):
        f = -np.ones(n)
        f[i] = 1.0
        s_plus = ((f > 0)[:, None] * ch[:, :k] + (f < 0)[:, None] * ch[:, k:]).sum(0)
        s_minus = ((f > 0)[:, None] * ch[:, k:] + (f < 0)[:, None] * ch[:, :k]).sum(0)
        assert closed[i] == pytest.approx(2 * np.sqrt(s_plus * s_minus).sum(), rel=1e-12)


def test_two_point_range_and_peak():
    rng = np.random.default_rng(2)
    xi, xj = rng.standard_normal(5), rng.standard_normal(5)
    learner = SimilarityArrays(np.array([TWO_POINT], np.int8), xi[None], xj[None], np.zeros(1),
                               np.zeros(1, np.int64), np.ones(1, np.int64))
    X = np.vstack([rng.standard_normal((2000, 5)) * 3, xi, xj,
                   (xi + xj) / 2 + (4 / 3) ** 0.25 * (xi - xj) / 2])
    f = learner.outputs(X)[:, 0]
    assert np.all(np.abs(f) <= 1 + 1e-12)
    assert f[-3] == pytest.approx(16 / (15 * (4 / 3) ** 0.25))  # ~0.993 at x_i
    assert f[-2] == pytest.approx(-f[-3])
    assert f[-1] == pytest.approx(1.0)  # the true peak


def test_newton_refinement_never_exceeds_the_bound():
    rng = np.random.default_rng(3)
    for _ in range(30):
        n, k = 50, 3
        ch = _weights(rng, n, k)
        w_plus, w_minus = ch[:, :k], ch[:, k:]
        f = rng.uniform(-1, 1, n)
        V, total = w_plus - w_minus, w_plus.sum(0) + w_minus.sum(0)
        D = f @ V
        a0 = 0.5 * np.log((total - D) / (total + D))
        bound = bound_loss(total, D)
        a = refine_step(f, w_plus, w_minus, a0)
        exact = (w_plus * np.exp(f[:, None] * a) + w_minus * np.exp(-f[:, None] * a)).sum()
        exact0 = (w_plus * np.exp(f[:, None] * a0) + w_minus * np.exp(-f[:, None] * a0)).sum()
        assert exact <= exact0 + 1e-12 <= bound + 1e-9
        grad = (f[:, None] * (w_plus * np.exp(f[:, None] * a)
                              - w_minus * np.exp(-f[:, None] * a))).sum(0)
        assert np.allclose(grad, 0, atol=1e-6 * total.max())  # refined to the optimum


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(4, 25), k=st.integers(2, 4),
       d=st.integers(1, 3))
def test_every_iteration_meets_the_guarantee_and_training_error_reaches_zero(seed, n, k, d):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k)  # every class present
    loss = RebelLoss(1 - np.eye(k), y, np.ones(n))
    H = np.zeros((n, k))
    sq = (X**2).sum(1)
    prev = loss.loss(H)
    for _ in range(3000):
        ch, _ = loss.weights(H)
        fit = fit_similarity(X, sq, ch)
        assert np.allclose(fit.learner.outputs(X)[:, 0], fit.output)
        assert fit.loss <= fit.bound * (1 + 1e-9)
        H += fit.output[:, None] * fit.vector
        now = loss.loss(H)
        assert now <= prev * (1 - 2 / (k * n * n)) * (1 + 1e-9)
        prev = now
        if prev < 1 / n:
            break
    assert prev < 1 / n
    assert np.all(H.argmax(1) == y)


def test_one_point_only_mode_uses_no_two_point_learners():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((40, 2))
    y = (X[:, 0] > 0).astype(int)
    loss = RebelLoss(1 - np.eye(2), y, np.ones(40))
    H = np.zeros((40, 2))
    for _ in range(30):
        fit = fit_similarity(X, (X**2).sum(1), loss.weights(H)[0], one_point_only=True)
        assert fit.learner.kind[0] != TWO_POINT
        H += fit.output[:, None] * fit.vector
    assert fit.learner.kind[0] == ONE_POINT


def test_coincident_conflicting_points_get_the_cheapest_label():
    from rebelboost.learners.similarity import resolve_coincident

    X = np.array([[0.0, 0], [0, 0], [0, 0], [1, 1], [2, 2], [2, 2]])
    codes = np.array([0, 1, 1, 0, 1, 1])
    new, changed = resolve_coincident(X, codes, 1 - np.eye(2), np.ones(6))
    assert changed == 1 and new.tolist() == [1, 1, 1, 0, 1, 1]
    # A 10x cost of calling class 0 something else keeps the lone class-0 point's label.
    cost = np.array([[0, 10], [1, 0]], float)
    new, changed = resolve_coincident(X, codes, cost, np.ones(6))
    assert changed == 2 and new.tolist() == [0, 0, 0, 0, 1, 1]
