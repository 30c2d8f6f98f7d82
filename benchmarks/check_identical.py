"""Refactors keep every model bit for bit: fits a fixed set of models and compares them to a
reference written by the code before the refactor.

    python benchmarks/check_identical.py --write /tmp/ref      # at the commit before
    python benchmarks/check_identical.py --check /tmp/ref      # after: byte-identical or fails

For every case it saves the model file (uncompressed JSON) and the ``decision_function`` on
held-out rows; ``--check`` compares the files byte for byte and the decision values exactly.
``--cases`` runs a subset (names as listed by ``--list``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from rebelboost import (
    AdaBoostMHClassifier,
    MCBoostClassifier,
    OneVsAllAdaBoostClassifier,
    RebelClassifier,
)

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def _data():
    out = {}
    with np.load(DATA / "pendigits.npz") as d:
        out["pendigits"] = (d["X_train"][:3000].astype(float), d["y_train"][:3000],
                            d["X_test"][:500].astype(float))
    with np.load(DATA / "vowel.npz") as d:
        out["vowel"] = (d["X_train"].astype(float), d["y_train"], d["X_test"].astype(float))
    with np.load(DATA / "glass.npz") as d:
        rng = np.random.RandomState(0)
        X = d["X"].astype(float)
        X[rng.rand(*X.shape) < 0.08] = np.nan
        idx = rng.permutation(len(X))
        out["glass_nan"] = (X[idx[:160]], d["y"][idx[:160]], X[idx[160:]])
    X, y, Xt = out["pendigits"]
    rng = np.random.RandomState(1)
    # mostly zeros: the binned data takes its sparse layout (the estimators take dense X)
    Xs = np.where(rng.rand(*X.shape) < 0.85, 0.0, X)
    out["sparse"] = (Xs[:1500], y[:1500], np.where(rng.rand(*Xt.shape) < 0.85, 0.0, Xt))
    return out


def _cost(y, k, seed=0):
    cost = np.random.RandomState(seed).uniform(0.2, 3.0, size=(len(y), k))
    cost[np.arange(len(y)), y] = 0.0
    return cost


R = RebelClassifier
CASES = {  # name: (factory, data sets, fit keyword factory)
    "vt_default": (lambda: R(40, random_state=0), ("pendigits", "vowel", "glass_nan", "sparse")),
    "vt_sampled": (lambda: R(30, subsample=0.7, colsample_bytree=0.6, random_state=3),
                   ("pendigits", "glass_nan", "sparse")),
    "vt_goss": (lambda: R(30, subsample=0.5, sampling="goss", random_state=2),
                ("pendigits", "vowel")),
    "vt_es": (lambda: R(200, early_stopping=True, n_iter_no_change=5, random_state=0),
              ("pendigits", "vowel")),
    "vt_cost": (lambda: R(30, random_state=0), ("vowel", "glass_nan"), "sample_cost"),
    "vt_small": (lambda: R(30, max_leaves=4, min_samples_leaf=3, max_depth=3, random_state=0),
                 ("pendigits", "vowel", "glass_nan")),
    "vt_weighted": (lambda: R(20, max_leaves=63, min_samples_leaf=1, random_state=0),
                    ("vowel", "glass_nan"), "sample_weight"),
    "tree2": (lambda: R(20, weak_learner="tree", max_depth=2, random_state=0),
              ("pendigits", "glass_nan", "sparse")),
    "tree3_qb": (lambda: R(15, weak_learner="tree", max_depth=3, quickboost=True,
                           random_state=0), ("pendigits", "glass_nan", "sparse")),
    "stump": (lambda: R(30, weak_learner="stump", random_state=0), ("vowel", "sparse")),
    "stump_qb": (lambda: R(30, weak_learner="stump", quickboost=True, random_state=0),
                 ("pendigits", "glass_nan")),
    "mh_stump": (lambda: AdaBoostMHClassifier(30), ("pendigits", "glass_nan", "sparse")),
    "mh_tree2": (lambda: AdaBoostMHClassifier(15, weak_learner="tree", max_depth=2),
                 ("vowel",)),
    "mcboost_cd": (lambda: MCBoostClassifier(20), ("pendigits", "glass_nan")),
    "mcboost_gd2": (lambda: MCBoostClassifier(10, algorithm="gd", max_depth=2), ("vowel",)),
    "ova_stump": (lambda: OneVsAllAdaBoostClassifier(5), ("pendigits", "glass_nan")),
    "ova_tree2": (lambda: OneVsAllAdaBoostClassifier(4, max_depth=2), ("vowel", "sparse")),
}


def _fit(case, dataset, data):
    factory, _, *extra = CASES[case]
    X, y, Xt = data[dataset]
    kwargs = {}
    if "sample_cost" in extra:
        kwargs["sample_cost"] = _cost(y, len(np.unique(y)))
    if "sample_weight" in extra:
        kwargs["sample_weight"] = np.random.RandomState(5).uniform(0.1, 2.0, X.shape[0])
    model = factory().fit(X, y, **kwargs)
    return model, model.decision_function(Xt)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", type=Path)
    mode.add_argument("--check", type=Path)
    mode.add_argument("--list", action="store_true")
    p.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    args = p.parse_args()
    pairs = [(c, d) for c in args.cases for d in CASES[c][1]]
    if args.list:
        print("\n".join(f"{c}-{d}" for c, d in pairs))
        return 0
    data = _data()
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        for case, dataset in pairs:
            name = f"{case}-{dataset}"
            model, decision = _fit(case, dataset, data)
            folder = args.write if args.write else Path(tmp)
            folder.mkdir(parents=True, exist_ok=True)
            model.save(folder / f"{name}.json")
            np.save(folder / f"{name}.npy", decision)
            if args.check:
                same_file = ((args.check / f"{name}.json").read_bytes()
                             == (folder / f"{name}.json").read_bytes())
                same_values = np.array_equal(np.load(args.check / f"{name}.npy"), decision)
                ok = same_file and same_values
                if not ok:
                    failed.append(name)
                print(f"{name:28s} file {'same' if same_file else 'DIFFERS'}, decision "
                      f"{'same' if same_values else 'DIFFERS'}", flush=True)
            else:
                print(f"{name:28s} written", flush=True)
    if failed:
        print(f"{len(failed)} differ: {failed}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
