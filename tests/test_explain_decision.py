"""Why this decision: expected costs, runner-up and per-feature effects that add up."""

from __future__ import annotations

import numpy as np
import pytest

from rebelboost import RebelClassifier
from rebelboost.costs import proba_from_scores
from rebelboost.explain import _lead_gradient, explain_decision

COST = [[0, 1, 8], [1, 0, 1], [6, 1, 0]]


def _data(n=1200, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 5))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] + 0.5 * X[:, 2] > 0.3)
    X[::4, 1] = np.nan
    return X, np.array(["low", "mid", "high"])[y]


@pytest.fixture(scope="module")
def cost_model():
    X, y = _data()
    return RebelClassifier(30, cost_matrix=COST, random_state=0).fit(X, y), X


def test_cost_decision_effects_add_up(cost_model):
    model, X = cost_model
    assert model.cost_strategy_ == "posterior"
    expected = model.expected_cost(X[:40])
    for i in range(40):
        why = explain_decision(model, X[i])
        assert why.by_cost and why.decision == model.predict(X[i:i + 1])[0]
        order = np.argsort(expected[i], kind="stable")
        assert why.runner_up == model.classes_[order[1]]
        assert list(why.expected_costs.values()) == pytest.approx(expected[i], abs=1e-12)
        assert why.lead == pytest.approx(expected[i, order[1]] - expected[i, order[0]], abs=1e-12)
        assert sum(e.effect for e in why.effects) == pytest.approx(
            why.lead - why.baseline_lead, abs=1e-9)
        assert abs(why.residual) < 1e-9


def test_probabilities_of_very_negative_scores_keep_their_ratio():
    p = proba_from_scores(np.array([[-20.0, -21.0, -400.0]]))[0]
    assert p[0] / p[1] == pytest.approx(np.exp(2.0), rel=1e-12)  # sigmoid(2H) ~ exp(2H)
    assert 0 < p[2] < 1e-250  # sigmoid(-800) underflows to the floor, never to 0


def test_lead_gradient_is_the_derivative():
    rng = np.random.RandomState(1)
    H, w, temperature = rng.normal(0, 2, size=(6, 4)), rng.normal(size=4), 1.7
    lead = lambda H: proba_from_scores(H, temperature) @ w  # noqa: E731
    step = 1e-6
    numeric = np.stack([(lead(H + step * e) - lead(H - step * e)) / (2 * step)
                        for e in np.eye(4)], axis=1)
    np.testing.assert_allclose(_lead_gradient(H, temperature, w), numeric, atol=1e-8)


def test_score_decision_effects_are_exact_contribution_differences():
    X, y = _data(seed=2)
    model = RebelClassifier(20, random_state=0).fit(X, y)
    phi = model.contributions(X[:1])[0]
    why = explain_decision(model, X[0])
    k, j = (list(model.classes_).index(c) for c in (why.decision, why.runner_up))
    assert not why.by_cost and why.decision == model.predict(X[:1])[0]
    by_name = {e.feature: e.effect for e in why.effects}
    for i in range(5):
        assert by_name[f"x{i}"] == phi[i, k] - phi[i, j]
    assert why.lead == pytest.approx(phi[:, k].sum() - phi[:, j].sum(), abs=1e-12)


def test_explain_words_it_for_a_domain_expert(cost_model):
    model, X = cost_model
    text = str(model.explain(X[4], top=3))
    assert "least expected cost" in text and "expected cost of each decision" in text
    assert "For a typical case" in text and "towards" in text
    assert ("is missing" in text) == bool(np.isnan(X[4]).any())


def test_similarity_models_keep_their_learner_terms():
    X, y = _data(n=150)
    X = np.nan_to_num(X)
    model = RebelClassifier(5, weak_learner="similarity", random_state=0).fit(X, y)
    explanation = model.explain(X[0])
    assert explanation.decision is None and explanation.terms


def test_cli_explain_says_why(cost_model, tmp_path):
    from click.testing import CliRunner

    from rebelboost.cli import main

    model, X = cost_model
    model.save(tmp_path / "m.json")
    np.savez(tmp_path / "d.npz", X=X[:10])
    result = CliRunner().invoke(main, ["explain", str(tmp_path / "m.json"),
                                       str(tmp_path / "d.npz"), "--row", "2"])
    assert result.exit_code == 0, result.output
    assert str(explain_decision(model, X[2])) in result.output


def test_report_explains_example_decisions(cost_model):
    from rebelboost.report import render_report
    from rebelboost.report.decisions import example_rows

    model, X = cost_model
    _, y = _data()
    page = render_report(model, X[:300], y[:300])
    assert '<section id="why"><h2>Why these decisions</h2>' in page
    rows = example_rows(model, X[:300], y[:300])
    assert any("costs chose" in why for _, why in rows)
    for i, _ in rows:
        assert f"<h3>Row {i} " in page
    assert "least expected cost" in page
