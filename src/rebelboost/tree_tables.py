"""A tree model as plain node tables, the form TreeSHAP, shap and ONNX read.

Both tree kinds (:mod:`rebelboost.learners.tree`, complete heap trees, and
:mod:`rebelboost.learners.leaf_tree`, leaf-wise trees) are written with explicit children
(``child >= 0``: an internal node, ``child < 0``: leaf ``~child``). Nodes that send every row
left (a pass node, ``feature == -1``, or the always-true test ``x <= inf`` with missing values
left) are not splits: every child pointer skips them, so the tables hold only real splits and a
tree without any has its root at a leaf. ``cover`` is the training weight reaching each node
(the sum over the leaves below it of the weight the model stored for each leaf).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from .engine.early_exit import explicit_trees
from .engine.model import AdditiveModel
from .exact_sums import accumulator, rounded, sum_by_slot
from .explain import ContributionsUnavailable
from .learners.leaf_tree import LeafTreeArrays
from .learners.tree import TreeArrays


@dataclass
class TreeTables:
    """T trees of at most M internal nodes and L leaves, with the model's leaf values."""

    feature: np.ndarray  # (T, M) int32
    threshold: np.ndarray  # (T, M) float64: x <= threshold goes left
    missing_left: np.ndarray  # (T, M) bool: NaN goes left
    left: np.ndarray  # (T, M) int32: split children (pass nodes skipped); < 0: leaf ~child
    right: np.ndarray  # (T, M) int32
    root: np.ndarray  # (T,) int32: first split, or ~leaf for a tree without splits
    values: np.ndarray  # (T, L, K) float64: each leaf's class scores
    cover: np.ndarray | None  # (T, M) float64 internal nodes' training weight (None: unknown)
    leaf_cover: np.ndarray | None  # (T, L) float64
    # (T, M, W) uint64 or None: categorical nodes' sets of codes going left (such a node's
    # threshold is NaN; :mod:`rebelboost.learners.category_sets`)
    category_words: np.ndarray | None = None

    @property
    def n_trees(self) -> int:
        return self.feature.shape[0]

    def depth(self) -> int:
        """The most splits on any root-to-leaf path."""
        return int(self.depths().max()) if self.n_trees else 0

    def depths(self) -> np.ndarray:
        """(T,) each tree's levels of splits: the most splits on its root-to-leaf paths."""
        return _depths(self.left, self.right, self.root)


def tree_tables(model: AdditiveModel, need_cover: bool = True) -> TreeTables:
    """The node tables of a tree model (``need_cover``: refuse a model without covers)."""
    learners = model.learners
    if not isinstance(learners, (TreeArrays, LeafTreeArrays)):
        raise ContributionsUnavailable(
            f"this model's weak learners are {learners.kind_name}: a localized similarity "
            "compares the whole row with one or two training rows (a distance over all "
            "features at once), so its output has no exact split into per-feature parts; "
            "only tree and stump models have exact contributions (explain() lists each "
            "learner's term instead)")
    if need_cover and model.covers is None:
        raise ContributionsUnavailable(
            "this model holds no training covers (the weight of training rows reaching each "
            "leaf), which exact path-dependent contributions need: it was loaded from a model "
            "file written before format 3; refit it with this version of rebelboost")
    feature, threshold, missing_left, left, right = explicit_trees(learners)
    passes = (feature < 0) | ((threshold == np.inf) & missing_left)
    eff_left, eff_right, root = _skip_passes(passes, left, right)
    values = np.ascontiguousarray(model.values, dtype=np.float64)
    cover = leaf_cover = None
    if model.covers is not None:
        leaf_cover = np.ascontiguousarray(model.covers, dtype=np.float64)
        cover = _node_cover(eff_left, eff_right, leaf_cover)
    return TreeTables(np.ascontiguousarray(feature, dtype=np.int32),
                      np.ascontiguousarray(threshold, dtype=np.float64),
                      np.ascontiguousarray(missing_left, dtype=np.bool_),
                      eff_left, eff_right, root, values, cover, leaf_cover,
                      getattr(learners, "category_words", None))


