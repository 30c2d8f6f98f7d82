"""REBEL's booster: its loss driving one weak-learner family (the engine's ``Booster``)."""

from __future__ import annotations

import numpy as np

from ..engine import Stage, StageRun
from ..learners.contract import LearnerFit
from ..losses.rebel import RebelLoss
from ..tree_tables import stage_covers
from . import _compiled_stages


class RebelBooster:
    """REBEL's loss (2K weight channels, closed-form steps) driving one weak-learner family."""

    def __init__(self, family, cost_rows, sample_weight, validation, learning_rate, subcosts,
                 exact_sums: bool = False):
        """``exact_sums``: the loss and the leaves' covers are exact sums (quantized fits: the
        model of any partitioning of the rows)."""
        self.family = family
        self.learning_rate = learning_rate
        self.blas_threads = family.blas_threads
        self.exact_sums = exact_sums
        self.loss = RebelLoss(None, family.codes, sample_weight, subcosts, cost_rows,
                              exact=exact_sums)
        # each tree's leaf covers come from its training rows' slots where those are the
        # slots prediction gives them (trees on bins; not exact sums, summed across blocks)
        self.cover_weight = (np.ascontiguousarray(sample_weight, dtype=np.float64)
                             if getattr(family, "scores_as_predicted", False) and not exact_sums
                             else None)
        self.val_loss = (RebelLoss(None, validation.codes, validation.sample_weight, subcosts,
                                   validation.cost_rows) if validation is not None else None)
        # the scores and channels come with the initial loss, once the caller has let the
        # (n, K) cost rows go (they were the fit's peak of memory beside them)
        self.scores = self.channels = self.scale = self._initial_loss = None

    def initial_loss(self) -> float:
        """The loss before any stage; it sets up the rows' scores and weight channels."""
        if self.scores is None:
            n, k = len(self.family.codes), self.loss.n_classes
            self.scores = np.zeros((n, k))
            out = (self.family.channels_out(2 * k) if hasattr(self.family, "channels_out")
                   else None)  # (where the family wants the channels written, if anywhere)
            # the loss is the channels' total, the same bits as the loss alone: no pass and no
            # kernel of its own loaded into the fit (BENCHMARKS.md, stop 61), but where the
            # weights overflow
            self.channels, self.scale, loss = self.loss.weights_and_loss(self.scores, out)
            self._initial_loss = loss if np.isfinite(loss) else self.loss.loss(self.scores)
        return self._initial_loss

    def fit_stage(self, iteration: int) -> Stage:
        fit: LearnerFit = self.family.fit(self.channels)
        values = self.learning_rate * fit.values
        fit.add_to(self.scores, values)
        vector = None if fit.vector is None else self.learning_rate * fit.vector
        gains = [(f, gain * self.scale) for f, gain in fit.gains]
        self.channels, self.scale, loss = self.loss.weights_and_loss(self.scores, self.channels)
        covers = (stage_covers(fit.slot_of_row, self.cover_weight, len(fit.values))
                  if self.cover_weight is not None and fit.weight_of_row is None else None)
        return Stage(fit.arrays, values[None], loss, gains, {"vector": vector, "work": fit.work},
                     covers)

    def fit_stages(self, n_iterations: int, target_loss: float | None) -> StageRun | None:
        """Up to ``n_iterations`` stages in one compiled call where :mod:`._compiled_stages`
        applies (small fits of vector-leaf trees; the same stages), else None."""
        return _compiled_stages.fit_stages(self, n_iterations, target_loss)

    def validation_loss(self, scores) -> float:
        return self.val_loss.loss(scores)

    def stack(self, pieces):
        return self.family.stack(pieces)

