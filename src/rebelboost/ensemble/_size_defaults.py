"""Defaults that depend on the training set's size: the shape of REBEL's vector-leaf trees
on small data (issue 28)."""

from __future__ import annotations

#: Training rows up to which 'vector_tree' takes the small-data shape for the parameters left
#: at None: 500 depth-2 trees at learning rate 1 with leaves of any size (the paper's shape,
#: with vector leaves). Chosen on the suite's 17 sets of at most 1,400 rows, 5 seeds: mean
#: rank 3.38 among 8 methods against 4.68 for the larger trees (BENCHMARKS.md, issue 28).
SMALL_DATA_ROWS = 1000

SIZED = ("n_estimators", "max_depth", "learning_rate", "min_samples_leaf")


def resolve_size_params(estimator, n_rows: int) -> dict:
    """The sized parameters of a ``RebelClassifier`` in effect for ``n_rows`` training rows:
    each left at None resolved (``max_depth`` -1: no limit), each set explicitly kept."""
    vector = estimator.weak_learner == "vector_tree"
    small = vector and n_rows <= SMALL_DATA_ROWS
    chosen = {"n_estimators": 500 if small else 100,
              "max_depth": 2 if small else -1 if vector else 2,
              "learning_rate": 1.0 if small or not vector else 0.3,
              "min_samples_leaf": 1 if small else 10}
    resolved = {name: chosen[name] if getattr(estimator, name) is None
                else getattr(estimator, name) for name in SIZED}
    if resolved["max_depth"] == -1 and estimator.weak_learner == "tree":
        raise ValueError("max_depth=-1 (no limit) is for 'vector_tree'; the paper's trees "
                         "grow layer by layer to a finite depth")
    return resolved
