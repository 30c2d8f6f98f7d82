"""Category-set splits of vector-leaf trees: which of a feature's categories go left.

With one output per leaf (LightGBM) the categories are sorted by their gradient ratio and the
best split is a prefix of that order. A vector leaf has K outputs and no single order; here
each class gives one: the categories sorted by their smoothed class-k step
``ln((W-_k + s_k) / (W+_k + s_k))`` (``s_k``: ``smooth`` pseudo-rows of the leaf's average
class-k weight, so a light category is not put at an end by noise). Each order is scanned by
the one split scan (:func:`.splits.scan_feature`) over the permuted histogram, and the best
prefix over the K orders wins (with one output, one order's prefixes hold the best split:
Fisher 1958, as LightGBM's search; with K outputs the K orders are a heuristic, checked against
exhaustive search in the tests). Categories lighter than
``min_per_category`` (sample weight) are not ordered: they stay together on the right of every
prefix (unless every category goes left, missing values right). A prefix is a set of bins;
:meth:`~rebelboost.binning.Binner.left_codes` turns it into category codes.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..binning import BinLayout
from .scores import VECTOR_LEAF
from .splits import Split, _better, pick_index, scan_feature


@numba.njit(cache=True, nogil=True)
def category_order(hist_f, n_bins, k, smooth, min_per_category):
    """(ordered bins, light bins) of one categorical feature for class ``k``: the value
    bins with at least ``min_per_category`` weight by increasing smoothed step of class k
    (stable), and the lighter bins that hold weight."""
    n_classes = (hist_f.shape[1] - 1) // 2
    count = hist_f.shape[1] - 1
    total_w = 0.0
    total_n = 0.0
    for b in range(n_bins):
        total_w += hist_f[b, k] + hist_f[b, n_classes + k]
        total_n += hist_f[b, count]
    s = smooth * total_w / (2.0 * total_n) if total_n > 0 else 0.0
    s = max(s, 1e-300)
    heavy = np.empty(n_bins, dtype=np.int64)
    light = np.empty(n_bins, dtype=np.int64)
    n_heavy = 0
    n_light = 0
    for b in range(n_bins):
        w = hist_f[b, count]
        if w <= 0.0:
            continue
        if w >= min_per_category:
            heavy[n_heavy] = b
            n_heavy += 1
        else:
            light[n_light] = b
            n_light += 1
    heavy = heavy[:n_heavy]
    stat = np.empty(n_heavy)
    for i in range(n_heavy):
        b = heavy[i]
        stat[i] = math.log(hist_f[b, n_classes + k] + s) - math.log(hist_f[b, k] + s)
    return heavy[np.argsort(stat, kind="mergesort")], light[:n_light]


@numba.njit(cache=True, nogil=True)
def value_order(hist_f, n_bins):
    """The value bins that hold weight, in bin order: the categories by value (codes are
    the sorted values, and bins keep their order), whose prefixes are thresholds."""
    count = hist_f.shape[1] - 1
    held = np.empty(n_bins, dtype=np.int64)
    n = 0
    for b in range(n_bins):
        if hist_f[b, count] > 0.0:
            held[n] = b
            n += 1
    return held[:n]


_NO_BINS = np.zeros(0, dtype=np.int64)


@numba.njit(cache=True, nogil=True)
def _all_heavy(hist_f, bins, min_per_category):
    count = hist_f.shape[1] - 1
    for b in bins:
        if hist_f[b, count] < min_per_category:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _permuted(hist_f, order, light, missing_bin):
    """The histogram of the ordered bins, then the light bins summed into one (if any), then
    the missing bin: rows ``(len(order) [+ 1], missing)``."""
    n_order = order.shape[0]
    rest = 1 if light.shape[0] > 0 else 0
    out = np.zeros((n_order + rest + 1, hist_f.shape[1]))
    for i in range(n_order):
        out[i] = hist_f[order[i]]
    for i in range(light.shape[0]):
        out[n_order] += hist_f[light[i]]
    out[n_order + rest] = hist_f[missing_bin]
    return out


@numba.njit(cache=True, nogil=True)
def _head_and_rest(order, light, direction, max_left):
    """The first ``max_left`` bins of the order (reversed for ``direction`` 1), and the
    others with the light bins (they stay right)."""
    n = order.shape[0]
    ordered = order if direction == 0 else order[::-1].copy()
    cut = min(n, max_left)
    rest = np.empty(n - cut + light.shape[0], dtype=np.int64)
    rest[:n - cut] = ordered[cut:]
    rest[n - cut:] = light
    return ordered[:cut].copy(), rest


@numba.njit(cache=True, nogil=True)
def scan_category_feature(hist_f, n_bins, has_missing, missing_bin, prior, min_count, smooth,
                          min_per_category, max_left, max_onehot):
    """Best ``(score, which, bin, missing_left)`` of one categorical feature: ``which`` is
    ``class x 2 + direction`` for the order that wins, read from either end, with ``bin`` the
    last position of the prefix going left (past the prefix: every category left); or, for at
    most ``max_onehot`` categories, ``-1 - i`` for class 0's i-th category alone; or
    ``2K + direction`` for the values' own order (:func:`value_order`), which takes over only
    when better beyond rounding: a column of ordered levels (a chess file, a day of the week)
    keeps the thresholds its integer codes would have had, which noise in the class steps can
    scatter over the K orders."""
    best, which, last, missing_left = _scan_class_orders(
        hist_f, n_bins, has_missing, missing_bin, prior, min_count, smooth, min_per_category,
        max_left, max_onehot)
    by_value = value_order(hist_f, n_bins)
    n_held = by_value.shape[0]
    # nothing new: no category, or one without missing values, or at most three that were
    # each split from the rest (every split of three categories is one; a light category is
    # never split alone)
    if (n_held < 2 and not (has_missing and n_held == 1)) or (
            2 <= n_held <= min(3, max_onehot)
            and _all_heavy(hist_f, by_value, min_per_category)):
        return best, which, last, missing_left
    # read from the far end too only where the cap on categories going left hides splits
    for direction in range(1 if n_held - 1 <= max_left else 2):
        head, rest = _head_and_rest(by_value, _NO_BINS, direction, max_left)
        n_value = head.shape[0] + (1 if rest.shape[0] > 0 else 0)
        perm = _permuted(hist_f, head, rest, missing_bin)
        score, b, ml = scan_feature(perm, n_value, has_missing, perm.shape[0] - 1, VECTOR_LEAF,
                                    prior, min_count, True)
        if _better(score, best):
            best, which, last, missing_left = score, 2 * prior.shape[0] + direction, b, ml
    return best, which, last, missing_left


@numba.njit(cache=True, nogil=True)
def _scan_class_orders(hist_f, n_bins, has_missing, missing_bin, prior, min_count, smooth,
                       min_per_category, max_left, max_onehot):
    """:func:`scan_category_feature` over the class orders (or one against the rest)."""
    k_classes = prior.shape[0]
    best = np.inf
    best_k = 0
    best_bin = 0
    best_ml = False
    for k in range(k_classes):
        order, light = category_order(hist_f, n_bins, k, smooth, min_per_category)
        if order.shape[0] + light.shape[0] < 2 and not (has_missing and order.shape[0] == 1):
            return np.inf, 0, 0, False
        if order.shape[0] + light.shape[0] <= max_onehot:
            # few categories: one against the rest (LightGBM's max_cat_to_onehot); ordered
            # bins first, so that the winner is found again in class 0's order
            n = order.shape[0]
            for i in range(n):
                head = order[i:i + 1].copy()
                rest = np.concatenate((order[:i], order[i + 1:], light))
                perm = _permuted(hist_f, head, rest, missing_bin)
                score, b, ml = scan_feature(perm, 2 if rest.shape[0] else 1, has_missing,
                                            perm.shape[0] - 1, VECTOR_LEAF, prior, min_count,
                                            True)
                if _better(score, best):
                    best, best_k, best_bin, best_ml = score, -1 - i, b, ml
            return best, best_k, best_bin, best_ml
        for direction in range(2):
            head, rest = _head_and_rest(order, light, direction, max_left)
            n_value = head.shape[0] + (1 if rest.shape[0] > 0 else 0)
            perm = _permuted(hist_f, head, rest, missing_bin)
            score, b, ml = scan_feature(perm, n_value, has_missing, perm.shape[0] - 1,
                                        VECTOR_LEAF, prior, min_count, True)
            if _better(score, best):
                best, best_k, best_bin, best_ml = score, 2 * k + direction, b, ml
    return best, best_k, best_bin, best_ml


@numba.njit(cache=True, nogil=True)
def _scan_category_range(hist, features, n_value_bins, has_missing, offsets, prior, min_count,
                         smooth, min_per_category, max_left, max_onehot, j0, j1, score, which,
                         last, missing_left):
    """:func:`scan_category_feature` of ``features[j0:j1]`` into the arrays' entries."""
    for j in range(j0, j1):
        f = features[j]
        score[j], which[j], last[j], missing_left[j] = scan_category_feature(
            hist[offsets[f]:offsets[f + 1]], n_value_bins[f], has_missing[f], n_value_bins[f],
            prior, min_count, smooth, min_per_category, max_left, max_onehot)


