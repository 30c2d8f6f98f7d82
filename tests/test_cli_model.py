"""``rebelboost fit / predict / evaluate / explain`` through the real entry point.

Every fresh process spends seconds starting up and compiling numba kernels, so the main path
(fit, predict, evaluate, one user error) runs the installed command in subprocesses and the
other checks run the same ``main`` in-process with click's runner.
"""

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from numpy.testing import assert_array_equal
from sklearn.metrics import confusion_matrix

from rebelboost import RebelClassifier, load_model, mean_cost
from rebelboost.cli import main
from rebelboost.cli.tables import read_cost_matrix

CLASSES = ["setosa", "versicolor", "virginica"]


def _data(n=300, seed=0) -> pd.DataFrame:
    """Four numeric features, three string classes decided mostly by the first two."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 4)
    score = X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.randn(n)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    frame.insert(2, "species", np.array(CLASSES)[np.digitize(score, [-0.5, 0.5])])
    return frame


def _rebelboost(*args):
    """Run the installed ``rebelboost`` command (as tests/test_cli.py does)."""
    beside = Path(sys.executable).with_name("rebelboost")  # the venv running the tests
    exe = str(beside) if beside.exists() else shutil.which("rebelboost")
    if exe is None:
        pytest.fail("the rebelboost entry point is not installed")
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=600)


def _invoke(*args):
    """Run the same command line in-process (no interpreter start, no kernel compilation)."""
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A CSV data set and the model ``rebelboost fit`` trained on it with early stopping."""
    folder = tmp_path_factory.mktemp("cli_model")
    data, model = folder / "train.csv", folder / "model.json"
    _data().to_csv(data, index=False)
    result = _rebelboost("fit", str(data), "--target", "species", "--model-out", str(model),
                         "--n-estimators", "40", "--validation-fraction", "0.2",
                         "--n-iter-no-change", "5", "--random-state", "0")
    assert result.returncode == 0, result.stderr
    return folder, data, model, result


def test_fit_summarises_and_shows_progress_with_validation_error(trained):
    _, _, model_path, result = trained
    assert "training error" in result.stdout and "validation error" in result.stdout
    assert "early stopping" in result.stdout and f"wrote {model_path}" in result.stdout
    progress = result.stderr.splitlines()
    assert progress and all("train loss" in line and "valid error" in line for line in progress)
    model = load_model(model_path)
    assert model.classes_.tolist() == CLASSES
    assert model.feature_names_in_.tolist() == ["a", "b", "c", "d"]
    assert model.best_iteration_ == model.n_estimators_ <= 40


def test_predict_writes_classes_probabilities_and_expected_costs(trained):
    folder, data, model_path, _ = trained
    out = folder / "preds.csv"
    result = _rebelboost("predict", str(model_path), str(data), "--proba", "--expected-cost",
                         "--out", str(out))
    assert result.returncode == 0, result.stderr
    preds = pd.read_csv(out)
    model, frame = load_model(model_path), _data()
    X = frame.drop(columns="species")
    assert preds.columns.tolist() == (["prediction"] + [f"proba_{c}" for c in CLASSES]
                                      + [f"expected_cost_{c}" for c in CLASSES])
    assert (preds["prediction"] == model.predict(X)).all()
    np.testing.assert_allclose(preds.iloc[:, 1:4], model.predict_proba(X), rtol=1e-12)
    np.testing.assert_allclose(preds.iloc[:, 4:], model.expected_cost(X), rtol=1e-12)


def test_predict_with_early_exit_writes_the_same_classes(trained):
    folder, data, model_path, _ = trained
    outs = [folder / "full.csv", folder / "exit.csv"]
    for out, flags in zip(outs, ([], ["--early-exit"]), strict=True):
        result = _rebelboost("predict", str(model_path), str(data), *flags, "--out", str(out))
        assert result.returncode == 0, result.stderr
    assert outs[0].read_text() == outs[1].read_text()


