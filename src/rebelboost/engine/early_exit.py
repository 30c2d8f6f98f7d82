"""Exact early exit: stop adding a row's learners once its leading class cannot be overtaken.

After ``s`` learners, row ``x`` has partial scores ``P``; class ``j`` can gain at most
``R[s, k, j] = sum_{t>=s} max_leaf (values[t, leaf, j] - values[t, leaf, k])`` on the leader
``k`` (trees: weight 1, only reachable leaves). The exit is taken when for every ``j != k``

    P_k - P_j > R[s, k, j] + (2T + 16) u (A_k + A_j)

with ``u = 2**-53`` and ``A_c = sum_t max_leaf |values[t, leaf, c]|`` (so ``A_c >= |P_c| +
B[s, c]``, ``B[s, c]`` the same sum from ``s`` on). The margin bounds, to first order, the rounding
of everything that could still move the order: the remaining additions of full evaluation
(``gamma_{T-s} (|P_c| + B[s, c])`` per class), the rounding of the precomputed right side
(``gamma_{T+1} (B_k + B_j)``) and of the test itself (``2u``); the slack ``13u`` covers
second-order terms for ``T`` up to ``_MAX_LEARNERS``. So the full sums satisfy ``H_k > H_j``
strictly and ``argmax`` (first index on ties) gives ``k``. Rows that never exit are summed to
the end in full evaluation's order (tree by tree, class by class, from 0), so their scores,
and labels, are bit for bit those of :meth:`AdditiveModel.scores`. Tests start at the first
checkpoint where some class could lead by enough (skipping a test only delays an exit).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..learners.category_sets import category_leaf_of
from ..learners.leaf_tree import LeafTreeArrays, leaf_of
from ..learners.tree import SERIAL_ROWS, TreeArrays

_MAX_LEARNERS = 10**6  # the margin's slack covers second-order rounding up to here
_BOUND_ENTRIES = 2**24  # checkpoints x K x K bounds held per model range (128 MiB at most)
CHECK_EVERY = 8  # learners between exit tests (benchmarks/bench_predict.py --check-every)
CASCADE_EVERY = 10  # learners between a soft cascade's tests: coarser, fewer thresholds to fit


Trees = TreeArrays | LeafTreeArrays


def explicit_trees(trees: Trees) -> tuple[np.ndarray, ...]:
    """``(feature, threshold, missing_left, left, right)`` of either tree kind with explicit
    children (:mod:`rebelboost.learners.leaf_tree`), so one routing kernel serves both: a
    heap tree's node ``i`` has children ``2i+1``, ``2i+2``, leaves after its internal nodes."""
    if isinstance(trees, LeafTreeArrays):
        return trees.feature, trees.threshold, trees.missing_left, trees.left, trees.right
    n_trees, m = trees.feature.shape
    child = np.arange(m, dtype=np.int64)
    left, right = 2 * child + 1, 2 * child + 2
    left = np.where(left < m, left, ~(left - m)).astype(np.int32)
    right = np.where(right < m, right, ~(right - m)).astype(np.int32)
    return (trees.feature, trees.threshold, trees.missing_left,
            np.ascontiguousarray(np.broadcast_to(left, (n_trees, m))),
            np.ascontiguousarray(np.broadcast_to(right, (n_trees, m))))


def category_words(trees: Trees) -> np.ndarray | None:
    """The categorical nodes' bitsets of codes going left, (T, M, W), or None (every node
    tests a threshold): the routing kernels' argument after :func:`explicit_trees`' arrays."""
    return getattr(trees, "category_words", None)


def reachable_leaves(trees: Trees) -> np.ndarray:
    """(T, n_slots) bool: leaves some row can reach (a pass node or an always-true test cuts
    its right subtree; a leaf no node points to is never reached; both children of a
    categorical node count as reached)."""
    feature, threshold, missing_left, left, right = explicit_trees(trees)
    return _reachable(feature, threshold, missing_left, left, right, trees.n_slots)


