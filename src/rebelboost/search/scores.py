"""Split scores, one object each, with the QuickBoost bound that goes with it (if any).

A split score is a function ``score(left, right) -> float`` of the channel sums on the two
sides of a candidate split: non-negative, lower is better, ``score(sums, 0)`` the score of not
splitting. Each :class:`SplitScore` names one branch (``code``) of :func:`score_value` and
:func:`bound_value`, so the scans that call them are ordinary numba functions cached on disk
(a score passed to a kernel as a function argument is compiled again in every process).
Adding a score: a numba function below, a branch in both dispatchers, a :class:`SplitScore`.

QuickBoost's bounds (Appel 2017, thesis ch. 3, tightened with the unseen rows' totals ``U``):
a REBEL term becomes ``sqrt((P + x)(M + U - x))`` for some ``0 <= x <= U`` once the unseen
rows join -- concave in ``x``, so at least ``sqrt(P M + U min(P, M))``; a sign-cost candidate
adds some ``(x0, x1)`` of the box ``[0, U0] x [0, U1]`` to its left side and the rest to its
right, and the concave score is smallest at a corner of the box. Both never decrease as rows
join and equal the score when none are unseen.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np

# Scores below this fraction of their total channel mass are rounding noise, taken as 0 (so
# summation order cannot decide which of two perfect splits wins).
SNAP_RTOL = 1e-11
_UNIT_ROUNDOFF = 2.0**-53

_REBEL, _SIGN_COST, _MH_STUMP, _CODEWORD = 0, 1, 2, 3
# The vector-leaf loss (its class prior and leaf limits come with the scan: .splits).
VECTOR_LEAF = 4


@numba.njit(cache=True, nogil=True, inline="always")
def _rebel(left, right):
    n_classes = left.shape[0] // 2
    total = 0.0
    for k in range(n_classes):
        s_plus = max(right[k] + left[n_classes + k], 0.0)
        s_minus = max(right[n_classes + k] + left[k], 0.0)
        total += math.sqrt(s_plus * s_minus)
    return total


@numba.njit(cache=True, nogil=True, inline="always")
def _sign_cost(left, right):
    return min(max(left[0], 0.0), max(left[1], 0.0)) + min(max(right[0], 0.0), max(right[1], 0.0))


@numba.njit(cache=True, nogil=True, inline="always")
def _mh_stump(left, right):
    k = left.shape[0] - 1
    total = left[k] + right[k]
    edge = 0.0
    for c in range(k):
        edge += abs(right[c] - left[c])
    out = total - edge
    return out if out > SNAP_RTOL * total else 0.0


@numba.njit(cache=True, nogil=True, inline="always")
def _codeword(left, right):
    k = left.shape[0] - 1
    best_l = left[0]
    best_r = right[0]
    for c in range(1, k):
        best_l = max(best_l, left[c])
        best_r = max(best_r, right[c])
    total = left[k] + right[k]
    out = total - best_l - best_r
    return out if out > SNAP_RTOL * total else 0.0


@numba.njit(cache=True, nogil=True, inline="always")
def score_value(code, left, right):
    """The score ``code`` of a candidate with channel sums ``left`` and ``right``."""
    if code == _REBEL:
        return _rebel(left, right)
    if code == _SIGN_COST:
        return _sign_cost(left, right)
    if code == _MH_STUMP:
        return _mh_stump(left, right)
    return _codeword(left, right)


@numba.njit(cache=True, nogil=True, inline="always")
def _rebel_bound(left, right, unseen):
    n_classes = left.shape[0] // 2
    total = 0.0
    for k in range(n_classes):
        s_plus = max(right[k] + left[n_classes + k], 0.0)
        s_minus = max(right[n_classes + k] + left[k], 0.0)
        u = unseen[k] + unseen[n_classes + k]
        total += math.sqrt(s_plus * s_minus + u * min(s_plus, s_minus))
    return total


@numba.njit(cache=True, nogil=True, inline="always")
def _sign_cost_bound(left, right, unseen):
    best = np.inf
    for x0 in (0.0, unseen[0]):
        for x1 in (0.0, unseen[1]):
            s = (min(max(left[0] + x0, 0.0), max(left[1] + x1, 0.0))
                 + min(max(right[0] + unseen[0] - x0, 0.0), max(right[1] + unseen[1] - x1, 0.0)))
            best = min(best, s)
    return best


@numba.njit(cache=True, nogil=True, inline="always")
def bound_value(code, left, right, unseen):
    """Least score ``code`` a candidate can reach once rows of channel totals ``unseen`` join."""
    if code == _REBEL:
        return _rebel_bound(left, right, unseen)
    return _sign_cost_bound(left, right, unseen)


@numba.njit(cache=True, nogil=True)
def _call_score(code, left, right):
    return score_value(code, left, right)


@numba.njit(cache=True, nogil=True)
def _call_bound(code, left, right, unseen):
    return bound_value(code, left, right, unseen)


@dataclass(frozen=True)
class SplitScore:
    """A split score: ``code`` picks its branch in the kernels; ``rounding`` (None: the score
    has no QuickBoost bound) maps ``(gamma, n_channels)`` to the error of one computed score
    relative to the channel mass, where ``gamma`` bounds a channel sum's relative error."""

    name: str
    code: int
    rounding: Callable[[float, int], float] | None = None

    @property
    def has_bound(self) -> bool:
        return self.rounding is not None

    def __call__(self, left, right) -> float:
        return float(_call_score(self.code, *_sums(left, right)))

    def bound(self, left, right, unseen) -> float:
        """QuickBoost's lower bound (see the module docstring)."""
        if not self.has_bound:
            raise TypeError(f"the {self.name} score has no QuickBoost bound")
        return float(_call_bound(self.code, *_sums(left, right), _sums(unseen, unseen)[0]))


def _sums(left, right):
    return (np.ascontiguousarray(left, dtype=np.float64),
            np.ascontiguousarray(right, dtype=np.float64))


rebel_score = SplitScore(
    "rebel", _REBEL,
    # sqrt(x y) moves by at most sqrt(|x'y' - xy|): the square root of gamma.
    lambda gamma, n_channels: math.sqrt(gamma * (1.0 + gamma)) + (n_channels + 4) * _UNIT_ROUNDOFF,
)
"""REBEL stump loss / 2 over 2K channels ``(w+, w-)``: the left side emits -1."""

sign_cost_score = SplitScore(
    "sign_cost", _SIGN_COST, lambda gamma, n_channels: 2.0 * (gamma + 4.0 * _UNIT_ROUNDOFF),
)
"""Two channels ``(cost of +1, cost of -1)``: each side takes its cheaper sign."""

mh_stump_score = SplitScore("mh_stump", _MH_STUMP)
"""AdaBoost.MH stump: ``W - sum_l |gamma_l|`` over K+1 channels ``(w y, sum_l w)``; left emits
-1, right +1. Twice the weighted Hamming error of the stump with its best votes."""

codeword_score = SplitScore("codeword", _CODEWORD)
"""GD-MCBoost codeword leaves over K+1 channels ``(<y_1, w>, ..., <y_K, w>, ||w||)``: each side
emits the codeword maximising ``<y_k, sum w>``; ``sum ||w|| - max_k left_k - max_k right_k``."""
