"""Binary decision trees (stumps are depth 1) as weak learners ``f(x) in {-1, +1}``.

A depth-D tree is stored complete, in heap order: internal node ``i`` has children ``2i+1`` and
``2i+2``; the ``2**D`` leaves follow the ``2**D - 1`` internal nodes and hold a sign. A node
with ``feature == -1`` sends everything left (a layer that found nothing to split there), which
is also how the constant learner is written: all nodes pass, all leaves +1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np

from ..io import bool_array, corrupt, float_array, floats_to_json, int_array

SERIAL_ROWS = 64  # fewer rows than this are scored on the calling thread


@dataclass
class TreeArrays:
    """A stack of T trees of one depth, ready for vectorised prediction.

    As a learner kind (:mod:`rebelboost.learners`), a tree routes a row to the leaf it reaches
    (slot = leaf, weight 1); a model adds that leaf's class scores.
    """

    kind_name = "trees"
    weighted_output = False  # a leaf's output is its value; rows carry weight 1

    feature: np.ndarray  # (T, 2**D - 1) int32, -1 = pass left
    threshold: np.ndarray  # (T, 2**D - 1) float64, go left when x <= threshold
    missing_left: np.ndarray  # (T, 2**D - 1) bool, side of NaN
    leaf_value: np.ndarray  # (T, 2**D) float64, the learner's output in each leaf

    @property
    def depth(self) -> int:
        return int(np.log2(self.leaf_value.shape[1]))

    def __len__(self) -> int:
        return self.feature.shape[0]

    @property
    def n_slots(self) -> int:
        return self.leaf_value.shape[1]

    def route(self, X: np.ndarray) -> tuple[np.ndarray, None]:
        """(leaf of every row in every tree (n_samples, T), None: every weight is 1)."""
        return self.leaves(X), None

    def accumulate(self, X: np.ndarray, values: np.ndarray, out: np.ndarray) -> None:
        """``out += sum_t values[t, leaf_t(x)]``, tree by tree in order, for every row."""
        if len(self):
            kernel = _tree_scores if X.shape[0] >= SERIAL_ROWS else _tree_scores_serial
            kernel(np.ascontiguousarray(X, dtype=np.float64), self.feature, self.threshold,
                   self.missing_left, np.ascontiguousarray(values, dtype=np.float64), out)

    def rule(self, t: int, x: np.ndarray, names: list[str], classes) -> tuple[str, list[int]]:
        """The tests row ``x`` passes in tree ``t``, as text, and the features they read."""
        feature, threshold, missing_left = self.feature[t], self.threshold[t], self.missing_left[t]
        node, tests, used = 0, [], []
        while node < feature.shape[0]:
            f = int(feature[node])
            if f < 0:
                node = 2 * node + 1
                continue
            v = x[f]
            if np.isnan(v):
                left = bool(missing_left[node])
                tests.append(f"{names[f]} is missing")
            else:
                left = bool(v <= threshold[node])
                tests.append(f"{names[f]} {'<=' if left else '>'} {threshold[node]:.6g}")
            used.append(f)
            node = 2 * node + 1 if left else 2 * node + 2
        return (" and ".join(tests) if tests else "always (bias)"), used

    def regions(self, t: int, names: list[str], classes,
                output: Callable[[int], object] = int) -> list[tuple[str, object]]:
        """(tests in words, ``output(leaf)``) for the reachable regions of tree ``t``, left to
        right; sibling regions with equal outputs merge (a constant learner reads "always")."""
        feature, threshold, missing_left = self.feature[t], self.threshold[t], self.missing_left[t]
        n_internal = feature.shape[0]

        def walk(node: int, tests: list[str]) -> list[tuple[list[str], object]]:
            if node >= n_internal:
                return [(tests, output(node - n_internal))]
            f = int(feature[node])
            if f < 0:  # passes everything left
                return walk(2 * node + 1, tests)
            name, thr = names[f], f"{threshold[node]:.6g}"
            left = walk(2 * node + 1, [*tests, f"{name} <= {thr}"
                                       + (" (or missing)" if missing_left[node] else "")])
            right = walk(2 * node + 2, [*tests, f"{name} > {thr}"
                                        + ("" if missing_left[node] else " (or missing)")])
            if len(left) == len(right) == 1 and left[0][1] == right[0][1]:
                return [(tests, left[0][1])]
            return left + right

        return [(" and ".join(tests) if tests else "always", out) for tests, out in walk(0, [])]

    def features_used(self, t: int) -> np.ndarray:
        return self.feature[t][self.feature[t] >= 0]

    def slot_outputs(self) -> np.ndarray:
        """(T, 2**D): each leaf's output ``f_t``."""
        return self.leaf_value

    # ------------------------------------------------------------------ model files

    def to_dict(self) -> dict:
        return {
            "type": self.kind_name,
            "depth": self.depth,
            "feature": self.feature.tolist(),
            "threshold": floats_to_json(self.threshold),
            "missing_left": self.missing_left.tolist(),
            "leaf_value": self.leaf_value.tolist(),
        }

    @classmethod
    def from_dict(cls, doc: dict, n_features: int, n_classes: int) -> TreeArrays:
        """Rebuild and check a stack written by :meth:`to_dict` (ValueError if corrupt)."""
        depth = doc["depth"]
        if type(depth) is not int or not 1 <= depth <= 16:
            raise corrupt(f"tree depth {depth!r} is not an integer in [1, 16]")
        if not isinstance(doc["feature"], list):
            raise corrupt("trees' feature is not a list")
        n_trees = len(doc["feature"])
        shape = (n_trees, 2**depth - 1)
        feature = int_array(doc["feature"], shape, "split feature", -1, n_features)
        threshold = float_array(doc["threshold"], shape, "thresholds", null=np.inf)
        if np.isnan(threshold).any() or np.any(threshold == -np.inf):
            raise corrupt("NaN or -inf thresholds")
        missing_left = bool_array(doc["missing_left"], shape, "missing_left")
        leaf_value = float_array(doc["leaf_value"], (n_trees, 2**depth), "leaf values")
        if not np.isfinite(leaf_value).all():
            raise corrupt("non-finite leaf values")
        return cls(feature.astype(np.int32), threshold, missing_left, leaf_value)

    def outputs(self, X: np.ndarray) -> np.ndarray:
        """Learner outputs ``f_t(x)`` for every row and tree, shape (n_samples, T)."""
        return _tree_outputs(
            np.ascontiguousarray(X, dtype=np.float64),
            self.feature,
            self.threshold,
            self.missing_left,
            self.leaf_value,
        )

    def leaves(self, X: np.ndarray) -> np.ndarray:
        """Index of the leaf each row reaches in each tree, shape (n_samples, T)."""
        return _tree_leaves(
            np.ascontiguousarray(X, dtype=np.float64), self.feature, self.threshold,
            self.missing_left,
        )

    def take(self, index) -> TreeArrays:
        return TreeArrays(
            self.feature[index], self.threshold[index], self.missing_left[index],
            self.leaf_value[index],
        )

    @classmethod
    def empty(cls, depth: int) -> TreeArrays:
        n_internal = 2**depth - 1
        return cls(
            np.zeros((0, n_internal), np.int32),
            np.zeros((0, n_internal)),
            np.zeros((0, n_internal), bool),
            np.zeros((0, 2**depth)),
        )

    @classmethod
    def stack(cls, trees: list[TreeArrays], depth: int) -> TreeArrays:
        if not trees:
            return cls.empty(depth)
        return cls(*(np.concatenate(parts) for parts in zip(*(
            (t.feature, t.threshold, t.missing_left, t.leaf_value) for t in trees
        ), strict=True)))


