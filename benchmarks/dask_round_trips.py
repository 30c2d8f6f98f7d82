"""Round trips per tree against the trees' split levels (issue 32): a tree needs at least one
batch of splits per level (a level's splits wait for their parents' answers), and the
look-ahead should need no more. Grown on the workers (the default), a tree is one client
round trip, and its batches are the workers' exchanges (``exchanges_``, less the weights' 2);
``--driven`` has the client drive each batch (``TREES_ON_WORKERS = False``, a round trip
each). Fits ``DaskRebelClassifier`` (20 trees, the defaults) on a 2-worker
LocalCluster, each set in 4 partitions, and prints the round trips, the levels, the trees
that took more trips than levels, and the bytes the client gathered (splits named ahead that
the grower then does not take cost their histograms)::

    REBELBOOST_DATA=../shared/data python benchmarks/dask_round_trips.py [--driven]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_suite import DATA, load  # noqa: E402

SETS = (("letter", None), ("connect4", None), ("satimage", None), ("vehicle", None),
        ("kddcup", 120_000))


def main() -> None:
    import dask.array as da
    from distributed import Client, LocalCluster

    from rebelboost.dask import DaskRebelClassifier, estimator
    from rebelboost.tree_tables import tree_tables

    driven = "--driven" in sys.argv[1:]
    estimator.TREES_ON_WORKERS = not driven

    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster):
        for name, rows in SETS:
            if name == "kddcup":  # (the first rows: the whole set takes minutes a fit)
                with np.load(DATA / "kddcup.npz") as d:
                    X, y = d["X"][:rows].astype(np.float64), d["y"][:rows]
            else:
                X, y = load(name)
            chunk = len(y) // 4 + 1
            model = DaskRebelClassifier(n_estimators=20, random_state=0).fit(
                da.from_array(X, chunks=(chunk, X.shape[1])), da.from_array(y, chunks=chunk))
            levels = tree_tables(model.model_, need_cover=False).depths()
            trips = np.asarray(model.round_trips_)
            batches = trips if driven else np.asarray(model.exchanges_) - 2
            print(f"{name}: {len(y)} rows, round trips {trips.sum()}, batches of splits "
                  f"{batches.sum()}, split levels {levels.sum()}, trees with more batches "
                  f"than levels {(batches > levels).sum()} (at most "
                  f"{(batches - levels).max()} more), the client gathered "
                  f"{model.gathered_bytes_ / 2**20:.1f} MiB, the workers exchanged "
                  f"{model.exchanged_bytes_ / 2**20:.1f} MiB", flush=True)


if __name__ == "__main__":
    main()
