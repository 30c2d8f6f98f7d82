"""The compiled grower grows the Python grower's trees, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from rebelboost import RebelClassifier
from rebelboost.ensemble import _compiled_stages
from rebelboost.learners import compiled_grower, vector_tree


def _tree_by_tree(monkeypatch):
    """Each tree from the booster's loop, not the whole fit in one compiled call
    (``tests/test_compiled_stages.py``): these tests compare the trees' growers."""
    monkeypatch.setattr(_compiled_stages, "applies", lambda booster: False)


def _data(seed, n, d, k, missing=False, binary=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if binary:  # mostly one value a column: the sparse bins
        X = (X > 0.9).astype(float) * rng.integers(1, 4, size=(n, d))
    if missing:
        X[rng.random(X.shape) < 0.1] = np.nan
    score = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) + rng.normal(0, 0.7, n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, k + 1)[1:-1]))
    return X, y


CASES = [
    ({}, {}),
    ({"subsample": 0.7}, {}),
    ({"subsample": 0.6, "sampling": "goss"}, {}),
    ({"colsample_bytree": 0.5}, {}),
    ({"max_depth": 3, "max_leaves": 7, "min_samples_leaf": 3}, {}),
    ({"max_leaves": 5, "learning_rate": 1.0}, {"zero_weights": True}),
]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("params, extra", [
    *CASES, ({}, {"blocks": 3}), ({"subsample": 0.6, "sampling": "goss"}, {"blocks": 1}),
    ({"colsample_bytree": 0.7}, {"scan_tasks": 3}),
    # every split's children in one region on two threads, or none; children gathered in
    # blocks (built first, then subtracted and scanned on the threads)
    ({"n_jobs": 2}, {"children_work": 0}),
    ({"n_jobs": 2, "subsample": 0.7}, {"children_work": 0, "blocks": 3}),
    ({"n_jobs": 2}, {"children_work": 1 << 62}),
    # the same over sparse bins: their entries' feature blocks claimed (the smaller child's
    # entries added, its default bins filled, the larger child subtracted, both scanned)
    ({"n_jobs": 2}, {"children_work": 0, "binary": True}),
    ({"n_jobs": 2, "colsample_bytree": 0.6}, {"children_work": 0, "binary": True}),
    ({"n_jobs": 2, "subsample": 0.7}, {"children_work": 0, "blocks": 3, "binary": True}),
    ({"n_jobs": 2}, {"children_work": 0, "binary": True, "no_sparse_blocks": True}),
    # category sets: few levels (one against the rest), many (the class and value orders,
    # capped), missing categories; light categories, rows outside a sample routed through
    # the sets, trees without a set node, and the category search on every thread
    ({}, {"categorical": True}),
    ({"max_leaves": 7, "min_samples_leaf": 1, "learning_rate": 1.0}, {"categorical": True}),
    ({"subsample": 0.7}, {"categorical": True}),
    ({"colsample_bytree": 0.6}, {"categorical": True}),
    ({"max_depth": 2, "max_leaves": 4}, {"categorical": True}),
    ({}, {"categorical": True, "category_tasks": True}),
])
def test_compiled_trees_are_the_python_growers(monkeypatch, seed, params, extra):
    """Models fitted with and without the compiled grower: the same trees, category sets,
    leaf values, training losses and histogram additions, on dense and sparse bins, missing
    values, categorical columns, row and feature sampling, depth and leaf limits, and weights
    of zero; with children's channels gathered ``blocks`` rows at a time (in full on these
    sizes otherwise), with leaves scanned in ``scan_tasks`` feature blocks on every
    thread (one otherwise), and with every split's children (or none) built and scanned in
    one region on two threads (``children_work``)."""
    n = (60, 400, 1500, 3000)[seed]
    if extra.get("categorical"):
        X, y = _categorical_data(seed, n, 2 + seed % 4, missing=seed % 2 == 1)
    else:
        X, y = _data(seed, n, 4 + 3 * seed, 2 + seed % 4, missing=seed % 2 == 1,
                     binary=seed == 3 or extra.get("binary", False))
    weight = None
    if extra.get("zero_weights"):
        weight = np.random.default_rng(seed).uniform(0.0, 2.0, n)
        weight[::5] = 0.0
    used = []
    real = compiled_grower.grow_tree

    def spy(*args):
        used.append(True)
        return real(*args)

    fits = []
    for compiled in (False, True):
        _tree_by_tree(monkeypatch)
        if compiled:
            monkeypatch.setattr(compiled_grower, "grow_tree", spy)
            if "blocks" in extra:
                channels = 2 * len(np.unique(y)) + 1
                monkeypatch.setattr(compiled_grower, "GATHER_BYTES", 8 * channels * extra["blocks"])
                assert compiled_grower.gather_rows(channels) == extra["blocks"]
            if "scan_tasks" in extra:
                monkeypatch.setattr(vector_tree, "scan_tasks",
                                    lambda n_cells, n_channels: extra["scan_tasks"])
            if "category_tasks" in extra:
                monkeypatch.setattr(compiled_grower, "category_tasks", lambda *args: 4)
            if "children_work" in extra:
                monkeypatch.setattr(compiled_grower, "PARALLEL_CHILDREN_WORK",
                                    extra["children_work"])
            if extra.get("no_sparse_blocks"):  # (built on the calling thread, then claimed)
                def without_blocks(*args, together=compiled_grower.children_together):
                    *rest, blocks = together(*args)
                    return (*rest, blocks[:, :0])

                monkeypatch.setattr(compiled_grower, "children_together", without_blocks)
        else:
            monkeypatch.setattr(compiled_grower, "applies", lambda grower, rows: False)
        model = RebelClassifier(15, random_state=seed, **params).fit(X, y, sample_weight=weight)
        fits.append(model)
        monkeypatch.undo()
    assert len(used) == 15  # every tree of the second fit took the compiled path
    assert (fits[1].trees_.category_words is not None) == bool(extra.get("categorical"))
    _assert_same_models(*fits, X)


