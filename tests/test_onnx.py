"""ONNX export checked with onnxruntime (the optional ``onnx`` extra)."""

from __future__ import annotations

import numpy as np
import pytest

from rebelboost import AdaBoostMHClassifier, RebelClassifier
from rebelboost.onnx_export import OnnxExportError

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

COST = [[0, 1, 8], [1, 0, 1], [6, 1, 0]]


def _data(n=1500, seed=0, labels=None):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 5))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] + 0.5 * X[:, 2] > 0.3)
    X[::4, 1] = np.nan
    X[::9, 3] = np.nan
    X[5] = np.nan  # a row of nothing but missing values
    return X, (y if labels is None else np.asarray(labels)[y])


def _run(model, X) -> dict:
    session = ort.InferenceSession(model.to_onnx().SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, {"X": X}),
                    strict=True))


@pytest.mark.parametrize("learner", ["vector_tree", "tree", "stump"])
def test_labels_scores_and_probabilities_match(learner):
    X, y = _data()
    model = RebelClassifier(40, weak_learner=learner, random_state=0).fit(X, y)
    X_new, _ = _data(seed=1)
    out = _run(model, X_new)
    np.testing.assert_array_equal(out["label"], model.predict(X_new))
    np.testing.assert_allclose(out["scores"], model.model_.scores(X_new), rtol=0, atol=1e-12)
    np.testing.assert_allclose(out["probabilities"], model.predict_proba(X_new), rtol=1e-12,
                               atol=0)


def test_cost_decision_and_string_labels():
    X, y = _data(labels=["low", "mid", "high"])
    model = RebelClassifier(40, cost_matrix=COST, random_state=0).fit(X, y)
    assert model.cost_strategy_ == "posterior"
    X_new, _ = _data(seed=2)
    out = _run(model, X_new)
    predicted = model.predict(X_new)
    np.testing.assert_array_equal(out["label"], predicted)
    assert (predicted != model.classes_[np.argmax(model.predict_proba(X_new), 1)]).any()
    np.testing.assert_allclose(out["expected_cost"], model.expected_cost(X_new), atol=1e-12)
    meta = {p.key: p.value for p in model.to_onnx().metadata_props}
    assert "least expected cost" in meta["decision_rule"] and meta["cost_matrix"]


def test_extreme_scores_keep_their_probability_ratios():
    """Rows whose every class score is very negative are decided by the ratios of tiny
    probabilities: the graph computes them to the last digits, as predict_proba does."""
    X, y = _data(labels=["low", "mid", "high"])
    model = RebelClassifier(20, cost_matrix=COST, random_state=0).fit(X, y)
    model.model_.values[0] -= 60.0  # every class score below -40
    assert (model.model_.scores(X).max(axis=1) < -40).all()
    out = _run(model, X)
    np.testing.assert_allclose(out["probabilities"], model.predict_proba(X), rtol=1e-12, atol=0)
    np.testing.assert_array_equal(out["label"], model.predict(X))


def test_two_classes_and_other_boosters(tmp_path):
    X, y = _data()
    binary = RebelClassifier(20, random_state=0).fit(X, y > 0)
    np.testing.assert_array_equal(_run(binary, X)["label"], binary.predict(X))
    mh = AdaBoostMHClassifier(20, max_depth=2).fit(X, y)
    out = _run(mh, X)
    np.testing.assert_array_equal(out["label"], mh.predict(X))
    assert "probabilities" not in out  # its link is not REBEL's: scores and labels only
    mh.to_onnx(tmp_path / "mh.onnx")
    assert (tmp_path / "mh.onnx").stat().st_size > 0


def test_unsupported_models_say_what():
    X, y = _data()
    X = np.nan_to_num(X)
    sim = RebelClassifier(3, weak_learner="similarity", random_state=0).fit(X[:200], y[:200])
    with pytest.raises(OnnxExportError, match="tree and stump models only.*similarit"):
        sim.to_onnx()


def test_export_command_writes_a_graph_onnxruntime_runs(tmp_path):
    from click.testing import CliRunner

    from rebelboost.cli import main

    X, y = _data()
    model = RebelClassifier(10, cost_matrix=COST, random_state=0).fit(X, y)
    # Both routes the guard can keep: argmax (the least costly decision for the top class) and
    # the minimum-risk rule (expected costs in the graph).
    for route, outputs in [("argmax", "outputs label, scores, probabilities\n"),
                           ("min_risk", "outputs label, scores, probabilities, expected_cost")]:
        model.cost_route_ = route
        model.save(tmp_path / "m.json")
        result = CliRunner().invoke(main, ["export", str(tmp_path / "m.json"), "--onnx",
                                           str(tmp_path / "m.onnx")])
        assert result.exit_code == 0, result.output
        assert outputs in result.output
        session = ort.InferenceSession(str(tmp_path / "m.onnx"),
                                       providers=["CPUExecutionProvider"])
        np.testing.assert_array_equal(session.run(["label"], {"X": X})[0], model.predict(X))
    np.savez(tmp_path / "d.npz", X=X)
    checked = CliRunner().invoke(main, ["export", str(tmp_path / "m.json"), "--onnx",
                                        str(tmp_path / "m.onnx"), "--check",
                                        str(tmp_path / "d.npz")])
    assert checked.exit_code == 0, checked.output
    assert f"checked on {len(X)} rows" in checked.output
    assert f"{len(X)} labels identical" in checked.output
    bad = CliRunner().invoke(main, ["export", str(tmp_path / "missing.json"), "--onnx",
                                    str(tmp_path / "x.onnx")])
    assert bad.exit_code == 1 and "Error" in bad.output


