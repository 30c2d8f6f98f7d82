"""Distributed training on a LocalCluster of 2 worker processes: the same model as a local fit
(uneven, empty and single-class partitions, NaN, weights, costs, DataFrames), lazy
predictions, model files, clear errors, and a worker killed mid-fit."""

from __future__ import annotations

import json
import os
import signal
import threading
import warnings

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from rebelboost import RebelClassifier, load_model
from rebelboost.dask import DaskRebelClassifier
from rebelboost.dask import estimator as dask_estimator
from rebelboost.learners import row_sampling

TREE_FIELDS = ("feature", "threshold", "missing_left", "left", "right")


def _data(n=1500, d=6, k=3, seed=0, nan_rate=0.05):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    score = X[:, 0] + 0.7 * X[:, 1] ** 2 - 0.5 * X[:, 2]
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, k + 1)[1:-1]))
    y = np.where(rng.random(n) < 0.1, rng.integers(0, k, n), y)
    X[rng.random((n, d)) < nan_rate] = np.nan
    return X, y


def _assert_same_model(local, dist, X):
    a, b = local.trees_, dist.trees_
    for name in TREE_FIELDS:
        assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert_allclose(dist.train_loss_, local.train_loss_, rtol=1e-9)
    assert_allclose(dist.init_loss_, local.init_loss_, rtol=1e-12)
    assert_allclose(dist.decision_function(X), local.decision_function(X), rtol=1e-9,
                    atol=1e-9)
    assert_array_equal(dist.predict(X), local.predict(X))
    assert_allclose(dist.feature_importances_, local.feature_importances_, rtol=1e-9,
                    atol=1e-12)
    # the leaves' training weights (covers): exact contributions work on the Dask model
    assert_allclose(dist.model_.covers, local.model_.covers, rtol=1e-12)
    assert_allclose(dist.contributions(X[:50]), local.contributions(X[:50]), rtol=1e-9,
                    atol=1e-9)


@pytest.mark.parametrize("blocks_per_worker", [None, 1])
def test_same_model_as_a_local_fit_on_awkward_partitions(client, monkeypatch,
                                                         blocks_per_worker):
    """Uneven partitions, an empty one, one holding a single class, and NaN; each partition
    its own block (None), or the partitions concatenated into one block per worker."""
    monkeypatch.setattr(dask_estimator, "BLOCKS_PER_WORKER", blocks_per_worker)
    X, y = _data()
    order = np.argsort(y, kind="stable")  # the first partition holds class 0 only
    X, y = X[order], y[order]
    chunks = (300, 0, 450, 1, 749)
    assert len(np.unique(y[:300])) == 1
    Xd = da.from_array(X, chunks=(chunks, X.shape[1]))
    yd = da.from_array(y, chunks=(chunks,))
    params = dict(n_estimators=12, max_leaves=15, random_state=3)
    local = RebelClassifier(**params).fit(X, y)
    dist = DaskRebelClassifier(**params).fit(Xd, yd)
    _assert_same_model(local, dist, X)
    # several splits per exchange between the workers: one per level of each tree (a
    # level's splits wait for their parents' sums, so none fewer), not one per split; and
    # one call from the client a tree
    from rebelboost.tree_tables import tree_tables

    tables = tree_tables(local.model_)
    for t, (trips, depth) in enumerate(zip(dist.exchanges_, tables.depths(), strict=True)):
        assert trips == depth + 2 and depth < (tables.feature[t] >= 0).sum()
    assert_array_equal(dist.round_trips_, 1)
    # lazy predictions, partition by partition, equal to the local model's
    labels = dist.predict(Xd)
    assert isinstance(labels, da.Array)
    assert_array_equal(labels.compute(), local.predict(X))
    assert_allclose(dist.predict_proba(Xd).compute(), local.predict_proba(X), rtol=1e-9,
                    atol=1e-12)
    assert dist.decision_function(Xd).compute().shape == (len(y), 3)


def test_weights_costs_feature_sampling_and_more_than_the_binning_sample(client, monkeypatch):
    """Weights (zeros among them), a cost matrix on the loss route, colsample_bytree, two
    classes, and a binner that subsamples (drawn by global row index across partitions)."""
    from rebelboost import binning

    X, y = _data(n=2000, d=8, k=2, seed=5)
    w = np.random.default_rng(5).random(len(y)) * 2
    w[:40] = 0
    cost = np.array([[0.0, 1.0], [4.0, 0.0]])
    params = dict(n_estimators=8, cost_matrix=cost, cost_strategy="loss", subcosts="calibrated",
                  colsample_bytree=0.6, min_samples_leaf=5, random_state=7, max_bins=31)
    real_init = binning.Binner.__init__

    def small_sample(self, max_bins=255, subsample=200_000, random_state=0, min_data_in_bin=1):
        # (in this process only: the client)
        real_init(self, max_bins, 500, random_state, min_data_in_bin)

    monkeypatch.setattr(binning.Binner, "__init__", small_sample)
    local = RebelClassifier(**params).fit(X, y, sample_weight=w)
    dist = DaskRebelClassifier(**params).fit(
        da.from_array(X, chunks=(700, 8)), da.from_array(y, chunks=700),
        sample_weight=da.from_array(w, chunks=700))
    _assert_same_model(local, dist, X)
    assert dist.decision_function(da.from_array(X, chunks=(700, 8))).compute().ndim == 1


