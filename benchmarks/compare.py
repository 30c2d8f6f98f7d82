"""Every booster on the same data with the same budget of weak learners.

The budget is the number of weak learners T: REBEL, AdaBoost.MH and MCBoost add one per
iteration; one-vs-all AdaBoost gets T / K rounds per class so its total is also T. Official
train/test splits from ``../shared/data``; prints test error (%) and fit time (s) as markdown.

    python benchmarks/compare.py --datasets pendigits satimage --learners 200 --depth 2
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def boosters(budget: int, depth: int, n_classes: int, n_jobs: int) -> dict:
    from rebelboost import (
        AdaBoostMHClassifier,
        MCBoostClassifier,
        OneVsAllAdaBoostClassifier,
        RebelClassifier,
    )

    weak = "stump" if depth == 1 else "tree"
    return {
        "REBEL": RebelClassifier(budget, weak_learner=weak, max_depth=depth, n_jobs=n_jobs),
        "AdaBoost.MH": AdaBoostMHClassifier(budget, weak_learner=weak, max_depth=max(depth, 1),
                                            n_jobs=n_jobs),
        "CD-MCBoost": MCBoostClassifier(budget, algorithm="cd", max_depth=depth, n_jobs=n_jobs),
        "GD-MCBoost": MCBoostClassifier(budget, algorithm="gd", max_depth=depth, n_jobs=n_jobs),
        "one-vs-all AdaBoost": OneVsAllAdaBoostClassifier(max(1, budget // n_classes),
                                                          max_depth=depth, n_jobs=n_jobs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["pendigits", "satimage", "optdigits"])
    parser.add_argument("--learners", type=int, default=200, help="weak learners per model")
    parser.add_argument("--depth", type=int, default=1, help="1: stumps, 2+: trees")
    parser.add_argument("--n-jobs", type=int, default=1)
    args = parser.parse_args()

    header = None
    rows = []
    for name in args.datasets:
        d = np.load(DATA / f"{name}.npz")
        X, y, X_test, y_test = d["X_train"], d["y_train"], d["X_test"], d["y_test"]
        models = boosters(args.learners, args.depth, len(np.unique(y)), args.n_jobs)
        header = header or list(models)
        cells = []
        for label, model in models.items():
            start = time.perf_counter()
            model.fit(X, y)
            seconds = time.perf_counter() - start
            err = 100 * np.mean(model.predict(X_test) != y_test)
            cells.append(f"{err:.2f} ({seconds:.1f}s)")
            print(f"{name:10s} {label:22s} {cells[-1]}", flush=True)
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\n{args.learners} weak learners of depth {args.depth}; test error % (fit time)\n")
    print("| data set | " + " | ".join(header) + " |")
    print("|---|" + "---|" * len(header))
    print("\n".join(rows))


if __name__ == "__main__":
    main()
