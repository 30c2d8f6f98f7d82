"""Test error over many seeds for a few suite sets: is a gap seen over the suite's 5 seeds
more than the noise of its splits?

The suite (``bench_suite.py``) takes 5 stratified 75/25 splits a set; on its smallest sets
that is 15-38 test rows a split, so one misclassified row moves a seed's error by 3-7
points. Here each method fits the same ``--seeds`` splits (``bench_suite.split``, seeds 0, 1,
...); printed per set: each method's mean test error, and the defaults' paired difference
from each other method with its standard error over the seeds.

    python benchmarks/more_seeds.py --sets analcatdata_happiness,iris --seeds 50
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_suite import load, make, split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", required=True, help="comma-separated suite sets")
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--methods", default="rebel-default,rebel-trees,lightgbm",
                        help="comma-separated bench_suite methods, the first compared")
    args = parser.parse_args()
    methods = args.methods.split(",")
    print(f"{args.seeds} seeds; test error % (mean over seeds); "
          f"{methods[0]} minus each other method: mean (standard error), paired\n")
    print("| set | test rows | " + " | ".join(methods) + " | "
          + " | ".join(f"minus {m}" for m in methods[1:]) + " |")
    print("|---" * (2 + 2 * len(methods) - 1) + "|")
    for name in args.sets.split(","):
        X, y = load(name)
        errors = np.zeros((len(methods), args.seeds))
        for seed in range(args.seeds):
            X_train, X_test, y_train, y_test = split(X, y, seed)
            for i, method in enumerate(methods):
                model = make(method, seed).fit(X_train, y_train)
                errors[i, seed] = 100 * np.mean(model.predict(X_test) != y_test)
        means = " | ".join(f"{e:.2f}" for e in errors.mean(axis=1))
        gaps = errors[0] - errors[1:]
        diffs = " | ".join(f"{g.mean():+.2f} ({g.std(ddof=1) / np.sqrt(args.seeds):.2f})"
                           for g in gaps)
        print(f"| {name} | {len(y_test)} | {means} | {diffs} |", flush=True)


if __name__ == "__main__":
    main()
