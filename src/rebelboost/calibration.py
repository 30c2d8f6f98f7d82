"""Calibration maps: class scores ``H`` to posteriors, fitted on out-of-fold scores.

A map is a temperature ``T`` on the scores (``sigmoid(2 H / T)`` renormalised, the model's
own link; ``T < 1`` sharpens, ``T > 1`` softens), optionally followed by vector scaling
(``softmax(a * log p + b)``) or Dirichlet-style matrix scaling (``softmax(W log p + b)``, Kull
et al., NeurIPS 2019) on the tempered posteriors' logarithms. Scaling weights are penalised
towards no change (``W = I``, ``b = 0``) by ``strength / n_rows``: with few rows the map
stays close to the temperature alone.

:func:`fit_calibration` picks among the three by cross-fitted log-loss on the rows it is
given (each kind fitted on the other folds, scored on its own): a richer kind only where it
beats the one kept by more than half a standard error of the paired per-row difference.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize, minimize_scalar
from scipy.special import log_softmax

from .costs import proba_from_scores

KINDS = ("temperature", "vector", "matrix")
LOG_T_BOUNDS = (-4.0, 5.0)  # T in [0.018, 148]
LOG_FLOOR = np.log(1e-12)  # log-probabilities below this are clipped before scaling
PENALTY = 10.0  # strength of the pull towards no change, in pseudo-rows


@dataclass(frozen=True)
class CalibrationMap:
    """Scores ``(n, K)`` to calibrated class probabilities ``(n, K)``."""

    kind: str = "temperature"
    temperature: float = 1.0
    weights: np.ndarray | None = None  # (K, K); diagonal for 'vector'
    bias: np.ndarray | None = None  # (K,)
    stats: dict = field(default_factory=dict, compare=False)

    def proba(self, scores: np.ndarray) -> np.ndarray:
        p = proba_from_scores(scores, self.temperature)
        if self.kind == "temperature":
            return p
        return np.exp(log_softmax(_log(p) @ self.weights.T + self.bias, axis=1))

    def to_dict(self) -> dict:
        doc = {"kind": self.kind, "temperature": float(self.temperature)}
        if self.kind != "temperature":
            doc["weights"] = self.weights.tolist()
            doc["bias"] = self.bias.tolist()
        return doc

    @classmethod
    def from_dict(cls, doc, n_classes: int) -> CalibrationMap:
        """A checked map from a model file; ``ValueError`` says what is wrong."""
        if not isinstance(doc, dict) or doc.get("kind") not in KINDS:
            raise ValueError(f"calibration {doc!r} is not a map of a known kind {KINDS}")
        t = doc.get("temperature")
        if type(t) not in (int, float) or not 0 < t < np.inf:
            raise ValueError(f"calibration temperature {t!r} is not a positive number")
        if doc["kind"] == "temperature":
            return cls("temperature", float(t))
        try:
            w = np.asarray(doc["weights"], dtype=np.float64)
            b = np.asarray(doc["bias"], dtype=np.float64)
        except (KeyError, TypeError, ValueError):
            raise ValueError("calibration weights or bias are not numeric arrays") from None
        if w.shape != (n_classes, n_classes) or b.shape != (n_classes,):
            raise ValueError(f"calibration weights {w.shape} / bias {b.shape} for "
                             f"{n_classes} classes")
        if not (np.isfinite(w).all() and np.isfinite(b).all()):
            raise ValueError("calibration weights or bias are not finite")
        return cls(doc["kind"], float(t), w, b)


def _log(p: np.ndarray) -> np.ndarray:
    return np.maximum(np.log(np.maximum(p, np.finfo(float).tiny)), LOG_FLOOR)


def row_log_loss(proba: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Each row's ``-log p(true class)`` (probabilities floored at 1e-12)."""
    return -_log(proba[np.arange(len(codes)), codes])


def fit_temperature(scores: np.ndarray, codes: np.ndarray, sample_weight=None) -> float:
    """The ``T`` minimising the weighted log-loss of ``proba_from_scores(scores, T)``.

    Searched over ``log T`` in :data:`LOG_T_BOUNDS`, so both sharpening (``T < 1``) and
    softening; on out-of-fold scores a perfectly separated set pins ``T`` at the lower
    bound, where the decisions are those of ``argmax`` anyway.
    """
    def loss(log_t):
        p = proba_from_scores(scores, np.exp(log_t))
        return np.average(row_log_loss(p, codes), weights=sample_weight)

    return float(np.exp(minimize_scalar(loss, bounds=LOG_T_BOUNDS, method="bounded").x))


