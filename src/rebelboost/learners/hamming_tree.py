"""AdaBoost.MH base learners: factorized stumps and Hamming trees, and the one-against-all kind.

Factorized (Kégl 2014): ``h(x) = alpha v phi(x)`` with ``phi`` a +-1 tree. The root is the
multi-class stump of Appendix C, searched over the K+1 channels ``(w y, sum_l w)`` (class-wise
edges from the histogram, edge = their L1 norm, the constant classifier a candidate too). Then
the votes ``v = sign(gamma)`` are held fixed and each further layer is a weighted binary problem
(cost ``w-`` of emitting +1, ``w+`` of emitting -1) whose leaves take their cheaper sign. Finally
``v`` and ``alpha`` are re-solved from the class-wise edges of the whole tree. Neither move can
lower the edge, so the risk factor ``sqrt(1 - gamma^2)`` never rises above 1.

Unfactorized (Schapire and Singer 1999, Kégl 2014 Remark 2): one +-1 tree ``phi_l`` per class,
each maximising its own class-wise edge ``sum_i w_il y_il phi_l(x_i)`` (free leaf signs), and a
shared ``alpha`` from the summed edge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..losses.adaboost_mh import AdaBoostMHLoss, binary_alpha, votes_and_alpha
from ..search.binned import BinnedData
from ..search.scores import mh_stump_score, sign_cost_score
from ..search.splits import TIE_RTOL
from .grower import LayerGrower
from .tree import TreeArrays


@dataclass
class MHLearner:
    """One AdaBoost.MH base classifier ``alpha * v * phi(x)``."""

    tree: TreeArrays
    phi: np.ndarray  # phi on the training rows
    votes: np.ndarray  # v in {-1, +1}^K
    edges: np.ndarray  # class-wise edges gamma_l of phi with v = 1
    edge: float  # ||gamma||_1
    alpha: float
    gains: list[tuple[int, float]]

    def leaf_scores(self) -> np.ndarray:
        """(2**depth, K) class scores each leaf adds: ``alpha * phi_leaf * v``."""
        return self.alpha * self.tree.leaf_value[0][:, None] * self.votes[None, :]


def factorized_learner(data: BinnedData, loss: AdaBoostMHLoss, w: np.ndarray,
                       depth: int) -> MHLearner:
    """The best stump (depth 1) or a greedy Hamming tree for the weights ``w`` (summing to 1)."""
    grower = LayerGrower(data, depth)
    split = grower.grow_layer(loss.stump_channels(w), mh_stump_score)
    signs = np.array([-1.0, 1.0]) if split else np.ones(2)
    for _ in range(1, depth):
        phi = signs[grower.node_of_row - grower.first]
        votes, _, _ = votes_and_alpha(loss.classwise_edges(w, phi))
        channels = loss.fixed_vote_channels(w, votes)
        grower.grow_layer(channels, sign_cost_score)
        signs = sign_leaves(grower.layer_sums(channels))
    phi = signs[grower.leaf_index()]
    edges = loss.classwise_edges(w, phi)
    votes, edge, alpha = votes_and_alpha(edges, float(w.sum()))
    return MHLearner(grower.tree(signs), phi, votes, edges, edge, alpha, grower.gains)


def unfactorized_learners(data: BinnedData, loss: AdaBoostMHLoss, w: np.ndarray,
                          depth: int) -> tuple[list[TreeArrays], np.ndarray, float]:
    """One free-sign tree per class; returns (trees, phi (n, K), alpha)."""
    n, k = w.shape
    trees, phis = [], np.empty((n, k))
    total_edge = 0.0
    for c in range(k):
        channels = signed_cost_channels(w[:, c] * loss.y[:, c])
        tree, phi = free_sign_tree(data, channels, depth)
        trees.append(tree)
        phis[:, c] = phi
        total_edge += float((w[:, c] * loss.y[:, c] * phi).sum())
    return trees, phis, binary_alpha(total_edge, float(w.sum()))


def free_sign_tree(data: BinnedData, channels: np.ndarray,
                   depth: int) -> tuple[TreeArrays, np.ndarray]:
    """Greedy +-1 tree over two cost channels, each leaf taking its cheaper sign.

    Depth 1 is a stump with free leaf signs: the best of all stumps (both polarities) and both
    constant learners. Every layer has the same channels, so children's histograms come by
    subtraction. Returns the tree and its output on the training rows.
    """
    grower = LayerGrower(data, depth, fixed_channels=True)
    for _ in range(depth):
        grower.grow_layer(channels, sign_cost_score)
    signs = sign_leaves(grower.layer_sums(channels))
    return grower.tree(signs), signs[grower.leaf_index()]


def sign_leaves(leaf_sums: np.ndarray) -> np.ndarray:
    """Each leaf's cheaper sign from its sums of two cost channels ``(cost of +1, cost of -1)``.

    Ties (and empty leaves) take +1 (the comparison of
    :func:`~rebelboost.search.splits.is_better`, vectorised).
    """
    cost_plus, cost_minus = leaf_sums[:, 0], leaf_sums[:, 1]
    return np.where(cost_minus < cost_plus * (1.0 - TIE_RTOL), -1.0, 1.0)


def signed_cost_channels(signed: np.ndarray) -> np.ndarray:
    """Channels ``(cost of +1, cost of -1)`` for maximising ``sum_i phi_i u_i`` over +-1 ``phi``.

    Emitting +1 at ``i`` loses ``max(-u_i, 0)``, emitting -1 loses ``max(u_i, 0)``, so
    ``sign_cost_score`` equals ``(sum |u| - edge) / 2`` with free leaf signs.
    """
    return np.ascontiguousarray(np.column_stack([np.maximum(-signed, 0.0),
                                                 np.maximum(signed, 0.0)]))