@numba.njit(parallel=True, cache=True, nogil=True)
def _scan_category_parallel(hist, features, n_value_bins, has_missing, offsets, prior,
                            min_count, smooth, min_per_category, max_left, max_onehot, score,
                            which, last, missing_left):
    """:func:`_scan_category_range` of every feature, a feature a task on every thread."""
    for j in numba.prange(features.shape[0]):
        _scan_category_range(hist, features, n_value_bins, has_missing, offsets, prior,
                             min_count, smooth, min_per_category, max_left, max_onehot, j,
                             j + 1, score, which, last, missing_left)


def best_category_split(hist: np.ndarray, features: np.ndarray, layout: BinLayout,
                        offsets: np.ndarray, prior: np.ndarray, min_count: float,
                        smooth: float, min_per_category: float, max_left: int,
                        max_onehot: int) -> tuple[Split, np.ndarray] | None:
    """The best category-set split of a compact leaf histogram (``offsets``:
    :meth:`~rebelboost.binning.BinLayout.cell_offsets`) over the categorical ``features``
    (``Split.feature`` indexes ``features``) and its table of bins going left
    (``layout.n_bins_total``; the missing bin's entry: the missing side), or None. At most
    ``max_left`` categories go left (LightGBM's ``max_cat_threshold``), taken from either end
    of an order; a feature with at most ``max_onehot`` categories splits one of them from the
    rest (``max_cat_to_onehot``). The features are scanned on every thread."""
    if len(features) == 0:
        return None
    left_bins = np.zeros(layout.n_bins_total, dtype=bool)
    j, score, last, missing_left = best_category_in_leaf(
        hist, features, layout.n_value_bins, layout.has_missing, offsets, prior, min_count,
        smooth, min_per_category, max_left, max_onehot, layout.missing_bin, True, left_bins)
    if j < 0:
        return None
    return Split(float(score), int(j), int(last), bool(missing_left)), left_bins


