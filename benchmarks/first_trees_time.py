"""Seconds from ``fit`` to the end of the first tree (the setup: validation, binning, the first
weights) and the second tree's, of a default 2-tree local fit on bench_dask.py's synthetic
rows (2 threads), after a 300,000-row fit that compiles the kernels. Run it with two source
trees (``PYTHONPATH=<src>``) to compare them:

    python benchmarks/first_trees_time.py LABEL ROWS REPEATS
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def main() -> None:
    import dask
    from bench_dask import synthetic

    from rebelboost import RebelClassifier

    label, n, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    X, y = dask.compute(*synthetic(n, 50, -(-n // 8)))
    RebelClassifier(1, n_jobs=2, random_state=0).fit(X[:300_000], y[:300_000])
    for _ in range(repeats):
        stamps: list[float] = []
        start = time.perf_counter()
        RebelClassifier(2, n_jobs=2, random_state=0).fit(
            X, y, callbacks=[lambda info, stamps=stamps: stamps.append(time.perf_counter())])
        print(label, f"setup and first tree {stamps[0] - start:.2f} s, second tree "
              f"{stamps[1] - stamps[0]:.2f} s", flush=True)


if __name__ == "__main__":
    main()
