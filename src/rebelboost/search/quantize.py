"""Quantized channels and integer leaf histograms for split finding (issue 27; LightGBM's
``use_quantized_grad``, Shi et al., NeurIPS 2022).

Once per tree each channel ``c`` of the rows' (amplified) REBEL weights is scaled to
``[0, 2^bits - 1]`` (scale ``s_c`` = the channel's largest value / ``(2^bits - 1)``) and rounded
stochastically and without bias: ``q = floor(x / s_c + u)``, ``u`` uniform in [0, 1) from a
counter-based hash of (seed, row, channel), so the draw does not depend on threads or on
which rows a tree samples, and an integer ``x / s_c`` stays exact. The sample-weight channel is
kept exact when every weight is a small integer (scale 1), else quantized the same way.

Integer sums do not depend on summation order, and a larger child's histogram is its
parent's minus its sibling's exactly. Only split finding reads them (dequantized per leaf);
leaf vectors come from exact float sums.
"""

from __future__ import annotations

import numba
import numpy as np

from .histograms.dense import add_rows, float_rows

BITS_RANGE = (2, 16)
_PARALLEL_ROWS = 1 << 14


def check_bits(bits: int | None) -> None:
    """``bits`` is None (float histograms) or an integer in ``BITS_RANGE``."""
    if bits is None:
        return
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)):
        raise TypeError(f"histogram_bits must be None or an integer, got {bits!r}")
    if not BITS_RANGE[0] <= bits <= BITS_RANGE[1]:
        raise ValueError(f"histogram_bits must be in {list(BITS_RANGE)} or None, got {bits}")


def channel_scales(top: np.ndarray, weight_range: tuple[bool, float, float], bits: int
                   ) -> np.ndarray:
    """The (C + 1,) scales of C channels whose largest values are ``top`` and of the sample
    weight, ``weight_range`` = (all integers, least, largest): scale 1 (exact) when every
    weight is a small integer."""
    levels = (1 << bits) - 1
    integral, least, largest = weight_range
    scales = np.empty(len(top) + 1)
    top = np.asarray(top, dtype=np.float64)  # (float32 channels' maxima: divided as float64)
    scales[:-1] = np.where(top > 0, top / levels, 1.0)
    exact = integral and least >= 0 and largest <= levels
    scales[-1] = 1.0 if exact else max(largest / levels, 1e-300)
    return scales


def weight_range(row_weight: np.ndarray) -> tuple[bool, float, float]:
    """What :func:`channel_scales` needs of the sample weights (combine parts' with
    :func:`merge_weight_ranges`)."""
    if not len(row_weight):
        return True, np.inf, 0.0
    return (bool(np.all(row_weight == np.round(row_weight))), float(row_weight.min()),
            float(row_weight.max()))


def merge_weight_ranges(a: tuple, b: tuple) -> tuple[bool, float, float]:
    return a[0] and b[0], min(a[1], b[1]), max(a[2], b[2])


