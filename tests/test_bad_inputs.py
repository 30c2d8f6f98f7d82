"""A corpus of bad inputs: each must end in a clear error that names the problem.

Add a case whenever a new bad input turns up. API cases are (call, error type, fragment of the
message); CLI cases are (files to write, arguments, exit status, fragment of the one-line
error). Below the corpus: inputs that must *work* although they once failed or went silently
wrong (labelled cost matrices, pandas string labels, extreme feature scales).
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from rebelboost import RebelClassifier, load_model
from rebelboost.cli import main
from rebelboost.learners.similarity import scaling_statistics

RNG = np.random.RandomState(0)
X = RNG.randn(60, 3)
Y = np.array(["a", "b", "c"])[RNG.randint(0, 3, 60)]
COSTS = pd.DataFrame([[0, 1, 10], [2, 0, 3], [4, 5, 0]], index=list("abc"), columns=list("abc"))


def _fit(X=X, y=Y, sample_weight=None, **params):
    return lambda: RebelClassifier(3, **params).fit(X, y, sample_weight=sample_weight)


def _with(column, value):
    X_bad = X.copy()
    X_bad[:, column] = value
    return X_bad


def _frame(**extra):
    return pd.DataFrame(X, columns=["u", "v", "w"]).assign(**extra)


API_CASES = [
    # labels
    ("y-None", _fit(y=np.array([None, *Y[1:]], dtype=object)), ValueError, "None"),
    ("y-NaN", _fit(y=np.r_[np.nan, np.ones(59), ]), ValueError, "NaN"),
    ("y-one-class", _fit(y=np.zeros(60)), ValueError, "single class (0.0)"),
    ("y-one-class-text", _fit(y=np.array(["a"] * 60)), ValueError, "single class ('a')"),
    ("y-mixed-types", _fit(y=np.array([1, "a", 2.0] * 20, dtype=object)), ValueError,
     "mixes label types (number such as 1, str such as 'a')"),
    ("y-fractional-floats", _fit(y=np.array([0, 0.5, 1.0] * 20)), ValueError,
     "fractional float labels (such as 0.5)"),
    ("y-2d", _fit(y=np.ones((60, 2))), ValueError, "1d array"),
    # features
    ("X-infinity", _fit(X=_with(0, np.inf)), ValueError, "infinity"),
    # (text columns are categorical by default; with categorical_features=None they are not)
    ("X-text-column", _fit(X=_frame(colour="red"), categorical_features=None), ValueError,
     "X columns ['colour']"),
    ("X-object-array-text", _fit(X=np.c_[X, np.full(60, "red")].astype(object),
                                 categorical_features=None), ValueError,
     "X columns [3] (0-based) are not numeric"),
    ("X-text-column-other-learner", _fit(X=_frame(colour="red"), weak_learner="tree"),
     ValueError, "categorical features need weak_learner='vector_tree'"),
    ("X-text-and-numbers", _fit(X=_frame(colour=["red", 1.0] * 30)), ValueError,
     "column 'colour' mixes text and numbers"),
    ("X-no-columns", _fit(X=pd.DataFrame(index=range(60))), ValueError, "no feature columns"),
    # (as numbers, dates would count a unit that depends on the frame's resolution)
    ("X-dates-only", _fit(X=pd.DataFrame({"day": pd.date_range("2020-01-01", periods=60)})),
     ValueError, "X columns ['day'] hold dates, times, durations or intervals"),
    ("X-dates-tz-aware", _fit(X=_frame(day=pd.date_range("2020-01-01", periods=60, tz="UTC"))),
     ValueError, "X columns ['day'] hold dates"),
    ("X-durations", _fit(X=_frame(wait=pd.to_timedelta(np.arange(60), unit="h"))), ValueError,
     "X columns ['wait'] hold dates"),
    ("X-periods-and-intervals", _fit(X=_frame(month=pd.period_range("2020-01", periods=60,
                                                                    freq="M"),
                                              bucket=pd.interval_range(0, 60))),
     ValueError, "X columns ['month', 'bucket'] hold dates"),
    ("X-dates-categorical", _fit(X=_frame(day=pd.date_range("2020-01-01", periods=60)),
                                 categorical_features=["day"]),
     ValueError, "X columns ['day'] hold dates"),
    ("X-timestamps-in-object-column", _fit(X=_frame(day=pd.Series(
        pd.date_range("2020-01-01", periods=60, tz="UTC")).astype(object)),
        categorical_features=None), TypeError, "X columns ['day'] are not numeric"),
    # (numpy's own words: "setting an array element with a sequence"; for dicts and
    # timestamps a TypeError, whose words scikit-learn's estimator checks expect)
    ("X-lists-in-object-column", _fit(X=_frame(tags=pd.Series([[i % 3] for i in range(60)],
                                                              dtype=object))),
     ValueError, "X columns ['tags'] are not numeric"),
    ("X-dicts-in-object-column", _fit(X=_frame(meta=pd.Series([{"k": i} for i in range(60)],
                                                              dtype=object))),
     TypeError, "X columns ['meta'] are not numeric; encode them as numbers first (or drop "
     "them) (float() argument must be a string"),
    ("X-object-array-dicts", _fit(X=np.c_[X, np.array([{"k": i} for i in range(60)])].astype(
        object)), TypeError, "X columns [3] (0-based) are not numeric"),
    ("X-one-row", _fit(X=X[:1], y=Y[:1]), ValueError, "minimum of 2"),
    ("similarity-NaN", _fit(X=_with(0, np.nan), weak_learner="similarity"), ValueError,
     "impute"),
    ("similarity-range-overflows", _fit(X=_with(1, np.r_[-1.7e308, np.full(59, 1.7e308)]),
                                        weak_learner="similarity"),
     ValueError, "features [1] (0-based) span too wide a range"),
    # weights
    ("weights-negative", _fit(sample_weight=np.r_[-1.0, np.ones(59)]), ValueError,
     "non-negative"),
    ("weights-zero", _fit(sample_weight=np.zeros(60)), ValueError, "zero"),
    ("weights-text", _fit(sample_weight=np.array(["a"] * 60)), ValueError,
     "sample_weight must hold numbers"),
    # cost matrices
    ("cost-shape", _fit(cost_matrix=[[0, 1], [1, 0]]), ValueError, "shape (3, 3)"),
    ("cost-negative", _fit(cost_matrix=[[0, 1, -1], [1, 0, 1], [1, 1, 0]]), ValueError,
     "cost_matrix[0, 2] (true class 'a') is negative"),
    ("cost-diagonal", _fit(cost_matrix=np.ones((3, 3))), ValueError, "zero diagonal"),
    ("cost-zero-row", _fit(cost_matrix=[[0, 0, 0], [1, 0, 1], [1, 1, 0]]), ValueError,
     "rows [0] are all zero"),
    ("cost-NaN", _fit(cost_matrix=[[0, np.nan, 1], [1, 0, 1], [1, 1, 0]]), ValueError, "NaN"),
    ("cost-text", _fit(cost_matrix=[["0", "x", "1"], [1, 0, 1], [1, 1, 0]]), ValueError,
     "cost_matrix must be a numeric array"),
    ("cost-labels-unknown", _fit(cost_matrix=COSTS.rename(index={"a": "q"})), ValueError,
     "cost_matrix names class(es) ['q'] with no training rows"),
    ("cost-labels-repeated", _fit(cost_matrix=COSTS.set_axis(list("aab"), axis=1)), ValueError,
     "labels of its columns ['a', 'a', 'b'] do not match"),
    # parameters
    ("n-estimators-zero", lambda: RebelClassifier(0).fit(X, Y), ValueError, "n_estimators"),
    ("scaling-unknown", _fit(weak_learner="similarity", scaling="robust"), ValueError,
     "scaling"),
    # prediction
    ("predict-feature-count", lambda: RebelClassifier(2).fit(X, Y).predict(X[:, :2]),
     ValueError, "X has 2 features"),
    ("predict-columns-reordered", lambda: RebelClassifier(2).fit(
        _frame(colour=["red", "blue"] * 30), Y).predict(
        _frame(colour=["red", "blue"] * 30)[["colour", "u", "v", "w"]]),
     ValueError, "X's columns are the fitted ones in another order"),
    ("predict-columns-renamed", lambda: RebelClassifier(2).fit(
        _frame(colour=["red", "blue"] * 30), Y).predict(
        _frame(colour=["red", "blue"] * 30).rename(columns={"u": "q"})),
     ValueError, "missing ['u'], not fitted ['q']"),
    ("eval-set-dates", lambda: RebelClassifier(3).fit(
        _frame(day=np.arange(60.0)), Y,
        eval_set=(_frame(day=pd.date_range("2020-01-01", periods=60)), Y)),
     ValueError, "eval_set: X columns ['day'] hold dates"),
    ("predict-dates", lambda: RebelClassifier(2).fit(_frame(day=np.arange(60.0)), Y).predict(
        _frame(day=pd.date_range("2020-01-01", periods=60))), ValueError,
     "X columns ['day'] hold dates"),
    ("predict-dates-categorical-model", lambda: RebelClassifier(2).fit(
        _frame(colour=["red", "blue"] * 30, day=np.arange(60.0)), Y).predict(
        _frame(colour=["red", "blue"] * 30, day=pd.date_range("2020-01-01", periods=60))),
     ValueError, "X columns ['day'] hold dates"),
]


@pytest.mark.parametrize("call, error, fragment", [pytest.param(*c[1:], id=c[0])
                                                   for c in API_CASES])
def test_api_refuses_bad_input_naming_the_problem(call, error, fragment):
    with pytest.raises(error) as caught:
        call()
    assert fragment in str(caught.value)
    assert "np." not in str(caught.value)  # (values as they read, not NumPy's reprs)


def _files(folder):
    """The data files the CLI cases read."""
    frame = _frame(label=Y)
    frame.to_csv(folder / "data.csv", index=False)
    frame[["label"]].to_csv(folder / "only_target.csv", index=False)
    (folder / "text.npz").write_text("u,v,w,label\n1,2,3,a\n")
    np.savez(folder / "object_labels.npz", X=X, y=Y.astype(object))
    np.savez(folder / "data.npz", X=X, y=Y)
    pd.DataFrame(1 - np.eye(3), index=list("abq"), columns=list("abq")).to_csv(
        folder / "wrong_labels.csv")
    frame.assign(colour="red").to_csv(folder / "text_feature.csv", index=False)
    frame.drop(columns="w").to_csv(folder / "no_w.csv", index=False)
    frame.assign(label="tulip").to_csv(folder / "new_label.csv", index=False)
    (folder / "corrupt.json").write_text('{"format": "rebelboost-model", "format_ver')
    (folder / "square2.csv").write_text("0,1\n1,0\n")
    (folder / "text_cost.csv").write_text("0,1,x\n1,0,1\n1,1,0\n")
    pd.DataFrame([[0, 1, -1], [1, 0, 1], [1, 1, 0]]).to_csv(folder / "negative.csv",
                                                            header=False, index=False)
    (folder / "data.txt").write_text("u,v\n1,2\n")


FIT = ["fit", "{d}/data.csv", "-t", "label", "-o", "{d}/unused.json"]
CLI_CASES = [
    ("data-missing", ["fit", "{d}/missing.csv", "-t", "label"], 1, "not found"),
    ("target-unknown", ["fit", "{d}/data.csv", "-t", "nope"], 1, "'nope' is not in"),
    ("text-feature-paper-trees", ["fit", "{d}/text_feature.csv", "-t", "label",
                                  "--weak-learner", "tree"], 1,
     "categorical features need weak_learner='vector_tree'"),
    ("categorical-unknown", [*FIT, "--categorical", "colour"], 1,
     "--categorical names columns ['colour']"),
    ("file-type", ["fit", "{d}/data.txt", "-t", "u"], 1, "unsupported file type"),
    ("cost-shape", [*FIT, "--cost-matrix", "{d}/square2.csv"], 1, "must be 3 x 3"),
    ("cost-text", [*FIT, "--cost-matrix", "{d}/text_cost.csv"], 1,
     "must have one row per class (3: ['a', 'b', 'c'])"),
    ("cost-negative", [*FIT, "--cost-matrix", "{d}/negative.csv"], 1, "negative"),
    ("cost-missing", [*FIT, "--cost-matrix", "{d}/none.csv"], 1, "not found"),
    ("model-corrupt", ["predict", "{d}/corrupt.json", "{d}/data.csv"], 1, "corrupt.json"),
    ("model-missing", ["predict", "{d}/missing.json", "{d}/data.csv"], 1,
     "model file '{d}/missing.json' not found"),
    ("feature-column-missing", ["predict", "{d}/named_model.json", "{d}/no_w.csv"], 1,
     "lacks the model's feature columns ['w']"),
    ("label-unknown", ["evaluate", "{d}/named_model.json", "{d}/new_label.csv", "-t", "label"],
     1, "['tulip']"),
    ("row-out-of-range", ["explain", "{d}/named_model.json", "{d}/data.csv", "-r", "60"], 1,
     "--row 60 is out of range"),
    ("only-target-column", ["fit", "{d}/only_target.csv", "-t", "label"], 1,
     "has no feature columns besides the target 'label'"),
    ("text-named-npz", ["fit", "{d}/text.npz"], 1, "is not an .npz file"),
    ("npz-object-array", ["fit", "{d}/object_labels.npz"], 1,
     "array 'y' holds Python objects (dtype object)"),
    ("cost-labels-unknown", [*FIT, "--cost-matrix", "{d}/wrong_labels.csv"], 1,
     "its row labels ['a', 'b', 'q'] are not the classes ['a', 'b', 'c']"),
    ("model-out-no-folder", ["fit", "{d}/data.csv", "-t", "label", "-o", "{d}/nope/m.json"], 1,
     "no folder"),
    ("model-out-is-folder", ["fit", "{d}/data.csv", "-t", "label", "-o", "{d}"], 2,
     "is a directory"),
    ("target-missing", ["fit", "{d}/data.csv"], 2, "--target is required"),
    ("unknown-option", ["fit", "{d}/data.csv", "--depth", "3"], 2, "No such option"),
    ("predict-npz-model-extra-column", ["predict", "{d}/npz_model.json", "{d}/data.csv"], 1,
     "leave out the label column with --target"),
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_inputs")
    _files(d)
    RebelClassifier(3).fit(X, Y).save(d / "npz_model.json")
    RebelClassifier(3).fit(_frame(), Y).save(d / "named_model.json")
    return d


@pytest.mark.parametrize("args, status, fragment", [pytest.param(*c[1:], id=c[0])
                                                    for c in CLI_CASES])
def test_cli_refuses_bad_input_naming_the_problem(folder, args, status, fragment):
    result = CliRunner().invoke(main, [a.format(d=folder) for a in args])
    assert result.exit_code == status, result.output
    assert isinstance(result.exception, SystemExit)  # no traceback
    lines = result.output.strip().splitlines()
    if status == 1:  # user errors: one line
        assert len(lines) == 1, result.output
    assert lines[-1].startswith("Error: ") and fragment.format(d=folder) in lines[-1], \
        result.output
    assert "np." not in result.output  # (values as they read, not NumPy's reprs)


# ---------------------------------------------------------------- inputs that must work


def test_labelled_cost_matrix_is_reordered_to_the_classes():
    ordered = RebelClassifier(3, cost_matrix=COSTS).fit(X, Y)
    shuffled = RebelClassifier(3, cost_matrix=COSTS.loc[list("cba"), list("bac")]).fit(X, Y)
    np.testing.assert_array_equal(shuffled.cost_matrix_, COSTS.to_numpy())
    np.testing.assert_array_equal(shuffled.decision_function(X), ordered.decision_function(X))
    # labels on one axis only: the other follows it, as in the CLI's cost-matrix files
    rows_only = COSTS.loc[list("cab"), list("cab")].set_axis(range(3), axis=1)
    np.testing.assert_array_equal(RebelClassifier(3, cost_matrix=rows_only).fit(X, Y)
                                  .cost_matrix_, COSTS.to_numpy())
    # an unlabelled DataFrame (default positions) is read by position
    plain = pd.DataFrame(COSTS.to_numpy()[::-1, ::-1])
    np.testing.assert_array_equal(RebelClassifier(3, cost_matrix=plain).fit(X, Y)
                                  .cost_matrix_, COSTS.to_numpy()[::-1, ::-1])


def test_cli_cost_matrix_file_agrees_with_the_api(folder, tmp_path):
    COSTS.loc[list("cba"), list("cba")].to_csv(tmp_path / "costs.csv")
    result = CliRunner().invoke(main, ["fit", str(folder / "data.csv"), "-t", "label", "-q",
                                       "--n-estimators", "3", "--cost-matrix",
                                       str(tmp_path / "costs.csv"), "-o",
                                       str(tmp_path / "m.json")])
    assert result.exit_code == 0, result.output
    api = RebelClassifier(3, cost_matrix=COSTS.loc[list("cba"), list("cba")]).fit(X, Y)
    np.testing.assert_array_equal(load_model(tmp_path / "m.json").cost_matrix_,
                                  api.cost_matrix_)


@pytest.mark.parametrize("labels", [
    pd.Series(Y), pd.Series(Y, dtype="string"), pd.Series(pd.Categorical(Y)),
    Y.astype(object)], ids=["object", "string", "categorical", "numpy-object"])
def test_string_labels_from_pandas_can_be_saved(tmp_path, labels):
    model = RebelClassifier(3).fit(X, labels)
    assert model.classes_.dtype.kind == "U"
    model.save(tmp_path / "m.json")
    again = load_model(tmp_path / "m.json")
    assert again.classes_.tolist() == ["a", "b", "c"]
    np.testing.assert_array_equal(again.predict(X), model.predict(X))


def _separable(n=200):
    rng = np.random.RandomState(1)
    X = rng.randn(n, 4)
    return X, (X[:, 0] + X[:, 1] > 0).astype(int)


@pytest.mark.parametrize("scaling", ["standard", "minmax", None])
@pytest.mark.parametrize("factor", [1e-200, 1e200, 1e-305, 1e300])
def test_similarity_models_learn_at_any_feature_scale(scaling, factor):
    X, y = _separable()
    reference = RebelClassifier(20, weak_learner="similarity", scaling=scaling).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow, no "rows coincide"
        scaled = RebelClassifier(20, weak_learner="similarity", scaling=scaling).fit(
            X * factor, y)
    np.testing.assert_array_equal(scaled.predict(X * factor), reference.predict(X))
    assert scaled.score(X * factor, y) > 0.9


def test_scaling_statistics_match_the_plain_formulas_at_ordinary_scales():
    X, _ = _separable()
    offset, scale = scaling_statistics(X, "standard")
    np.testing.assert_array_equal(offset, X.mean(axis=0))
    np.testing.assert_array_equal(scale, X.std(axis=0))
    offset, scale = scaling_statistics(X, "minmax")
    np.testing.assert_array_equal(scale, X.max(axis=0) - X.min(axis=0))
    offset, scale = scaling_statistics(X, None)
    np.testing.assert_array_equal(offset, 0.0)
    np.testing.assert_array_equal(scale, 1.0)
    # at extreme scales: the same statistics times the factor, for every mode
    for mode in ("standard", "minmax", None):
        tiny, huge = scaling_statistics(X * 2.0**-700, mode), scaling_statistics(X * 2.0**700,
                                                                                 mode)
        for got, factor in ((tiny, 2.0**-700), (huge, 2.0**700)):
            np.testing.assert_allclose(got[0] / factor, scaling_statistics(X, mode)[0] if
                                       mode else 0.0, rtol=1e-12)
            assert np.isfinite(got[1]).all() and (got[1] > 0).all()


def test_raw_scaling_warns_about_features_too_small_to_matter():
    X, y = _separable()
    X[:, 2] *= 1e-12
    with pytest.warns(UserWarning, match=r"features \[2\] \(0-based\) vary by less than"):
        RebelClassifier(5, weak_learner="similarity", scaling=None).fit(X, y)
