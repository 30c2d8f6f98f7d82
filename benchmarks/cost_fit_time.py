"""Fit time of the default cost route against the plain fit (issue 29's <= 3x target).

For each set: the training split of ``cost_suite.load_split`` (seed 0, at most ``--max-train``
rows), ``RebelClassifier()`` and ``RebelClassifier(cost_matrix=hedge)`` fitted alternately
``--repeats`` times with ``n_jobs=--n-jobs`` (the plain fit too); the best wall time and the
best CPU time (process time, all threads) of each: the machine is shared, so the best is the
least disturbed. With ``--n-jobs`` above 1 the cost route fits its folds in parallel threads.

    nice -n 10 python benchmarks/cost_fit_time.py vehicle mfeat_factors satimage letter
"""

from __future__ import annotations

import argparse
import os
import time

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(var, "1")
# numba takes the fits' --n-jobs threads (cost_suite, imported below, would set it to 1,
# and the plain fit of a larger set could not use its second thread)
os.environ.setdefault("NUMBA_NUM_THREADS", str(os.cpu_count() or 1))

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
    print("| set | rows | K | plain fit wall / CPU (s) | default cost route wall / CPU (s) | "
          "ratio wall / CPU | route |")
    print("|---|---|---|---|---|---|---|")
    for name in args.datasets:
        X, y, _, _ = load_split(name, 0, args.max_train)
        k = int(y.max()) + 1
        hedge = dict(matrices(k, np.bincount(y) / len(y), np.random.default_rng(0)))["hedge"]
        plain, cost, route = [], [], None
        for _ in range(args.repeats):
            t, c = time.perf_counter(), time.process_time()
            RebelClassifier(random_state=0, n_jobs=args.n_jobs).fit(X, y)
            plain.append((time.perf_counter() - t, time.process_time() - c))
            t, c = time.perf_counter(), time.process_time()
            model = RebelClassifier(cost_matrix=hedge, random_state=0, n_jobs=args.n_jobs)
            model.fit(X, y)
            cost.append((time.perf_counter() - t, time.process_time() - c))
            route = f"{model.cost_route_}, {model.calibration_.kind}"
        (pw, pc), (cw, cc) = np.min(plain, axis=0), np.min(cost, axis=0)
        print(f"| {name} | {len(y)} | {k} | {pw:.2f} / {pc:.2f} | {cw:.2f} / {cc:.2f} | "
              f"{cw / pw:.2f} / {cc / pc:.2f} | {route} |", flush=True)


if __name__ == "__main__":
    main()