def test_evaluate_json_matches_an_in_process_computation(trained):
    _, data, model_path, _ = trained
    result = _rebelboost("evaluate", str(model_path), str(data), "--target", "species", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    model, frame = load_model(model_path), _data()
    y, predicted = frame["species"].to_numpy(), model.predict(frame.drop(columns="species"))
    matrix = confusion_matrix(y, predicted, labels=CLASSES)
    assert report["n_rows"] == 300 and report["classes"] == CLASSES
    assert report["error_rate"] == pytest.approx(np.mean(predicted != y))
    assert report["mean_cost"] == pytest.approx(mean_cost(y, predicted, model.cost_matrix_,
                                                          model.classes_))
    assert report["confusion_matrix"] == matrix.tolist()
    errors = 1 - np.diag(matrix) / matrix.sum(axis=1)
    assert [c["error"] for c in report["per_class"]] == pytest.approx(errors.tolist())


def test_evaluate_prints_a_labelled_confusion_matrix(trained):
    _, data, model_path, _ = trained
    result = _invoke("evaluate", model_path, data, "--target", "species")
    assert result.exit_code == 0, result.output
    assert "error rate" in result.output and "per-class error" in result.output
    header = result.output.split("confusion matrix")[1].splitlines()[1]
    assert header.split() == CLASSES


def test_explain_prints_the_deciding_learners(trained):
    _, data, model_path, _ = trained
    result = _invoke("explain", model_path, data, "--row", "7", "--top", "3")
    assert result.exit_code == 0, result.output
    model = load_model(model_path)
    x = _data().drop(columns="species").iloc[7]
    assert result.output.startswith("row 7: ")
    terms = model.explain(x.to_numpy(), top=3).terms
    assert terms
    listed = [line.split()[1] for line in result.output.splitlines()[2:2 + len(terms)]]
    assert listed == [f"#{t.learner + 1}" for t in terms]  # numbered from 1, as in the report


def test_npz_input_with_a_reordered_labelled_cost_matrix(tmp_path):
    frame = _data(seed=1)
    X = frame[["a", "b", "c", "d"]].to_numpy()
    y = frame["species"].to_numpy(dtype=str)
    np.savez(tmp_path / "train.npz", X_train=X, y_train=y)
    np.savez(tmp_path / "test.npz", X_test=X[:20])
    cost = np.array([[0, 1, 5], [1, 0, 1], [2, 1, 0]])  # rows and columns in CLASSES order
    order = [2, 0, 1]  # the file lists virginica, setosa, versicolor
    pd.DataFrame(cost[np.ix_(order, order)], index=np.array(CLASSES)[order],
                 columns=np.array(CLASSES)[order]).to_csv(tmp_path / "costs.csv")
    result = _invoke("fit", tmp_path / "train.npz", "--cost-matrix", tmp_path / "costs.csv",
                     "--model-out", tmp_path / "m.json", "--n-estimators", "10", "--quiet")
    assert result.exit_code == 0, result.output
    assert result.output == ""  # --quiet: no progress bar, no summary
    model = load_model(tmp_path / "m.json")
    assert model.classes_.tolist() == CLASSES and getattr(model, "feature_names_in_", None) is None
    np.testing.assert_array_equal(model.cost_matrix_, cost)

    predicted = _invoke("predict", tmp_path / "m.json", tmp_path / "test.npz")
    assert predicted.exit_code == 0, predicted.output
    lines = predicted.output.splitlines()
    assert lines[0] == "prediction" and lines[1:] == model.predict(X[:20]).tolist()


@pytest.mark.parametrize("header, index", [(False, False), (True, False), (False, True),
                                           (True, True)])
def test_cost_matrix_files_with_and_without_labels(tmp_path, header, index):
    classes = np.array(["x", "y", "z"])
    cost = np.array([[0, 1, 2], [3, 0, 4], [5, 6, 0]])
    order = [1, 2, 0] if header or index else [0, 1, 2]
    labels = classes[order]
    pd.DataFrame(cost[np.ix_(order, order)], index=labels, columns=labels).to_csv(
        tmp_path / "c.csv", header=header, index=index)
    np.testing.assert_array_equal(read_cost_matrix(str(tmp_path / "c.csv"), classes), cost)


def test_parquet_input(trained, tmp_path):
    pytest.importorskip("pyarrow")
    _, _, model_path, _ = trained
    _data().to_parquet(tmp_path / "data.parquet")
    result = _invoke("evaluate", model_path, tmp_path / "data.parquet", "-t", "species", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["n_rows"] == 300


@pytest.mark.parametrize("command", ["fit", "predict", "evaluate", "explain", "export"])
def test_every_command_has_help(command):
    result = _invoke(command, "--help")
    assert result.exit_code == 0 and "Usage:" in result.output and "DATA" in result.output


# The one-line user errors of every command are in tests/test_bad_inputs.py (CLI_CASES).


def test_a_user_error_through_the_entry_point(trained):
    folder, data, model, _ = trained
    result = _rebelboost("explain", str(model), str(data), "--row", "5000")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"Error: --row 5000 is out of range: {str(data)!r} has 300 rows (0 to 299)"]


def test_parquet_without_pyarrow_says_what_to_install(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "pyarrow" else real(name, *a))
    (tmp_path / "data.parquet").write_bytes(b"PAR1")
    result = _invoke("fit", tmp_path / "data.parquet", "-t", "species")
    assert result.exit_code == 1 and "pip install pyarrow" in result.output


def test_patience_without_early_stopping_is_a_usage_error(trained):
    _, data, _, _ = trained
    result = _invoke("fit", data, "-t", "species", "--n-iter-no-change", "3")
    assert result.exit_code == 2 and "--validation-fraction" in result.output


def test_fit_reads_per_row_costs_from_cost_columns(tmp_path):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(120, 2))
    y = np.where(X[:, 0] > 0, "a", "b")
    frame = pd.DataFrame(X, columns=["u", "v"])
    frame["label"] = y
    frame["cost_a"] = np.where(y == "a", 0.0, 5.0)  # predicting a for a b row costs 5
    frame["cost_b"] = np.where(y == "b", 0.0, 1.0)
    frame.to_csv(tmp_path / "train.csv", index=False)
    result = _invoke("fit", tmp_path / "train.csv", "-t", "label", "--cost-columns",
                     "--n-estimators", "5", "-o", tmp_path / "m.json", "--quiet")
    assert result.exit_code == 0, result.output
    model = load_model(tmp_path / "m.json")
    assert list(model.feature_names_in_) == ["u", "v"]  # the cost columns are not features
    np.testing.assert_allclose(model.cost_matrix_, [[0.0, 1.0], [5.0, 0.0]])
    frame["cost_b"] = 1.0  # non-zero at the true class
    frame.to_csv(tmp_path / "bad.csv", index=False)
    bad = _invoke("fit", tmp_path / "bad.csv", "-t", "label", "--cost-columns",
                  "-o", tmp_path / "bad.json", "--quiet")
    assert bad.exit_code == 1 and "zero at each sample's true class" in bad.output


