"""RebelClassifier's user-facing behaviour: inputs, outputs, model files, explanations."""

from __future__ import annotations

import gzip
import json
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_classification

from rebelboost import RebelClassifier, load_model, mean_cost
from rebelboost.datasets import make_spiral


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(0)
    centers = np.array([[0, 0, 0], [3, 0, 1], [0, 3, -1]])
    y = rng.integers(0, 3, 300)
    X = centers[y] + rng.standard_normal((300, 3))
    return X, y


@pytest.fixture(scope="module")
def fitted(blobs):
    X, y = blobs
    return RebelClassifier(30, random_state=0).fit(X, y)


def test_learns_a_simple_problem(blobs, fitted):
    X, y = blobs
    assert fitted.score(X, y) > 0.85
    assert fitted.n_estimators_ == 30
    assert fitted.train_loss_.shape == (30,)
    assert fitted.init_loss_ == pytest.approx(1.5)  # K / 2
    assert np.all(np.diff(fitted.train_loss_) <= 1e-12)
    assert fitted.feature_importances_.sum() == pytest.approx(1.0)


def test_string_labels_and_dataframe_names(blobs):
    pd = pytest.importorskip("pandas")
    X, y = blobs
    names = np.array(["cat", "dog", "emu"])[y]
    df = pd.DataFrame(X, columns=["height", "weight", "age"])
    model = RebelClassifier(20, random_state=0).fit(df, names)
    assert list(model.classes_) == ["cat", "dog", "emu"]
    assert set(model.predict(df)) <= {"cat", "dog", "emu"}
    assert list(model.feature_names_in_) == ["height", "weight", "age"]
    text = str(model.explain(df.iloc[0].to_numpy()))
    assert any(n in text for n in ["height", "weight", "age"])


def test_probabilities_and_decisions_agree(blobs, fitted):
    X, _ = blobs
    proba = fitted.predict_proba(X)
    assert np.allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(fitted.classes_[proba.argmax(axis=1)], fitted.predict(X))
    assert np.array_equal(fitted.classes_[fitted.decision_function(X).argmax(axis=1)],
                          fitted.predict(X))


def test_staged_outputs_end_at_the_final_model(blobs, fitted):
    X, _ = blobs
    stages = list(fitted.staged_decision_function(X))
    assert len(stages) == fitted.n_estimators_
    assert np.allclose(stages[-1], fitted.decision_function(X))
    assert np.array_equal(list(fitted.staged_predict(X))[-1], fitted.predict(X))
    assert np.allclose(list(fitted.staged_predict_proba(X))[-1], fitted.predict_proba(X))


def test_binary_decision_function_is_one_dimensional():
    X, y = make_spiral(200, n_classes=2, random_state=1)
    model = RebelClassifier(20).fit(X, y)
    d = model.decision_function(X)
    assert d.shape == (200,)
    assert np.array_equal((d > 0).astype(int), model.predict(X))


def test_expected_cost_uses_the_cost_matrix(blobs):
    X, y = blobs
    cost = np.array([[0, 1, 10], [1, 0, 1], [1, 1, 0]], float)
    model = RebelClassifier(20, cost_matrix=cost, random_state=0).fit(X, y)
    expected = model.expected_cost(X)
    assert expected.shape == (len(X), 3)
    assert np.allclose(expected, model.predict_proba(X) @ cost)
    assert model.cost_score(X, y) == pytest.approx(mean_cost(y, model.predict(X), cost, [0, 1, 2]))


def test_early_stopping_keeps_the_best_iteration():
    X, y = make_spiral(600, noise=3.0, random_state=0)  # noisy: validation loss turns up
    model = RebelClassifier(400, early_stopping=True, n_iter_no_change=5,
                            validation_metric="loss", random_state=0)
    model.fit(X, y)
    assert model.best_iteration_ == model.n_estimators_
    assert model.n_estimators_ < 400
    assert model.validation_loss_.argmin() + 1 == model.best_iteration_
    assert len(model.validation_loss_) == model.best_iteration_ + 5 or (
        len(model.validation_loss_) == 400
    )


