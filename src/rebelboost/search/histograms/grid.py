"""Histograms on the full grid, ``(n_features, n_bins_total, C)`` float64: QuickBoost's
prefix histograms, which grow by ranges of a node's rows, and a one-call histogram of any rows.

Both run the dense kernel (:func:`.dense.add_rows`) or, with a sparse layout, the sparse one
(:func:`.sparse.add_entries`) with the default bins set from the totals
(:func:`.sparse.fill_default_bins`). Each (feature, bin) continues its sum in the order of the
rows, so a node's rows added in several consecutive ranges give the same bits as one call.
"""

from __future__ import annotations

import functools

import numpy as np

from .dense import N_CODES, add_rows, threads_pay
from .pool import HistogramPool
from .sparse import SparseBins, add_entries, fill_default_bins, row_totals


def build_histogram(
    bins: np.ndarray,
    channels: np.ndarray,
    rows: np.ndarray,
    n_bins_total: int,
    sparse: SparseBins | None = None,
    pool: HistogramPool | None = None,
) -> np.ndarray:
    """Histogram of shape (n_features, n_bins_total, n_channels) over ``rows``.

    ``bins`` is the C-ordered (n_samples, n_features) uint8 matrix, ``channels`` a
    (n_samples, n_channels) float matrix, ``rows`` the sample indices of the node (any order;
    sums are accumulated in that order). Every bin code must be below ``n_bins_total``. With
    ``sparse`` (:func:`.sparse.sparse_bins` of ``bins``) each default bin is the node's totals
    (:func:`.sparse.row_totals`) minus the feature's other bins. With a ``pool`` the histogram
    is that pool's buffer (valid until the pool's next use).
    """
    bins, channels, rows = _check(bins, channels, rows, n_bins_total)
    if bins.size and int(bins.max()) >= n_bins_total:
        raise ValueError(f"bins hold codes beyond n_bins_total ({n_bins_total})")
    shape = (bins.shape[1], n_bins_total, channels.shape[1])
    hist = np.zeros(shape) if pool is None else pool.zeros(shape)
    row_channels = np.ascontiguousarray(channels[rows])
    accumulate_histogram(bins, rows, row_channels, 0, len(rows), None, hist, sparse)
    if sparse is not None:
        fill_default_bins(hist, np.arange(bins.shape[1]), sparse.default_bin,
                          row_totals(row_channels))
    return hist


def accumulate_histogram(
    bins: np.ndarray,
    rows: np.ndarray,
    row_channels: np.ndarray,
    r0: int,
    r1: int,
    features: np.ndarray | None,
    hist: np.ndarray,
    sparse: SparseBins | None = None,
    parallel: bool | None = None,
) -> None:
    """Add rows ``rows[r0:r1]`` to the histogram ``hist`` of the listed ``features``, in place.

    ``row_channels[r]`` holds the channels of sample ``rows[r]`` (gathered in row order, as an
    incremental search keeps them). ``hist`` is the C-ordered (n_features, n_bins_total,
    n_channels) float64 histogram; ``features`` are distinct feature indices (any order; None:
    all); the other features' histograms are left alone. With ``sparse``, rows in a feature's
    default bin are not added: call :func:`.sparse.fill_default_bins` before reading those bins.
    ``parallel`` None: on every thread where :func:`.dense.threads_pay`.
    """
    n_bins_total = hist.shape[1]
    bins, row_channels, rows = _check(bins, row_channels, rows, n_bins_total, by_position=True)
    if not (hist.flags.c_contiguous and hist.dtype == np.float64):
        raise ValueError("hist must be a C-ordered float64 array")
    if row_channels.shape[1] != hist.shape[2] or bins.shape[1] != hist.shape[0]:
        raise ValueError("hist shape does not match the bins and channels")
    if not 0 <= r0 <= r1 <= len(rows):
        raise ValueError(f"row range [{r0}, {r1}) is outside the {len(rows)} rows")
    if sparse is not None:
        _check_sparse(sparse, bins, n_bins_total)
    n_channels = row_channels.shape[1]
    cells = hist.reshape(-1, n_channels) if n_channels else hist
    offsets, caps = _grid_cells(bins.shape[1], n_bins_total)
    if features is None and sparse is not None:
        add_entries(sparse, row_channels, rows, cells, offsets, caps, parallel, r0, r1)
        return
    if features is None:
        features = np.arange(bins.shape[1], dtype=np.intp)
    features = np.ascontiguousarray(features, dtype=np.intp)
    if len(features) and (features.min() < 0 or features.max() >= bins.shape[1]):
        raise ValueError("feature index out of range")
    if len(np.unique(features)) != len(features):
        raise ValueError("features must be distinct")  # two tasks would write one histogram
    if len(features) == 0 or n_channels == 0 or r1 <= r0:
        return
    if parallel is None:
        parallel = threads_pay(r1 - r0, len(features), n_channels)
    add_rows(bins, row_channels, rows, features, cells, caps, offsets, parallel, r0, r1,
             fresh=False, skip=None if sparse is None else sparse.default_bin)


@functools.lru_cache(maxsize=16)
def _grid_cells(n_features: int, n_bins_total: int) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, caps)`` of a (features, bins, C) grid: every bin its own cell."""
    offsets = np.arange(n_features + 1, dtype=np.intp) * n_bins_total
    caps = np.full(n_features, n_bins_total - 1, dtype=np.int32)
    offsets.flags.writeable = caps.flags.writeable = False
    return offsets, caps


def _check(bins, channels, rows, n_bins_total, by_position=False):
    if bins.dtype != np.uint8 or bins.ndim != 2:
        raise TypeError(f"bins must be a 2-d uint8 array, got {bins.dtype} with {bins.ndim} dims")
    if not 1 <= n_bins_total <= N_CODES:
        raise ValueError(f"n_bins_total must be in [1, {N_CODES}], got {n_bins_total}")
    rows = np.ascontiguousarray(rows, dtype=np.intp)
    channels = np.ascontiguousarray(channels, dtype=np.float64)
    if channels.ndim != 2 or (channels.shape[0] != (len(rows) if by_position else bins.shape[0])):
        raise ValueError(f"channels of shape {channels.shape} do not match the samples")
    return np.ascontiguousarray(bins), channels, rows


def _check_sparse(sparse: SparseBins, bins: np.ndarray, n_bins_total: int) -> None:
    if sparse.indptr.shape[1] != bins.shape[0] + 1 or sparse.default_bin.shape != (bins.shape[1],):
        raise ValueError("sparse bins do not match the bins")
    if sparse.max_bin >= n_bins_total:
        raise ValueError("sparse bins hold codes beyond n_bins_total")
