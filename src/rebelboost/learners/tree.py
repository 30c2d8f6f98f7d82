"""Binary decision trees (stumps are depth 1) as weak learners ``f(x) in {-1, +1}``.

A depth-D tree is stored complete, in heap order: internal node ``i`` has children ``2i+1`` and
``2i+2``; the ``2**D`` leaves follow the ``2**D - 1`` internal nodes and hold a sign. A node
with ``feature == -1`` sends everything left (a layer that found nothing to split there), which
is also how the constant learner is written: all nodes pass, all leaves +1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np


@dataclass
class TreeArrays:
    """A stack of T trees of one depth, ready for vectorised prediction."""

    feature: np.ndarray  # (T, 2**D - 1) int32, -1 = pass left
    threshold: np.ndarray  # (T, 2**D - 1) float64, go left when x <= threshold
    missing_left: np.ndarray  # (T, 2**D - 1) bool, side of NaN
    leaf_value: np.ndarray  # (T, 2**D) float64, the learner's output in each leaf

    @property
    def depth(self) -> int:
        return int(np.log2(self.leaf_value.shape[1]))

    def __len__(self) -> int:
        return self.feature.shape[0]

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


@numba.njit(parallel=True, cache=True, nogil=True)
def _tree_outputs(X, feature, threshold, missing_left, leaf_value):
    n, n_trees = X.shape[0], feature.shape[0]
    out = np.empty((n, n_trees))
    for i in numba.prange(n):
        for t in range(n_trees):
            out[i, t] = leaf_value[t, _leaf_of(X[i], feature[t], threshold[t], missing_left[t])]
    return out
