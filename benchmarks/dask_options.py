"""Two options of the local fit on a 2-worker LocalCluster (issue 32): early stopping on the
rows a local fit holds out, and GOSS row sampling. Each against the local fit: time, and the
same model (the file byte for byte with ``histogram_bits``; else the training loss).

    python benchmarks/dask_options.py stopping      # kddcup, early_stopping=True, no eval_set
    python benchmarks/dask_options.py goss 2000000  # bench_dask.py's rows: full, uniform, GOSS
    python benchmarks/dask_options.py goss 20000000 --samplings "goss 0.3" --rounds 1 --no-local

``stopping``: one fit each after a warm-up fit (compilation not timed), local on 2 threads.
``goss``: seconds an iteration, from fits of 4 and 10 iterations, two rounds on the cluster,
then one locally on the same rows (2 threads).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

DATA = Path(os.environ.get("REBELBOOST_DATA", Path(__file__).resolve().parents[2] / "shared"
                           / "data"))
SAMPLINGS = {"full": {}, "uniform 0.3": {"subsample": 0.3},
             "goss 0.3": {"subsample": 0.3, "sampling": "goss"}}


def model_file(model) -> str:
    data = model.to_dict()
    data["params"].pop("n_jobs")
    return json.dumps(data, sort_keys=True)


def stopping() -> None:
    import dask.array as da

    from rebelboost import RebelClassifier
    from rebelboost.dask import DaskRebelClassifier

    with np.load(DATA / "kddcup.npz", allow_pickle=True) as d:
        X, y = np.asarray(d["X"], np.float64), d["y"]
    params = dict(n_estimators=100, early_stopping=True, n_iter_no_change=5,
                  histogram_bits=12, random_state=0)
    warm = dict(params, n_estimators=3)
    RebelClassifier(n_jobs=2, **warm).fit(X[:60000], y[:60000])
    start = time.perf_counter()
    local = RebelClassifier(n_jobs=2, **params).fit(X, y)
    local_s = time.perf_counter() - start
    print(f"local: {local_s:.2f} s, best iteration {local.best_iteration_} of "
          f"{len(local.validation_loss_)}", flush=True)
    with _cluster():
        chunk = -(-len(y) // 8)
        Xd, yd = da.from_array(X, chunks=(chunk, X.shape[1])), da.from_array(y, chunks=chunk)
        DaskRebelClassifier(**warm).fit(Xd[:120000], yd[:120000])
        start = time.perf_counter()
        dist = DaskRebelClassifier(**params).fit(Xd, yd)
        dist_s = time.perf_counter() - start
    print(f"dask: {dist_s:.2f} s ({dist_s / local_s:.2f}x the local fit), best iteration "
          f"{dist.best_iteration_} of {len(dist.validation_loss_)}, same model file: "
          f"{model_file(dist) == model_file(local)}, client gathered "
          f"{dist.gathered_bytes_ / 1e6:.0f} MB")


def goss(n_rows: int, samplings: list[str], rounds: int, local: bool) -> None:
    import dask
    from bench_dask import synthetic

    from rebelboost import RebelClassifier
    from rebelboost.dask import DaskRebelClassifier

    def per_iteration(make, X, y):
        seconds = []
        for n in (4, 10):
            start = time.perf_counter()
            model = make(n).fit(X, y)
            seconds.append(time.perf_counter() - start)
        return (seconds[1] - seconds[0]) / 6, model

    with _cluster():
        X, y = synthetic(n_rows, 50, -(-n_rows // 8))
        X, y = X.persist(), y.persist()
        for name in samplings:
            DaskRebelClassifier(2, random_state=0, **SAMPLINGS[name]).fit(X, y)  # (compiled)
        for round_ in range(1, rounds + 1):
            for name in samplings:
                extra = SAMPLINGS[name]
                seconds, model = per_iteration(
                    lambda n, e=extra: DaskRebelClassifier(n, random_state=0, **e), X, y)
                print(f"round {round_}, dask, {name}: {seconds:.3f} s an iteration, "
                      f"{np.mean(model.round_trips_):.1f} round trips a tree (the splits'), "
                      f"training loss {model.train_loss_[-1]!r}", flush=True)
    if not local:
        return
    X, y = dask.compute(*synthetic(n_rows, 50, -(-n_rows // 8)))
    RebelClassifier(2, n_jobs=2, random_state=0).fit(X, y)
    for name in samplings:
        extra = SAMPLINGS[name]
        seconds, model = per_iteration(
            lambda n, e=extra: RebelClassifier(n, n_jobs=2, random_state=0, **e), X, y)
        print(f"local, {name}: {seconds:.3f} s an iteration, training loss "
              f"{model.train_loss_[-1]!r}", flush=True)


def _cluster():
    from contextlib import ExitStack

    from distributed import Client, LocalCluster

    stack = ExitStack()
    cluster = stack.enter_context(LocalCluster(n_workers=2, threads_per_worker=1,
                                               processes=True, memory_limit=0))
    stack.enter_context(Client(cluster))
    return stack


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["stopping", "goss"])
    parser.add_argument("rows", type=int, nargs="?", default=2_000_000)
    parser.add_argument("--samplings", nargs="+", choices=list(SAMPLINGS),
                        default=list(SAMPLINGS), help="goss: the samplings timed")
    parser.add_argument("--rounds", type=int, default=2, help="goss: rounds on the cluster")
    parser.add_argument("--no-local", action="store_true", help="goss: no local fits")
    args = parser.parse_args()
    if args.what == "stopping":
        stopping()
    else:
        goss(args.rows, args.samplings, args.rounds, not args.no_local)


if __name__ == "__main__":
    main()
