"""REBEL's greedy layer-by-layer tree growing (REBEL paper section 4).

The root is the best stump under the full K-vector loss (2K channels ``w+, w-``). Each further
layer holds the step vector ``a`` fixed, which turns the problem into an ordinary binary one:
a sample costs ``g+ = <w+, e^a> + <w-, e^-a>`` if its leaf emits +1 and
``g- = <w+, e^-a> + <w-, e^a>`` if it emits -1, so every leaf is split by the two-channel score
and its children take their cheaper sign. Then ``a`` is re-solved in closed form. Neither move
can raise the loss.

Every node searches its own rows in QuickBoost's visiting order (heaviest chunks first, by the
sum of the node's channels: ``w+, w-`` at the root, ``g+, g-`` below), with QuickBoost pruning
(``quickboost=True``) or exhaustively. Both accumulate the same rows in the same order (and,
with sparse bins, fill the default bins the same way), so they grow the same tree bit for bit;
the exhaustive path is the reference. A layer node builds its two-channel histogram directly
from its rows (for K > 1 that is cheaper than a 2K-channel child histogram, and pruned features
would have none to subtract from anyway).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..binning import Binner
from ..losses.rebel import binary_sums, step_loss, step_vector
from ..search.histogram import HistogramPool, SparseBins, partition_rows
from ..search.quickboost import quickboost_split, visiting_order
from ..search.splits import is_better, rebel_score, sign_cost_score
from .tree import TreeArrays


@dataclass
class FittedLearner:
    """A weak learner fitted to one boosting iteration's weights."""

    arrays: TreeArrays  # the learner, as a stack of one tree
    output: np.ndarray  # f on the training rows
    vector: np.ndarray  # step vector a
    loss: float  # loss after the step, in the channels' scale
    gains: list[tuple[int, float]] = field(default_factory=list)  # (feature, loss reduction)
    histogram_updates: int = 0  # row x feature accumulations spent on the split searches


@dataclass
class _Leaf:
    node: int
    rows: np.ndarray
    sums: np.ndarray  # 2K channel sums over rows
    sign: float


def _project(weights: np.ndarray, exp_a: np.ndarray) -> np.ndarray:
    """``(g+, g-)`` from 2K weight sums (last axis) at fixed ``a``."""
    k = exp_a.shape[0]
    w_plus, w_minus = weights[..., :k], weights[..., k:]
    g_plus = w_plus @ exp_a + w_minus @ (1.0 / exp_a)
    g_minus = w_plus @ (1.0 / exp_a) + w_minus @ exp_a
    return np.ascontiguousarray(np.stack([g_plus, g_minus], axis=-1))


def constant_learner(total: np.ndarray, n_samples: int, depth: int) -> FittedLearner:
    """The bias step: ``f = +1`` everywhere, ``a`` solved from the class totals."""
    from .tree import constant_tree

    k = total.shape[0] // 2
    s_plus, s_minus = total[:k], total[k:]
    a = step_vector(s_plus, s_minus)
    return FittedLearner(constant_tree(depth), np.ones(n_samples), a, step_loss(s_plus, s_minus, a))


