"""Best split of every feature from a node histogram, under a split score of :mod:`.scores`.

A score is a function of the channel sums on the two sides (lower is better): a scalar score of
:mod:`.scores`, or a vector-leaf tree's loss (:mod:`.vector_leaf`). The scan and its
tie-breaking are shared by every learner (stumps, the paper's trees, vector-leaf trees, the
other boosters' trees, QuickBoost's finishing scans), so two searches over the same histogram
agree bit for bit: bins are visited in increasing order, "missing goes right" before "missing
goes left", and only a score lower by more than rounding (relative ``TIE_RTOL``) replaces the
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
from .scores import SplitScore, bound_value, score_value
from .vector_leaf import pair_loss

# Scores within this relative distance are ties (summation-order rounding is ~1e-16).
TIE_RTOL = 1e-12
_NO_UNSEEN = np.zeros(0)  # a search (not a bound) reads no unseen totals


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


@numba.njit(cache=True, nogil=True, inline="always")
def _candidate(vector_leaf, bound, code, left, right, prior, min_count, unseen):
    """A candidate's score: a scalar score of :mod:`.scores`, the vector-leaf loss, or
    QuickBoost's bound on the score once the ``unseen`` rows join."""
    if vector_leaf:
        return pair_loss(left, right, prior, prior.shape[0], min_count)
    if bound:
        return bound_value(code, left, right, unseen)
    return score_value(code, left, right)


@numba.njit(cache=True, nogil=True, inline="always")
def _keep(bound, score, incumbent):
    """A bound keeps the least value (it must stay below every candidate's score); a search
    keeps a score only if it beats the incumbent by more than rounding."""
    return score < incumbent if bound else _better(score, incumbent)


@numba.njit(cache=True, nogil=True, inline="always")
def feature_totals(hist_f, n_bins, missing_bin):
    """A feature's channel totals (its value bins in order, then its missing bin) and its
    missing bin's channels: where every scan of the feature starts."""
    n_channels = hist_f.shape[1]
    total, missing = np.empty(n_channels), np.empty(n_channels)
    feature_totals_into(hist_f, n_bins, missing_bin, total, missing)
    return total, missing


@numba.njit(cache=True, nogil=True, inline="always")
def feature_totals_into(hist_f, n_bins, missing_bin, total, missing):
    """:func:`feature_totals` into given vectors (a scan of many small features allocates
    nothing per feature)."""
    n_channels = hist_f.shape[1]
    total[:n_channels] = 0.0
    for b in range(n_bins):
        for c in range(n_channels):
            total[c] += hist_f[b, c]
    for c in range(n_channels):
        missing[c] = hist_f[missing_bin, c]
        total[c] += missing[c]


@numba.njit(cache=True, nogil=True, inline="always")
def scan_feature(hist_f, n_bins, has_missing, missing_bin, code, prior, min_count,
                 vector_leaf=False, bound=False, unseen=_NO_UNSEEN):
    """Best ``(score, bin, missing_left)`` of one feature from its ``(n_bins_total, C)`` histogram.

    The one scan every search shares (exhaustive or pruned, every learner), so equal
    histograms give equal bits. ``code`` picks a scalar score (:mod:`.scores`);
    ``vector_leaf`` (a constant in each driver, so the compiled scan keeps one branch) scores
    :func:`.vector_leaf.pair_loss` with the class ``prior`` instead, with leaf limits: the
    last channel is the sample weight, and a candidate leaving either side lighter than
    ``min_count`` is skipped (as is a bin without weight: the last split again). ``bound``
    (QuickBoost's prefixes) takes the least of the candidates' bounds given the channel totals
    of the ``unseen`` rows: the same candidates, so the bound holds for the scan's best.
    """
    limited = vector_leaf
    n_channels = hist_f.shape[1]
    count = n_channels - 1
    total, missing = feature_totals(hist_f, n_bins, missing_bin)
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
        if limited:
            if right[count] < min_count:  # (only falls as b grows, also with missing left)
                break
            if left[count] + missing[count] < min_count:  # too light either way
                continue
            if hist_f[b, count] == 0.0 and b > 0:  # no weight in the bin: the last split again
                continue
        s = _candidate(limited, bound, code, left, right, prior, min_count, unseen)
        if _keep(bound, s, fbest):
            fbest, fbin, fml = s, b, False
        if has_missing:
            for c in range(n_channels):
                left_m[c] = left[c] + missing[c]
                right_m[c] = right[c] - missing[c]
            s = _candidate(limited, bound, code, left_m, right_m, prior, min_count, unseen)
            if _keep(bound, s, fbest):
                fbest, fbin, fml = s, b, True
    if has_missing and n_bins >= 1:
        for c in range(n_channels):
            left[c] = total[c] - missing[c]
        s = _candidate(limited, bound, code, left, missing, prior, min_count, unseen)
        if _keep(bound, s, fbest):
            fbest, fbin, fml = s, n_bins - 1, False
    return fbest, fbin, fml


