"""REBEL's greedy layer-by-layer tree growing (REBEL paper section 4).

The root is the best stump under the full K-vector loss (2K channels ``w+, w-``). Each further
layer holds the step vector ``a`` fixed, which turns the problem into an ordinary binary one:
a sample costs ``g+ = <w+, e^a> + <w-, e^-a>`` if its leaf emits +1 and
``g- = <w+, e^-a> + <w-, e^a>`` if it emits -1, so every leaf is split by the two-channel score
and its children take their cheaper sign. Then ``a`` is re-solved in closed form. Neither move
can raise the loss.

The layers are grown by :class:`~.grower.LayerGrower` (one histogram pass per layer, empty
nodes skipped). Each layer re-projects the channels (a new ``a``), so no layer can subtract
its parent's histograms. With ``quickboost=True`` each node's search prunes features on
prefixes of its rows and finishes only the survivors with the same column kernel, so both grow
the same tree bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..losses.rebel import binary_sums, step_loss, step_vector
from ..search.binned import BinnedData
from ..search.histograms import HistogramPool
from ..search.scores import rebel_score, sign_cost_score
from ..search.splits import is_better
from .grower import LayerGrower
from .tree import TreeArrays, constant_tree


@dataclass
class FittedLearner:
    """A weak learner fitted to one boosting iteration's weights."""

    arrays: TreeArrays  # the learner, as a stack of one tree
    output: np.ndarray  # f on the training rows
    vector: np.ndarray  # step vector a
    loss: float  # loss after the step, in the channels' scale
    leaf_of_row: np.ndarray  # leaf of every training row
    gains: list[tuple[int, float]] = field(default_factory=list)  # (feature, loss reduction)
    histogram_updates: int = 0  # row x feature accumulations spent on the split searches
    nodes_searched: int = 0  # tree nodes whose split was searched


def _project(weights: np.ndarray, exp_a: np.ndarray) -> np.ndarray:
    """``(g+, g-)`` from 2K weight sums (last axis) at fixed ``a``."""
    k = exp_a.shape[0]
    w_plus, w_minus = weights[..., :k], weights[..., k:]
    g_plus = w_plus @ exp_a + w_minus @ (1.0 / exp_a)
    g_minus = w_plus @ (1.0 / exp_a) + w_minus @ exp_a
    return np.ascontiguousarray(np.stack([g_plus, g_minus], axis=-1))


def constant_learner(total: np.ndarray, n_samples: int, depth: int) -> FittedLearner:
    """The bias step: ``f = +1`` everywhere, ``a`` solved from the class totals."""
    k = total.shape[0] // 2
    s_plus, s_minus = total[:k], total[k:]
    a = step_vector(s_plus, s_minus)
    return FittedLearner(constant_tree(depth), np.ones(n_samples), a,
                         step_loss(s_plus, s_minus, a), np.zeros(n_samples, dtype=np.intp))


def grow_rebel_tree(
    data: BinnedData,
    channels: np.ndarray,
    max_depth: int,
    quickboost: bool = False,
    pool: HistogramPool | None = None,
) -> FittedLearner | None:
    """Fit a depth-``max_depth`` tree and its step vector to the 2K channels ``(w+, w-)``;
    None if no feature can split.

    ``quickboost`` prunes features in each node's search (the tree is the same either way; give
    ``data`` its row layout to speed up the prefixes); ``pool`` lends histogram buffers (pass
    the same one every iteration).
    """
    n_channels = channels.shape[1]
    n_classes = n_channels // 2
    grower = LayerGrower(data, max_depth, pool=pool)
    split = grower.find_splits(channels, rebel_score, quickboost).get(0)
    if split is None:
        return None
    left_sums, right_sums = grower.split(0, split, weigh=channels)
    grower.gains.append((split.feature,
                         float((left_sums + right_sums).sum() - 2.0 * split.score)))
    grower.end_layer()
    s_plus, s_minus = binary_sums(right_sums, left_sums, n_classes)
    a = step_vector(s_plus, s_minus)
    # (node, 2K channel sums, sign) of the leaves that hold rows; an empty leaf emits +1, or,
    # made by the last layer beside a leaf that did not split, that leaf's sign.
    frontier = [(1, left_sums, -1.0), (2, right_sums, 1.0)]
    leaf_value = np.ones(2**max_depth)
    if max_depth == 1:
        leaf_value[0] = -1.0
    for depth in range(1, max_depth):
        frontier = _holding_rows(frontier, grower)
        exp_a = np.exp(a)
        found = grower.find_splits(_project(channels, exp_a), sign_cost_score, quickboost)
        grown = []
        for node, sums, _ in frontier:
            no_split = float(_project(sums, exp_a).min())
            split = found.get(node)
            if split is not None and is_better(split.score, no_split):
                lsum, rsum = grower.split(node, split, weigh=channels)
                grower.gains.append((split.feature, no_split - split.score))
                grown += [(2 * node + 1, lsum, _cheaper_sign(lsum, exp_a)),
                          (2 * node + 2, rsum, _cheaper_sign(rsum, exp_a))]
            else:
                sign = _cheaper_sign(sums, exp_a)  # a has moved: the other sign may win now
                grown.append((2 * node + 1, sums, sign))
                if depth == max_depth - 1:
                    leaf_value[2 * node + 2 - (2**max_depth - 1)] = sign
        grower.end_layer()
        frontier = grown
        plus = sum(sums for _, sums, sign in frontier if sign > 0)
        minus = sum(sums for _, sums, sign in frontier if sign < 0)
        s_plus, s_minus = binary_sums(
            plus + np.zeros(n_channels), minus + np.zeros(n_channels), n_classes
        )
        a = step_vector(s_plus, s_minus)

    if max_depth > 1:
        for node, _, sign in frontier:
            leaf_value[node - (2**max_depth - 1)] = sign
    leaf_of_row = grower.leaf_index()
    return FittedLearner(grower.tree(leaf_value), leaf_value[leaf_of_row], a,
                         step_loss(s_plus, s_minus, a), leaf_of_row, grower.gains,
                         grower.histogram_updates, grower.nodes_searched)


def _holding_rows(frontier: list, grower: LayerGrower) -> list:
    """The leaves of ``frontier`` (nodes of the grower's current layer) that hold rows."""
    counts = np.bincount(grower.node_of_row - grower.first, minlength=2**grower.layer)
    return [leaf for leaf in frontier if counts[leaf[0] - grower.first] > 0]


def _cheaper_sign(sums: np.ndarray, exp_a: np.ndarray) -> float:
    g_plus, g_minus = _project(sums, exp_a)
    return -1.0 if is_better(g_minus, g_plus) else 1.0