def test_per_row_costs_train_the_local_model(client):
    """``sample_cost`` (each row its own cost vector) on the loss route: the same model, and
    ``cost_matrix_`` the classes' mean cost rows; bad costs name the problem."""
    X, y = _data(n=1200, d=5, k=3, seed=11)
    rng = np.random.default_rng(11)
    cost = rng.uniform(0.5, 5.0, (len(y), 3))
    cost[np.arange(len(y)), y] = 0.0
    params = dict(n_estimators=8, cost_strategy="loss", subcosts="calibrated", random_state=2)
    local = RebelClassifier(**params).fit(X, y, sample_cost=cost)
    Xd, yd = da.from_array(X, chunks=(400, 5)), da.from_array(y, chunks=400)
    dist = DaskRebelClassifier(**params).fit(Xd, yd,
                                             sample_cost=da.from_array(cost, chunks=(400, 3)))
    _assert_same_model(local, dist, X)
    assert_allclose(dist.cost_matrix_, local.cost_matrix_, rtol=1e-12)
    cost[5, y[5]] = 1.0  # a cost at the true class
    with pytest.raises(ValueError, match="zero at each sample's true class"):
        DaskRebelClassifier(**params).fit(Xd, yd, sample_cost=da.from_array(cost, chunks=400))
    with pytest.raises(ValueError, match="zero at each sample's true class"):  # posterior
        DaskRebelClassifier(n_estimators=2).fit(Xd, yd,
                                                sample_cost=da.from_array(cost, chunks=400))


def test_dataframes_keep_feature_names_and_string_labels(client):
    import pandas as pd

    X, y = _data(n=900, d=4, seed=2)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    labels = pd.Series(np.array(["low", "mid", "high"])[y])
    params = dict(n_estimators=6, random_state=0)
    local = RebelClassifier(**params).fit(frame, labels)
    dist = DaskRebelClassifier(**params).fit(dd.from_pandas(frame, npartitions=3),
                                             dd.from_pandas(labels, npartitions=3))
    assert_array_equal(dist.feature_names_in_, ["a", "b", "c", "d"])
    assert_array_equal(dist.classes_, local.classes_)
    _assert_same_model(local, dist, frame)
    assert_array_equal(dist.predict(dd.from_pandas(frame, npartitions=2)).compute(),
                       local.predict(frame))


def test_model_files_and_to_local_are_the_local_estimators(client, tmp_path):
    X, y = _data(n=600, seed=4)
    dist = DaskRebelClassifier(n_estimators=5, random_state=0).fit(
        da.from_array(X, chunks=(250, 6)), da.from_array(y, chunks=250))
    local = dist.to_local()
    assert type(local) is RebelClassifier
    assert "client" not in local.get_params()
    dist.save(tmp_path / "model.json")
    loaded = load_model(tmp_path / "model.json")
    assert type(loaded) is RebelClassifier
    assert_array_equal(loaded.decision_function(X), dist.decision_function(X))
    assert "DaskRebelClassifier" in repr(dist) and dist.get_params()["client"] is None


def test_clone_keeps_the_client_and_pickles_leave_it_out(client):
    import pickle

    from sklearn.base import clone

    X, y = _data(n=300, d=3)
    model = DaskRebelClassifier(3, client=client, max_leaves=7)
    copy = clone(model)
    assert copy.client is client and copy.max_leaves == 7 and not hasattr(copy, "model_")
    model.fit(da.from_array(X, chunks=(100, 3)), da.from_array(y, chunks=100))
    restored = pickle.loads(pickle.dumps(model))
    assert restored.client is None
    assert_array_equal(restored.predict(X), model.predict(X))


@pytest.mark.parametrize("case, message", [
    ("inf", "infinity"),
    ("one class", "at least 2 classes"),
    ("nan label", "NaN"),
    ("mixed labels", "mixes label types"),
    ("misaligned", "partitioned alike"),
    ("numpy", "dask array or DataFrame"),
    ("negative weight", "non-negative"),
    ("text in one partition", "partition 0: column 'b' holds numbers, but in partition 1"),
    ("columns of one partition", "partition 1: X has 4 columns, partition 0 has 3"),
])
def test_bad_input_gets_a_clear_error(client, case, message):
    X, y = _data(n=200, d=3)
    y_obj = y.astype(object)
    if case == "inf":
        X[150, 1] = np.inf
    if case == "one class":
        y = np.zeros_like(y)
    kwargs = {}
    Xd, yd = da.from_array(X, chunks=(100, 3)), da.from_array(y, chunks=100)
    if case == "nan label":
        yd = da.from_array(np.where(np.arange(200) == 7, np.nan, y.astype(float)), chunks=100)
    if case == "mixed labels":  # strings in the first partition, numbers in the second
        y_obj[:100] = y_obj[:100].astype(str)
        yd = da.from_array(y_obj, chunks=100)
    if case == "misaligned":
        yd = da.from_array(y[:150], chunks=75)  # as many partitions, other lengths
    if case == "numpy":
        Xd = X
    if case == "negative weight":
        kwargs["sample_weight"] = da.from_array(-np.ones(200), chunks=100)
    if case in ("text in one partition", "columns of one partition"):
        # a DataFrame whose second partition breaks the promise of its metadata
        import dask
        import pandas as pd

        first, second = (pd.DataFrame(X[a:a + 100], columns=list("abc")) for a in (0, 100))
        if case == "text in one partition":
            second["b"] = second["b"].map(lambda v: f"v{v:.3f}")
        else:
            second["d"] = 1.0
        Xd = dd.from_delayed([dask.delayed(first), dask.delayed(second)], meta=first.iloc[:0],
                             verify_meta=False)
    with pytest.raises((ValueError, TypeError), match=message):
        DaskRebelClassifier(n_estimators=2).fit(Xd, yd, **kwargs)


