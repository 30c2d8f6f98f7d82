"""Issue 27's time to LightGBM's error, measured by alternating fits in one process.

``bench_accuracy.py`` times each method once, in a process of its own; single fits of these
sets move by 20-40% from run to run on this machine. Here, for each set, the saved results of
``bench_accuracy.py`` (``results/accuracy_<set>.json``) give LightGBM-default's final test
error ``e*`` and rebelboost's first iteration at or below it (from every iteration's staged
predictions); then LightGBM's default fit (100 rounds) and a rebelboost fit of that many
iterations (no callback: what a user asking for that many trees runs) alternate ``--rounds``
times in one process, after a warm-up fit of each, with the same threads. Printed: the median
fit times and the median of each round's ratio (rebelboost / LightGBM), issue 27's "time to
e*" target being at most 0.6.

    python benchmarks/bench_accuracy.py --datasets satimage --methods rebel-default lgbm-default
    python benchmarks/time_to_error.py satimage --rounds 7
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_accuracy import RESULTS, load  # noqa: E402


def reach(dataset: str) -> tuple[float, int]:
    """``(e*, first rebelboost iteration at or below it)`` from the saved results."""
    rows = json.loads((RESULTS / f"accuracy_{dataset}.json").read_text())
    target = next(r for r in rows if r["method"] == "lgbm-default")["errors"][-1]
    every = next(r for r in rows if r["method"] == "rebel-default")["every_error"]
    first = next((i for i, e in enumerate(every, 1) if e <= target), None)
    if first is None:
        raise SystemExit(f"{dataset}: rebelboost's defaults never reach e* = {target:.4f}")
    return target, first


def main() -> None:
    import lightgbm

    from rebelboost import RebelClassifier

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    print("| data set | e* | rebelboost iterations to e* | LightGBM fit (s) | rebelboost fit "
          "to e* (s) | ratio: median (range) of the rounds |")
    print("|---|---|---|---|---|---|")
    for dataset in args.datasets:
        target, first = reach(dataset)
        X, y, _, _ = load(dataset)
        makers = {
            "lightgbm": lambda: lightgbm.LGBMClassifier(n_jobs=args.threads, verbose=-1,
                                                        random_state=0),
            "rebelboost": lambda first=first: RebelClassifier(first, n_jobs=args.threads,
                                                              random_state=0)}
        for make in makers.values():
            make().fit(X, y)
        times = {name: [] for name in makers}
        for _ in range(args.rounds):
            for name, make in makers.items():
                start = time.perf_counter()
                make().fit(X, y)
                times[name].append(time.perf_counter() - start)
        ratios = np.array(times["rebelboost"]) / np.array(times["lightgbm"])
        print(f"| {dataset} | {target:.4f} | {first} | {np.median(times['lightgbm']):.3f} | "
              f"{np.median(times['rebelboost']):.3f} | **{np.median(ratios):.2f}** "
              f"({ratios.min():.2f}-{ratios.max():.2f}) |", flush=True)


if __name__ == "__main__":
    main()
