"""The layer grower, binned data and split-score objects shared by every tree learner."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from rebelboost import AdaBoostMHClassifier, OneVsAllAdaBoostClassifier, RebelClassifier
from rebelboost.learners import grower as grower_module
from rebelboost.learners.codeword_tree import codeword_tree
from rebelboost.learners.grower import LayerGrower
from rebelboost.learners.hamming_tree import free_sign_tree, signed_cost_channels
from rebelboost.learners.rebel_tree import grow_rebel_tree
from rebelboost.losses.mcboost import simplex_codewords
from rebelboost.search import (
    BinnedData,
    codeword_score,
    mh_stump_score,
    quickboost_split,
    rebel_score,
    sign_cost_score,
)
from rebelboost.search.histograms import column_histograms
from rebelboost.search.splits import Split

FAST = settings(max_examples=40, deadline=None)


def _data(seed, n=150, d=5, nan=0.1, zeros=0.5):
    rng = np.random.default_rng(seed)
    X = np.round(rng.standard_normal((n, d)) * 3, 1)
    X[rng.random((n, d)) < zeros] = 0.0  # sparse columns: default bins by subtraction
    X[rng.random((n, d)) < nan] = np.nan
    return X, rng


@FAST
@given(st.integers(0, 2**32 - 1), st.integers(2, 6), st.sampled_from([3, 255]))
def test_subtracted_histograms_equal_direct_ones(seed, depth, max_bins):
    X, rng = _data(seed)
    data = BinnedData.fit(X, max_bins=max_bins)
    channels = signed_cost_channels(rng.standard_normal(X.shape[0]))
    grower = LayerGrower(data, depth, fixed_channels=True)
    nbt = data.layout.n_bins_total
    for _ in range(depth):
        if grower.find_splits(channels, sign_cost_score) and grower.histograms is not None:
            hist, slot = grower.histograms
            mass = np.abs(channels).sum()
            for node, i in slot.items():
                direct, _ = column_histograms(data.columns, channels,
                                              grower.node_of_row - node, 1, nbt)
                assert_allclose(hist[i], direct[0], rtol=1e-12, atol=1e-13 * mass)
        grower.end_layer()


@FAST
@given(st.integers(0, 2**32 - 1), st.integers(1, 5))
def test_fixed_channel_trees_match_direct_growth(seed, depth):
    """Subtraction and skipping passed nodes change no split (here: no near-ties)."""
    X, rng = _data(seed)
    data = BinnedData.fit(X)
    channels = signed_cost_channels(rng.integers(-3, 4, X.shape[0]).astype(float))
    fast = LayerGrower(data, depth, fixed_channels=True)
    slow = LayerGrower(data, depth)
    for _ in range(depth):
        fast.grow_layer(channels, sign_cost_score)
        slow.grow_layer(channels, sign_cost_score)
    np.testing.assert_array_equal(fast.feature, slow.feature)
    np.testing.assert_array_equal(fast.threshold, slow.threshold)
    np.testing.assert_array_equal(fast.node_of_row, slow.node_of_row)
    assert fast.nodes_searched <= slow.nodes_searched


def test_deep_trees_on_few_rows_visit_only_nodes_with_rows():
    """``max_depth=16`` on 120 rows: at most one search per node holding two rows (the old
    growers visited all 2**16 nodes of every tree)."""
    X, rng = _data(0, n=120, d=4, nan=0.0, zeros=0.0)
    y = rng.integers(0, 3, 120)
    model = RebelClassifier(5, max_depth=16, random_state=0).fit(X, y)
    assert model.n_estimators_ == 5
    data = BinnedData.fit(X)
    channels = rng.exponential(size=(120, 6))
    learner = grow_rebel_tree(data, channels, 16)
    assert 1 <= learner.nodes_searched <= 15 * 60 + 1  # a layer holds <= 60 nodes of >= 2 rows
    grower = LayerGrower(data, 16, fixed_channels=True)
    for _ in range(16):
        grower.grow_layer(signed_cost_channels(channels[:, 0] - channels[:, 1]), sign_cost_score)
    assert grower.nodes_searched <= 2 * 120  # each split leaves at most two nodes to search
    for cls in (AdaBoostMHClassifier(3, weak_learner="tree", max_depth=16),
                OneVsAllAdaBoostClassifier(2, max_depth=16)):
        assert cls.fit(X, y).trees_.depth == 16


def test_empty_and_weightless_nodes_are_not_searched():
    data = BinnedData.fit(np.arange(8.0)[:, None])
    channels = np.zeros((8, 2))
    channels[4:] = [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]  # rows 0..3 weigh nothing
    grower = LayerGrower(data, 3)
    grower.split(0, Split(0.0, 0, 3, False))  # node 1: the weightless rows, node 2: the rest
    grower.end_layer()
    assert set(grower.find_splits(channels, sign_cost_score)) == {2}
    grower.end_layer()
    assert set(grower.find_splits(channels, sign_cost_score)) == {5}  # 3 weightless; 4, 6 empty


def test_reduction_point_sees_every_directly_built_histogram(monkeypatch):
    X, rng = _data(3)
    data = BinnedData.fit(X)
    seen = []

    def reduce(hist, totals):
        seen.append(hist.shape[0])
        return hist, totals

    grower = LayerGrower(data, 3, reduce=reduce)
    for _ in range(3):
        grower.grow_layer(signed_cost_channels(rng.standard_normal(X.shape[0])),
                          sign_cost_score)
    assert sum(seen) == grower.nodes_searched


def test_codeword_tree_leaves_take_their_best_codeword():
    X, rng = _data(5)
    data = BinnedData.fit(X)
    codewords = simplex_codewords(4)
    grad = rng.standard_normal((X.shape[0], 3))
    tree, leaf_class, row_class = codeword_tree(data, grad, codewords, 3)
    leaves = tree.leaves(X)[:, 0]
    np.testing.assert_array_equal(leaf_class[leaves], row_class)
    proj = grad @ codewords.T
    for leaf in np.unique(leaves):
        assert leaf_class[leaf] == np.argmax(proj[leaves == leaf].sum(axis=0))


def test_free_sign_tree_outputs_match_prediction():
    X, rng = _data(7)
    data = BinnedData.fit(X)
    tree, phi = free_sign_tree(data, signed_cost_channels(rng.standard_normal(len(X))), 4)
    np.testing.assert_array_equal(tree.outputs(X)[:, 0], phi)


# ------------------------------------------------------------------------- binned data

def test_binned_data_thresholds_come_from_weighted_rows_and_bin_other_data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    w = np.ones(50)
    w[:10] = 0.0
    data = BinnedData.fit(X, w, max_bins=8, random_state=0)
    alone = BinnedData.fit(X[10:], max_bins=8, random_state=0)
    np.testing.assert_array_equal(data.bin(X[10:]), alone.bins)
    np.testing.assert_array_equal(data.bin(X), data.bins)
    assert data.layout.n_bins_total == 9 and data.sparse is None


@pytest.mark.parametrize(("call", "message"), [
    (lambda X: BinnedData.fit(X[0]), "2-d"),
    (lambda X: BinnedData.fit(X, np.ones(3)), "one entry per row"),
    (lambda X: BinnedData.fit(X, np.zeros(len(X))), "positive weight"),
    (lambda X: BinnedData.fit(X).bin(X[:, :2]), "columns"),
    (lambda X: BinnedData.fit(X, max_bins=1), "max_bins"),
])
def test_binned_data_refuses_bad_input(call, message):
    X = np.random.default_rng(0).standard_normal((20, 3))
    with pytest.raises(ValueError, match=message):
        call(X)


# ------------------------------------------------------------------------- split scores

def test_score_objects_compute_their_formulas():
    rng = np.random.default_rng(0)
    left, right = rng.exponential(size=5), rng.exponential(size=5)
    k = 4
    edge = np.abs(right[:k] - left[:k]).sum()
    assert mh_stump_score(left, right) == pytest.approx(left[k] + right[k] - edge)
    expected = left[k] + right[k] - left[:k].max() - right[:k].max()
    assert codeword_score(left, right) == pytest.approx(max(expected, 0.0))
    assert sign_cost_score(left[:2], right[:2]) == pytest.approx(
        min(left[0], left[1]) + min(right[0], right[1]))
    w = rng.exponential(size=6)
    assert rebel_score(w, w) == pytest.approx(np.sqrt((w[:3] + w[3:]) ** 2).sum())


def test_bounds_belong_to_their_scores():
    assert rebel_score.has_bound and sign_cost_score.has_bound
    assert not mh_stump_score.has_bound and not codeword_score.has_bound
    rng = np.random.default_rng(1)
    for score, c in ((rebel_score, 6), (sign_cost_score, 2)):
        left, right, unseen = (rng.exponential(size=c) for _ in range(3))
        assert score.bound(left, right, np.zeros(c)) == pytest.approx(score(left, right))
        # Every way of adding the unseen rows scores at least the bound.
        for x in rng.random((20, c)):
            assert score(left + x * unseen, right + (1 - x) * unseen) >= score.bound(
                left, right, unseen) * (1 - 1e-12)
    with pytest.raises(TypeError, match="no QuickBoost bound"):
        mh_stump_score.bound(np.ones(3), np.ones(3), np.zeros(3))
    data = BinnedData.fit(np.arange(10.0)[:, None])
    with pytest.raises(TypeError, match="mh_stump"):
        quickboost_split(data.bins, np.ones((10, 3)), np.arange(10), data.layout,
                         mh_stump_score, lambda f: None)


# ------------------------------------------------------------------------- cached kernels

_KERNEL_MODULES = ("rebelboost.binning", "rebelboost.search.histograms.layer",
                   "rebelboost.search.histograms.sparse", "rebelboost.search.histograms.dense",
                   "rebelboost.search.histograms.leaf", "rebelboost.search.quickboost",
                   "rebelboost.search.scores", "rebelboost.search.splits",
                   "rebelboost.learners.grower", "rebelboost.learners.tree")


def test_every_kernel_is_cached_on_disk():
    for name in _KERNEL_MODULES:
        module = sys.modules[name] if name in sys.modules else __import__(name, fromlist=["x"])
        for attr, value in vars(module).items():
            if isinstance(value, numba.core.registry.CPUDispatcher):
                assert value._cache.__class__.__name__ != "NullCache", f"{name}.{attr}"
    assert grower_module.reduce_histograms.__doc__ and "distributed" in (
        grower_module.reduce_histograms.__doc__)


_FIT_TWICE = """
import sys
import numba
import numpy as np
from sklearn.datasets import load_iris
from rebelboost import AdaBoostMHClassifier, MCBoostClassifier, RebelClassifier
X, y = load_iris(return_X_y=True)
RebelClassifier(2).fit(X, y)
AdaBoostMHClassifier(2, weak_learner="tree", max_depth=2).fit(X, y)
MCBoostClassifier(2, algorithm="gd", max_depth=2).fit(X, y)
missed = []
for name, module in list(sys.modules.items()):
    if name.startswith("rebelboost") and "similarity" not in name:
        for attr, value in vars(module).items():
            if isinstance(value, numba.core.registry.CPUDispatcher):
                if sum(value.stats.cache_misses.values()):
                    missed.append(name + "." + attr)
print(" ".join(missed))
"""


def test_a_second_process_compiles_nothing():
    """Every kernel a fit runs comes from numba's disk cache once one process has run."""
    src = str(Path(__file__).parents[1] / "src")
    env = {"PYTHONPATH": src, "PATH": "/usr/bin:/bin"}
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", _FIT_TWICE], capture_output=True,
                             text=True, env=env, check=True)
    assert out.stdout.strip() == ""
