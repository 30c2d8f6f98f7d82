"""Seconds an iteration of a default local fit with float histograms and with
``histogram_bits`` 12 and 8 (issue 27), on ``bench_growth.py``'s synthetic rows (50
features, K = 3, 2 threads): fits of 2 and 6 iterations, the difference divided by 4, the
three settings alternated for ``--rounds`` rounds after a warm-up fit of each.

    python benchmarks/quantized_iteration_time.py 2000000 --rounds 2
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

SETTINGS = (None, 12, 8)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", type=int)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    from bench_growth import synthetic

    from rebelboost import RebelClassifier

    X, y = synthetic(args.rows, 50, 3)
    for bits in SETTINGS:  # (kernels compiled and loaded before any timing)
        RebelClassifier(2, n_jobs=2, random_state=0, histogram_bits=bits).fit(X, y)
    for _ in range(args.rounds):
        for bits in SETTINGS:
            seconds = []
            for n in (2, 6):
                start = time.perf_counter()
                RebelClassifier(n, n_jobs=2, random_state=0, histogram_bits=bits).fit(X, y)
                seconds.append(time.perf_counter() - start)
            print(f"histogram_bits={bits}: {(seconds[1] - seconds[0]) / 4:.3f} s an iteration",
                  flush=True)


if __name__ == "__main__":
    main()
