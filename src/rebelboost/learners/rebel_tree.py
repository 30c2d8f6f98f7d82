"""REBEL's greedy layer-by-layer tree growing (REBEL paper section 4).

The root is the best stump under the full K-vector loss (2K channels ``w+, w-``). Each further
layer holds the step vector ``a`` fixed, which turns the problem into an ordinary binary one:
a sample costs ``g+ = <w+, e^a> + <w-, e^-a>`` if its leaf emits +1 and
``g- = <w+, e^-a> + <w-, e^a>`` if it emits -1, so every leaf is split by the two-channel score
and its children take their cheaper sign. Then ``a`` is re-solved in closed form. Neither move
can raise the loss.

Rows carry the label of their node (``node_of_row``), and each layer's histograms come from one
pass over the feature-major bins (:func:`~rebelboost.search.columns.column_histograms`), every
node's sums accumulated by increasing row. With ``quickboost=True`` each node's search prunes
features on prefixes of its rows (heaviest chunks first) and finishes only the survivors, with
the same column kernel; so both grow the same tree bit for bit, and the exhaustive path is the
reference. A layer node builds its two-channel histogram directly from its rows (for K > 1 that
is cheaper than a 2K-channel child histogram, and pruned features would have none to subtract
from anyway).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..binning import Binner
from ..losses.rebel import binary_sums, step_loss, step_vector
from ..search.columns import (
    BinColumns,
    bin_columns,
    column_histograms,
    node_totals,
    split_node,
)
from ..search.histogram import HistogramPool, SparseBins
from ..search.quickboost import quickboost_split, visiting_order
from ..search.splits import Split, best_split, is_better, rebel_score, sign_cost_score
from .tree import TreeArrays

# Largest layer histogram built in one pass (bytes); a layer with more nodes takes several.
_LAYER_BYTES = 1 << 28


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
    sums: np.ndarray  # 2K channel sums over its rows
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
    columns: BinColumns | None = None,
    sparse: SparseBins | None = None,
    pool: HistogramPool | None = None,
) -> FittedLearner | None:
    """Fit a depth-``max_depth`` tree and its step vector; None if no feature can split.

    ``columns`` (:func:`~rebelboost.search.columns.bin_columns` of ``bins``; built here when
    not given) holds the bins the histograms are built from. ``quickboost`` prunes features in
    each node's search; the tree is the same either way. ``sparse``
    (:func:`~rebelboost.search.histogram.sparse_bins` of ``bins``) speeds up QuickBoost's
    prefixes on sparse data; ``pool`` lends histogram buffers (pass the same one every
    iteration).
    """
    n_samples, n_channels = channels.shape
    n_classes = n_channels // 2
    if columns is None:
        columns = bin_columns(bins)
    nvb, has_missing = binner.n_value_bins_, binner.has_missing_
    missing_bin, n_bins_total = binner.missing_bin, binner.n_bins_total
    n_internal = 2**max_depth - 1
    feature = np.full(n_internal, -1, np.int32)
    threshold = np.zeros(n_internal)
    missing_left = np.zeros(n_internal, bool)
    gains: list[tuple[int, float]] = []
    updates = 0
    node_of_row = np.zeros(n_samples, dtype=np.int32)  # heap order: j's children 2j+1, 2j+2

    def search_layer(layer_channels, first: int, searched: list[int], sizes, score) -> dict:
        """Best split of each node ``first + i`` in ``searched`` (None: none possible);
        ``sizes[i]``: node ``first + i``'s row count."""
        nonlocal updates
        n_features = bins.shape[1]
        if quickboost:
            found = {}
            for node in searched:
                local = node_of_row - node  # this node's rows are 0
                rows, ends = visiting_order(layer_channels, np.flatnonzero(local == 0))

                def full_histogram(features, local=local):
                    return column_histograms(columns, layer_channels, local, 1, n_bins_total,
                                             features, pool)[0][0]

                result = quickboost_split(bins, layer_channels, rows, nvb, has_missing,
                                          missing_bin, n_bins_total, score, full_histogram,
                                          sparse=sparse, ends=ends, pool=pool)
                updates += result.histogram_updates
                found[node] = result.split
            return found
        n_nodes = searched[-1] - first + 1
        per_node = n_features * n_bins_total * layer_channels.shape[1] * 8
        batch = max(1, _LAYER_BYTES // per_node)
        found = {}
        for b0 in range(0, n_nodes, batch):  # one pass over the data per batch of nodes
            hist, totals = column_histograms(columns, layer_channels, node_of_row - (first + b0),
                                             min(batch, n_nodes - b0), n_bins_total, pool=pool)
            for node in searched:
                i = node - first - b0
                if 0 <= i < hist.shape[0]:
                    found[node] = best_split(hist[i], nvb, has_missing, missing_bin, score)
                    updates += n_features * int(sizes[node - first])
        return found

    def apply(node: int, split: Split) -> tuple[np.ndarray, np.ndarray]:
        """Record ``split`` at ``node``, send its rows to the children; the children's sums."""
        f, b = split.feature, split.bin
        left, right = 2 * node + 1, 2 * node + 2
        split_node(columns, node_of_row, node, f, b, missing_bin, split.missing_left, left, right)
        sums = node_totals(channels, node_of_row - left, 2)
        m_left = split.missing_left
        if not has_missing[f]:  # unseen NaN follows the heavier side
            m_left = bool(sums[0].sum() >= sums[1].sum())
        feature[node], threshold[node], missing_left[node] = f, binner.threshold(f, b), m_left
        return sums[0], sums[1]

    split = search_layer(channels, 0, [0], [n_samples], rebel_score)[0]
    if split is None:
        return None
    left_sums, right_sums = apply(0, split)
    gains.append((split.feature, float((left_sums + right_sums).sum() - 2.0 * split.score)))
    s_plus, s_minus = binary_sums(right_sums, left_sums, n_classes)
    a = step_vector(s_plus, s_minus)
    frontier = [_Leaf(1, left_sums, -1.0), _Leaf(2, right_sums, 1.0)]

    for depth in range(1, max_depth):
        exp_a = np.exp(a)
        g = _project(channels, exp_a)  # per-sample (g+, g-) of this layer
        first = 2**depth - 1
        counts = np.bincount(node_of_row - first, minlength=len(frontier))
        searched = [leaf.node for leaf in frontier if counts[leaf.node - first] > 1]
        found = search_layer(g, first, searched, counts, sign_cost_score) if searched else {}
        next_frontier: list[_Leaf] = []
        for leaf in frontier:
            no_split = float(_project(leaf.sums, exp_a).min())
            split = found.get(leaf.node)
            left, right = 2 * leaf.node + 1, 2 * leaf.node + 2
            if split is not None and is_better(split.score, no_split):
                lsum, rsum = apply(leaf.node, split)
                gains.append((split.feature, no_split - split.score))
                children = (_Leaf(left, lsum, _cheaper_sign(lsum, exp_a)),
                            _Leaf(right, rsum, _cheaper_sign(rsum, exp_a)))
            else:
                sign = _cheaper_sign(leaf.sums, exp_a)  # a has moved: the other sign may win now
                node_of_row[node_of_row == leaf.node] = left
                children = (_Leaf(left, leaf.sums, sign),
                            _Leaf(right, np.zeros_like(leaf.sums), sign))
            next_frontier.extend(children)
        frontier = next_frontier
        plus = sum(leaf.sums for leaf in frontier if leaf.sign > 0)
        minus = sum(leaf.sums for leaf in frontier if leaf.sign < 0)
        s_plus, s_minus = binary_sums(
            plus + np.zeros(n_channels), minus + np.zeros(n_channels), n_classes
        )
        a = step_vector(s_plus, s_minus)

    leaf_value = np.zeros(2**max_depth)
    for leaf in frontier:
        leaf_value[leaf.node - n_internal] = leaf.sign
    output = leaf_value[node_of_row - n_internal]
    tree = TreeArrays(feature[None], threshold[None], missing_left[None], leaf_value[None])
    return FittedLearner(tree, output, a, step_loss(s_plus, s_minus, a), gains, updates)


def _cheaper_sign(sums: np.ndarray, exp_a: np.ndarray) -> float:
    g_plus, g_minus = _project(sums, exp_a)
    return -1.0 if is_better(g_minus, g_plus) else 1.0
