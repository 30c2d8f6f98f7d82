"""REBEL trees grown layer by layer: each layer never raises the loss; depth pays off."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from rebelboost import RebelClassifier
from rebelboost.binning import Binner
from rebelboost.datasets.synthetic import make_spiral
from rebelboost.learners import constant_learner, grow_rebel_tree
from rebelboost.losses.rebel import RebelLoss
from rebelboost.search.binned import BinnedData

FAST = settings(max_examples=30, deadline=None)


def _direct_loss(channels, f, a):
    k = a.shape[0]
    step = f[:, None] * a[None, :]
    return float(np.sum(channels[:, :k] * np.exp(step) + channels[:, k:] * np.exp(-step)))


@st.composite
def tree_problems(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(2, 80))
    d = draw(st.integers(1, 4))
    k = draw(st.integers(2, 4))
    X = np.round(rng.standard_normal((n, d)), draw(st.integers(0, 2)))
    X[rng.random((n, d)) < draw(st.sampled_from([0.0, 0.2]))] = np.nan
    if draw(st.booleans()):
        # Weights of a real boosting state: REBEL loss at random scores, some huge.
        y = rng.integers(0, k, size=n)
        cost = rng.uniform(0.5, 3.0, size=(k, k))
        np.fill_diagonal(cost, 0.0)
        scores = rng.standard_normal((n, k)) * draw(st.sampled_from([0.0, 1.0, 30.0]))
        channels, _ = RebelLoss(cost, y, np.ones(n)).weights(scores)
    else:
        channels = rng.exponential(size=(n, 2 * k))
        channels[rng.random(channels.shape) < 0.3] = 0.0
    max_bins = draw(st.sampled_from([4, 255]))
    return X, channels, max_bins


@FAST
@given(tree_problems())
def test_each_layer_never_raises_the_loss(problem):
    X, channels, max_bins = problem
    binner = Binner(max_bins)
    bins = binner.fit_transform(X)
    total = float(channels.sum())  # the loss of no step (a = 0), in the channels' scale
    bias = constant_learner(channels.sum(axis=0), X.shape[0], 1)
    assert bias.loss <= total * (1 + 1e-12)
    learners = [grow_rebel_tree(BinnedData(binner, bins), channels, depth) for depth in (1, 2, 3)]
    if learners[0] is None:
        assert all(lr is None for lr in learners)
        return
    previous = total
    for depth, learner in enumerate(learners, start=1):
        assert learner.arrays.depth == depth
        assert set(np.unique(learner.output)) <= {-1.0, 1.0}
        assert np.isfinite(learner.vector).all()
        # Losses come from node sums (subtraction trick: absolute error ~1e-16 of the total)
        # multiplied by e^|a| (up to ~1e5): that bounds the rounding when the loss is tiny.
        slack = 1e-12 * total * np.exp(np.abs(learner.vector).max()) + 1e-300
        # The reported loss is the loss of (output, vector), computed from per-sample weights.
        assert_allclose(learner.loss, _direct_loss(channels, learner.output, learner.vector),
                        rtol=1e-9, atol=slack)
        assert learner.loss <= previous * (1 + 1e-12) + slack
        assert all(gain >= -1e-12 * total for _, gain in learner.gains)
        previous = learner.loss
    # Deeper trees extend the shallower ones: the same root split.
    assert learners[1].arrays.feature[0, 0] == learners[0].arrays.feature[0, 0]
    assert learners[2].arrays.threshold[0, 0] == learners[0].arrays.threshold[0, 0]


def test_layers_strictly_help_on_xor():
    # XOR: no stump does much better than the constant; every added layer does.
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(200, 2))
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0)).astype(int)
    loss = RebelLoss(1.0 - np.eye(2), y, np.ones(200))
    channels, _ = loss.weights(np.zeros((200, 2)))
    binner = Binner(255)
    data = BinnedData(binner, binner.fit_transform(X))
    stump, tree2, tree3 = (grow_rebel_tree(data, channels, depth) for depth in (1, 2, 3))
    total = channels.sum()
    assert stump.loss > 0.9 * total
    assert tree2.loss < 0.8 * stump.loss
    assert tree3.loss < 0.8 * tree2.loss


def test_no_split_possible_returns_none():
    X = np.column_stack([np.full(10, 1.0), np.full(10, np.nan)])
    binner = Binner(255)
    bins = binner.fit_transform(X)
    channels = np.random.default_rng(0).exponential(size=(10, 6))
    for depth in (1, 3):
        assert grow_rebel_tree(BinnedData(binner, bins), channels, depth) is None


def test_deeper_trees_reach_lower_training_loss_than_stumps():
    X, y = make_spiral(300, n_classes=3, noise=0.3, random_state=0)
    final = {}
    for depth in (1, 2, 3):
        model = RebelClassifier(40, weak_learner="tree", max_depth=depth, random_state=0)
        model.fit(X, y)
        final[depth] = model.train_loss_[-1]
        assert np.all(np.diff(model.train_loss_) <= 1e-12 * model.init_loss_)
    stump = RebelClassifier(40, weak_learner="stump", random_state=0).fit(X, y)
    assert stump.train_loss_[-1] == final[1]
    assert final[2] < 0.8 * final[1]
    assert final[3] < 0.8 * final[2]
