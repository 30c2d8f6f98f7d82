"""The category search's defaults (issue 30): variants of its regularisation, native method only.

Each variant sets fields of :class:`rebelboost.learners.vector_tree.VectorTreeOptions` (the
estimator has no parameters for them); the sets and splits are ``bench_categorical.py``'s.
Prints mean rank among the variants and mean test error over (set, seed)::

    nice -n 5 python benchmarks/bench_categorical_variants.py --seeds 2
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.stats import rankdata

sys.path.insert(0, str(Path(__file__).parent))
import bench_categorical as bc  # noqa: E402

VARIANTS = {
    "default": {},
    "cat_l2=0": {"cat_l2": 0.0},
    "light": {"cat_smooth": 1.0, "cat_l2": 1.0, "min_data_per_category": 1.0},
    "smooth10-min1": {"cat_smooth": 10.0, "min_data_per_category": 1.0},
    "no-cap": {"max_cat_threshold": 1000},
    "cat_l2=30": {"cat_l2": 30.0},
    # stop 37, krkopt (native 12.55% against integer codes' 11.57%): each regulariser off
    "cat_smooth=0": {"cat_smooth": 0.0},
    "min1": {"min_data_per_category": 1.0},
    "unregularised": {"cat_l2": 0.0, "cat_smooth": 0.0, "min_data_per_category": 1.0},
}


def error(name: str, seed: int, fields: dict) -> float:
    from rebelboost import RebelClassifier

    train, test, codes, classes, y_te = bc.native_split(name, seed)
    model = RebelClassifier(n_jobs=bc.THREADS, random_state=seed)
    options = model._vector_tree_options
    model._vector_tree_options = lambda: _with(options(), fields)
    model.fit(train, codes)
    return float(np.mean(classes[model.predict(test)] != y_te))


def _with(options, fields: dict):
    for key, value in fields.items():
        setattr(options, key, value)
    return options


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default=",".join(
        s for s in bc.SUITE_SETS + ("synthetic300",) if s != "krkopt"))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="comma-separated names of VARIANTS to run")
    args = parser.parse_args()
    variants = {name: VARIANTS[name] for name in args.variants.split(",")}
    errors = []
    for name in args.sets.split(","):
        for seed in range(args.seeds):
            errors.append([error(name, seed, f) for f in variants.values()])
            print(name, seed, " ".join(f"{e:.4f}" for e in errors[-1]), flush=True)
    errors = np.array(errors)
    ranks = np.array([rankdata(row) for row in errors])
    for i, name in enumerate(variants):
        print(f"{name:15s} mean rank {ranks[:, i].mean():.2f}  mean error "
              f"{100 * errors[:, i].mean():.2f}%")


if __name__ == "__main__":
    main()
