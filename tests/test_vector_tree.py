"""Vector-leaf REBEL trees: closed-form leaf vectors, leaf-wise growth, histogram subtraction,
sampling, and the learner kind's routing and model files."""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize

from rebelboost import RebelClassifier
from rebelboost.learners import row_channels, vector_tree
from rebelboost.learners.leaf_tree import LeafTreeArrays, constant_leaf_tree
from rebelboost.learners.row_sampling import sample_rows
from rebelboost.learners.row_set import LocalRows
from rebelboost.learners.vector_tree import VectorTreeGrower, VectorTreeOptions
from rebelboost.losses.rebel import RebelLoss
from rebelboost.search import vector_leaf
from rebelboost.search.binned import BinnedData
from rebelboost.search.histograms import leaf as leaf_histogram


def _data(n=400, d=5, k=4, seed=0, nan_rate=0.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (np.digitize(X[:, 0] + 0.5 * X[:, 1] ** 2, [-0.5, 0.3, 1.0]) + (rng.random(n) < 0.1)) % k
    X[rng.random((n, d)) < nan_rate] = np.nan
    return X, y


def _channels(X, y, k, seed=0):
    """REBEL weight channels at random scores (so the classes' sums differ by leaf)."""
    rng = np.random.default_rng(seed)
    loss = RebelLoss(1.0 - np.eye(k), y, np.ones(len(y)))
    scores = rng.normal(scale=0.5, size=(len(y), k))
    channels, _ = loss.weights(scores)
    return channels


def _grow(X, channels, k, seed=0, **options):
    data = BinnedData.fit(X, None, 255, 0, row_layout=True)
    grower = VectorTreeGrower(data.binner, k, VectorTreeOptions(**options),
                              np.random.RandomState(seed))
    return grower.grow(LocalRows(data, channels)), grower


def _histogram(data, channels, rows, sums):
    """The compact histogram of ``rows`` (every feature's cells: value bins, missing bin)."""
    out = np.full((data.cell_offsets[-1], channels.shape[1] + 1), np.nan)
    features = np.arange(data.n_features)
    return LocalRows(data, channels).histogram_of(rows, sums, features, out)


def test_leaf_vectors_minimise_each_leafs_loss_numerically():
    X, y = _data()
    k = 4
    channels = _channels(X, y, k)
    fit, _ = _grow(X, channels, k, leaf_smoothing=0.0, min_samples_leaf=5, max_leaves=8)
    leaves = np.unique(fit.leaf_of_row)
    assert len(leaves) == 8
    for leaf in leaves:
        rows = fit.leaf_of_row == leaf
        w_plus, w_minus = channels[rows, :k], channels[rows, k:]

        def loss(a, w_plus=w_plus, w_minus=w_minus):
            return np.sum(w_plus * np.exp(a) + w_minus * np.exp(-a))

        best = minimize(loss, np.zeros(k), method="BFGS", options={"gtol": 1e-12})
        both = (w_plus.sum(axis=0) > 0) & (w_minus.sum(axis=0) > 0)
        assert_allclose(fit.leaf_values[leaf][both], best.x[both], atol=1e-5)
        # a one-sided class has no finite optimum: its step is capped at ln(1/eps)/2
        assert np.all(np.abs(fit.leaf_values[leaf][~both]) <= 0.5 * np.log(1e10) + 1e-9)
        def class_loss(a, w_plus=w_plus, w_minus=w_minus, both=both):
            return np.sum((w_plus * np.exp(a) + w_minus * np.exp(-a))[:, both])

        assert class_loss(fit.leaf_values[leaf]) <= class_loss(best.x) * (1 + 1e-12)
    total = sum(np.sum(channels[fit.leaf_of_row == leaf, :k] * np.exp(fit.leaf_values[leaf])
                       + channels[fit.leaf_of_row == leaf, k:] * np.exp(-fit.leaf_values[leaf]))
                for leaf in leaves)
    assert_allclose(fit.loss, total, rtol=1e-10)


def test_smoothing_shrinks_steps_towards_zero_and_keeps_the_loss_down():
    X, y = _data(seed=1)
    k = 4
    channels = _channels(X, y, k, seed=1)
    exact, _ = _grow(X, channels, k, leaf_smoothing=0.0, max_leaves=6)
    smooth, _ = _grow(X, channels, k, leaf_smoothing=50.0, max_leaves=6)
    before = channels.sum()
    assert smooth.loss < before
    assert exact.loss <= smooth.loss * (1 + 1e-12)
    # on the exact tree's partition, smoothing only shortens each step
    grower_exact = exact
    for leaf in np.unique(grower_exact.leaf_of_row):
        sums = np.concatenate([channels[grower_exact.leaf_of_row == leaf].sum(axis=0), [1.0]])
        prior = np.full(k, 10.0 * sums[:2 * k].mean())
        a = np.empty((1, k))
        vector_leaf.leaf_vectors(sums[None], prior, k, a)
        a = a[0]
        a0 = grower_exact.leaf_values[leaf]
        assert np.all(np.abs(a) <= np.abs(a0) + 1e-12) and np.all(a * a0 >= 0)


def test_leafwise_growth_respects_max_leaves_depth_and_leaf_size():
    X, y = _data(n=600, d=6)
    k = 4
    channels = _channels(X, y, k)
    fit, _ = _grow(X, channels, k, max_leaves=12, min_samples_leaf=25)
    counts = np.bincount(fit.leaf_of_row)
    assert len(counts[counts > 0]) == 12 and counts[counts > 0].min() >= 25
    fit2, _ = _grow(X, channels, k, max_leaves=31, max_depth=2, min_samples_leaf=1)
    assert len(np.unique(fit2.leaf_of_row)) <= 4
    # the tree routes the training rows exactly as the growth partitioned them
    assert_array_equal(fit.arrays.leaves(X)[:, 0], fit.leaf_of_row)


@pytest.mark.parametrize("nan_rate", [0.0, 0.2])
def test_histogram_subtraction_builds_the_same_tree_as_direct_histograms(monkeypatch, nan_rate):
    X, y = _data(n=800, d=6, nan_rate=nan_rate, seed=3)
    k = 4
    channels = _channels(X, y, k, seed=3)
    fit, _ = _grow(X, channels, k, max_leaves=20, min_samples_leaf=5)
    monkeypatch.setattr(vector_tree, "HISTOGRAM_BUDGET", 0)  # every histogram built directly
    direct, _ = _grow(X, channels, k, max_leaves=20, min_samples_leaf=5)
    for name in ("feature", "threshold", "missing_left", "left", "right"):
        assert_array_equal(getattr(fit.arrays, name), getattr(direct.arrays, name))
    assert_allclose(fit.leaf_values, direct.leaf_values, rtol=1e-10, atol=1e-12)
    # and a subtracted histogram equals the direct one
    data = BinnedData.fit(X, None, 255, 0, row_layout=True)
    rows = np.arange(len(y))
    ones = np.ones(len(y))
    sums = row_channels.row_sums(channels, rows, None, ones)
    left = rows[rows % 3 == 0]
    parent = _histogram(data, channels, rows, sums)
    small = _histogram(data, channels, left, row_channels.row_sums(channels, left, None, ones))
    right = rows[rows % 3 != 0]
    big = _histogram(data, channels, right, row_channels.row_sums(channels, right, None, ones))
    leaf_histogram.subtract_histogram(parent, small, parallel=True)
    assert_allclose(parent, big, rtol=1e-9, atol=1e-12)


def test_min_samples_leaf_counts_sample_weight():
    X, y = _data(n=300, seed=10)
    k = 4
    channels = _channels(X, y, k, seed=10)
    data = BinnedData.fit(X, None, 255, 0, row_layout=True)
    weight = np.full(300, 0.5)
    grower = VectorTreeGrower(data.binner, k,
                              VectorTreeOptions(min_samples_leaf=20, max_leaves=40),
                              np.random.RandomState(0))
    fit = grower.grow(LocalRows(data, channels, row_weight=weight))
    counts = np.bincount(fit.leaf_of_row)
    assert counts[counts > 0].min() >= 40  # 40 rows of weight 0.5


def test_sparse_and_dense_histograms_agree():
    rng = np.random.default_rng(5)
    X = np.where(rng.random((500, 8)) < 0.8, 0.0, rng.integers(1, 6, (500, 8)).astype(float))
    y = rng.integers(0, 3, 500)
    channels = _channels(X, y, 3, seed=5)
    data = BinnedData.fit(X, None, 255, 0, row_layout=True)
    assert data.sparse is not None
    rows = np.flatnonzero(rng.random(500) < 0.4)
    sums = row_channels.row_sums(channels, rows, None, np.ones(len(channels)))
    sparse_hist = _histogram(data, channels, rows, sums)
    data.sparse = None
    dense_hist = _histogram(data, channels, rows, sums)
    assert np.isfinite(dense_hist).all()
    assert_allclose(sparse_hist, dense_hist, rtol=1e-9, atol=1e-12)


def test_vector_tree_classifier_learns_and_its_loss_matches_its_predictions():
    X, y = _data(n=600, nan_rate=0.1, seed=4)
    model = RebelClassifier(40, weak_learner="vector_tree", learning_rate=0.3,
                            random_state=0).fit(X[:450], y[:450])
    assert model.vectors_ is None
    assert isinstance(model.trees_, LeafTreeArrays)
    assert np.mean(model.predict(X[450:]) == y[450:]) > 0.7  # 10% label noise, 10% NaN
    assert np.all(np.diff(model.train_loss_) <= 1e-12 * model.train_loss_[:-1])
    # the training loss the booster tracked is the loss of the model's own scores
    loss = RebelLoss(model.cost_matrix_, y[:450], np.ones(450))
    assert_allclose(loss.loss(model.decision_function(X[:450])), model.train_loss_[-1],
                    rtol=1e-9)


@pytest.mark.parametrize("sampling", ["uniform", "goss"])
def test_row_and_feature_sampling_is_seeded_and_routes_every_row(sampling):
    X, y = _data(n=800, d=8, nan_rate=0.05, seed=6)
    params = dict(weak_learner="vector_tree", learning_rate=0.3, subsample=0.5,
                  sampling=sampling, colsample_bytree=0.5, random_state=3)
    a = RebelClassifier(15, **params).fit(X, y)
    b = RebelClassifier(15, **params).fit(X, y)
    assert_array_equal(a.decision_function(X), b.decision_function(X))
    c = RebelClassifier(15, **{**params, "random_state": 4}).fit(X, y)
    assert not np.array_equal(a.decision_function(X), c.decision_function(X))
    # every tree splits on at most half the features
    for t in range(len(a.trees_)):
        assert len(np.unique(a.trees_.features_used(t))) <= 4
    # rows left out of a tree's sample still got its step: the tracked loss is the model's
    loss = RebelLoss(a.cost_matrix_, y, np.ones(len(y)))
    assert_allclose(loss.loss(a.decision_function(X)), a.train_loss_[-1], rtol=1e-9)


def test_goss_sums_are_unbiased():
    X, y = _data(n=300, seed=7)
    k = 4
    channels = _channels(X, y, k, seed=7) * np.linspace(0.1, 3, 300)[:, None]
    rng = np.random.RandomState(0)
    draws = []
    for _ in range(400):
        rows, amplify = sample_rows(channels, 0.3, "goss", rng)
        assert np.all(np.diff(rows) > 0)
        draws.append(row_channels.row_sums(channels, rows, amplify, np.ones(300))[:2 * k])
    assert_allclose(np.mean(draws, axis=0), channels.sum(axis=0), rtol=0.03)


def test_leaf_tree_files_round_trip_and_refuse_cycles(tmp_path):
    X, y = _data(n=300, seed=8)
    model = RebelClassifier(8, weak_learner="vector_tree", random_state=0).fit(X, y)
    path = tmp_path / "m.json"
    model.save(path)
    loaded = RebelClassifier.load(path)
    assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    doc = json.loads(path.read_text())
    learners = doc["model"]["learners"]
    learners["left"][0][0] = 0  # node 0's child is node 0: a cycle
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="child does not come after"):
        RebelClassifier.load(path)


