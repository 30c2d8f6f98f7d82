"""Calibration maps (temperature, vector and matrix scaling) and their out-of-fold choice."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import check_grad
from scipy.special import softmax

from rebelboost.calibration import (
    CalibrationMap,
    fit_calibration,
    fit_scaling,
    fit_temperature,
    row_log_loss,
)
from rebelboost.costs import proba_from_scores


def _draw(rng, proba):
    cumulative = proba.cumsum(axis=1)
    return (rng.random((len(proba), 1)) > cumulative).sum(axis=1)


@pytest.mark.parametrize("true_t", [0.5, 2.5])
def test_temperature_recovers_a_known_temperature_sharper_or_softer(true_t):
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((20000, 4)) * 0.6
    codes = _draw(rng, proba_from_scores(scores, true_t))
    assert fit_temperature(scores, codes) == pytest.approx(true_t, rel=0.06)


@pytest.mark.parametrize("n", [50, 1000])  # one compiled pass; BLAS and numpy's exp
@pytest.mark.parametrize("kind", ["vector", "matrix"])
def test_scaling_gradient_matches_finite_differences(kind, n):
    """The penalised likelihood and its gradient (what L-BFGS trusts), on both of its
    evaluations, against the plain formula and finite differences."""
    from rebelboost import calibration

    assert (n * 3 < calibration.FUSED_EXPS) == (n == 50)
    rng = np.random.default_rng(1)
    log_p = np.log(rng.dirichlet(np.ones(3), size=n))
    log_p[0, 1] = calibration.LOG_FLOOR  # a floored probability
    codes = rng.integers(0, 3, n)
    captured = {}
    real_minimize = calibration.minimize

    def spy(fun, x0, **kwargs):
        captured["fun"] = fun
        return real_minimize(fun, x0, **kwargs)

    calibration.minimize = spy
    weight = rng.uniform(0.1, 3.0, n)
    try:
        fit_scaling(log_p, codes, weight, kind)
    finally:
        calibration.minimize = real_minimize
    fun = captured["fun"]
    theta = rng.standard_normal(6 if kind == "vector" else 12) * 2
    assert check_grad(lambda t: fun(t)[0], lambda t: fun(t)[1], theta) < 1e-5
    # the value: the weighted mean -log softmax(W log p + b)[true class], plus the penalty
    W = np.diag(theta[:3]) if kind == "vector" else theta[:9].reshape(3, 3)
    b = theta[-3:]
    z = log_p @ W.T + b
    logq = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    want = -np.average(logq[np.arange(n), codes], weights=weight)
    want += calibration.PENALTY / n * (((W - np.eye(3)) ** 2).sum() + (b ** 2).sum())
    assert fun(theta)[0] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("kind", ["vector", "matrix"])
def test_both_evaluations_of_the_scaling_loss_agree(kind):
    """The compiled pass (few rows) and the BLAS one (many) are the same function: value
    and gradient equal to rounding on the same rows, floored probabilities included."""
    from rebelboost import calibration

    rng = np.random.default_rng(2)
    k = 7
    log_p = np.log(rng.dirichlet(np.ones(k) * 0.4, size=400))
    log_p[rng.random(log_p.shape) < 0.05] = calibration.LOG_FLOOR
    codes = rng.integers(0, k, 400)
    w = rng.uniform(0.1, 3.0, 400)
    w /= w.sum()
    m = k if kind == "vector" else k * k
    fused = calibration._scaling_objective(log_p, codes, w, 0.03, kind == "vector")
    threshold = calibration.FUSED_EXPS
    calibration.FUSED_EXPS = 0
    try:
        blas = calibration._scaling_objective(log_p, codes, w, 0.03, kind == "vector")
    finally:
        calibration.FUSED_EXPS = threshold
    for _ in range(5):
        theta = rng.standard_normal(m + k) * 1.5
        (v1, g1), (v2, g2) = fused(theta), blas(theta)
        assert v2 == pytest.approx(v1, rel=1e-13)
        assert_allclose(g2, g1, rtol=1e-11, atol=1e-15)


@pytest.mark.parametrize("kind", ["vector", "matrix"])
def test_scaling_started_from_its_solution_or_elsewhere_finds_the_same_map(kind):
    """A warm start (the cross-fitting's) moves where the search begins, not where it ends:
    the same map to the stopping tolerance, from no change or from a perturbed solution."""
    rng = np.random.default_rng(4)
    log_p = np.log(rng.dirichlet(np.ones(4) * 0.7, size=800))
    codes = _draw(rng, softmax(1.6 * log_p + [0.3, 0.0, -0.2, 0.1], axis=1))
    W, b = fit_scaling(log_p, codes, None, kind)
    W2, b2 = fit_scaling(log_p, codes, None, kind,
                         start=(W + rng.normal(0, 0.3, W.shape) * (W != 0), b - 0.2))
    assert_allclose(W2, W, atol=2e-3)
    assert_allclose(b2, b, atol=2e-3)
    if kind == "vector":
        assert not (W2 - np.diag(np.diag(W2))).any()


def test_temperature_loss_is_the_log_loss_of_the_tempered_posteriors():
    """The compiled loss the temperature search minimises, against ``row_log_loss`` of
    ``proba_from_scores``: extreme scores included, where the sigmoid underflows."""
    from rebelboost.calibration import _temperature_loss

    rng = np.random.default_rng(3)
    scores = rng.standard_normal((40, 4)) * 3
    scores[0] = [-900.0, -800.0, -950.0, -990.0]  # every class's sigmoid below the floor
    scores[1, 2] = 400.0
    codes = rng.integers(0, 4, 40)
    weight = rng.uniform(0.1, 2.0, 40)
    for log_t in (-4.0, -1.0, 0.0, 2.5, 5.0):
        want = np.average(row_log_loss(proba_from_scores(scores, np.exp(log_t)), codes),
                          weights=weight)
        got = _temperature_loss(log_t, scores, codes, weight / weight.sum())
        assert got == pytest.approx(want, rel=1e-12)


def test_matrix_scaling_undoes_a_known_dirichlet_distortion():
    """Posteriors distorted by a known ``softmax(W log p + b)``: matrix scaling, fitted on
    the distorted ones, returns close to the truth and is the kind kept."""
    rng = np.random.default_rng(2)
    n, k = 6000, 3
    scores = rng.standard_normal((n, k))
    shown = proba_from_scores(scores)
    W = np.array([[1.4, 0.5, 0.0], [0.0, 0.7, 0.3], [-0.4, 0.0, 1.2]])
    b = np.array([0.3, -0.2, 0.1])
    truth = softmax(np.log(shown) @ W.T + b, axis=1)
    codes = _draw(rng, truth)
    folds = np.arange(n) % 3
    cal, crossed, evidence = fit_calibration(scores, codes, None, folds)
    assert cal.kind == "matrix" and evidence["calibration"] == "matrix"
    assert np.abs(cal.proba(scores) - truth).mean() < 0.02
    assert evidence["log_loss"]["matrix"] < evidence["log_loss"]["temperature"]
    assert crossed.shape == (n, k) and np.allclose(crossed.sum(axis=1), 1)


def test_a_pure_temperature_keeps_the_temperature_map():
    rng = np.random.default_rng(3)
    scores = rng.standard_normal((3000, 4))
    codes = _draw(rng, proba_from_scores(scores, 2.0))
    cal, _, _ = fit_calibration(scores, codes, None, np.arange(3000) % 3)
    assert cal.kind == "temperature" and cal.temperature == pytest.approx(2.0, rel=0.1)


def test_scaling_on_few_rows_stays_near_no_change():
    rng = np.random.default_rng(4)
    log_p = np.log(rng.dirichlet(np.ones(4), size=8))
    codes = rng.integers(0, 4, 8)
    W_few, b_few = fit_scaling(log_p, codes, None, "matrix")
    many = np.repeat(log_p, 200, axis=0), np.repeat(codes, 200)
    W_many, _ = fit_scaling(*many, None, "matrix")
    # The pull towards W = I, b = 0 weighs 10 pseudo-rows: far stronger against 8 rows.
    assert np.abs(W_few - np.eye(4)).max() < np.abs(W_many - np.eye(4)).max()
    assert np.abs(W_few - np.eye(4)).max() < 0.5 and np.abs(b_few).max() < 0.5


def test_map_survives_its_dictionary_and_refuses_bad_ones():
    rng = np.random.default_rng(5)
    cal = CalibrationMap("vector", 1.7, np.diag([1.2, 0.8, 1.0]), np.array([0.1, 0.0, -0.1]))
    again = CalibrationMap.from_dict(cal.to_dict(), 3)
    scores = rng.standard_normal((10, 3))
    assert_allclose(again.proba(scores), cal.proba(scores), rtol=1e-15)
    for bad, message in [({"kind": "spline", "temperature": 1.0}, "known kind"),
                         ({"kind": "temperature", "temperature": -1.0}, "positive"),
                         ({**cal.to_dict(), "bias": [0.0]}, "for 3 classes")]:
        with pytest.raises(ValueError, match=message):
            CalibrationMap.from_dict(bad, 3)


def test_row_log_loss_is_finite_for_a_zero_probability():
    loss = row_log_loss(np.array([[1.0, 0.0]]), np.array([1]))
    assert np.isfinite(loss).all() and loss[0] == pytest.approx(-np.log(1e-12))


def test_the_calibration_does_not_depend_on_blas_threads():
    """The maps and their evidence are the same whatever BLAS's thread count around the fit
    (scipy's L-BFGS-B steps differed in their last bits on two threads, and a cost route's
    threads changed the count under them: model files that differed from run to run)."""
    from threadpoolctl import threadpool_limits

    for seed in range(6):
        rng = np.random.default_rng(seed)
        n, k = 528, 11
        codes = rng.integers(0, k, n)
        scores = rng.normal(size=(n, k)) * 3
        scores[np.arange(n), codes] += 2.5
        folds = rng.integers(0, 3, n)
        fits = []
        for threads in (1, 2):
            with threadpool_limits(threads, user_api="blas"):
                fits.append(fit_calibration(scores, codes, None, folds))
        (map1, proba1, evidence1), (map2, proba2, evidence2) = fits
        assert evidence1 == evidence2
        np.testing.assert_array_equal(proba1, proba2)
