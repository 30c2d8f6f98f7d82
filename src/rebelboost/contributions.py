"""Exact per-feature contributions of a tree model: path-dependent TreeSHAP.

For one row ``x`` and class ``k`` the Shapley value of feature ``i`` under the value function
``v(S) = E[H_k(x) | x_S]`` (the expectation over the training rows' paths: at a split on a
feature outside ``S`` both children are followed, weighted by the training weight that reached
them, the *cover*) is computed exactly in polynomial time by Lundberg et al.'s Algorithm 2
(Nature Machine Intelligence 2020). Every leaf of a vector-leaf tree holds all K class scores
and the path weights do not depend on the leaf value, so one walk per tree yields the
contributions to every class (LightGBM and XGBoost walk K trees per round).

The result has shape ``(n, d + 1, K)``: feature contributions, then the bias ``E[H(x)]`` (the
cover-weighted mean score); each row sums to its class scores ``H(x)``. A split node whose
training cover is zero (no training row reached it) splits its expectation evenly between its
children (the value function is otherwise undefined there); a child no training row and not
``x`` reaches adds exactly zero and is not walked.
"""

from __future__ import annotations

import numba
import numpy as np

from .engine.model import AdditiveModel
from .explain import ContributionsUnavailable
from .learners.walk import category_goes_left
from .tree_tables import TreeTables, tree_tables

__all__ = ["ContributionsUnavailable", "contributions", "expected_scores"]


def contributions(model: AdditiveModel, X: np.ndarray) -> np.ndarray:
    """(n_samples, n_features + 1, K) exact contributions of ``model`` for the rows of ``X``
    (float64, NaN allowed), the bias last; raises :class:`ContributionsUnavailable` for a
    model without exact contributions."""
    tables = tree_tables(model)
    X = np.ascontiguousarray(X, dtype=np.float64)
    n, d = X.shape
    out = np.zeros((n, d + 1, model.n_classes))
    out[:, d, :] = expected_scores(tables).sum(axis=0)
    if tables.n_trees and n:
        chunks = max(1, min(n, 4 * numba.get_num_threads()))
        words = tables.category_words
        if words is None:  # every node numeric
            words = np.zeros(tables.feature.shape + (1,), np.uint64)
        _tree_shap(X, tables.feature, tables.threshold, tables.missing_left, tables.left,
                   tables.right, tables.root, tables.cover, tables.leaf_cover, tables.values,
                   tables.depth(), chunks, out, words)
    return out


def expected_scores(tables: TreeTables) -> np.ndarray:
    """(T, K): each tree's cover-weighted mean class scores, ``E[h_t(x)]``."""
    return _expected(tables.left, tables.right, tables.root, tables.cover, tables.leaf_cover,
                     tables.values)


@numba.njit(cache=True, inline="always")
def _child_cover(t, child, cover, leaf_cover):
    return cover[t, child] if child >= 0 else leaf_cover[t, ~child]


@numba.njit(cache=True, inline="always")
def _fraction(part, whole):
    """The share of a node's cover its child takes (even halves under a zero cover)."""
    return part / whole if whole > 0.0 else 0.5


@numba.njit(cache=True)
def _expected(left, right, root, cover, leaf_cover, values):
    n_trees, m = left.shape
    out = np.zeros((n_trees, values.shape[2]))
    reach = np.zeros(max(m, 1))
    for t in range(n_trees):
        if root[t] < 0:
            out[t] = values[t, ~root[t]]
            continue
        reach[:] = 0.0
        reach[root[t]] = 1.0
        for node in range(m):  # parents before children
            if reach[node] == 0.0:
                continue
            whole = cover[t, node]
            for child in (left[t, node], right[t, node]):
                share = reach[node] * _fraction(_child_cover(t, child, cover, leaf_cover), whole)
                if child >= 0:
                    reach[child] += share
                else:
                    out[t] += share * values[t, ~child]
    return out


