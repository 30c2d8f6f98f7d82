"""shap's TreeExplainer on a rebelboost model (the optional ``shap`` extra)."""

from __future__ import annotations

import numpy as np
import pytest

from rebelboost import RebelClassifier, to_shap
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