def leaf_covers(learners, X: np.ndarray, sample_weight: np.ndarray,
                block_cells: int = 1 << 16, exact: bool = False) -> np.ndarray | None:
    """(T, n_slots): the training weight reaching each leaf of each tree (None for learners
    that are not trees). Rows are routed in blocks of about ``block_cells`` values of X (and
    of leaf indices), each row's weight added to its leaves in row order (``exact``: exact
    sums rounded once, :mod:`.exact_sums`): at the end of a fit this was the peak of
    memory (blocks of 16,384 rows: 98 MiB of float64 X on MNIST's 784 features, 40 MiB of
    leaf indices and weights at 100 trees on shuttle)."""
    if not isinstance(learners, (TreeArrays, LeafTreeArrays)):
        return None
    n_trees, n_slots = len(learners), learners.n_slots
    block_rows = max(64, block_cells // max(1, X.shape[1], n_trees))
    cover = accumulator(n_trees, n_slots) if exact else np.zeros((n_trees, n_slots))
    weight = np.ascontiguousarray(sample_weight, dtype=np.float64)
    add = sum_by_slot if exact else _add_covers
    for b0 in range(0, X.shape[0], block_rows):
        add(learners.leaves(X[b0:b0 + block_rows]), weight[b0:b0 + block_rows], cover)
    return rounded(cover) if exact else cover


def stage_covers(slot_of_row: np.ndarray, weight: np.ndarray, n_slots: int) -> np.ndarray:
    """(1, n_slots): one tree's :func:`leaf_covers` from each training row's slot as
    training routed it (the same sums, added in the same row order), without routing the
    rows through the tree again."""
    cover = np.zeros((1, n_slots))
    _add_covers(slot_of_row.reshape(-1, 1), weight, cover)
    return cover


@numba.njit(cache=True, nogil=True)
def _add_covers(leaves, weight, cover):
    for i in range(leaves.shape[0]):
        for t in range(leaves.shape[1]):
            cover[t, leaves[i, t]] += weight[i]


@numba.njit(cache=True)
def _skip_passes(passes, left, right):
    n_trees, m = passes.shape
    eff_left = np.empty((n_trees, m), np.int32)
    eff_right = np.empty((n_trees, m), np.int32)
    root = np.empty(n_trees, np.int32)
    for t in range(n_trees):
        for node in range(m):
            eff_left[t, node] = _skip(passes[t], left[t], left[t, node])
            eff_right[t, node] = _skip(passes[t], left[t], right[t, node])
        root[t] = _skip(passes[t], left[t], 0)
    return eff_left, eff_right, root


@numba.njit(cache=True, inline="always")
def _skip(passes, left, child):
    while child >= 0 and passes[child]:
        child = left[child]
    return child


@numba.njit(cache=True)
def _node_cover(left, right, leaf_cover):
    """Internal nodes' cover, children before parents (a child's index exceeds its parent's)."""
    n_trees, m = left.shape
    cover = np.zeros((n_trees, m))
    for t in range(n_trees):
        for node in range(m - 1, -1, -1):
            total = 0.0
            for child in (left[t, node], right[t, node]):
                total += cover[t, child] if child >= 0 else leaf_cover[t, ~child]
            cover[t, node] = total
    return cover


@numba.njit(cache=True)
def _depths(left, right, root):
    n_trees, m = left.shape
    deepest = np.zeros(n_trees, np.int64)
    depth = np.zeros(max(m, 1), np.int64)
    for t in range(n_trees):
        if root[t] < 0:
            continue
        depth[:] = 0
        depth[root[t]] = 1
        for node in range(m):  # parents before children
            if depth[node] == 0:
                continue
            deepest[t] = max(deepest[t], depth[node])
            for child in (left[t, node], right[t, node]):
                if child >= 0:
                    depth[child] = depth[node] + 1
    return deepest
