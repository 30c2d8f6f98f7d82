"""The fitted additive model every booster produces, and its one prediction path.

``H(x) = sum_t w_t(x) * values[t, s_t(x)]``: learner ``t`` routes row ``x`` to slot ``s_t(x)``
with weight ``w_t(x)`` (a tree: its leaf, weight 1; a similarity: slot 0, weight ``f_t(x)``),
and the slot holds a K-vector of class scores (REBEL: ``leaf output * a_t``; AdaBoost.MH:
``alpha * phi_leaf * v``; GD-MCBoost: ``alpha <y_k, y_leaf>``). Boosting iterations (stages)
may hold several learners (one-vs-all fits one per class); ``stage_ends[s]`` is the number of
learners in the first ``s + 1`` stages. Every score, staged score and explanation is read
from here, so this is where early exit plugs in.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from ..io import corrupt, float_array, int_array
from ..learners.leaf_tree import LeafTreeArrays
from ..learners.registry import LearnerStack, learners_from_dict
from ..learners.tree import TreeArrays
from . import early_exit as exits

_TREES = (TreeArrays, LeafTreeArrays)  # the learner kinds with early exits
_STAGED_BLOCK_ENTRIES = 2**22  # (rows x learners) routes held at once by staged scoring
_MAX_SCORE = 1e300  # a model whose scores could exceed this is refused at load


@dataclass
class AdditiveModel:
    learners: LearnerStack
    values: np.ndarray  # (T, n_slots, K)
    stage_ends: np.ndarray  # (S,) int64, non-decreasing, last = T
    # (T, n_slots) training weight reaching each tree leaf (exact contributions need it);
    # None for similarity models and files from before format 3
    covers: np.ndarray | None = None
    # early-exit bounds by (first, last learner, check interval); computed when first needed,
    # never written to model files
    _exit_bounds: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def n_stages(self) -> int:
        return len(self.stage_ends)

    @property
    def n_classes(self) -> int:
        return self.values.shape[2]

    def learner_range(self, start: int = 0, stop: int | None = None) -> tuple[int, int]:
        """The learners of stages ``[start, stop)`` (None: to the end), as ``(t0, t1)``."""
        stop = self.n_stages if stop is None else stop
        if not 0 <= start <= stop <= self.n_stages:
            raise ValueError(f"iteration range [{start}, {stop}) outside the model's "
                             f"{self.n_stages} iterations")
        first = int(self.stage_ends[start - 1]) if start > 0 else 0
        last = int(self.stage_ends[stop - 1]) if stop > 0 else 0
        return first, last

    def scores(self, X: np.ndarray, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Class scores ``H(x)`` of stages ``[start, stop)``, shape (n_samples, K)."""
        t0, t1 = self.learner_range(start, stop)
        out = np.zeros((X.shape[0], self.n_classes))
        if t1 > t0:
            self.learners.take(slice(t0, t1)).accumulate(X, self.values[t0:t1], out)
        return out

    def predict_codes(self, X: np.ndarray, start: int = 0, stop: int | None = None,
                      early_exit: str | exits.SoftCascade | None = None,
                      check_every: int = exits.CHECK_EVERY) -> tuple[np.ndarray, np.ndarray]:
        """(``argmax_k H_k(x)`` of stages ``[start, stop)``, learners evaluated per row).

        ``early_exit='exact'`` stops a row's sum once its leading class cannot be overtaken
        (:mod:`rebelboost.engine.early_exit`), testing every ``check_every`` learners; the
        labels are those of full evaluation bit for bit (similarity models evaluate in full).
        A :class:`~rebelboost.engine.early_exit.SoftCascade` stops rows by its thresholds.
        """
        t0, t1 = self.learner_range(start, stop)
        if isinstance(early_exit, exits.SoftCascade):
            if early_exit.learners != (t0, t1) or not isinstance(self.learners, _TREES):
                raise ValueError("the soft cascade was calibrated on other learners")
            return exits.cascade_codes(self.learners.take(slice(t0, t1)), self.values[t0:t1],
                                       X, early_exit)
        if early_exit not in (None, "exact"):
            raise ValueError(f"early_exit must be None, 'exact' or a SoftCascade, not "
                             f"{early_exit!r}")
        if early_exit is None or t1 == t0 or not isinstance(self.learners, _TREES):
            codes = np.argmax(self.scores(X, start, stop), axis=1)
            return codes, np.full(X.shape[0], t1 - t0, np.int64)
        trees, values = self.learners.take(slice(t0, t1)), self.values[t0:t1]
        key = (t0, t1, check_every)
        if key not in self._exit_bounds:
            self._exit_bounds[key] = exits.tree_bounds(trees, values, check_every)
        return exits.tree_exit_codes(trees, values, X, self._exit_bounds[key])

    def calibrate_cascade(self, X: np.ndarray, keep: float = 0.995, start: int = 0,
                          stop: int | None = None,
                          check_every: int = exits.CASCADE_EVERY) -> exits.SoftCascade:
        """A soft cascade over stages ``[start, stop)`` of a tree model that keeps at least
        ``keep`` of the full model's decisions on the held-out rows ``X``."""
        if not isinstance(self.learners, _TREES):
            raise ValueError("soft cascades need a tree model")
        if not 0.0 < keep <= 1.0:
            raise ValueError(f"keep must be in (0, 1], not {keep!r}")
        t0, t1 = self.learner_range(start, stop)
        return exits.calibrate(self.learners.take(slice(t0, t1)), self.values[t0:t1], X, keep,
                               check_every, (t0, t1))

    def staged_scores(self, X: np.ndarray, start: int = 0,
                      stop: int | None = None) -> Iterator[np.ndarray]:
        """Scores after each stage of ``[start, stop)``, learners added one at a time."""
        stop = self.n_stages if stop is None else stop
        t0, t1 = self.learner_range(start, stop)
        scores = np.zeros((X.shape[0], self.n_classes))
        ends = iter(self.stage_ends[start:stop])
        end = next(ends, None)
        block = max(1, _STAGED_BLOCK_ENTRIES // max(X.shape[0], 1))
        for b0 in range(t0, t1, block):
            b1 = min(b0 + block, t1)
            slots, weights = self.learners.take(slice(b0, b1)).route(X)
            for t in range(b0, b1):
                part = self.values[t][slots[:, t - b0]]
                if weights is not None:
                    part = part * weights[:, t - b0, None]
                scores += part
                while end is not None and t + 1 == end:
                    yield scores.copy()
                    end = next(ends, None)
        while end is not None:  # stages without learners
            yield scores.copy()
            end = next(ends, None)

    def contributions(self, x: np.ndarray) -> np.ndarray:
        """Each learner's class scores for one row, shape (T, K); they sum to ``H(x)``."""
        slots, weights = self.learners.route(x.reshape(1, -1))
        part = self.values[np.arange(len(self.learners)), slots[0]]
        return part if weights is None else part * weights[0][:, None]

    # ------------------------------------------------------------------ model files

    def to_dict(self) -> dict:
        return {"learners": self.learners.to_dict(), "values": self.values.tolist(),
                "stage_ends": self.stage_ends.tolist(),
                "covers": None if self.covers is None else self.covers.tolist()}

    @classmethod
    def from_dict(cls, doc: dict, n_features: int, n_classes: int) -> AdditiveModel:
        """Rebuild and check the model section of a model file (ValueError if corrupt)."""
        for key in ("learners", "values", "stage_ends"):
            if key not in doc:
                raise corrupt(f"model lacks {key!r}")
        learners = learners_from_dict(doc["learners"], n_features, n_classes)
        n = len(learners)
        values = float_array(doc["values"], (n, learners.n_slots, n_classes), "values")
        if not np.isfinite(values).all():
            raise corrupt("non-finite learner values")
        if n and np.abs(values).max(axis=(1, 2)).sum() > _MAX_SCORE:
            raise corrupt("learner values so large that scores overflow")
        if not isinstance(doc["stage_ends"], list) or not doc["stage_ends"]:
            raise corrupt("stage_ends is empty or not a list")
        ends = int_array(doc["stage_ends"], (len(doc["stage_ends"]),), "stage_ends", 0, n + 1)
        if np.any(np.diff(ends) < 0) or ends[-1] != n:
            raise corrupt("stage_ends do not partition the learners")
        covers = doc.get("covers")
        if covers is not None:
            covers = float_array(covers, (n, learners.n_slots), "covers")
            if not np.isfinite(covers).all() or (covers < 0).any():
                raise corrupt("covers are not finite non-negative weights")
        return cls(learners, values, ends, covers)
