"""The vector-leaf tree's split scan, with the candidates' losses computed in SIMD lanes.

A candidate's loss (:func:`.vector_leaf.pair_loss`) takes a square root and a division per
class and side, so scanning a leaf histogram is mostly that arithmetic. Here a feature's
prefix sums are laid out channel by channel first, the losses of all its bins are then
computed class by class in loops over the bins that the compiler vectorises (numpy's error
model: no division checks in the loop), and the candidates are compared last, in the scan's
order. Every value is the one :func:`.splits.scan_feature` computes (the same operations in
the same order: IEEE square roots and divisions are exact in any lane), so both pick the same
split, bit for bit (checked in the tests on random histograms). Features of few bins have the
candidates of several of them scored in one pass (:func:`scan_batched`), so they fill the lanes
as one feature of many bins does.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..losses.rebel import STEP_EPS
from ..parallel import threads_wake_quickly
from .histograms.leaf import BIG_HISTOGRAM_CELLS
from .splits import Split, _better, feature_totals_into, pick_index
from .vector_leaf import _class_loss, pair_loss

_TINY = 2.2250738585072014e-308  # the least normal double, as in vector_leaf._class_loss
# Candidates from which a feature's losses are computed in SIMD loops over the candidates;
# below, one by one (a loop's start-up costs more than its lanes save: measured on 50
# features of 3-64 bins at K = 3 and 10, the loops were 1.5-2.7x slower below 16 bins and
# 1.1-1.3x faster from 32).
_SIMD_MIN_CANDIDATES = 24
# Scratch cells (candidates x the scan's rows) of a batch of features whose candidates'
# losses :func:`scan_batched` computes together: 32 KiB, a core's first-level cache (on
# random histograms, 60 features of 4-16 bins at K = 3: 0.53-0.68x the time of one feature
# at a time at 4,096 cells, up to 2x slower at 16,384: benchmarks/leaf_scan_time.py).
_BATCH_CELLS = 4096
# Value bins up to which a feature's candidates join a batch (more fill the SIMD lanes alone).
BATCH_MOST_BINS = 64
# Candidates a batch of the children's tiles must be able to hold (else they scan their
# features one by one; :func:`batches`): on one leaf's scan at K = 26 (16 features of 16
# bins, 19 candidates a batch) batches of one feature took 2-4% longer.
_BATCH_LEAST = 32
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
def _pair_losses(left, right, prior, k, n, side, out):
    """``out[b]``: the summed class losses of the split ``left[:, b]`` | ``right[:, b]``,
    classes in order, left then right within a class (the sum :func:`pair_loss` takes)."""
    out[:n] = 0.0
    for c in range(k):
        for rows in (left, right):
            if _side_losses(rows[c], rows[k + c], prior[c], n, side):
                for b in range(n):
                    side[b] = _class_loss(rows[c, b], rows[k + c, b], prior[c])
            for b in range(n):
                out[b] += side[b]


@numba.njit(cache=True, nogil=True, inline="always")
def _pair_losses_one_by_one(left, right, prior, k, n, out):
    """:func:`_pair_losses` without SIMD loops, for few candidates."""
    for i in range(n):
        total = 0.0
        for c in range(k):
            total += _class_loss(left[c, i], left[k + c, i], prior[c])
            total += _class_loss(right[c, i], right[k + c, i], prior[c])
        out[i] = total


@numba.njit(cache=True, nogil=True, inline="always")
def _losses(left, right, prior, k, n, side, out):
    """:func:`_pair_losses` of ``n`` candidates, in SIMD loops where they are many."""
    if n >= _SIMD_MIN_CANDIDATES:
        _pair_losses(left, right, prior, k, n, side, out)
    else:
        _pair_losses_one_by_one(left, right, prior, k, n, out)


@numba.njit(cache=True, nogil=True, inline="always")
def _candidates_into(hist_f, n_bins, min_count, total, missing, running, left, right,
                     candidates, start):
    """Appends a feature's candidates from column ``start`` on: the bins the scan scores (the
    rest it skips) and their prefix sums channel by channel; returns the next free column."""
    n_channels = hist_f.shape[1]
    count = n_channels - 1
    n = start
    running[:] = 0.0
    for b in range(n_bins - 1):
        for c in range(n_channels):
            running[c] += hist_f[b, c]
        if total[count] - running[count] < min_count:  # (the right side only gets lighter)
            break
        if running[count] + missing[count] < min_count:  # too light either way
            continue
        if hist_f[b, count] == 0.0 and b > 0:  # no weight in the bin: the last split again
            continue
        for c in range(n_channels):
            left[c, n] = running[c]
            right[c, n] = total[c] - running[c]
        candidates[n] = b
        n += 1
    return n


@numba.njit(cache=True, nogil=True, inline="always")
def _with_missing_into(left, right, missing, start, stop, left_m, right_m, start_m):
    """The candidates ``start:stop`` with the missing values on their left, from column
    ``start_m`` on."""
    for c in range(left.shape[0]):
        for i in range(start, stop):
            left_m[c, start_m + i - start] = left[c, i] + missing[c]
            right_m[c, start_m + i - start] = right[c, i] - missing[c]


@numba.njit(cache=True, nogil=True, inline="always")
def _missing_alone(total, missing, running, prior, k, min_count):
    """The loss of the split that sends the missing values alone to the right."""
    for c in range(total.shape[0]):
        running[c] = total[c] - missing[c]
    return pair_loss(running, missing, prior, k, min_count)


@numba.njit(cache=True, nogil=True, inline="always")
def _feature_best(left, right, scores, candidates, start, stop, left_m, right_m, scores_m,
                  start_m, has_missing, alone, n_bins, min_count):
    """Best ``(score, bin, missing_left)`` among a feature's scored candidates, in the scan's
    order: each bin without and with the missing values on its left, then the missing
    values alone (score ``alone``)."""
    count = left.shape[0] - 1
    fbest = np.inf
    fbin = 0
    fml = False
    for i in range(start, stop):
        s = np.inf if left[count, i] < min_count or right[count, i] < min_count else scores[i]
        if _better(s, fbest):
            fbest, fbin, fml = s, candidates[i], False
        if has_missing:
            i_m = start_m + i - start
            s = (np.inf if left_m[count, i_m] < min_count or right_m[count, i_m] < min_count
                 else scores_m[i_m])
            if _better(s, fbest):
                fbest, fbin, fml = s, candidates[i], True
    if has_missing and n_bins >= 1 and _better(alone, fbest):
        fbest, fbin, fml = alone, n_bins - 1, False
    return fbest, fbin, fml


@numba.njit(cache=True, nogil=True, inline="always")
def scan_vector_feature(hist_f, n_bins, has_missing, missing_bin, prior, min_count, work,
                        candidates, sums):
    """Best ``(score, bin, missing_left)`` of one feature under the vector-leaf loss: the
    result of :func:`.splits.scan_feature` with ``vector_leaf=True``. ``work``: scratch from
    :func:`scan_work`; ``candidates``: of ``n_bins`` integers; ``sums``: (3, C)."""
    n_channels = hist_f.shape[1]
    k = (n_channels - 1) // 2
    total, missing, running = sums[0], sums[1], sums[2]
    feature_totals_into(hist_f, n_bins, missing_bin, total, missing)
    left, right, left_m, right_m, scores, scores_m, side = _work_rows(work, n_channels)
    n = _candidates_into(hist_f, n_bins, min_count, total, missing, running, left, right,
                         candidates, 0)
    _losses(left, right, prior, k, n, side, scores)
    alone = np.inf
    if has_missing:
        _with_missing_into(left, right, missing, 0, n, left_m, right_m, 0)
        _losses(left_m, right_m, prior, k, n, side, scores_m)
        alone = _missing_alone(total, missing, running, prior, k, min_count)
    return _feature_best(left, right, scores, candidates, 0, n, left_m, right_m, scores_m, 0,
                         has_missing, alone, n_bins, min_count)


@numba.njit(cache=True, nogil=True)
def scan_work(n_channels, n_bins):
    """Scratch of :func:`scan_vector_feature` for features of at most ``n_bins`` bins."""
    return np.empty((4 * n_channels + 3, max(n_bins, 1)))


@numba.njit(cache=True, nogil=True, inline="always")
def _work_rows(work, n_channels):
    """The scan's rows of ``work``: prefix sums left and right, the same with the missing
    values on the left, the candidates' losses without and with, and a row of scratch."""
    return (work[:n_channels], work[n_channels:2 * n_channels],
            work[2 * n_channels:3 * n_channels], work[3 * n_channels:4 * n_channels],
            work[4 * n_channels], work[4 * n_channels + 1], work[4 * n_channels + 2])


