"""The leaf covers' cost: routing the training rows through every tree after the fit (what
``fit`` did before stop 42) against summing each tree's covers from its rows' leaves as it is
grown (what it does now), on the accuracy benchmark's training sets, default models.

Both give the same covers bit for bit (``tests/test_contributions.py``); this times them:
``leaf_covers`` on the fitted model, and ``stage_covers`` over the leaves each tree's
training rows took (taken from the model's own routing, as the booster has them at each
stage), best of 3, beside the default fit's wall time.

    python benchmarks/covers_pass.py satimage letter connect4 sleep
"""

from __future__ import annotations

import sys
import time

import numpy as np
from bench_accuracy import load

from rebelboost import RebelClassifier
from rebelboost.tree_tables import leaf_covers, stage_covers


def best_of(f, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times)


def time_both(learners, X: np.ndarray, weight: np.ndarray) -> tuple[float, float]:
    leaves = learners.leaves(X)  # (each tree's slot of every row, as training had them)
    slots = [np.ascontiguousarray(leaves[:, t], dtype=np.intp) for t in range(len(learners))]
    routed = best_of(lambda: leaf_covers(learners, X, weight))
    summed = best_of(lambda: [stage_covers(s, weight, learners.n_slots) for s in slots])
    return routed, summed


def main() -> None:
    print("| set | rows | fit (s) | routing after the fit (s) | summed per tree (s) |")
    print("|---|---|---|---|---|")
    for name in sys.argv[1:]:
        X, y, _, _ = load(name)
        X = np.asarray(X, dtype=np.float64)
        RebelClassifier(3, n_jobs=2).fit(X, y)  # (compiles)
        start = time.perf_counter()
        model = RebelClassifier(n_jobs=2).fit(X, y)
        fit = time.perf_counter() - start
        routed, summed = time_both(model.model_.learners, X, np.ones(len(X)))
        print(f"| {name} | {len(X)} | {fit:.2f} | {routed:.3f} | {summed:.3f} |", flush=True)


if __name__ == "__main__":
    main()
