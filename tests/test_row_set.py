"""The row set of the vector-leaf grower: in-place partitions, and the seam to row blocks
held elsewhere (a backend of plain lists trains the local model)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from rebelboost import RebelClassifier
from rebelboost.blocks import tasks
from rebelboost.blocks.training import BlockRebelBooster, nbytes
from rebelboost.engine import boost
from rebelboost.learners import row_channels, row_set
from rebelboost.learners.row_set import LocalRows
from rebelboost.search.binned import BinnedData
from rebelboost.search.histograms import feature_cells


def _bins(n, d=3, seed=0, missing_bin=255):
    rng = np.random.default_rng(seed)
    bins = rng.integers(0, 12, size=(n, d)).astype(np.uint8)
    bins[rng.random((n, d)) < 0.1] = missing_bin
    return bins


@pytest.mark.parametrize("n", [300, 40_000])
def test_a_leafs_gathered_rows_serve_its_own_histogram_only(n):
    """``sums`` gathers a leaf's rows once and keeps them for that leaf's histogram: the
    sums equal the row-order sums bit for bit (serial and threaded gathers), a histogram of
    another leaf, or of a leaf after a split moved rows, is built from its own rows."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(n, 4))
    channels = rng.random((n, 5))
    data = BinnedData.fit(X, None, 255, 0)
    features = np.arange(4, dtype=np.intp)
    shape = (int(data.cell_offsets[-1]), 6)

    def direct(rows):
        sums = row_channels.row_sums(channels, rows, None, np.ones(n))
        return LocalRows(data, channels).histogram_of(rows, sums, features, np.empty(shape))

    local = LocalRows(data, channels)
    root = local.root()
    assert_array_equal(local.sums(root), row_channels.row_sums(channels, local.rows_of(root),
                                                           None, np.ones(n)))
    left, right = local.split(root, 0, 100, False)
    local.sums(left)  # kept for ``left``; ``right`` asks next
    right_sums = local.sums(right)
    left_sums = local.sums(left)
    assert_array_equal(local.histogram(right, right_sums, features, np.empty(shape)),
                       direct(local.rows_of(right)))
    local.sums(left)
    a, b = local.split(left, 1, 120, True)  # rows of ``left`` move: its copy is stale
    assert_array_equal(local.histogram(a, local.sums(a), features, np.empty(shape)),
                       direct(local.rows_of(a)))
    assert_array_equal(left_sums, row_channels.row_sums(channels, np.sort(np.r_[local.rows_of(a),
                       local.rows_of(b)]), None, np.ones(n)))


@pytest.mark.parametrize("kernel", ["_partition_in_place", "_partition_in_place_serial"])
@pytest.mark.parametrize("missing_left", [False, True, "set"])
def test_in_place_partition_is_the_stable_copying_partition(kernel, missing_left):
    """A range of the index array is split in place into exactly the rows (and order) the
    copying partition gives; the rows outside the range are untouched. 40,000 rows give the
    parallel kernel several tasks. A numeric split (``bin <= 5``, missing bin by
    ``missing_left``) and a categorical one (a set of bins)."""
    n = 40_000
    bins = _bins(n)
    rng = np.random.default_rng(1)
    order = np.sort(rng.choice(n, n - 3000, replace=False)).astype(np.intp)
    start, stop = 17, len(order) - 29
    before = order.copy()
    scratch = np.empty_like(order)
    rows = order[start:stop]
    column = bins[rows, 1]
    if missing_left == "set":
        table = np.random.default_rng(3).random(256) < 0.5
        goes_left = table[column]
    else:
        table = row_set.split_table(5, missing_left, 256, 255)
        goes_left = np.where(column == 255, missing_left, column <= 5)  # bin 255: missing
    left, right = rows[goes_left], rows[~goes_left]  # numpy's masks keep the order
    copied = row_set._partition(bins, rows.copy(), 1, table)
    assert_array_equal(copied[0], left)
    assert_array_equal(copied[1], right)
    args = (bins, order, scratch, start, stop, 1, table)
    if kernel == "_partition_in_place":
        args += (7, np.full(len(order), 9, dtype=np.uint8))  # tasks of uneven sizes
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


