"""Each tree's rows: all, a uniform draw (``subsample``), or GOSS's (``sampling='goss'``:
the heaviest rows by REBEL weight plus a uniform draw of the rest, scaled up so every sum
stays unbiased; Ke et al., LightGBM, NIPS 2017).

GOSS is defined so that rows held in several places give the same sample as rows held in
one: a row's weight is its channels added one by one in float64 (the same value in any
array layout), the heaviest are the ``top`` largest with ties going to the earlier row,
and the rest are drawn by their place among the rows left, in row order. A distributed
fit (:mod:`rebelboost.blocks`) finds the heaviest rows' threshold with :func:`bucket_counts`
and :func:`keys_in` over its blocks and draws the rest's places on the client, from the
same generator: the local fit's sample.
"""

from __future__ import annotations

import numpy as np

#: Buckets of one counting pass over the weights' bit patterns (:func:`bucket_counts`).
BUCKET_BITS = 16
#: A range of keys holding at most this many rows is fetched whole instead of counted again.
FETCH_ROWS = 1 << 16


def sample_rows(channels: np.ndarray, subsample: float, sampling: str,
                rng: np.random.RandomState) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Rows of this iteration's tree (increasing; None: every row) and each row's
    amplification (None: 1), drawn from ``rng``."""
    n = channels.shape[0]
    if subsample >= 1.0:
        return None, None
    if sampling == "uniform":
        size = max(1, int(round(subsample * n)))
        return np.sort(rng.choice(n, size, replace=False)).astype(np.intp), None
    top, other = goss_sizes(subsample, n)
    heavy = heaviest_rows(row_weights(channels), top)
    rest = np.flatnonzero(~heavy)
    places = rest_draw(len(rest), other, rng)
    amplify = np.ones(n)
    amplify[rest[places]] = goss_factor(len(rest), len(places))
    heavy[rest[places]] = True
    return np.flatnonzero(heavy).astype(np.intp), amplify


def goss_sizes(subsample: float, n: int) -> tuple[int, int]:
    """How many heaviest rows GOSS keeps (2/3 of the budget) and how many of the rest it
    draws (1/3)."""
    return (max(1, int(round(subsample * n * 2 / 3))),
            max(1, int(round(subsample * n / 3))))


def rest_draw(n_rest: int, other: int, rng: np.random.RandomState) -> np.ndarray:
    """The places (among the rows that are not the heaviest, in row order) of the rows GOSS
    draws from them."""
    other = min(other, n_rest)
    if not other:
        return np.zeros(0, dtype=np.intp)
    return rng.choice(n_rest, other, replace=False).astype(np.intp)


def goss_factor(n_rest: int, n_drawn: int) -> float:
    """The amplification of each drawn row (the rest's rows per drawn one)."""
    return n_rest / n_drawn if n_drawn else 1.0


def row_weights(channels: np.ndarray) -> np.ndarray:
    """Each row's REBEL weight (its channels' total), added column by column in float64: the
    same value per row whatever the array's layout or the rows beside it."""
    weight = channels[:, 0].astype(np.float64)
    for j in range(1, channels.shape[1]):
        weight += channels[:, j]
    return weight


def heaviest_rows(weight: np.ndarray, top: int) -> np.ndarray:
    """A mask of the ``top`` heaviest rows, ties going to the earlier row (a stable sort's
    first ``top``)."""
    n = len(weight)
    mask = np.ones(n, dtype=bool)
    if top >= n:
        return mask
    threshold = np.partition(weight, n - top)[n - top]
    mask = weight > threshold
    ties = np.flatnonzero(weight == threshold)[:top - int(mask.sum())]
    mask[ties] = True
    return mask


def weight_keys(weight: np.ndarray) -> np.ndarray:
    """The weights' bit patterns as unsigned integers: in the weights' order (none is
    negative)."""
    return np.ascontiguousarray(weight, dtype=np.float64).view(np.uint64)


def bucket_counts(keys: np.ndarray, low: int, shift: int) -> np.ndarray:
    """How many of ``keys`` fall in each of the ``2**BUCKET_BITS`` buckets of width
    ``2**shift`` from ``low`` (keys outside them are not counted)."""
    width = np.uint64(1 << shift)
    high = np.uint64(min(low + (1 << (shift + BUCKET_BITS)), 1 << 64) - 1)
    inside = keys[(keys >= np.uint64(low)) & (keys <= high)]
    return np.bincount(((inside - np.uint64(low)) // width).astype(np.intp),
                       minlength=1 << BUCKET_BITS)


def keys_in(keys: np.ndarray, low: int, high: int) -> np.ndarray:
    """The keys in ``[low, high]``, in row order."""
    return keys[(keys >= np.uint64(low)) & (keys <= np.uint64(high))]


def find_threshold(count_pass, fetch, top: int, key_range: tuple[int, int],
                   block_rows: list[int]) -> tuple[int, list[int], list[int]]:
    """The key of the ``top``-th heaviest row of rows held in blocks (``block_rows`` each;
    their keys within ``key_range``, least and most), how many rows of each block take the
    ties at it (the earlier blocks' first), and each block's number of heaviest rows:
    ``count_pass(low, shift)`` gives each block's :func:`bucket_counts`, ``fetch(low,
    high)`` each block's :func:`keys_in`. Each pass narrows the range 65,536-fold; one of at
    most :data:`FETCH_ROWS` rows is fetched."""
    low, high = (int(k) for k in key_range)
    need = top
    heavy = np.zeros(len(block_rows), dtype=np.int64)  # each block's rows above the range
    if low == high:  # (every row weighs the same: the first tree)
        ties = _share(block_rows, need)
        return low, ties, ties
    shift = max(0, (high - low).bit_length() - BUCKET_BITS)  # buckets covering the range
    while True:
        counts = np.asarray(count_pass(low, shift), dtype=np.int64)  # (blocks, buckets)
        total = counts.sum(axis=0)
        above = np.cumsum(total[::-1])[::-1]  # rows in each bucket and those above it
        bucket = int(np.flatnonzero(above >= need)[-1])
        need -= int(above[bucket] - total[bucket])
        heavy += counts[:, bucket + 1:].sum(axis=1)
        low += bucket << shift
        if shift == 0:  # (one key: the bucket's rows are the ties)
            ties = _share(counts[:, bucket].tolist(), need)
            return low, ties, (heavy + ties).tolist()
        if total[bucket] <= FETCH_ROWS:
            break
        shift = max(0, shift - BUCKET_BITS)
    kept = fetch(low, low + (1 << shift) - 1)
    threshold = int(np.sort(np.concatenate(kept))[::-1][need - 1])
    over = np.array([int((block > np.uint64(threshold)).sum()) for block in kept])
    ties = _share([int((block == np.uint64(threshold)).sum()) for block in kept],
                  need - int(over.sum()))
    return threshold, ties, (heavy + over + ties).tolist()


def _share(available: list[int], need: int) -> list[int]:
    """``need`` rows taken from blocks holding ``available`` each, the earlier first."""
    taken = []
    for count in available:
        taken.append(min(int(count), need))
        need -= taken[-1]
    return taken


def heaviest_by_threshold(keys: np.ndarray, threshold: int, ties: int) -> np.ndarray:
    """A block's heaviest rows: keys above ``threshold`` and its first ``ties`` rows at it."""
    mask = keys > np.uint64(threshold)
    mask[np.flatnonzero(keys == np.uint64(threshold))[:ties]] = True
    return mask
