"""The contract between REBEL's booster and its weak learners: one protocol, one result type.

A weak-learner family (:data:`~.rebel_learners.REBEL_LEARNERS`) is built once per fit as
``FAMILY(X, codes, sample_weight, cost_matrix, options, rng)``: it prepares its training data
(binned features, scaled rows) and keeps it. Each iteration the booster calls
``family.fit(channels)`` with the rows' 2K REBEL weight channels ``(w+, w-)`` and gets one
:class:`LearnerFit`, whatever the learner: a paper tree adds ``+-a`` by leaf, a vector-leaf
tree its leaf's own vector, a localized similarity its output times ``a``. The booster then
applies it the same way for all (:meth:`LearnerFit.add_to`), so it never asks what it holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ..losses.rebel import add_slot_values


@dataclass
class LearnerFit:
    """One iteration's weak learner and what it adds to the training rows' class scores.

    Training row ``x`` gains ``weight_of_row[x] * values[slot_of_row[x]]`` (times the
    learning rate), exactly as :class:`~rebelboost.engine.model.AdditiveModel` will score it:
    the model stores ``values`` as the learner's slot values."""

    arrays: object  # the learner, as a learner stack of one (a kind of LEARNER_KINDS)
    values: np.ndarray  # (n_slots, K) what each slot adds, before the learning rate
    slot_of_row: np.ndarray  # (n_samples,) intp: each training row's slot
    weight_of_row: np.ndarray | None  # (n_samples,) each row's weight (None: every weight 1)
    vector: np.ndarray | None  # the step vector every slot scales (None: each leaf its own)
    loss: float  # REBEL's loss after the (unshrunk) step, in the channels' scale
    gains: list[tuple[int, float]] = field(default_factory=list)  # (feature, loss reduction)
    work: int = 0  # row x feature histogram additions spent

    def add_to(self, scores: np.ndarray, values: np.ndarray) -> None:
        """``scores[x] += weight(x) * values[slot(x)]`` for every training row, in place
        (``values``: this fit's values, shrunk)."""
        add_slot_values(scores, self.slot_of_row, self.weight_of_row,
                        np.ascontiguousarray(values, dtype=np.float64))


class WeakLearnerFamily(Protocol):
    """What REBEL's booster needs of a weak-learner family (built as described above)."""

    blas_threads: int | None  # BLAS threads its fit wants (None: leave BLAS alone)
    codes: np.ndarray  # the training labels it fits (a family may relabel rows)
    state: dict  # what it learnt about the data, for the fitted estimator

    def fit(self, channels: np.ndarray) -> LearnerFit:
        """This iteration's learner for the rows' (n_samples, 2K) weight channels."""

    def stack(self, pieces: list) -> object:
        """The fitted learners' ``arrays`` joined into the model's learner stack."""