def _categorical_frame(n=1600, seed=0):
    """A text column (40 levels, some missing), a pandas category column whose declared
    order is not sorted (300 levels: more than the 63 bins below, so its levels are grouped
    by class mix), and two numeric columns."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    shop = rng.integers(0, 40, n)
    brand = rng.integers(0, 300, n)
    u = rng.standard_normal(n)
    y = (shop % 3 + (brand % 5 == 0) + (u > 0.8)) % 3
    levels = np.array([f"b{i:03d}" for i in range(300)])
    frame = pd.DataFrame({
        "shop": np.array([f"s{i}" for i in range(40)], dtype=object)[shop],
        "brand": pd.Categorical(levels[brand], categories=levels[::-1]),
        "u": u, "v": rng.standard_normal(n)})
    frame.loc[::13, "shop"] = None
    frame.loc[::17, "u"] = np.nan
    return frame, y


@pytest.mark.parametrize("blocks_per_worker", [None, 1])
def test_categorical_columns_give_the_local_model(client, monkeypatch, blocks_per_worker,
                                                  tmp_path):
    """Category values gathered from every partition (a level may appear in one partition
    only), codes and bins (grouped by class mix past max_bins) as a local fit's: the same
    trees, category sets, and model file."""
    import pandas as pd

    monkeypatch.setattr(dask_estimator, "BLOCKS_PER_WORKER", blocks_per_worker)
    frame, y = _categorical_frame()
    frame.loc[:399, "shop"] = frame.loc[:399, "shop"].where(
        frame.loc[:399, "shop"] != "s7", "only-in-the-first-partition")
    params = dict(n_estimators=10, max_leaves=15, max_bins=63, random_state=2)
    local = RebelClassifier(**params).fit(frame, y)
    assert np.isnan(local.model_.learners.threshold).any()  # set splits were chosen
    Xd = dd.from_pandas(frame, npartitions=4, sort=False)
    yd = dd.from_pandas(pd.Series(y), npartitions=4, sort=False)
    dist = DaskRebelClassifier(**params).fit(Xd, yd)
    assert dist.is_categorical_.tolist() == [True, True, False, False]
    for a, b in zip(dist.categories_, local.categories_, strict=True):
        assert (a is None and b is None) or list(a) == list(b)
    assert_array_equal(dist.model_.learners.category_words,
                       local.model_.learners.category_words)
    _assert_same_model(local, dist.to_local(), frame)
    new = frame.sample(200, random_state=1)
    new.loc[new.index[:5], "shop"] = "never-seen"
    assert_array_equal(dist.predict(new), local.predict(new))
    assert_array_equal(dist.predict(dd.from_pandas(new, npartitions=2, sort=False)).compute(),
                       local.predict(new))
    dist.save(tmp_path / "m.json")
    assert_array_equal(load_model(tmp_path / "m.json").predict(new), local.predict(new))


def test_early_stopping_on_an_eval_set_gives_the_local_model(client):
    """The eval set (here a Dask array and a NumPy one) is scored on the client after every
    iteration, as the local fit scores it: the same stopping point and the same trees."""
    X, y = _data(n=1500, d=6, k=3, seed=8)
    X_val, y_val = _data(n=400, d=6, k=3, seed=9)
    params = dict(n_estimators=60, learning_rate=1.0, early_stopping=True, n_iter_no_change=4,
                  random_state=2)
    local = RebelClassifier(**params).fit(X, y, eval_set=(X_val, y_val))
    dist = DaskRebelClassifier(**params).fit(
        da.from_array(X, chunks=(500, 6)), da.from_array(y, chunks=500),
        eval_set=[(da.from_array(X_val, chunks=(150, 6)), y_val)])
    assert local.best_iteration_ < len(local.validation_loss_) < 60  # it did stop early
    assert dist.best_iteration_ == local.best_iteration_
    assert_allclose(dist.validation_loss_, local.validation_loss_, rtol=1e-9)
    _assert_same_model(local, dist, X)
    assert len(dist.round_trips_) == dist.n_estimators_


@pytest.mark.parametrize("chunks", [(400, 0, 600, 500), (1500,)])
def test_early_stopping_without_an_eval_set_holds_out_the_local_fits_rows(client, chunks):
    """No eval set: the partitions' rows that a local fit on all of them holds out (drawn on
    the client from the rows' classes) are scored after every iteration, the trees grow on
    the rest: with integer histograms the local model file byte for byte (also with row
    sampling and per-row costs, and the posterior route, whose fold models stop early on
    their own held-out rows and size their scores on the rest), with float ones the same
    trees and stopping point."""
    X, y = _data(n=1500, d=6, k=3, seed=8)
    weight = np.random.default_rng(3).uniform(0.5, 2, len(y))
    cost = np.where(np.arange(3) == y[:, None], 0.0,
                    np.random.default_rng(4).uniform(1, 3, (len(y), 3)))
    Xd = da.from_array(X, chunks=(chunks, 6))
    wd, cd = da.from_array(weight, chunks=(chunks,)), da.from_array(cost, chunks=(chunks, 3))
    yd = da.from_array(y, chunks=(chunks,))
    base = dict(n_estimators=60, learning_rate=0.3, max_leaves=15, early_stopping=True,
                n_iter_no_change=3, random_state=1)
    cases = [(dict(histogram_bits=12), {}),
             (dict(histogram_bits=12, subsample=0.6), {"sample_weight": weight}),
             (dict(histogram_bits=12, cost_strategy="loss"), {"sample_cost": cost})]
    if len(chunks) > 1:  # the posterior route: fold models that stop early on their own rows
        cases.append((dict(histogram_bits=12, cost_matrix=[[0, 1, 8], [2, 0, 1], [1, 3, 0]]),
                      {}))
    for extra, fit in cases:
        local = RebelClassifier(**base, **extra).fit(X, y, **fit)
        dist = DaskRebelClassifier(**base, **extra).fit(
            Xd, yd, **{name: {"sample_weight": wd, "sample_cost": cd}[name] for name in fit})
        assert local.best_iteration_ < len(local.validation_loss_) < 60  # it stopped early
        assert _model_file(dist) == _model_file(local), extra
        assert_array_equal(dist.validation_loss_, local.validation_loss_)
    local = RebelClassifier(**base).fit(X, y)
    dist = DaskRebelClassifier(**base).fit(Xd, yd)
    assert dist.best_iteration_ == local.best_iteration_ < 60
    assert_allclose(dist.validation_loss_, local.validation_loss_, rtol=1e-9)
    for name in TREE_FIELDS:
        assert_array_equal(getattr(dist.trees_, name), getattr(local.trees_, name))


def test_row_sampling_gives_the_local_model(client):
    """``subsample`` (uniform): each tree's rows drawn on the client as the local fit draws
    them, the rows outside the sample routed through the tree; the same trees and covers."""
    X, y = _data(n=1800, d=6, k=3, seed=12)
    params = dict(n_estimators=6, subsample=0.6, colsample_bytree=0.8, random_state=4)
    local = RebelClassifier(**params).fit(X, y)
    dist = DaskRebelClassifier(**params).fit(da.from_array(X, chunks=(500, 6)),
                                             da.from_array(y, chunks=500))
    _assert_same_model(local, dist, X)
    unsampled = RebelClassifier(**{**params, "subsample": 1.0}).fit(X, y)
    assert not np.array_equal(unsampled.trees_.threshold, local.trees_.threshold)


@pytest.mark.parametrize("blocks_per_worker, chunks, fetch", [
    (1, (500, 600, 700), 1 << 16), (None, (300, 0, 450, 1, 1049), 4)])
def test_goss_gives_the_local_model(client, monkeypatch, blocks_per_worker, chunks, fetch):
    """``sampling='goss'``: the heaviest rows' threshold found from the blocks' counts of
    their weights (``fetch`` 4: every pass counted down to one key), ties and the rest's
    draw as the local fit takes them; with integer histograms the local model file byte for
    byte (fractional weights too), with float ones the same trees."""
    monkeypatch.setattr(dask_estimator, "BLOCKS_PER_WORKER", blocks_per_worker)
    monkeypatch.setattr(row_sampling, "FETCH_ROWS", fetch)
    X, y = _data(n=1800, d=6, k=3, seed=12)
    weight = np.random.default_rng(2).choice([0.5, 1.0, 2.0], len(y))
    Xd, yd = da.from_array(X, chunks=(chunks, 6)), da.from_array(y, chunks=(chunks,))
    wd = da.from_array(weight, chunks=(chunks,))
    params = dict(n_estimators=8, subsample=0.3, sampling="goss", random_state=4)
    local = RebelClassifier(**params, histogram_bits=12).fit(X, y, sample_weight=weight)
    dist = DaskRebelClassifier(**params, histogram_bits=12).fit(Xd, yd, sample_weight=wd)
    assert _model_file(dist) == _model_file(local)
    local = RebelClassifier(**params).fit(X, y)
    dist = DaskRebelClassifier(**params).fit(Xd, yd)
    _assert_same_model(local, dist, X)
    uniform = RebelClassifier(**{**params, "sampling": "uniform"}).fit(X, y)
    assert not np.array_equal(uniform.trees_.threshold, local.trees_.threshold)


def _model_file(model) -> str:
    """The model file's text without the thread count (a setting, not the model)."""
    data = model.to_dict()
    data["params"].pop("n_jobs")
    return json.dumps(data, sort_keys=True)


