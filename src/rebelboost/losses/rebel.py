"""REBEL's cost-sensitive exponential loss: subcosts, weights, closed-form steps.

Each sample n has a cost row ``c_n`` (``c_n[k]`` = cost of predicting k; ``C[y_n]`` for a cost
matrix ``C``, or a row of ``sample_cost``) and subcosts ``(c+_n, c-_n)``; the loss of scores
``H`` (n_samples x K) is the weighted mean over samples of
``<c+_n, exp(H_n)> + <c-_n, exp(-H_n)>``. Three choices of subcosts (``M_n = max_k c_n[k]``):

* ``'calibrated'``: ``c+ = c / 2``, ``c- = (M - c) / 2``.
* ``'paper'`` (REBEL paper, eq. 2): ``c+ = (c - beta) / 2``, ``c- = (M - c) / 2`` with
  ``beta = sum_k c[k] - (K-1) M`` (<= 0).
* ``'thesis'`` (Appel's thesis): ``c+ = sqrt(K-1) / (2 ||c||) c**2``,
  ``c- = ||c|| / (2 sqrt(K-1)) onehot(y)``.

Each upper-bounds the cost of ``argmax_k H_k`` (``c+_k exp(H_k) + c-_y exp(-H_y) >= c[k]`` when
``H_k >= H_y``, by AM-GM). All three coincide for two classes and for ``C = 1 - I``, where the
loss is ``K / 2`` at ``H = 0``.

Why the choice matters: per class the population minimiser at x is ``H_k = 1/2 ln(B_k / A_k)``
with ``A_k = E[c+_k | x]``, ``B_k = E[c-_k | x]``. With the risk ``r_k = E[c[k] | x]`` of
predicting k and ``A = E[M | x]``, calibrated subcosts give ``H_k = 1/2 ln((A - r_k) / r_k)``
and the paper's ``1/2 ln((A - r_k) / (r_k - E[beta | x]))``: both strictly decreasing in
``r_k``, so ``argmax H`` is the least-risk (Bayes) class. The thesis minimiser's argmax is
``argmax_k p_k ||c_k|| / sum_y p_y C[y,k]**2 / ||c_y||``, which is not the least-risk class in
general for K >= 3 (``tests/test_costs.py`` checks both claims on random draws). With
calibrated subcosts ``r_k / A = 1 / (1 + exp(2 H_k))`` at the minimiser: the scores estimate
each class's risk relative to the expected largest cost.

Weights ``w+ = c+ exp(H)``, ``w- = c- exp(-H)`` are handed out scaled by one common factor
(their largest entry is 1), which leaves every step and loss ratio unchanged and keeps them
finite however large ``H`` grows.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from scipy.special import logsumexp

from ..exact_sums import exact_sum

# The dtype the vector-leaf boosters keep their rows' weight channels in (the largest weight
# per iteration scaled to 1, so float32's range holds them): half the bytes per row of
# float64, and the fits it gives predict the same (every test label of the 46-set suite the
# same as with float64 channels: benchmarks/ab_test_error.py, BENCHMARKS.md, stop 62). Every
# sum of them is float64.
CHANNEL_DTYPE = np.float32

# Smoothing of empty sums, relative to each class's total weight: caps |a_k| at ln(1/eps)/2.
STEP_EPS = 1e-10


SUBCOSTS = ("calibrated", "paper", "thesis")


def subcosts(
    cost_matrix: np.ndarray | None,
    y: np.ndarray,
    kind: str = "thesis",
    sample_cost: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample subcost vectors ``(c+, c-)``, each (n_samples, K).

    The cost rows are ``cost_matrix[y]``, or ``sample_cost`` (n_samples x K) when given.
    """
    rows = np.asarray(cost_matrix)[y] if sample_cost is None else np.asarray(sample_cost, float)
    n, n_classes = rows.shape
    peak = rows.max(axis=1, keepdims=True)
    if kind == "calibrated":
        return rows / 2.0, (peak - rows) / 2.0
    if kind == "paper":
        # <= 0 exactly; the minimum keeps rounding from pushing c+ at the true class below 0.
        beta = np.minimum(rows.sum(axis=1, keepdims=True) - (n_classes - 1) * peak, 0.0)
        return (rows - beta) / 2.0, (peak - rows) / 2.0
    if kind != "thesis":
        raise ValueError(f"subcosts must be one of {SUBCOSTS}, got {kind!r}")
    # Scaled norms: squaring tiny (or huge) costs would underflow (overflow) to 0 (inf).
    norms = peak * np.linalg.norm(rows / peak, axis=1, keepdims=True)
    root = np.sqrt(n_classes - 1.0)
    c_plus = root / 2.0 * rows * (rows / norms)
    c_minus = np.zeros_like(c_plus)
    c_minus[np.arange(n), y] = norms[:, 0] / (2.0 * root)
    return c_plus, c_minus


