"""How many bins a feature should get on small and mid-sized data: ``max_bins`` swept on the
suite (issues 27 and 28).

Every suite set of at most ``--max-train`` training rows whose binning ``max_bins`` changes
(on any seed's split, at the smallest value swept) is fitted with the defaults and each
``max_bins`` on the seeds and splits of ``bench_suite`` (2 threads); prints each set's mean
test error % and fit CPU time per value, then the mean error, the mean rank among the
values, the wins / losses against the first value and the geometric mean of the fit CPU
time over the first value's. Sets the sweep does not change fit the same models whatever
the value, so they are left out.

    python benchmarks/max_bins_sweep.py                       # 255 127 63, up to 10,000 rows
    python benchmarks/max_bins_sweep.py --values 255 63 --max-train 1000

The errors' fit times include numba compiling kernels for a set's channel count on the first
value that meets it. ``--timing`` times instead, on each set's seed-0 split: a warm-up fit
per value, then ``--repeats`` rounds of one fit per value in turn (2 threads), the best CPU
and wall time of each, and their ratios to the first value's.

    python benchmarks/max_bins_sweep.py --values 255 127 --timing
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from bench_suite import load, set_names, split
from bin_rows_sweep import binning_changes, sweep

from rebelboost import RebelClassifier


def timing(sets: list[str], values: list[int], repeats: int) -> None:
    """Best fit CPU and wall times of each value on each set's seed-0 split, alternated."""
    print("| set | " + " | ".join(f"{b} bins CPU / wall (s)" for b in values)
          + " | CPU / wall over the first |")
    print("|---|" + "---|" * (len(values) + 1))
    ratios = []
    for name in sets:
        X, y = load(name)
        X_tr, _, y_tr, _ = split(X, y, 0)
        for bins in values:  # warm-up: kernels compiled for the channel count, first touches
            RebelClassifier(max_bins=bins, n_jobs=2, random_state=0).fit(X_tr, y_tr)
        best = {b: [np.inf, np.inf] for b in values}
        for _ in range(repeats):
            for bins in values:
                cpu, wall = time.process_time(), time.perf_counter()
                RebelClassifier(max_bins=bins, n_jobs=2, random_state=0).fit(X_tr, y_tr)
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                best[bins] = [min(best[bins][0], cpu), min(best[bins][1], wall)]
        first = best[values[0]]
        ratio = [(best[b][0] / first[0], best[b][1] / first[1]) for b in values[1:]]
        ratios.append(ratio)
        print(f"| {name} | " + " | ".join(f"{best[b][0]:.2f} / {best[b][1]:.2f}" for b in values)
              + " | " + ", ".join(f"{c:.2f} / {w:.2f}" for c, w in ratio) + " |", flush=True)
    geo = np.exp(np.log(np.array(ratios)).mean(axis=0))
    print(f"\n{len(sets)} sets; geometric mean CPU / wall over {values[0]} bins: "
          + ", ".join(f"{b} bins {c:.2f} / {w:.2f}"
                      for b, (c, w) in zip(values[1:], geo, strict=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--values", type=int, nargs="+", default=[255, 127, 63])
    parser.add_argument("--max-train", type=int, default=10_000)
    parser.add_argument("--sets", default=None, help="comma-separated (default: every set)")
    parser.add_argument("--timing", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    names = args.sets.split(",") if args.sets else set_names()
    sets = [s for s in names if binning_changes(  # (under the defaults' min_data_in_bin)
        s, {"max_bins": 255, "min_data_in_bin": 5},
        {"max_bins": min(args.values), "min_data_in_bin": 5}, args.max_train)]
    if args.timing:
        timing(sets, args.values, args.repeats)
        return
    _, times = sweep(sets, "max_bins", args.values)
    print(f"fit CPU time / {args.values[0]} bins' (geometric mean):",
          np.round(np.exp(np.log(times / times[:, :1]).mean(axis=0)), 2).tolist())


if __name__ == "__main__":
    main()
