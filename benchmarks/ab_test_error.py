"""Two versions of rebelboost's default fit, their test errors paired set by set.

For a change meant to move models only in their last bits (float32 rows' state, a summation
order) and not their accuracy: each version is a source tree (``git worktree add --detach
/tmp/before REV``, then its ``src``), run in a fresh process with that tree first on
``PYTHONPATH``; the default fit (2 threads, ``random_state=seed``) on the suite's stratified
75/25 splits (``bench_suite.split``, seeds 0..N-1; ``bench_suite.seeds_for`` caps the seeds of
the larger sets). Prints each set's mean test error before and after, how many test rows'
labels moved, and the mean difference over sets. ``suite``: every set of the 46-set suite.

    python benchmarks/ab_test_error.py suite /tmp/before/src src --seeds 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

CHILD = r"""
import json, sys
import numpy as np
sys.path.insert(0, "benchmarks")
from bench_suite import load, split
from rebelboost import RebelClassifier
X, y = load(sys.argv[1])
out = []
for seed in range(int(sys.argv[2])):
    X_train, X_test, y_train, y_test = split(X, y, seed)
    model = RebelClassifier(n_jobs=2, random_state=seed).fit(X_train, y_train)
    pred = model.predict(X_test)
    out.append({"error": float(np.mean(pred != y_test)), "pred": pred.tolist()})
print(json.dumps(out))
"""


def run(src: str, name: str, seeds: int) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(src))
    out = subprocess.run([sys.executable, "-c", CHILD, name, str(seeds)], env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_suite import n_rows, seeds_for, set_names

    parser = argparse.ArgumentParser()
    parser.add_argument("sets", help="comma-separated set names, or 'suite'")
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args()
    sets = set_names() if args.sets == "suite" else args.sets.split(",")
    print("| set | seeds | test error % before | after | after - before | test labels "
          "moved |")
    print("|---|---|---|---|---|---|")
    diffs, moved_sets = [], 0
    for name in sets:
        seeds = min(args.seeds, seeds_for(n_rows(name)))
        before = run(args.before, name, seeds)
        after = run(args.after, name, seeds)
        b = 100 * np.mean([r["error"] for r in before])
        a = 100 * np.mean([r["error"] for r in after])
        moved = sum(int(np.sum(np.array(p["pred"]) != np.array(q["pred"])))
                    for p, q in zip(before, after, strict=True))
        total = sum(len(p["pred"]) for p in before)
        diffs.append(a - b)
        moved_sets += moved > 0
        print(f"| {name} | {seeds} | {b:.3f} | {a:.3f} | {a - b:+.3f} | {moved} of {total} |",
              flush=True)
    diffs = np.array(diffs)
    print(f"\n{len(sets)} sets: mean difference {diffs.mean():+.4f} points; "
          f"{int(np.sum(diffs > 0))} worse, {int(np.sum(diffs < 0))} better, "
          f"{int(np.sum(diffs == 0))} equal; largest worse {diffs.max():+.3f}, largest better "
          f"{diffs.min():+.3f}; labels moved on {moved_sets} sets")


if __name__ == "__main__":
    main()