_subcosts = subcosts  # RebelLoss's parameter of the same name shadows the function


class RebelLoss:
    """The loss of one training set; ``sample_weight`` scales each sample's subcosts.

    ``subcosts`` picks the subcosts (module docstring); ``sample_cost`` (n_samples x K), when
    given, replaces the rows ``cost_matrix[y]``. Rows that are their class's cost row (a cost
    matrix, or ``sample_cost`` equal to one) keep a K x K table of log subcosts and each row's
    log weight, not two (n, K) arrays.
    """

    def __init__(self, cost_matrix: np.ndarray | None, y: np.ndarray,
                 sample_weight: np.ndarray, subcosts: str = "thesis",
                 sample_cost: np.ndarray | None = None, weight_total: float | None = None,
                 exact: bool = False):
        """``weight_total`` (default: ``sample_weight.sum()``) normalises the weights; a
        partition of a distributed training set passes the whole set's total. ``exact``:
        totals are exact sums rounded once (:mod:`..exact_sums`; the same on any
        partitioning of the rows)."""
        self.exact = exact
        if weight_total is None:
            weight_total = exact_sum(sample_weight) if exact else sample_weight.sum()
        rows, self._row_of, row_class = _cost_table(cost_matrix, np.asarray(y), sample_cost)
        c_plus, c_minus = _subcosts(None, row_class, subcosts, sample_cost=rows)
        w = sample_weight / weight_total
        with np.errstate(divide="ignore"):
            self._log_plus = np.log(c_plus)
            self._log_minus = np.log(c_minus)
            self._log_w = np.log(np.asarray(w, dtype=np.float64))
        self._row_of = np.ascontiguousarray(self._row_of, dtype=np.intp)
        self.n_classes = c_plus.shape[1]
        self._shape = (len(self._log_w), self.n_classes)

    def _tables(self):
        return self._log_plus, self._log_minus, self._row_of, self._log_w

    def log_loss(self, scores: np.ndarray) -> float:
        """Natural log of the loss, exact for any size of ``scores`` (one fused pass: no
        (n, K) temporaries, which were the peak of memory on sets of many rows)."""
        scores = self._check_scores(scores)
        shift = self.max_exponent(scores)
        if not np.isfinite(shift):  # no weight at all (-inf), or an infinite one
            return float(shift)
        total = self._total(_fill_weights(*self._tables(), scores, shift, None))
        return float(shift + _log(total))

    def loss(self, scores: np.ndarray) -> float:
        return _exp(self.log_loss(scores))  # (a loss beyond the float range is inf)

    def weights(self, scores: np.ndarray) -> tuple[np.ndarray, float]:
        """Channels ``[w+, w-]`` (n_samples x 2K, C-ordered) and their scale.

        The true weights are ``scale * channels``; the largest channel entry is 1.
        """
        channels, scale, _ = self.weights_and_loss(scores)
        return channels, scale

    def weights_and_loss(self, scores: np.ndarray, out: np.ndarray | None = None
                         ) -> tuple[np.ndarray, float, float]:
        """:meth:`weights` and :meth:`loss` at once: the loss is the weights' total
        (channels written into ``out`` when given: no new (n, 2K) array an iteration)."""
        scores = self._check_scores(scores)
        channels = self._channels_out(scores, out)
        if scores.size >= PARALLEL_CELLS or not len(scores):
            shift = _max_exponent(*self._tables(), scores) if len(scores) else -np.inf
            channels, total = self.scaled_weights(scores, shift, channels)
        else:  # few rows: one compiled call
            shift, row_sums = _weights_serial(*self._tables(), scores, channels)
            total = self._total(row_sums)
        return channels, *scale_and_loss(shift, total)

    def max_exponent(self, scores: np.ndarray) -> float:
        """The largest ``log w``: the channels' common scale is its exponential (a
        distributed fit takes the largest over partitions)."""
        scores = self._check_scores(scores)
        return _max_exponent(*self._tables(), scores) if len(scores) else -np.inf

    def scaled_weights(self, scores: np.ndarray, shift: float, out: np.ndarray | None = None
                       ) -> tuple[np.ndarray, float]:
        """Channels ``exp([log+ + H, log- - H] - shift)`` (into ``out`` if given: a float64
        array of that shape whose rows are contiguous, such as the first columns of a wider
        array) and their total."""
        channels, row_sums = self.scaled_row_weights(scores, shift, out)
        return channels, self._total(row_sums)

    def scaled_row_weights(self, scores: np.ndarray, shift: float,
                           out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`scaled_weights` with each row's total instead of their sum (a partition of
        an exact fit adds them to the other partitions' exactly)."""
        scores = self._check_scores(scores)
        channels = self._channels_out(scores, out)
        return channels, _fill_weights(*self._tables(), scores, shift, channels)

    def _channels_out(self, scores: np.ndarray, out: np.ndarray | None) -> np.ndarray:
        shape = (scores.shape[0], 2 * self.n_classes)
        channels = np.empty(shape) if out is None else out
        if (channels.shape != shape or channels.dtype not in (np.float64, CHANNEL_DTYPE)
                or (channels.shape[0] > 0 and channels.strides[1] != channels.itemsize)):
            raise ValueError(f"out must be a float64 or float32 array of shape {shape} with "
                             "contiguous rows")
        return channels

    def _total(self, row_sums: np.ndarray) -> float:
        return exact_sum(row_sums) if self.exact else pairwise_sum(row_sums)

    def log_partial_sums(self) -> np.ndarray:
        """``log`` of the ``c+`` and ``c-`` totals at ``H = 0`` (a partition's share of the
        initial loss, combined with ``logaddexp``)."""
        log_w = self._log_w[:, None]
        return np.array([logsumexp(self._log_plus[self._row_of] + log_w),
                         logsumexp(self._log_minus[self._row_of] + log_w)])

    def _check_scores(self, scores: np.ndarray) -> np.ndarray:
        scores = np.ascontiguousarray(scores, dtype=np.float64)
        if scores.shape != self._shape:
            raise ValueError(f"scores must have shape {self._shape}, got {scores.shape}")
        return scores


# Row x channel (or class) cells from which the weights and score updates run on threads
# (below, waking the threads costs more than the work: a small data set fits 500 trees of
# 45-120 rows, 0.21-0.33 s of CPU with threads against 0.10-0.12 s without).
PARALLEL_CELLS = 1 << 16


@numba.njit(cache=True, nogil=True)
def scale_and_loss(shift: float, total: float) -> tuple[float, float]:
    """The channels' scale ``e^shift`` and the loss ``e^shift * total`` (their total at that
    scale), infinite past the largest double (the channels stay finite; these may not).
    Compiled: the compiled boosting loop takes the same values."""
    return _exp(shift), _exp(shift + _log(total))


@numba.njit(cache=True, nogil=True)
def _exp(x: float) -> float:
    """``e^x``, infinite past the largest double (as numpy's, without its error state)."""
    return math.exp(x)


@numba.njit(cache=True, nogil=True)
def _log(x: float) -> float:
    """``ln x``: -inf at 0, NaN below (as numpy's, without its error state)."""
    return math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan)


