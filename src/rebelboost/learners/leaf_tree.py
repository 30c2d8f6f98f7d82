"""Trees of any shape with explicit children (grown leaf by leaf), as a learner kind.

A leaf-wise tree with ``L`` leaves need not be complete or shallow, so it is stored the way
LightGBM stores its trees: ``L - 1`` internal nodes, each with a test and two children; a child
``>= 0`` is an internal node, a child ``< 0`` is leaf ``~child``. Every tree of a stack is
padded to ``max_leaves - 1`` nodes (unused nodes never reached). A child's index is always
larger than its parent's, so routing ends after at most ``max_leaves - 1`` tests, even on a
corrupt file (which :meth:`LeafTreeArrays.from_dict` refuses anyway). A tree without splits is
node 0 with ``feature == -1`` sending every row to leaf 0.

A leaf routes its rows to one slot (weight 1); the model's ``values[t, leaf]`` holds the leaf's
class scores (a vector-leaf REBEL tree: each leaf its own K-vector).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np

from ..io import bool_array, corrupt, float_array, floats_to_json, int_array
from .category_sets import (
    category_tree_leaves,
    category_tree_scores,
    level_text,
    listed_sets,
    read_category_sets,
    set_codes,
)
from .tree import SERIAL_ROWS
from .walk import in_set, tree_walk, value_goes_left


@dataclass
class LeafTreeArrays:
    """A stack of T trees with at most ``max_leaves`` leaves each (see the module docstring)."""

    kind_name = "leaf_trees"
    weighted_output = False  # a leaf's output is its value; rows carry weight 1

    feature: np.ndarray  # (T, M) int32, -1: send every row left (only node 0 of a stump-less tree)
    threshold: np.ndarray  # (T, M) float64, go left when x <= threshold
    missing_left: np.ndarray  # (T, M) bool, side of NaN
    left: np.ndarray  # (T, M) int32, child: >= 0 internal node, < 0 leaf ~child
    right: np.ndarray  # (T, M) int32
    # (T, M, W) uint64 or None: a categorical node's set of codes going left, as a bitset;
    # such a node's threshold is NaN (see the module docstring)
    category_words: np.ndarray | None = None

    def __len__(self) -> int:
        return self.feature.shape[0]

    @property
    def max_leaves(self) -> int:
        return self.feature.shape[1] + 1

    @property
    def n_slots(self) -> int:
        return self.max_leaves

    def _arrays(self):
        return self.feature, self.threshold, self.missing_left, self.left, self.right

    def leaves(self, X: np.ndarray) -> np.ndarray:
        """Index of the leaf each row reaches in each tree, shape (n_samples, T)."""
        X = np.ascontiguousarray(X, dtype=np.float64)
        if self.category_words is not None:
            return category_tree_leaves(X, *self._arrays(), self.category_words)
        return _leaf_tree_leaves(X, *self._arrays())

    def route(self, X: np.ndarray) -> tuple[np.ndarray, None]:
        """(leaf of every row in every tree (n_samples, T), None: every weight is 1)."""
        return self.leaves(X), None

    def accumulate(self, X: np.ndarray, values: np.ndarray, out: np.ndarray) -> None:
        """``out += sum_t values[t, leaf_t(x)]``, tree by tree in order, for every row."""
        if not len(self):
            return
        X = np.ascontiguousarray(X, dtype=np.float64)
        values = np.ascontiguousarray(values, dtype=np.float64)
        if self.category_words is not None:
            category_tree_scores(X, *self._arrays(), self.category_words, values, out)
            return
        kernel = _leaf_tree_scores if X.shape[0] >= SERIAL_ROWS else _leaf_tree_scores_serial
        kernel(X, *self._arrays(), values, out)

    def goes_left(self, t: int, node: int, v: float) -> bool:
        """The side a raw value takes at a node (NaN: the node's missing side)."""
        if np.isnan(v):
            return bool(self.missing_left[t, node])
        thr = self.threshold[t, node]
        if np.isnan(thr):
            return bool(in_set(self.category_words[t, node], v))
        return bool(v <= thr)

    def category_codes(self, t: int, node: int) -> np.ndarray:
        """The codes a categorical node sends left."""
        return set_codes(self.category_words[t, node])

    def slot_outputs(self) -> np.ndarray:
        """(T, max_leaves) ones: a leaf adds its own class-score vector."""
        return np.ones((len(self), self.max_leaves))

    def _walk(self, t: int, x: np.ndarray):
        """(node, went left) pairs of row ``x``'s path in tree ``t``, and its leaf."""
        feature = self.feature[t]
        node, path = 0, []
        while True:
            f = int(feature[node])
            if f < 0:
                go_left = True
            else:
                go_left = self.goes_left(t, node, x[f])
                path.append((node, go_left))
            child = int(self.left[t, node] if go_left else self.right[t, node])
            if child < 0:
                return path, ~child
            node = child

    def rule(self, t: int, x: np.ndarray, names: list[str], classes,
             categories: list | None = None) -> tuple[str, list[int]]:
        """The tests row ``x`` passes in tree ``t``, as text (one per feature: a deep path
        often tests a feature twice), and the features they read; ``categories`` (per
        feature: its values, or None) names a categorical feature's codes."""
        path, _ = self._walk(t, x)
        bounds: dict[int, list] = {}  # feature -> [lower (>), upper (<=)], in path order
        for node, go_left in path:
            f = int(self.feature[t, node])
            if np.isnan(self.threshold[t, node]):  # categorical: the value itself is the test
                bounds.setdefault(f, [-np.inf, np.inf])
                continue
            low, high = bounds.setdefault(f, [-np.inf, np.inf])
            thr = float(self.threshold[t, node])
            bounds[f] = [low, min(high, thr)] if go_left else [max(low, thr), high]
        tests = []
        categorical = {int(self.feature[t, n]) for n, _ in path if np.isnan(self.threshold[t, n])}
        for f, (low, high) in bounds.items():  # tests on one feature merged into one
            if np.isnan(x[f]):
                tests.append(f"{names[f]} is missing")
            elif f in categorical:
                tests.append(f"{names[f]} = {level_text(categories, f, int(x[f]))}")
            elif low > -np.inf and high < np.inf:
                tests.append(f"{low:.6g} < {names[f]} <= {high:.6g}")
            else:
                tests.append(f"{names[f]} > {low:.6g}" if low > -np.inf
                             else f"{names[f]} <= {high:.6g}")
        return (" and ".join(tests) if tests else "always (bias)"), list(bounds)

    def regions(self, t: int, names: list[str], classes,
                output: Callable[[int], object] = int,
                categories: list | None = None) -> list[tuple[str, object]]:
        """(tests in words, ``output(leaf)``) for the leaves of tree ``t``, left to right;
        sibling leaves with equal outputs merge (a tree of equal leaves reads "always")."""
        feature, threshold, missing_left = self.feature[t], self.threshold[t], self.missing_left[t]

        def walk(child: int, tests: list[str]) -> list[tuple[list[str], object]]:
            if child < 0:
                return [(tests, output(~child))]
            f = int(feature[child])
            if f < 0:
                return walk(int(self.left[t, child]), tests)
            name, thr = names[f], f"{threshold[child]:.6g}"
            miss = bool(missing_left[child])
            if np.isnan(threshold[child]):
                levels = ", ".join(level_text(categories, f, c)
                                   for c in self.category_codes(t, child))
                yes, no = f"{name} in {{{levels}}}", f"{name} not in {{{levels}}}"
            else:
                yes, no = f"{name} <= {thr}", f"{name} > {thr}"
            left = walk(int(self.left[t, child]),
                        [*tests, yes + (" (or missing)" if miss else "")])
            right = walk(int(self.right[t, child]),
                         [*tests, no + ("" if miss else " (or missing)")])
            if len(left) == len(right) == 1 and _same(left[0][1], right[0][1]):
                return [(tests, left[0][1])]
            return left + right

        return [(" and ".join(tests) if tests else "always", out) for tests, out in walk(0, [])]

    def features_used(self, t: int) -> np.ndarray:
        return self.feature[t][self.feature[t] >= 0]

    def take(self, index) -> LeafTreeArrays:
        words = self.category_words
        return LeafTreeArrays(*(a[index] for a in self._arrays()),
                              category_words=None if words is None else words[index])

    @classmethod
    def empty(cls, max_leaves: int) -> LeafTreeArrays:
        m = max_leaves - 1
        return cls(np.zeros((0, m), np.int32), np.zeros((0, m)), np.zeros((0, m), bool),
                   np.zeros((0, m), np.int32), np.zeros((0, m), np.int32))

    @classmethod
    def stack(cls, trees: list[LeafTreeArrays], max_leaves: int) -> LeafTreeArrays:
        if not trees:
            return cls.empty(max_leaves)
        width = max((t.category_words.shape[2] for t in trees
                     if t.category_words is not None), default=0)
        words = None
        if width:
            words = np.zeros((sum(len(t) for t in trees), max_leaves - 1, width), np.uint64)
            at = 0
            for t in trees:
                if t.category_words is not None:
                    words[at:at + len(t), :, :t.category_words.shape[2]] = t.category_words
                at += len(t)
        return cls(*(np.concatenate(parts) for parts in zip(*(t._arrays() for t in trees),
                                                              strict=True)),
                   category_words=words)

    # ------------------------------------------------------------------ model files

    def to_dict(self) -> dict:
        categorical = np.isnan(self.threshold)
        doc = {
            "type": self.kind_name,
            "max_leaves": self.max_leaves,
            "feature": self.feature.tolist(),
            "threshold": floats_to_json(np.where(categorical, 0.0, self.threshold)),
            "missing_left": self.missing_left.tolist(),
            "left": self.left.tolist(),
            "right": self.right.tolist(),
        }
        if self.category_words is not None:  # per node: the codes going left, or null
            doc["category_sets"] = [
                [self.category_codes(t, node).tolist() if categorical[t, node] else None
                 for node in range(self.threshold.shape[1])] for t in range(len(self))]
        return doc

    @classmethod
    def from_dict(cls, doc: dict, n_features: int, n_classes: int) -> LeafTreeArrays:
        """Rebuild and check a stack written by :meth:`to_dict` (ValueError if corrupt)."""
        max_leaves = doc["max_leaves"]
        if type(max_leaves) is not int or not 2 <= max_leaves <= 1 << 16:
            raise corrupt(f"max_leaves {max_leaves!r} is not an integer in [2, 65536]")
        if not isinstance(doc["feature"], list):
            raise corrupt("trees' feature is not a list")
        shape = (len(doc["feature"]), max_leaves - 1)
        feature = int_array(doc["feature"], shape, "split feature", -1, n_features)
        threshold = float_array(doc["threshold"], shape, "thresholds", null=np.inf)
        if np.isnan(threshold).any() or np.any(threshold == -np.inf):
            raise corrupt("NaN or -inf thresholds")
        missing_left = bool_array(doc["missing_left"], shape, "missing_left")
        left = int_array(doc["left"], shape, "left children", -max_leaves, max_leaves - 1)
        right = int_array(doc["right"], shape, "right children", -max_leaves, max_leaves - 1)
        node = np.arange(shape[1])
        if np.any((left >= 0) & (left <= node)) or np.any((right >= 0) & (right <= node)):
            raise corrupt("a tree node's child does not come after it")
        words = None
        if "category_sets" in doc:
            words = read_category_sets(doc["category_sets"], shape, feature)
            threshold[words.any(axis=2) | listed_sets(doc["category_sets"], shape)] = np.nan
        return cls(feature.astype(np.int32), threshold, missing_left, left.astype(np.int32),
                   right.astype(np.int32), category_words=words)


def _same(a, b) -> bool:
    return bool(np.array_equal(a, b)) if isinstance(a, np.ndarray) else a == b


def constant_leaf_tree(max_leaves: int) -> LeafTreeArrays:
    """A tree without splits: every row reaches leaf 0 (every node sends its rows there)."""
    m = max_leaves - 1
    left = np.full((1, m), -1, np.int32)  # ~0: leaf 0
    return LeafTreeArrays(np.full((1, m), -1, np.int32), np.zeros((1, m)),
                          np.zeros((1, m), bool), left, left.copy())


_walk_values = tree_walk(value_goes_left)


@numba.njit(cache=True, nogil=True, inline="always")
def leaf_of(x, feature, threshold, missing_left, left, right):
    """The leaf row ``x`` (raw values) reaches in one tree."""
    return _walk_values(x, feature, threshold, missing_left, left, right, 0)


@numba.njit(parallel=True, cache=True, nogil=True)
def _leaf_tree_leaves(X, feature, threshold, missing_left, left, right):
    n, n_trees = X.shape[0], feature.shape[0]
    out = np.empty((n, n_trees), dtype=np.int32)
    for i in numba.prange(n):
        for t in range(n_trees):
            out[i, t] = leaf_of(X[i], feature[t], threshold[t], missing_left[t], left[t],
                                right[t])
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _add_row(x, feature, threshold, missing_left, left, right, values, acc):
    for t in range(feature.shape[0]):
        leaf = leaf_of(x, feature[t], threshold[t], missing_left[t], left[t], right[t])
        for c in range(values.shape[2]):
            acc[c] += values[t, leaf, c]


@numba.njit(parallel=True, cache=True, nogil=True)
def _leaf_tree_scores(X, feature, threshold, missing_left, left, right, values, out):
    for i in numba.prange(X.shape[0]):
        _add_row(X[i], feature, threshold, missing_left, left, right, values, out[i])


@numba.njit(cache=True, nogil=True)
def _leaf_tree_scores_serial(X, feature, threshold, missing_left, left, right, values, out):
    """:func:`_leaf_tree_scores` on the calling thread (a few rows: no thread-pool wake-up)."""
    for i in range(X.shape[0]):
        _add_row(X[i], feature, threshold, missing_left, left, right, values, out[i])
