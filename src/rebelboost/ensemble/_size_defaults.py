"""Defaults that depend on the training set's size: the shape of REBEL's vector-leaf trees
on small and on large data (issue 28)."""

from __future__ import annotations

#: Training rows up to which 'vector_tree' takes the small-data shape for the parameters left
#: at None: 500 depth-2 trees at learning rate 1 with leaves of any size (the paper's shape,
#: with vector leaves). Chosen on the suite's 17 sets of at most 1,400 rows, 5 seeds: mean
#: rank 3.38 among 8 methods against 4.68 for the larger trees (BENCHMARKS.md, issue 28).
SMALL_DATA_ROWS = 1000

#: Training rows above which 'vector_tree' grows 63 leaves instead of 31 (``max_leaves`` left
#: at None). Chosen on the suite's 7 sets above 10,000 rows (krkopt 17.3 -> 11.6% test error,
#: letter, connect4 and sleep lower, shuttle equal, fars +0.2 points; MNIST 1.83 -> 1.56%) with
#: LightGBM's time to its own error no worse (benchmarks/bench_accuracy.py; BENCHMARKS.md,
#: issue 28); 127 leaves erred less again but cost up to 2.8x the time of 31 on MNIST. Below
#: it, 63 leaves erred more on the mid-sized sets (optdigits, pendigits). The threshold is
#: scikit-learn's for early stopping ('auto').
LARGE_DATA_ROWS = 10_000

#: Value bins per feature of 'vector_tree' fits of at most :data:`LARGE_DATA_ROWS` training
#: rows (``max_bins`` left at None; 255 above, as LightGBM's ``max_bin``). Chosen on the
#: suite's 13 sets of at most 10,000 training rows whose binning it changes, 3-5 seeds
#: (benchmarks/max_bins_sweep.py; BENCHMARKS.md, "127 bins up to 10,000 rows"): 127 bins
#: erred less on 8 and more on 5 (mean 11.81% against 11.78%), in 0.74x the fit CPU time
#: (0.80x wall; geometric means), since a leaf's split scan scores every bin and is most of
#: a fit there; 63 bins erred more on 11 of 18 (the thyroid sets' lab values need their fine
#: thresholds). The larger sets were not measured, so they keep 255.
MID_DATA_BINS = 127

#: Sample weight from which a category of a categorical column is placed in the orders
#: of a category-set split (lighter ones stay together on one side): LightGBM's
#: ``min_data_per_group`` scaled to small data, and never above a leaf's own minimum, so the
#: small-data shape (leaves of any size) splits off a category of one row as it would a leaf
#: of one row. On the categorical benchmark's sets of at most 1,000 training rows, 5 against 1
#: (BENCHMARKS.md, "Categorical features", stop 25).
CATEGORY_MINIMUM = 5.0

SIZED = ("n_estimators", "max_depth", "learning_rate", "min_samples_leaf", "max_leaves")

#: The smooth alternative to the small-data shape that a cost route weighs out of fold
#: (:func:`smooth_alternative`): LightGBM's defaults (100 trees of 31 leaves at rate 0.1,
#: leaves of at least 20 rows). The small-data shape's sharp trees err less on most of the
#: suite's small sets (20.8% mean error against 24.6% for this shape over 19 sets, 5 seeds:
#: not a default), but on smooth low-dimensional data they overfit: on the cost benchmark's
#: known 2-D mixtures (1,000 rows) this shape erred 16.7% against 18.1%, and its route cost
#: 1.23x the Bayes risk against 1.55x (BENCHMARKS.md, issue 29, stop 37).
SMOOTH_SHAPE = {"n_estimators": 100, "max_depth": -1, "learning_rate": 0.1,
                "min_samples_leaf": 20, "max_leaves": 31}


def resolve_size_params(estimator, n_rows: int) -> dict:
    """The sized parameters of a ``RebelClassifier`` in effect for ``n_rows`` training rows
    (:data:`SIZED` and ``max_bins``): each left at None resolved (``max_depth`` -1: no
    limit), each set explicitly kept."""
    vector = estimator.weak_learner == "vector_tree"
    small = vector and n_rows <= SMALL_DATA_ROWS
    chosen = {"n_estimators": 500 if small else 100,
              "max_depth": 2 if small else -1 if vector else 2,
              "learning_rate": 1.0 if small or not vector else 0.3,
              "min_samples_leaf": 1 if small else 10,
              "max_leaves": 63 if vector and n_rows > LARGE_DATA_ROWS else 31}
    resolved = {name: chosen[name] if getattr(estimator, name) is None
                else getattr(estimator, name) for name in SIZED}
    resolved["max_bins"] = (estimator.max_bins if estimator.max_bins is not None
                            else MID_DATA_BINS if vector and n_rows <= LARGE_DATA_ROWS else 255)
    if resolved["max_depth"] == -1 and estimator.weak_learner == "tree":
        raise ValueError("max_depth=-1 (no limit) is for 'vector_tree'; the paper's trees "
                         "grow layer by layer to a finite depth")
    return resolved


def category_minimum(min_samples_leaf: int) -> float:
    """``min_data_per_category`` for trees whose leaves hold at least ``min_samples_leaf``."""
    return float(min(CATEGORY_MINIMUM, min_samples_leaf))


def smooth_alternative(estimator, n_rows: int) -> dict | None:
    """:data:`SMOOTH_SHAPE` where ``estimator`` (a ``RebelClassifier``) takes the small-data
    shape from its defaults alone (vector-leaf trees, at most :data:`SMALL_DATA_ROWS` rows,
    every sized parameter left at None); else None: a shape the user chose is kept."""
    if (getattr(estimator, "weak_learner", None) != "vector_tree" or n_rows > SMALL_DATA_ROWS
            or any(getattr(estimator, name) is not None for name in SIZED)):
        return None
    return dict(SMOOTH_SHAPE)