def test_constant_leaf_tree_and_description():
    tree = constant_leaf_tree(4)
    X = np.array([[1.0, np.nan], [-3.0, 2.0]])
    assert_array_equal(tree.leaves(X), [[0], [0]])
    X, y = _data(n=300, seed=9)
    model = RebelClassifier(3, weak_learner="vector_tree", max_leaves=4,
                            random_state=0).fit(X, y)
    regions = model.trees_.regions(0, [f"x{i}" for i in range(5)], model.classes_)
    assert len(regions) == 4
    assert all(text for text, _ in regions)


def test_rules_merge_the_tests_on_one_feature_and_hold_for_the_row():
    X, y = _data(n=500, d=3, seed=11)
    model = RebelClassifier(5, weak_learner="vector_tree", min_samples_leaf=2,
                            random_state=0).fit(X, y)
    names = ["a", "b", "c"]
    for t in range(5):
        for x in X[:40]:
            text, used = model.trees_.rule(t, x, names, model.classes_)
            if text == "always (bias)":
                continue
            assert len(used) == len(set(used))  # one test per feature
            for test in text.split(" and "):
                parts = test.split()
                if len(parts) == 5:  # low < name <= high
                    low, name, high = float(parts[0]), parts[2], float(parts[4])
                    assert low < x[names.index(name)] <= high
                elif parts[1] == "<=":
                    assert x[names.index(parts[0])] <= float(parts[2])
                else:
                    assert x[names.index(parts[0])] > float(parts[2])


