"""Binning's value counts taken serially, always on a thread pool, and by the rule
(``binning.PARALLEL_ROWS`` and ``PARALLEL_VALUES``), on the seed-0 training split of each of
the 46 suite sets (at most 200,000 rows, binning's sample), 2 threads, best of 5: how the
rule was chosen (stop 53).

    python benchmarks/value_counts_threads.py
"""

from __future__ import annotations

import time

import numpy as np
from bench_suite import load, set_names, split

from rebelboost import binning
from rebelboost.parallel import numba_threads

MODES = {"serial": (1 << 62, 1 << 62), "always pooled": (0, 0),
         "the rule": (binning.PARALLEL_ROWS, binning.PARALLEL_VALUES)}


def timings(X: np.ndarray) -> dict[str, float]:
    numeric = np.ones(X.shape[1], bool)
    best: dict[str, float] = {}
    for _ in range(5):
        for mode, (rows, values) in MODES.items():
            binning.PARALLEL_ROWS, binning.PARALLEL_VALUES = rows, values
            with numba_threads(2):
                start = time.perf_counter()
                binning.column_value_counts(X, numeric)
                best[mode] = min(best.get(mode, np.inf), time.perf_counter() - start)
    return best


def main() -> None:
    results = []
    for name in set_names():
        X, y = load(name)
        X, _, _, _ = split(np.asarray(X, dtype=np.float64), y, 0)
        if X.shape[0] > 200_000:
            X = X[np.random.default_rng(0).choice(X.shape[0], 200_000, replace=False)]
        results.append((X.size, name, X.shape[0], timings(X)))
    print("| set | rows | values | serial (ms) | always pooled (ms, ratio) | "
          "the rule (ms, ratio) |")
    print("|---|---|---|---|---|---|")
    for size, name, n, t in sorted(results):
        s = t["serial"]
        print(f"| {name} | {n} | {size} | {s * 1e3:.2f} | {t['always pooled'] * 1e3:.2f} "
              f"({t['always pooled'] / s:.2f}) | {t['the rule'] * 1e3:.2f} "
              f"({t['the rule'] / s:.2f}) |")


if __name__ == "__main__":
    main()
