"""What a fresh install's first fit costs: numba compiles the kernels on first use, so the
first ``fit`` in a new environment waits for them. Each run is a new process with an empty
numba cache (``NUMBA_CACHE_DIR`` a fresh temporary folder), timing the import, the first
default fit of a small data set (iris: the compile is nearly all of it) and a second fit; a
second process then loads the cached kernels and fits once more. ``--kernels`` lists the
kernels that took longest to compile (numba's compile events; nested compiles indented);
``--categorical`` fits iris with one more column, a pandas ``category`` (the petal length
in three levels), so the category-set search compiles too.

    python benchmarks/first_fit.py --runs 2 --kernels
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
events, open_ = [], {}
if sys.argv[1] == "1":
    import numba.core.event as ev

    class Compiles(ev.Listener):
        def on_start(self, event):
            key = id(event.data["dispatcher"]), str(event.data["args"])
            open_[key] = time.perf_counter(), len(open_)

        def on_end(self, event):
            key = id(event.data["dispatcher"]), str(event.data["args"])
            start, depth = open_.pop(key)
            events.append((depth, time.perf_counter() - start,
                           event.data["dispatcher"].py_func.__qualname__))

    ev.register("numba:compile", Compiles())
from sklearn.datasets import load_iris
from rebelboost import RebelClassifier
X, y = load_iris(return_X_y=True)
if sys.argv[2] == "1":
    import pandas as pd
    X = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    X["e"] = pd.cut(X["c"], [0, 2, 5, 10], labels=["short", "mid", "long"])
t1 = time.perf_counter()
RebelClassifier(random_state=0).fit(X, y)
t2 = time.perf_counter()
RebelClassifier(random_state=1).fit(X, y)
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "first fit": t2 - t1, "second fit": t3 - t2,
                  "events": events}))
"""


def run(cache: str, kernels: bool, categorical: bool) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    out = subprocess.run([sys.executable, "-c", CHILD, "1" if kernels else "0",
                          "1" if categorical else "0"], env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--kernels", action="store_true", help="list the slowest compiles")
    parser.add_argument("--categorical", action="store_true",
                        help="a pandas category column too (the category search compiles)")
    args = parser.parse_args()
    print("| run | import (s) | first fit, empty cache (s) | second fit (s) | "
          "new process, cached: import + fit (s) |")
    print("|---|---|---|---|---|")
    for r in range(args.runs):
        with tempfile.TemporaryDirectory() as cache:
            fresh = run(cache, args.kernels, args.categorical)
            cached = run(cache, False, args.categorical)
        print(f"| {r + 1} | {fresh['import']:.1f} | {fresh['first fit']:.1f} | "
              f"{fresh['second fit']:.2f} | {cached['import'] + cached['first fit']:.1f} |")
        if args.kernels:
            for depth, seconds, name in fresh["events"]:
                if seconds >= 2.0 and depth <= 4:
                    print(f"    {'  ' * depth}{seconds:6.1f} s  {name}")


if __name__ == "__main__":
    main()