@numba.njit(cache=True, nogil=True)
def batches(n_channels):
    """Whether a scan of ``n_channels`` batches its features of few bins
    (:func:`scan_batched`): where a batch holds :data:`_BATCH_LEAST` candidates or more."""
    return _BATCH_CELLS // (4 * n_channels + 3) >= _BATCH_LEAST


@numba.njit(cache=True, nogil=True)
def scan_batched(hist, features, j0, j1, n_value_bins, scanned, offsets, prior, min_count,
                  best_score, best_bin, best_missing_left):
    """:func:`scan_vector_feature` of each feature ``features[j]``, ``j0 <= j < j1``, of at
    most :data:`BATCH_MOST_BINS` value bins that ``scanned[j]`` names (0: skipped; 1: its
    value bins; 2: and its missing bin), into ``best_*[j]``, their candidates' losses
    computed together in batches of up to :data:`_BATCH_CELLS` scratch cells: alone, such a
    feature would take its candidates one at a time and pay a loop's start-up for each. The
    same values, compared in the same order, so the same picks bit for bit."""
    n_channels = hist.shape[1]
    k = (n_channels - 1) // 2
    most = 0
    batched_bins = 0
    for j in range(j0, j1):
        if scanned[j] and n_value_bins[features[j]] <= BATCH_MOST_BINS:
            most = max(most, np.intp(n_value_bins[features[j]]))
            batched_bins += n_value_bins[features[j]]
    if batched_bins == 0:
        return
    capacity = max(most, min(batched_bins, _BATCH_CELLS // (4 * n_channels + 3)))
    work = scan_work(n_channels, capacity)
    left, right, left_m, right_m, scores, scores_m, side = _work_rows(work, n_channels)
    candidates = np.empty(capacity, dtype=np.intp)
    sums = np.empty((3, n_channels))
    total, missing, running = sums[0], sums[1], sums[2]
    # a batch's features: their positions j, where their candidates start, without and with
    # the missing values on the left, and the scores of their missing values alone
    batched, starts, starts_m = np.empty((3, j1 - j0 + 1), dtype=np.intp)
    alone = np.empty(j1 - j0)
    j = j0
    while j < j1:
        n = 0
        n_m = 0
        size = 0
        while j < j1:
            f = features[j]
            n_bins = n_value_bins[f]
            if scanned[j] and n_bins <= BATCH_MOST_BINS:
                if n + n_bins > capacity:  # (a feature has fewer candidates than bins)
                    break
                hist_f = hist[offsets[f]:offsets[f + 1]]
                batched[size], starts[size], starts_m[size] = j, n, n_m
                feature_totals_into(hist_f, n_bins, n_bins, total, missing)
                n = _candidates_into(hist_f, n_bins, min_count, total, missing, running, left,
                                     right, candidates, n)
                if scanned[j] == 2:
                    _with_missing_into(left, right, missing, starts[size], n, left_m,
                                       right_m, n_m)
                    n_m += n - starts[size]
                    alone[size] = _missing_alone(total, missing, running, prior, k, min_count)
                size += 1
            j += 1
        starts[size] = n
        _losses(left, right, prior, k, n, side, scores)
        _losses(left_m, right_m, prior, k, n_m, side, scores_m)
        for i in range(size):
            b = batched[i]
            best_score[b], best_bin[b], best_missing_left[b] = _feature_best(
                left, right, scores, candidates, starts[i], starts[i + 1], left_m, right_m,
                scores_m, starts_m[i], scanned[b] == 2, alone[i], n_value_bins[features[b]],
                min_count)


@numba.njit(cache=True, nogil=True, inline="always")
def scan_one_by_one(hist, features, j0, j1, n_value_bins, scanned, offsets, prior, min_count,
                    least_bins, best_score, best_bin, best_missing_left):
    """:func:`scan_vector_feature` of each feature ``features[j]``, ``j0 <= j < j1``, that
    ``scanned[j]`` names (as :func:`scan_batched`) and that has more than ``least_bins``
    value bins, into ``best_*[j]``: the features a scan does not batch. Inlined into its
    caller's own loop (inside the batching function they took 5-10% longer:
    benchmarks/leaf_scan_time.py); its scratch allocated only where one is scanned."""
    most = 0
    for j in range(j0, j1):
        if scanned[j] and n_value_bins[features[j]] > least_bins:
            most = max(most, np.intp(n_value_bins[features[j]]))
    if most == 0:
        return
    n_channels = hist.shape[1]
    work = scan_work(n_channels, most)
    candidates = np.empty(most, dtype=np.intp)
    sums = np.empty((3, n_channels))
    for j in range(j0, j1):
        f = features[j]
        if scanned[j] and n_value_bins[f] > least_bins:
            best_score[j], best_bin[j], best_missing_left[j] = scan_vector_feature(
                hist[offsets[f]:offsets[f + 1]], n_value_bins[f], scanned[j] == 2,
                n_value_bins[f], prior, min_count, work, candidates, sums)


# (called, not inlined by numba: inlined, its two scans made each claimed kernel's parallel
# region compile for ~45 s; whole fits with the call stayed within noise: BENCHMARKS.md,
# issue 27, stop 47)
@numba.njit(cache=True, nogil=True)
def scan_tile(features, j0, j1, small, big, caps, offsets, scanned, prior, min_count,
              scan_small, scan_big, scores, split_bins, missing_left):
    """The numeric features among ``j0:j1`` (``scanned[j]``) scanned in each child wanted
    (row 0 of the bests: small, 1: big): those of few bins in batches
    (:func:`scan_batched`) where :func:`batches` says so, the others one by one
    (:func:`scan_one_by_one`, inlined in this loop). A leaf's own scan is this one with no
    big child (:func:`_scan_range`)."""
    batching = batches(small.shape[1])
    alone = BATCH_MOST_BINS if batching else 0  # (value bins above which one by one)
    # (each scan written once, the child picked at run time: two inlined copies of the
    # one-by-one scan made this function's compile twice as long)
    for side in range(2):
        if scan_small if side == 0 else scan_big:
            hist = small if side == 0 else big
            scan_one_by_one(hist, features, j0, j1, caps, scanned, offsets, prior, min_count,
                            alone, scores[side], split_bins[side], missing_left[side])
            if batching:  # the features of few bins, their candidates in batches
                scan_batched(hist, features, j0, j1, caps, scanned, offsets, prior,
                             min_count, scores[side], split_bins[side], missing_left[side])


# (_scan_range, _scan_vector_features_serial and best_in_tasks are inlined by numba into
# their callers: each function compiled on its own links in everything it calls and has
# LLVM optimize it all again, so each wrapper cost a fresh install's first fit 1-4 s:
# BENCHMARKS.md, issue 27, stop 71.)
@numba.njit(cache=True, nogil=True, inline="always")
def _scan_range(hist, features, n_value_bins, has_missing, offsets, prior, min_count, j0, j1,
                best_score, best_bin, best_missing_left):
    """:func:`scan_vector_feature` of the features ``j0:j1``, each with its missing bin where
    it has one: :func:`scan_tile` of the one histogram (compiled once for a leaf's scan and
    the children's: numba's inlined copy of the scans took 7-14 s of a first fit here)."""
    scanned = np.empty(j1, dtype=np.int8)
    for j in range(j0, j1):
        scanned[j] = 1 + has_missing[features[j]]
    n = best_score.shape[0]
    scan_tile(features, j0, j1, hist, hist, n_value_bins, offsets, scanned, prior, min_count,
              np.bool_(True), np.bool_(False), best_score.reshape((1, n)),
              best_bin.reshape((1, n)), best_missing_left.reshape((1, n)))


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


@numba.njit(cache=True, nogil=True, inline="always")
def _scan_vector_features_serial(hist, features, n_value_bins, has_missing, offsets, prior,
                                 min_count, n_tasks=1):
    """:func:`_scan_vector_features` on the calling thread."""
    n = features.shape[0]
    best_score = np.full(n, np.inf)
    best_bin = np.zeros(n, dtype=np.int32)
    best_missing_left = np.zeros(n, dtype=np.bool_)
    _scan_range(hist, features, n_value_bins, has_missing, offsets, prior, min_count,
                np.intp(0), n, best_score, best_bin, best_missing_left)
    return best_score, best_bin, best_missing_left


@numba.njit(cache=True, nogil=True)
def _picked(scores, bins, missing_left):
    """(feature index, score, bin, missing_left) of :func:`.splits.pick_split`'s winner
    (index -1: none)."""
    j = pick_index(scores)
    if j < 0:
        return -1, np.inf, 0, False
    return j, scores[j], int(bins[j]), missing_left[j]


@numba.njit(cache=True, nogil=True, inline="always")
def best_in_tasks(hist, features, n_value_bins, has_missing, offsets, prior, min_count,
                  n_tasks):
    """The pick of a leaf's scan in ``n_tasks`` feature blocks (:func:`scan_tasks`: one runs
    on the calling thread, more on every thread): the same split either way."""
    if n_tasks > 1:
        scores, bins, missing_left = _scan_vector_features(
            hist, features, n_value_bins, has_missing, offsets, prior, min_count, n_tasks)
    else:
        scores, bins, missing_left = _scan_vector_features_serial(
            hist, features, n_value_bins, has_missing, offsets, prior, min_count)
    return _picked(scores, bins, missing_left)


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