@numba.njit(cache=True, nogil=True)
def _reachable(feature, threshold, missing_left, left, right, n_slots):
    n_trees, m = feature.shape
    reach = np.zeros((n_trees, n_slots), np.bool_)
    for t in range(n_trees):
        open_ = np.zeros(m, np.bool_)  # internal nodes reached; children come after parents
        open_[0] = True
        for node in range(m):
            if not open_[node]:
                continue
            cut = feature[t, node] < 0 or (threshold[t, node] == np.inf
                                           and missing_left[t, node])
            child = left[t, node]
            if child >= 0:
                open_[child] = True
            else:
                reach[t, ~child] = True
            if not cut:
                child = right[t, node]
                if child >= 0:
                    open_[child] = True
                else:
                    reach[t, ~child] = True
    return reach


def tree_bounds(trees: Trees, values: np.ndarray, every: int):
    """Checkpoints (learners added before each test), the first worth testing, and the
    right sides ``R + margin`` (C, K, K) of the exit test at each, and ``right - most`` (the
    most the left side can grow by each checkpoint) to skip tests that cannot pass yet."""
    n_trees, n_leaves, k = values.shape
    every = max(every, -(-n_trees * k * k // _BOUND_ENTRIES))
    n_segments = -(-n_trees // every)
    seg_gain = np.empty((n_segments, k, k))  # [g, k, j]: most segment g adds to j - k
    seg_size = np.empty((n_segments, k))  # [g, c]: most |value| segment g adds to class c
    reach = reachable_leaves(trees)
    chunk = every * max(1, 2**22 // (n_leaves * k * k * every))
    for t0 in range(0, n_trees, chunk):
        v, r = values[t0:t0 + chunk], reach[t0:t0 + chunk, :, None]
        diff = v[:, :, None, :] - v[:, :, :, None]  # [t, leaf, k, j] = v_j - v_k
        gain = np.where(r[..., None], diff, -np.inf).max(axis=1)
        size = np.where(r, np.abs(v), 0.0).max(axis=1)
        starts = np.arange(0, len(v), every)
        seg_gain[t0 // every:(t0 + len(v) - 1) // every + 1] = np.add.reduceat(gain, starts, 0)
        seg_size[t0 // every:(t0 + len(v) - 1) // every + 1] = np.add.reduceat(size, starts, 0)
    checks = np.arange(1, n_segments, dtype=np.int64) * every
    if n_trees > _MAX_LEARNERS:
        checks = checks[:0]
    total = seg_size.sum(axis=0)
    margin = (2.0 * n_trees + 16.0) * 2.0**-53 * (total[:, None] + total[None, :])
    right = np.cumsum(seg_gain[:0:-1], axis=0)[::-1][:len(checks)] + margin
    # the most class k can lead j by after each checkpoint: a test before any k can lead all
    # others by their right sides cannot pass
    most = np.cumsum(seg_gain, axis=0)[:len(checks)].transpose(0, 2, 1)  # [c, k, j]
    beyond = right - most  # a test of (k, j) at c needs P_k - P_j - most[c0, k, j] > beyond[c]
    most[:, np.arange(k), np.arange(k)] = np.inf
    possible = np.flatnonzero((most > right - margin).all(axis=2).any(axis=1))
    first = int(possible[0]) if len(possible) else len(checks)
    return checks, first, np.ascontiguousarray(right), np.ascontiguousarray(beyond)


def tree_exit_codes(trees: Trees, values: np.ndarray, X: np.ndarray, bounds):
    """(class index of each row, learners it evaluated), labels identical to full evaluation."""
    checks, first, right, beyond = bounds
    n = X.shape[0]
    codes = np.empty(n, np.int64)
    used = np.empty(n, np.int64)
    kernel = _tree_exit if n >= SERIAL_ROWS else _tree_exit_serial
    kernel(np.ascontiguousarray(X, dtype=np.float64), *explicit_trees(trees),
           category_words(trees), np.ascontiguousarray(values, dtype=np.float64), checks, first,
           right, beyond, np.zeros((2, 0)), np.zeros((n, values.shape[2])), codes, used)
    return codes, used


@dataclass(frozen=True)
class SoftCascade:
    """A soft cascade (Bourdev & Brandt 2005; thesis ch. 2): after ``checks[c]`` learners a row
    stops with its leading class once that leads the runner-up by ``thresholds[c]``. Made by
    :meth:`AdditiveModel.calibrate_cascade`; approximate: labels may differ from ``predict``."""

    learners: tuple[int, int]  # the learner range [t0, t1) it was calibrated on
    checks: np.ndarray  # (C,) learners added before each test
    thresholds: np.ndarray  # (C,) lead over the runner-up that stops a row there
    growth: np.ndarray  # (C,) most a lead can have grown by each checkpoint (to skip tests)
    keep: float  # fraction of the full model's held-out decisions it was calibrated to keep


def calibrate(trees: Trees, values: np.ndarray, X: np.ndarray, keep: float, every: int,
              learners: tuple[int, int]) -> SoftCascade:
    """Thresholds that keep at least ``keep`` of the full model's decisions on rows ``X``.

    The disagreements allowed, ``(1 - keep) n``, are spread evenly over the checkpoints (a
    uniform rejection distribution); at each checkpoint the threshold is the lowest that lets
    no more disagreeing rows stop than the budget so far allows, among rows still running.
    """
    n_trees, k = len(trees), values.shape[2]
    checks = np.arange(every, n_trees, every, dtype=np.int64)
    lead = np.empty((X.shape[0], len(checks)), np.int64)
    gap = np.empty((X.shape[0], len(checks)))
    final = np.empty(X.shape[0], np.int64)
    _tree_margins(np.ascontiguousarray(X, dtype=np.float64), *explicit_trees(trees),
                  category_words(trees), np.ascontiguousarray(values, dtype=np.float64), checks,
                  np.zeros(k), lead, gap, final)
    allowed = (1.0 - keep) * X.shape[0]
    running = np.ones(X.shape[0], bool)
    thresholds = np.full(len(checks), np.inf)
    spent = 0
    for c in range(len(checks)):
        rows = np.flatnonzero(running)
        order = rows[np.argsort(-gap[rows, c], kind="stable")]
        wrong = np.cumsum(lead[order, c] != final[order])
        budget = allowed * (c + 1) / len(checks) - spent
        p = int(np.searchsorted(wrong, budget, side="right"))  # stopping order[:p] is allowed
        if p < len(order):  # rows tied with order[p] cannot stop without it
            thresholds[c] = np.nextafter(gap[order[p], c], np.inf)
        elif len(order):
            thresholds[c] = gap[order[-1], c]
        stop = running & (gap[:, c] >= thresholds[c])
        spent += int(np.sum(stop & (lead[:, c] != final)))
        running &= ~stop
    spread = values.max(axis=2) - values.min(axis=2)  # a lead changes by at most this a tree
    growth = np.cumsum(np.where(reachable_leaves(trees), spread, 0.0).max(axis=1))[checks - 1]
    return SoftCascade(learners, checks, thresholds, growth, keep)


def cascade_codes(trees: Trees, values: np.ndarray, X: np.ndarray, cascade: SoftCascade):
    """(class index of each row under the soft cascade, learners it evaluated)."""
    n, k = X.shape[0], values.shape[2]
    codes = np.empty(n, np.int64)
    used = np.empty(n, np.int64)
    kernel = _tree_exit if n >= SERIAL_ROWS else _tree_exit_serial
    kernel(np.ascontiguousarray(X, dtype=np.float64), *explicit_trees(trees),
           category_words(trees), np.ascontiguousarray(values, dtype=np.float64), cascade.checks,
           0, np.zeros((0, k, k)), np.zeros((0, k, k)),
           np.stack([cascade.thresholds, cascade.growth]), np.zeros((n, k)), codes, used)
    return codes, used


@numba.njit(cache=True, nogil=True, inline="always")
def _leaf(x, t, feature, threshold, missing_left, left, right, words, nodes):
    """The leaf row ``x`` reaches in tree ``t``: thresholds only (``words`` None) or with
    categorical nodes' bitsets (:mod:`rebelboost.learners.category_sets`)."""
    if words is None:
        return leaf_of(x, feature[t], threshold[t], missing_left[t], left[t], right[t])
    return category_leaf_of(x, feature[t], nodes, threshold[t], missing_left[t], left[t],
                            right[t], words[t])


@numba.njit(cache=True, nogil=True, inline="always")
def _exit_row(x, feature, threshold, missing_left, left, right_child, words, nodes, values,
              checks, first, right, beyond, soft, acc):
    """Add row ``x``'s learners into ``acc`` until the exit test passes: (class, learners).

    The test is the exact one, or with ``soft`` (thresholds, growth) (non-empty) a soft
    cascade's. A failed test skips to the first checkpoint where it could pass (exact: for the
    pair it failed on; a skipped test only delays an exit, so the labels stay exact)."""
    n_trees, k, n_checks = feature.shape[0], values.shape[2], checks.shape[0]
    t, c = 0, first
    while True:
        stop = checks[c] if c < n_checks else n_trees
        while t < stop:
            leaf = _leaf(x, t, feature, threshold, missing_left, left, right_child, words,
                         nodes)
            for j in range(k):
                acc[j] += values[t, leaf, j]
            t += 1
        lead, second = 0, -1  # the leader (first index on ties) and the best other class
        for j in range(1, k):
            if acc[j] > acc[lead]:
                lead, second = j, lead
            elif second < 0 or acc[j] > acc[second]:
                second = j
        if c == n_checks:
            return lead, t
        if soft.shape[1]:
            if acc[lead] - acc[second] >= soft[0, c]:
                return lead, t
            base = acc[lead] - acc[second] - soft[1, c]
            c += 1
            while c < n_checks and base + soft[1, c] < soft[0, c]:
                c += 1
            continue
        fail = second if not acc[lead] - acc[second] > right[c, lead, second] else -1
        for j in range(k):
            if fail >= 0:
                break
            if j != lead and not acc[lead] - acc[j] > right[c, lead, j]:
                fail = j
        if fail < 0:
            return lead, t
        base = acc[lead] - acc[fail] - (right[c, lead, fail] - beyond[c, lead, fail])
        c += 1
        while c < n_checks and not base > beyond[c, lead, fail]:
            c += 1


@numba.njit(parallel=True, cache=True, nogil=True)
def _tree_exit(X, feature, threshold, missing_left, left, right_child, words, values, checks,
               first, right, beyond, soft, scores, codes, used):
    nodes = np.arange(feature.shape[1])
    for i in numba.prange(X.shape[0]):
        codes[i], used[i] = _exit_row(X[i], feature, threshold, missing_left, left, right_child,
                                      words, nodes, values, checks, first, right, beyond, soft,
                                      scores[i])


@numba.njit(cache=True, nogil=True)
def _tree_exit_serial(X, feature, threshold, missing_left, left, right_child, words, values,
                      checks, first, right, beyond, soft, scores, codes, used):
    nodes = np.arange(feature.shape[1])
    for i in range(X.shape[0]):
        codes[i], used[i] = _exit_row(X[i], feature, threshold, missing_left, left, right_child,
                                      words, nodes, values, checks, first, right, beyond, soft,
                                      scores[i])


@numba.njit(parallel=True, cache=True, nogil=True)
def _tree_margins(X, feature, threshold, missing_left, left, right, words, values, checks, zeros,
                  lead, gap, final):
    """Each row's leader and its lead over the runner-up at every checkpoint, and the final
    leader (a soft cascade's calibration data)."""
    n_trees, k = feature.shape[0], values.shape[2]
    nodes = np.arange(feature.shape[1])
    for i in numba.prange(X.shape[0]):
        acc = zeros.copy()
        t = 0
        for c in range(checks.shape[0] + 1):
            stop = checks[c] if c < checks.shape[0] else n_trees
            while t < stop:
                leaf = _leaf(X[i], t, feature, threshold, missing_left, left, right, words,
                             nodes)
                for j in range(k):
                    acc[j] += values[t, leaf, j]
                t += 1
            best, second = 0, -1
            for j in range(1, k):
                if acc[j] > acc[best]:
                    best, second = j, best
                elif second < 0 or acc[j] > acc[second]:
                    second = j
            if c < checks.shape[0]:
                lead[i, c], gap[i, c] = best, acc[best] - acc[second]
            else:
                final[i] = best
