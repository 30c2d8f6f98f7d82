"""Native categorical fits of two source trees, and peers, timed in turn: the drift-proof A/B.

One worker process per tree (that tree's ``src`` first on ``PYTHONPATH``) fits
``bench_categorical``'s ``rebel-native`` on seed 0's split of each set, and one per
``--peer`` (``lightgbm``, ``xgboost``: only that library imported, as
``categorical_fit_times.py`` times it); the workers fit one after another, in turn,
``--rounds`` times a set (after a warm-up fit each), so a load that drifts over minutes weighs
on all alike. Prints each one's median wall time and the median (and quartiles) of the
rounds' ratios, B over A and B over each peer. Where whole rounds of one method after another
moved splice's fit by 1.3x between rounds (this machine, stop 74), the ratios within a round
kept within 0.92-0.95. A worker process can stay a few per cent faster or slower than another
for its whole life (stop 75: nursery's ratio 0.96, quartiles 0.94-0.97, in one invocation and
1.05, 1.03-1.09, in another), so judge a small change by several invocations::

    git worktree add --detach /tmp/before <commit>
    python benchmarks/categorical_paired_ab.py /tmp/before/src src splice --peer xgboost
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

WORKER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from bench_categorical import make, native_split
method = sys.argv[2]
data = {}
for line in sys.stdin:
    name = line.strip()
    if name not in data:
        train, _, codes, _, _ = native_split(name, 0)
        data[name] = (train, codes)
        make(method, 0).fit(train, codes)  # (numba's compile, the threads' start)
    train, codes = data[name]
    start = time.perf_counter()
    make(method, 0).fit(train, codes)
    print(json.dumps(time.perf_counter() - start), flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tree_a", help="source tree A (its src folder)")
    parser.add_argument("tree_b", help="source tree B")
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--peer", action="append", default=[],
                        choices=("lightgbm", "xgboost"))
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    here = str(Path(__file__).parent)
    runs = [("A", "rebel-native", args.tree_a), ("B", "rebel-native", args.tree_b),
            *((peer, peer, args.tree_b) for peer in args.peer)]
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, here, method],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                env=dict(os.environ, PYTHONPATH=tree))
               for _, method, tree in runs]

    def fit(worker: subprocess.Popen, name: str) -> float:
        worker.stdin.write(name + "\n")
        worker.stdin.flush()
        return json.loads(worker.stdout.readline())

    for name in args.sets:
        for worker in workers:
            fit(worker, name)  # (loads the set and warms up)
        times: list[list[float]] = [[] for _ in runs]
        for i in range(args.rounds):
            turn = list(range(len(runs)))
            for k in turn if i % 2 == 0 else turn[::-1]:
                times[k].append(fit(workers[k], name))
        medians = ", ".join(f"{label} {statistics.median(t):.3f} s"
                            for (label, _, _), t in zip(runs, times, strict=True))
        print(f"{name}: {medians}; B over", flush=True)
        for k in (0, *range(2, len(runs))):
            ratios = sorted(b / a for a, b in zip(times[k], times[1], strict=True))
            n = len(ratios)
            print(f"    {runs[k][0]}: median of {n} rounds' ratios {statistics.median(ratios):.3f}"
                  f" (quartiles {ratios[n // 4]:.3f}-{ratios[(3 * n) // 4]:.3f})", flush=True)
    for worker in workers:
        worker.stdin.close()
        worker.wait()


if __name__ == "__main__":
    main()