def test_sample_weight_zero_equals_removal(blobs):
    X, y = blobs
    w = np.ones(len(y))
    w[::3] = 0
    a = RebelClassifier(15, random_state=0).fit(X, y, sample_weight=w)
    b = RebelClassifier(15, random_state=0).fit(X[w > 0], y[w > 0])
    assert np.allclose(a.decision_function(X), b.decision_function(X))


def test_n_jobs_does_not_change_the_model(blobs):
    X, y = blobs
    a = RebelClassifier(10, n_jobs=1).fit(X, y)
    b = RebelClassifier(10, n_jobs=-1).fit(X, y)
    assert np.array_equal(a.decision_function(X), b.decision_function(X))


@pytest.mark.parametrize("weak_learner, inside", [("tree", 1), ("similarity", 2)])
def test_blas_keeps_out_of_the_way_of_the_tree_kernels(blobs, weak_learner, inside):
    """Idle BLAS threads spin and take cores from numba's: trees run BLAS on one thread."""
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads():
        found = {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}
        assert found, "numpy should load a BLAS library"
        return found

    X, y = blobs
    seen = []
    with threadpool_limits(limits=2, user_api="blas"):
        RebelClassifier(3, weak_learner=weak_learner).fit(
            X, y, callbacks=[lambda info: seen.append(blas_threads())]
        )
        assert blas_threads() == {2}
    assert seen == [{inside}] * 3


def test_missing_values_are_learnt():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((400, 2))
    y = (X[:, 0] > 0).astype(int)
    X[y == 1, 1] = np.nan  # missingness tells the class
    X[rng.random(400) < 0.5, 0] = np.nan
    model = RebelClassifier(10, weak_learner="stump").fit(X, y)
    assert model.score(X, y) > 0.99


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("X", "y", "message"),
    [
        (np.array([[1.0], [np.inf], [2.0]]), [0, 1, 0], "infinity"),
        (np.ones((3, 1)), [0, np.nan, 1], "NaN"),
        (np.ones((3, 1)), [1, 1, 1], "single class"),
        (np.ones((3, 1)), [0, 1], "inconsistent numbers of samples"),
        (np.ones(3), [0, 1, 0], "2D array"),
        (np.ones((3, 1)), [0.5, 1.5, 2.5], "Unknown label type"),
        (np.ones((3, 1)), [[0, 1], [1, 0], [0, 1]], "1d array"),
    ],
)
def test_bad_training_data_raises_a_clear_error(X, y, message):
    with pytest.raises(ValueError, match=message):
        RebelClassifier(3).fit(X, y)


def test_sparse_inputs_are_refused_clearly():
    with pytest.raises(TypeError, match="dense data is required"):
        RebelClassifier(3).fit(sp.csr_matrix(np.eye(4)), [0, 1, 0, 1])
    with pytest.raises(TypeError, match="Sparse data was passed for y"):
        RebelClassifier(3).fit(np.eye(4), sp.csr_matrix(np.array([[0, 1, 0, 1]])))


@pytest.mark.parametrize(
    ("cost", "message"),
    [
        (np.ones((2, 2)) - np.eye(2), r"shape \(3, 3\)"),
        ([[0, 1, 1], [1, 0, -1], [1, 1, 0]], "negative"),
        ([[1, 1, 1], [1, 0, 1], [1, 1, 0]], "zero diagonal"),
        ([[0, 1, np.nan], [1, 0, 1], [1, 1, 0]], "NaN"),
        ([[0, 0, 0], [1, 0, 1], [1, 1, 0]], "all zero"),
        ([["a", "b", "c"]] * 3, "numeric"),
    ],
)
def test_bad_cost_matrix_raises_a_clear_error(blobs, cost, message):
    X, y = blobs
    with pytest.raises(ValueError, match=message):
        RebelClassifier(3, cost_matrix=cost).fit(X, y)


def test_predicting_with_another_feature_count_fails_clearly(blobs, fitted):
    X, _ = blobs
    with pytest.raises(ValueError, match="features"):
        fitted.predict(X[:, :2])
    with pytest.raises(ValueError, match="infinity"):
        fitted.predict(np.full((1, 3), np.inf))