def _categorical_data(seed, n, k, n_levels=(3, 12, 40), missing=False):
    """A frame of two numeric columns and categorical ones of ``n_levels`` levels (a level's
    rows lean to one class), with missing categories if asked."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    X, y = _data(seed, n, 2, k, missing=missing)
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1]})
    for j, levels in enumerate(n_levels):
        lean = rng.integers(0, k, levels)
        codes = rng.integers(0, levels, n)
        codes = np.where((y == lean[codes]) | (rng.random(n) < 0.3), codes, (codes + 1) % levels)
        values = np.array([f"v{i}" for i in range(levels)], dtype=object)[codes]
        if missing:
            values[rng.random(n) < 0.08] = None
        frame[f"c{j}"] = pd.Categorical(values)
    return frame, y


def _assert_same_models(a, b, X):
    for name in ("feature", "threshold", "missing_left", "left", "right", "category_words"):
        np.testing.assert_array_equal(getattr(a.trees_, name), getattr(b.trees_, name))
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    np.testing.assert_array_equal(a.train_loss_, b.train_loss_)
    np.testing.assert_array_equal(a.histogram_updates_, b.histogram_updates_)
    np.testing.assert_array_equal(a.feature_importances_, b.feature_importances_)


def test_compiled_trees_are_those_of_the_python_growers_threads(monkeypatch):
    """Rows enough for the Python grower's multi-threaded histograms below the root (its
    children's one pass, split by feature): the one-thread compiled tree is still the same,
    its buffers reused."""
    from rebelboost.search import vector_children

    X, y = _data(7, 6000, 60, 4, missing=True)
    threaded, used = [], []
    real, grow = vector_children.children_claimed, compiled_grower.grow_tree
    fits = []
    for compiled in (False, True):
        _tree_by_tree(monkeypatch)
        if compiled:
            monkeypatch.setattr(compiled_grower, "grow_tree",
                                lambda *args: used.append(True) or grow(*args))
        else:
            monkeypatch.setattr(compiled_grower, "applies", lambda grower, rows: False)
            monkeypatch.setattr(vector_children, "children_claimed",
                                lambda *args: threaded.append(True) or real(*args))
        fits.append(RebelClassifier(8, random_state=0, colsample_bytree=0.8).fit(X, y))
        monkeypatch.undo()
    assert threaded and len(used) == 8  # (children built and scanned on threads)
    _assert_same_models(*fits, X)


def test_the_python_grower_keeps_what_the_compiled_one_does_not_take(monkeypatch):
    """Quantized histograms: the Python grower (no compiled tree)."""
    _tree_by_tree(monkeypatch)
    X, y = _data(0, 300, 3, 3)
    used = []
    real = compiled_grower.grow_tree
    monkeypatch.setattr(compiled_grower, "grow_tree",
                        lambda *args: used.append(True) or real(*args))
    RebelClassifier(5, histogram_bits=12).fit(X, y)
    assert not used
    RebelClassifier(5).fit(X, y)
    assert len(used) == 5


@pytest.mark.parametrize("max_leaves", [2, 5, 31])
def test_a_tree_holds_at_most_half_its_leaves_histograms(monkeypatch, max_leaves):
    """A tree holds at most ``max_leaves // 2 + 1`` histograms at once (those of leaves ranked
    below the splits left are given back: they are never split), on dense and sparse bins,
    with and without a leaf minimum that stops some leaves from splitting; and the trees are
    those of the Python grower, which gives the same histograms back."""
    used = []
    real = compiled_grower.grow_laid_out

    def spy(*args):
        out = real(*args)
        used.append(out[9])  # (histograms held at once)
        return out

    _tree_by_tree(monkeypatch)
    monkeypatch.setattr(compiled_grower, "grow_laid_out", spy)
    cases = []
    for seed in range(4):
        X, y = _data(seed, 2000, 6, 2 + seed, missing=seed == 1, binary=seed == 3)
        params = dict(n_estimators=8, max_leaves=max_leaves,
                      min_samples_leaf=1 + 20 * (seed % 2), random_state=seed)
        model = RebelClassifier(**params).fit(X, y)
        assert model.trees_.left.shape[1] == max_leaves - 1
        cases.append((params, model, X, y))
    assert len(used) == 32 and max(used) <= max_leaves // 2 + 1
    assert max(used) >= max_leaves // 4 + 1  # (the trees did grow)
    monkeypatch.setattr(compiled_grower, "applies", lambda grower, rows: False)
    for params, model, X, y in cases:
        _assert_same_models(model, RebelClassifier(**params).fit(X, y), X)


@pytest.mark.parametrize("compiled", [False, True])
def test_the_last_split_grows_nothing_for_its_children(monkeypatch, compiled):
    """The split that makes a tree's last leaf builds and searches nothing for its children
    (they are never split), in both growers: a stump adds its root's rows alone, and a tree of
    three leaves its root's and its first split's smaller child's."""
    n, d = 1500, 5
    X, y = _data(0, n, d, 3)
    _tree_by_tree(monkeypatch)
    if not compiled:
        monkeypatch.setattr(compiled_grower, "applies", lambda grower, rows: False)
    stumps = RebelClassifier(4, max_leaves=2).fit(X, y)
    np.testing.assert_array_equal(stumps.histogram_updates_, n * d)
    trees = RebelClassifier(4, max_leaves=3).fit(X, y)
    assert np.all(trees.histogram_updates_ > n * d)
    assert np.all(trees.histogram_updates_ <= n * d + n // 2 * d)