@pytest.mark.parametrize("blocks_per_worker, chunks", [
    (1, (1000, 1400)), (None, (300, 0, 450, 1, 1649)), (None, (2400,))])
def test_quantized_fits_write_the_local_model_file_bit_for_bit(client, monkeypatch,
                                                               blocks_per_worker, chunks):
    """With ``histogram_bits`` (integer histograms, exact sums) the model file is the local
    fit's byte for byte, on any partitioning: fractional weights (zeros among them), row and
    feature sampling, and costs on the loss route; the float fit's leaf values differ in
    their last bits."""
    monkeypatch.setattr(dask_estimator, "BLOCKS_PER_WORKER", blocks_per_worker)
    X, y = _data(n=2400, d=6, k=4, seed=21)
    rng = np.random.default_rng(5)
    weight = rng.random(len(y)) * 3
    weight[::17] = 0
    cost = rng.uniform(0.5, 4, (4, 4))
    np.fill_diagonal(cost, 0)
    Xd, yd = da.from_array(X, chunks=(chunks, 6)), da.from_array(y, chunks=(chunks,))
    wd = da.from_array(weight, chunks=(chunks,))
    for params, fit in ((dict(subsample=0.7, colsample_bytree=0.7), dict(sample_weight=1)),
                        (dict(cost_matrix=cost, cost_strategy="loss", histogram_bits=6), {})):
        params = {"n_estimators": 6, "max_leaves": 15, "random_state": 5,
                  "histogram_bits": 12, **params}
        local = RebelClassifier(**params).fit(X, y, sample_weight=weight if fit else None)
        dist = DaskRebelClassifier(**params).fit(Xd, yd, sample_weight=wd if fit else None)
        assert _model_file(dist) == _model_file(local)
    if len(chunks) > 1:  # float histograms: the same trees, sums in another order
        params = dict(n_estimators=6, max_leaves=15, random_state=5)
        local = RebelClassifier(**params).fit(X, y, sample_weight=weight)
        dist = DaskRebelClassifier(**params).fit(Xd, yd, sample_weight=wd)
        for name in TREE_FIELDS:
            assert_array_equal(getattr(dist.trees_, name), getattr(local.trees_, name))
        assert _model_file(dist) != _model_file(local)


