"""One leaf's numeric split scan on the calling thread (``vector_scan.best_in_tasks`` in one
task), on random histograms of several shapes (features x value bins x classes, with or without
missing values): microseconds a leaf and nanoseconds a feature, the mean of ``--calls``
scans, the best of 3 rounds. Run it with two source trees first on ``PYTHONPATH``, in
alternation, to compare them (the picks printed must agree)::

    PYTHONPATH=/tmp/before/src python benchmarks/leaf_scan_time.py
    python benchmarks/leaf_scan_time.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from rebelboost.search.vector_scan import best_in_tasks

SHAPES = [(60, 2, 3, False), (60, 4, 3, False), (60, 8, 3, False), (60, 8, 3, True),
          (60, 16, 3, False), (60, 32, 3, False), (60, 64, 3, False), (60, 127, 3, False),
          (20, 8, 10, False), (20, 127, 10, False)]  # (features, bins, classes, missing)


def bench(n_features: int, n_bins: int, k: int, missing: bool, calls: int, rng) -> None:
    n_value_bins = np.full(n_features, n_bins, np.int32)
    has_missing = np.full(n_features, missing)
    offsets = np.concatenate([[0], np.cumsum(n_value_bins + 1)]).astype(np.intp)
    hist = rng.gamma(1.0, 1.0, (offsets[-1], 2 * k + 1))
    hist[:, 2 * k] = rng.integers(0, 50, offsets[-1])  # sample weight: a few empty bins
    if not missing:
        hist[offsets[1:] - 1] = 0.0
    features = np.arange(n_features, dtype=np.intp)
    prior = np.full(k, 0.1)
    args = (hist, features, n_value_bins, has_missing, offsets, prior, 1.0)
    pick = best_in_tasks(*args, 1)
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(calls):
            best_in_tasks(*args, 1)
        best = min(best, (time.perf_counter() - start) / calls)
    print(f"| {n_features} | {n_bins} | {k} | {missing} | {best * 1e6:.2f} | "
          f"{best * 1e9 / n_features:.0f} | {pick[0]}, {pick[2]}, {pick[3]} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print("| features | value bins | classes | missing | us a leaf | ns a feature "
          "| pick (feature, bin, missing left) |")
    print("|---|---|---|---|---|---|---|")
    for shape in SHAPES:
        bench(*shape, args.calls, rng)


if __name__ == "__main__":
    main()
