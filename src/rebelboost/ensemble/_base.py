"""Shared machinery of the tree-ensemble classifiers whose leaves add class scores.

Every booster here ends up as ``S(x) = sum_t leaf_scores[t, leaf_t(x)]``: tree ``t`` sends
``x`` to a leaf and the leaf adds a K-vector of class scores (for a +-1 learner with step
vector ``a``: ``+-a``; for a GD-MCBoost codeword leaf: ``alpha <y_k, y_leaf>``). The prediction
is ``argmax_k S_k(x)``. Boosting stages may hold several trees (one-vs-all fits one tree per
class per round); ``stage_ends_[s]`` is the number of trees in the first ``s + 1`` stages.

This module holds input validation, staged predictions and the model-file dictionaries.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..binning import Binner
from ..learners.tree import TreeArrays
from ..parallel import numba_threads
from ..validation import check_fit_input


class LeafScoreClassifier(ClassifierMixin, BaseEstimator):
    """Base class: fitted attributes ``classes_``, ``trees_``, ``leaf_scores_``, ``stage_ends_``."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    # ------------------------------------------------------------------ fitting helpers

    def _fit_input(self, X, y, sample_weight):
        """Validated (X, codes, sample_weight); sets ``classes_`` and ``n_features_in_``."""
        return check_fit_input(self, X, y, sample_weight)

    def _bins(self, X, sample_weight, rng):
        """Binner fitted on the rows that count, and the binned training matrix."""
        binner = Binner(self.max_bins, random_state=rng.randint(2**31))
        bins = binner.fit(X[sample_weight > 0]).transform(X)
        return binner, bins

    @staticmethod
    def _rng(random_state) -> np.random.RandomState:
        if isinstance(random_state, np.random.RandomState):
            return np.random.RandomState(random_state.randint(2**31))
        return np.random.RandomState(random_state)

    def _set_model(self, trees: list[TreeArrays], leaf_scores: list[np.ndarray], depth: int,
                   stage_ends: list[int]) -> None:
        k = len(self.classes_)
        self.trees_ = TreeArrays.stack(trees, depth)
        self.leaf_scores_ = (np.stack(leaf_scores) if leaf_scores
                             else np.zeros((0, 2**depth, k)))
        self.stage_ends_ = np.asarray(stage_ends, dtype=np.int64)
        self.n_estimators_ = len(stage_ends)

    def _report(self, it: int, loss: float) -> None:
        if self.verbose and (it + 1) % int(self.verbose) == 0:
            import sys

            print(f"[{it + 1:5d}] train loss {loss:.6g}", file=sys.stderr)

    # --------------------------------------------------------------- prediction

    def _check_X(self, X) -> np.ndarray:
        check_is_fitted(self)
        return validate_data(self, X, dtype=np.float64, ensure_all_finite="allow-nan",
                             reset=False)

    def _staged_scores(self, X) -> Iterator[np.ndarray]:
        X = self._check_X(X)
        with numba_threads(self.n_jobs):
            leaves = self.trees_.leaves(X)
        scores = np.zeros((X.shape[0], len(self.classes_)))
        start = 0
        for end in self.stage_ends_:
            for t in range(start, int(end)):
                scores += self.leaf_scores_[t][leaves[:, t]]
            start = int(end)
            yield scores.copy()

    def _scores(self, X) -> np.ndarray:
        """Class scores ``S(x)``, shape (n_samples, n_classes)."""
        X = self._check_X(X)
        with numba_threads(self.n_jobs):
            leaves = self.trees_.leaves(X)
        scores = np.zeros((X.shape[0], len(self.classes_)))
        for t in range(leaves.shape[1]):
            scores += self.leaf_scores_[t][leaves[:, t]]
        return scores

    @staticmethod
    def _decision(scores: np.ndarray) -> np.ndarray:
        return scores[:, 1] - scores[:, 0] if scores.shape[1] == 2 else scores

    def decision_function(self, X) -> np.ndarray:
        """Class scores (n_samples, n_classes); for two classes ``S_1 - S_0``."""
        return self._decision(self._scores(X))

    def staged_decision_function(self, X) -> Iterator[np.ndarray]:
        for scores in self._staged_scores(X):
            yield self._decision(scores)

    def predict(self, X) -> np.ndarray:
        """``classes_[argmax_k S_k(x)]``."""
        scores = self._scores(X)
        return self.classes_[np.argmax(scores, axis=1)]

    def staged_predict(self, X) -> Iterator[np.ndarray]:
        for scores in self._staged_scores(X):
            yield self.classes_[np.argmax(scores, axis=1)]

    # --------------------------------------------------------------- model files

    _extra_arrays: tuple[str, ...] = ()  # fitted float arrays a subclass adds to the file

    def to_dict(self) -> dict:
        """JSON-ready description of the fitted model (the envelope of :mod:`rebelboost.io`)."""
        from ..io import header, trees_to_dict

        return {
            **header(self),
            "trees": trees_to_dict(self.trees_),
            "leaf_scores": self.leaf_scores_.tolist(),
            "stage_ends": self.stage_ends_.tolist(),
            "train_loss": np.asarray(self.train_loss_).tolist(),
            **{name: np.asarray(getattr(self, name + "_")).tolist()
               for name in self._extra_arrays},
        }

    @classmethod
    def from_dict(cls, doc: dict):
        """Rebuild a fitted estimator from :meth:`to_dict`'s output, checking it."""
        from ..io import check_header, model_from_header, trees_from_dict

        if check_header(doc) != cls.__name__:
            raise ValueError(f"model file holds a {doc['estimator']!r}, not a {cls.__name__}")
        try:
            model = model_from_header(cls, doc)
            model.trees_ = trees_from_dict(doc["trees"])
            n_trees, depth = len(model.trees_), model.trees_.depth
            feature = model.trees_.feature
            k = len(model.classes_)
            model.leaf_scores_ = np.array(doc["leaf_scores"], dtype=np.float64).reshape(
                n_trees, 2**depth, k)
            model.stage_ends_ = np.array(doc["stage_ends"], dtype=np.int64)
            model.n_estimators_ = len(model.stage_ends_)
            model.train_loss_ = np.array(doc["train_loss"], dtype=np.float64)
            for name in cls._extra_arrays:
                setattr(model, name + "_", np.array(doc[name], dtype=np.float64))
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise ValueError(
                f"corrupt rebelboost model file: {type(exc).__name__}: {exc}") from None
        problems = []
        d = model.n_features_in_
        if feature.size and (feature.max() >= d or feature.min() < -1):
            problems.append(f"split feature outside [-1, {d})")
        if not np.isfinite(model.leaf_scores_).all():
            problems.append("non-finite leaf scores")
        ends = model.stage_ends_
        if ends.size and (np.any(np.diff(ends) < 0) or ends[-1] != n_trees or ends[0] < 0):
            problems.append("stage_ends do not partition the trees")
        if k < 2:
            problems.append("fewer than 2 classes")
        if problems:
            raise ValueError("corrupt rebelboost model file: " + "; ".join(problems))
        return model

    def save(self, path) -> None:
        """Write the fitted model as JSON (gzip-compressed when the name ends in ``.gz``)."""
        from ..io import save_model

        save_model(self, path)

    @classmethod
    def load(cls, path):
        """Read a model file written by :meth:`save`."""
        from ..io import load_model

        model = load_model(path)
        if not isinstance(model, cls):
            raise ValueError(f"{path} holds a {type(model).__name__}, not a {cls.__name__}")
        return model
