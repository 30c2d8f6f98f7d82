"""The compiled tree against the Python grower's threads, to place the compiled grower's row
limit (``learners/compiled_grower.py``, ``_MAX_ROWS``).

In one process, the defaults are fitted with the compiled grower wherever its other
conditions hold (no row limit) and with the Python grower only, alternately, 3 times each
with 2 threads, on suite sets (seed-0 training split) and on synthetic sets of N rows x 20
dense float32 features and 4 classes (30 trees). Prints the best CPU and wall time of each
and their ratio, and whether the two fits predict the same.

    python benchmarks/compiled_tree_limit.py --sets dna,satimage,connect4 --synthetic 60000,100000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from bench_suite import load, split

from rebelboost import RebelClassifier
from rebelboost.learners import compiled_grower
from rebelboost.learners.row_set import LocalRows

PYTHON_GROWER = compiled_grower.applies


def without_limit(grower, rows) -> bool:
    return (type(rows) is LocalRows and rows.quantized is None and not len(grower.categories)
            and not grower._big_histograms
            and grower.histograms_in_budget() > grower.options.max_leaves)


def compare(name: str, X, y, n_estimators=None) -> None:
    times = {"python": [], "compiled": []}
    scores = {}
    for _ in range(3):
        for label, rule in (("python", lambda grower, rows: False),
                            ("compiled", without_limit)):
            compiled_grower.applies = rule
            model = RebelClassifier(n_estimators, n_jobs=2, random_state=0)
            t, c = time.perf_counter(), time.process_time()
            model.fit(X, y)
            times[label].append((time.process_time() - c, time.perf_counter() - t))
            scores[label] = model.predict_proba(X[:2000])
    compiled_grower.applies = PYTHON_GROWER
    p, c = np.min(times["python"], axis=0), np.min(times["compiled"], axis=0)
    same = np.array_equal(scores["python"], scores["compiled"])
    print(f"| {name} | {len(y)} | {p[0]:.3f} / {p[1]:.3f} | {c[0]:.3f} / {c[1]:.3f} | "
          f"{c[0] / p[0]:.2f} / {c[1] / p[1]:.2f} | {same} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="", help="comma-separated suite sets")
    parser.add_argument("--synthetic", default="", help="comma-separated row counts")
    args = parser.parse_args()
    print("| data | rows | Python grower CPU / wall (s) | compiled CPU / wall (s) | "
          "compiled / Python CPU / wall | same model |")
    print("|---|---|---|---|---|---|")
    for name in filter(None, args.sets.split(",")):
        X, y = load(name)
        X_tr, _, y_tr, _ = split(X, y, 0)
        compare(name, X_tr, y_tr)
    for n in filter(None, args.synthetic.split(",")):
        rng = np.random.default_rng(0)
        X = rng.normal(size=(int(n), 20)).astype(np.float32)
        y = np.digitize(X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(0, 1, int(n)), [-1, 0, 1])
        compare(f"synthetic {n} x 20", X, y, 30)


if __name__ == "__main__":
    main()
