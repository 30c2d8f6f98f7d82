"""scikit-learn's estimator checks on RebelClassifier."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from rebelboost import RebelClassifier

# Checks expected to fail, with the reason (none so far).
EXPECTED_FAILURES: dict[str, str] = {}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILURES


@parametrize_with_checks(
    [RebelClassifier(n_estimators=10, random_state=0),
     RebelClassifier(n_estimators=10, weak_learner="stump", random_state=0)],
    expected_failed_checks=_expected_failed_checks,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
