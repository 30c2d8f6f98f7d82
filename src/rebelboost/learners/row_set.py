"""The rows a vector-leaf tree is grown on, behind the interface the grower talks to.

:class:`RowSet` is the seam between the grower (every decision, on one machine) and where the
rows live: :class:`LocalRows` holds them in this process; :mod:`rebelboost.dask` keeps them on
workers and adds up their answers in a fixed order. The grower only asks for a leaf's row
count, channel sums and histogram, and tells the rows to split or to take their leaves.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

import numba
import numpy as np

from ..search.binned import BinnedData
from ..search.leaf_histogram import build_leaf_histogram


class RowSet(Protocol):
    """One tree's training rows as the grower reads them; a leaf is an opaque handle.

    A backend (rows in this process, on Dask workers, in Ray or Spark) is one class with
    these methods; its sums and histograms must add the rows in a fixed order, so that the
    same rows give the same tree."""

    def root(self):
        """The handle of the root leaf (every row this tree is grown on)."""

    def count(self, leaf) -> int:
        """The number of rows of ``leaf``."""

    def sums(self, leaf) -> np.ndarray:
        """(2K + 1,) channel sums and sample weight of ``leaf``'s rows."""

    def split(self, leaf, feature: int, split_bin: int, missing_left: bool) -> tuple:
        """Handles of ``leaf``'s rows going left and right under the split."""

    def release(self, leaf) -> None:
        """``leaf`` was split: its handle is not used again."""

    def histogram(self, leaf, sums: np.ndarray, features: np.ndarray,
                  out: np.ndarray) -> np.ndarray:
        """``leaf``'s histogram over ``features`` (channel sums ``sums``) written into the
        cells of ``out`` (n_features, n_bins, 2K + 1) a split search reads."""

    def assign(self, leaves: list, tree: BinTree):
        """The tree is grown, ``leaves`` in its numbering: the leaf of every training row
        (or whatever the backend keeps to apply the tree's steps to its rows)."""


class BinTree(NamedTuple):
    """A grown tree's splits in bin space (how training rows are routed)."""

    feature: np.ndarray
    split_bin: np.ndarray
    missing_left: np.ndarray
    left: np.ndarray
    right: np.ndarray


class LocalRows:
    """One tree's training rows in this process: a leaf's handle is its rows' indices
    (increasing).

    ``channels`` are the rows' 2K REBEL weights (or any channels to sum), ``rows`` the ones
    this tree is grown on (all or a sample), ``amplify`` their sampling factors (None: 1) and
    ``row_weight`` the sample weights ``min_samples_leaf`` counts (None: 1)."""

    def __init__(self, data: BinnedData, channels: np.ndarray, rows: np.ndarray | None = None,
                 amplify: np.ndarray | None = None, row_weight: np.ndarray | None = None):
        n = data.n_samples
        self.data = data
        self.channels = np.ascontiguousarray(channels, dtype=np.float64)
        if self.channels.ndim != 2 or self.channels.shape[0] != n:
            raise ValueError(f"channels must have shape ({n}, C), got {self.channels.shape}")
        self.rows = np.arange(n, dtype=np.intp) if rows is None else rows
        self.sampled = len(self.rows) < n
        self.amplify = amplify
        self.row_weight = (np.ones(n) if row_weight is None
                           else np.ascontiguousarray(row_weight, dtype=np.float64))

    def root(self) -> np.ndarray:
        return self.rows

    @staticmethod
    def count(rows: np.ndarray) -> int:
        return len(rows)

    def sums(self, rows: np.ndarray) -> np.ndarray:
        """Channel sums (amplified) and sample weight of ``rows``, in row order."""
        return _row_sums(self.channels, rows, self.amplify, self.row_weight)

    def split(self, rows: np.ndarray, feature: int, split_bin: int, missing_left: bool
              ) -> tuple[np.ndarray, np.ndarray]:
        """The rows going left and right (each increasing)."""
        return _partition(self.data.bins, rows, feature, split_bin,
                          self.data.layout.missing_bin, missing_left)

    def release(self, rows: np.ndarray) -> None:
        """A leaf that was split (the local rows need no freeing)."""

    def histogram(self, rows: np.ndarray, sums: np.ndarray, features: np.ndarray,
                  out: np.ndarray) -> np.ndarray:
        """Writes the histogram of ``rows`` (channel sums ``sums``) over ``features`` into
        the cells of ``out`` (n_features, n_bins, 2K + 1) that a search reads."""
        row_channels = _gather(self.channels, rows, self.amplify, self.row_weight)
        return build_leaf_histogram(self.data, row_channels, rows, sums, features, out)

    def assign(self, leaves: list[np.ndarray], tree: BinTree) -> np.ndarray:
        """The leaf of every row (leaves in the tree's numbering), the rows outside the
        sample routed through the tree."""
        if self.sampled and (tree.feature >= 0).any():
            return _route_bins(self.data.bins, tree.feature, tree.split_bin, tree.missing_left,
                               tree.left, tree.right, self.data.layout.missing_bin)
        leaf_of_row = np.zeros(self.data.n_samples, dtype=np.intp)
        for i, rows in enumerate(leaves):
            leaf_of_row[rows] = i
        return leaf_of_row


@numba.njit(cache=True, nogil=True)
def _row_sums(channels, rows, amplify, row_weight):
    """Channel sums (times ``amplify``; None: 1) and the sample weight of ``rows``, in row
    order."""
    c = channels.shape[1]
    out = np.zeros(c + 1)
    for i in range(rows.shape[0]):
        r = rows[i]
        s = 1.0 if amplify is None else amplify[r]
        for j in range(c):
            out[j] += channels[r, j] * s
        out[c] += row_weight[r]
    return out


@numba.njit(cache=True, nogil=True)
def _gather(channels, rows, amplify, row_weight):
    """The histogram channels of ``rows``: their weights (amplified) and sample weight."""
    c = channels.shape[1]
    out = np.empty((rows.shape[0], c + 1))
    for i in range(rows.shape[0]):
        r = rows[i]
        s = 1.0 if amplify is None else amplify[r]
        for j in range(c):
            out[i, j] = channels[r, j] * s
        out[i, c] = row_weight[r]
    return out


@numba.njit(cache=True, nogil=True)
def _partition(bins, rows, feature, split_bin, missing_bin, missing_left):
    """The rows going left and right under a split, each in the given (increasing) order."""
    n = rows.shape[0]
    left = np.empty(n, dtype=rows.dtype)
    right = np.empty(n, dtype=rows.dtype)
    n_left = n_right = 0
    for i in range(n):
        r = rows[i]
        b = bins[r, feature]
        if missing_left if b == missing_bin else b <= split_bin:
            left[n_left] = r
            n_left += 1
        else:
            right[n_right] = r
            n_right += 1
    return left[:n_left].copy(), right[:n_right].copy()


@numba.njit(parallel=True, cache=True, nogil=True)
def _route_bins(bins, feature, split_bin, missing_left, left, right, missing_bin):
    """Leaf of every row of the binned training set in one tree."""
    n = bins.shape[0]
    out = np.empty(n, dtype=np.intp)
    for r in numba.prange(n):
        node = 0
        while True:
            f = feature[node]
            if f < 0:
                child = left[node]
            else:
                b = bins[r, f]
                go_left = missing_left[node] if b == missing_bin else b <= split_bin[node]
                child = left[node] if go_left else right[node]
            if child < 0:
                out[r] = ~child
                break
            node = child
    return out