def test_fit_passes_the_binning_options_to_the_model(tmp_path):
    """--max-bins and --min-data-in-bin reach the estimator (and the model file's params):
    one bin per value against bins of at least 40 rows give different trees."""
    data = tmp_path / "train.csv"
    _data(n=200).to_csv(data, index=False)
    models = {}
    for rows in (1, 40):
        out = tmp_path / f"model{rows}.json"
        result = _invoke("fit", data, "--target", "species", "--model-out", out,
                         "--n-estimators", "5", "--max-bins", "64", "--min-data-in-bin", rows,
                         "--random-state", "0", "--quiet")
        assert result.exit_code == 0, result.output
        models[rows] = load_model(out)
        assert models[rows].get_params()["min_data_in_bin"] == rows
        assert models[rows].get_params()["max_bins"] == 64
    X = _data(n=200).drop(columns="species")
    assert not np.array_equal(models[1].decision_function(X), models[40].decision_function(X))
    result = _invoke("fit", data, "--target", "species", "--model-out", tmp_path / "bad.json",
                     "--min-data-in-bin", "0")
    assert result.exit_code != 0 and "min-data-in-bin" in result.output


def test_fit_passes_the_sampling_and_leaf_options_to_the_model(tmp_path):
    """--subsample, --sampling, --colsample-bytree and --min-samples-leaf reach the estimator
    (the model file's params) and its trees: the local fit with those parameters."""
    data = tmp_path / "train.csv"
    frame = _data(n=1500)
    frame.to_csv(data, index=False)
    out = tmp_path / "goss.json"
    result = _invoke("fit", data, "--target", "species", "--model-out", out,
                     "--n-estimators", "6", "--subsample", "0.5", "--sampling", "goss",
                     "--colsample-bytree", "0.5", "--min-samples-leaf", "7",
                     "--random-state", "2", "--quiet")
    assert result.exit_code == 0, result.output
    model = load_model(out)
    params = model.get_params()
    assert (params["subsample"], params["sampling"], params["colsample_bytree"],
            params["min_samples_leaf"]) == (0.5, "goss", 0.5, 7)
    frame = pd.read_csv(data)  # (as the command line read it)
    X, y = frame.drop(columns="species"), frame["species"]
    same = RebelClassifier(6, subsample=0.5, sampling="goss", colsample_bytree=0.5,
                           min_samples_leaf=7, random_state=2).fit(X, y)
    assert_array_equal(model.decision_function(X), same.decision_function(X))
    result = _invoke("fit", data, "--target", "species", "--model-out", tmp_path / "bad.json",
                     "--sampling", "bagging")
    assert result.exit_code != 0 and "--sampling" in result.output