def test_bad_parameters_fail_clearly(blobs):
    X, y = blobs
    with pytest.raises(ValueError, match="weak_learner"):
        RebelClassifier(weak_learner="forest").fit(X, y)
    with pytest.raises(ValueError, match="n_jobs"):
        RebelClassifier(2, n_jobs=0).fit(X, y)


# ---------------------------------------------------------------- model files


@pytest.mark.parametrize("name", ["model.json", "model.json.gz"])
def test_save_load_round_trip(tmp_path, blobs, fitted, name):
    X, _ = blobs
    path = tmp_path / name
    fitted.save(path)
    loaded = RebelClassifier.load(path)
    assert np.array_equal(loaded.decision_function(X), fitted.decision_function(X))
    assert np.array_equal(loaded.predict(X), fitted.predict(X))
    assert np.array_equal(loaded.train_loss_, fitted.train_loss_)
    assert loaded.get_params() == fitted.get_params()


def test_round_trip_keeps_string_classes_and_missing_only_splits(tmp_path):
    X = np.array([[0.0], [1.0], [np.nan], [np.nan]] * 5)
    y = np.array(["a", "a", "b", "b"] * 5)
    model = RebelClassifier(3, weak_learner="stump").fit(X, y)
    assert np.isinf(model.trees_.threshold).any()  # values left, missing right
    model.save(tmp_path / "m.json")
    loaded = load_model(tmp_path / "m.json")
    assert loaded.classes_.dtype == model.classes_.dtype
    assert np.array_equal(loaded.predict(X), y)


def test_pickle_round_trip(blobs, fitted):
    X, _ = blobs
    clone = pickle.loads(pickle.dumps(fitted))
    assert np.array_equal(clone.decision_function(X), fitted.decision_function(X))


def _doc(fitted, tmp_path):
    path = tmp_path / "m.json"
    fitted.save(path)
    return json.loads(path.read_text())


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(format="lightgbm"), "not a rebelboost model"),
        (lambda d: d.update(format_version=99), "newer than this library"),
        (lambda d: d.update(estimator="Nope"), "unknown estimator"),
        (lambda d: d["fitted"].pop("vectors"), "corrupt"),
        (lambda d: d["model"]["learners"].update(
            feature=[[7, 0, 0]] * len(d["model"]["learners"]["feature"])), "feature"),
        (lambda d: d["fitted"].update(
            vectors=[[1.0, 2.0]] * len(d["model"]["learners"]["feature"])), "corrupt"),
        (lambda d: d["fitted"].update(cost_matrix=[[0, 1], [1, 0]]), "cost matrix"),
    ],
)
def test_bad_model_files_raise_clear_errors(tmp_path, fitted, edit, message):
    doc = _doc(fitted, tmp_path)
    edit(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=message):
        load_model(path)