@numba.njit(parallel=True, cache=True, nogil=True)
def _tree_shap(X, feature, threshold, missing_left, left, right, root, cover, leaf_cover,
               values, depth, chunks, out, words):
    n = X.shape[0]
    size = depth + 2
    for c in numba.prange(chunks):
        # path buffers by level (nodes on the path), each holding up to `size` elements
        p_feature = np.empty((size, size), np.int64)
        p_zero = np.empty((size, size))
        p_one = np.empty((size, size))
        p_weight = np.empty((size, size))
        s_node = np.empty(size + 1, np.int64)  # stack of (node, level, unique depth, ...)
        s_level = np.empty(size + 1, np.int64)
        s_unique = np.empty(size + 1, np.int64)
        s_zero = np.empty(size + 1)
        s_one = np.empty(size + 1)
        s_feature = np.empty(size + 1, np.int64)
        for i in range(c * n // chunks, (c + 1) * n // chunks):
            x, phi = X[i], out[i]
            for t in range(feature.shape[0]):
                if root[t] < 0:
                    continue  # a tree without splits only moves the bias
                s_node[0], s_level[0], s_unique[0] = root[t], 0, 0
                s_zero[0], s_one[0], s_feature[0] = 1.0, 1.0, -1
                top = 1
                while top > 0:
                    top -= 1
                    node, level, ud = s_node[top], s_level[top], s_unique[top]
                    if level > 0:  # the parent's path, then this node's element
                        for e in range(ud):
                            p_feature[level, e] = p_feature[level - 1, e]
                            p_zero[level, e] = p_zero[level - 1, e]
                            p_one[level, e] = p_one[level - 1, e]
                            p_weight[level, e] = p_weight[level - 1, e]
                    _extend(p_feature[level], p_zero[level], p_one[level], p_weight[level],
                            ud, s_zero[top], s_one[top], s_feature[top])
                    if node < 0:
                        leaf = ~node
                        for e in range(1, ud + 1):
                            w = _unwound_sum(p_zero[level], p_one[level], p_weight[level], ud, e)
                            scale = w * (p_one[level, e] - p_zero[level, e])
                            f = p_feature[level, e]
                            for k in range(values.shape[2]):
                                phi[f, k] += scale * values[t, leaf, k]
                        continue
                    f = feature[t, node]
                    go_left = category_goes_left(x[f], node, missing_left[t, node],
                                                 (threshold[t], words[t]))
                    hot = left[t, node] if go_left else right[t, node]
                    cold = right[t, node] if go_left else left[t, node]
                    whole = cover[t, node]
                    hot_zero = _fraction(_child_cover(t, hot, cover, leaf_cover), whole)
                    cold_zero = _fraction(_child_cover(t, cold, cover, leaf_cover), whole)
                    in_zero, in_one = 1.0, 1.0
                    next_ud = ud + 1
                    for e in range(1, ud + 1):  # a feature met before on the path: undo it
                        if p_feature[level, e] == f:
                            in_zero, in_one = p_zero[level, e], p_one[level, e]
                            _unwind(p_feature[level], p_zero[level], p_one[level],
                                    p_weight[level], ud, e)
                            next_ud = ud
                            break
                    if cold_zero * in_zero != 0.0:  # else it adds exactly zero
                        s_node[top], s_level[top], s_unique[top] = cold, level + 1, next_ud
                        s_zero[top], s_one[top], s_feature[top] = cold_zero * in_zero, 0.0, f
                        top += 1
                    if hot_zero * in_zero != 0.0 or in_one != 0.0:
                        s_node[top], s_level[top], s_unique[top] = hot, level + 1, next_ud
                        s_zero[top], s_one[top], s_feature[top] = hot_zero * in_zero, in_one, f
                        top += 1


@numba.njit(cache=True, nogil=True, inline="always")
def _extend(feature, zero, one, weight, ud, zero_fraction, one_fraction, feature_index):
    feature[ud], zero[ud], one[ud] = feature_index, zero_fraction, one_fraction
    weight[ud] = 1.0 if ud == 0 else 0.0
    for i in range(ud - 1, -1, -1):
        weight[i + 1] += one_fraction * weight[i] * (i + 1) / (ud + 1)
        weight[i] = zero_fraction * weight[i] * (ud - i) / (ud + 1)


@numba.njit(cache=True, nogil=True, inline="always")
def _unwind(feature, zero, one, weight, ud, index):
    one_fraction, zero_fraction = one[index], zero[index]
    next_one = weight[ud]
    for i in range(ud - 1, -1, -1):
        if one_fraction != 0.0:
            tmp = weight[i]
            weight[i] = next_one * (ud + 1) / ((i + 1) * one_fraction)
            next_one = tmp - weight[i] * zero_fraction * (ud - i) / (ud + 1)
        else:
            weight[i] = weight[i] * (ud + 1) / (zero_fraction * (ud - i))
    for i in range(index, ud):
        feature[i], zero[i], one[i] = feature[i + 1], zero[i + 1], one[i + 1]


@numba.njit(cache=True, nogil=True, inline="always")
def _unwound_sum(zero, one, weight, ud, index):
    one_fraction, zero_fraction = one[index], zero[index]
    next_one = weight[ud]
    total = 0.0
    for i in range(ud - 1, -1, -1):
        if one_fraction != 0.0:
            tmp = next_one * (ud + 1) / ((i + 1) * one_fraction)
            total += tmp
            next_one = weight[i] - tmp * zero_fraction * (ud - i) / (ud + 1)
        else:
            total += weight[i] / (zero_fraction * (ud - i) / (ud + 1))
    return total
