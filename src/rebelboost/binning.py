"""Features to ``uint8`` bins, fitted once per training run.

Each feature gets at most ``max_bins`` value bins separated by thresholds that lie strictly
between distinct training values, so ``bin(x) <= b`` exactly when ``x <= thresholds[b]``. The
trees learn on bins but store raw thresholds, so prediction never bins. The last bin index
(``max_bins``) holds missing values (NaN); training learns which side they go to. A feature
gets at most one bin per ``min_data_in_bin`` of the rows that place the thresholds: on a few
hundred rows of a continuous feature, a bin per distinct value would offer a split between
every two rows, and the split search would scan that many candidates.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numba
import numpy as np

from .parallel import numba_threads

MAX_BINS_LIMIT = 255


class BinLayout(NamedTuple):
    """What a split search must know about the bins of a fitted :class:`Binner`."""

    n_value_bins: np.ndarray  # (n_features,) int32: value bins holding training rows
    has_missing: np.ndarray  # (n_features,) bool: the feature had NaN in training
    missing_bin: int  # the bin code of NaN
    n_bins_total: int  # histogram length per feature

    def cell_offsets(self) -> np.ndarray:
        """(n_features + 1,) intp: feature f's cells in a compact leaf histogram are rows
        ``offsets[f]:offsets[f + 1]``, its value bins then its missing bin
        (:mod:`rebelboost.search.histograms.leaf`)."""
        offsets = np.zeros(len(self.n_value_bins) + 1, dtype=np.intp)
        np.cumsum(np.asarray(self.n_value_bins, dtype=np.intp) + 1, out=offsets[1:])
        return offsets


class Binner:
    """Quantile binning of a float matrix into ``uint8`` codes plus one missing-value bin.

    Parameters
    ----------
    max_bins : int
        Number of value bins per feature (2..255). Features with fewer distinct values get one
        bin per value.
    subsample : int or None
        Rows used to place the thresholds (all rows when None or when there are fewer).
    random_state : int or numpy Generator
        Seed for the subsample.
    min_data_in_bin : int
        A numeric feature gets at most one value bin per ``min_data_in_bin`` sampled rows
        (two at least), placed at quantiles: bins of about that many rows. A feature with
        no more distinct values than that keeps one bin per value. 1: one bin per distinct
        value, up to ``max_bins``.
    """

    def __init__(self, max_bins: int = 255, subsample: int | None = 200_000, random_state=0,
                 min_data_in_bin: int = 1):
        if not 2 <= int(max_bins) <= MAX_BINS_LIMIT:
            raise ValueError(f"max_bins must be in [2, {MAX_BINS_LIMIT}], got {max_bins!r}")
        if int(min_data_in_bin) < 1:
            raise ValueError(f"min_data_in_bin must be at least 1, got {min_data_in_bin!r}")
        self.max_bins = int(max_bins)
        self.subsample = subsample
        self.random_state = random_state
        self.min_data_in_bin = int(min_data_in_bin)

    @property
    def missing_bin(self) -> int:
        """Bin index that holds NaN."""
        return self.max_bins

    @property
    def n_bins_total(self) -> int:
        """Histogram length per feature: value bins plus the missing bin."""
        return self.max_bins + 1

    @property
    def layout(self) -> BinLayout:
        """The fitted bins' :class:`BinLayout`."""
        return BinLayout(self.n_value_bins_, self.has_missing_, self.missing_bin,
                         self.n_bins_total)

    def fit(self, X: np.ndarray, categorical: np.ndarray | None = None,
            labels: np.ndarray | None = None) -> Binner:
        """Thresholds of the numeric features; ``categorical`` (bool mask) marks features
        holding category codes ``0, 1, ...`` (NaN: missing), which get one bin per code. A
        feature with more codes than ``max_bins`` has them grouped: by their class mix when
        the rows' ``labels`` (class codes) are given (:func:`_grouped_code_bins`), else its
        ``max_bins`` most frequent codes keep a bin and the rarer ones go to the missing bin
        (as LightGBM caps a categorical feature's bins at ``max_bin``)."""
        X = as_float(X)
        # From all rows, not the subsample: the split search must know every bin that holds
        # training rows (a NaN the subsample missed still lands in the missing bin).
        nan = np.isnan(X)
        has_missing, has_values = nan.any(axis=0), ~nan.all(axis=0)
        full = X
        rows = self.sample_rows(X.shape[0])
        if rows is not None:
            X = X[rows]
        cat = (np.zeros(X.shape[1], bool) if categorical is None
               else np.asarray(categorical, dtype=bool))
        self.fit_summary(column_value_counts(X, ~cat), has_missing, has_values)
        return self.fit_codes(cat, [code_counts(full[:, j], labels) if cat[j] else None
                                    for j in range(len(cat))])

    def fit_codes(self, categorical: np.ndarray, counts: list) -> Binner:
        """The bins of the ``categorical`` features from :func:`code_counts` of their codes
        (``counts[j]``; a distributed fit adds up its partitions' with
        :func:`merge_code_counts`), after :meth:`fit_summary` placed the numeric ones."""
        self.categorical_ = np.asarray(categorical, dtype=bool)
        self.code_bins_: list[np.ndarray | None] = [None] * len(self.categorical_)
        for j in np.flatnonzero(self.categorical_):
            code_rows, table = counts[j]
            self.code_bins_[j] = bins = _code_bins(code_rows, table, self.max_bins,
                                                   self.missing_bin)
            used = bins[bins != self.missing_bin]
            self.n_value_bins_[j] = int(used.max()) + 1 if used.size else 0
            self.has_missing_[j] = bool(self.has_missing_[j]
                                        or (bins[code_rows > 0] == self.missing_bin).any())
        return self

    def sample_rows(self, n_rows: int) -> np.ndarray | None:
        """Indices of the rows (of ``n_rows`` that count) whose values place the thresholds;
        None: all of them. A distributed fit draws the same rows by their global index."""
        if self.subsample is None or n_rows <= self.subsample:
            return None
        rng = np.random.default_rng(self.random_state)
        return rng.choice(n_rows, self.subsample, replace=False)

    def fit_summary(self, summaries: Iterable[tuple[np.ndarray, np.ndarray]],
                    has_missing: np.ndarray, has_values: np.ndarray) -> Binner:
        """Fit from each feature's distinct sampled values and their counts
        (:func:`value_counts`, merged over partitions by :func:`merge_value_counts`; read
        once, in feature order, so they may be merged as they are read), and whether the
        feature had NaN / any value among the rows that count."""
        self.thresholds_ = [_thresholds(values, counts, self.max_bins, self.min_data_in_bin)
                            for values, counts in summaries]
        self.has_missing_ = np.array(has_missing, dtype=bool)
        self.categorical_ = np.zeros(len(self.thresholds_), bool)
        self.code_bins_ = [None] * len(self.thresholds_)
        # An all-NaN column has no value bin (so no split that would leave a side empty).
        self.n_value_bins_ = np.array(
            [len(t) + 1 if v else 0 for t, v in zip(self.thresholds_, has_values, strict=True)],
            dtype=np.int32,
        )
        return self

    @property
    def n_features(self) -> int:
        return len(self.thresholds_)

    def transform(self, X: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Bin codes, C-ordered (n_samples, n_features) ``uint8`` (into ``out``, if given:
        rows of a larger array, such as several partitions' bins in one)."""
        X = as_float(X)
        if out is None:
            out = np.empty(X.shape, dtype=np.uint8)
        elif out.shape != X.shape or out.dtype != np.uint8 or not out.flags.c_contiguous:
            raise ValueError(f"out must be a C-ordered uint8 array of shape {X.shape}")
        with numba_threads(None):  # a fit's n_jobs, else the CPUs this process may use
            _bin_rows(X, _search_table(self.thresholds_), self.missing_bin, out)
        for j in np.flatnonzero(self.categorical_):
            out[:, j] = code_bin(X[:, j], self.code_bins_[j], self.missing_bin)
        return out

    def fit_transform(self, X: np.ndarray, categorical: np.ndarray | None = None
                      ) -> np.ndarray:
        return self.fit(X, categorical).transform(X)

    def left_codes(self, feature: int, left_bins: np.ndarray) -> np.ndarray:
        """A categorical feature's codes that go left, given which bins go left (the
        missing bin's entry: the side of missing values and of the rarest codes)."""
        return left_bins[self.code_bins_[feature]]

    def left_code_masks(self, features: np.ndarray, left_bins: np.ndarray) -> np.ndarray:
        """:meth:`left_codes` of many nodes at once: (nodes, the most codes of any
        categorical feature), row i whether each code of categorical feature ``features[i]``
        goes left given its bins going left ``left_bins[i]`` (False past the feature's
        codes)."""
        most = max((len(b) for b in self.code_bins_ if b is not None), default=0)
        out = np.zeros((len(features), most), dtype=bool)
        for f in np.unique(features):
            rows = np.flatnonzero(features == f)
            code_bins = self.code_bins_[f]
            out[rows, :len(code_bins)] = left_bins[rows][:, code_bins]
        return out

    def threshold_table(self) -> np.ndarray:
        """:meth:`threshold` of every feature and bin: (n_features, most thresholds + 1),
        infinite past a feature's own."""
        width = max((len(t) for t in self.thresholds_), default=0) + 1
        table = np.full((len(self.thresholds_), width), np.inf)
        for j, thr in enumerate(self.thresholds_):
            table[j, : len(thr)] = thr
        return table

    def threshold(self, feature: int, bin_index: int) -> float:
        """Raw value ``t`` with ``x <= t`` exactly for the values binned ``<= bin_index``."""
        thr = self.thresholds_[feature]
        if bin_index >= len(thr):  # every value goes left (a split that isolates missing)
            return np.inf
        return float(thr[bin_index])


NO_VALUES = (np.empty(0), np.empty(0, dtype=np.int64))  # a categorical feature's thresholds


def code_counts(col: np.ndarray, labels: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray | None]:
    """A categorical feature's rows per code (codes ``0 .. max code``) and, given the rows'
    ``labels`` (class codes), its (codes x classes) table of rows per code and class."""
    col = np.asarray(col, dtype=np.float64)
    present = ~np.isnan(col)
    values = col[present].astype(np.int64)
    n_codes = int(values.max()) + 1 if values.size else 0
    counts = np.bincount(values, minlength=n_codes)
    if labels is None:
        return counts, None
    labels = np.asarray(labels)[present].astype(np.int64)
    n_classes = int(labels.max()) + 1 if labels.size else 0
    table = np.bincount(values * n_classes + labels, minlength=n_codes * n_classes)
    return counts, table.reshape(n_codes, n_classes).astype(np.float64)


def merge_code_counts(a: tuple, b: tuple) -> tuple:
    """Two parts' :func:`code_counts` added up (the shorter zero-padded)."""
    def padded_sum(x, y):
        if x is None or y is None:
            return None
        out = np.zeros(tuple(max(p, q) for p, q in zip(x.shape, y.shape, strict=True)),
                       dtype=np.result_type(x, y))
        out[tuple(slice(0, n) for n in x.shape)] += x
        out[tuple(slice(0, n) for n in y.shape)] += y
        return out

    return padded_sum(a[0], b[0]), padded_sum(a[1], b[1])


def _code_bins(counts: np.ndarray, table: np.ndarray | None, max_bins: int,
               missing_bin: int) -> np.ndarray:
    """Each code's bin: one per code that holds rows, in code order; beyond ``max_bins``
    codes, groups of codes by class mix (given the codes' class ``table``) or the
    ``max_bins`` most frequent codes (ties: the lower code), the others in the missing
    bin."""
    n_codes = len(counts)
    held = counts > 0
    if held.sum() > max_bins and table is not None:
        return _grouped_code_bins(table, counts, max_bins, missing_bin)
    kept = np.zeros(n_codes, bool)
    kept[np.argsort(-counts, kind="stable")[:max_bins]] = True
    kept &= held
    bins = np.full(n_codes, missing_bin, dtype=np.int64)
    bins[kept] = np.arange(int(kept.sum()))
    return bins


GROUP_PRIOR_ROWS = 10.0  # pseudo-rows of the overall class mix in a code's mix when grouping


def _grouped_code_bins(table: np.ndarray, counts: np.ndarray, max_bins: int,
                       missing_bin: int) -> np.ndarray:
    """Bins of a feature with more codes than bins: codes whose class mixes (each smoothed
    towards the overall mix by GROUP_PRIOR_ROWS pseudo-rows, so a code of a few rows stays
    near it) are alike share a bin, by k-means into ``max_bins`` groups (seeded: the same
    rows give the same bins). The split search then chooses sets of these groups; a
    LightGBM-style cap would leave every code past the ``max_bins``-th most frequent
    unsplittable. Bins are numbered in the order of their lowest code."""
    from sklearn.cluster import KMeans

    codes = np.flatnonzero(counts > 0)
    seen = np.flatnonzero(table.sum(axis=0) > 0)  # (classes after the last one seen: none)
    table = table[:, :seen[-1] + 1]
    prior = table.sum(axis=0) / table.sum()
    mix = (table[codes] + GROUP_PRIOR_ROWS * prior) / (counts[codes, None] + GROUP_PRIOR_ROWS)
    # no more distinct mixes than bins: each its own group (k-means would find the same
    # groups, warning that it found fewer clusters than asked, and a filter set around it
    # is not thread-safe: the cost route's fold models bin on threads side by side)
    distinct, groups = np.unique(mix, axis=0, return_inverse=True)
    if len(distinct) > max_bins:
        groups = KMeans(max_bins, n_init=1, random_state=0).fit(
            mix, sample_weight=counts[codes]).labels_
    groups = groups.reshape(-1)
    _, first = np.unique(groups, return_index=True)  # renumber by lowest code
    order = np.empty(groups.max() + 1, dtype=np.int64)
    order[groups[np.sort(first)]] = np.arange(len(first))
    bins = np.full(len(counts), missing_bin, dtype=np.int64)
    bins[codes] = order[groups]
    return bins


def code_bin(col: np.ndarray, code_bins: np.ndarray, missing_bin: int) -> np.ndarray:
    """Bins of a categorical feature's codes (NaN and codes beyond the table: missing)."""
    col = np.asarray(col, dtype=np.float64)
    out = np.full(col.shape, missing_bin, dtype=np.uint8)
    ok = ~np.isnan(col)
    ok[ok] = (col[ok] >= 0) & (col[ok] < len(code_bins))
    out[ok] = code_bins[col[ok].astype(np.int64)]
    return out


def as_float(X) -> np.ndarray:
    """``X`` as float32 or float64, without a copy when it is one already: float32 data is
    binned as it is (its values are exact in float64, so it gets the bins of its float64 copy,
    at half the memory)."""
    X = np.asarray(X)
    return X if X.dtype in (np.float32, np.float64) else X.astype(np.float64)


def value_counts(col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A column's distinct non-NaN values (as float64, increasing) and their counts: an exact
    summary that merges across row blocks (:func:`merge_value_counts`)."""
    col = np.asarray(col, dtype=np.float64)  # midpoints of float32 values in float64
    return np.unique(col[~np.isnan(col)], return_counts=True)


# Rows and values (rows x columns) from which the columns' value counts are taken on a
# thread pool: numpy's sort releases the interpreter's lock, but a short column's sort is
# shorter than the pool's hand-over. Chosen on the 46 suite sets' training splits (the
# sample of at most 200,000 rows; best of 5, pooled over serial on 2 threads): from 8,192
# rows and 2^17 values, letter 0.78, shuttle 0.65, sleep 0.64, connect4 0.70, fars 0.61,
# MNIST 0.55 (0.83 -> 0.46 s), krkopt 1.05 (0.09 ms); below, a pool lost up to 3.4x
# (mfeat_factors 9.6 -> 22.7 ms, dna 5.4 -> 18.3 ms: columns of 1,500-2,400 rows).
PARALLEL_ROWS = 1 << 13
PARALLEL_VALUES = 1 << 17


def column_value_counts(X: np.ndarray, numeric: np.ndarray) -> list:
    """:func:`value_counts` of each ``numeric`` column of ``X`` (the others: no values), on
    the threads binning has (a fit's ``n_jobs``, as :meth:`Binner.transform`'s) where the
    columns are long and the values many."""
    with numba_threads(None):
        n_threads = min(numba.get_num_threads(), int(np.sum(numeric)))

    def count(j: int) -> tuple[np.ndarray, np.ndarray]:
        return value_counts(X[:, j]) if numeric[j] else NO_VALUES

    if n_threads < 2 or X.shape[0] < PARALLEL_ROWS or X.size < PARALLEL_VALUES:
        return [count(j) for j in range(X.shape[1])]
    with ThreadPoolExecutor(n_threads) as pool:
        return list(pool.map(count, range(X.shape[1])))


def merge_value_counts(*summaries: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray,
                                                                          np.ndarray]:
    """The :func:`value_counts` of the rows of several summaries together (each summary's
    values are increasing and distinct, so two merge in one pass: no sort, and no temporary
    beyond the result; a distributed binner merges its partitions' samples this way)."""
    values, counts = summaries[0]
    for other_values, other_counts in summaries[1:]:
        values, counts = _merge_sorted(np.asarray(values, dtype=np.float64),
                                       np.asarray(counts, dtype=np.int64),
                                       np.asarray(other_values, dtype=np.float64),
                                       np.asarray(other_counts, dtype=np.int64))
    return values, counts


@numba.njit(cache=True, nogil=True)
def _merge_sorted(va, ca, vb, cb):
    out = (np.empty(0), np.empty(0, dtype=np.int64))
    for write in (False, True):  # count the distinct values, then write them
        i = j = n = 0
        while i < va.shape[0] or j < vb.shape[0]:
            if j == vb.shape[0] or (i < va.shape[0] and va[i] < vb[j]):
                value, count = va[i], ca[i]
                i += 1
            elif i == va.shape[0] or vb[j] < va[i]:
                value, count = vb[j], cb[j]
                j += 1
            else:  # equal (0.0 and -0.0 too, as np.unique takes them)
                value, count = va[i], ca[i] + cb[j]
                i += 1
                j += 1
            if write:
                out[0][n], out[1][n] = value, count
            n += 1
        if not write:
            out = (np.empty(n), np.empty(n, dtype=np.int64))
    return out


def _thresholds(values: np.ndarray, counts: np.ndarray, max_bins: int,
                min_count: int = 1) -> np.ndarray:
    """Midpoints between distinct values, chosen so bins hold about equal counts: at most
    one bin per ``min_count`` rows (:class:`Binner`)."""
    if values.size == 0:
        return np.empty(0)
    max_bins = min(max_bins, max(2, int(counts.sum()) // min_count))  # (1: never binding)
    if len(values) <= max_bins:
        cut_after = np.arange(len(values) - 1)
    else:
        # Cut after the distinct value where the cumulative count crosses each quantile.
        cum = np.cumsum(counts)
        targets = cum[-1] * np.arange(1, max_bins) / max_bins
        cut_after = np.unique(np.searchsorted(cum, targets, side="left"))
        cut_after = cut_after[cut_after < len(values) - 1]
    lo, hi = values[cut_after], values[cut_after + 1]
    with np.errstate(over="ignore", invalid="ignore"):
        gap = hi - lo  # overflows for values of opposite sign near the float limit
        mid = np.where(np.isfinite(gap), lo + gap / 2.0, lo / 2.0 + hi / 2.0)
    return np.where(mid < hi, mid, lo)  # adjacent doubles: the midpoint may round up to hi


# Places every value's bin search halves: the power of two above the most thresholds a
# feature has (MAX_BINS_LIMIT - 1), so that a count of them is always one of its places.
N_SEARCHED = 1 << MAX_BINS_LIMIT.bit_length()


def _search_table(thresholds: list[np.ndarray]) -> np.ndarray:
    """(n_features, :data:`N_SEARCHED`): each feature's thresholds, then infinity."""
    table = np.full((len(thresholds), N_SEARCHED), np.inf)
    for j, thr in enumerate(thresholds):
        if len(thr) >= N_SEARCHED:
            raise ValueError(f"feature {j} has {len(thr)} thresholds; at most "
                             f"{N_SEARCHED - 1} can be searched")
        table[j, :len(thr)] = thr
    return table


@numba.njit(parallel=True, cache=True)
def _bin_rows(X, thresholds, missing_bin, out):
    """``out[r, j]`` = number of feature j's thresholds below ``X[r, j]`` (NaN: missing bin).

    Row by row in parallel, so reads and writes run along memory (a column at a time strides
    through all of X: MNIST took seconds that way). ``thresholds``: :data:`N_SEARCHED`
    columns, infinite past each feature's own (:func:`_search_table`), so that every search
    halves the same 256 places in 8 steps, each a select on a comparison rather than a branch
    the values decide: numpy's ``searchsorted(side="left")`` loop, halving each feature's own
    count with branches, took 5x the time on normal values and 255 bins (BENCHMARKS.md,
    "Binning without branches").
    """
    n, d = X.shape
    for r in numba.prange(n):
        for j in range(d):
            x = X[r, j]
            # the count of thresholds below x lies in [base, base + size): the first half's
            # last threshold says which half holds it
            base, size = 0, N_SEARCHED
            while size > 1:
                size >>= 1
                base = base + size if thresholds[j, base + size - 1] < x else base
            out[r, j] = missing_bin if np.isnan(x) else base