def _cost_table(cost_matrix, y, sample_cost):
    """(cost rows, each sample's row among them, each row's class): the cost matrix's class
    rows; for ``sample_cost``, one row per class when every sample's row is its class's,
    else every sample's own row."""
    if sample_cost is None:
        table = np.asarray(cost_matrix, dtype=np.float64)
        return table, y, np.arange(len(table))
    rows = np.ascontiguousarray(sample_cost, dtype=np.float64)
    per_sample = rows, np.arange(rows.shape[0]), y
    if rows.ndim != 2 or y.shape != (rows.shape[0],) or not len(y) or y.min() < 0:
        return per_sample
    classes, first = np.unique(y, return_index=True)
    table = np.repeat(rows[first[:1]], max(int(classes[-1]) + 1, rows.shape[1]), axis=0)
    table[classes] = rows[first]  # (the rows of classes without samples are never read)
    codes = np.ascontiguousarray(y, dtype=np.intp)
    if not _rows_match(rows, table, codes):
        return per_sample
    return table, y, np.arange(len(table))


@numba.njit(cache=True, nogil=True)
def _rows_match(rows, table, codes):
    for r in range(rows.shape[0]):
        for c in range(rows.shape[1]):
            if rows[r, c] != table[codes[r], c]:
                return False
    return True


