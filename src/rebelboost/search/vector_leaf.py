"""Vector-leaf REBEL's closed forms (:mod:`rebelboost.learners.vector_tree`).

A leaf whose rows' weights sum to ``W+_k``, ``W-_k`` takes the step
``a_k = 1/2 ln(Q-_k / Q+_k)`` with ``Q±_k = W±_k + m_k`` (``m_k``: ``leaf_smoothing``
pseudo-rows of the root's average weight, the ``prior``) and then costs
``W+_k e^a_k + W-_k e^-a_k``. A split's score is the sum of its two children's costs
(:func:`pair_loss`, infinite when either side is lighter than ``min_count``: the last channel
is the sample weight); :func:`.splits.scan_feature` scans it like every other score.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..losses.rebel import STEP_EPS


@numba.njit(cache=True, nogil=True)
def leaf_vectors(sums: np.ndarray, prior: np.ndarray, k: int, out: np.ndarray) -> None:
    """Leaves' smoothed steps ``1/2 ln(Q- / Q+)`` (0 for a class without weight) into the
    first rows of ``out`` (L', K): from the leaves' channel sums (L, 2K + 1), for a whole tree
    in one call."""
    for i in range(sums.shape[0]):
        for c in range(k):
            # sums of the larger child are its parent's minus the smaller's: clamp rounding
            p, m = max(sums[i, c], 0.0), max(sums[i, k + c], 0.0)
            eps = max(STEP_EPS * (p + m), 2.2250738585072014e-308)
            a = 0.5 * (math.log(m + prior[c] + eps) - math.log(p + prior[c] + eps))
            out[i, c] = a if p + m > 0 else 0.0


@numba.njit(cache=True, nogil=True, inline="always")
def _class_loss(p, m, q):
    """``p e^a + m e^-a`` at the smoothed step ``a = 1/2 ln((m + q) / (p + q))``."""
    p = max(p, 0.0)
    m = max(m, 0.0)
    if p + m <= 0.0:
        return 0.0
    eps = max(STEP_EPS * (p + m), 2.2250738585072014e-308)
    big_p = p + q + eps
    big_m = m + q + eps
    root = math.sqrt(big_p * big_m)
    if root > 0.0:
        return (p * big_m + m * big_p) / root
    # weights so small that the product underflows (a leaf of rows fitted long ago): the
    # same value from the square roots apart
    root_p, root_m = math.sqrt(big_p), math.sqrt(big_m)
    return p * (root_m / root_p) + m * (root_p / root_m)


@numba.njit(cache=True, nogil=True)
def leaf_loss(sums, prior, k):
    total = 0.0
    for c in range(k):
        total += _class_loss(sums[c], sums[k + c], prior[c])
    return total


@numba.njit(cache=True, nogil=True)
def root_priors(total, k, smoothing, category_smoothing):
    """A tree's pseudo-rows from its root's sums ``total`` (2K + 1): ``smoothing`` (and,
    for categorical splits, ``category_smoothing``) times each class's mean channel weight
    per row; and the root's loss under the first."""
    count = max(total[2 * k], 1.0)
    prior, category_prior = np.empty(k), np.empty(k)
    for c in range(k):
        mean = (total[c] + total[k + c]) / (2.0 * count)
        prior[c], category_prior[c] = smoothing * mean, category_smoothing * mean
    return prior, category_prior, leaf_loss(total, prior, k)


@numba.njit(cache=True, nogil=True, inline="always")
def pair_loss(left, right, prior, k, min_count):
    if left[2 * k] < min_count or right[2 * k] < min_count:
        return np.inf
    total = 0.0
    for c in range(k):
        total += _class_loss(left[c], left[k + c], prior[c])
        total += _class_loss(right[c], right[k + c], prior[c])
    return total