def test_what_the_distributed_fit_lacks_is_refused_up_front(client):
    X, y = _data(n=200, d=3)
    Xd, yd = da.from_array(X, chunks=(100, 3)), da.from_array(y, chunks=100)
    for params in (dict(weak_learner="stump"), dict(weak_learner="similarity")):
        with pytest.raises(NotImplementedError, match="distributed fit"):
            DaskRebelClassifier(n_estimators=2, **params).fit(Xd, yd)
    with pytest.raises(ValueError, match="decisions need cost_strategy='posterior'"):
        DaskRebelClassifier(n_estimators=2, cost_strategy="loss", decisions=["0", "1", "2", "r"],
                            cost_matrix=[[0, 1, 1, .3], [1, 0, 1, .3], [1, 1, 0, .3]]
                            ).fit(Xd, yd)


def test_cost_routes_are_cross_fitted_on_the_workers(client):
    """The posterior and auto routes (cross-fitted calibration and the guard), decisions that
    are not labels: fold models fitted on the workers give the local fit's route, calibration
    and evidence, and with histogram_bits its model file byte for byte."""
    X, y = _data(n=1800, d=6, k=3, seed=14)
    Xd, yd = da.from_array(X, chunks=((500, 0, 700, 600), 6)), da.from_array(
        y, chunks=((500, 0, 700, 600),))
    hedge = np.array([[0, 1, 8], [2, 0, 1], [1, 3, 0.]])
    refer = np.array([[0, 1, 1, .3], [1, 0, 1, .3], [1, 1, 0, .3]])
    routes = set()
    for params in (dict(cost_matrix=hedge), dict(cost_matrix=hedge, cost_strategy="auto"),
                   dict(cost_matrix=refer, decisions=["a", "b", "c", "refer"])):
        params = dict(n_estimators=6, max_leaves=15, random_state=5, histogram_bits=12,
                      **params)
        local = RebelClassifier(**params).fit(X, y)
        dist = DaskRebelClassifier(**params).fit(Xd, yd)
        assert _model_file(dist) == _model_file(local)
        assert dist.cost_evidence_ == local.cost_evidence_
        assert_array_equal(dist.predict(X), local.predict(X))
        routes.add(dist.cost_route_)
    assert set(np.unique(dist.predict(X))) <= {"a", "b", "c", "refer"}
    # per-row costs (their class means decide; the guard weighs the routes by them)
    rng = np.random.default_rng(3)
    sample_cost = hedge[y] * rng.uniform(0.5, 1.5, (len(y), 1))
    cost_d = da.from_array(sample_cost, chunks=((500, 0, 700, 600), 3))
    for strategy in ("posterior", "auto"):
        params = dict(n_estimators=6, max_leaves=15, random_state=5, histogram_bits=12,
                      cost_strategy=strategy)
        local = RebelClassifier(**params).fit(X, y, sample_cost=sample_cost)
        dist = DaskRebelClassifier(**params).fit(Xd, yd, sample_cost=cost_d)
        assert _model_file(dist) == _model_file(local)
        assert dist.cost_evidence_ == local.cost_evidence_
        routes.add(dist.cost_route_)
    assert routes >= {"argmax", "min_risk"}  # the guard kept argmax, and chose min risk
    # float histograms: the same route and decisions, calibration up to summation order
    params = dict(n_estimators=6, max_leaves=15, random_state=5, cost_matrix=refer,
                  decisions=["a", "b", "c", "refer"])
    local = RebelClassifier(**params).fit(X, y)
    dist = DaskRebelClassifier(**params).fit(Xd, yd)
    assert dist.cost_route_ == local.cost_route_ == "min_risk"
    assert_allclose(dist.temperature_, local.temperature_, rtol=1e-6)
    assert_array_equal(dist.predict(X), local.predict(X))


@pytest.mark.parametrize("smooth_wins", [True, False])
def test_the_shape_weighed_out_of_fold_on_the_workers_is_the_local_one(client, monkeypatch,
                                                                       smooth_wins):
    """The cost route's choice between the model's shape and a smoother one (fold models of
    both fitted on the workers) and the final model of the shape chosen are the local fit's,
    model file byte for byte. (Both shapes small here: the defaults' small-data shape would
    take 500 trees of round trips.)"""
    from rebelboost.ensemble import _cost_fitting, _cost_route

    smooth = {"n_estimators": 6, "max_leaves": 8, "min_samples_leaf": 20, "learning_rate": 0.5}
    for module in (_cost_route, _cost_fitting):
        monkeypatch.setattr(module, "smooth_alternative", lambda model, n: dict(smooth))
    X, y = _data(n=600, d=4, k=3, seed=3)
    Xd, yd = da.from_array(X, chunks=((200, 250, 150), 4)), da.from_array(
        y, chunks=((200, 250, 150),))
    shape = (dict(n_estimators=1, max_leaves=2) if smooth_wins  # (a stump: the smooth one
             else dict(n_estimators=6, max_leaves=15, min_samples_leaf=1))  # costs less)
    params = dict(random_state=5, histogram_bits=12,
                  cost_matrix=np.array([[0, 1, 8], [2, 0, 1], [1, 3, 0.]]), **shape)
    local = RebelClassifier(**params).fit(X, y)
    dist = DaskRebelClassifier(**params).fit(Xd, yd)
    assert local.cost_evidence_["shape"]["chosen"] == ("smooth" if smooth_wins else "defaults")
    assert dist.cost_evidence_ == local.cost_evidence_
    assert dist.resolved_params_ == local.resolved_params_
    assert _model_file(dist) == _model_file(local)


