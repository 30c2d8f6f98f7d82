"""Where a large fit's trees spend their time (issue 27): cProfile of a default
``RebelClassifier`` fit of 10 trees (2 threads) on synthetic rows, the seconds a tree of the
grower's kernels (each one compiled call, so cProfile sees it whole), after a 2-tree fit on
the same rows (compilation and thread start-up not timed). Above 262,143 rows the trees grow
in Python around the threaded kernels (the compiled grower below).

    python benchmarks/grow_profile.py 2000000             # bench_dask.py's synthetic rows
    python benchmarks/grow_profile.py 2000000 --growth    # bench_growth.py's

Run two source trees one after the other (``PYTHONPATH=<src>``) and compare kernel by kernel:
a whole fit's time moves by 1.5x from run to run on this machine, a kernel's less.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

KERNELS = ("children_claimed", "_add_rows_parallel", "_partition_in_place", "_gather_parallel",
           "_gather", "_fill_weights_parallel", "leaves_of")
TREES = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", type=int)
    parser.add_argument("--growth", action="store_true",
                        help="bench_growth.py's rows (10 informative features, linear) instead "
                        "of bench_dask.py's (20, partly nonlinear)")
    args = parser.parse_args()
    if args.growth:
        from bench_growth import synthetic as growth_rows

        X, y = growth_rows(args.rows, 50, 3)
    else:
        import dask
        from bench_dask import synthetic as dask_rows

        X, y = dask.compute(*dask_rows(args.rows, 50, -(-args.rows // 8)))
    from rebelboost import RebelClassifier

    RebelClassifier(2, n_jobs=2, random_state=0).fit(X, y)
    profile = cProfile.Profile()
    profile.enable()
    RebelClassifier(TREES, n_jobs=2, random_state=0).fit(X, y)
    profile.disable()
    seconds = dict.fromkeys(("grow", *KERNELS), 0.0)
    for (_, _, name), (_, _, own, total, _) in pstats.Stats(profile).stats.items():
        if name in seconds:  # (a tree's growth whole; each kernel its own time)
            seconds[name] += total if name == "grow" else own
    print(" ".join(f"{name} {value / TREES:.4f}" for name, value in seconds.items()),
          "(seconds a tree)")


if __name__ == "__main__":
    main()
