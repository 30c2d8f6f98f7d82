"""QuickBoost (Appel 2017, thesis ch. 3): exact split search that prunes hopeless features early.

Rows are visited heaviest first. Every feature's histogram is first accumulated over the prefix
holding ``first_mass`` of the node's weight; the features are then finished in order of their
preliminary best score, the prefix growing in ``n_steps`` equal steps over the remaining rows.
A feature is dropped as soon as its preliminary best score on the prefix shows it cannot beat
the best *full* score found so far.

Parallel layout (few kernel launches per node): the prefix of all features; then the most
promising features (one per thread) run to the end and set the first incumbent; then the rest
are dealt round-robin to one lane per thread, each lane finishing its features in order and
tightening its own incumbent (lanes do not share, so the work is deterministic).

Why this is exact: for REBEL's score ``sum_k sqrt(s+ s-)`` (superadditive, Cauchy-Schwarz) and the
sign-cost score ``min + min`` (a sum of minima of sums), every candidate split scores at least as
much on a superset of rows as on a subset, and so does the best candidate: a feature's preliminary
best is a lower bound on its full best. The bound is applied with a margin for rounding
(:func:`rounding_slack`) and with the tie rule of :func:`~rebelboost.search.splits.pick_split`
(lowest index among near-equal scores), so the result equals the exhaustive search over a
histogram built in the same row order, bit for bit: the surviving features accumulate the same
additions per (feature, bin) in the same order and are scanned by the same code.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from .histogram import accumulate_histogram, build_histogram
from .splits import (
    TIE_RTOL,
    Split,
    best_split,
    pick_split,
    rebel_score,
    scan_feature,
    sign_cost_score,
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
    weight = channels[rows].sum(axis=1)
    return rows[np.argsort(-weight, kind="stable")]


def rounding_slack(score, n_rows: int, n_bins_total: int, n_channels: int, mass: float) -> float:
    """Bound on |computed - exact| of a preliminary score plus that of a full score.

    Every channel sum in a scan is a floating-point sum of at most ``n_rows + n_bins_total``
    non-negative terms (then one subtraction), so its error is below ``gamma`` times the
    channel's mass. ``min`` is 1-Lipschitz; ``sqrt(x y)`` moves by at most
    ``sqrt(|x'y' - xy|)``, hence the square root of ``gamma`` for the REBEL score.
    """
    gamma = 4.0 * (n_rows + n_bins_total + 4) * _UNIT_ROUNDOFF
    if score is rebel_score:
        error = math.sqrt(gamma * (1.0 + gamma)) + (n_channels + 4) * _UNIT_ROUNDOFF
    elif score is sign_cost_score:
        error = 2.0 * (gamma + 4.0 * _UNIT_ROUNDOFF)
    else:
        raise TypeError("QuickBoost needs a rounding bound for this score; none is known")
    return 2.0 * error * mass * (1.0 + 1e-6)


def prefix_schedule(channels_sorted: np.ndarray, first_mass: float, n_steps: int) -> np.ndarray:
    """Prefix ends: the first holds ``first_mass`` of the weight, then equal row steps to the end.

    (Equal steps in rows, not in mass: the light tail holds most rows and little mass.)
    """
    n = channels_sorted.shape[0]
    if n == 0:
        return np.zeros(1, dtype=np.int64)
    mass = np.cumsum(channels_sorted.sum(axis=1))
    m0 = min(n, max(1, int(np.searchsorted(mass, first_mass * mass[-1])) + 1))
    return np.unique(np.linspace(m0, n, n_steps + 1).round().astype(np.int64))


def quickboost_split(
    bins: np.ndarray,
    channels: np.ndarray,
    rows: np.ndarray,
    n_value_bins: np.ndarray,
    has_missing: np.ndarray,
    missing_bin: int,
    n_bins_total: int,
    score,
    *,
    prune: bool = True,
    first_mass: float = 0.9,
    n_steps: int = 20,
) -> SearchResult:
    """Best split of the node ``rows`` (accumulated in the given order: pass heaviest first).

    Equals ``best_split(build_histogram(bins, channels, rows, n_bins_total), ...)`` exactly.
    With ``prune=False`` it is that exhaustive search (one histogram over all rows).
    """
    rows = np.ascontiguousarray(rows, dtype=np.intp)
    n_features = bins.shape[1]
    if not prune:
        hist = build_histogram(bins, channels, rows, n_bins_total)
        split = best_split(hist, n_value_bins, has_missing, missing_bin, score)
        return SearchResult(split, len(rows) * n_features)

    ch = np.ascontiguousarray(channels[rows])
    n_rows, n_channels = ch.shape
    slack = rounding_slack(score, n_rows, n_bins_total, n_channels, float(ch.sum()))
    ends = prefix_schedule(ch, first_mass, n_steps)
    # Features without a candidate split score inf whatever the rows: never touch them.
    candidates = np.flatnonzero((n_value_bins >= 2) | (has_missing & (n_value_bins >= 1)))
    if len(candidates) == 0:
        return SearchResult(None, 0)
    hist = np.zeros((n_features, n_bins_total, n_channels))
    best_score = np.full(n_features, np.inf)
    best_bin = np.zeros(n_features, dtype=np.int32)
    best_ml = np.zeros(n_features, dtype=np.bool_)
    args = (n_value_bins, has_missing, missing_bin, score)
    k = _SERIAL if n_rows * len(candidates) < SERIAL_WORK else _PARALLEL
    n_lanes = 1 if k is _SERIAL else max(1, numba.get_num_threads())

    # 1. The heaviest prefix, every feature.
    _accumulate_range(k, bins, rows, ch, 0, ends[0], candidates, hist)
    updates = int(ends[0]) * len(candidates)
    prelim, pbin, pml = k.scan(hist, candidates, *args)
    if ends[0] == n_rows:  # the prefix already holds every row
        best_score[candidates], best_bin[candidates], best_ml[candidates] = prelim, pbin, pml
        return SearchResult(pick_split(best_score, best_bin, best_ml), updates)
    order = np.argsort(prelim, kind="stable")
    queue, prelim = candidates[order], prelim[order]

    # 2. The most promising features run to the end (nothing to prune against yet).
    lead = queue[:n_lanes]
    _accumulate_range(k, bins, rows, ch, ends[0], n_rows, lead, hist)
    updates += (n_rows - int(ends[0])) * len(lead)
    scores, sbin, sml = k.scan(hist, lead, *args)
    best_score[lead], best_bin[lead], best_ml[lead] = scores, sbin, sml
    incumbent = scores.min()
    incumbent_f = int(lead[scores == incumbent].min())

    # 3. Everyone else, step by step, pruned as soon as the bound allows.
    rest = queue[n_lanes:]
    if len(rest):
        # The light rows, feature-major: each lane then streams one feature's bins contiguously.
        light_bins = np.ascontiguousarray(bins[rows[ends[0]:]].T)
        updates += k.finish(
            light_bins, ch, ends, rest, prelim[n_lanes:], hist, *args, incumbent, incumbent_f,
            slack, min(n_lanes, len(rest)), best_score, best_bin, best_ml,
        )
    return SearchResult(pick_split(best_score, best_bin, best_ml), updates)


@numba.njit(cache=True, nogil=True, inline="always")
def _prunable(prelim, feature, incumbent, incumbent_f, slack):
    """Whether a feature's full best provably cannot win or change the winner of ``pick_split``.

    ``lower`` bounds the full best from below (the scan may stop within ``TIE_RTOL`` above its
    minimum, and rounding moves the two scores by at most ``slack`` in all). A feature is safe to
    drop when it cannot even tie the incumbent (a finished feature's exact full score), or when
    it cannot beat it and the incumbent's feature, of lower index, wins every tie against it.
    """
    lower = prelim * (1.0 - 2.0 * TIE_RTOL) - slack
    return lower > incumbent * (1.0 + 2.0 * TIE_RTOL) or (
        lower >= incumbent and feature > incumbent_f
    )


def _finish_with_pruning(
    light_bins, ch, ends, features, prelim, hist, n_value_bins, has_missing, missing_bin, score,
    incumbent, incumbent_f, slack, n_lanes, best_score, best_bin, best_ml,
):
    """Grow each feature's prefix step by step until pruned or complete; returns the updates.

    Lane ``l`` takes features ``l, l + n_lanes, ...`` (best preliminary first) and records the
    complete ones' full bests in ``best_*``; its incumbent starts at the shared one.
    ``light_bins[f, r - ends[0]]`` is the bin of sorted row ``r``.
    """
    n_channels = ch.shape[1]
    m0 = ends[0]
    work = np.zeros(n_lanes, dtype=np.int64)
    for lane in numba.prange(n_lanes):
        inc, inc_f = incumbent, incumbent_f
        for j in range(lane, features.shape[0], n_lanes):
            f = features[j]
            s, fbin, fml = prelim[j], 0, False
            complete = True
            for step in range(ends.shape[0] - 1):
                if _prunable(s, f, inc, inc_f, slack):
                    complete = False
                    break
                for r in range(ends[step], ends[step + 1]):
                    b = light_bins[f, r - m0]
                    for c in range(n_channels):
                        hist[f, b, c] += ch[r, c]
                work[lane] += ends[step + 1] - ends[step]
                s, fbin, fml = scan_feature(hist[f], n_value_bins[f], has_missing[f],
                                            missing_bin, score)
            if complete:
                best_score[f], best_bin[f], best_ml[f] = s, fbin, fml
                if s < inc or (s == inc and f < inc_f):
                    inc, inc_f = s, f
    return work.sum()


def _accumulate_range(k, bins, rows, ch, r0, r1, features, hist) -> None:
    """Add sorted rows ``r0:r1`` (channels ``ch[r]`` of row ``rows[r]``) to ``features``' bins.

    Row order is kept per (feature, bin), exactly like ``build_histogram``: the shared parallel
    kernel for big nodes, a plain loop on one thread for small ones.
    """
    if k is _SERIAL:
        _serial_accumulate(bins, rows, ch, r0, r1, features, hist)
    else:
        accumulate_histogram(bins, rows, ch, r0, r1, features, hist)


@numba.njit(nogil=True)
def _serial_accumulate(bins, rows, ch, r0, r1, features, hist):
    n_channels = ch.shape[1]
    for r in range(r0, r1):
        i = rows[r]
        for j in range(features.shape[0]):
            f = features[j]
            b = bins[i, f]
            for c in range(n_channels):
                hist[f, b, c] += ch[r, c]


def _scan_features(hist, features, n_value_bins, has_missing, missing_bin, score):
    """``scan_feature`` of each listed feature: arrays (score, bin, missing_left)."""
    n = features.shape[0]
    out_score = np.empty(n)
    out_bin = np.zeros(n, dtype=np.int32)
    out_ml = np.zeros(n, dtype=np.bool_)
    for j in numba.prange(n):
        f = features[j]
        s, b, m = scan_feature(hist[f], n_value_bins[f], has_missing[f], missing_bin, score)
        out_score[j] = s
        out_bin[j] = b
        out_ml[j] = m
    return out_score, out_bin, out_ml


class _Kernels(NamedTuple):
    scan: object
    finish: object


def _compile(parallel: bool) -> _Kernels:
    """The kernels, parallel or single-threaded (same arithmetic, so the same bits)."""
    return _Kernels(
        numba.njit(parallel=parallel, nogil=True)(_scan_features),
        numba.njit(parallel=parallel, nogil=True)(_finish_with_pruning),
    )


_PARALLEL = _compile(True)
_SERIAL = _compile(False)
