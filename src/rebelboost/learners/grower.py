"""One layer grower for every tree learner: rows labelled by node, one histogram pass per layer.

A tree of depth D is grown layer by layer in the complete heap layout of
:class:`~rebelboost.learners.tree.TreeArrays` (node ``j``'s children ``2j+1``, ``2j+2``; a node
that does not split sends its rows left). Every row carries the heap index of its node
(``node_of_row``); a layer's node histograms come from one pass over the feature-major bins
(:func:`~rebelboost.search.histograms.column_histograms`) and pass through
:func:`reduce_histograms`, the one point where a distributed fit would sum the histograms of
several machines.

Only nodes that hold at least two rows and some weight are searched, and their histograms
built; empty nodes cost nothing, so a deep tree on few rows stays cheap.

Histogram subtraction (``fixed_channels=True``: every layer searches the channels of the layer
above, as free-sign and codeword trees do): of two children, the one with fewer rows is built
and the other is its parent's histogram minus it, and a node that did not split is not searched
again (its rows and channels, hence its search, are those of its parent). REBEL's and
AdaBoost.MH's layers re-project the channels at every layer (a new step or vote vector), so
there a parent's histogram is of other channels and every layer is built directly.
"""

from __future__ import annotations

import numba
import numpy as np

from ..search.binned import BinnedData
from ..search.histograms import HistogramPool, column_histograms, node_totals, split_node
from ..search.quickboost import quickboost_split, visiting_order
from ..search.scores import SplitScore
from ..search.splits import Split, best_split, is_better
from .tree import TreeArrays

# Largest layer histogram built in one pass (bytes); a layer with more nodes takes several,
# and a fixed-channel layer larger than this is built directly instead of by subtraction.
_LAYER_BYTES = 1 << 28


