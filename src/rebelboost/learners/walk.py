"""The one walk down a tree of explicit children, and the tests it can make at a node.

A node sends a row left or right by its entry at the node's feature: a raw value against a
threshold (:func:`value_goes_left`, prediction), a training row's bin against a split bin
(:func:`bin_goes_left`), or a category code against the node's set of codes
(:func:`category_goes_left`, trees with categorical nodes).
"""

from __future__ import annotations

import numba
import numpy as np


def tree_walk(goes_left):
    """The one walk down a tree of explicit children, for a test ``goes_left(value, split,
    missing_left, missing)`` of a row's entry at a node: over raw values
    (:func:`value_goes_left`, prediction) or over bins (:func:`bin_goes_left`, training rows).
    The walk ``walk(x, feature, split, missing_left, left, right, missing)`` returns the
    leaf row ``x`` reaches (jitted, inlined into its callers)."""

    @numba.njit(cache=True, nogil=True, inline="always")
    def walk(x, feature, split, missing_left, left, right, missing):
        node = 0
        while True:
            f = feature[node]
            if f < 0:
                child = left[node]
            elif goes_left(x[f], split[node], missing_left[node], missing):
                child = left[node]
            else:
                child = right[node]
            if child < 0:
                return ~child
            node = child

    return walk


@numba.njit(cache=True, nogil=True, inline="always")
def value_goes_left(v, threshold, missing_left, missing):
    """A raw value's side: NaN goes to the node's missing side, else ``v <= threshold``."""
    return missing_left if np.isnan(v) else v <= threshold


@numba.njit(cache=True, nogil=True, inline="always")
def bin_goes_left(b, split_bin, missing_left, missing_bin):
    """A bin's side: the missing bin goes to the node's missing side, else ``b <= split_bin``."""
    return missing_left if b == missing_bin else b <= split_bin


@numba.njit(cache=True, nogil=True, inline="always")
def in_set(words, v):
    """Whether code ``v`` (a non-negative whole number) is in a node's bitset."""
    c = int(v)
    w = c >> 6
    if c < 0 or w >= words.shape[0]:
        return False
    return (words[w] >> np.uint64(c & 63)) & np.uint64(1) == np.uint64(1)


@numba.njit(cache=True, nogil=True, inline="always")
def category_goes_left(v, node, missing_left, tables):
    """A raw value's side at a node of a tree with categorical nodes: ``tables`` holds the
    tree's thresholds (NaN: a categorical node) and bitsets; ``node`` comes as the split."""
    threshold, words = tables
    if np.isnan(v):
        return missing_left
    thr = threshold[node]
    if np.isnan(thr):
        return in_set(words[node], v)
    return v <= thr


@numba.njit(cache=True, nogil=True, inline="always")
def bin_set_goes_left(b, node, missing_left, left_bins):
    """A bin's side from the table of the bins each node sends left (its missing bin's entry
    holds the node's missing side): how training rows take categorical splits."""
    return left_bins[node, b]
