"""The LLVM-level prefetch hint of the row loops: no effect on results, no work per row
beyond the hint (numba's reference counting, a division) and clear errors for other
arguments."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numba.core import errors
from numpy.testing import assert_array_equal

from rebelboost.learners import row_set
from rebelboost.search.histograms._intrinsics import AHEAD_MIN_BYTES, AHEAD_ROWS, prefetch_ahead

# rows x columns of a uint8 array above the size from which the hint is emitted
BIG = (AHEAD_MIN_BYTES // 40 + 1, 40)


@numba.njit
def _hinted_sum(array, rows, column):
    total = 0
    for i in range(rows.shape[0]):
        prefetch_ahead(array, rows, i, rows.shape[0], column)
        total += array[rows[i], column]
    return total


@numba.njit
def _plain_sum(array, rows, column):
    total = 0
    for i in range(rows.shape[0]):
        total += array[rows[i], column]
    return total


@pytest.mark.parametrize("rows_dtype", [np.intp, np.int32, np.uint32])
@pytest.mark.parametrize("strided", [False, True])
def test_hinted_loop_reads_what_the_plain_loop_reads(rows_dtype, strided):
    """Large and small arrays (hinted and not), rows of any integer type, strided rows and a
    strided array: the same sums, and no read past the rows (the last AHEAD_ROWS rows hint
    nothing)."""
    rng = np.random.default_rng(0)
    for shape in (BIG, (300, 7)):
        array = rng.integers(0, 256, size=shape, dtype=np.uint8)
        if strided:
            array = array[:, ::2]
        rows = np.sort(rng.choice(array.shape[0], min(5000, array.shape[0]), replace=False))
        rows = rows.astype(rows_dtype)[::2] if strided else rows.astype(rows_dtype)
        for column in (0, array.shape[1] - 1):
            expected = int(array[rows.astype(np.intp), column].astype(np.int64).sum())
            assert _hinted_sum(array, rows, column) == expected
            assert _hinted_sum(array, rows[:AHEAD_ROWS], column) == (
                int(array[rows[:AHEAD_ROWS].astype(np.intp), column].astype(np.int64).sum()))


def _reference_counts(function, *args) -> int:
    function(*args)
    ir = function.inspect_llvm(function.signatures[0])
    return ir.count("NRT_incref") + ir.count("NRT_decref")


def test_hint_adds_no_reference_counting():
    """The hint is emitted in the loop, not called as a compiled function of the arrays: a
    loop with it counts references as often as the loop without it (as a function it made
    numba count references to both arrays on every row, with a division: a partition took
    23 ns a row instead of 3)."""
    array = np.zeros((100, 4), dtype=np.uint8)
    rows = np.arange(100, dtype=np.intp)
    assert _reference_counts(_hinted_sum, array, rows, 1) == _reference_counts(
        _plain_sum, array, rows, 1)


def test_hint_refuses_other_arrays():
    @numba.njit
    def hint_1d(array, rows):
        prefetch_ahead(array, rows, 0, 1, 0)

    with pytest.raises(errors.TypingError, match="2-d array"):
        hint_1d(np.zeros(4), np.arange(4))
    with pytest.raises(errors.TypingError, match="integer array"):
        hint_1d(np.zeros((4, 2)), np.zeros(4))


@pytest.mark.parametrize("kernel", ["_partition_in_place", "_partition_in_place_serial"])
def test_partitions_of_a_hinted_array_are_the_stable_partition(kernel):
    """The partitions over bins large enough to be hinted (test_row_set checks small ones):
    the stable partition of numpy's masks."""
    rng = np.random.default_rng(2)
    bins = rng.integers(0, 256, size=BIG, dtype=np.uint8)
    order = np.sort(rng.choice(BIG[0], BIG[0] // 3, replace=False)).astype(np.intp)
    rows = order.copy()
    table = rng.random(256) < 0.4
    goes_left = table[bins[rows, 5]]
    args = (bins, order, np.empty_like(order), 0, len(order), 5, table)
    if kernel == "_partition_in_place":
        args += (5, np.empty(len(order), dtype=np.uint8))
    middle = getattr(row_set, kernel)(*args)
    assert_array_equal(order[:middle], rows[goes_left])
    assert_array_equal(order[middle:], rows[~goes_left])