@pytest.mark.parametrize("on_actors", [True, False])
def test_a_worker_killed_mid_fit_leaves_the_same_model(client, monkeypatch, on_actors):
    """Dask recomputes the lost partitions from their lineage (pure tasks): the fit completes
    with the model of an undisturbed fit; with the rounds on actors, whose blocks die with
    their worker, by growing the trees again on tasks (and saying so)."""
    monkeypatch.setattr(dask_estimator, "ROUNDS_ON_ACTORS", on_actors)
    X, y = _data(n=3000, d=6, seed=9)
    Xd, yd = da.from_array(X, chunks=(750, 6)), da.from_array(y, chunks=750)
    params = dict(n_estimators=8, max_leaves=15, random_state=1)
    undisturbed = DaskRebelClassifier(**params).fit(Xd, yd)
    pids = list(client.run(os.getpid).values())
    killed = threading.Event()

    def kill_at_iteration_3(info):
        if info.iteration == 3 and not killed.is_set():
            os.kill(pids[0], signal.SIGKILL)
            killed.set()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        disturbed = DaskRebelClassifier(**params).fit(Xd, yd,
                                                      callbacks=[kill_at_iteration_3])
    assert killed.is_set()
    regrown = [w for w in caught if "grown again, on Dask tasks" in str(w.message)]
    assert len(regrown) == on_actors
    client.wait_for_workers(2, timeout=60)
    for name in TREE_FIELDS:
        assert_array_equal(getattr(disturbed.trees_, name), getattr(undisturbed.trees_, name))
    assert_array_equal(disturbed.leaf_scores_, undisturbed.leaf_scores_)
    assert_array_equal(disturbed.train_loss_, undisturbed.train_loss_)


def _slow_partition(i: int, seconds: float) -> np.ndarray:
    import time

    time.sleep(seconds)
    return np.full((100, 3), float(i))


def test_placed_partitions_are_computed_on_their_workers_and_then_placed_loosely(client):
    """Work stealing handed a loosely placed partition that reads nothing to the worker that
    was idle first, and it stayed there (1-2 of these 16 on every try): the placement is
    strict while they are computed. Once done they are placed loosely, so that a worker's
    death later has them recomputed anywhere."""
    from distributed import wait

    from rebelboost.dask._cluster import Cluster

    cluster = Cluster(client)
    for _ in range(2):
        groups, placement = dask_estimator._blocks_per_worker(cluster, 16, 1)
        parts = [dask.delayed(_slow_partition, pure=False)(i, 0.2 if i < 8 else 0.01)
                 for i in range(16)]
        futures = dask_estimator._compute_on(cluster, parts, groups, placement)
        wait(futures)
        where = client.who_has(futures)
        for (a, b), worker in zip(groups, placement, strict=True):
            assert all(where[f.key] == (worker,) for f in futures[a:b])
        keys = [f.key for f in futures]
        loose = client.run_on_scheduler(
            lambda keys, dask_scheduler: [dask_scheduler.tasks[k].loose_restrictions
                                          for k in keys], keys)
        assert loose == [True] * 16
        assert [float(p[0, 0]) for p in client.gather(futures)] == list(range(16))


def test_a_scheduler_that_cannot_loosen_placements_gets_them_loose(client, monkeypatch):
    """A scheduler that cannot run the loosening (one without rebelboost installed: the
    function does not unpickle there) would leave a strictly placed partition waiting for a
    worker that left: the partitions are then placed loosely from the start."""
    from rebelboost.dask import _cluster

    def cannot(dask_scheduler):
        raise ModuleNotFoundError("No module named 'rebelboost'")

    monkeypatch.setattr(_cluster, "_scheduler_can_loosen", cannot)
    cluster = _cluster.Cluster(client)
    asked = []
    compute = client.compute
    monkeypatch.setattr(client, "compute", lambda parts, **kw: (asked.append(kw),
                                                                 compute(parts, **kw))[1])
    groups, placement = dask_estimator._blocks_per_worker(cluster, 4, 1)
    futures = dask_estimator._compute_on(
        cluster, [dask.delayed(_slow_partition, pure=False)(i, 0.0) for i in range(4)],
        groups, placement)
    assert [kw["allow_other_workers"] for kw in asked] == [True, True]
    assert [float(p[0, 0]) for p in client.gather(futures)] == [0.0, 1.0, 2.0, 3.0]


