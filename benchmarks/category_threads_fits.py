"""Whole native fits with the category search on every thread where ``category_tasks``'s
rule says so, against the same fits with the search always on the calling thread: the
measurement behind ``PARALLEL_CATEGORY_CELLS_A_FEATURE``.

Seed 0's split of each ``bench_categorical`` set, its ``rebel-native`` estimator (2
threads), a warm-up fit, then the median of ``--repeats`` fits under the rule with the
threshold given (``--threshold``, cells x channels a feature; default the library's) and
under a threshold no leaf reaches, alternated for ``--rounds`` rounds in one process. Prints
each set's cells x channels a categorical feature (from the training rows' categories) and
the ratio one thread / rule in each round::

    python benchmarks/category_threads_fits.py dermatology calendarDOW krkopt --threshold 64
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_categorical import make, native_split  # noqa: E402

from rebelboost.search import category_split  # noqa: E402


def fit_time(train, codes, repeats: int) -> float:
    make("rebel-native", 0).fit(train, codes)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        make("rebel-native", 0).fit(train, codes)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--threshold", type=int,
                        default=category_split.PARALLEL_CATEGORY_CELLS_A_FEATURE)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for name in args.sets:
        train, _, codes, classes, _ = native_split(name, 0)
        nominal = [c for c in train.columns if train[c].dtype == "category"]
        cells = sum(train[c].nunique() + 1 for c in nominal)
        a_feature = cells * (2 * len(classes) + 1) / max(1, len(nominal))
        ratios, rule = [], []
        for _ in range(args.rounds):
            category_split.PARALLEL_CATEGORY_CELLS_A_FEATURE = args.threshold
            rule.append(fit_time(train, codes, args.repeats))
            category_split.PARALLEL_CATEGORY_CELLS_A_FEATURE = 1 << 62
            ratios.append(fit_time(train, codes, args.repeats) / rule[-1])
        print(f"{name:22s} {len(nominal):3d} categorical features, {a_feature:6.0f} cells x "
              f"channels a feature: rule {np.median(rule):.3f} s, one thread / rule "
              + " ".join(f"{r:.2f}x" for r in ratios), flush=True)


if __name__ == "__main__":
    main()