@pytest.mark.parametrize("learner", ["vector_tree", "tree"])
def test_pass_nodes_and_trees_without_splits(learner):
    X, y = _data()
    model = RebelClassifier(10, weak_learner=learner, random_state=0).fit(X, y)
    feature = model.model_.learners.feature
    feature[0, :] = -1  # tree 0: no split at all
    feature[1, 0] = -1  # tree 1: its root passes every row left
    out = _run(model, X)
    np.testing.assert_array_equal(out["label"], model.predict(X))
    np.testing.assert_allclose(out["scores"], model.model_.scores(X), rtol=0, atol=1e-12)
    phi = model.contributions(X)
    np.testing.assert_allclose(phi.sum(axis=1), model.model_.scores(X), atol=1e-10)


@pytest.mark.parametrize("kind", ["vector", "matrix"])
def test_scaling_calibration_maps_are_exported(kind):
    """Vector and matrix scaling after the temperature: the graph's probabilities, expected
    costs and decisions are the estimator's, for any map (here a random one)."""
    from rebelboost.calibration import CalibrationMap

    X, y = _data(labels=["low", "mid", "high"])
    model = RebelClassifier(20, cost_matrix=COST, random_state=0).fit(X, y)
    rng = np.random.RandomState(4)
    weights = np.eye(3) + 0.3 * (np.diag(rng.normal(size=3)) if kind == "vector"
                                 else rng.normal(size=(3, 3)))
    model.calibration_ = CalibrationMap(kind, 0.7, weights, rng.normal(size=3))
    X_new, _ = _data(seed=3)
    out = _run(model, X_new)
    np.testing.assert_allclose(out["probabilities"], model.predict_proba(X_new), rtol=1e-9,
                               atol=1e-15)
    np.testing.assert_allclose(out["expected_cost"], model.expected_cost(X_new), atol=1e-9)
    np.testing.assert_array_equal(out["label"], model.predict(X_new))
    meta = {p.key: p.value for p in model.to_onnx().metadata_props}
    assert f'"kind": "{kind}"' in meta["calibration"]


def test_categorical_splits_are_member_tests_on_the_encoded_codes():
    """Sets of categories go to ``BRANCH_MEMBER`` nodes; the graph reads ``model.encode(X)``
    (codes, NaN for missing or unseen values) and decides as ``predict`` on the raw rows."""
    import json

    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    n = 1500
    levels = np.array([f"c{i:02d}" for i in range(40)])
    colour = rng.integers(0, 40, n)
    X = pd.DataFrame({"colour": pd.Categorical(levels[colour]), "u": rng.normal(size=n),
                      "v": rng.normal(size=n)})
    X.loc[::9, "colour"] = np.nan
    X.loc[::7, "u"] = np.nan
    y = np.array(["a", "b", "c"])[(colour % 3 + (X["u"].fillna(0) > 0.5)) % 3]
    model = RebelClassifier(30, cost_matrix=COST, random_state=0).fit(X, y)
    assert np.isnan(model.model_.learners.threshold).any()  # categorical nodes exist
    X_new = X.sample(frac=1.0, random_state=1).reset_index(drop=True)
    X_new["colour"] = X_new["colour"].cat.add_categories("unseen")
    X_new.loc[::11, "colour"] = "unseen"
    out = _run(model, model.encode(X_new))
    np.testing.assert_array_equal(out["label"], model.predict(X_new))
    np.testing.assert_allclose(out["scores"], model.decision_function(X_new), rtol=0,
                               atol=1e-12)
    meta = {p.key: p.value for p in model.to_onnx().metadata_props}
    assert json.loads(meta["categories"])[0] == levels.tolist()
    assert json.loads(meta["categories"])[1] is None


def test_export_command_checks_a_model_with_text_columns(tmp_path):
    from click.testing import CliRunner

    from rebelboost.cli import main

    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    shop = rng.integers(0, 12, 600)
    frame = pd.DataFrame({"shop": np.array([f"s{i}" for i in range(12)])[shop],
                          "x": rng.normal(size=600)})
    frame["label"] = (shop % 3 + (frame["x"] > 0)) % 3
    frame.to_csv(tmp_path / "data.csv", index=False)
    run = CliRunner().invoke
    fitted = run(main, ["fit", str(tmp_path / "data.csv"), "-t", "label", "-q",
                        "--n-estimators", "10", "-o", str(tmp_path / "m.json")])
    assert fitted.exit_code == 0, fitted.output
    out = run(main, ["export", str(tmp_path / "m.json"), "--onnx", str(tmp_path / "m.onnx"),
                     "--check", str(tmp_path / "data.csv"), "-t", "label"])
    assert out.exit_code == 0, out.output
    assert "1 categorical as codes" in out.output and "600 labels identical" in out.output
