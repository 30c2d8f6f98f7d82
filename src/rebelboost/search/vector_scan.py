"""The vector-leaf tree's split scan, with the candidates' losses computed in SIMD lanes.

A candidate's loss (:func:`.vector_leaf.pair_loss`) takes a square root and a division per
class and side, so scanning a leaf histogram is mostly that arithmetic. Here a feature's
prefix sums are laid out channel by channel first, the losses of all its bins are then
computed class by class in loops over the bins that the compiler vectorises (numpy's error
model: no division checks in the loop), and the candidates are compared last, in the scan's
order. Every value is the one :func:`.splits.scan_feature` computes (the same operations in
the same order: IEEE square roots and divisions are exact in any lane), so both pick the same
split, bit for bit (checked in the tests on random histograms).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..losses.rebel import STEP_EPS
from ..parallel import threads_wake_quickly
from .histograms.leaf import BIG_HISTOGRAM_CELLS
from .splits import Split, _better, pick_index
from .vector_leaf import _class_loss

_TINY = 2.2250738585072014e-308  # the least normal double, as in vector_leaf._class_loss
# Candidates from which a feature's losses are computed in SIMD loops over the candidates;
# below, one by one (a loop's start-up costs more than its lanes save: measured on 50
# features of 3-64 bins at K = 3 and 10, the loops were 1.5-2.7x slower below 16 bins and
# 1.1-1.3x faster from 32).
_SIMD_MIN_CANDIDATES = 24
# Histogram cells x channels from which a leaf's scan runs its features on every thread. A
# parallel region's start costs microseconds where idle OpenMP threads spin (then: 1.5x the
# one-thread time at ~2,700 on 2 threads, 1.0x at ~4,000, 0.8x at ~8,000, 0.55-0.65x from
# ~14,000, satimage's and letter's first features) and under numba's TBB layer, and about
# 100 us where they sleep at once, rebelboost's default (:mod:`rebelboost.parallel`;
# BENCHMARKS.md, "Threads that wake in microseconds").
PARALLEL_SCAN_CELLS = 8192


def scan_tasks(n_cells: int, n_channels: int) -> int:
    """The feature blocks a leaf histogram of ``n_cells`` cells of ``n_channels`` is scanned
    in: four a thread from :data:`PARALLEL_SCAN_CELLS` cells x channels where the threads
    start in microseconds (:func:`~rebelboost.parallel.threads_wake_quickly`), else from
    :data:`.histograms.leaf.BIG_HISTOGRAM_CELLS`; below, or on one thread, one block on the
    calling thread."""
    least = PARALLEL_SCAN_CELLS if threads_wake_quickly() else BIG_HISTOGRAM_CELLS
    threads = numba.get_num_threads()
    return 4 * threads if threads > 1 and n_cells * n_channels >= least else 1


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _side_losses(p_row, m_row, q, n, out):
    """``out[b] = _class_loss(p_row[b], m_row[b], q)`` for ``b < n``; True where the product
    underflowed (the caller takes the scalar form there)."""
    underflow = False
    for b in range(n):
        p = max(p_row[b], 0.0)
        m = max(m_row[b], 0.0)
        eps = max(STEP_EPS * (p + m), _TINY)
        big_p = p + q + eps
        big_m = m + q + eps
        root = math.sqrt(big_p * big_m)
        value = (p * big_m + m * big_p) / root
        underflow |= (root <= 0.0) & (p + m > 0.0)
        out[b] = value if p + m > 0.0 else 0.0
    return underflow


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _pair_losses(work, left, right, prior, k, n, side, out):
    """``work[out, b]``: the summed class losses of the split ``work[left + c, b]`` |
    ``work[right + c, b]`` (channel c of each side's rows), classes in order, left then right
    within a class (the sum :func:`.vector_leaf.pair_loss` takes); ``work[side]`` is scratch."""
    scores, side_losses = work[out], work[side]
    scores[:n] = 0.0
    for c in range(k):
        for first in (left, right):
            p_row, m_row = work[first + c], work[first + k + c]
            if _side_losses(p_row, m_row, prior[c], n, side_losses):
                for b in range(n):
                    side_losses[b] = _class_loss(p_row[b], m_row[b], prior[c])
            for b in range(n):
                scores[b] += side_losses[b]


@numba.njit(cache=True, nogil=True, inline="always")
def _pair_losses_one_by_one(work, left, right, prior, k, n, out):
    """:func:`_pair_losses` without SIMD loops, for few candidates."""
    for i in range(n):
        work[out, i] = _columns_pair_loss(work, left, right, i, prior, k)


@numba.njit(cache=True, nogil=True, inline="always")
def _columns_pair_loss(work, left, right, i, prior, k):
    """:func:`.vector_leaf.pair_loss` of column i of ``work``'s rows from ``left`` |
    ``right``, without the leaf limits."""
    total = 0.0
    for c in range(k):
        total += _class_loss(work[left + c, i], work[left + k + c, i], prior[c])
        total += _class_loss(work[right + c, i], work[right + k + c, i], prior[c])
    return total


@numba.njit(cache=True, nogil=True, inline="always")
def scan_vector_feature(hist_f, n_bins, has_missing, missing_bin, prior, min_count, work,
                        candidates, sums):
    """Best ``(score, bin, missing_left)`` of one feature under the vector-leaf loss: the
    result of :func:`.splits.scan_feature` with ``vector_leaf=True``. ``work``: scratch of
    shape (4 * C + 3, n_bins); ``candidates``: of ``n_bins`` integers; ``sums``: (3, C).
    Rows of the scratch are indexed, not sliced: a scan of a small feature costs about as
    much as making a few array views."""
    n_channels = hist_f.shape[1]
    k = (n_channels - 1) // 2
    count = n_channels - 1
    total, missing, running = 0, 1, 2  # rows of sums
    for c in range(n_channels):
        sums[total, c] = 0.0
        sums[running, c] = 0.0
    for b in range(n_bins):
        for c in range(n_channels):
            sums[total, c] += hist_f[b, c]
    for c in range(n_channels):
        sums[missing, c] = hist_f[missing_bin, c]
        sums[total, c] += sums[missing, c]
    if n_bins - 1 < _SIMD_MIN_CANDIDATES:
        fbest, fbin, fml = _scan_one_by_one(hist_f, n_bins, has_missing, prior, min_count,
                                            work, sums)
    else:
        fbest, fbin, fml = _scan_in_lanes(hist_f, n_bins, has_missing, prior, min_count, work,
                                          candidates, sums)
    if has_missing and n_bins >= 1:
        # every value left, missing values right: the sums' running and missing rows
        for c in range(n_channels):
            sums[running, c] = sums[total, c] - sums[missing, c]
        if sums[running, count] >= min_count and sums[missing, count] >= min_count:
            s = _sums_pair_loss(sums, running, missing, prior, k)
            if _better(s, fbest):
                fbest, fbin, fml = s, n_bins - 1, False
    return fbest, fbin, fml


@numba.njit(cache=True, nogil=True, inline="always")
def _reach(hist_f, b, min_count, sums, work, column):
    """Adds bin b to the running sums (row 2 of ``sums``; rows 0 and 1: the feature's total
    and missing channels) and says whether the threshold after it is a candidate: 1, its
    sides written to ``work``'s ``column`` (left: rows ``0..C-1``, right: ``C..2C-1``); 0,
    skipped (a side too light either way, or no weight in the bin: the last split again);
    -1, none from here on (the right side only gets lighter)."""
    n_channels = hist_f.shape[1]
    count = n_channels - 1
    for c in range(n_channels):
        sums[2, c] += hist_f[b, c]
    if sums[0, count] - sums[2, count] < min_count:
        return -1
    if sums[2, count] + sums[1, count] < min_count or (hist_f[b, count] == 0.0 and b > 0):
        return 0
    for c in range(n_channels):
        work[c, column] = sums[2, c]
        work[n_channels + c, column] = sums[0, c] - sums[2, c]
    return 1


@numba.njit(cache=True, nogil=True, inline="always")
def _scan_one_by_one(hist_f, n_bins, has_missing, prior, min_count, work, sums):
    """:func:`scan_vector_feature`'s thresholds, each scored as it is reached (few bins)."""
    n_channels = hist_f.shape[1]
    k = (n_channels - 1) // 2
    count = n_channels - 1
    missing = 1  # the row of sums (:func:`_reach`)
    left, right, left_m, right_m = 0, n_channels, 2 * n_channels, 3 * n_channels  # of work
    fbest = np.inf
    fbin = 0
    fml = False
    for b in range(n_bins - 1):
        reached = _reach(hist_f, b, min_count, sums, work, 0)
        if reached < 0:
            break
        if reached == 0:
            continue
        if work[left + count, 0] >= min_count and work[right + count, 0] >= min_count:
            s = _columns_pair_loss(work, left, right, 0, prior, k)
            if _better(s, fbest):
                fbest, fbin, fml = s, b, False
        if has_missing:
            for c in range(n_channels):
                work[left_m + c, 0] = work[left + c, 0] + sums[missing, c]
                work[right_m + c, 0] = work[right + c, 0] - sums[missing, c]
            if work[left_m + count, 0] >= min_count and work[right_m + count, 0] >= min_count:
                s = _columns_pair_loss(work, left_m, right_m, 0, prior, k)
                if _better(s, fbest):
                    fbest, fbin, fml = s, b, True
    return fbest, fbin, fml


@numba.njit(cache=True, nogil=True)
def _scan_in_lanes(hist_f, n_bins, has_missing, prior, min_count, work, candidates, sums):
    """:func:`scan_vector_feature`'s thresholds, their sums laid out first and their losses
    computed in SIMD lanes (many bins)."""
    n_channels = hist_f.shape[1]
    k = (n_channels - 1) // 2
    count = n_channels - 1
    missing = 1  # the row of sums (:func:`_reach`)
    # rows of work: each side's channels, then the scores and scratch
    left, right, left_m, right_m = 0, n_channels, 2 * n_channels, 3 * n_channels
    scores, scores_m, side = 4 * n_channels, 4 * n_channels + 1, 4 * n_channels + 2
    # the bins the scan scores (the rest it skips), their prefix sums channel by channel
    n = 0
    for b in range(n_bins - 1):
        reached = _reach(hist_f, b, min_count, sums, work, n)
        if reached < 0:
            break
        if reached == 0:
            continue
        candidates[n] = b
        n += 1
    if has_missing:
        for c in range(n_channels):
            for i in range(n):
                work[left_m + c, i] = work[left + c, i] + sums[missing, c]
                work[right_m + c, i] = work[right + c, i] - sums[missing, c]
    if n >= _SIMD_MIN_CANDIDATES:
        _pair_losses(work, left, right, prior, k, n, side, scores)
        if has_missing:
            _pair_losses(work, left_m, right_m, prior, k, n, side, scores_m)
    else:
        _pair_losses_one_by_one(work, left, right, prior, k, n, scores)
        if has_missing:
            _pair_losses_one_by_one(work, left_m, right_m, prior, k, n, scores_m)
    fbest = np.inf
    fbin = 0
    fml = False
    for i in range(n):
        s = (np.inf if work[left + count, i] < min_count or work[right + count, i] < min_count
             else work[scores, i])
        if _better(s, fbest):
            fbest, fbin, fml = s, candidates[i], False
        if has_missing:
            s = (np.inf if work[left_m + count, i] < min_count
                 or work[right_m + count, i] < min_count else work[scores_m, i])
            if _better(s, fbest):
                fbest, fbin, fml = s, candidates[i], True
    return fbest, fbin, fml


@numba.njit(cache=True, nogil=True, inline="always")
def _sums_pair_loss(sums, left, right, prior, k):
    """:func:`.vector_leaf.pair_loss` of rows ``left`` | ``right`` of ``sums``, without the
    leaf limits."""
    total = 0.0
    for c in range(k):
        total += _class_loss(sums[left, c], sums[left, k + c], prior[c])
        total += _class_loss(sums[right, c], sums[right, k + c], prior[c])
    return total


@numba.njit(cache=True, nogil=True)
def _scan_range(hist, features, n_value_bins, has_missing, offsets, prior, min_count, j0, j1,
                best_score, best_bin, best_missing_left):
    n_channels = hist.shape[1]
    most = 1
    for j in range(j0, j1):
        most = max(most, n_value_bins[features[j]])
    work = np.empty((4 * n_channels + 3, most))
    candidates = np.empty(most, dtype=np.intp)
    sums = np.empty((3, n_channels))
    for j in range(j0, j1):
        f = features[j]
        best_score[j], best_bin[j], best_missing_left[j] = scan_vector_feature(
            hist[offsets[f]:offsets[f + 1]], n_value_bins[f], has_missing[f], n_value_bins[f],
            prior, min_count, work, candidates, sums)


@numba.njit(parallel=True, cache=True, nogil=True)
def _scan_vector_features(hist, features, n_value_bins, has_missing, offsets, prior,
                          min_count, n_tasks):
    """Each feature's best split under the vector-leaf loss with its leaf limits, over a
    compact leaf histogram (:mod:`.histograms.leaf`: a feature's missing bin follows its value
    bins), in ``n_tasks`` blocks of features on every thread: arrays (score, bin,
    missing_left) in the order of ``features``."""
    n = features.shape[0]
    best_score = np.full(n, np.inf)
    best_bin = np.zeros(n, dtype=np.int32)
    best_missing_left = np.zeros(n, dtype=np.bool_)
    n_tasks = max(1, min(n, n_tasks))
    for t in numba.prange(n_tasks):
        _scan_range(hist, features, n_value_bins, has_missing, offsets, prior, min_count,
                    t * n // n_tasks, (t + 1) * n // n_tasks, best_score, best_bin,
                    best_missing_left)
    return best_score, best_bin, best_missing_left


@numba.njit(cache=True, nogil=True)
def _scan_vector_features_serial(hist, features, n_value_bins, has_missing, offsets, prior,
                                 min_count, n_tasks=1):
    """:func:`_scan_vector_features` on the calling thread."""
    n = features.shape[0]
    best_score = np.full(n, np.inf)
    best_bin = np.zeros(n, dtype=np.int32)
    best_missing_left = np.zeros(n, dtype=np.bool_)
    _scan_range(hist, features, n_value_bins, has_missing, offsets, prior, min_count, 0, n,
                best_score, best_bin, best_missing_left)
    return best_score, best_bin, best_missing_left


@numba.njit(cache=True, nogil=True)
def _picked(scores, bins, missing_left):
    """(feature index, score, bin, missing_left) of :func:`.splits.pick_split`'s winner
    (index -1: none)."""
    j = pick_index(scores)
    if j < 0:
        return -1, np.inf, 0, False
    return j, scores[j], int(bins[j]), missing_left[j]


@numba.njit(cache=True, nogil=True)
def _best_serial(hist, features, n_value_bins, has_missing, offsets, prior, min_count):
    """:func:`_scan_vector_features_serial` and the pick in one call (a small leaf's scan
    takes microseconds: a second call into compiled code would cost as much)."""
    return _picked(*_scan_vector_features_serial(hist, features, n_value_bins, has_missing,
                                                 offsets, prior, min_count))


@numba.njit(cache=True, nogil=True)
def best_in_tasks(hist, features, n_value_bins, has_missing, offsets, prior, min_count,
                  n_tasks):
    """The pick of a leaf's scan in ``n_tasks`` feature blocks (:func:`scan_tasks`: one runs
    on the calling thread, more on every thread): the same split either way."""
    if n_tasks > 1:
        return _picked(*_scan_vector_features(hist, features, n_value_bins, has_missing,
                                              offsets, prior, min_count, n_tasks))
    return _best_serial(hist, features, n_value_bins, has_missing, offsets, prior, min_count)


def best_vector_split(hist: np.ndarray, features: np.ndarray, n_value_bins: np.ndarray,
                      has_missing: np.ndarray, offsets: np.ndarray, prior: np.ndarray,
                      min_count: float, n_tasks: int) -> Split | None:
    """A vector-leaf tree's best split of a compact leaf histogram (``offsets``:
    :meth:`~rebelboost.binning.BinLayout.cell_offsets`) over ``features`` (``feature``
    indexes ``features``), or None; scanned in ``n_tasks`` feature blocks
    (:func:`best_in_tasks`)."""
    j, score, b, missing_left = best_in_tasks(hist, features, n_value_bins, has_missing,
                                              offsets, prior, min_count, n_tasks)
    return None if j < 0 else Split(score, j, b, missing_left)
