"""Two versions of rebelboost's default fit, timed alternately, with their models compared.

Each version is a source tree (``git worktree add --detach /tmp/before REV``, then its
``src``); every fit runs in a fresh process with that tree first on ``PYTHONPATH`` (after a
3-tree warm-up that compiles the kernels), on a set's seed-0 training split: the best fit
CPU and wall times of 3, and a hash of the training set's ``predict_proba``, so a change
meant to keep the models shows that it did. Versions alternate round by round; the table
gives medians, and the median (and range) of each round's wall-time ratio: the machine's
load drifts between rounds, the ratio within a round less.

    python benchmarks/ab_fit_time.py analcatdata_happiness,vehicle,satimage /tmp/before/src src
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

CHILD = r"""
import hashlib, sys, time
import numpy as np
sys.path.insert(0, "benchmarks")
from bench_suite import load, split
from rebelboost import RebelClassifier
X, y = load(sys.argv[1])
X, _, y, _ = split(X, y, 0)
RebelClassifier(3, n_jobs=2).fit(X, y)
times = []
walls = []
for _ in range(3):
    t, w = time.process_time(), time.perf_counter()
    model = RebelClassifier(n_jobs=2).fit(X, y)
    times.append(time.process_time() - t)
    walls.append(time.perf_counter() - w)
print(min(times), min(walls), hashlib.sha256(model.predict_proba(X).tobytes()).hexdigest()[:16])
"""


def main() -> None:
    sets, before, after = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    runs = {s: {"before": [], "after": []} for s in sets}
    for r in range(rounds):
        order = [("before", before), ("after", after)]
        for name in sets:
            for tag, path in order if r % 2 == 0 else order[::-1]:
                env = dict(os.environ, PYTHONPATH=os.path.abspath(path))
                out = subprocess.run([sys.executable, "-c", CHILD, name], env=env, check=True,
                                     capture_output=True, text=True).stdout.split()
                runs[name][tag].append((float(out[0]), float(out[1]), out[2]))
    print("| set | CPU before (s) | CPU after (s) | after / before | wall after / before "
          "| wall, each round's after / before: median (range) | same model |")
    print("|---|---|---|---|---|---|---|")
    for name, got in runs.items():
        b, bw = np.median([t[:2] for t in got["before"]], axis=0)
        a, aw = np.median([t[:2] for t in got["after"]], axis=0)
        ratios = [t[1] / u[1] for t, u in zip(got["after"], got["before"], strict=True)]
        same = {t[2] for t in got["before"]} == {t[2] for t in got["after"]}
        print(f"| {name} | {b:.3f} | {a:.3f} | {a / b:.2f} | {aw / bw:.2f} | "
              f"{np.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) | {same} |")


if __name__ == "__main__":
    main()
