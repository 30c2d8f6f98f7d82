"""Time of the cost route's calibration alone (``calibration.fit_calibration``), per set.

For each set: the training split of ``cost_suite.load_split`` (seed 0, at most ``--max-train``
rows), ``RebelClassifier(cost_matrix=hedge, n_jobs=2)`` fitted once to capture the
out-of-fold scores the route hands its calibration; then ``fit_calibration`` on them, on one
thread, ``--repeats`` times: the best wall time, the kind it keeps and its temperature. Run it
with ``PYTHONPATH`` on another version's ``src`` to compare (the fold models, and so the
scores, are the same in both as long as the boosting is).

    OPENBLAS_NUM_THREADS=1 python benchmarks/calibration_time.py sleep fars krkopt
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from cost_suite import load_split, matrices

from rebelboost import RebelClassifier
from rebelboost.ensemble import _cost_route


def captured_arguments(X, y) -> tuple:
    """The arguments of the route's ``fit_calibration`` call in a default cost fit."""
    k = int(y.max()) + 1
    hedge = dict(matrices(k, np.bincount(y) / len(y), np.random.default_rng(0)))["hedge"]
    real, got = _cost_route.fit_calibration, {}

    def spy(*args):
        got["args"] = args
        return real(*args)

    _cost_route.fit_calibration = spy
    try:
        RebelClassifier(cost_matrix=hedge, random_state=0, n_jobs=2).fit(X, y)
    finally:
        _cost_route.fit_calibration = real
    return got["args"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--max-train", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"| set | rows | K | calibration (ms, best of {args.repeats}) | kind | "
          "temperature |")
    print("|---|---|---|---|---|---|")
    for name in args.datasets:
        X, y, _, _ = load_split(name, 0, args.max_train)
        arguments = captured_arguments(X, y)
        _cost_route.fit_calibration(*arguments)  # (compiled kernels loaded)
        best = np.inf
        for _ in range(args.repeats):
            start = time.perf_counter()
            calibration, _, _ = _cost_route.fit_calibration(*arguments)
            best = min(best, time.perf_counter() - start)
        print(f"| {name} | {len(y)} | {int(y.max()) + 1} | {best * 1000:.1f} | "
              f"{calibration.kind} | {calibration.temperature:.4f} |", flush=True)


if __name__ == "__main__":
    main()
