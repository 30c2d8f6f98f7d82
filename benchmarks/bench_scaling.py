"""Two threads against one on an image-sized fit (issue 27: two threads >= 1.8x one).

The defaults (vector-leaf trees) on MNIST's 60,000 x 784 training rows, ``--trees`` trees,
fitted with ``n_jobs=1`` and ``n_jobs=2`` in alternation, each fit in a fresh process after a
warm-up fit on 3,000 rows (numba compilation is not timed). Prints each pair's wall-clock
times and the median speed-up.

    python benchmarks/bench_scaling.py --repeats 2 --trees 20

``--dataset`` another set of the shared data folder with an official split (its training
rows), e.g. ``--dataset satimage --trees 100``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

WORKER = r"""
import json, sys, time
import numpy as np
from rebelboost import RebelClassifier
path, trees, n_jobs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
d = np.load(path)
X, y = d["X_train"].astype(np.float32), d["y_train"]
RebelClassifier(2, n_jobs=n_jobs).fit(X[:3000], y[:3000])
t0 = time.perf_counter()
RebelClassifier(trees, n_jobs=n_jobs, random_state=0).fit(X, y)
print(json.dumps({"fit_s": time.perf_counter() - t0}))
"""


def fit_seconds(trees: int, n_jobs: int, data: Path, dataset: str = "mnist") -> float:
    out = subprocess.run([sys.executable, "-c", WORKER, str(data / f"{dataset}.npz"),
                          str(trees), str(n_jobs)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["fit_s"]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--trees", type=int, default=20)
    p.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    p.add_argument("--dataset", default="mnist")
    args = p.parse_args(argv)
    speedups = []
    for _ in range(args.repeats):
        one = fit_seconds(args.trees, 1, args.data, args.dataset)
        two = fit_seconds(args.trees, 2, args.data, args.dataset)
        speedups.append(one / two)
        print(f"1 thread {one:.2f} s, 2 threads {two:.2f} s: {one / two:.2f}x", flush=True)
    print(f"median speed-up of 2 threads over 1: {np.median(speedups):.2f}x")


if __name__ == "__main__":
    main()
