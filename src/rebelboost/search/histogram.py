"""Per (feature, bin) sums of per-sample channels: the one kernel every split search shares.

A booster describes its split problem as C float64 channels per sample (REBEL stumps: the 2K
weights ``w+`` and ``w-``; fixed-``a`` tree layers: the two costs ``g+`` and ``g-``; ...). The
histogram of a node sums those channels over the node's rows for every feature and bin; a split
score then needs only the histogram. Children use the subtraction trick: build the smaller one,
subtract it from the parent for the sibling.
"""

from __future__ import annotations

import numba
import numpy as np

# Bytes of histogram one thread keeps hot while it streams the rows (about an L2 cache).
_BLOCK_BYTES = 1 << 19


def feature_block_size(n_features: int, n_bins_total: int, n_channels: int) -> int:
    """Features per parallel task so one task's histogram slice stays in cache."""
    per_feature = n_bins_total * n_channels * 8
    size = max(1, _BLOCK_BYTES // per_feature)
    n_threads = numba.get_num_threads()
    # Keep at least a few tasks per thread so prange can balance them.
    return int(max(1, min(size, -(-n_features // (4 * n_threads)))))


def build_histogram(
    bins: np.ndarray, channels: np.ndarray, rows: np.ndarray, n_bins_total: int
) -> np.ndarray:
    """Histogram of shape (n_features, n_bins_total, n_channels) over ``rows``.

    ``bins`` is the C-ordered (n_samples, n_features) uint8 matrix, ``channels`` a C-ordered
    (n_samples, n_channels) float64 matrix, ``rows`` the sample indices of the node (any order;
    sums are accumulated in that order).
    """
    block = feature_block_size(bins.shape[1], n_bins_total, channels.shape[1])
    return _build_histogram(bins, channels, rows, n_bins_total, block)


@numba.njit(parallel=True, cache=True, nogil=True)
def _build_histogram(bins, channels, rows, n_bins_total, block):
    n_features = bins.shape[1]
    n_channels = channels.shape[1]
    hist = np.zeros((n_features, n_bins_total, n_channels))
    n_blocks = (n_features + block - 1) // block
    for blk in numba.prange(n_blocks):
        f0 = blk * block
        f1 = min(n_features, f0 + block)
        for r in range(rows.shape[0]):
            i = rows[r]
            for f in range(f0, f1):
                b = bins[i, f]
                for c in range(n_channels):
                    hist[f, b, c] += channels[i, c]
    return hist


@numba.njit(cache=True, nogil=True)
def partition_rows(rows, bins, feature, bin_threshold, missing_bin, missing_left):
    """Split ``rows`` into (left, right) by ``bin <= bin_threshold``; missing by the flag.

    Order within each side is kept, so children sum in the same order as their parent.
    """
    n = rows.shape[0]
    go_left = np.empty(n, dtype=np.bool_)
    n_left = 0
    for r in range(n):
        b = bins[rows[r], feature]
        left = missing_left if b == missing_bin else b <= bin_threshold
        go_left[r] = left
        n_left += left
    left_rows = np.empty(n_left, dtype=rows.dtype)
    right_rows = np.empty(n - n_left, dtype=rows.dtype)
    li = 0
    ri = 0
    for r in range(n):
        if go_left[r]:
            left_rows[li] = rows[r]
            li += 1
        else:
            right_rows[ri] = rows[r]
            ri += 1
    return left_rows, right_rows
