"""Sums of float64 values computed exactly and rounded once: the same bits in any order and
for any split of the values into parts (threads, partitions, workers).

Every finite double is an integer multiple of 2^-1074 below 2^1024, so a sum of them is an
integer in those units: an *accumulator* holds it as ``DIGITS`` signed 64-bit digits of 32
bits each (a "superaccumulator"; Neal, "Fast exact summation using small and large
superaccumulators", 2015). Adding a value adds its 53-bit significand, shifted, to three
digits; two accumulators add digit by digit (exactly, in any order); :func:`rounded` turns the
integer into the nearest double. The quantized histograms' fits use them wherever a float sum
reaches the model (leaf sums, the loss, covers), so that a fit on partitioned rows writes the
model file of a fit on all of them, bit for bit.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import overload

#: 32-bit digits: 2046 bit positions of doubles plus a 53-bit significand, and room for
#: carries (an accumulator stays exact up to 2^62 additions between normalisations).
DIGITS = 68
_MASK = np.int64(0xFFFFFFFF)
# Additions a digit takes safely before its carries are propagated (each adds < 2^32).
_BATCH = 1 << 30


def accumulator(*shape: int) -> np.ndarray:
    """Accumulators of the empty sum, ``shape`` of them (digits on the last axis)."""
    return np.zeros((*shape, DIGITS), dtype=np.int64)


@numba.njit(cache=True, nogil=True, inline="always")
def add_value(acc, bits):
    """Adds the double whose IEEE bits are ``bits`` (int64) to the digits ``acc``."""
    exponent = (bits >> 52) & 0x7FF
    significand = bits & 0xFFFFFFFFFFFFF
    if exponent == 0:  # subnormal (or zero): units of 2^-1074 as they are
        shift = 0
    else:
        significand |= 1 << 52
        shift = exponent - 1
    if significand == 0:
        return
    digit = shift >> 5
    offset = shift & 31
    low = (significand & ((np.int64(1) << (32 - offset)) - 1)) << offset
    rest = significand >> (32 - offset)
    middle = rest & _MASK
    high = rest >> 32
    if bits < 0:
        acc[digit] -= low
        acc[digit + 1] -= middle
        acc[digit + 2] -= high
    else:
        acc[digit] += low
        acc[digit + 1] += middle
        acc[digit + 2] += high


@numba.njit(cache=True, nogil=True)
def normalize(acc):
    """Carries propagated: every digit but the last in [0, 2^32), the last signed (the same
    integer; digits on the last axis of a 2-d array)."""
    for a in range(acc.shape[0]):
        carry = np.int64(0)
        for i in range(acc.shape[1] - 1):
            v = acc[a, i] + carry
            carry = v >> 32
            acc[a, i] = v & _MASK
        acc[a, acc.shape[1] - 1] += carry


@numba.njit(cache=True, nogil=True)
def _sum_values(bits, acc):
    n = bits.shape[0]
    for start in range(0, n, _BATCH):
        for i in range(start, min(n, start + _BATCH)):
            add_value(acc[0], bits[i])
        normalize(acc)


def as_channel(channels, value):
    """``value`` rounded to ``channels``' dtype (float32 rows) or as it is (float64): what a
    gathered copy of an amplified channel holds, and so what every sum of them adds.
    (Compiled only.)"""
    raise NotImplementedError


@overload(as_channel, inline="always")
def _as_channel_typed(channels, value):
    if channels.dtype == types.float32:
        return lambda channels, value: np.float64(np.float32(value))
    return lambda channels, value: value


@numba.njit(cache=True, nogil=True)
def _sum_rows(channels, rows, amplify, row_weight, acc):
    """Channel sums (times ``amplify``; None: 1) and the row weight of ``rows``."""
    c = channels.shape[1]
    buffer = np.empty(c + 1)
    bits = buffer.view(np.int64)
    n = rows.shape[0]
    for start in range(0, n, _BATCH):
        for i in range(start, min(n, start + _BATCH)):
            r = rows[i]
            s = 1.0 if amplify is None else amplify[r]
            for j in range(c):
                buffer[j] = as_channel(channels, channels[r, j] * s)
            buffer[c] = as_channel(channels, row_weight[r])
            for j in range(c + 1):
                add_value(acc[j], bits[j])
        normalize(acc)


@numba.njit(cache=True, nogil=True)
def _sum_by_slot(slots, weight, acc):
    """``acc[t, slots[i, t]] += weight[i]`` for every row ``i`` and tree ``t``."""
    n, n_trees = slots.shape
    value = np.empty(1)
    bits = value.view(np.int64)
    for start in range(0, n, _BATCH):
        for i in range(start, min(n, start + _BATCH)):
            value[0] = weight[i]
            for t in range(n_trees):
                add_value(acc[t, slots[i, t]], bits[0])
        for t in range(n_trees):
            normalize(acc[t])


@numba.njit(cache=True, nogil=True)
def _sum_by_group(groups, values, acc):
    """``acc[groups[i], j] += values[i, j]``."""
    n, m = values.shape
    row = np.empty(m)
    bits = row.view(np.int64)
    for start in range(0, n, _BATCH):
        for i in range(start, min(n, start + _BATCH)):
            for j in range(m):
                row[j] = values[i, j]
            for j in range(m):
                add_value(acc[groups[i], j], bits[j])
        for g in range(acc.shape[0]):
            normalize(acc[g])


def sum_by_group(groups: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """(n_groups, M, DIGITS): the accumulators of each group's column sums of ``values``
    (n, M), ``groups`` (n,) its rows' groups (e.g. each class's total cost row)."""
    acc = accumulator(n_groups, values.shape[1])
    _sum_by_group(np.ascontiguousarray(groups, dtype=np.intp),
                  np.ascontiguousarray(values, dtype=np.float64), acc)
    return acc


def sum_values(values: np.ndarray) -> np.ndarray:
    """The accumulator of the sum of ``values`` (any shape; finite)."""
    values = np.ascontiguousarray(values, dtype=np.float64).ravel()
    acc = accumulator(1)
    _sum_values(values.view(np.int64), acc)
    return acc[0]


def sum_rows(channels: np.ndarray, rows: np.ndarray, amplify: np.ndarray | None,
             row_weight: np.ndarray) -> np.ndarray:
    """(C + 1, DIGITS): the accumulators of ``rows``' channel sums (amplified) and row
    weight: :meth:`~rebelboost.learners.row_set.RowArrays.sums_of`, exact."""
    acc = accumulator(channels.shape[1] + 1)
    _sum_rows(channels, rows, amplify, row_weight, acc)
    return acc


def sum_by_slot(slots: np.ndarray, weight: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """Adds each row's ``weight`` to its slot of every tree: ``slots`` (n, T) into ``acc``
    (T, n_slots, DIGITS); returns ``acc``."""
    _sum_by_slot(np.ascontiguousarray(slots, dtype=np.intp),
                 np.ascontiguousarray(weight, dtype=np.float64), acc)
    return acc


def rounded(acc: np.ndarray) -> np.ndarray | float:
    """The double nearest each accumulator's sum (ties to even; beyond the float range,
    infinity): a float for one accumulator, else an array of the leading shape."""
    acc = np.array(acc, dtype=np.int64)  # (a copy: normalising rewrites the digits)
    shape = acc.shape[:-1]
    flat = acc.reshape(-1, acc.shape[-1])
    normalize(flat)
    out = np.empty(len(flat))
    unit, width = 1 << 1074, 4 * (flat.shape[1] - 1)
    low = flat[:, :-1].astype("<u4").tobytes()  # the unsigned digits, row after row
    for a in range(len(flat)):
        value = (int.from_bytes(low[a * width:(a + 1) * width], "little")
                 + (int(flat[a, -1]) << (8 * width)))
        try:
            out[a] = value / unit  # int / int: correctly rounded
        except OverflowError:
            out[a] = np.inf if value > 0 else -np.inf
    return float(out[0]) if shape == () else out.reshape(shape)


def exact_sum(values: np.ndarray) -> float:
    """``sum(values)`` exactly rounded (``math.fsum``'s result, at compiled speed)."""
    return rounded(sum_values(values))
