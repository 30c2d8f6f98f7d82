"""Categorical nodes of leaf-wise trees: sets of category codes as bitsets.

A categorical node sends a row left when its code (the index of its value among the
feature's sorted training values, :mod:`rebelboost.categorical`) is in the node's set, and a
missing or unseen value (NaN) to the node's missing side. In memory a stack's sets are
``(T, M, W)`` uint64 bitsets and the node's threshold is NaN; in model files, per node, the
list of codes going left (null for a numeric node).
"""

from __future__ import annotations

import numba
import numpy as np

from ..io import corrupt
from .walk import category_goes_left, tree_walk


def category_bitsets(sets: list[np.ndarray | None]) -> np.ndarray:
    """(len(sets), W) uint64 bitsets of code sets (None: an empty row)."""
    sets = [np.asarray(c, dtype=np.int64) if c is not None else np.empty(0, np.int64)
            for c in sets]
    top = max((int(c.max()) + 1 for c in sets if len(c)), default=1)
    bits = np.zeros((len(sets), top), dtype=bool)
    bits[np.repeat(np.arange(len(sets)), [len(c) for c in sets]),
         np.concatenate(sets) if sets else np.empty(0, np.int64)] = True
    return masks_to_bitsets(bits)


def masks_to_bitsets(masks: np.ndarray) -> np.ndarray:
    """(N, W) uint64 bitsets of (N, codes) masks (entry c of a row: code c in the set); W
    words cover the largest code in any set (one word where every set is empty)."""
    held = np.flatnonzero(masks.any(axis=0))
    top = int(held[-1]) + 1 if len(held) else 1
    width = (top + 63) // 64
    bits = np.zeros((masks.shape[0], width * 64), dtype=bool)
    bits[:, :masks.shape[1]] = masks[:, :width * 64]
    # (bit j of word w: code 64 w + j, as little-endian bytes of little-endian bits)
    words = np.packbits(bits, axis=1, bitorder="little").view("<u8")
    return words.astype(np.uint64, copy=False).reshape(masks.shape[0], width)


def set_codes(words: np.ndarray) -> np.ndarray:
    """The codes in one bitset (a node's W uint64 words), ascending."""
    bits = np.unpackbits(np.ascontiguousarray(words, np.uint64).view(np.uint8),
                         bitorder="little")
    return np.flatnonzero(bits)


def listed_sets(sets, shape) -> np.ndarray:
    return np.array([[c is not None for c in tree] for tree in sets], dtype=bool).reshape(shape)


def read_category_sets(sets, shape, feature) -> np.ndarray:
    """Checked bitsets of a file's ``category_sets`` (T x M lists of codes or null)."""
    if (not isinstance(sets, list) or len(sets) != shape[0]
            or not all(isinstance(tree, list) and len(tree) == shape[1] for tree in sets)):
        raise corrupt(f"category_sets must be {shape[0]} lists of {shape[1]} entries")
    flat = []
    for t, tree in enumerate(sets):
        for node, codes in enumerate(tree):
            if codes is None:
                flat.append(None)
                continue
            if (not isinstance(codes, list) or not all(type(c) is int and 0 <= c < 1 << 24
                                                       for c in codes)
                    or len(set(codes)) != len(codes)):
                raise corrupt(f"category set of tree {t} node {node} is not a list of "
                              "distinct non-negative integer codes")
            if feature[t, node] < 0:
                raise corrupt(f"tree {t} node {node} has a category set but no feature")
            flat.append(np.asarray(codes, dtype=np.int64))
    words = category_bitsets(flat)
    return words.reshape(shape[0], shape[1], words.shape[1])


def level_text(categories, f: int, code: int) -> str:
    """A categorical feature's value for a code, as text (the code when unknown)."""
    levels = None if categories is None else categories[f]
    if levels is None or not 0 <= code < len(levels):
        return str(code)
    v = levels[code]
    return f"{v:g}" if isinstance(v, float) else str(v)


_walk_categories = tree_walk(category_goes_left)


@numba.njit(cache=True, nogil=True, inline="always")
def category_leaf_of(x, feature, nodes, threshold, missing_left, left, right, words):
    """The leaf row ``x`` (raw values, category codes) reaches in one tree (``nodes``: the
    node indices, handed to the test as each node's split)."""
    return _walk_categories(x, feature, nodes, missing_left, left, right, (threshold, words))


@numba.njit(parallel=True, cache=True, nogil=True)
def category_tree_leaves(X, feature, threshold, missing_left, left, right, words):
    n, n_trees = X.shape[0], feature.shape[0]
    nodes = np.arange(feature.shape[1])
    out = np.empty((n, n_trees), dtype=np.int32)
    for i in numba.prange(n):
        for t in range(n_trees):
            out[i, t] = category_leaf_of(X[i], feature[t], nodes, threshold[t],
                                         missing_left[t], left[t], right[t], words[t])
    return out


@numba.njit(parallel=True, cache=True, nogil=True)
def category_tree_scores(X, feature, threshold, missing_left, left, right, words, values,
                         out):
    nodes = np.arange(feature.shape[1])
    for i in numba.prange(X.shape[0]):
        for t in range(feature.shape[0]):
            leaf = category_leaf_of(X[i], feature[t], nodes, threshold[t], missing_left[t],
                                    left[t], right[t], words[t])
            for c in range(values.shape[2]):
                out[i, c] += values[t, leaf, c]
