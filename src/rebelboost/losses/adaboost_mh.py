"""AdaBoost.MH with factorized base classifiers ``alpha * v * phi(x)`` (Kégl 2014).

Labels are one-hot sign vectors ``y_i in {-1, +1}^K``; the user weight matrix puts 1/2 on the
true class and ``1/(2(K-1))`` on each other class (times the sample weight), normalised to sum
to one. After ``t`` iterations the weights are ``w_il ∝ W_il exp(-f_l(x_i) y_il)`` and the
weighted exponential risk is ``sum_il W_il exp(-f_l(x_i) y_il)`` (1 before the first step).

For a binary ``phi`` and votes ``v``, the class-wise edges are ``gamma_l = sum_i w_il y_il phi_i``
(with ``v = 1``); the best votes are ``v_l = sign(gamma_l)``, the edge ``gamma = ||gamma||_1``,
``alpha = 1/2 ln((1 + gamma)/(1 - gamma))`` and the risk is multiplied by
``Z = sqrt(1 - gamma^2)`` (weights summing to one).

Search channels (Appendix C on a histogram): a stump needs the K channels ``w_il y_il`` plus one
channel ``sum_l w_il`` (the total, so the score ``W - edge`` is a non-negative loss, as the
shared scan's tie rule wants: ``mh_stump_score`` of :mod:`rebelboost.search.scores`). A
Hamming-tree layer with ``v`` held fixed is an ordinary binary problem: emitting +1 costs
``w-_i = sum_l w_il [v_l y_il = -1]``, emitting -1 costs ``w+_i = sum_l w_il [v_l y_il = +1]``;
the engine's ``sign_cost_score`` scores it.
"""

from __future__ import annotations

import math

import numpy as np

# Relative smoothing of the edge: a perfect edge (gamma = W) gets a large, finite alpha. An
# error ``W - gamma`` below ``PERFECT_RTOL * W`` is rounding (sums in another order), taken as 0.
EDGE_SMOOTHING = 1e-12
PERFECT_RTOL = 1e-11


def initial_weights(codes: np.ndarray, n_classes: int, sample_weight: np.ndarray) -> np.ndarray:
    """The paper's user weights (2), times the sample weights, normalised to sum to one."""
    w = np.full((codes.shape[0], n_classes), 1.0 / (2.0 * (n_classes - 1)))
    w[np.arange(codes.shape[0]), codes] = 0.5
    w *= sample_weight[:, None]
    return w / w.sum()


def sign_labels(codes: np.ndarray, n_classes: int) -> np.ndarray:
    """One-hot labels in {-1, +1}, shape (n, K)."""
    y = -np.ones((codes.shape[0], n_classes))
    y[np.arange(codes.shape[0]), codes] = 1.0
    return y


def binary_alpha(edge: float, total: float) -> float:
    """``1/2 ln((W + gamma)/(W - gamma))``: the risk-minimising coefficient of a +-1 learner."""
    eps = EDGE_SMOOTHING * total
    error = total - edge
    if error < PERFECT_RTOL * total:
        error = 0.0
    return 0.5 * math.log((total + edge + eps) / (error + eps))


class AdaBoostMHLoss:
    """Weights, search channels and risk of factorized AdaBoost.MH for one training set."""

    def __init__(self, codes: np.ndarray, n_classes: int, sample_weight: np.ndarray):
        self.n_classes = n_classes
        self.y = sign_labels(codes, n_classes)
        self.user_weights = initial_weights(codes, n_classes, sample_weight)
        self._log_user = np.log(np.maximum(self.user_weights, np.finfo(float).tiny))
        self._zero = self.user_weights == 0

    def weights(self, scores: np.ndarray) -> np.ndarray:
        """Current ``w_il`` (n, K), summing to one."""
        z = self._log_user - scores * self.y
        z -= z.max()
        w = np.exp(z)
        w[self._zero] = 0.0
        return w / w.sum()

    def risk(self, scores: np.ndarray) -> float:
        """``sum_il W_il exp(-f_l(x_i) y_il)`` (1 for f = 0)."""
        z = self._log_user - scores * self.y
        z = np.where(self._zero, -np.inf, z)
        m = z.max()
        return float(np.exp(m) * np.exp(z - m).sum())

    def stump_channels(self, w: np.ndarray) -> np.ndarray:
        """The K+1 channels ``(w_il y_il, sum_l w_il)`` of the stump search."""
        return np.ascontiguousarray(np.column_stack([w * self.y, w.sum(axis=1)]))

    def fixed_vote_channels(self, w: np.ndarray, votes: np.ndarray) -> np.ndarray:
        """Two channels ``(w-, w+)``: the cost of emitting +1 and -1 with votes held fixed."""
        agree = (votes[None, :] * self.y) > 0
        w_plus = np.where(agree, w, 0.0).sum(axis=1)
        w_minus = np.where(agree, 0.0, w).sum(axis=1)
        return np.ascontiguousarray(np.column_stack([w_minus, w_plus]))

    def classwise_edges(self, w: np.ndarray, phi: np.ndarray) -> np.ndarray:
        """``gamma_l = sum_i w_il y_il phi_i`` (vote +1 on every class)."""
        return (w * self.y * phi[:, None]).sum(axis=0)


def votes_and_alpha(edges: np.ndarray, total: float = 1.0) -> tuple[np.ndarray, float, float]:
    """Votes ``sign(gamma_l)`` (+1 on zero), the edge ``||gamma||_1`` and ``alpha``."""
    votes = np.where(edges >= 0, 1.0, -1.0)
    edge = float(np.abs(edges).sum())
    return votes, edge, binary_alpha(edge, total)
