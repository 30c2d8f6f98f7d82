"""Category-set splits of vector-leaf trees: which of a feature's categories go left.

With one output per leaf (LightGBM) the categories are sorted by their gradient ratio and the
best split is a prefix of that order (Fisher 1958). A vector leaf has K outputs and no single
order. Each category has a vector of smoothed class steps ``ln((W-_k + s_k) / (W+_k + s_k))``
(``s_k``: ``smooth`` pseudo-rows of the leaf's average class-k weight, so a light category is
not put at an end by noise); the categories are sorted by their projection on the first
principal axis of those vectors, weighted by the categories' weights (Coppersmith, Hong and
Hosking 1999, for K-class trees), and that one order's prefixes are scanned by the one split
scan (:func:`.vector_scan.scan_vector_feature`) over the permuted histogram, with the values'
own order (thresholds). One order instead of one per class: fewer candidate sets to overfit
(krkopt's 18 classes, 6 columns of 8 levels: 11.9% test error against 12.6% with the K class
orders, BENCHMARKS.md, stop 50), checked against exhaustive search in the tests. Categories
lighter than ``min_per_category`` (sample weight) are not ordered: they stay together on the
right of every prefix (unless every category goes left, missing values right). A prefix is a
set of bins; :meth:`~rebelboost.binning.Binner.left_codes` turns it into category codes. A
feature whose :func:`split_floor` (no split of its bins scores less) is above the best split
found so far is not scanned: the same split, in less time.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from ..binning import BinLayout
from ..losses.rebel import STEP_EPS
from .splits import Split, _better, pick_index
from .vector_leaf import _class_loss
from .vector_scan import scan_vector_feature, scan_work


class _Scratch(NamedTuple):
    """One thread's buffers for the category search of features of at most ``levels``
    value bins, so that scanning a feature allocates nothing."""

    heavy: np.ndarray  # the value bins heavy enough to be ordered, in bin order
    light: np.ndarray  # the lighter value bins that hold weight, in bin order
    order: np.ndarray  # an order being scanned
    stat: np.ndarray  # the class steps an order is sorted by
    perm: np.ndarray  # the histogram of an order: its head, the rest summed, the missing bin
    work: np.ndarray  # scratch of the split scan (vector_scan.scan_vector_feature)
    candidates: np.ndarray
    sums: np.ndarray
    few: np.ndarray  # the candidates' scores of a feature of few categories (_scan_few)
    seen: np.ndarray  # the orders scanned so far, as read (a row each)
    seen_shape: np.ndarray  # and their lengths, categories left at most, light bins summed
    steps: np.ndarray  # the ordered categories' centred class steps (a row each)
    scatter: np.ndarray  # their weighted scatter or Gram matrix (0), its square (1)
    axis: np.ndarray  # an iterate (0), the next (1), the principal axis (2)


# Orders a feature's search reads: the principal order and the values' order, each from
# either end; a scan's ``which`` is the first label of its order plus the end it is read from.
_READINGS = 4
_PRINCIPAL = 0
_VALUES = 2


@numba.njit(cache=True, nogil=True)
def _scratch(levels, n_channels):
    k = (n_channels - 1) // 2
    return _Scratch(np.empty(levels, dtype=np.int64), np.empty(levels, dtype=np.int64),
                    np.empty(levels, dtype=np.int64), np.empty(levels),
                    np.empty((levels + 2, n_channels)), scan_work(n_channels, levels + 2),
                    np.empty(levels + 2, dtype=np.intp), np.empty((3, n_channels)),
                    np.empty(5 * levels + 1),
                    np.empty((_READINGS, levels), dtype=np.int64),
                    np.empty((_READINGS, 3), dtype=np.int64), np.empty((levels, k)),
                    np.empty((2, min(levels, k), min(levels, k))),
                    np.empty((3, max(levels, k))))


@numba.njit(cache=True, nogil=True, inline="always")
def _scanned_bin(hist_f, n_bins, b):
    """Whether the search places bin ``b``: a value bin that holds weight (:func:`_weigh`),
    or the missing bin (``n_bins``)."""
    return b == n_bins or hist_f[b, hist_f.shape[1] - 1] > 0.0


@numba.njit(cache=True, nogil=True)
def _weigh(hist_f, n_bins, min_per_category, heavy, light):
    """``(n_heavy, n_light)``: the value bins with at least ``min_per_category`` weight
    written to ``heavy``, the lighter bins that hold weight to ``light``, in bin order."""
    count = hist_f.shape[1] - 1
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
    return n_heavy, n_light


_INSERTION_SORT_MOST = 32  # categories up to which an order is sorted in place

# Power steps of the principal axis at most, the matrix squared after each (so step r
# multiplies by its 2^r-th power), and the change of the axis's entries at which they stop.
_AXIS_STEPS = 64
_AXIS_TOLERANCE = 1e-12


@numba.njit(cache=True, nogil=True)
def _principal_axis(steps, hist_f, heavy, n, k, first, scatter, axis):
    """``axis[2, :k]``: the unit first principal axis of the rows ``steps[:n]`` (centred
    class steps), each weighted by its category's weight, its largest entry positive; the
    unit vector of class ``first`` where they do not spread. Power iteration with the matrix
    squared after every step, on the weighted scatter (K x K) or, for fewer categories than
    classes, their Gram matrix (n x n, the same leading eigenvalue): a few steps of at most
    ``min(n, K)^3`` work each, where steps on the scatter itself took up to a hundred."""
    count = hist_f.shape[1] - 1
    gram = n < k
    d = n if gram else k
    m, square = scatter[0], scatter[1]
    x, y, v = axis[0], axis[1], axis[2]
    if gram:
        for i in range(n):
            for j in range(i, n):
                t = 0.0
                for c in range(k):
                    t += steps[i, c] * steps[j, c]
                t *= math.sqrt(hist_f[heavy[i], count] * hist_f[heavy[j], count])
                m[i, j] = t
                m[j, i] = t
        norm = 0.0
        for i in range(n):
            x[i] = math.sqrt(hist_f[heavy[i], count]) * steps[i, first]
            norm += x[i] ** 2
        norm = math.sqrt(norm)
        for i in range(n):
            x[i] = x[i] / norm if norm > 0.0 else 0.0
    else:
        for a in range(k):
            for b in range(a, k):
                t = 0.0
                for i in range(n):
                    t += hist_f[heavy[i], count] * steps[i, a] * steps[i, b]
                m[a, b] = t
                m[b, a] = t
            x[a] = 0.0
        x[first] = 1.0
    for _ in range(_AXIS_STEPS):
        norm = 0.0
        for a in range(d):
            t = 0.0
            for b in range(d):
                t += m[a, b] * x[b]
            y[a] = t
            norm += t * t
        if not norm > 0.0:
            break  # (no spread along x: the axis stays the class's, or the last iterate)
        norm = math.sqrt(norm)
        change = 0.0
        for a in range(d):
            new = y[a] / norm
            change = max(change, abs(new - x[a]))  # (y . x >= 0: a positive semidefinite m)
            x[a] = new
        if change < _AXIS_TOLERANCE:
            break
        largest = 0.0
        for a in range(d):
            for b in range(a, d):
                t = 0.0
                for c in range(d):
                    t += m[a, c] * m[c, b]
                square[a, b] = t
                largest = max(largest, abs(t))
        if not largest > 0.0:
            break
        for a in range(d):
            for b in range(a, d):
                m[a, b] = square[a, b] / largest
                m[b, a] = m[a, b]
    if gram:  # (the scatter's axis: the steps' rows combined by the Gram matrix's)
        for c in range(k):
            v[c] = 0.0
        for i in range(n):
            w = math.sqrt(hist_f[heavy[i], count]) * x[i]
            for c in range(k):
                v[c] += w * steps[i, c]
    else:
        v[:k] = x[:k]
    norm = 0.0
    largest = 0
    for c in range(k):
        norm += v[c] ** 2
        if abs(v[c]) > abs(v[largest]):
            largest = c
    if not norm > 0.0:
        v[:k] = 0.0
        v[first] = 1.0
        return
    norm = math.copysign(math.sqrt(norm), v[largest])
    for c in range(k):
        v[c] /= norm


@numba.njit(cache=True, nogil=True)
def _order_by_principal_axis(hist_f, n_bins, smooth, heavy, n_heavy, scratch):
    """``scratch.order[:n_heavy]``: the ``heavy`` bins by their smoothed class-step vectors'
    projection on the first principal axis of those vectors (each category weighted by its
    weight; :func:`_principal_axis`), ties in bin order."""
    k_classes = (hist_f.shape[1] - 1) // 2
    count = hist_f.shape[1] - 1
    steps, stat, order = scratch.steps, scratch.stat, scratch.order
    total_n = 0.0
    weight = 0.0
    for b in range(n_bins):
        total_n += hist_f[b, count]
    for i in range(n_heavy):
        weight += hist_f[heavy[i], count]
    first = 0
    spread = -1.0
    for c in range(k_classes):
        total_w = 0.0
        for b in range(n_bins):
            total_w += max(hist_f[b, c], 0.0) + max(hist_f[b, k_classes + c], 0.0)
        s = max(smooth * total_w / (2.0 * total_n) if total_n > 0 else 0.0, 1e-300)
        mean = 0.0
        for i in range(n_heavy):
            b = heavy[i]
            steps[i, c] = math.log((max(hist_f[b, k_classes + c], 0.0) + s)
                                   / (max(hist_f[b, c], 0.0) + s))
            mean += hist_f[b, count] * steps[i, c]
        mean = mean / weight if weight > 0.0 else 0.0
        v = 0.0
        for i in range(n_heavy):
            steps[i, c] -= mean
            v += hist_f[heavy[i], count] * steps[i, c] ** 2
        if v > spread:
            spread, first = v, c
    axis = scratch.axis[2]
    if k_classes > 0 and n_heavy > 0:
        _principal_axis(steps, hist_f, heavy, n_heavy, k_classes, first, scratch.scatter,
                        scratch.axis)
    for i in range(n_heavy):
        along = 0.0
        for c in range(k_classes):
            along += steps[i, c] * axis[c]
        stat[i] = along
    if n_heavy > _INSERTION_SORT_MOST:
        by_axis = np.argsort(stat[:n_heavy], kind="mergesort")  # (stable: the same order)
        for i in range(n_heavy):
            order[i] = heavy[by_axis[i]]
        return
    for i in range(n_heavy):  # a stable insertion sort of the few: no allocation
        key = stat[i]
        b = heavy[i]
        j = i - 1
        while j >= 0 and stat[j] > key:
            stat[j + 1] = stat[j]
            order[j + 1] = order[j]
            j -= 1
        stat[j + 1] = key
        order[j + 1] = b


@numba.njit(cache=True, nogil=True)
def _value_order(hist_f, n_bins, held):
    """How many value bins hold weight, written to ``held`` in bin order: the categories by
    value (codes are the sorted values, and bins keep their order), whose prefixes are
    thresholds."""
    n = 0
    for b in range(n_bins):
        if _scanned_bin(hist_f, n_bins, b):
            held[n] = b
            n += 1
    return n


@numba.njit(cache=True, nogil=True, inline="always")
def _head_bin(order, n_order, direction, i):
    """The i-th bin of an order read from its start (direction 0) or its end (1)."""
    return order[i] if direction == 0 else order[n_order - 1 - i]


@numba.njit(cache=True, nogil=True, inline="always")
def _scanned_before(order, n_order, direction, cut, n_rest, seen, seen_shape, n_seen):
    """Whether an order, read from ``direction``, was scanned before as read now (the same
    bins in the same places, as many going left at most, the same light bins on the right):
    its permuted histogram would be the same, so would its scan, which cannot beat the
    first. Else it is recorded as scan ``n_seen``. Classes often order the categories
    alike, or one the reverse of another (with few categories, most do)."""
    for j in range(n_seen):
        if (seen_shape[j, 0] != n_order or seen_shape[j, 1] != cut
                or seen_shape[j, 2] != n_rest):
            continue
        same = True
        for i in range(n_order):
            if seen[j, i] != _head_bin(order, n_order, direction, i):
                same = False
                break
        if same:
            return True
    for i in range(n_order):
        seen[n_seen, i] = _head_bin(order, n_order, direction, i)
    seen_shape[n_seen, 0], seen_shape[n_seen, 1], seen_shape[n_seen, 2] = n_order, cut, n_rest
    return False


@numba.njit(cache=True, nogil=True, inline="always")
def _copy_row(hist_f, b, perm, row):
    for c in range(hist_f.shape[1]):
        perm[row, c] = hist_f[b, c]


@numba.njit(cache=True, nogil=True, inline="always")
def _add_row(hist_f, b, perm, row):
    for c in range(hist_f.shape[1]):
        perm[row, c] += hist_f[b, c]


@numba.njit(cache=True, nogil=True, inline="always")
def _permute(hist_f, order, n_order, direction, max_left, light, n_light, missing_bin, perm):
    """The histogram whose prefixes a scan reads: the order's first ``max_left`` bins (read
    from its end for ``direction`` 1); then the others and the light bins summed into one row
    (they stay right; the row left out where there are none); then the missing bin. Returns
    ``(value rows, rows)``."""
    cut = min(n_order, max_left)
    for i in range(cut):
        _copy_row(hist_f, _head_bin(order, n_order, direction, i), perm, i)
    rows = cut
    if n_order - cut + n_light > 0:
        perm[rows, :] = 0.0
        for i in range(cut, n_order):
            _add_row(hist_f, _head_bin(order, n_order, direction, i), perm, rows)
        for i in range(n_light):
            _add_row(hist_f, light[i], perm, rows)
        rows += 1
    _copy_row(hist_f, missing_bin, perm, rows)
    return rows, rows + 1


@numba.njit(cache=True, nogil=True, inline="always")
def _against_rest_total(hist_f, heavy, n_heavy, alone, light, n_light, missing_bin, c):
    """Channel ``c``'s total of one category, ``heavy[alone]``, against the rest, summed as the
    scan of that two-row histogram sums it: the category, then the rest (the other heavy
    bins, then the light ones, from 0), then the missing bin."""
    rest = 0.0
    for i in range(n_heavy):
        if i != alone:
            rest += hist_f[heavy[i], c]
    for i in range(n_light):
        rest += hist_f[light[i], c]
    t = 0.0 + hist_f[heavy[alone], c]
    if n_heavy - 1 + n_light > 0:
        t += rest
    return t + hist_f[missing_bin, c]


@numba.njit(cache=True, nogil=True, inline="always")
def _open_sides(scores, at, left_n, total_n, miss_n, has_missing, min_count):
    """Candidates ``at`` (a side holding ``left_n`` of ``total_n`` rows' weight, the missing
    values right) and ``at + 1`` (them left) to be scored (0) where both sides hold
    ``min_count`` (the scan's limits; else they stay inf)."""
    if left_n >= min_count and total_n - left_n >= min_count:
        scores[at] = 0.0
    if has_missing and (left_n + miss_n >= min_count
                        and (total_n - left_n) - miss_n >= min_count):
        scores[at + 1] = 0.0


@numba.njit(cache=True, nogil=True, inline="always")
def _open_missing_alone(scores, at, total_n, miss_n, has_missing, min_count):
    """Candidate ``at`` (the missing values alone, right) to be scored where it may be."""
    scores[at] = np.inf
    if has_missing and total_n - miss_n >= min_count and miss_n >= min_count:
        scores[at] = 0.0


@numba.njit(cache=True, nogil=True, inline="always")
def _add_missing_alone(scores, at, total_p, total_m, miss_p, miss_m, q):
    """Adds one class's losses of the missing values alone (right) to candidate ``at``."""
    if scores[at] < np.inf:
        scores[at] += _class_loss(total_p - miss_p, total_m - miss_m, q)
        scores[at] += _class_loss(miss_p, miss_m, q)


@numba.njit(cache=True, nogil=True, inline="always")
def _add_sides(scores, at, left_p, left_m, total_p, total_m, miss_p, miss_m, q):
    """Adds one class's losses of a side holding ``left`` against the rest of ``total``: to
    candidate ``at`` with the missing values right, to ``at + 1`` with them left (those not
    inf: the scan does not score them)."""
    if scores[at] < np.inf:
        scores[at] += _class_loss(left_p, left_m, q)
        scores[at] += _class_loss(total_p - left_p, total_m - left_m, q)
    if scores[at + 1] < np.inf:
        scores[at + 1] += _class_loss(left_p + miss_p, left_m + miss_m, q)
        scores[at + 1] += _class_loss((total_p - left_p) - miss_p, (total_m - left_m) - miss_m,
                                      q)


@numba.njit(cache=True, nogil=True)
def _scan_few(hist_f, n_bins, has_missing, missing_bin, prior, min_count, heavy, n_heavy,
              light, n_light, set_jobs, value_jobs, scores):
    """The jobs of :func:`_scan_category_feature` for a feature of at most ``max_onehot``
    categories: each of the first ``set_jobs`` heavy categories against the rest (it left,
    the other heavy bins and then the light ones summed right, missing values on either side
    or alone), then (``value_jobs``) the values' order (the value bins that hold weight, in
    bin order, then the missing bin: thresholds), where every category may go left
    (``max_left``). What :func:`.vector_scan.scan_vector_feature` returns on each order's
    permuted histogram, and the best of them as the search compares them: the same sums in
    the same order, the same scores compared in the same order, so the same bits (checked
    in the tests). Without the permuted copies and the scan's set-up, class by class, each
    class's sums kept in registers for every candidate: where each candidate's sides were
    written channel by channel and scored alone, a scanned feature of splice (60 features
    of 4-6 levels, K = 3) took 0.85 us, now 0.65 (BENCHMARKS.md, stop 74). ``scores``:
    scratch of ``3 set_jobs + 2 n_held + 1`` at least."""
    n_channels = hist_f.shape[1]
    k = (n_channels - 1) // 2
    count = n_channels - 1
    n_held = n_heavy + n_light
    miss_n = hist_f[missing_bin, count]
    two = n_heavy - 1 + n_light > 0
    # each job's three candidates (category left; it and the missing values left; the
    # missing values alone right): inf where the scan would not score it, else 0 to add to
    n_set = 3 * set_jobs
    for job in range(set_jobs):
        row_n = hist_f[heavy[job], count]
        total_n = _against_rest_total(hist_f, heavy, n_heavy, job, light, n_light,
                                      missing_bin, count)
        scores[3 * job] = scores[3 * job + 1] = np.inf
        if two and total_n - row_n >= min_count and row_n + miss_n >= min_count:
            _open_sides(scores, 3 * job, 0.0 + row_n, total_n, miss_n, has_missing, min_count)
        _open_missing_alone(scores, 3 * job + 2, total_n, miss_n, has_missing, min_count)
    # the values' order: the candidates' positions, as the scan reads them
    n_values = 0
    if value_jobs:
        total_n = 0.0
        for b in range(n_bins):
            if _scanned_bin(hist_f, n_bins, b):
                total_n += hist_f[b, count]
        total_n += miss_n
        running_n = 0.0
        i = 0
        for b in range(n_bins):
            if not _scanned_bin(hist_f, n_bins, b):
                continue
            if i == n_held - 1:
                break
            running_n += hist_f[b, count]
            if total_n - running_n < min_count:
                break
            n_values = i + 1
            at = n_set + 2 * i
            scores[at] = scores[at + 1] = np.inf
            if running_n + miss_n >= min_count:
                _open_sides(scores, at, running_n, total_n, miss_n, has_missing, min_count)
            i += 1
        _open_missing_alone(scores, n_set + 2 * n_values, total_n, miss_n,
                            has_missing and n_held >= 1, min_count)
    n_scores = n_set + 2 * n_values + value_jobs
    # the class losses, class by class (pair_loss's order: each class's left, then right)
    for c in range(k):
        q = prior[c]
        miss_p, miss_m = hist_f[missing_bin, c], hist_f[missing_bin, k + c]
        for job in range(set_jobs):
            row_p, row_m = hist_f[heavy[job], c], hist_f[heavy[job], k + c]
            total_p = _against_rest_total(hist_f, heavy, n_heavy, job, light, n_light,
                                          missing_bin, c)
            total_m = _against_rest_total(hist_f, heavy, n_heavy, job, light, n_light,
                                          missing_bin, k + c)
            _add_sides(scores, 3 * job, 0.0 + row_p, 0.0 + row_m, total_p, total_m, miss_p,
                       miss_m, q)
            _add_missing_alone(scores, 3 * job + 2, total_p, total_m, miss_p, miss_m, q)
        if value_jobs:
            total_p = total_m = 0.0
            for b in range(n_bins):
                if _scanned_bin(hist_f, n_bins, b):
                    total_p += hist_f[b, c]
                    total_m += hist_f[b, k + c]
            total_p += miss_p
            total_m += miss_m
            running_p = running_m = 0.0
            i = 0
            for b in range(n_bins):
                if i == n_values:
                    break
                if not _scanned_bin(hist_f, n_bins, b):
                    continue
                running_p += hist_f[b, c]
                running_m += hist_f[b, k + c]
                _add_sides(scores, n_set + 2 * i, running_p, running_m, total_p, total_m,
                           miss_p, miss_m, q)
                i += 1
            _add_missing_alone(scores, n_set + 2 * n_values, total_p, total_m, miss_p, miss_m,
                               q)
    # compared in the scan's order: each job's candidates, then the jobs' bests
    best, which, last, missing_left = np.inf, 0, 0, False
    for job in range(set_jobs):
        at = 3 * job
        score, b, ml = scores[at], 0, False
        if _better(scores[at + 1], score):
            score, ml = scores[at + 1], True
        if _better(scores[at + 2], score):
            score, b, ml = scores[at + 2], 1 if two else 0, False
        if _better(score, best):
            best, which, last, missing_left = score, -1 - job, b, ml
    if value_jobs:
        score, b, ml = np.inf, 0, False
        for i in range(n_values):
            at = n_set + 2 * i
            if _better(scores[at], score):
                score, b, ml = scores[at], i, False
            if _better(scores[at + 1], score):
                score, b, ml = scores[at + 1], i, True
        if _better(scores[n_scores - 1], score):
            score, b, ml = scores[n_scores - 1], n_held - 1, False
        if _better(score, best):
            best, which, last, missing_left = score, _VALUES, b, ml
    return best, which, last, missing_left


@numba.njit(cache=True, nogil=True)
def _scan_category_feature(hist_f, n_bins, has_missing, missing_bin, prior, min_count, smooth,
                           min_per_category, max_left, max_onehot, scratch):
    """:func:`scan_category_feature` in a thread's buffers: one loop over the orders, each
    permuted and scanned in the same place (one copy of the inlined scan). Not inlined in
    its caller's loop over features, which saved ~0.13 us a feature: with it, the first fit
    with a categorical column compiled for 193-196 s instead of 113-115 (stop 72)."""
    heavy, light, order, perm = scratch.heavy, scratch.light, scratch.order, scratch.perm
    n_heavy, n_light = _weigh(hist_f, n_bins, min_per_category, heavy, light)
    n_held = n_heavy + n_light  # the value bins that hold weight
    # the set orders: none for fewer than two categories (one, with missing values), one
    # category against the rest for few (LightGBM's max_cat_to_onehot; of two categories only
    # the first: the second against the first is the same split from its other side, its
    # sums differing by rounding only), else the principal order, read from its far end too
    # only where light categories (always right) or the cap on categories going left make
    # that end's prefixes other sets: else they are the first end's from their other side
    if n_held < 2 and not (has_missing and n_heavy == 1):
        set_jobs = 0
    elif n_held <= max_onehot:
        set_jobs = 1 if n_heavy == 2 and n_light == 0 else n_heavy
    else:
        set_jobs = 1 if n_light == 0 and n_heavy <= max_left else 2
    # then the values' own order, except where it adds nothing: no category, or one without
    # missing values, or at most three that were each split from the rest (every split of
    # three categories is one; a light category is never split alone); read from the far
    # end too only where the cap on categories going left hides splits
    value_jobs = 1 if n_held - 1 <= max_left else 2
    if (n_held < 2 and not (has_missing and n_held == 1)) or (
            2 <= n_held <= min(3, max_onehot) and n_light == 0):
        value_jobs = 0
    if n_held <= max_onehot:  # each category against the rest
        best, which, last, missing_left = _scan_few(
            hist_f, n_bins, has_missing, missing_bin, prior, min_count, heavy, n_heavy, light,
            n_light, set_jobs, value_jobs if n_held <= max_left else 0, scratch.few)
        if n_held <= max_left:  # (and the values' order, in place: no order to permute)
            return best, which, last, missing_left
        first = set_jobs
    else:
        best, which, last, missing_left = np.inf, 0, 0, False
        first = 0
    n_order = n_heavy
    n_seen = 0  # orders scanned
    for job in range(first, set_jobs + value_jobs):
        if job < set_jobs:
            direction = job
            if direction == 0:
                _order_by_principal_axis(hist_f, n_bins, smooth, heavy, n_heavy, scratch)
            n_order, n_rest, label = n_heavy, n_light, _PRINCIPAL + direction
        else:
            direction = job - set_jobs
            if direction == 0:
                n_order = _value_order(hist_f, n_bins, order)
            n_rest, label = 0, _VALUES + direction
        if _scanned_before(order, n_order, direction, min(n_order, max_left), n_rest,
                           scratch.seen, scratch.seen_shape, n_seen):
            continue
        n_seen += 1
        n_value, rows = _permute(hist_f, order, n_order, direction, max_left, light, n_rest,
                                 missing_bin, perm)
        score, b, ml = scan_vector_feature(perm, n_value, has_missing, rows - 1, prior,
                                           min_count, scratch.work, scratch.candidates,
                                           scratch.sums)
        if _better(score, best):
            best, which, last, missing_left = score, label, b, ml
    return best, which, last, missing_left


def scan_category_feature(hist_f: np.ndarray, n_bins: int, has_missing: bool,
                          missing_bin: int, prior: np.ndarray, min_count: float,
                          smooth: float, min_per_category: float, max_left: int,
                          max_onehot: int) -> tuple[float, int, int, bool]:
    """Best ``(score, which, bin, missing_left)`` of one categorical feature: ``which`` is
    ``direction`` (0 or 1) for the principal order read from that end, with ``bin`` the last
    position of the prefix going left (past the prefix: every category left); or, for at most
    ``max_onehot`` categories, ``-1 - i`` for the i-th heavy category (in bin order) alone; or
    ``2 + direction`` for the values' own order (the value bins that hold weight, in bin
    order), which takes over only when better beyond rounding: a column of ordered levels (a
    chess file, a day of the week) keeps the thresholds its integer codes would have had."""
    return _scan_category_feature(hist_f, n_bins, has_missing, missing_bin, prior, min_count,
                                  smooth, min_per_category, max_left, max_onehot,
                                  _scratch(max(n_bins, 1), hist_f.shape[1]))


# Relative margin by which a feature's floor must exceed the score to beat before the feature
# is passed over: far above the rounding of the floor's and the scores' sums (a few ulps).
_FLOOR_MARGIN = 1e-9


@numba.njit(cache=True, nogil=True, inline="always")
def _class_weights_into(hist_f, n_bins, most):
    """``most[c]``: the largest of itself and the class-c weight of the feature's bins that
    the search places."""
    k = most.shape[0]
    for c in range(k):
        weight = 0.0
        for b in range(n_bins + 1):
            if _scanned_bin(hist_f, n_bins, b):
                weight += max(hist_f[b, c], 0.0) + max(hist_f[b, k + c], 0.0)
        most[c] = max(most[c], weight)


@numba.njit(cache=True, nogil=True, inline="always")
def _reach_into(weight, prior, reach):
    """``reach[c]``: ``e^|a|`` at most for a side of class-c weight ``weight[c]`` at most
    (the step's eps as vector_leaf's, generously); larger only loosens a floor."""
    for c in range(prior.shape[0]):
        reach[c] = (math.sqrt((weight[c] * (1.0 + 2.0 * STEP_EPS) + prior[c]) / prior[c])
                    if prior[c] > 0.0 else np.inf)


@numba.njit(cache=True, nogil=True, inline="always")
def split_floor(hist_f, n_bins, reach):
    """A lower bound on the score of every split the search can make of a feature's bins
    (those :func:`_scanned_bin`) into two sides: each bin at its own best step within the
    steps a side can take, summed over bins and classes. A side's class-k loss is
    ``W+ e^-a + W- e^a`` at one smoothed step ``a`` for all its bins
    (:func:`.vector_leaf._class_loss`), so it is never below the sum of its bins' least
    values over the steps such a side can take: ``|a| <= 1/2 ln(1 + W_k / prior_k)``
    (``W_k``: the bins' class-k weight), ``2 sqrt(W+ W-)`` where a bin's own best step lies
    within. ``reach``: ``e^|a|`` at most (:func:`_reach_into` of the bins' weights, or of
    more). A feature whose floor is above the best score found so far cannot win, and the
    search passes it over (QuickBoost's argument: the same split without its orders'
    scans)."""
    k = reach.shape[0]
    total = 0.0
    for b in range(n_bins + 1):
        if not _scanned_bin(hist_f, n_bins, b):
            continue
        for c in range(k):
            p, m, r = max(hist_f[b, c], 0.0), max(hist_f[b, k + c], 0.0), reach[c]
            if m * r * r < p:  # its own best step lies beyond reach
                total += p / r + m * r
            elif p * r * r < m:
                total += p * r + m / r
            else:
                total += 2.0 * math.sqrt(p * m)
    return total


@numba.njit(cache=True, nogil=True)
def _scan_category_range(hist, features, n_value_bins, has_missing, offsets, prior, min_count,
                         smooth, min_per_category, max_left, max_onehot, incumbent, j0, j1,
                         score, which, last, missing_left):
    """:func:`scan_category_feature` of ``features[j0:j1]`` into the arrays' entries, the
    features in order of their :func:`split_floor`; those whose floor is above ``incumbent``
    and every score found here are passed over (their scores stay inf): they could neither
    be picked (:func:`.splits.pick_index`) nor beat the incumbent."""
    if j1 <= j0:
        return
    most = 1
    for j in range(j0, j1):
        most = max(most, n_value_bins[features[j]])
    scratch = _scratch(most, hist.shape[1])
    # (every feature's floor at the reach of the heaviest: its bins hold the leaf's weight,
    # up to rounding, so one reach serves all, and a larger one only loosens a floor)
    weight = np.zeros(prior.shape[0])
    for j in range(j0, j1):
        f = features[j]
        _class_weights_into(hist[offsets[f]:offsets[f + 1]], n_value_bins[f], weight)
    reach = np.empty(prior.shape[0])
    _reach_into(weight, prior, reach)
    floors = np.empty(j1 - j0)
    for j in range(j0, j1):
        f = features[j]
        floors[j - j0] = split_floor(hist[offsets[f]:offsets[f + 1]], n_value_bins[f], reach)
    # the lowest floor's feature first: its score usually passes over most of the others,
    # and only the features left are sorted
    order = np.full(1, np.argmin(floors))
    to_beat = incumbent
    for sort in (False, True):
        if sort:
            left = np.flatnonzero(floors * (1.0 - _FLOOR_MARGIN) <= to_beat)
            left = left[left != order[0]]
            order = left[np.argsort(floors[left], kind="mergesort")]
        for i in order:
            if floors[i] * (1.0 - _FLOOR_MARGIN) > to_beat:
                break  # (and every feature after it)
            j = j0 + i
            f = features[j]
            score[j], which[j], last[j], missing_left[j] = _scan_category_feature(
                hist[offsets[f]:offsets[f + 1]], n_value_bins[f], has_missing[f],
                n_value_bins[f], prior, min_count, smooth, min_per_category, max_left,
                max_onehot, scratch)
            to_beat = min(to_beat, score[j])


@numba.njit(parallel=True, cache=True, nogil=True)
def _scan_category_parallel(hist, features, n_value_bins, has_missing, offsets, prior,
                            min_count, smooth, min_per_category, max_left, max_onehot,
                            incumbent, n_tasks, score, which, last, missing_left):
    """:func:`_scan_category_range` of every feature in ``n_tasks`` blocks on every thread."""
    n = features.shape[0]
    n_tasks = max(1, min(n, n_tasks))
    for t in numba.prange(n_tasks):
        _scan_category_range(hist, features, n_value_bins, has_missing, offsets, prior,
                             min_count, smooth, min_per_category, max_left, max_onehot,
                             incumbent, t * n // n_tasks, (t + 1) * n // n_tasks, score, which,
                             last, missing_left)


def best_category_split(hist: np.ndarray, features: np.ndarray, layout: BinLayout,
                        offsets: np.ndarray, prior: np.ndarray, min_count: float,
                        smooth: float, min_per_category: float, max_left: int,
                        max_onehot: int, incumbent: float = np.inf
                        ) -> tuple[Split, np.ndarray] | None:
    """The best category-set split of a compact leaf histogram (``offsets``:
    :meth:`~rebelboost.binning.BinLayout.cell_offsets`) over the categorical ``features``
    (``Split.feature`` indexes ``features``) and its table of bins going left
    (``layout.n_bins_total``; the missing bin's entry: the missing side), or None. At most
    ``max_left`` categories go left (LightGBM's ``max_cat_threshold``), taken from either end
    of an order; a feature with at most ``max_onehot`` categories splits one of them from the
    rest (``max_cat_to_onehot``). The features are scanned on every thread. ``incumbent``:
    the score a split must beat to be taken (the leaf's best numeric split or its loss); a
    feature that cannot beat it is passed over (:func:`split_floor`), so the split returned
    may differ where none beats it."""
    if len(features) == 0:
        return None
    left_bins = np.zeros(layout.n_bins_total, dtype=bool)
    j, score, last, missing_left = best_category_in_leaf(
        hist, features, layout.n_value_bins, layout.has_missing, offsets, prior, min_count,
        smooth, min_per_category, max_left, max_onehot, layout.missing_bin, incumbent,
        4 * numba.get_num_threads(), left_bins)
    if j < 0:
        return None
    return Split(float(score), int(j), int(last), bool(missing_left)), left_bins


@numba.njit(cache=True, nogil=True)
def left_bins_into(hist_f, n_bins, which, last, missing_left, smooth, min_per_category,
                   max_left, missing_bin, out):
    """``out`` (a bool per bin): the bins that :func:`scan_category_feature`'s winner
    ``(which, last, missing_left)`` sends left, the missing bin's entry its missing side."""
    scratch = _scratch(max(n_bins, 1), hist_f.shape[1])
    heavy, light, order = scratch.heavy, scratch.light, scratch.order
    # one category against the rest (in bin order), or the principal order, or the values'
    alone = -1 - which if which < 0 else -1
    direction = 0 if which < 0 else (which - _PRINCIPAL) % 2
    if which >= _VALUES:
        n_order, n_light = _value_order(hist_f, n_bins, order), 0
    else:
        n_order, n_light = _weigh(hist_f, n_bins, min_per_category, heavy, light)
        if which < 0:
            order[:n_order] = heavy[:n_order]
        else:
            _order_by_principal_axis(hist_f, n_bins, smooth, heavy, n_order, scratch)
    cut = 1 if alone >= 0 else min(n_order, max_left)
    out[:] = False
    for i in range(min(last + 1, cut)):
        out[order[alone] if alone >= 0 else _head_bin(order, n_order, direction, i)] = True
    if last >= cut:  # every category left (missing values right)
        out[order[:n_order]] = True
        out[light[:n_light]] = True
    out[missing_bin] = missing_left


# Cells x channels of a leaf's categorical features from which their search may run on every
# thread (with two features at least): below, waking the threads costs more than the search
# (stop 42: 4 features of 4 levels at K = 3, 140 cells x channels, 24-26 us on one thread
# against 47-55 on two).
PARALLEL_CATEGORY_CELLS = 1024
# And cells x channels per feature, on average. The search passes over the features that
# cannot beat the best split so far (split_floor), one block of features at a time, so one
# thread prunes more than several and most searches are short: only features of many levels
# or classes pay for waking the threads. Stop 44 set 64 (calendarDOW's fit, 81 a feature, then
# took 1.21x on one thread); since the scans of stops 54-72 every real set's search is faster
# on one thread. Whole fits on 2 threads, one thread's search over the rule at 64, two
# alternated rounds of median-of-5 fits (`python benchmarks/category_threads_fits.py`, stop 73;
# BENCHMARKS.md): dermatology (65 a feature) 0.76x, 0.68x; calendarDOW (80) 0.88x, 0.96x; fars
# (122) 0.88x, 0.93x; krkopt (284) 0.90x, 0.90x; the 16 other sets of the categorical
# benchmark search on one thread under either rule (0.92-1.07x: noise). Synthetic sets of
# 6-10 features of 20-30 levels at K = 10-18 (650-780 a feature) still took 0.85-1.0x on
# every thread; the threshold lies between.
PARALLEL_CATEGORY_CELLS_A_FEATURE = 512


def category_tasks(n_cells: int, n_channels: int, n_features: int) -> int:
    """The blocks of features the compiled grower's category search
    (:func:`best_category_in_leaf`) over ``n_features`` categorical features of ``n_cells``
    histogram cells runs in: four a thread from :data:`PARALLEL_CATEGORY_CELLS` cells x
    channels and :data:`PARALLEL_CATEGORY_CELLS_A_FEATURE` a feature, with two features at
    least; else one on the calling thread."""
    threads = numba.get_num_threads()
    work = n_cells * n_channels
    return (4 * threads if threads > 1 and n_features >= 2 and work >= PARALLEL_CATEGORY_CELLS
            and work >= PARALLEL_CATEGORY_CELLS_A_FEATURE * n_features else 1)


@numba.njit(cache=True, nogil=True)
def best_category_in_leaf(hist, features, n_value_bins, has_missing, offsets, prior,
                          min_count, smooth, min_per_category, max_left, max_onehot,
                          missing_bin, incumbent, n_tasks, out):
    """The best category-set split of a leaf (:func:`best_category_split`, which the Python
    grower calls; the compiled grower calls this), on the calling thread or, for ``n_tasks``
    above 1, in that many blocks of features on every thread (the same split): ``(index into
    features, score, bin, missing_left)`` (index -1: none), the bins going left written to
    ``out``. Features that cannot beat ``incumbent`` are passed over (as
    :func:`best_category_split`)."""
    n = features.shape[0]
    score = np.full(n, np.inf)
    which = np.zeros(n, dtype=np.int64)
    last = np.zeros(n, dtype=np.int64)
    missing_left = np.zeros(n, dtype=np.bool_)
    if n_tasks > 1:
        _scan_category_parallel(hist, features, n_value_bins, has_missing, offsets, prior,
                                min_count, smooth, min_per_category, max_left, max_onehot,
                                incumbent, n_tasks, score, which, last, missing_left)
    else:
        _scan_category_range(hist, features, n_value_bins, has_missing, offsets, prior,
                             min_count, smooth, min_per_category, max_left, max_onehot,
                             incumbent, 0, n, score, which, last, missing_left)
    j = pick_index(score)
    if j < 0:
        return -1, np.inf, 0, False
    f = features[j]
    left_bins_into(hist[offsets[f]:offsets[f + 1]], n_value_bins[f], which[j], last[j],
                   missing_left[j], smooth, min_per_category, max_left, missing_bin, out)
    return j, score[j], last[j], missing_left[j]
