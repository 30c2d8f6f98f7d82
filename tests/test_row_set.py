"""The row set of the vector-leaf grower: in-place partitions and the backend seam."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from rebelboost.learners import row_set
from rebelboost.learners.row_set import LocalRows
from rebelboost.search.binned import BinnedData


def _bins(n, d=3, seed=0, missing_bin=255):
    rng = np.random.default_rng(seed)
    bins = rng.integers(0, 12, size=(n, d)).astype(np.uint8)
    bins[rng.random((n, d)) < 0.1] = missing_bin
    return bins


@pytest.mark.parametrize("kernel", ["_partition_in_place", "_partition_in_place_serial"])
@pytest.mark.parametrize("missing_left", [False, True])
def test_in_place_partition_is_the_stable_copying_partition(kernel, missing_left):
    """A range of the index array is split in place into exactly the rows (and order) the
    copying partition gives; the rows outside the range are untouched. 40,000 rows give the
    parallel kernel several tasks."""
    n = 40_000
    bins = _bins(n)
    rng = np.random.default_rng(1)
    order = np.sort(rng.choice(n, n - 3000, replace=False)).astype(np.intp)
    start, stop = 17, len(order) - 29
    before = order.copy()
    scratch = np.empty_like(order)
    left, right = row_set._partition(bins, order[start:stop].copy(), 1, 5, 255, missing_left)
    args = (bins, order, scratch, start, stop, 1, 5, 255, missing_left)
    if kernel == "_partition_in_place":
        args += (7,)  # tasks of uneven sizes
    middle = start + getattr(row_set, kernel)(*args)
    assert_array_equal(order[start:middle], left)
    assert_array_equal(order[middle:stop], right)
    assert_array_equal(order[:start], before[:start])
    assert_array_equal(order[stop:], before[stop:])
    assert 0 < len(left) < stop - start


def test_local_rows_split_ranges_of_one_array_without_copies():
    """Leaves are ranges of one index array: splitting a leaf allocates no row array, and a
    leaf's rows are a view of the tree's array, in increasing order."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((500, 4))
    data = BinnedData.fit(X, None, 32, 0, row_layout=True)
    rows = LocalRows(data, rng.random((500, 3)), np.arange(0, 500, 2))
    root = rows.root()
    left, right = rows.split(root, 0, 10, False)
    assert left == (0, left[1]) and right == (left[1], 250)
    inner = rows.split(right, 2, 20, True)
    for leaf in (left, *inner):
        view = rows.rows_of(leaf)
        assert np.shares_memory(view, rows.order)
        assert np.all(np.diff(view) > 0)
    assert sorted(rows.order.tolist()) == list(range(0, 500, 2))
    goes_left = data.bins[rows.rows_of(left), 0] <= 10
    assert goes_left.all()
    assert rows.count(left) + rows.count(right) == 250
