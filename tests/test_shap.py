"""shap's TreeExplainer on a rebelboost model (the optional ``shap`` extra)."""

from __future__ import annotations

import numpy as np
import pytest

from rebelboost import RebelClassifier, shap_explanation, to_shap
from rebelboost.contributions import ContributionsUnavailable

shap = pytest.importorskip("shap")


@pytest.mark.parametrize("learner", ["vector_tree", "tree", "stump"])
def test_tree_explainer_equals_contributions(learner):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 6))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] + X[:, 2] > 0.5)
    X[::5, 2] = np.nan
    model = RebelClassifier(20, weak_learner=learner, random_state=0).fit(X, y)
    explainer = shap.TreeExplainer(to_shap(model))
    ours = model.contributions(X)
    np.testing.assert_allclose(explainer.shap_values(X), ours[:, :-1], rtol=0, atol=1e-9)
    np.testing.assert_allclose(explainer.expected_value, ours[0, -1], rtol=0, atol=1e-9)


def test_similarity_models_are_refused():
    rng = np.random.RandomState(0)
    X, y = rng.normal(size=(60, 3)), np.arange(60) % 2
    model = RebelClassifier(3, weak_learner="similarity", random_state=0).fit(X, y)
    with pytest.raises(ContributionsUnavailable, match="similarit"):
        to_shap(model)


def test_categorical_models_go_to_shap_as_an_explanation():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    n = 400
    colour = rng.integers(0, 7, n)
    X = pd.DataFrame({"colour": pd.Categorical(np.array(list("abcdefg"))[colour]),
                      "u": rng.normal(size=n)})
    y = (colour % 3 + (X["u"] > 0.5)) % 3
    model = RebelClassifier(6, max_leaves=6, random_state=0).fit(X, y)
    assert np.isnan(model.model_.learners.threshold).any()
    with pytest.raises(ContributionsUnavailable, match="shap_explanation"):
        to_shap(model)
    explanation = shap_explanation(model, X.iloc[:20])
    ours = model.contributions(X.iloc[:20])
    np.testing.assert_array_equal(explanation.values, ours[:, :-1])
    np.testing.assert_array_equal(explanation.base_values, ours[:, -1])
    np.testing.assert_array_equal(explanation.data[:, 0], model.encode(X.iloc[:20])[:, 0])
    assert explanation.display_data[0, 0] == X["colour"].iloc[0]
    assert list(explanation.feature_names) == ["colour", "u"]
