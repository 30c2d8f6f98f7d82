"""Fit time of the default cost route against the plain fit (issue 29's <= 3x target).

For each set: the training split of ``cost_suite.load_split`` (seed 0, at most ``--max-train``
rows), ``RebelClassifier()`` and ``RebelClassifier(cost_matrix=hedge)`` fitted alternately
``--repeats`` times with ``--n-jobs`` threads (1 by default; with more, the cost route fits
its folds side by side); the best wall time and the best process CPU time of each (the machine
is shared, so the best is the least disturbed).

    nice -n 10 python benchmarks/cost_fit_time.py vehicle mfeat_factors satimage letter
"""

from __future__ import annotations

import argparse
import os
import time

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):  # numba: n_jobs per fit
    os.environ.setdefault(var, "1")

import numpy as np  # noqa: E402
from cost_suite import load_split, matrices  # noqa: E402

from rebelboost import RebelClassifier  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--max-train", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--n-jobs", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    RebelClassifier(5).fit(rng.random((60, 3)), np.arange(60) % 3)  # compile the kernels
    print("| set | rows | K | n_jobs | plain fit (s) | cost route (s) | wall ratio | "
          "CPU ratio | route |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.datasets:
        X, y, _, _ = load_split(name, 0, args.max_train)
        k = int(y.max()) + 1
        hedge = dict(matrices(k, np.bincount(y) / len(y), np.random.default_rng(0)))["hedge"]
        plain, cost, plain_cpu, cost_cpu, route = [], [], [], [], None
        for _ in range(args.repeats):
            t, c = time.perf_counter(), time.process_time()
            RebelClassifier(random_state=0, n_jobs=args.n_jobs).fit(X, y)
            plain.append(time.perf_counter() - t)
            plain_cpu.append(time.process_time() - c)
            t, c = time.perf_counter(), time.process_time()
            model = RebelClassifier(cost_matrix=hedge, random_state=0,
                                    n_jobs=args.n_jobs).fit(X, y)
            cost.append(time.perf_counter() - t)
            cost_cpu.append(time.process_time() - c)
            route = f"{model.cost_route_}, {model.calibration_.kind}"
        print(f"| {name} | {len(y)} | {k} | {args.n_jobs} | {min(plain):.2f} | "
              f"{min(cost):.2f} | {min(cost) / min(plain):.2f} | "
              f"{min(cost_cpu) / min(plain_cpu):.2f} | {route} |", flush=True)


if __name__ == "__main__":
    main()