def _partition_that_kills_its_worker_once(X: np.ndarray, flag: str) -> np.ndarray:
    if not os.path.exists(flag):
        open(flag, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return X


def test_a_worker_lost_while_partitions_are_computed_leaves_the_same_model(client, tmp_path):
    """A block's partitions are placed strictly on its worker while they are computed; when
    that worker dies they are computed elsewhere (not left waiting for it), and the fit
    gives the model of an undisturbed one."""
    X, y = _data(n=1200, d=5, seed=4)
    params = dict(n_estimators=4, max_leaves=7, random_state=0)
    yd = da.from_array(y, chunks=300)
    undisturbed = DaskRebelClassifier(**params).fit(da.from_array(X, chunks=(300, 5)), yd)
    flag = str(tmp_path / "killed")
    parts = [da.from_delayed(dask.delayed(_partition_that_kills_its_worker_once)(
        X[i:i + 300], flag if i == 0 else str(tmp_path)), (300, 5), X.dtype)
        for i in range(0, 1200, 300)]
    disturbed = DaskRebelClassifier(**params).fit(da.concatenate(parts), yd)
    assert os.path.exists(flag)
    client.wait_for_workers(2, timeout=60)
    assert _model_file(disturbed) == _model_file(undisturbed)


@pytest.mark.parametrize("options, per_tree", [({}, 2), ({"subsample": 0.3}, 2),
                                               ({"histogram_bits": 12}, 3),
                                               ({"subsample": 0.3, "sampling": "goss"}, 5),
                                               ({"subsample": 0.3, "sampling": "goss",
                                                 "histogram_bits": 12}, 6)])
def test_a_tree_calls_the_workers_once_a_level_and_for_its_weights(client, monkeypatch,
                                                                   options, per_tree):
    """What the estimator's docstring says a tree costs, driven by the client: ``round_trips_``
    calls to the workers' actors for its levels of splits, and ``per_tree`` more for its
    weights (the largest exponent, then the weights with the root histogram; GOSS: the
    threshold's passes too)."""
    from rebelboost.dask import _actors

    monkeypatch.setattr(dask_estimator, "TREES_ON_WORKERS", False)
    calls = []
    call = _actors.ActorExecutor._call
    monkeypatch.setattr(_actors.ActorExecutor, "_call",
                        lambda self, work: (calls.append(1), call(self, work))[1])
    X, y = _data(n=4000, d=5, seed=3, nan_rate=0.0)
    Xd, yd = da.from_array(X, chunks=(1000, 5)), da.from_array(y, chunks=1000)
    counted = []
    for n in (1, 2):
        calls.clear()
        model = DaskRebelClassifier(n, max_leaves=15, random_state=0, **options).fit(Xd, yd)
        counted.append((len(calls), int(model.round_trips_.sum())))
    (calls_1, trips_1), (calls_2, trips_2) = counted
    assert calls_2 - calls_1 == trips_2 - trips_1 + per_tree


@pytest.mark.parametrize("options, per_tree", [({}, 2), ({"histogram_bits": 12}, 3),
                                               ({"subsample": 0.3, "sampling": "goss"}, 5)])
def test_trees_grown_on_the_workers_cost_one_call_a_tree(client, monkeypatch, options,
                                                         per_tree):
    """Grown on the workers, a tree costs the client one call to each actor; the actors
    exchange their sums once a level of splits (``exchanges_``) and ``per_tree`` more times
    for the weights, as often as a client-driven fit calls them; the same model."""
    from rebelboost.dask import _peers

    calls = []
    call_all = _peers.PeerBoosters._all
    monkeypatch.setattr(_peers.PeerBoosters, "_all",
                        lambda self, *a: (calls.append(a[0]), call_all(self, *a))[1])
    X, y = _data(n=4000, d=5, seed=3, nan_rate=0.0)
    Xd, yd = da.from_array(X, chunks=(1000, 5)), da.from_array(y, chunks=1000)
    params = dict(n_estimators=3, max_leaves=15, random_state=0, **options)
    model = DaskRebelClassifier(**params).fit(Xd, yd)
    assert calls == ["start", "stage", "stage", "stage", "covers", "release"]
    assert_array_equal(model.round_trips_, 1)
    assert model.gathered_bytes_ < 1000 and model.exchanged_bytes_ > 0
    monkeypatch.setattr(dask_estimator, "TREES_ON_WORKERS", False)
    driven = DaskRebelClassifier(**params).fit(Xd, yd)
    assert_array_equal(model.exchanges_, driven.round_trips_ + per_tree)
    assert_array_equal(driven.exchanges_, 0)
    assert _model_file(driven) == _model_file(model)


def test_two_fits_at_once_on_the_same_workers_do_not_wait_on_each_other(client):
    """Two fits at once on the same workers give the models they give alone (each fit's
    actors grow their trees on threads of their own: ``test_actors.py`` provokes the wait
    that two fits on the worker's one actor thread could fall into)."""
    from concurrent.futures import ThreadPoolExecutor

    X, y = _data(n=2000, d=5, seed=4)
    Xd, yd = da.from_array(X, chunks=(500, 5)), da.from_array(y, chunks=500)
    params = [dict(n_estimators=6, max_leaves=7, random_state=seed) for seed in (0, 1)]

    def fit(p):
        return _model_file(DaskRebelClassifier(**p).fit(Xd, yd))

    alone = [fit(p) for p in params]
    with ThreadPoolExecutor(2) as pool:
        running = [pool.submit(fit, p) for p in params]
        together = [future.result(timeout=300) for future in running]
    assert together == alone


def test_blocks_are_placed_on_the_workers_the_scheduler_names(client, monkeypatch):
    """The client's cached ``scheduler_info()`` lists no workers once its periodic refresh
    has run (distributed 2026.8); a fit that read it there placed no partition (a fold
    model's fit failed: "zip() argument 2 is longer than argument 1"). The scheduler is
    asked instead, so such a cache changes nothing."""
    X, y = _data(n=900, d=4, k=3, seed=2)
    Xd, yd = da.from_array(X, chunks=((200, 300, 100, 300), 4)), da.from_array(
        y, chunks=((200, 300, 100, 300),))
    params = dict(n_estimators=3, max_leaves=7, random_state=0, histogram_bits=12)
    before = _model_file(DaskRebelClassifier(**params).fit(Xd, yd))
    monkeypatch.setattr(client, "scheduler_info", lambda *args, **kwargs: {"workers": {}})
    assert _model_file(DaskRebelClassifier(**params).fit(Xd, yd)) == before


def test_tasks_on_a_block_prefer_its_worker_and_blocks_weigh_their_arrays(client):
    """Every task that reads a block (and every task reading those) asks for the block's
    worker, and a block tells Dask its arrays' size: a scheduler that took it for a few
    bytes moved whole blocks to idle workers."""
    from dask.sizeof import sizeof

    from rebelboost.blocks.tasks import RawPartition
    from rebelboost.dask._cluster import Cluster

    class Recording:  # the client, recording where each task asks to run
        def __init__(self):
            self.asked = []

        def submit(self, *args, **kwargs):
            self.asked.append(kwargs.get("workers"))
            return client.submit(*args, **kwargs)

    recording = Recording()
    cluster = Cluster(recording)
    home = sorted(client.nthreads())[1]
    block = cluster.submit(np.zeros, (1000, 3), worker=home)
    total = cluster.submit(np.sum, block)
    column = cluster.unpack([cluster.submit(np.hsplit, block, 3)], 3)[2][0]
    anywhere = cluster.submit(np.ones, 3)
    assert recording.asked == [[home]] * 6 + [None]
    assert_array_equal(column.result(), np.zeros((1000, 1)))
    assert total.result() == 0.0 and anywhere.result().sum() == 3
    X = np.zeros((1000, 8), dtype=np.float32)
    assert sizeof(RawPartition(X, np.zeros(1000), np.ones(1000))) >= X.nbytes + 16000


def test_a_numeric_text_column_with_a_typo_is_warned_about_naming_its_partition(client):
    """As a local fit (``test_categorical.py``): a column of numbers as text with one typo,
    split as categories under 'from_dtype', gets a NumbersAsTextWarning, here with the
    partition and its row; real categories are not warned about."""
    import warnings

    import pandas as pd

    from rebelboost.categorical import NumbersAsTextWarning

    rng = np.random.default_rng(0)
    n = 200
    typo = pd.Series(rng.normal(size=n).round(3)).astype(str)
    typo[111] = "1,5"
    X = pd.DataFrame({"a": rng.normal(size=n), "b": typo})
    y = pd.Series(rng.integers(0, 3, n))
    Xd, yd = dd.from_pandas(X, npartitions=2), dd.from_pandas(y, npartitions=2)
    with pytest.warns(NumbersAsTextWarning) as record:
        DaskRebelClassifier(n_estimators=2).fit(Xd, yd)
    message = str(record[0].message)
    assert "column 'b' holds text" in message and "such as '1,5' (partition 1, row 11)" in message
    assert record[0].filename == __file__  # (the caller of fit)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbersAsTextWarning)
        codes = pd.Series(rng.choice([str(v) for v in range(20)] + ["other", "none"], n))
        DaskRebelClassifier(n_estimators=2).fit(dd.from_pandas(X.assign(b=codes),
                                                               npartitions=2), yd)
        DaskRebelClassifier(n_estimators=2, categorical_features=["b"]).fit(Xd, yd)


def test_a_text_column_left_out_of_categorical_features_is_refused(client):
    """As a local fit (``test_categorical.py``): the named columns are exactly the categorical
    ones, and a text column left out is named, before any tree grows."""
    import pandas as pd

    rng = np.random.default_rng(1)
    X = pd.DataFrame({"n": rng.integers(0, 4, 60), "city": rng.choice(["oslo", "rome"], 60)})
    Xd = dd.from_pandas(X, npartitions=2)
    yd = dd.from_pandas(pd.Series(rng.integers(0, 2, 60)), npartitions=2)
    with pytest.raises(ValueError, match="column 'city' holds text .* which "
                                         r"categorical_features=\['n'\] does not name"):
        DaskRebelClassifier(n_estimators=2, categorical_features=["n"]).fit(Xd, yd)


def test_cost_route_with_categorical_columns_gives_the_local_model(client):
    """The route's calibration sizes the final model by its scores on its own training rows,
    which the workers hold as category codes already: scored as they are (they were encoded
    again: text columns failed, and a column of numbers declared categorical, its codes read
    as unseen values, would have sized it wrongly). Fold models, whose categories are those
    codes, encode them: the local route, evidence and model file."""
    import pandas as pd

    frame, y = _categorical_frame()
    frame["level"] = (10 * (1 + (frame["v"] > 0) + (frame["u"] > 0.5))).astype(np.int64)
    params = dict(n_estimators=6, max_leaves=15, random_state=5, histogram_bits=12,
                  cost_matrix=[[0, 1, 8], [2, 0, 1], [1, 3, 0]],
                  categorical_features=["shop", "brand", "level"])
    local = RebelClassifier(**params).fit(frame, y)
    assert local.cost_route_ == "min_risk" and "final_margin" in local.cost_evidence_
    dist = DaskRebelClassifier(**params).fit(dd.from_pandas(frame, npartitions=3, sort=False),
                                             dd.from_pandas(pd.Series(y), npartitions=3,
                                                            sort=False))
    assert dist.cost_evidence_ == local.cost_evidence_
    assert _model_file(dist) == _model_file(local)
    assert_array_equal(dist.predict(frame), local.predict(frame))


def test_per_row_costs_whose_class_means_are_zero_one_are_not_ignored(client):
    """Per-row costs that vary (0.5 and 1.5 times the 0-1 costs) but whose class means are
    exactly the 0-1 costs: the local fit weighs them through the route; the distributed fit
    took the class means for a cost-neutral problem and ignored the rows' costs."""
    X, y = _data(n=1200, d=5, k=3, seed=21)
    factor = np.empty(len(y))
    for c in range(3):  # as many rows of each factor in every class: exact means
        rows = np.flatnonzero(y == c)
        factor[rows] = np.where(np.arange(len(rows)) % 2 == 0, 0.5, 1.5)
    if any((y == c).sum() % 2 for c in range(3)):
        factor[np.flatnonzero(y == y[-1])[-1]] = 1.0
    sample_cost = (1.0 - np.eye(3))[y] * factor[:, None]
    params = dict(n_estimators=6, max_leaves=15, random_state=5, histogram_bits=12)
    local = RebelClassifier(**params).fit(X, y, sample_cost=sample_cost)
    assert_array_equal(local.cost_matrix_, 1.0 - np.eye(3))
    assert local.cost_route_ != "loss"  # (the rows' costs were weighed)
    dist = DaskRebelClassifier(**params).fit(
        da.from_array(X, chunks=(400, 5)), da.from_array(y, chunks=400),
        sample_cost=da.from_array(sample_cost, chunks=(400, 3)))
    assert dist.cost_route_ == local.cost_route_
    assert dist.cost_evidence_ == local.cost_evidence_
    assert _model_file(dist) == _model_file(local)
