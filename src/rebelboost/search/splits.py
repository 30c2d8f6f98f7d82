"""Best split of every feature from a node histogram, under a split score of :mod:`.scores`.

A score is a function of the channel sums on the two sides (lower is better). The scan and its
tie-breaking are shared by every booster, so two searches over the same histogram agree bit
for bit: bins are visited in increasing order, "missing goes right" before "missing goes
left", and only a score lower by more than rounding (relative ``TIE_RTOL``) replaces the
incumbent; across features the lowest index wins ties. So sums that differ only by summation
order (a weight of 2 versus a repeated row) pick the same split.

Candidates for a feature with ``n`` value bins: ``bin <= b`` for ``b < n - 1`` with the missing
bin on either side, and, when the feature had missing values in training, "all values left,
missing right" (``b = n - 1``).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from ..binning import BinLayout
from .scores import SplitScore, score_value

# Scores within this relative distance are ties (summation-order rounding is ~1e-16).
TIE_RTOL = 1e-12


class Split(NamedTuple):
    """The winning split of a node: lower ``score`` is better."""

    score: float
    feature: int
    bin: int
    missing_left: bool


@numba.njit(cache=True, nogil=True, inline="always")
def _better(score, incumbent):
    """``score`` beats ``incumbent`` by more than rounding (both are losses, lower is better)."""
    return score < incumbent * (1.0 - TIE_RTOL)  # scores are >= 0; inf stays inf


@numba.njit(cache=True, nogil=True)
def scan_feature(hist_f, n_bins, has_missing, missing_bin, code):
    """Best ``(score, bin, missing_left)`` of one feature from its ``(n_bins_total, C)`` histogram.

    The one scan every search shares (exhaustive or pruned), so equal histograms give equal bits.
    """
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
    fbest = np.inf
    fbin = 0
    fml = False
    for b in range(n_bins - 1):
        for c in range(n_channels):
            left[c] += hist_f[b, c]
            right[c] = total[c] - left[c]
        s = score_value(code, left, right)
        if _better(s, fbest):
            fbest, fbin, fml = s, b, False
        if has_missing:
            for c in range(n_channels):
                left_m[c] = left[c] + missing[c]
                right_m[c] = right[c] - missing[c]
            s = score_value(code, left_m, right_m)
            if _better(s, fbest):
                fbest, fbin, fml = s, b, True
    if has_missing and n_bins >= 1:
        for c in range(n_channels):
            left[c] = total[c] - missing[c]
        s = score_value(code, left, missing)
        if _better(s, fbest):
            fbest, fbin, fml = s, n_bins - 1, False
    return fbest, fbin, fml


@numba.njit(parallel=True, cache=True, nogil=True)
def _scan_parallel(hist, n_value_bins, has_missing, missing_bin, code):
    n_features = hist.shape[0]
    best_score = np.full(n_features, np.inf)
    best_bin = np.zeros(n_features, dtype=np.int32)
    best_missing_left = np.zeros(n_features, dtype=np.bool_)
    for f in numba.prange(n_features):
        fbest, fbin, fml = scan_feature(hist[f], n_value_bins[f], has_missing[f], missing_bin,
                                        code)
        best_score[f] = fbest
        best_bin[f] = fbin
        best_missing_left[f] = fml
    return best_score, best_bin, best_missing_left


@numba.njit(cache=True, nogil=True)
def _scan_serial(hist, n_value_bins, has_missing, missing_bin, code):
    """:func:`_scan_parallel` on the calling thread: waking the pool costs more than a small
    histogram's scan (milliseconds on a busy machine against ~0.1 ms of work)."""
    n_features = hist.shape[0]
    best_score = np.full(n_features, np.inf)
    best_bin = np.zeros(n_features, dtype=np.int32)
    best_missing_left = np.zeros(n_features, dtype=np.bool_)
    for f in range(n_features):
        fbest, fbin, fml = scan_feature(hist[f], n_value_bins[f], has_missing[f], missing_bin,
                                        code)
        best_score[f] = fbest
        best_bin[f] = fbin
        best_missing_left[f] = fml
    return best_score, best_bin, best_missing_left


# Histogram cells (feature x bin x channel) from which the scan is worth the thread pool.
PARALLEL_SCAN_CELLS = 1 << 20


def is_better(score: float, incumbent: float) -> bool:
    """Python-side twin of the scan's comparison, for choices made outside the kernels."""
    return score < incumbent * (1.0 - TIE_RTOL)


def best_split_per_feature(hist: np.ndarray, layout: BinLayout, score: SplitScore):
    """Arrays (score, bin, missing_left) of each feature's best split (score inf: none)."""
    scan = _scan_parallel if hist.size >= PARALLEL_SCAN_CELLS else _scan_serial
    return scan(hist, layout.n_value_bins, layout.has_missing, layout.missing_bin, score.code)


def best_split(hist: np.ndarray, layout: BinLayout, score: SplitScore) -> Split | None:
    """The best split over all features, or None when no feature can split the node."""
    return pick_split(*best_split_per_feature(hist, layout, score))


def pick_split(scores, bins, missing_left) -> Split | None:
    """The winner among per-feature bests: lowest score, lowest index among ties (inf: none)."""
    lowest = scores.min()
    if not np.isfinite(lowest):
        return None
    f = int(np.flatnonzero(scores <= lowest + TIE_RTOL * lowest)[0])
    return Split(float(scores[f]), f, int(bins[f]), bool(missing_left[f]))


def split_sums(
    feature_hist: np.ndarray, split_bin: int, missing_left: bool, missing_bin: int
) -> tuple[np.ndarray, np.ndarray]:
    """Channel sums (left, right) of one feature's histogram under a split."""
    total = feature_hist.sum(axis=0)
    left = feature_hist[: split_bin + 1].sum(axis=0)
    if split_bin >= missing_bin:
        raise ValueError("split bin overlaps the missing bin")
    if missing_left:
        left = left + feature_hist[missing_bin]
    return left, total - left
