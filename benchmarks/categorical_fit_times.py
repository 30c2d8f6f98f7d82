"""Fit wall time of one method of ``bench_categorical`` on seed 0's split of the sets given,
in a process of its own: only that method's library is imported, so each library's OpenMP
threads wait as that library's defaults make them (rebelboost's import sets the wait of every
OpenMP library in the process; BENCHMARKS.md, "Categorical features", stop 50). A warm-up fit
(numba's compile, thread start-up), then the median of ``--repeats`` timed fits. Run the
methods in alternation and compare ratios of the same round::

    for i in 1 2; do for m in rebel-native lightgbm xgboost; do
        python benchmarks/categorical_fit_times.py $m splice connect4 krkopt; done; done
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_categorical import make, native_split  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("method")
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for name in args.sets:
        train, _, codes, _, _ = native_split(name, 0)
        make(args.method, 0).fit(train, codes)
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            make(args.method, 0).fit(train, codes)
            times.append(time.perf_counter() - start)
        print(f"{name} {args.method} fit_wall_s={np.median(times):.3f}", flush=True)


if __name__ == "__main__":
    main()
