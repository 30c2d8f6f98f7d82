"""One leaf's category search on the calling thread against every thread (the compiled
grower's ``best_category_in_leaf``, serial or parallel), on random histograms of the shapes
of the categorical benchmark's sets: the measurement behind ``PARALLEL_CATEGORY_CELLS`` and
``PARALLEL_CATEGORY_CELLS_A_FEATURE``.

    python benchmarks/category_scan_threads.py
"""

from __future__ import annotations

import time

import numba
import numpy as np

from rebelboost.search.category_split import best_category_in_leaf

SHAPES = [(180, 2, 3), (180, 4, 3), (60, 6, 3), (42, 3, 3), (6, 8, 18), (6, 16, 18), (4, 4, 3),
          (20, 5, 5), (1, 300, 4), (15, 10, 6)]  # (features, levels, classes)


def bench(n_features: int, levels: int, k: int, rng, repeats: int = 200) -> None:
    n_value_bins = np.full(n_features, levels, np.int32)
    has_missing = np.zeros(n_features, bool)
    offsets = np.concatenate([[0], np.cumsum(n_value_bins + 1)]).astype(np.int64)
    hist = rng.uniform(0.1, 5.0, (offsets[-1], 2 * k + 1))
    hist[:, -1] = rng.integers(5, 50, offsets[-1])
    out = np.zeros(max(256, levels + 1), bool)
    args = (hist, np.arange(n_features, dtype=np.intp), n_value_bins, has_missing, offsets,
            np.full(k, 0.5), 1.0, 5.0, 5.0, 32, 4, len(out) - 1, np.inf)  # (nothing to beat)
    times = {}
    for parallel in (False, True):
        n_tasks = 4 * numba.get_num_threads() if parallel else 1
        best_category_in_leaf(*args, n_tasks, out)  # (compiles)
        start = time.perf_counter()
        for _ in range(repeats):
            best_category_in_leaf(*args, n_tasks, out)
        times[parallel] = (time.perf_counter() - start) / repeats * 1e6
    print(f"{n_features} features x {levels} levels, K = {k}: cells x channels "
          f"{offsets[-1] * (2 * k + 1)}, one thread {times[False]:.0f} us, "
          f"every thread {times[True]:.0f} us", flush=True)


def main() -> None:
    rng = np.random.default_rng(0)
    for shape in SHAPES:
        bench(*shape, rng)


if __name__ == "__main__":
    main()