def _max_exponent(log_plus, log_minus, row_of, log_w, scores):
    """The largest of ``[log+ + H, log- - H]`` (the shift that scales the largest weight to 1;
    fused and parallel with :func:`_fill_weights`: numpy's version made four passes over
    N x 2K arrays, ~8 ms an iteration on MNIST). Row ``r``'s log subcosts are
    ``log±[row_of[r]] + log_w[r]``."""
    if scores.size >= PARALLEL_CELLS:
        return _max_exponent_parallel(log_plus, log_minus, row_of, log_w, scores)
    return _max_exponent_serial(log_plus, log_minus, row_of, log_w, scores)


def _fill_weights(log_plus, log_minus, row_of, log_w, scores, shift, channels):
    """``channels = exp([log+ + H, log- - H] - shift)`` (None: not written); returns each
    row's channel sum."""
    fill = _fill_weights_parallel if scores.size >= PARALLEL_CELLS else _fill_weights_serial
    return fill(log_plus, log_minus, row_of, log_w, scores, shift, channels)


@numba.njit(cache=True, nogil=True, inline="always")
def _row_max(log_plus, log_minus, row_of, log_w, scores, r):
    top = -np.inf
    j, lw = row_of[r], log_w[r]
    for c in range(scores.shape[1]):
        top = max(top, log_plus[j, c] + lw + scores[r, c], log_minus[j, c] + lw - scores[r, c])
    return top


@numba.njit(cache=True, nogil=True, inline="always")
def _row_fill(log_plus, log_minus, row_of, log_w, scores, shift, channels, r):
    k = scores.shape[1]
    j, lw = row_of[r], log_w[r]
    total = 0.0
    for c in range(k):
        e = log_plus[j, c] + lw
        w = math.exp(e + scores[r, c] - shift) if e > -np.inf else 0.0
        if channels is not None:  # (None: the total only, for the loss)
            channels[r, c] = w
        total += w
    for c in range(k):  # a zero subcost (log -inf: w- off the true class) skips its exp
        e = log_minus[j, c] + lw
        w = math.exp(e - scores[r, c] - shift) if e > -np.inf else 0.0
        if channels is not None:
            channels[r, k + c] = w
        total += w
    return total


@numba.njit(parallel=True, cache=True, nogil=True)
def _max_exponent_parallel(log_plus, log_minus, row_of, log_w, scores):
    row_max = np.empty(scores.shape[0])
    for r in numba.prange(scores.shape[0]):
        row_max[r] = _row_max(log_plus, log_minus, row_of, log_w, scores, r)
    return row_max.max()


@numba.njit(cache=True, nogil=True)
def _max_exponent_serial(log_plus, log_minus, row_of, log_w, scores):
    row_max = np.empty(scores.shape[0])
    for r in range(scores.shape[0]):
        row_max[r] = _row_max(log_plus, log_minus, row_of, log_w, scores, r)
    return row_max.max()


@numba.njit(cache=True, nogil=True)
def _weights_serial(log_plus, log_minus, row_of, log_w, scores, channels):
    """:func:`_max_exponent_serial` and :func:`_fill_weights_serial` in one call."""
    shift = _max_exponent_serial(log_plus, log_minus, row_of, log_w, scores)
    return shift, _fill_weights_serial(log_plus, log_minus, row_of, log_w, scores, shift,
                                       channels)


@numba.njit(parallel=True, cache=True, nogil=True)
def _fill_weights_parallel(log_plus, log_minus, row_of, log_w, scores, shift, channels):
    row_sums = np.empty(scores.shape[0])
    for r in numba.prange(scores.shape[0]):
        row_sums[r] = _row_fill(log_plus, log_minus, row_of, log_w, scores, shift, channels, r)
    return row_sums


@numba.njit(cache=True, nogil=True)
def _fill_weights_serial(log_plus, log_minus, row_of, log_w, scores, shift, channels):
    row_sums = np.empty(scores.shape[0])
    for r in range(scores.shape[0]):
        row_sums[r] = _row_fill(log_plus, log_minus, row_of, log_w, scores, shift, channels, r)
    return row_sums


