"""GD-MCBoost's weak learner: a greedy tree whose leaves emit simplex codewords.

Each leaf emits the codeword ``y_k`` that maximises ``<y_k, sum_i w_i>`` over its rows (``w_i``
the risk gradient), so the tree maximises ``sum_i <g(x_i), w_i>``. Every layer searches the
same K+1 channels ``(<y_1, w>, ..., <y_K, w>, ||w||)``, so children's histograms come by
subtraction (:class:`~.grower.LayerGrower` with ``fixed_channels``).
"""

from __future__ import annotations

import numpy as np

from ..search.binned import BinnedData
from ..search.scores import codeword_score
from .grower import LayerGrower
from .tree import TreeArrays


def codeword_tree(data: BinnedData, grad: np.ndarray, codewords: np.ndarray,
                  depth: int) -> tuple[TreeArrays, np.ndarray, np.ndarray]:
    """Greedy tree maximising ``sum_i <g(x_i), grad_i>`` with codeword leaves.

    Returns the tree (leaf values = codeword class index), each leaf's class and each training
    row's class. An empty leaf emits class 0.
    """
    k = codewords.shape[0]
    proj = grad @ codewords.T
    channels = np.ascontiguousarray(np.column_stack([proj, np.linalg.norm(grad, axis=1)]))
    grower = LayerGrower(data, depth, fixed_channels=True)
    for _ in range(depth):
        grower.grow_layer(channels, codeword_score)
    leaf_class = np.argmax(grower.layer_sums(channels)[:, :k], axis=1)
    row_class = leaf_class[grower.leaf_index()]
    return grower.tree(leaf_class.astype(np.float64)), leaf_class, row_class
