"""Vector-leaf REBEL's closed forms and split scan (:mod:`rebelboost.learners.vector_tree`).

A leaf whose rows' weights sum to ``W+_k``, ``W-_k`` takes the step
``a_k = 1/2 ln(Q-_k / Q+_k)`` with ``Q±_k = W±_k + m_k`` (``m_k``: ``leaf_smoothing``
pseudo-rows of the root's average weight, the ``prior``) and then costs
``W+_k e^a_k + W-_k e^-a_k``. A split's score is the sum of its two children's costs; the
scan walks a feature's bins with prefix sums like :func:`.splits.scan_feature`, skipping
candidates that leave either side lighter than ``min_count`` (the last channel of the
histogram is the sample weight).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..losses.rebel import STEP_EPS
from .splits import TIE_RTOL, Split, pick_split


def best_vector_split(hist: np.ndarray, features: np.ndarray, n_value_bins: np.ndarray,
                      has_missing: np.ndarray, missing_bin: int, prior: np.ndarray, k: int,
                      min_count: float, parallel: bool) -> Split | None:
    """The best split of a leaf's histogram over ``features`` (``feature`` indexes
    ``features``), or None; ``parallel`` scans the features on every thread."""
    scan = _scan if parallel else _scan_serial
    scores, bins, m_left = scan(hist, features, n_value_bins, has_missing, missing_bin, prior,
                                k, min_count)
    return pick_split(scores, bins, m_left)


def leaf_vector(sums: np.ndarray, prior: np.ndarray, k: int) -> np.ndarray:
    """A leaf's smoothed step ``1/2 ln(Q- / Q+)`` (0 for a class without weight)."""
    # sums of the larger child are its parent's minus the smaller's: clamp rounding below 0
    p, m = np.maximum(sums[:k], 0.0), np.maximum(sums[k:2 * k], 0.0)
    eps = np.maximum(STEP_EPS * (p + m), np.finfo(np.float64).tiny)
    a = 0.5 * (np.log(m + prior + eps) - np.log(p + prior + eps))
    return np.where(p + m > 0, a, 0.0)


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
    return (p * big_m + m * big_p) / math.sqrt(big_p * big_m)


@numba.njit(cache=True, nogil=True)
def leaf_loss(sums, prior, k):
    total = 0.0
    for c in range(k):
        total += _class_loss(sums[c], sums[k + c], prior[c])
    return total


@numba.njit(cache=True, nogil=True, inline="always")
def _pair_loss(left, right, prior, k, min_count):
    if left[2 * k] < min_count or right[2 * k] < min_count:
        return np.inf
    total = 0.0
    for c in range(k):
        total += _class_loss(left[c], left[k + c], prior[c])
        total += _class_loss(right[c], right[k + c], prior[c])
    return total


@numba.njit(cache=True, nogil=True)
def _scan_one(hist_f, n_bins, has_missing, missing_bin, prior, k, min_count):
    """Best ``(score, bin, missing_left)`` of one feature (the scan of :mod:`.splits` with the
    vector-leaf score and the count limit)."""
    n_channels = hist_f.shape[1]
    total = np.zeros(n_channels)
    for b in range(n_bins):
        for c in range(n_channels):
            total[c] += hist_f[b, c]
    missing = hist_f[missing_bin].copy()
    total += missing
    left = np.zeros(n_channels)
    left_m = np.empty(n_channels)
    right = np.empty(n_channels)
    right_m = np.empty(n_channels)
    fbest, fbin, fml = np.inf, 0, False
    count = n_channels - 1
    for b in range(n_bins - 1):
        for c in range(n_channels):
            left[c] += hist_f[b, c]
            right[c] = total[c] - left[c]
        if right[count] < min_count:  # (only falls as b grows, also with missing left)
            break
        if left[count] + missing[count] < min_count:  # too light either way
            continue
        if hist_f[b, count] == 0.0 and b > 0:  # no weight in the bin: the last split again
            continue
        s = _pair_loss(left, right, prior, k, min_count)
        if s < fbest * (1.0 - TIE_RTOL):
            fbest, fbin, fml = s, b, False
        if has_missing:
            for c in range(n_channels):
                left_m[c] = left[c] + missing[c]
                right_m[c] = right[c] - missing[c]
            s = _pair_loss(left_m, right_m, prior, k, min_count)
            if s < fbest * (1.0 - TIE_RTOL):
                fbest, fbin, fml = s, b, True
    if has_missing and n_bins >= 1:
        for c in range(n_channels):
            left[c] = total[c] - missing[c]
        s = _pair_loss(left, missing, prior, k, min_count)
        if s < fbest * (1.0 - TIE_RTOL):
            fbest, fbin, fml = s, n_bins - 1, False
    return fbest, fbin, fml


@numba.njit(parallel=True, cache=True, nogil=True)
def _scan(hist, features, n_value_bins, has_missing, missing_bin, prior, k, min_count):
    """Each listed feature's best split, in the order of ``features``."""
    n = features.shape[0]
    scores = np.full(n, np.inf)
    bins = np.zeros(n, dtype=np.int32)
    m_left = np.zeros(n, dtype=np.bool_)
    for j in numba.prange(n):
        f = features[j]
        scores[j], bins[j], m_left[j] = _scan_one(hist[f], n_value_bins[f], has_missing[f],
                                                  missing_bin, prior, k, min_count)
    return scores, bins, m_left


@numba.njit(cache=True, nogil=True)
def _scan_serial(hist, features, n_value_bins, has_missing, missing_bin, prior, k, min_count):
    """:func:`_scan` on the calling thread (small histograms: no thread-pool wake-up)."""
    n = features.shape[0]
    scores = np.full(n, np.inf)
    bins = np.zeros(n, dtype=np.int32)
    m_left = np.zeros(n, dtype=np.bool_)
    for j in range(n):
        f = features[j]
        scores[j], bins[j], m_left[j] = _scan_one(hist[f], n_value_bins[f], has_missing[f],
                                                  missing_bin, prior, k, min_count)
    return scores, bins, m_left
