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

from ..exact_sums import rounded, sum_rows
from ..search.binned import BinnedData
from ..search.histograms import build_leaf_histogram, row_totals
from ..search.histograms._intrinsics import prefetch_far_ahead
from ..search.histograms.dense import ROW_DTYPES, float_rows, threads_pay
from ..search.quantize import (
    build_quantized_histogram,
    dequantize,
    gather_as_float,
    histogram_dtype,
    quantize_channels,
)
from .row_channels import gather, row_sums, row_tasks
from .walk import bin_goes_left, bin_set_goes_left, tree_walk


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

    def split(self, leaf, feature: int, split_bin: int, missing_left: bool,
              left_bins: np.ndarray | None = None) -> tuple:
        """Handles of ``leaf``'s rows going left and right under the split: ``bin <=
        split_bin`` (the missing bin by ``missing_left``), or for a categorical split the
        bins marked in ``left_bins`` (n_bins_total,)."""

    def release(self, leaf) -> None:
        """``leaf`` was split: its handle is not used again."""

    #: Whether :meth:`expect`'s hints are used (False: the grower does not compute them).
    batches_splits: bool

    def expect(self, splits: list[tuple]) -> None:
        """A hint: the splits the grower may ask for next, ``(leaf, feature, split_bin,
        missing_left, left_bins)`` each, the next one first. A backend whose every answer is
        a round trip may do them all in one (its answers must not change); rows in this
        process ignore it."""

    def is_split(self, leaf) -> bool:
        """Whether ``leaf``'s rows are split already (by an :meth:`expect` batch): the
        grower may then take its children early. Rows in this process: never."""

    def float_channels(self, leaf) -> tuple[np.ndarray, np.ndarray] | None:
        """``leaf``'s rows and their channels (row weight last), in the order a histogram
        adds them, where this process holds them and its histograms are float sums of dense
        bins (the grower then builds and scans a split's children in one pass); else None."""

    def histogram(self, leaf, sums: np.ndarray, features: np.ndarray,
                  out: np.ndarray) -> np.ndarray:
        """``leaf``'s histogram over ``features`` (channel sums ``sums``) written into the
        cells of ``out``, a compact leaf histogram (n_cells, 2K + 1;
        :mod:`rebelboost.search.histograms.leaf`)."""

    def assign(self, leaves: list, tree: BinTree):
        """The tree is grown, ``leaves`` in its numbering: the leaf of every training row
        (or whatever the backend keeps to apply the tree's steps to its rows)."""


class BinTree(NamedTuple):
    """A grown tree's splits in bin space (how training rows are routed); ``left_bins``
    (nodes, n_bins_total), for a tree with categorical splits: the bins each node sends
    left."""

    feature: np.ndarray
    split_bin: np.ndarray
    missing_left: np.ndarray
    left: np.ndarray
    right: np.ndarray
    left_bins: np.ndarray | None = None