def reduce_histograms(hist: np.ndarray, totals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The seam for distributed training: every node histogram (and node total) a layer search
    reads passes through here right after it is built from this process's rows. Locally the
    identity; a distributed fit sums ``hist`` and ``totals`` over its machines here (an
    allreduce), and then every machine picks the same splits. (Subtracted histograms are
    differences of reduced ones, so they need no reduction; QuickBoost's prefix searches do not
    pass here and are not distributed.)"""
    return hist, totals


class LayerGrower:
    """Grows one depth-``depth`` tree over ``data``, one layer per :meth:`find_splits` or
    :meth:`grow_layer` call, then :meth:`end_layer`.

    ``fixed_channels``: every layer uses the same channels (histogram subtraction, see the
    module docstring). ``pool`` lends the buffers of directly built layers.
    """

    def __init__(self, data: BinnedData, depth: int, *, fixed_channels: bool = False,
                 pool: HistogramPool | None = None, reduce=reduce_histograms):
        if not 1 <= int(depth) <= 16:
            raise ValueError(f"depth must be in [1, 16], got {depth!r}")
        self.data = data
        self.depth = int(depth)
        self.fixed_channels = fixed_channels
        self.pool = pool
        self.reduce = reduce
        n_internal = 2**self.depth - 1
        self.feature = np.full(n_internal, -1, np.int32)
        self.threshold = np.zeros(n_internal)
        self.missing_left = np.zeros(n_internal, bool)
        self.node_of_row = np.zeros(data.n_samples, dtype=np.int32)
        self.layer = 0
        self.gains: list[tuple[int, float]] = []  # (feature, score reduction)
        self.nodes_searched = 0
        self.histogram_updates = 0  # row x feature accumulations of the direct builds
        self._split: list[int] = []  # nodes split in the current layer
        self._passed: set[int] = set()  # fixed channels: nodes whose search is their parent's
        # Fixed channels: the last search's node histograms and each node's slot in them (the
        # parents of the next layer), and the nodes that split.
        self.histograms: tuple[np.ndarray, dict[int, int]] | None = None
        self._parent_split: list[int] = []
        self._channels = None

    @property
    def first(self) -> int:
        """Heap index of the current layer's first node."""
        return 2**self.layer - 1

    def layer_sums(self, channels: np.ndarray) -> np.ndarray:
        """Channel sums (2**layer, C) of the current layer's nodes, by increasing row."""
        return node_totals(channels, self.node_of_row - self.first, 2**self.layer)

    def find_splits(self, channels: np.ndarray, score: SplitScore,
                    quickboost: bool = False) -> dict[int, Split | None]:
        """Best split of each node of the current layer that holds two rows and some weight
        (None: no feature can split it). ``quickboost`` prunes each node's search (same
        splits)."""
        if self.layer >= self.depth:
            raise ValueError("the tree is already at full depth")
        channels = np.ascontiguousarray(channels, dtype=np.float64)
        if channels.ndim != 2 or channels.shape[0] != self.data.n_samples:
            raise ValueError("channels must have one row per training sample")
        if self.fixed_channels and self._channels is not None and (
                channels.shape != self._channels.shape
                or not np.array_equal(channels, self._channels)):
            raise ValueError("a fixed-channel grower got other channels")
        if self.fixed_channels and quickboost:
            raise ValueError("QuickBoost builds no layer histograms to subtract from")
        self._channels = channels
        local = self.node_of_row - self.first
        if self.layer == 0:  # the root holds every row: no pass over the channels needed
            counts, mass = np.array([self.data.n_samples]), np.ones(1)
        else:
            counts, mass = _layer_stats(channels, local, 2**self.layer)
        searched = [self.first + int(i) for i in np.flatnonzero((counts >= 2) & (mass > 0))
                    if self.first + int(i) not in self._passed]
        self.nodes_searched += len(searched)
        if not searched:
            self.histograms = None
            return {}
        if quickboost:
            return {node: self._quickboost(channels, score, node) for node in searched}
        hist, slot = self._histograms(channels, local, counts, searched)
        self.histograms = (hist, slot) if self.fixed_channels else None
        return {node: best_split(hist[slot[node]], self.data.layout, score)
                for node in searched}

    def grow_layer(self, channels: np.ndarray, score: SplitScore) -> bool:
        """Split every node whose best split beats not splitting; end the layer. True if any
        node split. ``score(sums, 0)`` is a node's score unsplit."""
        found = self.find_splits(channels, score)
        sums = self.layer_sums(channels) if found else None
        zeros = np.zeros(channels.shape[1])
        for node in sorted(found):
            split = found[node]
            if split is None:
                continue
            unsplit = score(sums[node - self.first], zeros)
            if is_better(split.score, unsplit):
                self.split(node, split)
                self.gains.append((split.feature, unsplit - split.score))
        any_split = bool(self._split)
        self.end_layer()
        return any_split

    def split(self, node: int, split: Split, weigh: np.ndarray | None = None):
        """Record ``split`` at ``node`` and send its rows to the children.

        A feature without missing values in training sends NaN to the side with more rows,
        or more total weight under the channels ``weigh``; then the children's channel sums
        (2, C) are returned.
        """
        f, b = split.feature, split.bin
        layout = self.data.layout
        left = 2 * node + 1
        split_node(self.data.columns, self.node_of_row, node, f, b, layout.missing_bin,
                   split.missing_left, left, left + 1)
        sums = None
        if weigh is not None:
            sums = node_totals(weigh, self.node_of_row - left, 2)
            left_heavier = bool(sums[0].sum() >= sums[1].sum())
        else:
            n_left = int(np.count_nonzero(self.node_of_row == left))
            left_heavier = n_left >= int(np.count_nonzero(self.node_of_row == left + 1))
        m_left = split.missing_left if layout.has_missing[f] else left_heavier
        self.feature[node] = f
        self.threshold[node] = self.data.threshold(f, b)
        self.missing_left[node] = m_left
        self._split.append(node)
        return sums

    def end_layer(self) -> None:
        """Close the layer: the rows of nodes that did not split go to their left child."""
        if self.layer >= self.depth:
            raise ValueError("the tree is already at full depth")
        nxt = 2 ** (self.layer + 1) - 1
        stay = self.node_of_row < nxt
        if self.fixed_channels:
            split = set(self._split)
            kept = np.unique(self.node_of_row[stay])
            self._passed = {2 * int(j) + 1 for j in kept if int(j) not in split}
            self._parent_split = list(self._split)
        self.node_of_row[stay] = 2 * self.node_of_row[stay] + 1
        self._split = []
        self.layer += 1

    def leaf_index(self) -> np.ndarray:
        """Leaf (0 .. 2**depth - 1) of every training row (after the last layer)."""
        if self.layer != self.depth:
            raise ValueError("the tree is not fully grown")
        return (self.node_of_row - (2**self.depth - 1)).astype(np.intp)

    def tree(self, leaf_value: np.ndarray) -> TreeArrays:
        """The grown tree with the given ``2**depth`` leaf values."""
        leaf_value = np.asarray(leaf_value, dtype=np.float64).reshape(1, 2**self.depth)
        return TreeArrays(self.feature[None].copy(), self.threshold[None].copy(),
                          self.missing_left[None].copy(), leaf_value)

    # ------------------------------------------------------------------ histograms

    def _histograms(self, channels, local, counts, searched) -> tuple[np.ndarray, dict]:
        """Histograms (one per searched node) and each node's slot in them."""
        data = self.data
        cell = data.n_features * data.layout.n_bins_total * channels.shape[1] * 8
        if self.histograms is not None and len(searched) * cell <= _LAYER_BYTES:
            return self._subtracted(channels, local, counts, searched)
        slot = {node: i for i, node in enumerate(searched)}
        batch = max(1, _LAYER_BYTES // cell)
        if len(searched) <= batch:  # one pass for the layer
            return self._build(channels, local, searched), slot
        hist = np.empty((len(searched), data.n_features, data.layout.n_bins_total,
                         channels.shape[1]))
        for b0 in range(0, len(searched), batch):
            part = searched[b0:b0 + batch]
            hist[b0:b0 + len(part)] = self._build(channels, local, part)
        return hist, slot

    def _build(self, channels, local, nodes) -> np.ndarray:
        """Histograms of ``nodes`` built directly from their rows, in one pass."""
        lut = np.full(2**self.layer, -1, dtype=np.int32)
        lut[np.asarray(nodes) - self.first] = np.arange(len(nodes), dtype=np.int32)
        labels = lut[local]
        pool = None if self.fixed_channels else self.pool  # fixed: kept for the next layer
        hist, totals = column_histograms(self.data.columns, channels, labels, len(nodes),
                                         self.data.layout.n_bins_total, pool=pool)
        hist, _ = self.reduce(hist, totals)
        self.histogram_updates += self.data.n_features * int(np.count_nonzero(labels >= 0))
        return hist

    def _subtracted(self, channels, local, counts, searched):
        """Fixed channels: each split parent's smaller child built, the larger by subtraction."""
        parent_hist, parent_slot = self.histograms
        first = self.first
        wanted = set(searched)
        small, pairs = [], []
        for p in self._parent_split:
            left, right = 2 * p + 1, 2 * p + 2
            if left not in wanted and right not in wanted:
                continue
            s, big = (left, right) if counts[left - first] <= counts[right - first] else (
                right, left)
            small.append(s)
            pairs.append((p, s, big))
        built = self._build(channels, local, small)
        slot = {node: i for i, node in enumerate(searched)}
        hist = np.empty((len(searched),) + built.shape[1:])
        for i, (p, s, big) in enumerate(pairs):
            if s in wanted:
                hist[slot[s]] = built[i]
            if big in wanted:
                np.subtract(parent_hist[parent_slot[p]], built[i], out=hist[slot[big]])
        return hist, slot

    def _quickboost(self, channels, score, node) -> Split | None:
        """One node's split by QuickBoost (features pruned on prefixes of its rows)."""
        data = self.data
        local = self.node_of_row - node  # this node's rows are 0
        rows, ends = visiting_order(channels, np.flatnonzero(local == 0))

        def full_histogram(features):
            hist, totals = column_histograms(data.columns, channels, local, 1,
                                             data.layout.n_bins_total, features, self.pool)
            return self.reduce(hist, totals)[0][0]

        result = quickboost_split(data.bins, channels, rows, data.layout, score, full_histogram,
                                  sparse=data.sparse, ends=ends, pool=self.pool)
        self.histogram_updates += result.histogram_updates
        return result.split


@numba.njit(cache=True, nogil=True)
def _layer_stats(channels, local, n_nodes):
    """Rows and absolute channel mass of each node ``0 .. n_nodes - 1`` (others left out)."""
    counts = np.zeros(n_nodes, dtype=np.int64)
    mass = np.zeros(n_nodes)
    for r in range(channels.shape[0]):
        k = local[r]
        if 0 <= k < n_nodes:
            counts[k] += 1
            for c in range(channels.shape[1]):
                mass[k] += abs(channels[r, c])
    return counts, mass