def test_sampling_and_quickboost_are_refused_where_they_do_not_apply():
    X, y = _data(n=100)
    with pytest.raises(ValueError, match="vector_tree"):
        RebelClassifier(3, weak_learner="tree", subsample=0.5).fit(X, y)
    with pytest.raises(ValueError, match="quickboost"):
        RebelClassifier(3, weak_learner="vector_tree", quickboost=True).fit(X, y)


@pytest.mark.parametrize("simd", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_dense_histogram_adds_each_cell_in_row_order(threads, simd, monkeypatch):
    """The dense kernel, in feature tiles and tasks, with or without the SIMD adds compiled
    for the channel count, equals numpy's sequential np.add.at bit for bit (each cell sums
    its rows in row order), on a feature subset with a tile of 3."""
    import numba

    from rebelboost.search.histograms import dense, leaf

    monkeypatch.setattr(dense, "PARALLEL_ADDS", 1)  # (read by threads_pay: threads)
    monkeypatch.setattr(dense, "_SPECIALIZE_MIN_ADDS", 0 if simd else 1 << 62)
    rng = np.random.default_rng(6)
    X = rng.normal(size=(700, 11))
    X[rng.random(X.shape) < 0.1] = np.nan
    channels = np.c_[rng.random((700, 6)) * 10.0 ** rng.integers(-8, 8, (700, 6)),
                     np.ones(700)]
    data = BinnedData.fit(X, None, 255, 0)
    offsets = data.cell_offsets
    monkeypatch.setattr(dense, "TILE_BYTES", 3 * offsets[-1] / 11 * 7 * 8)  # 3 a tile
    rows = np.flatnonzero(rng.random(700) < 0.6)
    features = np.array([0, 2, 3, 5, 6, 7, 9, 10], dtype=np.intp)
    out = np.full((offsets[-1], 7), np.nan)
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        leaf.build_leaf_histogram(data, channels[rows], rows, channels[rows].sum(0), features,
                                  out)
    finally:
        numba.set_num_threads(before)
    for f in features:
        want = np.zeros((256, 7))
        np.add.at(want, data.bins[rows, f], channels[rows])
        used = list(range(data.layout.n_value_bins[f])) + [data.layout.missing_bin]
        np.testing.assert_array_equal(out[offsets[f]:offsets[f + 1]], want[used])
    assert np.isnan(out[offsets[1]:offsets[2]]).all()  # a feature not asked for: untouched


def test_leaf_loss_of_weights_whose_product_underflows():
    """Rows fitted long ago (500 trees at rate 1 on a small set) carry weights near 1e-200:
    the closed form's sqrt(P M) underflows to 0 there, and the loss must still be finite
    and right (it raised ZeroDivisionError inside numba)."""
    from rebelboost.search.vector_leaf import leaf_loss

    tiny = 1e-200
    got = leaf_loss(np.array([tiny, tiny, 3 * tiny, tiny, 1.0, 1.0]), np.zeros(2), 2)
    # class 0: p = m: 2p; class 1: 2 sqrt(p m) up to the step's epsilon
    want = 2 * tiny + 2 * np.sqrt(3) * tiny
    assert np.isfinite(got) and abs(got - want) <= 1e-9 * want


class _Waiting:
    """A leaf as the grower's look-ahead sees it: its split's gain, and its children where
    the rows are split already (None: not yet)."""

    def __init__(self, rows: int, gain: float, children=None):
        self.rows, self.gain, self.children = rows, gain, children
        self.split = (None, rows, 0, False, None)  # (score, feature, bin, missing, set)


@pytest.mark.parametrize("seed", range(40))
def test_the_look_ahead_names_every_leaf_the_budget_can_reach(seed):
    """``VectorTreeGrower._expected`` (the splits a remote row set does in one round trip)
    holds every leaf with known rows that a max-heap would split within the budget: the
    heap's leaves take splits, and their children (split ahead by the workers) enter as
    their parent leaves it. Children deeper than the heap are ranked with gains drawn at
    random, often above their parents': ranked by their own gains they pushed a waiting
    leaf out (one round trip more)."""
    import heapq
    import itertools

    rng = np.random.default_rng(seed)
    names = itertools.count()

    def grown(depth):
        leaf = _Waiting(next(names), float(rng.integers(1, 20)))
        if depth < 3 and rng.random() < 0.6:  # split ahead: its children are known
            leaf.children = [grown(depth + 1) for _ in range(2)]
        return leaf

    waiting = [grown(0) for _ in range(int(rng.integers(1, 6)))]
    budget = int(rng.integers(1, 12))
    heap = [(-leaf.gain, i, leaf) for i, leaf in enumerate(waiting)]
    heapq.heapify(heap)
    named = {rows for rows, *_ in VectorTreeGrower._expected(list(heap), budget)}
    # the splits the grower takes, unknown children left out (they only take splits away)
    reached, ticket = set(), len(heap)
    for _ in range(budget):
        if not heap:
            break
        _, _, leaf = heapq.heappop(heap)
        if leaf.children is None:
            reached.add(leaf.rows)
            continue
        for child in leaf.children:
            heapq.heappush(heap, (-child.gain, ticket, child))
            ticket += 1
    assert reached <= named
    assert all(rows not in named for rows in range(next(names))
               if rows not in {leaf.rows for leaf in _unsplit(waiting)})


def _unsplit(leaves):
    """The leaves (and the children of those split ahead) whose rows are not split yet."""
    for leaf in leaves:
        if leaf.children is None:
            yield leaf
        else:
            yield from _unsplit(leaf.children)
