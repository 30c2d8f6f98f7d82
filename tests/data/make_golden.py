"""Writes the golden files of ``tests/test_golden.py``.

For every booster x weak learner below and three data slices, it fits a model, saves it as a
model file (``golden/<case>.json.gz``) and stores its ``decision_function`` on held-out rows
(``golden/<case>.npz``). The test refits and reloads and asserts the same numbers: a change
that alters any model, or stops an old model file loading, fails it.

Golden files are written once and then kept: later format versions must load them through the
migrations. Most cases were written with format version 1; the vector-leaf tree cases (the
default learner since) with format version 2. Name the cases to write only those:

    python tests/data/make_golden.py rebel_vtree rebel_vtree_sampled   # from the repository root

A change that alters a case's model on purpose (its reason stated in ``REFIT_REASONS``)
leaves the golden file as it was (old files must still load and predict as written) and
writes what a refit now gives beside it, in ``golden/refits/``, which the refit tests read:

    python tests/data/make_golden.py --refits rebel_vtree rebel_vtree_sampled
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from rebelboost import (
    AdaBoostMHClassifier,
    MCBoostClassifier,
    OneVsAllAdaBoostClassifier,
    RebelClassifier,
)

HERE = Path(__file__).parent
GOLDEN = HERE / "golden"
REFITS = GOLDEN / "refits"

# Cases whose refits were changed on purpose since their golden files were written, and why
# (their refit references are in ``REFITS``).
REFIT_REASONS = {
    "rebel_vtree": "the rows' weight channels kept in float32 (issue 27, stop 62): leaf "
                   "values move by up to 3e-6 relative, the splits and labels are the same",
    "rebel_vtree_sampled": "the same",
}

# Each data slice: train rows, test rows (float64); glass gets NaNs in 5% of its entries.
DATASETS = ("pendigits", "vowel", "glass_nan")

# The RebelClassifier cases pin min_data_in_bin=1 (a bin per distinct value): the files were
# written before a feature got at most one bin per 5 training rows by default (stop 29).
CASES = {
    "rebel_stump": (RebelClassifier, dict(n_estimators=30, weak_learner="stump",
                                          min_data_in_bin=1)),
    # The paper's binary trees were the default weak learner when these files were written.
    "rebel_tree2": (RebelClassifier, dict(n_estimators=25, weak_learner="tree", max_depth=2,
                                         min_data_in_bin=1)),
    "rebel_tree3_qb": (RebelClassifier, dict(n_estimators=15, weak_learner="tree", max_depth=3,
                                             quickboost=True, min_data_in_bin=1)),
    "rebel_tree2_cost": (RebelClassifier,
                         dict(n_estimators=20, weak_learner="tree", max_depth=2,
                              cost_matrix="ordinal", subcosts="thesis", cost_strategy="loss",
                              min_data_in_bin=1)),
    "rebel_tree2_es": (RebelClassifier, dict(n_estimators=40, weak_learner="tree", max_depth=2,
                                             early_stopping=True, n_iter_no_change=5,
                                             validation_metric="loss", min_data_in_bin=1)),
    # The default learner (format 2), every parameter that shapes it pinned so that a change of
    # defaults does not change the case.
    # (max_depth=-1: no depth limit, as these files were written before small data sets got
    # depth-2 trees by default)
    "rebel_vtree": (RebelClassifier, dict(n_estimators=20, weak_learner="vector_tree",
                                          max_depth=-1, max_leaves=31, min_samples_leaf=20,
                                          leaf_smoothing=1.0,
                                          learning_rate=0.3, max_bins=255,
                                          min_data_in_bin=1)),
    "rebel_vtree_sampled": (RebelClassifier,
                            dict(n_estimators=15, weak_learner="vector_tree", max_depth=-1,
                                 max_leaves=12,
                                 min_samples_leaf=5, leaf_smoothing=1.0, learning_rate=0.3,
                                 max_bins=63, subsample=0.7, sampling="uniform",
                                 colsample_bytree=0.6, min_data_in_bin=1)),
    "rebel_similarity": (RebelClassifier, dict(n_estimators=25, weak_learner="similarity")),
    "mh_stump": (AdaBoostMHClassifier, dict(n_estimators=30)),
    "mh_tree2": (AdaBoostMHClassifier, dict(n_estimators=20, weak_learner="tree", max_depth=2)),
    "mh_unfactorized": (AdaBoostMHClassifier, dict(n_estimators=10, factorized=False)),
    "mcboost_cd": (MCBoostClassifier, dict(n_estimators=30)),
    "mcboost_gd2": (MCBoostClassifier, dict(n_estimators=15, algorithm="gd", max_depth=2)),
    "ova_stump": (OneVsAllAdaBoostClassifier, dict(n_estimators=5)),
    "ova_tree2": (OneVsAllAdaBoostClassifier, dict(n_estimators=4, max_depth=2)),
}


def load(name: str):
    """(X_train, y_train, X_test) of a data slice stored in ``golden/data.npz``."""
    with np.load(GOLDEN / "data.npz") as d:
        return d[f"{name}_X_train"], d[f"{name}_y_train"], d[f"{name}_X_test"]


def make_params(params: dict, n_classes: int) -> dict:
    params = dict(params, random_state=0)
    if params.get("cost_matrix") == "ordinal":
        i = np.arange(n_classes)
        params["cost_matrix"] = np.abs(i[:, None] - i[None, :]).astype(float)
    return params


def skip(case: str, dataset: str) -> bool:
    """Similarity learners need complete rows."""
    return case == "rebel_similarity" and dataset == "glass_nan"


def _write_data() -> None:
    from rebelboost.datasets import load_pendigits

    shared = HERE.parents[1].parent / "shared" / "data"
    rng = np.random.RandomState(0)
    out = {}
    p = load_pendigits()
    out["pendigits"] = (p.X_train[:600], p.y_train[:600], p.X_test[:300])
    with np.load(shared / "vowel.npz") as v:
        out["vowel"] = (v["X_train"], v["y_train"], v["X_test"][:200])
    with np.load(shared / "glass.npz") as g:
        X, y = g["X"].astype(np.float64), g["y"]
        order = rng.permutation(len(y))
        X, y = X[order], y[order]
        X[rng.rand(*X.shape) < 0.05] = np.nan
        out["glass_nan"] = (X[:150], y[:150], X[150:])
    arrays = {}
    for name, (Xtr, ytr, Xte) in out.items():
        arrays[f"{name}_X_train"] = np.asarray(Xtr, dtype=np.float64)
        arrays[f"{name}_y_train"] = np.asarray(ytr, dtype=np.int64)
        arrays[f"{name}_X_test"] = np.asarray(Xte, dtype=np.float64)
    np.savez_compressed(GOLDEN / "data.npz", **arrays)


def reference(case: str, dataset: str) -> Path:
    """The stem of what a refit of the case must give: its refit reference where the case
    was changed on purpose (:data:`REFIT_REASONS`), else its golden file."""
    folder = REFITS if case in REFIT_REASONS else GOLDEN
    return folder / f"{case}-{dataset}"


def main(cases: list[str]) -> None:
    refits = "--refits" in cases
    cases = [c for c in cases if c != "--refits"]
    unknown = set(cases) - set(CASES)
    if unknown:
        raise SystemExit(f"unknown cases: {sorted(unknown)}")
    if refits and not set(cases) <= set(REFIT_REASONS):
        raise SystemExit("--refits: name cases of REFIT_REASONS only, with their reason")
    out = REFITS if refits else GOLDEN
    out.mkdir(exist_ok=True)
    if not (GOLDEN / "data.npz").exists():
        _write_data()
    for dataset in DATASETS:
        X, y, X_test = load(dataset)
        for case, (cls, params) in CASES.items():
            if (cases and case not in cases) or skip(case, dataset):
                continue
            model = cls(**make_params(params, len(np.unique(y)))).fit(X, y)
            stem = f"{case}-{dataset}"
            model.save(out / f"{stem}.json.gz")
            np.savez_compressed(out / f"{stem}.npz",
                                decision=model.decision_function(X_test),
                                predict=model.predict(X_test))
            print(stem, model.n_estimators_)


if __name__ == "__main__":
    main(sys.argv[1:])