class ShuffledListExecutor:
    """A backend of plain Python lists: a "future" is the value itself, every task runs at
    once, and the blocks of a ``map`` are computed in a shuffled order (as a cluster's workers
    answer whenever they are done). Reductions add in the blocks' order, as the seam asks."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.gathered_bytes = 0
        self.tasks = 0

    def submit(self, func, *args, worker=None):
        self.tasks += 1
        return func(*args)

    def map(self, func, futures, *args):
        out = [None] * len(futures)
        for i in self.rng.permutation(len(futures)):
            out[i] = self.submit(func, futures[i], *args)
        return out

    def unpack(self, futures, n):
        return [[f[i] for f in futures] for i in range(n)]

    def reduce(self, func, futures):
        level = list(futures)
        while len(level) > 1:
            pairs = list(zip(level[::2], level[1::2], strict=False))
            done = [None] * len(pairs)
            for i in self.rng.permutation(len(pairs)):
                done[i] = self.submit(func, *pairs[i])
            level = done + level[len(pairs) * 2:]
        return level[0]

    def reduce_gather(self, func, futures, fan_in=2):
        return self.gather(self.reduce(func, futures))

    def reduce_to(self, func, futures, fan_in=2):
        return [self.reduce(func, futures)]

    def gather(self, future):
        self.gathered_bytes += nbytes(future)
        return future


def _boost_on_blocks(X, y, params: dict, cuts: list, groups: list):
    """``(local fit, the row-block booster's result, its backend)``: the booster on the
    partitions of X, y cut at ``cuts``, each of ``groups`` (slices of the partitions) binned
    as one block, through a backend that answers in shuffled order (seeded by
    ``params['random_state']``, from which the draws are made as the local fit makes them)."""
    n, d = X.shape
    seed = params["random_state"]
    local = RebelClassifier(**params).fit(X, y)
    k = len(local.classes_)
    raw = [tasks.check_partition(X[a:b], y[a:b], None, d, i)
           for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:], strict=True))]
    draws = np.random.RandomState(seed)  # drawn from as the local fit draws
    binner = BinnedData.fit(X, None, local.resolved_params_["max_bins"], draws.randint(2**31),
                            min_data_in_bin=local.min_data_in_bin).binner
    parts = [tasks.make_partition(tasks.bin_block(raw[g], binner, local.classes_), k,
                                  local.cost_matrix_, local.subcosts, float(n))
             for g in groups]
    executor = ShuffledListExecutor(seed)
    booster = BlockRebelBooster(executor, parts, binner, n, k, local._vector_tree_options(),
                                np.random.RandomState(draws.randint(2**31)),
                                local._shrinkage(), n_trees=params["n_estimators"])
    return local, boost(booster, params["n_estimators"], d, target_loss=1.0 / n), executor


@pytest.mark.parametrize("seed", [0, 1])
def test_a_list_backend_answering_in_shuffled_order_trains_the_local_model(seed):
    """The row-block booster on uneven blocks (one empty, one of a single row, one of a single
    class, NaN), through a backend that answers in shuffled order: the local fit's trees, and
    its scores and loss up to the order of additions."""
    rng = np.random.default_rng(seed)
    n, d = 1200, 5
    X = rng.standard_normal((n, d))
    y = np.digitize(X[:, 0] + 0.6 * X[:, 1] ** 2, [-0.3, 0.8])
    X[rng.random((n, d)) < 0.05] = np.nan
    order = np.argsort(y, kind="stable")
    X, y = X[order], y[order]
    params = dict(n_estimators=6, max_leaves=9, colsample_bytree=0.8, random_state=seed)
    assert len(np.unique(y[:250])) == 1  # the first block holds one class
    # (the last block binned from two partitions, as a worker's block of several is)
    local, result, executor = _boost_on_blocks(
        X, y, params, [0, 250, 250, 700, 701, n],
        [slice(0, 1), slice(1, 2), slice(2, 3), slice(3, None)])

    got, want = result.model.learners, local.model_.learners
    for name in ("feature", "threshold", "missing_left", "left", "right"):
        assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
    assert_allclose(result.model.values, local.model_.values, rtol=1e-9, atol=1e-12)
    assert_allclose(result.train_loss, local.train_loss_, rtol=1e-9)
    assert executor.tasks > 0


def test_partition_checks_over_row_blocks_see_every_row(monkeypatch):
    """The infinity and missing-value checks run over blocks of rows (no (n, d) copies): a
    block boundary must not hide a value, and rows of zero weight do not count."""
    X = np.ones((10, 3))
    X[9, 0] = np.nan  # the last block's last row
    X[:, 1] = np.nan
    X[4, 1] = 2.0  # feature 1 has one value, in a middle block
    X[5, 2] = np.nan  # on a row of zero weight: not missing where it counts
    weight = np.ones(10)
    weight[5] = 0.0
    blocks = tasks._row_blocks
    monkeypatch.setattr(tasks, "_row_blocks", lambda X: blocks(X, cells=3 * X.shape[1]))
    raw = tasks.check_partition(X, np.arange(10) % 2, weight, 3, 0)
    facts = tasks.facts(raw)
    assert_array_equal(facts["has_missing"], [True, True, False])
    assert_array_equal(facts["has_values"], [True, True, True])
    assert facts["n_positive"] == 9
    X[7, 2] = np.inf
    with pytest.raises(ValueError, match="partition 0: X contains infinity"):
        tasks.check_partition(X, np.arange(10) % 2, weight, 3, 0)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=1, max_size=12), st.data())
def test_feature_cells_are_each_features_cells_in_the_order_given(bins, data):
    """:func:`feature_cells` (one arange, shifted per feature) lists the same cells as a
    concatenation of each feature's own range, for any subset and order of features, empty
    features (no bins) included."""
    offsets = np.concatenate([[0], np.cumsum(bins)])
    features = np.array(data.draw(st.lists(st.integers(0, len(bins) - 1), max_size=15)),
                        dtype=np.intp)
    want = [np.arange(offsets[f], offsets[f + 1]) for f in features]
    want = np.concatenate(want) if want else np.empty(0, dtype=np.intp)
    got = feature_cells(offsets, features)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.intp


def test_each_tree_writes_its_channels_over_the_stepped_trees(monkeypatch):
    """From the second tree on, a block's ``weigh`` writes its channels into the array of the
    tree it stepped (no fresh (n, 2K + 2) array a tree), and the model is still the local
    fit's (the test above, over 6 trees, checks the values)."""
    rng = np.random.default_rng(0)
    n, d = 600, 4
    X = rng.standard_normal((n, d))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.4, 0.5])
    params = dict(n_estimators=4, max_leaves=6, random_state=0)
    channels = {}  # per block (its loss): the channel arrays of its weighs
    weigh = tasks.weigh

    def recording(part, *args):
        out = weigh(part, *args)
        channels.setdefault(id(part.loss), []).append(out[0].counted)
        return out

    monkeypatch.setattr(tasks, "weigh", recording)
    local, result, _ = _boost_on_blocks(X, y, params, [0, 300, n], [slice(0, 1), slice(1, 2)])
    assert len(channels) == 2
    assert_array_equal(result.model.learners.feature, local.model_.learners.feature)
    for arrays in channels.values():
        assert len(arrays) >= params["n_estimators"]
        assert all(a is arrays[0] for a in arrays)
