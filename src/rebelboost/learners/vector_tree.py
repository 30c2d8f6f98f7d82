"""Vector-leaf REBEL trees: grown leaf by leaf, each leaf with its own closed-form K-vector.

Given a partition of the rows into leaves, REBEL's loss separates by leaf and class: a leaf
whose rows' weights sum to ``W+_k``, ``W-_k`` (channels ``w+ = c+ e^H``, ``w- = c- e^-H``)
takes the step ``a_k = 1/2 ln(W-_k / W+_k)`` and then costs ``2 sqrt(W+_k W-_k)``. So one tree
per iteration does the work of LightGBM's K trees per round, from the same 2K-channel
histograms a REBEL stump reads (plus a row count for ``min_samples_leaf``).

Smoothing: each leaf's class sums get ``leaf_smoothing`` pseudo-rows of the root's average
weight on both sides, ``Q±_k = W±_k + lambda m_k``; the step ``1/2 ln(Q-_k / Q+_k)`` then lies
between 0 and the exact step, so the loss still cannot rise, and a leaf of a few rows no longer
takes a step of ``ln(1/eps)``. Split scores are the smoothed leaves' true losses
``W+ e^a + W- e^-a``.

Growth (LightGBM's leaf-wise order): the leaf whose best split lowers the loss most is split
next, until ``max_leaves`` leaves (or ``max_depth``, or no split helps). Each leaf keeps its
rows (increasing index) and, within a memory budget, its histogram: of two children the one
with fewer rows is built from its rows and the other is its parent's histogram minus it.

The grower holds the tree and every decision; the rows it reads are behind a row set
(:class:`LocalRows` here: the rows of each leaf as index arrays; :mod:`rebelboost.dask` keeps
them on the workers and sums their counts, channel sums and histograms), so a distributed fit
takes the same decisions from the same sums.

Sampling (per iteration, seeded by the caller's generator): rows uniformly (``subsample``), or
by weight as in GOSS (``'goss'``: the heaviest rows plus a uniform draw of the rest scaled up
so every sum stays unbiased), and features (``colsample_bytree``). Leaf vectors come from the
sampled rows; every training row is then routed through the tree for the next iteration.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numba
import numpy as np

from ..binning import Binner
from ..losses.rebel import STEP_EPS
from ..search.binned import BinnedData
from ..search.histogram import add_sparse_entries
from ..search.splits import TIE_RTOL, is_better, pick_split
from .leaf_tree import LeafTreeArrays, constant_leaf_tree

# Leaf histograms kept for subtraction at once (bytes); beyond it the lowest-gain leaves'
# histograms are dropped and their children built directly.
HISTOGRAM_BUDGET = 1 << 27
# Histogram additions (rows x features x channels) from which the kernels use every thread.
_PARALLEL_ADDS = 1 << 20
SAMPLINGS = ("uniform", "goss")


@dataclass
class VectorTreeOptions:
    max_leaves: int = 31
    max_depth: int | None = None
    min_samples_leaf: int = 20
    leaf_smoothing: float = 1.0
    subsample: float = 1.0
    sampling: str = "uniform"
    colsample_bytree: float = 1.0


@dataclass
class VectorTreeFit:
    """One iteration's vector-leaf tree."""

    arrays: LeafTreeArrays  # a stack of one tree
    leaf_values: np.ndarray  # (max_leaves, K) each leaf's step (unused leaves 0)
    leaf_of_row: np.ndarray  # (n_samples,) leaf of every training row
    loss: float  # loss of the sampled rows after the step, in the channels' scale
    gains: list[tuple[int, float]] = field(default_factory=list)  # (feature, loss reduction)
    histogram_updates: int = 0
    nodes_searched: int = 0


@dataclass(eq=False)
class _Leaf:
    rows: object  # the row set's handle of its (sampled) rows
    n_rows: int
    sums: np.ndarray  # (2K + 1,) channel sums and sample weight
    depth: int
    parent: int  # internal node holding it (-1: root), and which side
    side: int
    hist: np.ndarray | None = None
    split: tuple | None = None  # (score, feature, bin, missing_left)
    loss: float = 0.0

    @property
    def gain(self) -> float:
        return self.loss - self.split[0] if self.split is not None else -np.inf