def test_truncated_and_foreign_files(tmp_path, fitted):
    path = tmp_path / "m.json"
    fitted.save(path)
    raw = path.read_bytes()
    (tmp_path / "cut.json").write_bytes(raw[: len(raw) // 2])
    (tmp_path / "cut.json.gz").write_bytes(gzip.compress(raw)[:100])
    (tmp_path / "binary.bin").write_bytes(bytes(range(256)))
    (tmp_path / "list.json").write_text("[1, 2, 3]")
    for name in ["cut.json", "cut.json.gz", "binary.bin", "list.json"]:
        with pytest.raises(ValueError):
            load_model(tmp_path / name)


@settings(max_examples=40, deadline=None)
@given(cut=st.integers(0, 10_000), flip=st.integers(0, 10_000), byte=st.integers(0, 255))
def test_damaged_files_never_crash_unclearly(tmp_path_factory, fitted, cut, flip, byte):
    tmp = tmp_path_factory.mktemp("damaged")
    path = tmp / "m.json"
    fitted.save(path)
    raw = bytearray(path.read_bytes())
    raw[flip % len(raw)] = byte
    path.write_bytes(bytes(raw[: len(raw) - cut % len(raw)]))
    try:
        model = load_model(path)
    except ValueError:
        return
    model.predict(np.zeros((2, 3)))  # a file that loads must still predict


# --------------------------------------------------------------- explanations


def test_explanation_terms_sum_to_the_margin(blobs, fitted):
    X, _ = blobs
    exp = fitted.explain(X[5], top=fitted.n_estimators_)
    assert exp.predicted == fitted.predict(X[5:6])[0]
    assert sum(t.margin for t in exp.terms) == pytest.approx(exp.margin)
    assert sum(exp.feature_margins.values()) == pytest.approx(
        exp.margin - sum(t.margin for t in exp.terms if t.rule.startswith("always"))
    )
    assert abs(exp.terms[0].margin) >= abs(exp.terms[-1].margin)
    assert "predicted" in str(exp)


def test_load_model_reads_every_booster(tmp_path, blobs):
    from rebelboost import AdaBoostMHClassifier, MCBoostClassifier, OneVsAllAdaBoostClassifier

    X, y = blobs
    for est in [RebelClassifier(5), AdaBoostMHClassifier(5), MCBoostClassifier(5),
                OneVsAllAdaBoostClassifier(3)]:
        est.fit(X, y)
        path = tmp_path / f"{type(est).__name__}.json"
        est.save(path)
        loaded = load_model(path)
        assert type(loaded) is type(est)
        assert np.array_equal(loaded.predict(X), est.predict(X))
    with pytest.raises(ValueError, match="not a RebelClassifier"):
        RebelClassifier.load(tmp_path / "MCBoostClassifier.json")


def test_callbacks_see_every_iteration_and_can_stop():
    from rebelboost.callbacks import IterationInfo

    X, y = make_classification(200, 6, n_informative=4, n_classes=3, random_state=0)
    seen: list[IterationInfo] = []
    model = RebelClassifier(30, random_state=0).fit(X, y, callbacks=[seen.append])
    assert [i.iteration for i in seen] == list(range(1, 31))
    assert [i.train_loss for i in seen] == model.train_loss_.tolist()
    assert all(i.validation_loss is None and i.validation_cost is None for i in seen)

    stopped = RebelClassifier(30, random_state=0).fit(X, y, callbacks=[lambda i: i.iteration == 7])
    assert stopped.n_estimators_ == 7
    np.testing.assert_array_equal(stopped.model_.values, model.model_.values[:7])

    seen.clear()
    early = RebelClassifier(30, early_stopping=True, n_iter_no_change=100, random_state=0)
    early.fit(X, y, callbacks=[seen.append])
    assert [i.validation_loss for i in seen] == early.validation_loss_.tolist()
    assert all(0.0 <= i.validation_cost <= 1.0 for i in seen)
    assert seen[-1].validation_cost < 0.5  # 3 balanced classes: far better than guessing


@pytest.mark.parametrize("weak_learner", ["vector_tree", "tree"])
def test_float32_training_data_gives_the_float64_model(weak_learner):
    """float32 X is binned without a float64 copy, into the bins of its float64 copy."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + X[:, 1] ** 2 > 0.5).astype(int) + (X[:, 2] > 1)
    a = RebelClassifier(10, weak_learner=weak_learner, random_state=0).fit(X, y)
    b = RebelClassifier(10, weak_learner=weak_learner, random_state=0).fit(X.astype(float), y)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


def test_small_data_defaults_depend_on_the_training_rows_only_where_left_at_none():
    """Up to 1,000 training rows 'vector_tree' takes 500 depth-2 trees at rate 1 with leaves
    of any size; above, 100 trees of 31 leaves at 0.3 with leaves of 10; explicit values
    stay; the cost route's fold models (2/3 of the rows) keep the final model's shape."""
    from rebelboost.ensemble._size_defaults import SMALL_DATA_ROWS

    rng = np.random.default_rng(0)
    X = rng.normal(size=(SMALL_DATA_ROWS + 1, 3))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    noisy = rng.random(len(y)) < 0.1  # (labels no 3 splits separate: the trees grow)
    y[noisy] = rng.integers(0, 3, noisy.sum())
    small = RebelClassifier(random_state=0).fit(X[:SMALL_DATA_ROWS], y[:SMALL_DATA_ROWS])
    assert small.resolved_params_ == {"n_estimators": 500, "max_depth": 2,
                                      "learning_rate": 1.0, "min_samples_leaf": 1,
                                      "max_leaves": 31, "max_bins": 127}
    depth_two = RebelClassifier(500, max_depth=2, learning_rate=1.0, min_samples_leaf=1,
                                random_state=0).fit(X[:SMALL_DATA_ROWS], y[:SMALL_DATA_ROWS])
    np.testing.assert_array_equal(small.decision_function(X), depth_two.decision_function(X))
    large = RebelClassifier(random_state=0).fit(X, y)
    assert large.resolved_params_ == {"n_estimators": 100, "max_depth": -1,
                                      "learning_rate": 0.3, "min_samples_leaf": 10,
                                      "max_leaves": 31, "max_bins": 127}
    assert (large.trees_.feature >= 0).sum(axis=1).max() > 3  # deeper than depth 2
    mixed = RebelClassifier(50, max_depth=-1, random_state=0).fit(X[:200], y[:200])
    assert mixed.resolved_params_ == {"n_estimators": 50, "max_depth": -1,
                                      "learning_rate": 1.0, "min_samples_leaf": 1,
                                      "max_leaves": 31, "max_bins": 127}
    assert RebelClassifier(weak_learner="tree").fit(X[:200], y[:200]).resolved_params_ == {
        "n_estimators": 100, "max_depth": 2, "learning_rate": 1.0, "min_samples_leaf": 10,
        "max_leaves": 31, "max_bins": 255}
    with pytest.raises(ValueError, match="max_depth=-1"):
        RebelClassifier(weak_learner="tree", max_depth=-1).fit(X[:200], y[:200])
    # folds of 2/3 of 1,001 rows are small, but fit with the final model's parameters
    seen = []
    fit_fold = RebelClassifier._fit_scorer  # (how the route fits its fold models)

    def spy(self, *args, **kwargs):
        seen.append(self.get_params())
        return fit_fold(self, *args, **kwargs)

    cost = [[0, 1, 4], [1, 0, 1], [4, 1, 0]]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RebelClassifier, "_fit_scorer", spy)
        RebelClassifier(5, cost_matrix=cost, random_state=0).fit(X, y)
    assert len(seen) == 3
    assert all(p["max_depth"] == -1 and p["learning_rate"] == 0.3 for p in seen)


def test_large_data_grows_63_leaves_and_bins_unless_told():
    """Above 10,000 training rows 'vector_tree' grows trees of up to 63 leaves (the model of
    an explicit ``max_leaves=63``) over 255 bins a feature; an explicit value stays, and at
    the threshold it is 31 leaves over 127 bins (the model of an explicit ``max_bins=127``)."""
    from rebelboost.ensemble._size_defaults import LARGE_DATA_ROWS

    rng = np.random.default_rng(1)
    X = rng.normal(size=(LARGE_DATA_ROWS + 1, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=len(X)) > 0).astype(int) + (X[:, 1] > 0.3)
    large = RebelClassifier(3, random_state=0).fit(X, y)
    assert large.resolved_params_["max_leaves"] == 63
    assert (large.trees_.feature >= 0).sum(axis=1).max() > 31
    explicit = RebelClassifier(3, max_leaves=63, random_state=0).fit(X, y)
    np.testing.assert_array_equal(large.decision_function(X[:500]),
                                  explicit.decision_function(X[:500]))
    at = RebelClassifier(3, random_state=0).fit(X[:LARGE_DATA_ROWS], y[:LARGE_DATA_ROWS])
    assert at.resolved_params_["max_leaves"] == 31
    assert large.resolved_params_["max_bins"] == 255 and at.resolved_params_["max_bins"] == 127
    explicit = RebelClassifier(3, max_bins=127, random_state=0).fit(X[:LARGE_DATA_ROWS],
                                                                   y[:LARGE_DATA_ROWS])
    np.testing.assert_array_equal(at.decision_function(X[:500]),
                                  explicit.decision_function(X[:500]))
    finer = RebelClassifier(3, max_bins=255, random_state=0).fit(X[:LARGE_DATA_ROWS],
                                                                y[:LARGE_DATA_ROWS])
    assert finer.resolved_params_["max_bins"] == 255
    assert not np.array_equal(at.decision_function(X[:500]), finer.decision_function(X[:500]))
    assert RebelClassifier(3, max_leaves=7, random_state=0).fit(
        X, y).resolved_params_["max_leaves"] == 7