def constant_tree(depth: int) -> TreeArrays:
    """The constant learner ``f(x) = +1`` written as a tree of the given depth."""
    n_internal = 2**depth - 1
    return TreeArrays(
        np.full((1, n_internal), -1, np.int32),
        np.zeros((1, n_internal)),
        np.zeros((1, n_internal), bool),
        np.ones((1, 2**depth)),
    )


@numba.njit(cache=True, nogil=True)
def _leaf_of(x, feature, threshold, missing_left):
    n_internal = feature.shape[0]
    node = 0
    while node < n_internal:
        f = feature[node]
        if f < 0:
            left = True
        else:
            v = x[f]
            left = missing_left[node] if np.isnan(v) else v <= threshold[node]
        node = 2 * node + 1 if left else 2 * node + 2
    return node - n_internal


@numba.njit(parallel=True, cache=True, nogil=True)
def _tree_leaves(X, feature, threshold, missing_left):
    n, n_trees = X.shape[0], feature.shape[0]
    out = np.empty((n, n_trees), dtype=np.int32)
    for i in numba.prange(n):
        for t in range(n_trees):
            out[i, t] = _leaf_of(X[i], feature[t], threshold[t], missing_left[t])
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _add_row_scores(x, feature, threshold, missing_left, values, acc):
    for t in range(feature.shape[0]):
        leaf = _leaf_of(x, feature[t], threshold[t], missing_left[t])
        for c in range(values.shape[2]):
            acc[c] += values[t, leaf, c]


@numba.njit(parallel=True, cache=True, nogil=True)
def _tree_scores(X, feature, threshold, missing_left, values, out):
    for i in numba.prange(X.shape[0]):
        _add_row_scores(X[i], feature, threshold, missing_left, values, out[i])


@numba.njit(cache=True, nogil=True)
def _tree_scores_serial(X, feature, threshold, missing_left, values, out):
    """:func:`_tree_scores` on the calling thread: a few rows do not pay for waking the
    thread pool, which on a busy machine can take milliseconds."""
    for i in range(X.shape[0]):
        _add_row_scores(X[i], feature, threshold, missing_left, values, out[i])


@numba.njit(parallel=True, cache=True, nogil=True)
def _tree_outputs(X, feature, threshold, missing_left, leaf_value):
    n, n_trees = X.shape[0], feature.shape[0]
    out = np.empty((n, n_trees))
    for i in numba.prange(n):
        for t in range(n_trees):
            out[i, t] = leaf_value[t, _leaf_of(X[i], feature[t], threshold[t], missing_left[t])]
    return out
