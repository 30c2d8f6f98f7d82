"""scikit-learn's estimator checks on RebelClassifier."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from rebelboost import RebelClassifier

# Checks expected to fail, with the reason (none for trees and stumps).
SIMILARITY_FAILURES: dict[str, str] = {
    "check_sample_weight_equivalence_on_dense_data": (
        "localized similarities search over rows: a repeated row is a coincident neighbour at "
        "distance 0 (it changes the one-point radii and the feature scaling), a weight is not"
    ),
}


def _expected_failed_checks(estimator):
    return SIMILARITY_FAILURES if estimator.weak_learner == "similarity" else {}


@parametrize_with_checks(
    [RebelClassifier(n_estimators=10, random_state=0),
     RebelClassifier(n_estimators=10, weak_learner="stump", random_state=0),
     RebelClassifier(n_estimators=10, weak_learner="vector_tree", random_state=0),
     RebelClassifier(n_estimators=10, weak_learner="similarity", random_state=0)],
    expected_failed_checks=_expected_failed_checks,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