def grow_rebel_tree(
    bins: np.ndarray,
    channels: np.ndarray,
    binner: Binner,
    max_depth: int,
    quickboost: bool = False,
    sparse: SparseBins | None = None,
    pool: HistogramPool | None = None,
) -> FittedLearner | None:
    """Fit a depth-``max_depth`` tree and its step vector; None if no feature can split.

    ``quickboost`` prunes features in each node's search; the tree is the same either way.
    ``sparse`` (:func:`~rebelboost.search.histogram.sparse_bins` of ``bins``) skips the rows
    in each feature's most frequent bin; ``pool`` lends histogram buffers (pass the same one
    every iteration).
    """
    n_samples, n_channels = channels.shape
    n_classes = n_channels // 2
    nvb, has_missing = binner.n_value_bins_, binner.has_missing_
    missing_bin, n_bins_total = binner.missing_bin, binner.n_bins_total
    n_internal = 2**max_depth - 1
    feature = np.full(n_internal, -1, np.int32)
    threshold = np.zeros(n_internal)
    missing_left = np.zeros(n_internal, bool)
    gains: list[tuple[int, float]] = []

    def record(node: int, f: int, b: int, m_left: bool, left_sums, right_sums) -> None:
        if not has_missing[f]:  # unseen NaN follows the heavier side
            m_left = bool(left_sums.sum() >= right_sums.sum())
        feature[node], threshold[node], missing_left[node] = f, binner.threshold(f, b), m_left

    updates = 0

    def search(node_channels, rows, score):
        """Best split of ``rows`` and those rows split by it (or None)."""
        nonlocal updates
        rows, ends = visiting_order(node_channels, rows)
        result = quickboost_split(bins, node_channels, rows, nvb, has_missing, missing_bin,
                                  n_bins_total, score, prune=quickboost, sparse=sparse,
                                  ends=ends, pool=pool)
        updates += result.histogram_updates
        split = result.split
        if split is None:
            return None, None, None
        return split, *partition_rows(rows, bins, split.feature, split.bin, missing_bin,
                                      split.missing_left)

    split, left_rows, right_rows = search(channels, np.arange(n_samples, dtype=np.intp),
                                          rebel_score)
    if split is None:
        return None
    total = channels.sum(axis=0)
    left_sums, right_sums = channels[left_rows].sum(axis=0), channels[right_rows].sum(axis=0)
    record(0, split.feature, split.bin, split.missing_left, left_sums, right_sums)
    gains.append((split.feature, float(total.sum() - 2.0 * split.score)))
    s_plus, s_minus = binary_sums(right_sums, left_sums, n_classes)
    a = step_vector(s_plus, s_minus)
    frontier = [_Leaf(1, left_rows, left_sums, -1.0), _Leaf(2, right_rows, right_sums, 1.0)]

    for _ in range(1, max_depth):
        exp_a = np.exp(a)
        g = _project(channels, exp_a)  # per-sample (g+, g-) of this layer
        next_frontier: list[_Leaf] = []
        for leaf in frontier:
            g_total = _project(leaf.sums, exp_a)
            no_split = float(g_total.min())
            split = None
            if len(leaf.rows) > 1:
                split, lrows, rrows = search(g, leaf.rows, sign_cost_score)
            if split is not None and is_better(split.score, no_split):
                lsum, rsum = channels[lrows].sum(axis=0), channels[rrows].sum(axis=0)
                record(leaf.node, split.feature, split.bin, split.missing_left, lsum, rsum)
                gains.append((split.feature, no_split - split.score))
                children = (
                    _Leaf(2 * leaf.node + 1, lrows, lsum, _cheaper_sign(lsum, exp_a)),
                    _Leaf(2 * leaf.node + 2, rrows, rsum, _cheaper_sign(rsum, exp_a)),
                )
            else:
                sign = _cheaper_sign(leaf.sums, exp_a)  # a has moved: the other sign may win now
                children = (
                    _Leaf(2 * leaf.node + 1, leaf.rows, leaf.sums, sign),
                    _Leaf(2 * leaf.node + 2, leaf.rows[:0], np.zeros_like(leaf.sums), sign),
                )
            next_frontier.extend(children)
        frontier = next_frontier
        plus = sum(leaf.sums for leaf in frontier if leaf.sign > 0)
        minus = sum(leaf.sums for leaf in frontier if leaf.sign < 0)
        s_plus, s_minus = binary_sums(
            plus + np.zeros(n_channels), minus + np.zeros(n_channels), n_classes
        )
        a = step_vector(s_plus, s_minus)

    leaf_value = np.empty(2**max_depth)
    output = np.empty(n_samples)
    for leaf in frontier:
        leaf_value[leaf.node - n_internal] = leaf.sign
        output[leaf.rows] = leaf.sign
    tree = TreeArrays(feature[None], threshold[None], missing_left[None], leaf_value[None])
    return FittedLearner(tree, output, a, step_loss(s_plus, s_minus, a), gains, updates)


def _cheaper_sign(sums: np.ndarray, exp_a: np.ndarray) -> float:
    g_plus, g_minus = _project(sums, exp_a)
    return -1.0 if is_better(g_minus, g_plus) else 1.0
