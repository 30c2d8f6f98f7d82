"""Where a distributed fit's time goes (issue 32): a kddcup (or synthetic) fit on a 2-worker
LocalCluster, seen six ways.

* ``stream``: Dask's task stream of a fit with every round on tasks (``ROUNDS_ON_ACTORS``
  off): compute seconds per task kind, the period of a round of splits (one ``split_many``
  per block to the next), the workers' busy time, and the share of the client's time spent
  waiting in ``gather``.
* ``actors``: a fit with its rounds driven by the client through actors
  (``TREES_ON_WORKERS`` off): seconds per function inside each worker's actor, and the
  client's waits on the actors, per iteration.
* ``memory``: each worker's resident memory every 50 ms through a fit of data generated in
  the fit (``--synthetic-rows``), its peak per phase (setup, each iteration), after a
  warm-up fit with its rounds on actors or on tasks (``--warm-up``).
* ``in-process``: the same block tasks called in this process, one thread, through a
  plain-list backend (what the tasks cost without a cluster around them).
* ``local``: the local fit on the same rows, on 2 threads, profiled: seconds per compiled
  kernel and function (what a worker's functions are compared with).
* ``levels``: the local model's split levels per tree against the fit's round trips (a
  round trip splits every leaf that may be split next: a tree needs at least one per level).
* ``latency``: an empty round of two tasks and a gather, a chain of three tasks, and a call
  to a Dask actor on each worker.

    python benchmarks/dask_anatomy.py stream [--synthetic-rows 4000000] [--trees 8]
    python benchmarks/dask_anatomy.py actors [--synthetic-rows 4000000] [--trees 10]
    python benchmarks/dask_anatomy.py memory --synthetic-rows 20000000 --trees 5 --warm-up tasks
    python benchmarks/dask_anatomy.py in-process [--synthetic-rows 2000000 --float-histograms]
    python benchmarks/dask_anatomy.py local [--synthetic-rows 4000000] [--trees 5]
    python benchmarks/dask_anatomy.py levels
    python benchmarks/dask_anatomy.py latency
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np

PARAMS = dict(histogram_bits=12, random_state=0)


def _cluster():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None, env={"NUMBA_NUM_THREADS": "1"})
    return cluster, Client(cluster)


def _kddcup() -> tuple[np.ndarray, np.ndarray]:
    from rebelboost.datasets.benchmark_sets import load_benchmark

    split = load_benchmark("kddcup")
    return (np.concatenate([split.X_train, split.X_test]).astype(np.float32),
            np.concatenate([split.y_train, split.y_test]))


def _data(client, args, persist: bool = True):
    """kddcup, or ``args.synthetic_rows`` rows of ``bench_dask``'s synthetic set (generated
    on the workers: when ``persist`` is False, during the fit)."""
    import dask.array as da

    if args.synthetic_rows:
        sys.path.insert(0, str(Path(__file__).parent))
        from bench_dask import synthetic

        n = args.synthetic_rows
        X, y = synthetic(n, 50, -(-n // 8))
        return client.persist([X, y]) if persist else (X, y)
    X_np, y_np = _kddcup()
    chunk = -(-len(y_np) // 8)
    return (client.persist(da.from_array(X_np, chunks=(chunk, X_np.shape[1]))),
            client.persist(da.from_array(y_np, chunks=chunk)))


def stream(args) -> None:
    """Task-stream anatomy of a fit of ``args.trees`` trees on tasks (after a warm fit)."""
    from distributed import get_task_stream

    from rebelboost.dask import DaskRebelClassifier, estimator

    estimator.ROUNDS_ON_ACTORS = False
    cluster, client = _cluster()
    X, y = _data(client, args)
    DaskRebelClassifier(n_estimators=2, **PARAMS).fit(X, y)  # (kernels loaded)
    prof = cProfile.Profile()
    with get_task_stream(client) as ts:
        start = time.perf_counter()
        prof.enable()
        model = DaskRebelClassifier(n_estimators=args.trees, **PARAMS).fit(X, y)
        prof.disable()
        wall = time.perf_counter() - start
    client.close()
    cluster.close()
    computes, counts, busy = collections.Counter(), collections.Counter(), collections.Counter()
    splits = []
    for rec in ts.data:
        key = rec["key"][0] if isinstance(rec["key"], tuple) else rec["key"]
        kind = key.split("-")[0]
        for span in rec["startstops"]:
            if span["action"] == "compute":
                computes[kind] += span["stop"] - span["start"]
                counts[kind] += 1
                busy[rec["worker"]] += span["stop"] - span["start"]
                if kind == "split_many":
                    splits.append((span["start"], span["stop"]))
    waited = sum(v[3] for k, v in pstats.Stats(prof).stats.items()
                 if k[2] == "gather" and "distributed" in k[0] and "client.py" in k[0])
    print(f"fit of {args.trees} trees: {wall:.2f} s; round trips per tree "
          f"{model.round_trips_.tolist()}")
    print(f"client thread waiting in gather: {waited:.2f} s ({waited / wall:.0%})")
    print("compute per task kind (s, tasks, ms a task):")
    for kind, seconds in computes.most_common(10):
        print(f"  {kind:18s} {seconds:7.3f} {counts[kind]:6d} {1e3 * seconds / counts[kind]:8.1f}")
    print("workers busy (s):", {w.rsplit(":", 1)[-1]: round(s, 2) for w, s in busy.items()})
    splits.sort()
    n_blocks = max(1, round(len(splits) / max(1, sum(model.round_trips_))))
    starts = [min(s for s, _ in splits[i:i + n_blocks])
              for i in range(0, len(splits), n_blocks)]
    ends = [max(e for _, e in splits[i:i + n_blocks]) for i in range(0, len(splits), n_blocks)]
    period = np.diff(starts)
    within = period[period < 3 * np.median(period)]  # (rounds of one tree)
    print(f"a round of splits: period median {1e3 * np.median(within):.1f} ms, its split_many "
          f"span median {1e3 * np.median(np.subtract(ends, starts)):.1f} ms")


def _time_actor_functions() -> None:
    """In a worker: ``BlockStore.run`` timing each function it calls (``_ACTOR_SECONDS``)."""
    from rebelboost.dask import _actors

    seconds = _actors._ACTOR_SECONDS = collections.Counter()

    def run(self, tasks, wanted, forget):
        values = self.values
        for key in forget:
            values.pop(key, None)
        for key, func, args in tasks:
            start = time.perf_counter()
            values[key] = func(*[values[a] if type(a) is _actors._Key else a for a in args])
            seconds[getattr(func, "__name__", str(func))] += time.perf_counter() - start
        return [values[key] for key in wanted]

    _actors.BlockStore.run = run


def _actor_seconds() -> dict:
    from rebelboost.dask import _actors

    return dict(_actors._ACTOR_SECONDS)


def actors(args) -> None:
    """Seconds per function inside the actors, and the client's waits, in a fit of
    ``args.trees`` trees with its rounds driven by the client through actors."""
    from rebelboost.dask import DaskRebelClassifier, _actors, estimator

    estimator.TREES_ON_WORKERS = False

    cluster, client = _cluster()
    X, y = _data(client, args)
    DaskRebelClassifier(n_estimators=2, **PARAMS).fit(X, y)  # (kernels loaded)
    client.run(_time_actor_functions)
    waited = [0.0]
    call = _actors.ActorExecutor._call

    def timed_call(self, calls):
        start = time.perf_counter()
        call(self, calls)
        waited[0] += time.perf_counter() - start

    _actors.ActorExecutor._call = timed_call
    marks = []

    def record(info):
        marks.append((time.perf_counter(), waited[0]))

    start = time.perf_counter()
    DaskRebelClassifier(n_estimators=args.trees, **PARAMS).fit(X, y, callbacks=[record])
    wall = time.perf_counter() - start
    seconds = client.run(_actor_seconds)
    client.close()
    cluster.close()
    steps = np.diff([m[0] for m in marks])
    waits = np.diff([m[1] for m in marks])
    print(f"fit of {args.trees} trees: {wall:.2f} s, of which the client waited on the actors "
          f"{waited[0]:.2f} s; iterations after the first: {np.round(steps, 2).tolist()} s, "
          f"waiting {np.round(waits, 2).tolist()} s")
    for worker, counter in seconds.items():
        print(f"  {worker.rsplit(':', 1)[-1]}:", {k: round(v, 2) for k, v in
                                                 collections.Counter(counter).most_common()})


def _trace_memory() -> None:
    """In a worker: its resident memory every 50 ms, until :func:`_memory_trace`."""
    import threading

    from rebelboost.dask import _actors

    trace = _actors._RSS_TRACE = []

    def poll():
        while _actors._RSS_TRACE is trace:
            status = Path("/proc/self/status").read_text()
            trace.append((time.time(), int(status.split("VmRSS:")[1].split()[0]) / 1024))
            time.sleep(0.05)

    threading.Thread(target=poll, daemon=True).start()


def _memory_trace() -> list:
    from rebelboost.dask import _actors

    trace, _actors._RSS_TRACE = _actors._RSS_TRACE, None
    return trace


def memory(args) -> None:
    """Each worker's peak resident memory over its memory at rest, per phase of a fit whose
    data are generated in the fit, after a warm-up fit on actors or tasks."""
    from rebelboost.dask import DaskRebelClassifier, estimator

    cluster, client = _cluster()
    X, y = _data(client, args, persist=False)
    estimator.ROUNDS_ON_ACTORS = args.warm_up == "actors"
    DaskRebelClassifier(n_estimators=2, **PARAMS).fit(X[:4000], y[:4000])
    estimator.ROUNDS_ON_ACTORS = True
    client.run(_trace_memory)
    marks = [("setup, tree 1", time.time())]

    def record(info):
        marks.append((f"after tree {info.iteration}", time.time()))

    DaskRebelClassifier(n_estimators=args.trees, **PARAMS).fit(X, y, callbacks=[record])
    marks.append(("end", time.time()))
    traces = client.run(_memory_trace)
    client.close()
    cluster.close()
    for worker, trace in traces.items():
        trace = np.asarray(trace)
        rest = trace[0, 1]
        print(f"{worker.rsplit(':', 1)[-1]}: at rest {rest:.0f} MiB; peak over rest, MiB:")
        for (name, a), (_, b) in zip(marks, marks[1:], strict=False):
            inside = (trace[:, 0] >= a) & (trace[:, 0] < b)
            if inside.any():
                print(f"  {name:14s} ({a - marks[0][1]:6.1f}-{b - marks[0][1]:6.1f} s) "
                      f"{trace[inside, 1].max() - rest:7.0f}")


def in_process(args) -> None:
    """The block tasks of a 6-tree fit on 2 blocks, in this process on one thread (kddcup, or
    ``args.synthetic_rows`` of ``bench_dask``'s rows)."""
    import numba

    numba.set_num_threads(1)
    sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
    from test_row_set import ShuffledListExecutor

    from rebelboost import RebelClassifier
    from rebelboost.blocks import tasks
    from rebelboost.blocks.training import BlockRebelBooster
    from rebelboost.engine import boost
    from rebelboost.ensemble._size_defaults import resolve_size_params
    from rebelboost.search.binned import BinnedData
    from rebelboost.search.quantize import weight_range

    if args.synthetic_rows:
        import dask

        sys.path.insert(0, str(Path(__file__).parent))
        from bench_dask import synthetic

        n = args.synthetic_rows
        X, y = dask.compute(*synthetic(n, 50, -(-n // 8)))
    else:
        X, y = _kddcup()
    n, d = X.shape
    exact = PARAMS["histogram_bits"] is not None
    local = RebelClassifier(n_estimators=1, **PARAMS).fit(X, y)
    k = len(local.classes_)
    max_bins = resolve_size_params(local, n)["max_bins"]  # (max_bins None: sized)
    binner = BinnedData.fit(X, None, max_bins, 0).binner
    cuts = [0, n // 2, n]
    parts = [tasks.make_partition(tasks.bin_block(
        [tasks.check_partition(X[a:b], y[a:b], None, d, i)], binner, local.classes_), k,
        local.cost_matrix_, local.subcosts, float(n), exact)
        for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:], strict=True))]

    def fit(trees: int) -> float:
        booster = BlockRebelBooster(ShuffledListExecutor(0), list(parts), binner, n, k,
                                    local._vector_tree_options(), np.random.RandomState(0),
                                    local._shrinkage(), None, cuts[:-1],
                                    weight_range(np.ones(n)))
        start = time.perf_counter()
        boost(booster, trees, d, target_loss=1.0 / n)
        return time.perf_counter() - start

    fit(2)
    prof = cProfile.Profile()
    prof.enable()
    seconds = fit(6)
    prof.disable()
    print(f"6 trees, every block task in this process on one thread: {seconds:.2f} s")
    stats = pstats.Stats(prof).stats
    for name, where in (("split_many", "blocks/tasks.py"), ("split_rows", "row_set.py"),
                        ("gathered", "row_set.py"), ("histogram_of", "row_set.py"),
                        ("weigh", "blocks/tasks.py"), ("quantize", "blocks/tasks.py"),
                        ("histogram", "blocks/tasks.py"), ("step", "blocks/tasks.py")):
        hits = [(v[0], v[3]) for k, v in stats.items()
                if k[2] == name and k[0].endswith(where)]
        if hits:
            calls, cum = hits[0]
            print(f"  {name:12s} {cum:6.3f} s {calls:5d} calls {1e3 * cum / calls:7.1f} ms a call")


def local(args) -> None:
    """The local fit of ``args.trees`` trees on the rows ``_data`` makes, 2 threads, under
    cProfile (after a fit of one tree, which compiles): the functions by own time."""
    import dask

    from rebelboost import RebelClassifier

    if args.synthetic_rows:
        with dask.config.set(scheduler="synchronous"):
            X, y = dask.compute(*_data(None, args, persist=False))
    else:
        X, y = _kddcup()
    params = dict(PARAMS, n_jobs=2)
    RebelClassifier(n_estimators=1, **params).fit(X, y)
    prof = cProfile.Profile()
    start = time.perf_counter()
    prof.enable()
    RebelClassifier(n_estimators=args.trees, **params).fit(X, y)
    prof.disable()
    print(f"local fit of {args.trees} trees, 2 threads: {time.perf_counter() - start:.2f} s")
    pstats.Stats(prof).sort_stats("tottime").print_stats(12)


def levels(args) -> None:
    """Split levels of the local model's trees (the distributed fit's is the same model)."""
    from rebelboost import RebelClassifier
    from rebelboost.tree_tables import tree_tables

    X, y = _kddcup()
    model = RebelClassifier(n_estimators=args.trees, **PARAMS).fit(X, y)
    print("split levels per tree:", tree_tables(model.model_, need_cover=False).depths().tolist())


class _Box:
    """A Dask actor holding a value."""

    def value(self):
        return 1.0


def _plus_one(x):
    return x + 1


def latency(args) -> None:
    """Empty rounds: two tasks and a gather; a chain of three tasks; an actor call each."""
    cluster, client = _cluster()
    workers = sorted(client.nthreads())
    actors = [client.submit(_Box, actor=True, workers=[w]).result() for w in workers]

    def timed(body, rounds: int) -> float:
        body(0)
        start = time.perf_counter()
        for i in range(rounds):
            body(i)
        return 1e3 * (time.perf_counter() - start) / rounds

    def tasks(i):
        client.gather([client.submit(_plus_one, i, workers=[w], pure=False) for w in workers])

    def chain(i):
        level = [client.submit(_plus_one, i, workers=[w], pure=False) for w in workers]
        for _ in range(2):
            level = [client.submit(_plus_one, f, pure=False) for f in level]
        client.gather(level)

    def calls(i):
        [f.result() for f in [a.value() for a in actors]]

    print(f"two tasks and a gather: {timed(tasks, 200):.1f} ms; a chain of three tasks: "
          f"{timed(chain, 100):.1f} ms; an actor call on each worker: {timed(calls, 200):.1f} ms")
    client.close()
    cluster.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("view", choices=["stream", "actors", "memory", "in-process", "local",
                                         "levels", "latency"])
    parser.add_argument("--trees", type=int, default=8)
    parser.add_argument("--synthetic-rows", type=int, default=0)
    parser.add_argument("--float-histograms", action="store_true",
                        help="histogram_bits=None (bench_dask's default) instead of 12")
    parser.add_argument("--warm-up", choices=["actors", "tasks"], default="actors",
                        help="memory: the warm-up fit's rounds")
    args = parser.parse_args()
    if args.float_histograms:
        PARAMS["histogram_bits"] = None
    {"stream": stream, "actors": actors, "memory": memory, "in-process": in_process,
     "local": local, "levels": levels, "latency": latency}[args.view](args)


if __name__ == "__main__":
    main()
