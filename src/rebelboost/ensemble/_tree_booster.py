"""The part of a booster that AdaBoost.MH, MCBoost and one-vs-all share (their losses and tree
learners differ; see :class:`rebelboost.engine.Booster` for the contract)."""

from __future__ import annotations

import numpy as np

from ..learners.tree import TreeArrays


class TreeBooster:
    """What the tree boosters of AdaBoost.MH, MCBoost and one-vs-all share: binned data, tree
    depth, shrinkage, their training scores (n_samples, K), and a risk of scores on the
    training and validation rows."""

    blas_threads = 1  # the histogram kernels do the parallel work

    def __init__(self, data, depth: int, learning_rate: float, n_classes: int, risk,
                 validation_risk=None):
        self.data, self.depth, self.learning_rate = data, depth, learning_rate
        self.risk, self.validation_risk = risk, validation_risk
        self.scores = np.zeros((data.n_samples, n_classes))

    def initial_loss(self) -> float:
        return self.risk(np.zeros_like(self.scores))

    def validation_loss(self, scores) -> float:
        return self.validation_risk(scores)

    def stack(self, pieces) -> TreeArrays:
        return TreeArrays.stack(pieces, self.depth)
