"""Decisions that are not labels through the command line and the HTML report."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from rebelboost import RebelClassifier, load_model
from rebelboost.cli import main

CLASSES = ["a", "b", "c"]
REFER = np.array([[0.0, 1.0, 8.0, 0.3], [1.0, 0.0, 1.0, 0.3], [6.0, 1.0, 0.0, 0.3]])
DECISIONS = ["a", "b", "c", "refer"]


def _data(n=240, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = np.array(CLASSES)[np.digitize(X[:, 0] + 0.5 * rng.standard_normal(n), [-0.6, 0.6])]
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"])
    frame["label"] = y
    return frame, frame[["x0", "x1", "x2"]], y


def _invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def refer_model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("decisions")
    frame, X, y = _data()
    frame.to_csv(folder / "train.csv", index=False)
    order = [2, 0, 1]  # rows listed c, a, b: the index column puts them in class order
    pd.DataFrame(REFER[order], index=np.array(CLASSES)[order], columns=DECISIONS).to_csv(
        folder / "costs.csv")
    result = _invoke("fit", folder / "train.csv", "--target", "label", "--cost-matrix",
                     folder / "costs.csv", "--model-out", folder / "m.json",
                     "--n-estimators", "10", "--random-state", "0")
    assert result.exit_code == 0, result.output
    return folder, result, X, y


def test_fit_reads_a_k_by_m_cost_table_and_says_how_it_decides(refer_model):
    folder, result, _, _ = refer_model
    model = load_model(folder / "m.json")
    np.testing.assert_array_equal(model.cost_matrix_, REFER)
    assert model.decisions_.tolist() == DECISIONS
    assert "decides by" in result.output and "out-of-fold mean cost" in result.output
    assert "training error" not in result.output  # decisions are not labels


def test_predict_writes_decisions_and_their_expected_costs(refer_model):
    folder, _, X, _ = refer_model
    model = load_model(folder / "m.json")
    result = _invoke("predict", folder / "m.json", folder / "train.csv", "--target", "label",
                     "--proba", "--expected-cost", "--out", folder / "p.csv")
    assert result.exit_code == 0, result.output
    table = pd.read_csv(folder / "p.csv", keep_default_na=False)
    assert list(table.columns) == (["prediction"] + [f"proba_{c}" for c in CLASSES]
                                   + [f"expected_cost_{d}" for d in DECISIONS])
    assert table["prediction"].tolist() == model.predict(X).tolist()
    np.testing.assert_allclose(table.iloc[:, 4:], model.expected_cost(X), rtol=1e-12)


def test_evaluate_counts_decisions_per_class_and_their_mean_cost(refer_model):
    folder, _, X, y = refer_model
    model = load_model(folder / "m.json")
    result = _invoke("evaluate", folder / "m.json", folder / "train.csv", "--target", "label",
                     "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    predicted = model.predict(X)
    codes = [DECISIONS.index(p) for p in predicted]
    assert report["mean_cost"] == pytest.approx(REFER[[CLASSES.index(v) for v in y],
                                                      codes].mean())
    assert report["decisions"] == DECISIONS
    assert np.sum(report["decision_counts"]) == len(y)
    assert report["decision_counts"][0][3] == int(np.sum((y == "a") & (predicted == "refer")))


def test_a_cost_table_of_the_wrong_shape_is_refused(tmp_path):
    frame, _, _ = _data(60)
    frame.to_csv(tmp_path / "train.csv", index=False)
    pd.DataFrame(REFER[:2], index=CLASSES[:2], columns=DECISIONS).to_csv(tmp_path / "c.csv")
    result = _invoke("fit", tmp_path / "train.csv", "--target", "label", "--cost-matrix",
                     tmp_path / "c.csv", "--model-out", tmp_path / "m.json")
    assert result.exit_code != 0 and "one row per class" in result.output


def test_report_shows_the_route_its_evidence_and_the_decisions():
    pytest.importorskip("matplotlib")
    from rebelboost.report import render_report

    _, X, y = _data(120)
    model = RebelClassifier(5, cost_matrix=REFER, decisions=DECISIONS, random_state=0)
    model.fit(X, y)
    page = render_report(model, X, y)
    assert 'id="route"' in page and 'id="route-costs"' in page
    assert "minimum expected cost" in page or "most probable class" in page
    for route, value in model.route_costs_.items():
        assert f"<td>{route}</td><td>{value:.4g}</td>" in page
    assert "<th>refer</th>" in page  # the cost matrix and decision table name the decisions
