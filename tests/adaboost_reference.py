"""A small brute-force discrete AdaBoost, the reference the K = 2 reductions are tested against.

Weak learners: every stump ``s * (x_j > t ? 1 : -1)`` with ``t`` a midpoint between distinct
training values of feature ``j`` (the Binner's thresholds when a feature has at most
``max_bins`` distinct values) and both polarities ``s``, plus the two constant learners.
Each round takes the learner of largest weighted edge ``sum_i w_i y_i phi_i`` (weights summing
to one) and ``alpha = 1/2 ln((1 + edge)/(1 - edge))``.
"""

from __future__ import annotations

import numpy as np


def _midpoints(col: np.ndarray) -> np.ndarray:
    v = np.unique(col)
    lo, hi = v[:-1], v[1:]
    return lo + (hi - lo) / 2.0


def reference_adaboost(X: np.ndarray, y01: np.ndarray, n_rounds: int):
    """Fit discrete AdaBoost; return ``F(X_new)``, the real-valued score (class 1 if > 0)."""
    y = 2.0 * y01 - 1.0
    n = len(y)
    cands = [(-1, 0.0, 1.0), (-1, 0.0, -1.0)]
    for j in range(X.shape[1]):
        for t in _midpoints(X[:, j]):
            cands += [(j, t, 1.0), (j, t, -1.0)]

    def phi(Z, cand):
        j, t, s = cand
        if j < 0:
            return np.full(Z.shape[0], s)
        return s * np.where(Z[:, j] <= t, -1.0, 1.0)

    outputs = np.array([phi(X, c) for c in cands])  # (n_cands, n)
    F = np.zeros(n)
    model = []
    for _ in range(n_rounds):
        w = np.exp(-y * F)
        w /= w.sum()
        edges = outputs @ (w * y)
        best = int(np.argmax(edges))
        edge = edges[best]
        alpha = 0.5 * np.log((1.0 + edge) / (1.0 - edge))
        F += alpha * outputs[best]
        model.append((cands[best], alpha))

    def decision(Z):
        return sum(alpha * phi(Z, c) for c, alpha in model)

    return decision