class VectorTreeGrower:
    """Grows vector-leaf trees on one binned training set, one per :meth:`grow` call.

    ``binner`` (fitted) gives the bins' layout and thresholds; the rows come with each call, as
    a row set (:class:`LocalRows`)."""

    def __init__(self, binner: Binner, n_classes: int, options: VectorTreeOptions,
                 rng: np.random.RandomState):
        if options.max_leaves < 2:
            raise ValueError(f"max_leaves must be at least 2, got {options.max_leaves}")
        if options.sampling not in SAMPLINGS:
            raise ValueError(f"sampling must be one of {SAMPLINGS}, got {options.sampling!r}")
        self.binner = binner
        self.k = n_classes
        self.options = options
        self.rng = rng
        layout = binner.layout
        self.missing_bin = layout.missing_bin
        self.n_value_bins = np.ascontiguousarray(layout.n_value_bins, dtype=np.int32)
        self.has_missing = np.ascontiguousarray(layout.has_missing, dtype=np.bool_)
        self.hist_shape = (binner.n_features, layout.n_bins_total, 2 * n_classes + 1)
        self._free: list[np.ndarray] = []  # histogram buffers to reuse (no fresh page faults)
        self.features = np.arange(binner.n_features, dtype=np.intp)  # this tree's (sampled)
        self.updates = 0  # row x feature histogram additions of this tree
        self.searched = 0  # leaves searched in this tree
        self._big_histograms = big_histograms(self.n_value_bins, n_classes)

    # ------------------------------------------------------------------ one tree

    def grow(self, rows: LocalRows) -> VectorTreeFit:
        """The tree fitted to the 2K weight channels ``(w+, w-)`` of the row set's rows."""
        opt, k = self.options, self.k
        self.features = self._sample_features()
        self.rowset = rows
        self.updates = 0
        self.searched = 0
        handle = rows.root()
        root = _Leaf(handle, rows.count(handle), rows.sums(handle), 0, -1, 0)
        total = root.sums
        count = max(total[2 * k], 1.0)
        self.prior = opt.leaf_smoothing * (total[:k] + total[k:2 * k]) / (2.0 * count)
        root.loss = _leaf_loss(total, self.prior, k)
        feature, threshold, missing_left, left, right = [], [], [], [], []
        split_bins = []
        gains = []
        leaves = [root]
        heap: list = []
        self._search(root, None)
        if root.split is not None:
            heapq.heappush(heap, (-root.gain, 0, root))
        ticket = 1
        while heap and len(leaves) < opt.max_leaves:
            _, _, leaf = heapq.heappop(heap)
            score, f, b, m_left = leaf.split
            node = len(feature)
            if leaf.parent >= 0:
                (left if leaf.side == 0 else right)[leaf.parent] = node
            feature.append(f)
            threshold.append(self.binner.threshold(f, b))
            split_bins.append(b)
            sides = rows.split(leaf.rows, f, b, m_left)
            n_left, n_right = (rows.count(h) for h in sides)
            if not self.has_missing[f]:  # NaN at prediction: the larger side
                m_left = n_left >= n_right
            missing_left.append(m_left)
            left.append(-1)
            right.append(-1)
            gains.append((f, leaf.gain))
            small_side = 0 if n_left <= n_right else 1
            small_rows, big_rows = sides[small_side], sides[1 - small_side]
            small = _Leaf(small_rows, rows.count(small_rows), rows.sums(small_rows),
                          leaf.depth + 1, node, small_side)
            big = _Leaf(big_rows, rows.count(big_rows), leaf.sums - small.sums, leaf.depth + 1,
                        node, 1 - small_side)
            children = [small, big] if small_side == 0 else [big, small]
            rows.release(leaf.rows)
            leaves.remove(leaf)
            leaves += children
            for child in children:
                child.loss = _leaf_loss(child.sums, self.prior, k)
            self._children_histograms(leaf, children)
            for child in children:
                self._search(child, child.hist)
                if child.split is not None:
                    heapq.heappush(heap, (-child.gain, ticket, child))
                    ticket += 1
                elif child.hist is not None:
                    self._release(child)
            self._enforce_budget(heap)
        for leaf in leaves:
            self._release(leaf)
        return self._assemble(leaves, feature, threshold, missing_left, left, right,
                              split_bins, gains)

    def _assemble(self, leaves, feature, threshold, missing_left, left, right, split_bins,
                  gains) -> VectorTreeFit:
        k, m = self.k, self.options.max_leaves - 1
        arrays = constant_leaf_tree(self.options.max_leaves)  # the nodes not used stay so
        values = np.zeros((self.options.max_leaves, k))
        loss = 0.0
        # leaves numbered left to right
        order = _left_to_right(leaves, left, right)
        for i, leaf in enumerate(order):
            if leaf.parent >= 0:
                (left if leaf.side == 0 else right)[leaf.parent] = ~i
            values[i] = _leaf_vector(leaf.sums, self.prior, k)
            loss += leaf.loss
        t = len(feature)
        if feature:
            arrays.feature[0, :t] = feature
            arrays.threshold[0, :t] = threshold
            arrays.missing_left[0, :t] = missing_left
            arrays.left[0, :t] = left
            arrays.right[0, :t] = right
        bin_tree = BinTree(arrays.feature[0], np.asarray(split_bins + [0] * (m - t), np.int32),
                           arrays.missing_left[0], arrays.left[0], arrays.right[0])
        leaf_of_row = self.rowset.assign([leaf.rows for leaf in order], bin_tree)
        self.rowset = None
        return VectorTreeFit(arrays, values, leaf_of_row, loss, gains, self.updates,
                             self.searched)

    # ------------------------------------------------------------------ pieces

    def _can_split(self, leaf: _Leaf) -> bool:
        opt = self.options
        return (leaf.n_rows >= 2 and leaf.sums[2 * self.k] >= 2 * opt.min_samples_leaf
                and (opt.max_depth is None or leaf.depth < opt.max_depth)
                and leaf.loss > 0.0 and len(self.features) > 0)

    def _search(self, leaf: _Leaf, hist: np.ndarray | None) -> None:
        """The leaf's best split (None if none lowers its loss); builds its histogram."""
        if not self._can_split(leaf):
            leaf.split = None
            return
        if hist is None:
            leaf.hist = hist = self._build(leaf)
        self.searched += 1
        scan = _scan if self._big_histograms else _scan_serial
        scores, bins, m_left = scan(hist, self.features, self.n_value_bins, self.has_missing,
                                     self.missing_bin, self.prior, self.k,
                                     float(self.options.min_samples_leaf))
        best = pick_split(scores, bins, m_left)
        if best is None or not is_better(best.score, leaf.loss):
            leaf.split = None
            return
        leaf.split = (best.score, int(self.features[best.feature]), best.bin, best.missing_left)

    def _children_histograms(self, parent: _Leaf, children: list[_Leaf]) -> None:
        """The smaller child built, the larger by subtraction from the parent (if kept)."""
        small, big = sorted(children, key=lambda c: c.n_rows)
        wanted = [c for c in children if self._can_split(c)]
        if not wanted:
            self._release(parent)
            return
        if parent.hist is None:
            for child in wanted:
                child.hist = self._build(child)
            return
        small.hist = self._build(small)
        if big in wanted:
            big.hist = parent.hist
            parent.hist = None
            subtract = _subtract_used if self._big_histograms else _subtract_used_serial
            subtract(big.hist, small.hist, self.n_value_bins, self.missing_bin)
        else:
            self._release(parent)
        if small not in wanted:
            self._release(small)

    def _build(self, leaf: _Leaf) -> np.ndarray:
        """The histogram of the leaf's rows, built directly (into a reused buffer: only the
        cells a search reads are written, so a buffer need not be cleared whole)."""
        hist = self._free.pop() if self._free else np.empty(self.hist_shape)
        self.rowset.histogram(leaf.rows, leaf.sums, self.features, hist)
        self.updates += leaf.n_rows * len(self.features)
        return hist

    def _release(self, leaf: _Leaf) -> None:
        if leaf.hist is not None:
            self._free.append(leaf.hist)
            leaf.hist = None

    def _enforce_budget(self, heap) -> None:
        held = [leaf for _, _, leaf in heap if leaf.hist is not None]
        size = np.prod(self.hist_shape) * 8
        if len(held) * size <= HISTOGRAM_BUDGET:
            return
        held.sort(key=lambda leaf: leaf.gain)
        for leaf in held[:len(held) - max(1, int(HISTOGRAM_BUDGET // size))]:
            leaf.hist = None  # dropped for good: its children get built directly
        del self._free[2:]  # and no spare buffers beyond two

    def _sample_features(self) -> np.ndarray:
        d, frac = self.binner.n_features, self.options.colsample_bytree
        if frac >= 1.0:
            return np.arange(d, dtype=np.intp)
        size = max(1, int(round(frac * d)))
        return np.sort(self.rng.choice(d, size, replace=False)).astype(np.intp)


def sample_rows(channels: np.ndarray, options: VectorTreeOptions, rng: np.random.RandomState
                ) -> tuple[np.ndarray, np.ndarray | None]:
    """Rows of this iteration's tree (increasing) and each row's amplification (None: 1);
    drawn from the grower's generator before it samples features."""
    n = channels.shape[0]
    if options.subsample >= 1.0:
        return np.arange(n, dtype=np.intp), None
    if options.sampling == "uniform":
        size = max(1, int(round(options.subsample * n)))
        return np.sort(rng.choice(n, size, replace=False)).astype(np.intp), None
    # GOSS: the top 2/3 of the budget by row weight, a uniform third of the rest.
    weight = channels.sum(axis=1)
    top = max(1, int(round(options.subsample * n * 2 / 3)))
    other = max(1, int(round(options.subsample * n / 3)))
    order = np.argsort(-weight, kind="stable")
    rest = order[top:]
    other = min(other, len(rest))
    drawn = rng.choice(rest, other, replace=False) if other else rest[:0]
    rows = np.concatenate([order[:top], drawn])
    amplify = np.ones(n)
    if other:
        amplify[drawn] = len(rest) / other
    return np.sort(rows).astype(np.intp), amplify


class BinTree(NamedTuple):
    """A grown tree's splits in bin space (how training rows are routed)."""

    feature: np.ndarray
    split_bin: np.ndarray
    missing_left: np.ndarray
    left: np.ndarray
    right: np.ndarray


class LocalRows:
    """One tree's training rows in this process: a leaf's handle is its rows' indices
    (increasing).

    ``channels`` are the rows' 2K REBEL weights (or any channels to sum), ``rows`` the ones
    this tree is grown on (all or a sample), ``amplify`` their sampling factors (None: 1) and
    ``row_weight`` the sample weights ``min_samples_leaf`` counts (None: 1)."""

    def __init__(self, data: BinnedData, channels: np.ndarray, rows: np.ndarray | None = None,
                 amplify: np.ndarray | None = None, row_weight: np.ndarray | None = None):
        n = data.n_samples
        self.data = data
        self.channels = np.ascontiguousarray(channels, dtype=np.float64)
        if self.channels.ndim != 2 or self.channels.shape[0] != n:
            raise ValueError(f"channels must have shape ({n}, C), got {self.channels.shape}")
        self.rows = np.arange(n, dtype=np.intp) if rows is None else rows
        self.sampled = len(self.rows) < n
        self.amplify = amplify
        self.row_weight = (np.ones(n) if row_weight is None
                           else np.ascontiguousarray(row_weight, dtype=np.float64))

    def root(self) -> np.ndarray:
        return self.rows

    @staticmethod
    def count(rows: np.ndarray) -> int:
        return len(rows)

    def sums(self, rows: np.ndarray) -> np.ndarray:
        """Channel sums (amplified) and sample weight of ``rows``, in row order."""
        return _row_sums(self.channels, rows, self.amplify, self.row_weight)

    def split(self, rows: np.ndarray, feature: int, split_bin: int, missing_left: bool
              ) -> tuple[np.ndarray, np.ndarray]:
        """The rows going left and right (each increasing)."""
        return _partition(self.data.bins, rows, feature, split_bin,
                          self.data.layout.missing_bin, missing_left)

    def release(self, rows: np.ndarray) -> None:
        """A leaf that was split (the local rows need no freeing)."""

    def histogram(self, rows: np.ndarray, sums: np.ndarray, features: np.ndarray,
                  out: np.ndarray) -> np.ndarray:
        """Writes the histogram of ``rows`` (channel sums ``sums``) over ``features`` into
        the cells of ``out`` (n_features, n_bins, 2K + 1) that a search reads."""
        row_channels = _gather(self.channels, rows, self.amplify, self.row_weight)
        sparse = self.data.sparse
        layout = self.data.layout
        n_value_bins = np.ascontiguousarray(layout.n_value_bins, dtype=np.int32)
        parallel = len(rows) * out.shape[2] * max(1, len(features)) >= _PARALLEL_ADDS
        if sparse is None:
            starts = _task_starts(len(features), numba.get_num_threads() if parallel else 1)
            kernel = _dense_histogram if parallel else _dense_histogram_serial
            kernel(self.data.bins, row_channels, rows, features, starts, out, n_value_bins,
                   layout.missing_bin)
        else:
            clear = _clear_sparse if parallel else _clear_sparse_serial
            clear(out, n_value_bins, layout.missing_bin)
            add_sparse_entries(sparse, row_channels, rows, out, parallel)
            fill = _fill_defaults if parallel else _fill_defaults_serial
            fill(out, n_value_bins, layout.missing_bin, sparse.default_bin, sums)
        return out

    def assign(self, leaves: list[np.ndarray], tree: BinTree) -> np.ndarray:
        """The leaf of every row (leaves in the tree's numbering), the rows outside the
        sample routed through the tree."""
        if self.sampled and (tree.feature >= 0).any():
            return _route_bins(self.data.bins, tree.feature, tree.split_bin, tree.missing_left,
                               tree.left, tree.right, self.data.layout.missing_bin)
        leaf_of_row = np.zeros(self.data.n_samples, dtype=np.intp)
        for i, rows in enumerate(leaves):
            leaf_of_row[rows] = i
        return leaf_of_row


def big_histograms(n_value_bins: np.ndarray, n_classes: int) -> bool:
    """Whether histograms are large enough for the multi-threaded scan and subtraction."""
    n_features = len(n_value_bins)
    return (int(np.sum(n_value_bins)) + n_features) * (2 * n_classes + 1) >= _PARALLEL_ADDS // 4


def _left_to_right(leaves: list[_Leaf], left: list[int], right: list[int]) -> list[_Leaf]:
    """The leaves in left-to-right order (their numbering in the tree)."""
    at = {(leaf.parent, leaf.side): leaf for leaf in leaves}
    if (-1, 0) in at:  # the root did not split
        return [at[(-1, 0)]]
    order, stack = [], [(0, 1), (0, 0)]  # (node, side); the left side is popped first
    while stack:
        node, side = stack.pop()
        child = (left if side == 0 else right)[node]
        if child >= 0:
            stack += [(child, 1), (child, 0)]
        else:
            order.append(at[(node, side)])
    return order


def _leaf_vector(sums: np.ndarray, prior: np.ndarray, k: int) -> np.ndarray:
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
def _leaf_loss(sums, prior, k):
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
    """Best ``(score, bin, missing_left)`` of one feature (the scan of :mod:`..search.splits`
    with the vector-leaf score and the count limit)."""
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


@numba.njit(cache=True, nogil=True)
def _row_sums(channels, rows, amplify, row_weight):
    """Channel sums (times ``amplify``; None: 1) and the sample weight of ``rows``, in row
    order."""
    c = channels.shape[1]
    out = np.zeros(c + 1)
    for i in range(rows.shape[0]):
        r = rows[i]
        s = 1.0 if amplify is None else amplify[r]
        for j in range(c):
            out[j] += channels[r, j] * s
        out[c] += row_weight[r]
    return out


@numba.njit(cache=True, nogil=True)
def _gather(channels, rows, amplify, row_weight):
    """The histogram channels of ``rows``: their weights (amplified) and sample weight."""
    c = channels.shape[1]
    out = np.empty((rows.shape[0], c + 1))
    for i in range(rows.shape[0]):
        r = rows[i]
        s = 1.0 if amplify is None else amplify[r]
        for j in range(c):
            out[i, j] = channels[r, j] * s
        out[i, c] = row_weight[r]
    return out


@numba.njit(cache=True, nogil=True)
def _partition(bins, rows, feature, split_bin, missing_bin, missing_left):
    """The rows going left and right under a split, each in the given (increasing) order."""
    n = rows.shape[0]
    left = np.empty(n, dtype=rows.dtype)
    right = np.empty(n, dtype=rows.dtype)
    n_left = n_right = 0
    for i in range(n):
        r = rows[i]
        b = bins[r, feature]
        if missing_left if b == missing_bin else b <= split_bin:
            left[n_left] = r
            n_left += 1
        else:
            right[n_right] = r
            n_right += 1
    return left[:n_left].copy(), right[:n_right].copy()


@numba.njit(parallel=True, cache=True, nogil=True)
def _route_bins(bins, feature, split_bin, missing_left, left, right, missing_bin):
    """Leaf of every row of the binned training set in one tree."""
    n = bins.shape[0]
    out = np.empty(n, dtype=np.intp)
    for r in numba.prange(n):
        node = 0
        while True:
            f = feature[node]
            if f < 0:
                child = left[node]
            else:
                b = bins[r, f]
                go_left = missing_left[node] if b == missing_bin else b <= split_bin[node]
                child = left[node] if go_left else right[node]
            if child < 0:
                out[r] = ~child
                break
            node = child
    return out


def _task_starts(n_features: int, n_tasks: int) -> np.ndarray:
    return np.linspace(0, n_features, max(1, min(n_tasks, n_features)) + 1).astype(np.intp)


@numba.njit(cache=True, nogil=True, inline="always")
def _clear_used(hist, f, n_value_bins, missing_bin):
    for b in range(n_value_bins[f]):
        hist[f, b, :] = 0.0
    hist[f, missing_bin, :] = 0.0


@numba.njit(cache=True, nogil=True, inline="always")
def _dense_task(bins, row_channels, rows, features, j0, j1, hist, n_value_bins, missing_bin):
    n_channels = row_channels.shape[1]
    for j in range(j0, j1):
        _clear_used(hist, features[j], n_value_bins, missing_bin)
    for i in range(rows.shape[0]):
        r = rows[i]
        for j in range(j0, j1):
            f = features[j]
            b = bins[r, f]
            for c in range(n_channels):
                hist[f, b, c] += row_channels[i, c]


@numba.njit(parallel=True, cache=True, nogil=True)
def _dense_histogram(bins, row_channels, rows, features, starts, hist, n_value_bins,
                     missing_bin):
    """Histogram of ``rows`` over ``features``, by increasing row; tasks own feature blocks."""
    for t in numba.prange(starts.shape[0] - 1):
        _dense_task(bins, row_channels, rows, features, starts[t], starts[t + 1], hist,
                    n_value_bins, missing_bin)


@numba.njit(cache=True, nogil=True)
def _dense_histogram_serial(bins, row_channels, rows, features, starts, hist, n_value_bins,
                            missing_bin):
    _dense_task(bins, row_channels, rows, features, 0, features.shape[0], hist, n_value_bins,
                missing_bin)


@numba.njit(cache=True, nogil=True, inline="always")
def _fill_default(hist, f, n_value_bins, missing_bin, default_bin, totals):
    """A sparse feature's default bin: the rows' totals minus its other bins."""
    d = default_bin[f]
    for c in range(hist.shape[2]):
        rest = hist[f, missing_bin, c] if d != missing_bin else 0.0
        for b in range(n_value_bins[f]):
            if b != d:
                rest += hist[f, b, c]
        hist[f, d, c] = totals[c] - rest


@numba.njit(parallel=True, cache=True, nogil=True)
def _clear_sparse(hist, n_value_bins, missing_bin):
    for f in numba.prange(hist.shape[0]):
        _clear_used(hist, f, n_value_bins, missing_bin)


@numba.njit(cache=True, nogil=True)
def _clear_sparse_serial(hist, n_value_bins, missing_bin):
    for f in range(hist.shape[0]):
        _clear_used(hist, f, n_value_bins, missing_bin)


@numba.njit(parallel=True, cache=True, nogil=True)
def _fill_defaults(hist, n_value_bins, missing_bin, default_bin, totals):
    for f in numba.prange(hist.shape[0]):
        _fill_default(hist, f, n_value_bins, missing_bin, default_bin, totals)


@numba.njit(cache=True, nogil=True)
def _fill_defaults_serial(hist, n_value_bins, missing_bin, default_bin, totals):
    for f in range(hist.shape[0]):
        _fill_default(hist, f, n_value_bins, missing_bin, default_bin, totals)


@numba.njit(cache=True, nogil=True, inline="always")
def _subtract_feature(big, small, f, n_value_bins, missing_bin):
    for b in range(n_value_bins[f]):
        big[f, b, :] -= small[f, b, :]
    big[f, missing_bin, :] -= small[f, missing_bin, :]


@numba.njit(parallel=True, cache=True, nogil=True)
def _subtract_used(big, small, n_value_bins, missing_bin):
    """``big -= small`` on the cells a search reads."""
    for f in numba.prange(big.shape[0]):
        _subtract_feature(big, small, f, n_value_bins, missing_bin)


@numba.njit(cache=True, nogil=True)
def _subtract_used_serial(big, small, n_value_bins, missing_bin):
    for f in range(big.shape[0]):
        _subtract_feature(big, small, f, n_value_bins, missing_bin)
