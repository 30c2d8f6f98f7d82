"""QuickBoost (Appel 2017, thesis ch. 3): exact split search that prunes hopeless features early.

Rows are visited heaviest first. Every feature's histogram is first accumulated over the prefix
holding ``first_mass`` of the node's weight; the features are then finished in order of their
preliminary bound, the prefix growing in ``n_steps`` equal steps over the remaining rows. A
feature is dropped as soon as its bound shows it cannot beat the best *full* score found so far.

The bound. The thesis bounds a feature's full best by its best score on the prefix: for REBEL's
score ``sum_k sqrt(s+ s-)`` (superadditive, Cauchy-Schwarz) and the sign-cost score ``min + min``
every candidate scores at least as much on a superset of rows. Each score's
:class:`~rebelboost.search.scores.SplitScore` carries a tighter bound that also uses the unseen
rows' channel totals (see :mod:`.scores`): it never decreases as the prefix grows and equals the
full best when every row is in, so a small first prefix prunes most features.

The bound is applied with a margin for rounding (:func:`rounding_slack`) and with the tie rule
of :func:`~rebelboost.search.splits.pick_split` (lowest index among near-equal scores). The
prefixes only bound; every feature that is not pruned is scored on its exact full histogram,
which the caller supplies (``full_histogram``: in the trees, the same column kernel the
exhaustive search uses, which builds each feature the same way whatever others come along). So
the result equals the exhaustive search bit for bit.

Layout: the prefix of all features; then the most promising features (one per thread) are
finished and set the incumbent; then the other survivors grow together, one row-major pass over
each step's rows, pruned between steps; the last step's survivors are finished.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numba
import numpy as np

from ..binning import BinLayout
from .histograms import HistogramPool, SparseBins, accumulate_histogram, fill_default_bins
from .scores import SplitScore
from .splits import (
    _NO_PRIOR,
    TIE_RTOL,
    Split,
    pick_split,
    scan_feature,
    scan_features,
    scan_features_serial,
)

_UNIT_ROUNDOFF = 2.0**-53
# Below this many row x feature updates a node runs its kernels on one thread: launching a
# parallel region costs more than the work (much more when the cores are shared).
SERIAL_WORK = 1 << 18


class SearchResult(NamedTuple):
    """A node's split (None: no feature can split) and the work done for it."""

    split: Split | None
    histogram_updates: int  # row x feature accumulations