def quantize_channels(channels: np.ndarray, amplify: np.ndarray | None,
                      row_weight: np.ndarray, bits: int, seed: int,
                      scales: np.ndarray | None = None, first_row: int = 0
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The (n, 2K + 1) quantized channels (uint8/uint16) and the (2K + 1,) scales that
    dequantize them (``x ~ q * scale``); the last channel is the sample weight.

    ``scales`` (default: from these rows) and ``first_row`` (the rows' place among all rows,
    which seeds their draws) let a part of the rows be quantized as within all of them."""
    check_bits(bits)
    levels = (1 << bits) - 1
    n, c = channels.shape
    # amplified rows rounded to the channels' dtype, as every gathered copy and exact sum
    # holds them (and as a partitioned fit's blocks hold them: amplified in place)
    values = (channels if amplify is None
              else (channels * amplify[:, None]).astype(channels.dtype, copy=False))
    if scales is None:
        top = values.max(axis=0) if n else np.zeros(c)
        scales = channel_scales(top, weight_range(row_weight), bits)
    dtype = np.uint8 if bits <= 8 else np.uint16
    out = np.empty((n, c + 1), dtype=dtype)
    kernel = _quantize if n >= _PARALLEL_ROWS else _quantize_serial
    kernel(float_rows(values, contiguous=False),  # (a strided view as it is: no copy)
           np.ascontiguousarray(row_weight, dtype=np.float64), 1.0 / scales, levels,
           np.uint64(seed & 0xFFFFFFFFFFFFFFFF), first_row, out)
    return out, scales


def stochastic_round(x: np.ndarray, seed: int) -> np.ndarray:
    """``floor(x + u)`` with the same hashed ``u`` as the channels (tests: unbiased, exact on
    integers)."""
    x = np.ascontiguousarray(x, dtype=np.float64).ravel()
    out = np.empty(len(x), dtype=np.float64)
    _round_each(x, np.uint64(seed & 0xFFFFFFFFFFFFFFFF), out)
    return out


def histogram_dtype(quantized: np.ndarray, rows: np.ndarray) -> type:
    """int32 when no cell can exceed it (the sampled rows' totals bound every cell)."""
    total = int(quantized[rows].sum(axis=0, dtype=np.int64).max()) if len(rows) else 0
    return np.int32 if total < (1 << 31) else np.int64


def build_quantized_histogram(bins: np.ndarray, quantized: np.ndarray, rows: np.ndarray,
                              features: np.ndarray, n_value_bins: np.ndarray,
                              offsets: np.ndarray, out: np.ndarray, parallel: bool) -> None:
    """Integer histogram of ``rows`` (dense bins) over ``features`` into the cells of ``out``
    a search reads; ``quantized[r]`` are row ``r``'s channels. The float histograms' dense
    kernel on the leaf's rows' channels (integer sums: exact in any order)."""
    add_rows(bins, quantized[rows], rows, features, out, n_value_bins, offsets, parallel)


def gather_as_float(quantized: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``quantized[rows]`` as float64 (exact: small integers), in one pass over the rows (a
    float histogram kernel then sums them exactly, in any order below 2^53)."""
    return _gather_as_float(quantized, np.asarray(rows, dtype=np.intp))


def dequantize(hist: np.ndarray, scales: np.ndarray, features: np.ndarray,
               offsets: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out = hist * scales`` on the cells of ``features`` (compact leaf histograms)."""
    _dequantize(hist, scales, features, offsets, out)
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _uniform(seed, index):
    """A uniform draw in [0, 1) from splitmix64 of (seed, index)."""
    z = seed + np.uint64(index + 1) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return float(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@numba.njit(cache=True, nogil=True, inline="always")
def _quantize_row(values, row_weight, inv, levels, seed, first_row, out, r):
    c = values.shape[1]
    for j in range(c + 1):
        x = (values[r, j] if j < c else row_weight[r]) * inv[j]
        q = np.floor(x + _uniform(seed, (first_row + r) * (c + 1) + j))
        out[r, j] = min(max(q, 0.0), levels)


@numba.njit(parallel=True, cache=True, nogil=True)
def _quantize(values, row_weight, inv, levels, seed, first_row, out):
    for r in numba.prange(values.shape[0]):
        _quantize_row(values, row_weight, inv, levels, seed, first_row, out, r)


@numba.njit(cache=True, nogil=True)
def _quantize_serial(values, row_weight, inv, levels, seed, first_row, out):
    for r in range(values.shape[0]):
        _quantize_row(values, row_weight, inv, levels, seed, first_row, out, r)


@numba.njit(cache=True, nogil=True)
def _round_each(x, seed, out):
    for i in range(x.shape[0]):
        out[i] = np.floor(x[i] + _uniform(seed, i))


@numba.njit(cache=True, nogil=True)
def _gather_as_float(quantized, rows):
    out = np.empty((rows.shape[0], quantized.shape[1]))
    for i in range(rows.shape[0]):
        r = rows[i]
        for c in range(quantized.shape[1]):
            out[i, c] = quantized[r, c]
    return out


@numba.njit(cache=True, nogil=True)
def _dequantize(hist, scales, features, offsets, out):
    n_channels = hist.shape[1]
    for j in range(features.shape[0]):
        f = features[j]
        for cell in range(offsets[f], offsets[f + 1]):
            for c in range(n_channels):
                out[cell, c] = hist[cell, c] * scales[c]
