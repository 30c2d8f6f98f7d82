"""Cost-sensitive REBEL vs the two-step approach as the number of stumps grows.

Three data sets and cost matrices drawn as in ``rebelboost reproduce cost-sensitive``; prints
the mean test and training cost of both approaches at 30, 100, 300 and 1000 stumps.
Run: ``python benchmarks/cost_sensitive_iterations.py`` (about a minute on 2 cores).
"""

import numpy as np

from rebelboost import RebelClassifier
from rebelboost.experiments.cost_sensitive import (
    _min_expected_cost,
    make_gaussian_mixture,
    random_cost_matrix,
)
from rebelboost.metrics import mean_cost


def _costs(neutral, costly, cost, X, y) -> tuple[float, float]:
    """Mean cost of cost-sensitive REBEL and of the two-step decision on (X, y)."""
    classes = neutral.classes_
    two_step = _min_expected_cost(neutral.predict_proba(X), cost, classes)
    return (mean_cost(y, costly.predict(X), cost, classes),
            mean_cost(y, two_step, cost, classes))


def main() -> None:
    rng = np.random.default_rng(2016)
    print("set K stumps | test: cost-sensitive two-step | train: cost-sensitive two-step")
    for s in range(3):
        n_classes, n_clusters = int(rng.integers(3, 6)), int(rng.integers(1, 4))
        X, y, centers = make_gaussian_mixture(rng, n_classes, n_clusters, 1000)
        X_test, y_test, _ = make_gaussian_mixture(rng, n_classes, n_clusters, 2000, centers)
        cost = random_cost_matrix(rng, np.bincount(y) / len(y))
        for n_stumps in (30, 100, 300, 1000):
            neutral = RebelClassifier(n_stumps, weak_learner="stump", n_jobs=1).fit(X, y)
            costly = RebelClassifier(n_stumps, weak_learner="stump", cost_matrix=cost,
                                     cost_strategy="loss", n_jobs=1).fit(X, y)
            test, train = (_costs(neutral, costly, cost, X_, y_)
                           for X_, y_ in ((X_test, y_test), (X, y)))
            print(f"{s + 1} {n_classes} {n_stumps:5d} | test: {test[0]:.4f} {test[1]:.4f} | "
                  f"train: {train[0]:.4f} {train[1]:.4f}")


if __name__ == "__main__":
    main()