def heaviest_first(channels: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``rows`` ordered by decreasing sum of their channels (stable, so ties keep their order)."""
    return _heaviest(channels, rows)[0]


def _heaviest(channels: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`heaviest_first` and the rows' weights in that order."""
    rows = np.ascontiguousarray(rows, dtype=np.intp)
    weight = _row_sums(np.ascontiguousarray(channels, dtype=np.float64), rows)
    order = np.argsort(-weight, kind="stable")  # stable: the same order on every machine
    return rows[order], weight[order]


def visiting_order(
    channels: np.ndarray, rows: np.ndarray, first_mass: float = 0.9, n_steps: int = 20
) -> tuple[np.ndarray, np.ndarray]:
    """The order a node's search accumulates its rows in, and the prefix ends of its schedule.

    The rows are cut heaviest first into the chunks of :func:`prefix_schedule`; inside a chunk
    they go by increasing index. Every prefix QuickBoost looks at is still a heaviest set, and
    the histogram kernels read the bins and the row-wise sparse entries almost sequentially
    (on MNIST a shuffled order costs 2-3x the time of an ordered one in the sparse kernel).
    Exhaustive and pruned searches both use this order, so they still add the same numbers in
    the same order.
    """
    rows, weight = _heaviest(channels, rows)
    ends = _schedule(np.cumsum(weight), first_mass, n_steps)
    chunk = np.repeat(np.arange(len(ends), dtype=np.int16), np.diff(ends, prepend=0))
    rows, chunk = _by_index(rows, chunk)
    return rows[np.argsort(chunk, kind="stable")], ends  # a counting sort: O(n)


@numba.njit(cache=True, nogil=True)
def _row_sums(channels, rows):
    out = np.empty(rows.shape[0])
    for r in range(rows.shape[0]):
        total = 0.0
        for c in range(channels.shape[1]):
            total += channels[rows[r], c]
        out[r] = total
    return out


def _by_index(rows: np.ndarray, chunk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` in increasing order, each with its chunk."""
    if len(rows) * 8 < rows.max(initial=0):  # few rows of many: sort them
        order = np.argsort(rows)
        return rows[order], chunk[order]
    of_row = np.full(int(rows.max(initial=0)) + 1, -1, dtype=np.int16)
    of_row[rows] = chunk
    present = np.flatnonzero(of_row >= 0)
    return present, of_row[present]


def rounding_slack(score: SplitScore, n_rows: int, n_bins_total: int, n_channels: int,
                   mass: float) -> float:
    """Bound on |computed - exact| of a preliminary bound plus that of a full score.

    Every channel sum in a scan is a floating-point sum of at most ``n_rows + n_bins_total``
    non-negative terms (then one subtraction), so its error is below ``gamma`` times the
    channel's mass; the score's ``rounding`` turns that into an error of the score.
    """
    if not score.has_bound:
        raise TypeError(f"QuickBoost needs a bound for the {score.name} score; it has none")
    # x3: the bound also reads the unseen totals, a difference of two such sums; x3 again: a
    # default bin of sparse bins is a node total minus the other bins, each such a sum.
    gamma = 36.0 * (n_rows + n_bins_total + 4) * _UNIT_ROUNDOFF
    return 2.0 * score.rounding(gamma, n_channels) * mass * (1.0 + 1e-6)


@numba.njit(cache=True, nogil=True)
def bound_feature(hist_f, n_bins, has_missing, missing_bin, code, unseen):
    """Lower bound on a feature's full best score: the least bound over the candidates of
    the one scan (:func:`~rebelboost.search.splits.scan_feature` in its bound mode)."""
    return scan_feature(hist_f, n_bins, has_missing, missing_bin, code, _NO_PRIOR, 0.0,
                        False, True, unseen)[0]


def prefix_schedule(channels_sorted: np.ndarray, first_mass: float, n_steps: int) -> np.ndarray:
    """Prefix ends: the first holds ``first_mass`` of the weight, then equal row steps to the end.

    (Equal steps in rows, not in mass: the light tail holds most rows and little mass.)
    """
    channels_sorted = np.ascontiguousarray(channels_sorted, dtype=np.float64)
    weight = _row_sums(channels_sorted, np.arange(channels_sorted.shape[0], dtype=np.intp))
    return _schedule(np.cumsum(weight), first_mass, n_steps)


def _schedule(mass: np.ndarray, first_mass: float, n_steps: int) -> np.ndarray:
    """:func:`prefix_schedule` from the cumulative row masses."""
    n = mass.shape[0]
    if n == 0:
        return np.zeros(1, dtype=np.int64)
    m0 = min(n, max(1, int(np.searchsorted(mass, first_mass * mass[-1])) + 1))
    return np.unique(np.linspace(m0, n, n_steps + 1).round().astype(np.int64))


def quickboost_split(
    bins: np.ndarray,
    channels: np.ndarray,
    rows: np.ndarray,
    layout: BinLayout,
    score: SplitScore,
    full_histogram: Callable[[np.ndarray], np.ndarray],
    *,
    first_mass: float = 0.9,
    n_steps: int = 20,
    sparse: SparseBins | None = None,
    ends: np.ndarray | None = None,
    pool: HistogramPool | None = None,
) -> SearchResult:
    """Best split of the node ``rows``: ``best_split(full_histogram(all features), ...)``, exactly.

    ``full_histogram(features)`` returns a (n_features, n_bins_total, C) histogram of the node
    whose listed features are exact (the others may hold anything); it is called for the few
    features that reach the end (:func:`~rebelboost.search.histograms.column_histograms` builds
    each feature the same way whichever others come along). The bounds come from prefixes of
    ``rows`` accumulated here: pass the rows and prefix ``ends`` of :func:`visiting_order`
    (without ``ends`` the schedule is cut from the given order, which should then be heaviest
    first). ``sparse`` (:func:`~rebelboost.search.histograms.sparse_bins` of ``bins``) speeds up
    the prefixes of sparse data; ``pool`` lends their buffer.
    """
    rows = np.ascontiguousarray(rows, dtype=np.intp)
    n_features = bins.shape[1]
    n_value_bins, has_missing, missing_bin, n_bins_total = layout
    ch = np.ascontiguousarray(channels[rows])
    n_rows, n_channels = ch.shape
    slack = rounding_slack(score, n_rows, n_bins_total, n_channels, float(ch.sum()))
    if ends is None:
        ends = prefix_schedule(ch, first_mass, n_steps)
    ends = np.asarray(ends, dtype=np.int64)
    if len(ends) == 0 or ends[-1] != n_rows or np.any(np.diff(ends) <= 0) or ends[0] <= 0 < n_rows:
        raise ValueError("ends must increase from a positive first prefix to the row count")
    # unseen[i]: channel totals of the rows after prefix end ``ends[i]``.
    seen = np.concatenate([np.zeros((1, n_channels)), np.cumsum(ch, axis=0)])[ends]
    unseen = np.maximum(seen[-1] - seen, 0.0)
    # Features without a candidate split score inf whatever the rows: never touch them.
    candidates = np.flatnonzero((n_value_bins >= 2) | (has_missing & (n_value_bins >= 1)))
    if len(candidates) == 0:
        return SearchResult(None, 0)
    best_score = np.full(n_features, np.inf)
    best_bin = np.zeros(n_features, dtype=np.int32)
    best_ml = np.zeros(n_features, dtype=np.bool_)
    args = (n_value_bins, has_missing, missing_bin, score.code)
    k = _SERIAL if n_rows * len(candidates) < SERIAL_WORK else _PARALLEL

    def finish(features) -> None:
        """Score ``features`` on their exact full histograms."""
        best = k.scan(full_histogram(features), features, *args)
        best_score[features], best_bin[features], best_ml[features] = best

    if len(ends) == 1:  # the first prefix already holds every row
        finish(candidates)
        return SearchResult(pick_split(best_score, best_bin, best_ml), n_rows * len(candidates))

    # 1. The heaviest prefix, every feature: a bound for each.
    shape = (n_features, n_bins_total, n_channels)
    hist = np.zeros(shape) if pool is None else pool.zeros(shape)
    bound_args = (n_value_bins, has_missing, missing_bin, score.code)
    if sparse is not None and k is _PARALLEL:  # the row-wise layout: all features at once
        accumulate_histogram(bins, rows, ch, 0, int(ends[0]), None, hist, sparse)
    else:
        _accumulate_range(k, bins, rows, ch, 0, ends[0], candidates, hist, sparse)
    updates = int(ends[0]) * len(candidates)

    def prefix_bounds(features, step) -> np.ndarray:
        if sparse is not None:
            fill_default_bins(hist, features, sparse.default_bin, seen[step])
        return k.bound(hist, features, *bound_args, unseen[step])

    prelim = prefix_bounds(candidates, 0)
    order = np.argsort(prelim, kind="stable")
    queue, prelim = candidates[order], prelim[order]

    # 2. The most promising features (one per thread) are finished and set the incumbent.
    n_lead = 1 if k is _SERIAL else max(1, numba.get_num_threads())
    lead = queue[:n_lead]
    finish(lead)
    updates += n_rows * len(lead)
    incumbent = best_score[lead].min()
    incumbent_f = int(lead[best_score[lead] == incumbent].min())

    # 3. Everyone else grows step by step, all together (one pass over each step's rows),
    #    dropped as soon as the bound allows; the survivors of the last step are finished.
    alive, prelim = queue[n_lead:], prelim[n_lead:]
    last = len(ends) - 1
    for step in range(last):
        keep = ~prunable(prelim, alive, incumbent, incumbent_f, slack)
        alive, prelim = alive[keep], prelim[keep]
        if len(alive) == 0:
            break
        if step + 1 < last:
            _accumulate_range(k, bins, rows, ch, ends[step], ends[step + 1], alive, hist, sparse)
            updates += int(ends[step + 1] - ends[step]) * len(alive)
            prelim = prefix_bounds(alive, step + 1)
        else:
            finish(alive)
            updates += n_rows * len(alive)
    return SearchResult(pick_split(best_score, best_bin, best_ml), updates)


def prunable(bound, features, incumbent: float, incumbent_f: int, slack: float) -> np.ndarray:
    """Which features' full bests provably cannot win or change the winner of ``pick_split``.

    ``lower`` bounds the full best from below (the scan may stop within ``TIE_RTOL`` above its
    minimum, and rounding moves the two scores by at most ``slack`` in all). A feature is safe to
    drop when it cannot even tie the incumbent (a finished feature's exact full score), or when
    it cannot beat it and the incumbent's feature, of lower index, wins every tie against it.
    """
    lower = bound * (1.0 - 2.0 * TIE_RTOL) - slack
    return (lower > incumbent * (1.0 + 2.0 * TIE_RTOL)) | (
        (lower >= incumbent) & (features > incumbent_f)
    )


def _accumulate_range(k, bins, rows, ch, r0, r1, features, hist, sparse) -> None:
    """Add sorted rows ``r0:r1`` (channels ``ch[r]`` of row ``rows[r]``) to ``features``' bins,
    in row order per (feature, bin) as every histogram is; on the calling thread for small
    nodes. With ``sparse``, rows in a feature's default bin are left out
    (``fill_default_bins`` sets that bin)."""
    accumulate_histogram(bins, rows, ch, int(r0), int(r1), features, hist, sparse,
                         parallel=False if k is _SERIAL else None)


@numba.njit(parallel=True, cache=True, nogil=True)
def _bound_parallel(hist, features, n_value_bins, has_missing, missing_bin, code, unseen):
    """``bound_feature`` of each listed feature."""
    n = features.shape[0]
    out = np.empty(n)
    for j in numba.prange(n):
        f = features[j]
        out[j] = bound_feature(hist[f], n_value_bins[f], has_missing[f], missing_bin, code,
                               unseen)
    return out


@numba.njit(cache=True, nogil=True)
def _bound_serial(hist, features, n_value_bins, has_missing, missing_bin, code, unseen):
    """:func:`_bound_parallel` on the calling thread."""
    n = features.shape[0]
    out = np.empty(n)
    for j in range(n):
        f = features[j]
        out[j] = bound_feature(hist[f], n_value_bins[f], has_missing[f], missing_bin, code,
                               unseen)
    return out


class _Kernels(NamedTuple):
    scan: object
    bound: object


_PARALLEL = _Kernels(scan_features, _bound_parallel)
_SERIAL = _Kernels(scan_features_serial, _bound_serial)
