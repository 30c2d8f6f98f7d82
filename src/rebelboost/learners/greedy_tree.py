"""Layer-by-layer greedy trees on the shared histogram engine, for any channels and score.

A booster describes a layer's split problem as per-sample channels and a split score (lower is
better, non-negative, with ``score(sums, 0)`` the score of leaving a node unsplit). The builder
splits every leaf of the current layer by the engine's ``best_split`` over a histogram of the
leaf's rows, keeps the split only when it beats not splitting, and records raw thresholds in
the complete heap layout of :class:`~rebelboost.learners.tree.TreeArrays` (a node that does not
split passes all rows left). Different layers may use different channels: AdaBoost.MH's
Hamming trees search the root over K+1 channels and the layers below with the votes fixed.
"""

from __future__ import annotations

import numpy as np

from ..binning import Binner
from ..search.histogram import build_histogram, partition_rows
from ..search.splits import best_split, is_better
from .tree import TreeArrays


class TreeBuilder:
    """Grows one tree of depth ``depth`` over the binned training rows."""

    def __init__(self, bins: np.ndarray, binner: Binner, depth: int,
                 rows: np.ndarray | None = None):
        self.bins = bins
        self.binner = binner
        self.depth = int(depth)
        n_internal = 2**self.depth - 1
        self.feature = np.full(n_internal, -1, np.int32)
        self.threshold = np.zeros(n_internal)
        self.missing_left = np.zeros(n_internal, bool)
        if rows is None:
            rows = np.arange(bins.shape[0], dtype=np.intp)
        self.frontier: list[tuple[int, np.ndarray]] = [(0, rows)]
        self.layers = 0
        self.gains: list[tuple[int, float]] = []  # (feature, score reduction), channel scale

    def grow_layer(self, channels: np.ndarray, score) -> bool:
        """Split every leaf of the current layer; True if any leaf split."""
        if self.layers >= self.depth:
            raise ValueError("the tree is already at full depth")
        b = self.binner
        zeros = np.zeros(channels.shape[1])
        nxt: list[tuple[int, np.ndarray]] = []
        any_split = False
        for node, rows in self.frontier:
            split = None
            if rows.shape[0] > 1:
                hist = build_histogram(self.bins, channels, rows, b.n_bins_total)
                split = best_split(hist, b.n_value_bins_, b.has_missing_, b.missing_bin, score)
            if split is not None:
                unsplit = float(score(channels[rows].sum(axis=0), zeros))
                if not is_better(split.score, unsplit):
                    split = None
            if split is None:
                nxt += [(2 * node + 1, rows), (2 * node + 2, rows[:0])]
                continue
            left, right = partition_rows(rows, self.bins, split.feature, split.bin,
                                         b.missing_bin, split.missing_left)
            m_left = split.missing_left
            if not b.has_missing_[split.feature]:  # unseen NaN follows the larger side
                m_left = bool(left.shape[0] >= right.shape[0])
            self.feature[node] = split.feature
            self.threshold[node] = b.threshold(split.feature, split.bin)
            self.missing_left[node] = m_left
            self.gains.append((split.feature, unsplit - split.score))
            nxt += [(2 * node + 1, left), (2 * node + 2, right)]
            any_split = True
        self.frontier = nxt
        self.layers += 1
        return any_split

    def pad(self) -> None:
        """Pass the remaining layers (every leaf sends its rows left)."""
        while self.layers < self.depth:
            self.frontier = [
                child for node, rows in self.frontier
                for child in ((2 * node + 1, rows), (2 * node + 2, rows[:0]))
            ]
            self.layers += 1

    def leaf_index(self, n_samples: int) -> np.ndarray:
        """Leaf (0 .. 2**depth - 1) of every training row (after :meth:`pad`)."""
        n_internal = 2**self.depth - 1
        out = np.zeros(n_samples, np.intp)
        for node, rows in self.frontier:
            out[rows] = node - n_internal
        return out

    def leaf_rows(self) -> list[np.ndarray]:
        """Rows of each leaf, in leaf order (after :meth:`pad`)."""
        return [rows for _, rows in self.frontier]

    def tree(self, leaf_value: np.ndarray) -> TreeArrays:
        """The finished tree with the given ``2**depth`` leaf values."""
        leaf_value = np.asarray(leaf_value, dtype=np.float64).reshape(1, 2**self.depth)
        return TreeArrays(self.feature[None].copy(), self.threshold[None].copy(),
                          self.missing_left[None].copy(), leaf_value)


def sign_leaves(channels: np.ndarray, leaf_rows: list[np.ndarray]) -> np.ndarray:
    """Each leaf's cheaper sign under two cost channels ``(cost of +1, cost of -1)``.

    Ties (and empty leaves) take +1.
    """
    out = np.ones(len(leaf_rows))
    for i, rows in enumerate(leaf_rows):
        if rows.shape[0]:
            cost_plus, cost_minus = channels[rows].sum(axis=0)
            if is_better(cost_minus, cost_plus):
                out[i] = -1.0
    return out


def signed_cost_channels(signed: np.ndarray) -> np.ndarray:
    """Channels ``(cost of +1, cost of -1)`` for maximising ``sum_i phi_i u_i`` over +-1 ``phi``.

    Emitting +1 at ``i`` loses ``max(-u_i, 0)``, emitting -1 loses ``max(u_i, 0)``, so the
    engine's ``sign_cost_score`` equals ``(sum |u| - edge) / 2`` with free leaf signs.
    """
    return np.ascontiguousarray(np.column_stack([np.maximum(-signed, 0.0),
                                                 np.maximum(signed, 0.0)]))