@numba.njit(parallel=True, cache=True, nogil=True)
def scan_features(hist, features, n_value_bins, has_missing, missing_bin, code):
    """:func:`scan_feature` of each listed feature under a scalar score, on every thread:
    arrays (score, bin, missing_left) in the order of ``features``."""
    n = features.shape[0]
    best_score = np.full(n, np.inf)
    best_bin = np.zeros(n, dtype=np.int32)
    best_missing_left = np.zeros(n, dtype=np.bool_)
    for j in numba.prange(n):
        f = features[j]
        best_score[j], best_bin[j], best_missing_left[j] = scan_feature(
            hist[f], n_value_bins[f], has_missing[f], missing_bin, code, _NO_PRIOR, 0.0)
    return best_score, best_bin, best_missing_left


@numba.njit(cache=True, nogil=True)
def scan_features_serial(hist, features, n_value_bins, has_missing, missing_bin, code):
    """:func:`scan_features` on the calling thread: waking the pool costs more than a small
    histogram's scan (milliseconds on a busy machine against ~0.1 ms of work)."""
    n = features.shape[0]
    best_score = np.full(n, np.inf)
    best_bin = np.zeros(n, dtype=np.int32)
    best_missing_left = np.zeros(n, dtype=np.bool_)
    for j in range(n):
        f = features[j]
        best_score[j], best_bin[j], best_missing_left[j] = scan_feature(
            hist[f], n_value_bins[f], has_missing[f], missing_bin, code, _NO_PRIOR, 0.0)
    return best_score, best_bin, best_missing_left


_NO_PRIOR = np.zeros(0)  # a scalar score reads no class prior


# Histogram cells (feature x bin x channel) from which the scan is worth the thread pool.
PARALLEL_SCAN_CELLS = 1 << 20


def is_better(score: float, incumbent: float) -> bool:
    """Python-side twin of the scan's comparison, for choices made outside the kernels."""
    return score < incumbent * (1.0 - TIE_RTOL)


def best_split_per_feature(hist: np.ndarray, layout: BinLayout, score: SplitScore):
    """Arrays (score, bin, missing_left) of each feature's best split (score inf: none)."""
    scan = scan_features if hist.size >= PARALLEL_SCAN_CELLS else scan_features_serial
    features = np.arange(hist.shape[0], dtype=np.intp)
    return scan(hist, features, layout.n_value_bins, layout.has_missing, layout.missing_bin,
                score.code)


def best_split(hist: np.ndarray, layout: BinLayout, score: SplitScore) -> Split | None:
    """The best split over all features, or None when no feature can split the node."""
    return pick_split(*best_split_per_feature(hist, layout, score))


@numba.njit(cache=True, nogil=True)
def pick_index(scores):
    """The winner among per-feature bests as an index into ``scores``: the lowest score,
    the lowest index among scores within rounding of it (-1: every score inf). Compiled, so
    that the vector-leaf scan picks in the same call as it scans."""
    lowest = np.inf
    for s in scores:
        lowest = min(lowest, s)
    if not np.isfinite(lowest):
        return -1
    bound = lowest + TIE_RTOL * lowest
    for j in range(scores.shape[0]):
        if scores[j] <= bound:
            return j
    return -1


def pick_split(scores, bins, missing_left) -> Split | None:
    """The winner among per-feature bests (:func:`pick_index`), or None."""
    f = int(pick_index(np.asarray(scores, dtype=np.float64)))
    return None if f < 0 else Split(float(scores[f]), f, int(bins[f]), bool(missing_left[f]))


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
