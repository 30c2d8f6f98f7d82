"""Distributed training on a LocalCluster (2 workers unless ``--workers``; issue 18): time
and bytes moved per iteration of ``DaskRebelClassifier`` against the local
``RebelClassifier``, ``lightgbm.dask.DaskLGBMClassifier`` and ``xgboost.dask``'s
``DaskXGBClassifier`` (``--methods ... xgboost_dask``) on the same cluster; ``rebel_dask_driven``
is ``DaskRebelClassifier`` with the client driving every level of splits through the actors
(``TREES_ON_WORKERS = False``), ``rebel_dask_tasks`` with its rounds on scheduler tasks
instead of actors (``ROUNDS_ON_ACTORS = False``), run in the order ``--methods`` gives.

    python benchmarks/bench_dask.py                       # kddcup and 20M x 50 synthetic
    python benchmarks/bench_dask.py --datasets kddcup --iterations 20

Bytes: the loopback interface's received bytes during each fit (every byte that any process
of the cluster sent another, the client included; the same measurement for both libraries,
whose traffic never leaves this machine), and for rebelboost its own split: the bytes the
client gathered (reduced histograms and sums) and the workers' transfers to each other.
The synthetic set is generated on the workers (``dask.array.random``, float32); the local
estimator gets the same rows, computed in this process after the cluster is closed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"
N_CLASSES = 3


def loopback_bytes() -> int:
    for line in Path("/proc/net/dev").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name.strip() == "lo":
            return int(rest.split()[0])
    return 0


def synthetic(n_rows: int, n_features: int, chunk: int):
    """X (float32) and y generated lazily: 3 classes from a noisy nonlinear score (since
    stop 33 drawn by NumPy's Generator as float32: not the rows of earlier results)."""
    import dask.array as da

    # drawn as float32 (a float64 draw cast to float32 held both copies of a chunk at once:
    # a transient of the generator's, not of the fit, that a worker's peak memory counted)
    X = da.random.default_rng(0).standard_normal((n_rows, n_features),
                                                 chunks=(chunk, n_features), dtype=np.float32)
    w = np.random.default_rng(1).standard_normal((n_features, N_CLASSES)).astype(np.float32)

    def labels(block, w=w):
        score = block[:, :10] @ w[:10] + 0.5 * np.sin(block[:, 10:20] @ w[10:20] * 2)
        noise = np.random.default_rng(int(abs(block[0, 0] * 1e6)) if len(block) else 0)
        score = score + noise.standard_normal(score.shape).astype(np.float32)
        return score.argmax(axis=1).astype(np.int32)

    y = X.map_blocks(labels, drop_axis=1, dtype=np.int32)
    return X, y


def worker_transfer_total(client) -> int:
    return sum(client.run(lambda dask_worker: dask_worker.transfer_outgoing_bytes_total)
               .values())


def _worker_memory(reset: bool = False) -> dict:
    """This process's resident and peak memory (MiB); ``reset`` restarts the peak (Linux)."""
    if reset:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    status = Path("/proc/self/status").read_text()
    return {key: int(status.split(f"{key}:")[1].split()[0]) / 1024 for key in ("VmRSS", "VmHWM")}


DASK_MODES = {"rebel_dask": (True, True), "rebel_dask_driven": (True, False),
              "rebel_dask_tasks": (False, False)}  # ROUNDS_ON_ACTORS, TREES_ON_WORKERS


def time_dask_rebel(client, X, y, n_iter, params, mode: str = "rebel_dask"):
    """``mode``: one of :data:`DASK_MODES` (the trees grown on the workers; driven by the
    client through the actors; on scheduler tasks)."""
    from rebelboost.dask import DaskRebelClassifier, estimator

    estimator.ROUNDS_ON_ACTORS, estimator.TREES_ON_WORKERS = DASK_MODES[mode]

    # each worker compiles its kernels on a slice first; then its peak restarts from what it
    # holds at rest, so the peak above it is the fit's (partitions included, as they are
    # generated or loaded during the fit)
    DaskRebelClassifier(2, **params).fit(X[:4000], y[:4000])
    rest = client.run(_worker_memory, True)
    stamps, loopback = [], []

    def record(info):
        stamps.append(time.perf_counter())
        loopback.append(loopback_bytes())

    lo0, tr0 = loopback_bytes(), worker_transfer_total(client)
    start = time.perf_counter()
    model = DaskRebelClassifier(n_iter, **params).fit(X, y, callbacks=[record])
    total = time.perf_counter() - start
    peak = client.run(_worker_memory)
    lo1, tr1 = loopback_bytes(), worker_transfer_total(client)
    steps = np.diff([start] + stamps)
    share = (X.nbytes + y.nbytes) / len(peak) / 2**20
    return {"fit_s": total, "per_iteration_s": float(np.median(steps[1:])),
            # peak resident memory of each worker during the fit over its memory at rest,
            # against an even share of the data (X and y as the cluster holds them)
            "worker_peak_over_rest_mib": [peak[w]["VmHWM"] - rest[w]["VmRSS"] for w in peak],
            "worker_rest_mib": [rest[w]["VmRSS"] for w in peak],
            "data_share_per_worker_mib": share,
            "setup_and_first_iteration_s": float(steps[0]),
            # after the first iteration (the data's upload and binning excluded)
            "loopback_bytes_per_iteration": float(np.median(np.diff(loopback))),
            "loopback_bytes_whole_fit": lo1 - lo0,
            "client_gathered_bytes_per_iteration": model.gathered_bytes_ / n_iter,
            # what the workers received from one another in the trees' exchanges
            "exchanged_bytes_per_iteration": getattr(model, "exchanged_bytes_", 0) / n_iter,
            # (the client's gathers are the workers' outgoing transfers too)
            "worker_outgoing_bytes_per_iteration": (tr1 - tr0) / n_iter,
            # round trips to the workers per tree (one per level of splits; older versions
            # one per split and have no round_trips_)
            "round_trips_per_tree": getattr(model, "round_trips_", np.zeros(0)).tolist(),
            # the workers' exchanges with one another per tree (trees grown on the workers)
            "exchanges_per_tree": getattr(model, "exchanges_", np.zeros(0)).tolist(),
            "train_loss": model.train_loss_.tolist(), "model_file_sha256": model_digest(model)}


def _two_fits(fit, n_iter: int) -> dict:
    """``fit(n)`` (a peer's fit of ``n`` rounds) for ``n_iter`` and ``2 n_iter`` rounds: their
    difference is the time and the loopback bytes of ``n_iter`` rounds without the setup
    (each peer trains in one Dask task per worker, so there is no per-round callback)."""
    runs = []
    for n in (n_iter, 2 * n_iter):
        lo0 = loopback_bytes()
        start = time.perf_counter()
        try:
            fit(n)
        except Exception as exc:  # e.g. LightGBM's sockets (lightgbm-org/LightGBM#4074)
            return {"error": f"{type(exc).__name__}: {exc}",
                    "seconds_until_error": time.perf_counter() - start}
        runs.append((time.perf_counter() - start, loopback_bytes() - lo0))
    (t1, b1), (t2, b2) = runs
    return {"fit_s": t1, "fit_s_twice_the_rounds": t2, "per_iteration_s": (t2 - t1) / n_iter,
            "loopback_bytes_per_iteration": (b2 - b1) / n_iter}


def time_dask_lightgbm(client, X, y, n_iter):
    """``lightgbm.dask`` with 31 leaves (:func:`_two_fits`)."""
    from lightgbm.dask import DaskLGBMClassifier

    return _two_fits(lambda n: DaskLGBMClassifier(n_estimators=n, num_leaves=31, verbose=-1,
                                                  client=client).fit(X, y), n_iter)


def time_dask_xgboost(client, X, y, n_iter):
    """``xgboost.dask`` (``tree_method='hist'``, its defaults otherwise: depth-6 trees, 256
    bins) on the default client, which is ``client`` (:func:`_two_fits`)."""
    from xgboost.dask import DaskXGBClassifier

    return _two_fits(lambda n: DaskXGBClassifier(n_estimators=n, tree_method="hist").fit(X, y),
                     n_iter)


def time_local(X, y, n_iter, params):
    from rebelboost import RebelClassifier

    # its kernels compile on a slice first, as the workers' do (time_dask_rebel)
    RebelClassifier(2, n_jobs=2, **params).fit(X[:4000], y[:4000])
    stamps = []
    start = time.perf_counter()
    model = RebelClassifier(n_iter, n_jobs=2, **params).fit(
        X, y, callbacks=[lambda info: stamps.append(time.perf_counter())])
    total = time.perf_counter() - start
    steps = np.diff([start] + stamps)
    return {"fit_s": total, "per_iteration_s": float(np.median(steps[1:])),
            "setup_and_first_iteration_s": float(steps[0]),
            "train_loss": model.train_loss_.tolist(), "model_file_sha256": model_digest(model)}


def model_digest(model) -> str:
    """SHA-256 of the model file's text, without the thread count (a setting, not the
    model): equal digests, the same file byte for byte."""
    data = model.to_dict()
    data["params"].pop("n_jobs", None)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def run(name, args):
    import dask
    from distributed import Client, LocalCluster

    params = dict(random_state=0, histogram_bits=args.histogram_bits)
    if args.no_spill:  # the limit is a hard cap: no spilling to disk, no pausing
        dask.config.set({"distributed.worker.memory.target": False,
                         "distributed.worker.memory.spill": False,
                         "distributed.worker.memory.pause": False})
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                           dashboard_address=None, env={"NUMBA_NUM_THREADS": "1"},
                           memory_limit=args.memory_limit or "auto")
    client = Client(cluster)
    if name == "kddcup":
        import dask.array as da

        from rebelboost.datasets.benchmark_sets import load_benchmark

        split = load_benchmark("kddcup")
        X_np = np.concatenate([split.X_train, split.X_test]).astype(np.float32)
        y_np = np.concatenate([split.y_train, split.y_test])
        chunk = -(-len(y_np) // args.partitions)
        X = client.persist(da.from_array(X_np, chunks=(chunk, X_np.shape[1])))
        y = client.persist(da.from_array(y_np, chunks=chunk))
        n_iter = args.iterations
    else:
        chunk = -(-args.synthetic_rows // args.partitions)
        X, y = synthetic(args.synthetic_rows, 50, chunk)
        n_iter = args.synthetic_iterations
    result = {"rows": int(X.shape[0]), "features": int(X.shape[1]), "iterations": n_iter,
              "peer_rounds": args.peer_rounds,
              "histogram_bits": args.histogram_bits,
              "partitions": int(X.numblocks[0]), "worker_memory_limit": args.memory_limit,
              "workers": args.workers, "spill": not args.no_spill}
    print(f"{name}: {result}", flush=True)
    for method in args.methods:  # (in the order given: a worker's first fit pays for its heap)
        if method in DASK_MODES:
            result[method] = time_dask_rebel(client, X, y, n_iter, params, method)
            print(f"  {method}", {k: v for k, v in result[method].items()
                                  if k != "train_loss"}, flush=True)
    if "lightgbm_dask" in args.methods:
        result["lightgbm_dask"] = time_dask_lightgbm(client, X, y, args.peer_rounds)
        print("  lightgbm dask", result["lightgbm_dask"], flush=True)
    if "xgboost_dask" in args.methods:
        result["xgboost_dask"] = time_dask_xgboost(client, X, y, args.peer_rounds)
        print("  xgboost dask", result["xgboost_dask"], flush=True)
    client.close()
    cluster.close()
    if "rebel_local" in args.methods:
        if name != "kddcup":
            with dask.config.set(scheduler="threads"):
                X_np, y_np = dask.compute(X, y)
        result["rebel_local"] = time_local(X_np, y_np, n_iter, params)
        print("  rebel local", {k: v for k, v in result["rebel_local"].items()
                                if k != "train_loss"}, flush=True)
    for dist in DASK_MODES:
        if "rebel_local" in result and dist in result:
            a, b = (np.asarray(result[m]["train_loss"]) for m in (dist, "rebel_local"))
            suffix = dist.removeprefix("rebel_dask")
            result["max_relative_loss_difference" + suffix] = float(np.max(np.abs(a / b - 1)))
            result["same_model_file" + suffix] = (result[dist]["model_file_sha256"]
                                                  == result["rebel_local"]["model_file_sha256"])
            print(f"  same model file ({dist}):", result["same_model_file" + suffix],
                  flush=True)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["kddcup", "synthetic"])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--synthetic-rows", type=int, default=20_000_000)
    parser.add_argument("--synthetic-iterations", type=int, default=5)
    parser.add_argument("--peer-rounds", type=int, default=20,
                        help="the peers' fits of N and 2N rounds, whose difference is their "
                        "time a round: their setup (generating the rows on the workers) moves "
                        "by seconds from fit to fit, and 5 and 10 rounds of LightGBM at 20M "
                        "rows gave 3.1 s a round where 20 and 40 gave 6.0 s (stop 63)")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--methods", nargs="+", default=["rebel_dask", "lightgbm_dask",
                                                         "rebel_local"])
    parser.add_argument("--memory-limit", help="each worker's Dask memory limit (e.g. 600MB; "
                        "default: Dask's, the machine's memory shared)")
    parser.add_argument("--workers", type=int, default=2, help="workers of one thread each")
    parser.add_argument("--histogram-bits", type=int,
                        help="rebelboost's histogram_bits (quantized histograms and exact sums: "
                        "the local model file, byte for byte); default: float histograms")
    parser.add_argument("--no-spill", action="store_true",
                        help="no spilling or pausing: a worker past 95%% of its limit is "
                        "killed (the limit is a hard cap)")
    parser.add_argument("--results", default="dask.json",
                        help="file name under benchmarks/results")
    parser.add_argument("--add", action="store_true",
                        help="update the results file instead of replacing it")
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    out = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "commit": commit,
           "load_average": os.getloadavg()[0], "datasets": {}}
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / args.results
    if args.add and path.exists():
        out["datasets"] = json.loads(path.read_text())["datasets"]
    for name in args.datasets:
        fresh = run(name, args)
        kept = out["datasets"].get(name, {}) if args.add else {}
        out["datasets"][name] = {**kept, **fresh,
                                 "commits": {**kept.get("commits", {}),
                                             **dict.fromkeys(args.methods, commit)}}
        path.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