class RowArrays:
    """Sums, histograms and splits of rows given as index arrays (each in increasing order).

    ``channels`` are the rows' 2K REBEL weights (or any channels to sum), ``amplify`` their
    sampling factors (None: 1) and ``row_weight`` the sample weights ``min_samples_leaf``
    counts (None: 1). Every method is pure (Dask's partitions use it as is);
    :class:`LocalRows` partitions one index array in place instead.

    :meth:`packed` takes the channels and the row weight as one (n, C + 1) float array
    (float32: the boosters' lean state), so that a histogram of every row reads it in place
    instead of gathering a copy of it. Gathered copies keep the channels' dtype; every sum
    and histogram cell is float64."""

    def __init__(self, data: BinnedData, channels: np.ndarray,
                 amplify: np.ndarray | None = None, row_weight: np.ndarray | None = None):
        n = data.n_samples
        self.data = data
        self.channels = float_rows(channels, contiguous=False)
        if self.channels.ndim != 2 or self.channels.shape[0] != n:
            raise ValueError(f"channels must have shape ({n}, C), got {self.channels.shape}")
        if self.channels.strides[1] != self.channels.itemsize:
            # (rows may be the first columns of a wider array)
            self.channels = np.ascontiguousarray(self.channels)
        self.amplify = amplify
        self.row_weight = (np.ones(n) if row_weight is None
                           else np.ascontiguousarray(row_weight, dtype=np.float64))
        self._packed: np.ndarray | None = None

    @classmethod
    def packed(cls, data: BinnedData, packed: np.ndarray) -> RowArrays:
        """Rows whose channels are ``packed[:, :-1]`` and row weights ``packed[:, -1]`` (views
        of one C-ordered float32 or float64 array: nothing is copied)."""
        if (packed.dtype not in ROW_DTYPES or not packed.flags.c_contiguous
                or packed.ndim != 2 or packed.shape[0] != data.n_samples):
            raise ValueError(f"packed must be a C-ordered float32 or float64 array of "
                             f"{data.n_samples} rows, got {packed.dtype} {packed.shape}")
        rows = cls.__new__(cls)
        rows.data, rows.amplify, rows._packed = data, None, packed
        rows.channels, rows.row_weight = packed[:, :-1], packed[:, -1]
        return rows

    def sums_of(self, rows: np.ndarray) -> np.ndarray:
        """Channel sums (amplified) and sample weight of ``rows``, in row order."""
        return row_sums(self.channels, rows, self.amplify, self.row_weight)

    batches_splits = False  # (rows in this process answer at once: nothing to prepare)

    def expect(self, splits: list[tuple]) -> None:
        """(Not called: :attr:`batches_splits` is False.)"""

    def is_split(self, leaf) -> bool:
        return False

    def float_channels(self, leaf) -> None:
        return None  # (index arrays: the grower asks for histograms)

    def split_rows(self, rows: np.ndarray, feature: int, split_bin: int, missing_left: bool,
                   left_bins: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """New arrays of the rows going left and right (each increasing)."""
        return _partition(self.data.bins, rows, feature,
                          self._table(split_bin, missing_left, left_bins))

    def _table(self, split_bin: int, missing_left: bool, left_bins: np.ndarray | None
               ) -> np.ndarray:
        """The bins going left (a categorical split's own table, or ``bin <= split_bin``)."""
        if left_bins is not None:
            return np.ascontiguousarray(left_bins, dtype=np.bool_)
        layout = self.data.layout
        return split_table(split_bin, missing_left, layout.n_bins_total, layout.missing_bin)

    def gathered(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows' channels and row weight as one compact array, and their sums (the rows
        read once for both; a gathered copy's totals are :meth:`sums_of` bit for bit). Every
        row of a packed set: the packed array itself, no copy."""
        if self._packed is not None and len(rows) == self.data.n_samples:
            gathered = self._packed  # every row, in order (rows increase): as they are
        else:
            gathered = gather(self.channels, rows, self.amplify, self.row_weight)
        return gathered, row_totals(gathered)

    def histogram_of(self, rows: np.ndarray, sums: np.ndarray, features: np.ndarray,
                     out: np.ndarray, gathered: np.ndarray | None = None) -> np.ndarray:
        """Writes the histogram of ``rows`` (channel sums ``sums``) over ``features`` into
        the cells of ``out`` (a compact leaf histogram, n_cells x (2K + 1)); ``gathered``:
        the rows' channels already gathered."""
        row_channels = self._row_channels(rows) if gathered is None else gathered
        return build_leaf_histogram(self.data, row_channels, rows, sums, features, out)

    def _row_channels(self, rows: np.ndarray) -> np.ndarray:
        """The rows' channels and row weight as a histogram reads them."""
        if self._packed is not None and len(rows) == self.data.n_samples:
            return self._packed  # every row, in order (rows increase): as they are
        return gather(self.channels, rows, self.amplify, self.row_weight)

    def leaves_of(self, leaves: list[np.ndarray], tree: BinTree, sampled: bool) -> np.ndarray:
        """The leaf of every row (leaves in the tree's numbering; ``sampled``: the rows
        outside the leaves are routed through the tree)."""
        if sampled and (tree.feature >= 0).any():
            return route_bins(self.data.bins, tree, self.data.layout.missing_bin)
        leaf_of_row = np.zeros(self.data.n_samples, dtype=np.intp)
        for i, rows in enumerate(leaves):
            leaf_of_row[rows] = i
        return leaf_of_row


class LocalRows(RowArrays):
    """One tree's training rows in this process (the :class:`RowSet` of a local fit).

    The rows the tree is grown on (``rows``: all or a sample, increasing) are one index
    array; a leaf's handle is a ``(start, stop)`` range of it. A split partitions its range in
    place, stably (each child keeps increasing row order, so every sum adds the rows in the
    same order as before), as scikit-learn's hist-GBM ``Splitter`` does: no row arrays are
    allocated per split.

    ``packed``: the (n, C + 1) array whose first columns are ``channels`` and last the row
    weights, read in place for a leaf of every row (no gathered copy).

    ``histogram_bits``: histograms of the channels quantized once for this tree
    (:mod:`..search.quantize`, stochastic rounding from ``seed``), integer cells (``hist_dtype``)
    that :meth:`dequantize` turns into the float sums a search reads; a leaf's sums are
    exact sums, rounded once (:mod:`..exact_sums`), as a partitioned fit's are."""

    def __init__(self, data: BinnedData, channels: np.ndarray, rows: np.ndarray | None = None,
                 amplify: np.ndarray | None = None, row_weight: np.ndarray | None = None,
                 histogram_bits: int | None = None, seed: int = 0,
                 packed: np.ndarray | None = None):
        super().__init__(data, channels, amplify, row_weight)
        self._packed = packed  # (channels, row weight) of every row, if the caller has them
        n = data.n_samples
        self.order = (np.arange(n, dtype=np.intp) if rows is None
                      else np.array(rows, dtype=np.intp))
        self.sampled = len(self.order) < n
        self._scratch = np.empty_like(self.order)  # the right sides during a partition
        self._sides = None  # each row's side during a threaded partition (made at the first)
        self._gathered = None  # (leaf, its rows' channels): from sums() for histogram()
        self.quantized = self.scales = None
        self.hist_dtype = np.float64
        self.channel_bytes = 8  # bytes of one row's channel (benchmarks)
        if histogram_bits is not None:
            self.quantized, self.scales = quantize_channels(
                self.channels, amplify, self.row_weight, histogram_bits, seed)
            self.channel_bytes = self.quantized.itemsize
            if data.sparse is None:  # sparse bins: float cells holding exact integer sums
                self.hist_dtype = histogram_dtype(self.quantized, self.order)

    def rows_of(self, leaf: tuple[int, int]) -> np.ndarray:
        """The rows of ``leaf`` (a view of the tree's index array)."""
        return self.order[leaf[0]:leaf[1]]

    def root(self) -> tuple[int, int]:
        return 0, len(self.order)

    @staticmethod
    def count(leaf: tuple[int, int]) -> int:
        return leaf[1] - leaf[0]

    def sums(self, leaf: tuple[int, int]) -> np.ndarray:
        """The leaf's channel sums; a float histogram's rows are gathered once for both: the
        copy is kept for :meth:`histogram` of the same leaf, which the grower asks for next."""
        rows = self.rows_of(leaf)
        if self.quantized is not None:  # exact: the sums of any partitioning of the rows
            return rounded(sum_rows(self.channels, rows, self.amplify, self.row_weight))
        gathered, sums = self.gathered(rows)
        self._gathered = (leaf, gathered)
        return sums

    def kept_channels(self, leaf: tuple[int, int]) -> np.ndarray | None:
        """The channels and row weight of ``leaf``'s rows that :meth:`sums` gathered (in its
        rows' order), if it was the last leaf summed."""
        kept = self._gathered
        return kept[1] if kept is not None and kept[0] == leaf else None

    def split(self, leaf: tuple[int, int], feature: int, split_bin: int, missing_left: bool,
              left_bins: np.ndarray | None = None) -> tuple[tuple[int, int], tuple[int, int]]:
        """The ranges going left and right, the leaf's range partitioned in place."""
        self._gathered = None  # (rows move: no kept copy outlives a split)
        start, stop = leaf
        args = (self.data.bins, self.order, self._scratch, start, stop, feature,
                self._table(split_bin, missing_left, left_bins))
        n_tasks = row_tasks(stop - start, numba.get_num_threads())
        if n_tasks > 1:
            if self._sides is None:
                self._sides = np.empty(len(self.order), dtype=np.uint8)
            middle = start + _partition_in_place(*args, n_tasks, self._sides)
        else:
            middle = start + _partition_in_place_serial(*args)
        return (start, middle), (middle, stop)

    def release(self, leaf: tuple[int, int]) -> None:
        """A leaf that was split (its range now belongs to its children)."""

    def float_channels(self, leaf: tuple[int, int]) -> tuple[np.ndarray, np.ndarray] | None:
        if self.quantized is not None or self.data.sparse is not None:
            return None
        rows = self.rows_of(leaf)
        gathered, self._gathered = self.kept_channels(leaf), None
        return rows, self._row_channels(rows) if gathered is None else gathered

    def histogram(self, leaf: tuple[int, int], sums: np.ndarray, features: np.ndarray,
                  out: np.ndarray) -> np.ndarray:
        rows = self.rows_of(leaf)
        if self.quantized is None:
            gathered, self._gathered = self.kept_channels(leaf), None
            return self.histogram_of(rows, sums, features, out, gathered)
        data = self.data
        if data.sparse is not None:  # integers in float64 cells: exact below 2^53
            q = gather_as_float(self.quantized, rows)
            return build_leaf_histogram(data, q, rows, q.sum(axis=0), features, out)
        parallel = threads_pay(len(rows), max(1, len(features)), out.shape[1])
        build_quantized_histogram(
            data.bins, self.quantized, rows, features,
            np.ascontiguousarray(data.layout.n_value_bins, dtype=np.int32), data.cell_offsets,
            out, parallel)
        return out

    def dequantize(self, hist: np.ndarray, features: np.ndarray, out: np.ndarray
                   ) -> np.ndarray:
        """The float sums a search reads from a quantized histogram (its cells of
        ``features`` times the channels' scales, into ``out``)."""
        return dequantize(hist, self.scales, features, self.data.cell_offsets, out)

    def assign(self, leaves: list[tuple[int, int]], tree: BinTree) -> np.ndarray:
        """The leaf of every row (leaves in the tree's numbering), the rows outside the
        sample routed through the tree."""
        return self.leaves_of([self.rows_of(leaf) for leaf in leaves], tree, self.sampled)


def route_bins(bins: np.ndarray, tree: BinTree, missing_bin: int) -> np.ndarray:
    """The leaf of every row of the binned training set in a grown tree."""
    if tree.left_bins is not None:
        return _route_bin_sets(bins, tree.feature, tree.missing_left, tree.left, tree.right,
                               tree.left_bins)
    return _route_bins(bins, tree.feature, tree.split_bin, tree.missing_left, tree.left,
                       tree.right, missing_bin)


def split_table(split_bin: int, missing_left: bool, n_bins_total: int, missing_bin: int
                ) -> np.ndarray:
    """(n_bins_total,) the bins a numeric split sends left: ``bin <= split_bin``, and the
    missing bin by ``missing_left``."""
    table = np.arange(n_bins_total) <= split_bin
    table[missing_bin] = missing_left
    return table


_walk_bins = tree_walk(bin_goes_left)
_walk_bin_sets = tree_walk(bin_set_goes_left)

@numba.njit(cache=True, nogil=True)
def _partition(bins, rows, feature, left_bins):
    """The rows going left and right under a split, each in the given (increasing) order:
    the in-place partition of a copy (blocks of a distributed fit must not change theirs)."""
    order = rows.copy()
    scratch = np.empty_like(rows)
    n_left = _partition_in_place_serial(bins, order, scratch, 0, rows.shape[0], feature,
                                        left_bins)
    return order[:n_left].copy(), order[n_left:].copy()


@numba.njit(cache=True, nogil=True, inline="always")
def _goes_left(bins, r, feature, left_bins):
    return left_bins[bins[r, feature]]


@numba.njit(cache=True, nogil=True)
def _partition_in_place_serial(bins, order, scratch, start, stop, feature, left_bins):
    """Stable partition of ``order[start:stop]`` (left rows first); the number going left.
    Left rows move down in place (never past the row being read), right rows wait in
    ``scratch``. Each row is written to both places and the counts keep the right one: no
    branch on the row's side, which the CPU cannot predict (7 ns a row with the branch, 3
    without, rows in cache)."""
    n_left = n_right = 0
    for i in range(start, stop):
        prefetch_far_ahead(bins, order, i, stop, feature)
        r = order[i]
        left = np.intp(_goes_left(bins, r, feature, left_bins))
        order[start + n_left] = r
        scratch[n_right] = r
        n_left += left
        n_right += 1 - left
    for i in range(n_right):
        order[start + n_left + i] = scratch[i]
    return n_left


@numba.njit(parallel=True, cache=True, nogil=True)
def _partition_in_place(bins, order, scratch, start, stop, feature, left_bins, n_tasks, sides):
    """:func:`_partition_in_place_serial` in ``n_tasks`` parallel tasks: each counts its
    chunk's left rows, noting each row's side in ``sides`` (a byte per position of
    ``order``), then writes its rows at their final places in ``scratch`` (stable), copied
    back. The bins are read once: the rows of a deep leaf lie scattered in them, and the
    second pass reads the sides in order instead."""
    n = stop - start
    n_tasks = max(1, n_tasks)
    bounds = np.linspace(start, stop, n_tasks + 1).astype(np.intp)
    lefts = np.zeros(n_tasks, dtype=np.intp)
    for t in numba.prange(n_tasks):
        c = 0
        for i in range(bounds[t], bounds[t + 1]):
            prefetch_far_ahead(bins, order, i, bounds[t + 1], feature)
            side = _goes_left(bins, order[i], feature, left_bins)
            sides[i] = side
            c += side
        lefts[t] = c
    left_at = np.empty(n_tasks, dtype=np.intp)
    right_at = np.empty(n_tasks, dtype=np.intp)
    n_left = 0
    for t in range(n_tasks):
        left_at[t] = start + n_left
        n_left += lefts[t]
    n_right = 0
    for t in range(n_tasks):
        right_at[t] = start + n_left + n_right
        n_right += bounds[t + 1] - bounds[t] - lefts[t]
    for t in numba.prange(n_tasks):
        a, b = left_at[t], right_at[t]
        for i in range(bounds[t], bounds[t + 1]):
            left = np.intp(sides[i])
            scratch[a if left else b] = order[i]  # (a select, not a branch to mispredict)
            a += left
            b += 1 - left
    for i in numba.prange(n):
        order[start + i] = scratch[start + i]
    return n_left


@numba.njit(parallel=True, cache=True, nogil=True)
def _route_bins(bins, feature, split_bin, missing_left, left, right, missing_bin):
    """Leaf of every row of the binned training set in one tree."""
    out = np.empty(bins.shape[0], dtype=np.intp)
    for r in numba.prange(bins.shape[0]):
        out[r] = _walk_bins(bins[r], feature, split_bin, missing_left, left, right, missing_bin)
    return out


@numba.njit(parallel=True, cache=True, nogil=True)
def _route_bin_sets(bins, feature, missing_left, left, right, left_bins):
    """:func:`_route_bins` by each node's table of bins going left."""
    nodes = np.arange(feature.shape[0])
    out = np.empty(bins.shape[0], dtype=np.intp)
    for r in numba.prange(bins.shape[0]):
        out[r] = _walk_bin_sets(bins[r], feature, nodes, missing_left, left, right, left_bins)
    return out