@numba.njit(cache=True, nogil=True)
def pairwise_sum(values):
    """``values.sum()`` as numpy adds a contiguous float64 array (pairwise halves down to
    blocks of at most 128, each summed with 8 partial sums), callable from compiled code: a
    compiled boosting loop's loss is the Python loop's bit for bit. (The halves are walked
    with a stack: numba's cache crashes on recursive functions.)"""
    start = np.zeros(64, dtype=np.int64)  # the halves being summed, outermost first
    size = np.zeros(64, dtype=np.int64)
    first = np.zeros(64)  # a half's first part's sum, once known
    waiting = np.zeros(64, dtype=np.int8)  # 0: not split yet, 1: first part, 2: second part
    top = 0
    size[0] = values.shape[0]
    while True:
        if size[top] > 128 and waiting[top] == 0:
            waiting[top] = 1
            top += 1
            start[top], size[top], waiting[top] = start[top - 1], _half(size[top - 1]), 0
            continue
        total = _block_sum(values, start[top], size[top])
        while True:  # hand the sum up until a half has its second part still to sum
            top -= 1
            if top < 0:
                return total
            if waiting[top] == 2:
                total = first[top] + total
                continue
            first[top], waiting[top] = total, 2
            half = _half(size[top])
            top += 1
            start[top], size[top], waiting[top] = start[top - 1] + half, size[top - 1] - half, 0
            break


@numba.njit(cache=True, nogil=True, inline="always")
def _half(n):
    half = n // 2
    return half - half % 8


@numba.njit(cache=True, nogil=True, inline="always")
def _block_sum(a, lo, n):
    if n < 8:
        total = 0.0
        for i in range(lo, lo + n):
            total += a[i]
        return total
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    stop = lo + n - n % 8
    for i in range(lo + 8, stop, 8):
        r0, r1, r2, r3 = r0 + a[i], r1 + a[i + 1], r2 + a[i + 2], r3 + a[i + 3]
        r4, r5, r6, r7 = r4 + a[i + 4], r5 + a[i + 5], r6 + a[i + 6], r7 + a[i + 7]
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(stop, lo + n):
        total += a[i]
    return total


def add_slot_values(scores, slot_of_row, weight_of_row, values) -> None:
    """``scores[r] += weight_of_row[r] * values[slot_of_row[r]]`` in place for every row
    (``weight_of_row`` None: every weight 1), on threads from ``PARALLEL_CELLS`` cells."""
    add = _add_slot_values_parallel if scores.size >= PARALLEL_CELLS else _add_slot_values_serial
    add(scores, slot_of_row, weight_of_row, values)


@numba.njit(cache=True, nogil=True, inline="always")
def _add_row(scores, slot_of_row, weight_of_row, values, r):
    s = slot_of_row[r]
    if weight_of_row is None:
        for k in range(scores.shape[1]):
            scores[r, k] += values[s, k]
    else:
        w = weight_of_row[r]
        for k in range(scores.shape[1]):
            scores[r, k] += w * values[s, k]


@numba.njit(parallel=True, cache=True, nogil=True)
def _add_slot_values_parallel(scores, slot_of_row, weight_of_row, values):
    for r in numba.prange(scores.shape[0]):
        _add_row(scores, slot_of_row, weight_of_row, values, r)


@numba.njit(cache=True, nogil=True)
def _add_slot_values_serial(scores, slot_of_row, weight_of_row, values):
    for r in range(scores.shape[0]):
        _add_row(scores, slot_of_row, weight_of_row, values, r)


def step_vector(s_plus: np.ndarray, s_minus: np.ndarray) -> np.ndarray:
    """Closed-form ``a* = 1/2 ln(s- / s+)`` per class, smoothed so empty sums stay finite."""
    # Floored at the smallest normal double: for subnormal sums the relative eps underflows to
    # 0, which would turn an empty side into an infinite step.
    eps = np.maximum(STEP_EPS * (s_plus + s_minus), np.finfo(np.float64).tiny)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = 0.5 * (np.log(s_minus + eps) - np.log(s_plus + eps))
    return np.where(s_plus + s_minus > 0, a, 0.0)


def step_loss(s_plus: np.ndarray, s_minus: np.ndarray, a: np.ndarray) -> float:
    """Loss (in the channels' scale) after a step ``a`` on sums ``s+``, ``s-``."""
    return float(np.sum(s_plus * np.exp(a) + s_minus * np.exp(-a)))


def binary_sums(
    plus_side: np.ndarray, minus_side: np.ndarray, n_classes: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(s+, s-)`` of a binary learner from the channel sums where it emits +1 and -1."""
    k = n_classes
    s_plus = plus_side[:k] + minus_side[k:]
    s_minus = plus_side[k:] + minus_side[:k]
    return s_plus, s_minus

