"""How many training rows a bin should take: ``min_data_in_bin`` swept on the suite (issue 28).

A feature gets at most one value bin per ``min_data_in_bin`` training rows, so only training
sets under ``255 * m`` rows can change. For every suite set whose binning differs from one bin
per distinct value (``min_data_in_bin=1``) at the largest ``m`` swept, on any of its seeds,
``RebelClassifier(min_data_in_bin=m)`` is fitted for each ``m`` on the seeds and splits of
``bench_suite`` (2 threads); prints each set's mean test error % and fit CPU time per ``m``,
then the mean error, the mean rank among the ``m`` and the wins / losses against ``m = 1``.

    python benchmarks/bin_rows_sweep.py                 # m in 1 2 3 4 5
    python benchmarks/bin_rows_sweep.py --values 1 5 8
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from bench_suite import load, n_rows, seeds_for, set_names, split
from scipy.stats import rankdata

from rebelboost import RebelClassifier
from rebelboost.binning import Binner


def binning_changes(name: str, base: dict, other: dict, max_train: int | None = None) -> bool:
    """Whether ``Binner(**other)`` bins any seed's training split of set ``name`` differently
    from ``Binner(**base)`` (False where a split has more than ``max_train`` rows)."""
    X, y = load(name)
    for seed in range(seeds_for(len(y))):
        X_tr = split(X, y, seed)[0]
        if max_train is not None and len(X_tr) > max_train:
            return False
        a, b = Binner(**base).fit(X_tr), Binner(**other).fit(X_tr)
        if any(len(s) != len(t) or (s != t).any()
               for s, t in zip(a.thresholds_, b.thresholds_, strict=True)):
            return True
    return False


def sweep(sets: list[str], param: str, values: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Fit ``RebelClassifier(param=v)`` for each value on every set's seeds and splits of
    ``bench_suite`` (2 threads); print each set's mean test error % and fit CPU time per
    value, then the mean error, the mean rank among the values and the wins / losses against
    the first; returns the (set, value) mean errors and fit CPU times."""
    print("| set | rows | " + " | ".join(f"{param} = {v}" for v in values) + " |")
    print("|---|---|" + "---|" * len(values))
    errors, times = [], []
    for name in sets:
        X, y = load(name)
        row, cpu_row, cells = [], [], []
        for value in values:
            err, cpu = [], []
            for seed in range(seeds_for(len(y))):
                X_tr, X_te, y_tr, y_te = split(X, y, seed)
                start = time.process_time()
                model = RebelClassifier(**{param: value}, n_jobs=2, random_state=seed)
                model.fit(X_tr, y_tr)
                cpu.append(time.process_time() - start)
                err.append(100 * np.mean(model.predict(X_te) != y_te))
            row.append(np.mean(err))
            cpu_row.append(np.mean(cpu))
            cells.append(f"{np.mean(err):.2f} ({np.mean(cpu):.2f}s)")
        errors.append(row)
        times.append(cpu_row)
        print(f"| {name} | {len(y)} | " + " | ".join(cells) + " |", flush=True)
    errors, times = np.array(errors), np.array(times)
    ranks = np.array([rankdata(r) for r in errors])
    print(f"\n{len(sets)} sets. {param}: {values}")
    print("mean error %:", np.round(errors.mean(axis=0), 2).tolist())
    print("mean rank:", np.round(ranks.mean(axis=0), 2).tolist())
    print(f"wins / losses against {param} = {values[0]}:",
          [(int((errors[:, j] < errors[:, 0]).sum()), int((errors[:, j] > errors[:, 0]).sum()))
           for j in range(len(values))])
    return errors, times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--values", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    args = parser.parse_args()
    sets = [s for s in set_names() if n_rows(s) < 255 * max(args.values) / 0.75
            and binning_changes(s, {"max_bins": 255},
                                {"max_bins": 255, "min_data_in_bin": max(args.values)})]
    sweep(sets, "min_data_in_bin", args.values)

if __name__ == "__main__":
    main()