@numba.njit(cache=True, nogil=True)
def left_bins_into(hist_f, n_bins, which, last, missing_left, n_classes, smooth,
                   min_per_category, max_left, missing_bin, out):
    """``out`` (a bool per bin): the bins that :func:`scan_category_feature`'s winner
    ``(which, last, missing_left)`` sends left, the missing bin's entry its missing side."""
    if which < 0:  # one category against the rest
        order, light = category_order(hist_f, n_bins, 0, smooth, min_per_category)
        i = -1 - which
        head = order[i:i + 1].copy()
        rest = np.concatenate((order[:i], order[i + 1:], light))
    else:
        k, direction = which // 2, which % 2
        if k == n_classes:  # the values' order
            order, light = value_order(hist_f, n_bins), _NO_BINS
        else:
            order, light = category_order(hist_f, n_bins, k, smooth, min_per_category)
        head, rest = _head_and_rest(order, light, direction, max_left)
    out[:] = False
    for i in range(min(last + 1, head.shape[0])):
        out[head[i]] = True
    if last >= head.shape[0]:  # every category left (missing values right)
        for i in range(rest.shape[0]):
            out[rest[i]] = True
    out[missing_bin] = missing_left


# Cells x channels of a leaf's categorical features from which their search runs on every
# thread (with two features at least). Each feature costs several orders' sorts and scans (a
# few microseconds for four levels at K = 3), far more per cell than a numeric scan. One
# leaf's search on one thread against two, rebelboost's sleeping threads woken each time
# (`python benchmarks/category_scan_threads.py`, two runs): 180 features of 4 levels at
# K = 3 (6,300 cells x channels) 827-967 -> 535-557 us, 6 of 8 levels at K = 18 (1,998)
# 632-703 -> 345-378 us, 42 of 3 (1,176) 144-159 -> 99-120 us, but 4 of 4 (140) 24-26 -> 47-55
# us, and one feature of 300 levels (2,709) 239-249 -> 288-302 us.
PARALLEL_CATEGORY_CELLS = 1024


def category_tasks(n_cells: int, n_channels: int, n_features: int) -> bool:
    """Whether the compiled grower's category search (:func:`best_category_in_leaf`) over
    ``n_features`` categorical features of ``n_cells`` histogram cells runs on every thread:
    from :data:`PARALLEL_CATEGORY_CELLS` cells x channels and two features."""
    return (numba.get_num_threads() > 1 and n_features >= 2
            and n_cells * n_channels >= PARALLEL_CATEGORY_CELLS)


@numba.njit(cache=True, nogil=True)
def best_category_in_leaf(hist, features, n_value_bins, has_missing, offsets, prior,
                          min_count, smooth, min_per_category, max_left, max_onehot,
                          missing_bin, parallel, out):
    """The best category-set split of a leaf (:func:`best_category_split`, which the Python
    grower calls; the compiled grower calls this), on the calling thread or on every thread
    where ``parallel`` (the same split): ``(index into features, score, bin, missing_left)``
    (index -1: none), the bins going left written to ``out``."""
    n = features.shape[0]
    score = np.full(n, np.inf)
    which = np.zeros(n, dtype=np.int64)
    last = np.zeros(n, dtype=np.int64)
    missing_left = np.zeros(n, dtype=np.bool_)
    if parallel:
        _scan_category_parallel(hist, features, n_value_bins, has_missing, offsets, prior,
                                min_count, smooth, min_per_category, max_left, max_onehot,
                                score, which, last, missing_left)
    else:
        _scan_category_range(hist, features, n_value_bins, has_missing, offsets, prior,
                             min_count, smooth, min_per_category, max_left, max_onehot, 0, n,
                             score, which, last, missing_left)
    j = pick_index(score)
    if j < 0:
        return -1, np.inf, 0, False
    f = features[j]
    left_bins_into(hist[offsets[f]:offsets[f + 1]], n_value_bins[f], which[j], last[j],
                   missing_left[j], prior.shape[0], smooth, min_per_category, max_left,
                   missing_bin, out)
    return j, score[j], last[j], missing_left[j]
