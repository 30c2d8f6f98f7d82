"""MCBoost (Saberian and Vasconcelos, NIPS 2011): simplex codewords and the margin loss.

Class ``k`` has the codeword ``y_k``, a vertex of a regular simplex in ``R^(K-1)`` centred at the
origin (unit vectors, pairwise dot product ``-1/(K-1)``). The predictor ``f(x)`` lives in
``R^(K-1)``; the class scores are ``s_k(x) = <f(x), y_k>`` and the prediction is their argmax.
The loss (15) of a sample of class ``c`` is ``sum_k exp(-1/2 <y_c - y_k, f(x)>)
= sum_k exp(-1/2 (s_c - s_k))``; the risk is its (sample-weighted) mean, ``K`` at ``f = 0``.
For K = 2 the codewords are +1 and -1 and the loss is ``1 + exp(-y f)``: AdaBoost's.

Gradients (24) and (31): with ``E_ik = exp(-1/2 (s_ic - s_ik))``,
``w_i = 1/2 sum_k (y_c - y_k) E_ik`` in ``R^(K-1)``; CD-MCBoost uses its component ``j``,
GD-MCBoost all of it. Steps are exact line searches of the (convex) risk along the chosen
direction: ``R(alpha) = sum A exp(alpha b)``.
"""

from __future__ import annotations

import math

import numpy as np

# Largest step a line search takes (a learner that separates perfectly would want infinity).
ALPHA_MAX = 30.0


def simplex_codewords(n_classes: int) -> np.ndarray:
    """Vertices of a regular simplex in ``R^(K-1)``, shape (K, K-1), by recursion on K.

    K = 2 gives (+1, -1). From the K vertices ``u_k`` in ``R^(K-1)`` the K+1 vertices in
    ``R^K`` are ``(sqrt(1 - 1/K^2) u_k, -1/K)`` and ``(0, ..., 0, 1)``.
    """
    if n_classes < 2:
        raise ValueError(f"need at least 2 classes for codewords, got {n_classes}")
    y = np.array([[1.0], [-1.0]])
    for m in range(2, n_classes):
        scaled = np.column_stack([math.sqrt(1.0 - 1.0 / m**2) * y, np.full(m, -1.0 / m)])
        new = np.zeros((1, m))
        new[0, -1] = 1.0
        y = np.vstack([scaled, new])
    return y


class MCBoostLoss:
    """Risk, gradients and line searches of the MCBoost loss for one training set."""

    def __init__(self, codes: np.ndarray, codewords: np.ndarray, sample_weight: np.ndarray):
        self.codes = codes
        self.codewords = codewords
        self.n_classes = codewords.shape[0]
        self.gram = codewords @ codewords.T  # <y_a, y_b>
        sw = sample_weight / sample_weight.sum()
        self._log_sw = np.log(np.maximum(sw, np.finfo(float).tiny))
        self._zero = sw == 0

    def _log_terms(self, scores: np.ndarray) -> np.ndarray:
        """``log(sw_i E_ik)``, (n, K), -inf for zero-weight rows."""
        n = scores.shape[0]
        true = scores[np.arange(n), self.codes]
        z = self._log_sw[:, None] - 0.5 * (true[:, None] - scores)
        z[self._zero] = -np.inf
        return z

    def risk(self, scores: np.ndarray) -> float:
        z = self._log_terms(scores)
        m = z.max()
        return float(np.exp(m) * np.exp(z - m).sum())

    def terms(self, scores: np.ndarray) -> np.ndarray:
        """``sw_i E_ik`` rescaled so the largest is 1 (directions and steps are scale-free)."""
        z = self._log_terms(scores)
        return np.exp(z - z.max())

    def gradient(self, terms: np.ndarray) -> np.ndarray:
        """``w_i = 1/2 sum_k (y_c - y_k) E_ik``, (n, K-1).

        The true class's own term (``E_ic = 1`` relative, ``y_c - y_c = 0``) is left out before
        summing, so a well-classified sample's tiny gradient is not lost to cancellation.
        """
        others = terms.copy()
        others[np.arange(terms.shape[0]), self.codes] = 0.0
        return 0.5 * (others.sum(axis=1)[:, None] * self.codewords[self.codes]
                      - others @ self.codewords)

    def component_step(self, terms: np.ndarray, g: np.ndarray, j: int) -> float:
        """Line search of ``R(f + alpha g 1_j)`` for a +-1 learner ``g`` (CD-MCBoost)."""
        k = self.n_classes
        group = self.codes * 2 + (g > 0)
        a = _group_sums(group, terms, 2 * k)  # (2K, K)
        yj = self.codewords[:, j]
        sign = np.tile([-1.0, 1.0], k)  # g of each group
        true_j = np.repeat(yj, 2)
        b = -0.5 * sign[:, None] * (true_j[:, None] - yj[None, :])
        return line_search(a.ravel(), b.ravel())

    def codeword_step(self, terms: np.ndarray, leaf_class: np.ndarray) -> float:
        """Line search of ``R(f + alpha y_{leaf_class})`` (GD-MCBoost with codeword leaves)."""
        k = self.n_classes
        group = self.codes * k + leaf_class
        a = _group_sums(group, terms, k * k)  # (K*K, K): (true c, leaf class m) x k
        c = np.repeat(np.arange(k), k)
        m = np.tile(np.arange(k), k)
        b = -0.5 * (self.gram[c, m][:, None] - self.gram[:, m].T)
        return line_search(a.ravel(), b.ravel())


def _group_sums(group: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    return np.stack(
        [np.bincount(group, weights=values[:, k], minlength=n_groups)
         for k in range(values.shape[1])], axis=1)


def line_search(a: np.ndarray, b: np.ndarray, alpha_max: float = ALPHA_MAX) -> float:
    """Minimiser over ``[-alpha_max, alpha_max]`` of the convex ``sum a exp(alpha b)`` (a >= 0).

    Safeguarded Newton on the derivative; never returns a step that raises the value above
    its value at 0.
    """
    keep = (a > 0) & (b != 0)
    a, b = a[keep], b[keep]
    if a.size == 0:
        return 0.0

    def derivs(alpha):
        e = a * np.exp(alpha * b)
        return float(e.sum()), float((e * b).sum()), float((e * b * b).sum())

    lo, hi = -alpha_max, alpha_max
    if derivs(lo)[1] >= 0:
        alpha = lo
    elif derivs(hi)[1] <= 0:
        alpha = hi
    else:
        alpha = 0.0
        for _ in range(200):
            _, d1, d2 = derivs(alpha)
            if d1 > 0:
                hi = alpha
            elif d1 < 0:
                lo = alpha
            else:
                break
            nxt = alpha - d1 / d2 if d2 > 0 else 0.5 * (lo + hi)
            if not lo < nxt < hi:
                nxt = 0.5 * (lo + hi)
            if abs(nxt - alpha) <= 1e-15 * (1.0 + abs(alpha)):
                alpha = nxt
                break
            alpha = nxt
    if derivs(alpha)[0] > derivs(0.0)[0]:
        return 0.0
    return alpha
