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
(:class:`~.row_set.RowSet`: :class:`~.row_set.LocalRows` in this process, each leaf a range
of one index array partitioned in place; :mod:`rebelboost.blocks` keeps them on workers and
sums their counts, channel sums and histograms), so a distributed fit takes the same
decisions from the same sums. The leaves' closed forms are in
:mod:`rebelboost.search.vector_leaf`, the split scan (shared by every learner) in
:mod:`rebelboost.search.splits`, the histogram kernels in :mod:`rebelboost.search.histograms`.

Sampling (per iteration, seeded by the caller's generator): rows uniformly (``subsample``), or
by weight as in GOSS (``'goss'``; :mod:`.row_sampling`), and features (``colsample_bytree``).
Leaf vectors come from the sampled rows; every training row is then routed through the tree
for the next iteration.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from ..binning import Binner
from ..search.category_split import best_category_split
from ..search.histograms import big_histograms, subtract_histogram
from ..search.histograms.dense import threads_pay
from ..search.splits import is_better
from ..search.vector_children import scan_kinds, search_children
from ..search.vector_leaf import leaf_loss, leaf_vectors, root_priors
from ..search.vector_scan import best_vector_split, scan_tasks
from . import compiled_grower
from .category_sets import category_bitsets
from .leaf_tree import LeafTreeArrays, constant_leaf_tree
from .row_set import BinTree, RowSet, split_table

# Leaf histograms kept for subtraction at once (bytes); beyond it the lowest-gain leaves'
# histograms are dropped and their children built directly.
HISTOGRAM_BUDGET = 1 << 27
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
    histogram_bits: int | None = None  # None: float histograms; else quantized (.search.quantize)
    cat_smooth: float = 5.0
    cat_l2: float = 10.0
    min_data_per_category: float = 5.0
    max_cat_threshold: int = 32
    max_cat_to_onehot: int = 4


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
    split: tuple | None = None  # (score, feature, bin, missing_left, left bins or None)
    loss: float = 0.0
    children: list | None = None  # [left, right] once split ahead of its turn (look-ahead)

    @property
    def gain(self) -> float:
        return self.loss - self.split[0] if self.split is not None else -np.inf


class VectorTreeGrower:
    """Grows vector-leaf trees on one binned training set, one per :meth:`grow` call.

    ``binner`` (fitted) gives the bins' layout and thresholds; the rows come with each call, as
    a row set (:class:`~.row_set.RowSet`)."""

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
        self.layout = layout = binner.layout
        self.missing_bin = layout.missing_bin
        self.n_value_bins = np.ascontiguousarray(layout.n_value_bins, dtype=np.int32)
        self.has_missing = np.ascontiguousarray(layout.has_missing, dtype=np.bool_)
        self.offsets = layout.cell_offsets()  # of the compact leaf histograms
        self.hist_shape = (int(self.offsets[-1]), 2 * n_classes + 1)
        self.categorical = np.asarray(binner.categorical_, dtype=bool)
        self._free: list[np.ndarray] = []  # histogram buffers to reuse (no fresh page faults)
        self._store: np.ndarray | None = None  # the compiled grower's buffers (histogram_store)
        self.thresholds = binner.threshold_table()  # (the compiled grower's)
        self._scan: np.ndarray | None = None  # dequantized histogram (quantized row sets)
        self.features = np.arange(binner.n_features, dtype=np.intp)  # this tree's (sampled)
        self.updates = 0  # row x feature histogram additions of this tree
        self.searched = 0  # leaves searched in this tree
        self._big_histograms = big_histograms(self.n_value_bins, n_classes)

    # ------------------------------------------------------------------ one tree

    def grow(self, rows: RowSet) -> VectorTreeFit:
        """The tree fitted to the 2K weight channels ``(w+, w-)`` of the row set's rows."""
        opt, k = self.options, self.k
        self.features = self._sample_features()
        is_cat = self.categorical[self.features]
        self.numeric, self.categories = self.features[~is_cat], self.features[is_cat]
        self._scanned = scan_kinds(is_cat, self.has_missing[self.features])
        # a leaf's scan: in feature blocks on every thread where that pays
        self.scan_tasks = scan_tasks(int(np.sum(self.n_value_bins[self.numeric]))
                                     + len(self.numeric), self.hist_shape[1])
        self.updates = 0
        self.searched = 0
        handle = rows.root()
        root = _Leaf(handle, rows.count(handle), rows.sums(handle), 0, -1, 0)
        # categorical splits are scored with cat_l2 more pseudo-rows (LightGBM's cat_l2): a
        # set chosen among many is held to more evidence than one threshold
        self.prior, self.category_prior, root.loss = root_priors(
            root.sums, k, opt.leaf_smoothing, opt.leaf_smoothing + opt.cat_l2)
        if compiled_grower.applies(self, rows):
            return self._grow_compiled(rows, root)
        self.rowset = rows
        feature, threshold, missing_left, left, right = [], [], [], [], []
        split_bins, bin_sets, code_sets = [], [], []
        gains = []
        leaves = [root]
        heap: list = []
        self._search(root, None)
        if root.split is not None:
            heapq.heappush(heap, (-root.gain, 0, root))
        ticket = 1
        while heap and len(leaves) < opt.max_leaves:
            if rows.batches_splits:
                self._look_ahead(heap, opt.max_leaves - len(leaves), rows)
                rows.expect(self._expected(heap, opt.max_leaves - len(leaves)))
            _, _, leaf = heapq.heappop(heap)
            score, f, b, m_left, left_bins = leaf.split
            node = len(feature)
            if leaf.parent >= 0:
                (left if leaf.side == 0 else right)[leaf.parent] = node
            feature.append(f)
            threshold.append(self.binner.threshold(f, b) if left_bins is None else np.nan)
            split_bins.append(b)
            # (split now, or earlier by the look-ahead)
            if leaf.children is None:  # the last split's children are never split: not
                # searched
                children = self._split_leaf(leaf, rows, len(leaves) + 1 < opt.max_leaves)
            else:
                children = leaf.children
            rows.release(leaf.rows)
            n_left, n_right = children[0].n_rows, children[1].n_rows
            if not self.has_missing[f]:  # NaN at prediction: the larger side
                m_left = n_left >= n_right
            missing_left.append(m_left)
            if left_bins is None:
                bin_sets.append(split_table(b, m_left, self.layout.n_bins_total,
                                            self.missing_bin))
                code_sets.append(None)
            else:
                left_bins[self.missing_bin] = m_left
                bin_sets.append(left_bins)
                code_sets.append(np.flatnonzero(self.binner.left_codes(f, left_bins)))
            left.append(-1)
            right.append(-1)
            gains.append((f, leaf.gain))
            leaves.remove(leaf)
            leaves += children
            for child in children:
                child.parent = node
                if child.split is not None:
                    heapq.heappush(heap, (-child.gain, ticket, child))
                    ticket += 1
            self._enforce_budget(heap, opt.max_leaves - len(leaves))
        for leaf in leaves:
            self._release(leaf)
        return self._assemble(leaves, feature, threshold, missing_left, left, right,
                              split_bins, gains, bin_sets, code_sets)

    def _grow_compiled(self, rows, root: _Leaf) -> VectorTreeFit:
        """The tree grown in one compiled call (:mod:`.compiled_grower`: the same tree)."""
        (arrays, sums, loss, leaf_of_row, gains, self.updates,
         self.searched) = compiled_grower.grow_tree(self, rows, root)
        values = np.zeros((self.options.max_leaves, self.k))
        leaf_vectors(sums, self.prior, self.k, values)
        *nodes, words = arrays
        tree = LeafTreeArrays(*(a[None] for a in nodes),
                              category_words=None if words is None else words[None])
        return VectorTreeFit(tree, values, leaf_of_row, loss, gains, self.updates,
                             self.searched)

    def _assemble(self, leaves, feature, threshold, missing_left, left, right, split_bins,
                  gains, bin_sets, code_sets) -> VectorTreeFit:
        k, m = self.k, self.options.max_leaves - 1
        arrays = constant_leaf_tree(self.options.max_leaves)  # the nodes not used stay so
        values, loss = np.zeros((self.options.max_leaves, k)), 0.0
        # leaves numbered left to right
        order = _left_to_right(leaves, left, right)
        for i, leaf in enumerate(order):
            if leaf.parent >= 0:
                (left if leaf.side == 0 else right)[leaf.parent] = ~i
            loss += leaf.loss
        leaf_vectors(np.array([leaf.sums for leaf in order]), self.prior, k, values)
        t = len(feature)
        if feature:
            arrays.feature[0, :t] = feature
            arrays.threshold[0, :t] = threshold
            arrays.missing_left[0, :t] = missing_left
            arrays.left[0, :t] = left
            arrays.right[0, :t] = right
        tables = None
        if any(codes is not None for codes in code_sets):  # a tree with categorical nodes
            tables = np.zeros((m, self.layout.n_bins_total), dtype=bool)
            tables[:t] = bin_sets
            words = category_bitsets(code_sets + [None] * (m - t))
            arrays.category_words = words[None]
        bin_tree = BinTree(arrays.feature[0], np.asarray(split_bins + [0] * (m - t), np.int32),
                           arrays.missing_left[0], arrays.left[0], arrays.right[0], tables)
        leaf_of_row = self.rowset.assign([leaf.rows for leaf in order], bin_tree)
        self.rowset = None
        return VectorTreeFit(arrays, values, leaf_of_row, loss, gains, self.updates,
                             self.searched)

    # ------------------------------------------------------------------ pieces

    def _split_leaf(self, leaf: _Leaf, rows: RowSet, search: bool = True) -> list[_Leaf]:
        """``leaf``'s children [left, right], searched unless not ``search`` (their parent
        node set when the leaf becomes one)."""
        _, f, b, m_left, left_bins = leaf.split
        sides = rows.split(leaf.rows, f, b, m_left, left_bins)
        n_left, n_right = (rows.count(h) for h in sides)
        small_side = 0 if n_left <= n_right else 1
        small_rows, big_rows = sides[small_side], sides[1 - small_side]
        small = _Leaf(small_rows, rows.count(small_rows), rows.sums(small_rows),
                      leaf.depth + 1, -1, small_side)
        big = _Leaf(big_rows, rows.count(big_rows), leaf.sums - small.sums, leaf.depth + 1,
                    -1, 1 - small_side)
        children = [small, big] if small_side == 0 else [big, small]
        for child in children:
            child.loss = leaf_loss(child.sums, self.prior, self.k)
        if not search:
            self._release(leaf)
        elif not self._search_children(leaf, small, big, rows):
            self._children_histograms(leaf, children)
            for child in children:
                self._search(child, child.hist)
        for child in children:
            if child.split is None and child.hist is not None:
                self._release(child)
        return children

    def _search_children(self, parent: _Leaf, small: _Leaf, big: _Leaf, rows: RowSet) -> bool:
        """Both children's histograms and searches in one pass (:mod:`..search.
        vector_children`: the same histograms and splits), where the parent's histogram is
        kept, the larger child can be split and the rows are held here as float channels of
        dense bins; False (nothing done) otherwise."""
        if parent.hist is None or not self._can_split(big):
            return False
        held = rows.float_channels(small.rows)
        if held is None:
            return False
        row_ids, row_channels = held
        small.hist = self._buffer()
        big.hist, parent.hist = parent.hist, None
        self.updates += small.n_rows * len(self.features)
        wanted = (self._can_split(small), True)
        n_channels = self.hist_shape[1]
        parallel = (self._big_histograms
                    or threads_pay(len(row_ids), len(self.features), n_channels))
        found = search_children(
            rows.data.bins, row_channels, row_ids, self.features, self._scanned, small.hist,
            big.hist, self.n_value_bins, self.offsets, self.prior,
            float(self.options.min_samples_leaf), wanted, parallel)
        for child, can_split, best in zip((small, big), wanted, found, strict=True):
            if not can_split:
                child.split = None
                continue
            self.searched += 1
            if best is not None:
                j, score, split_bin, missing_left = best
                best = (int(self.features[j]), score, split_bin, missing_left)
            self._choose(child, child.hist, best)
        if not wanted[0]:
            self._release(small)
        return True

    def _look_ahead(self, heap, budget: int, rows: RowSet) -> None:
        """Children of the waiting leaves that can still be split (the ``budget`` best)
        whose rows the row set has split already (a remote row set splits several leaves
        per round trip), and theirs, searched now: the next round trip can then take their
        splits too. Searches do not depend on when they run, so the tree is the same; rows
        in this process split nothing ahead."""
        stack = [leaf for _, _, leaf in sorted(heap)[:budget]]
        while stack:
            leaf = stack.pop()
            if leaf.children is None and rows.is_split(leaf.rows):
                leaf.children = self._split_leaf(leaf, rows)
            if leaf.children is not None:
                stack += [c for c in leaf.children if c.split is not None]

    @staticmethod
    def _expected(heap, budget: int) -> list[tuple]:
        """The splits that may come next, in the order they would come: the waiting leaves
        not split yet and the look-ahead's children that could be split. A child waits for
        its parent, so it ranks by the least gain on its path from the heap (the order in
        which a max-heap takes a tree whose children enter as their parent leaves it). The
        leaves split already (the look-ahead's) take splits too, and none ranked below the
        first ``budget`` (the splits left) ever is split: so only those ranked with them,
        ties included. (Ranked by their own gains, a leaf's deep children could push out a
        waiting leaf split next: one round trip more.)"""
        stack, ranked = [(leaf, leaf.gain) for _, _, leaf in heap], []
        while stack:
            leaf, rank = stack.pop()
            ranked.append((rank, leaf))
            if leaf.children is not None:
                stack += [(c, min(rank, c.gain)) for c in leaf.children if c.split is not None]
        ranked.sort(key=lambda entry: -entry[0])
        last = ranked[min(budget, len(ranked)) - 1][0] if ranked and budget > 0 else np.inf
        return [(leaf.rows, *leaf.split[1:]) for rank, leaf in ranked
                if rank >= last and leaf.children is None]

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
        if getattr(self.rowset, "quantized", None) is not None:  # the scan reads float sums
            if self._scan is None:
                self._scan = np.empty(self.hist_shape)
            hist = self.rowset.dequantize(hist, self.features, self._scan)
        self.searched += 1
        numeric = self.numeric
        best = None if not len(numeric) else best_vector_split(
            hist, numeric, self.n_value_bins, self.has_missing, self.offsets, self.prior,
            float(self.options.min_samples_leaf), self.scan_tasks)
        if best is not None:
            best = (int(numeric[best.feature]), best.score, best.bin, best.missing_left)
        self._choose(leaf, hist, best)

    def _choose(self, leaf: _Leaf, hist: np.ndarray, best: tuple | None) -> None:
        """``leaf.split`` from the best numeric split ``(feature, score, bin,
        missing_left)`` (or None) and the categorical features' best, if better."""
        opt = self.options
        categorical = self.categories
        leaf.split = None
        if best is not None and is_better(best[1], leaf.loss):
            leaf.split = (best[1], best[0], best[2], best[3], None)
        incumbent = leaf.loss if leaf.split is None else leaf.split[0]
        found = best_category_split(hist, categorical, self.layout, self.offsets,
                                    self.category_prior, float(opt.min_samples_leaf),
                                    opt.cat_smooth, opt.min_data_per_category,
                                    opt.max_cat_threshold, opt.max_cat_to_onehot, incumbent)
        if found is not None:
            split, left_bins = found
            if is_better(split.score, incumbent):
                leaf.split = (split.score, int(categorical[split.feature]), split.bin,
                              split.missing_left, left_bins)

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
            subtract_histogram(big.hist, small.hist, self._big_histograms)
        else:
            self._release(parent)
        if small not in wanted:
            self._release(small)

    def _build(self, leaf: _Leaf) -> np.ndarray:
        """The histogram of the leaf's rows, built directly (into a reused buffer: only the
        cells a search reads are written, so a buffer need not be cleared whole)."""
        hist = self._buffer()
        self.rowset.histogram(leaf.rows, leaf.sums, self.features, hist)
        self.updates += leaf.n_rows * len(self.features)
        return hist

    def _buffer(self) -> np.ndarray:
        """A histogram buffer of the row set's cell type, reused if one is free."""
        dtype = getattr(self.rowset, "hist_dtype", np.float64)
        self._free = [h for h in self._free if h.dtype == dtype]
        return self._free.pop() if self._free else np.empty(self.hist_shape, dtype=dtype)

    def _release(self, leaf: _Leaf) -> None:
        if leaf.hist is not None:
            self._free.append(leaf.hist)
            leaf.hist = None

    def _enforce_budget(self, heap, splits_left: int) -> None:
        """Histograms kept for subtraction: none for the leaves that can no longer be split
        (ranked below the splits left: each split takes the best leaf, and those above them
        would all go first), and of the others the best within ``HISTOGRAM_BUDGET`` bytes."""
        keep = self.histograms_in_budget()
        if len(heap) <= min(splits_left, keep):  # every waiting leaf kept, within budget
            return
        ranked = sorted(heap)  # (-gain, ticket, leaf): the order they would be split in
        for _, _, leaf in ranked[splits_left:]:
            self._release(leaf)
        held = [leaf for _, _, leaf in ranked[:splits_left] if leaf.hist is not None]
        if len(held) > keep:
            for leaf in held[keep:]:
                leaf.hist = None  # dropped for good: its children get built directly
            del self._free[2:]  # and no spare buffers beyond two

    @property
    def histogram_store(self) -> np.ndarray:
        """The compiled grower's histogram buffers, kept from tree to tree (fresh memory
        costs a page fault a page): ``max_leaves // 2 + 1`` of them, as many as a tree holds
        at once (the leaves that can still be split, :func:`.compiled_grower.grow_numeric`),
        allocated once; a buffer never used is never touched, so it costs no memory (growing
        the store as trees needed more held the old one beside the new: the peak of small
        fits' memory)."""
        if self._store is None:
            self._store = np.empty((self.options.max_leaves // 2 + 1, *self.hist_shape))
        return self._store

    def histograms_in_budget(self) -> int:
        """How many leaf histograms ``HISTOGRAM_BUDGET`` holds (at least one)."""
        size = self.hist_shape[0] * self.hist_shape[1] * 8  # (integer cells: at most as many)
        return max(1, int(HISTOGRAM_BUDGET // size))

    def _sample_features(self) -> np.ndarray:
        d, frac = self.binner.n_features, self.options.colsample_bytree
        if frac >= 1.0:
            return np.arange(d, dtype=np.intp)
        size = max(1, int(round(frac * d)))
        return np.sort(self.rng.choice(d, size, replace=False)).astype(np.intp)


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