def fit_scaling(log_p: np.ndarray, codes: np.ndarray, sample_weight, kind: str,
                strength: float = PENALTY) -> tuple[np.ndarray, np.ndarray]:
    """``(W, b)`` of ``softmax(W log p + b)`` by penalised maximum likelihood.

    The penalty ``strength / n * (||W - I||^2 + ||b||^2)`` pulls towards no change (at
    ``W = I, b = 0`` the map returns ``p``); 'vector' keeps ``W`` diagonal.
    """
    n, k = log_p.shape
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    w = w / w.sum()
    rows = np.arange(n)
    lam = strength / n
    eye = np.eye(k)

    def unpack(theta):
        if kind == "vector":
            return np.diag(theta[:k]), theta[k:]
        return theta[:k * k].reshape(k, k), theta[k * k:]

    def objective(theta):  # (called hundreds of times: a few passes over (n, K) arrays)
        W, b = unpack(theta)
        z = log_p @ W.T + b
        z -= z.max(axis=1, keepdims=True)
        q = np.exp(z)
        total = q.sum(axis=1)
        value = w @ (np.log(total) - z[rows, codes])  # the weighted -log q(true class)
        value += lam * (((W - eye) ** 2).sum() + (b ** 2).sum())
        q *= (w / total)[:, None]
        q[rows, codes] -= w  # d value / d z
        gW = q.T @ log_p + 2 * lam * (W - eye)
        gb = q.sum(axis=0) + 2 * lam * b
        grad_w = np.diag(gW) if kind == "vector" else gW.ravel()
        return value, np.concatenate([grad_w, gb])

    start = np.concatenate([np.ones(k) if kind == "vector" else eye.ravel(), np.zeros(k)])
    theta = minimize(objective, start, jac=True, method="L-BFGS-B",
                     options={"maxiter": 500}).x
    return unpack(theta)


def fit_map(kind: str, scores, codes, sample_weight=None,
            temperature: float | None = None) -> CalibrationMap:
    """One calibration map of ``kind`` fitted on (scores, codes) (at ``temperature`` when
    given, else at the fitted one)."""
    t = fit_temperature(scores, codes, sample_weight) if temperature is None else temperature
    if kind == "temperature":
        return CalibrationMap("temperature", t)
    W, b = fit_scaling(_log(proba_from_scores(scores, t)), codes, sample_weight, kind)
    return CalibrationMap(kind, t, W, b)


def fit_calibration(scores: np.ndarray, codes: np.ndarray, sample_weight, folds: np.ndarray,
                    kinds=KINDS) -> tuple[CalibrationMap, np.ndarray, dict]:
    """``(map, cross-fitted probabilities, evidence)`` on out-of-fold ``scores``.

    ``folds`` assigns each row a fold (``-1``: not used for fitting, e.g. a row whose class
    its fold model never saw; it still gets cross-fitted probabilities). Each kind is fitted
    on the other folds' rows and scored on its own fold's (the temperature fitted once per
    fold, the scalings on top of it); a richer kind replaces the one kept only where it beats
    it by half a standard error of the per-row log-loss difference. The kept kind is refitted
    on all used rows; its cross-fitted probabilities are what an honest out-of-fold decision
    rule sees.
    """
    used = folds >= 0
    w = np.ones(len(codes)) if sample_weight is None else np.asarray(sample_weight, float)
    fold_ids = np.unique(folds[used])
    crossed = {kind: np.empty(scores.shape) for kind in kinds}
    for f in fold_ids:
        fit_rows = used & (folds != f)
        if len(np.unique(codes[fit_rows])) < 2:
            fit_rows = used
        rows = folds == f
        if f == fold_ids[0]:
            rows = rows | ~np.isin(folds, fold_ids)  # unused rows: scored by the first fold's
        t = fit_temperature(scores[fit_rows], codes[fit_rows], w[fit_rows])
        for kind in kinds:
            cal = fit_map(kind, scores[fit_rows], codes[fit_rows], w[fit_rows], temperature=t)
            crossed[kind][rows] = cal.proba(scores[rows])
    losses = {kind: row_log_loss(p, codes)[used] for kind, p in crossed.items()}
    weights = w[used] / w[used].sum()
    best = kinds[0]
    for kind in kinds[1:]:
        diff = losses[kind] - losses[best]
        mean = float(weights @ diff)
        se = float(np.sqrt(weights @ (diff - mean) ** 2 / max(used.sum() - 1, 1)))
        if mean < -0.5 * se:
            best = kind
    final = fit_map(best, scores[used], codes[used], w[used])
    evidence = {"calibration": best,
                "log_loss": {kind: float(weights @ loss) for kind, loss in losses.items()}}
    return final, crossed[best], evidence
