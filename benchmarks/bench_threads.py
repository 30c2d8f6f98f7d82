"""Fits on a busy or CPU-limited machine (issue 21): REBEL's default threads vs n_jobs=1 vs peers.

The same fit (MNIST with depth-2 trees, letter with depth-4 trees, a fixed number of
iterations; LightGBM and XGBoost with the same depth and fewer rounds, as each of their rounds
fits K trees: on a busy machine their full-length fits took minutes; satimage with each
library's defaults) runs under four conditions:

* **idle**: nothing started beside it (the machine's other users are not under our control:
  the load average is printed before and after);
* **+1 busy** / **+2 busy**: one or two CPU-bound processes (a Python busy loop, killed when the
  fit ends and bounded to ``--busy-limit`` seconds in any case) start before the fit;
* **1 core**: the fit process is confined to CPU 0 with ``taskset -c 0``.

REBEL runs with the default ``n_jobs`` (the CPUs the process may use; idle OpenMP threads
spin about 10 us, then sleep, see ``rebelboost.parallel``) and with ``n_jobs=1``; LightGBM and
XGBoost with their defaults (one thread per CPU here). A second part times REBEL's default
under other choices: threads that sleep at once (``OMP_WAIT_POLICY=PASSIVE``, the default up
to stop 49), OpenMP threads that spin 10,000 times before they sleep
(``GOMP_SPINCOUNT=10000``), libgomp's own wait (spin ~300k iterations, then sleep: what
rebelboost used before issue 21), numba's workqueue layer and its tbb layer (``pip install
tbb``: its library is found in the environment's ``lib``).

Each setting has its own process, started once per data set: it loads the data, fits 2 rounds
on 5000 rows (so compilation and thread start-up are not timed), then times ``fit`` on the full
training set whenever asked. All (condition, setting) runs of one repetition are shuffled
together (interleaved), ``--repeats`` repetitions, medians reported.

Usage (from the repository root)::

    python benchmarks/bench_threads.py              # full run (~25 min on 2 cores), BENCHMARKS.md
    python benchmarks/bench_threads.py --quick      # smoke run, prints only
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_core  # noqa: E402  (machine, versions, git, BENCHMARKS.md sections)

ROOT = bench_core.ROOT
SECTION = "## Busy machines (issue 21)"
# depth, REBEL iterations, peer rounds (None: each library's defaults)
DATASETS = {"mnist": (2, 40, 8), "letter": (4, 300, 20), "satimage": (None, None, None)}
CONDITIONS = {"idle": 0, "+1 busy": 1, "+2 busy": 2, "1 core": 0}
MODELS = {
    "rebel": "REBEL, default n_jobs",
    "rebel-1": "REBEL, n_jobs=1",
    "lightgbm": "LightGBM, default threads",
    "xgboost": "XGBoost hist, default threads",
}
VARIANTS = {
    "default": "omp layer, GOMP_SPINCOUNT=1000 (rebelboost's default: spin ~10 us, then sleep)",
    "passive": "omp layer, OMP_WAIT_POLICY=PASSIVE (rebelboost's default up to stop 49)",
    "spin": "omp layer, GOMP_SPINCOUNT=10000 (spin briefly, then sleep)",
    "gomp": "omp layer, libgomp's default wait (spin 300k, then sleep)",
    "workqueue": "workqueue layer",
    "tbb": "tbb layer",
}
BUSY = "import time\nend = time.time() + {limit}\nwhile time.time() < end:\n    pass\n"


# ------------------------------------------------------------------------ fitting (workers)


def _estimator(model: str, depth: int | None, rounds: int | None):
    """The model's estimator: ``depth`` None: the library's defaults (``rounds`` of them if
    given)."""
    if model.startswith("rebel"):
        from rebelboost import RebelClassifier

        n_jobs = 1 if model == "rebel-1" else None
        if depth is None:
            return RebelClassifier(**({"n_estimators": rounds} if rounds else {}),
                                   random_state=0, n_jobs=n_jobs)
        return RebelClassifier(rounds, weak_learner="tree", max_depth=depth, random_state=0,
                               n_jobs=n_jobs)
    if model == "lightgbm":
        from lightgbm import LGBMClassifier

        if depth is None:
            return LGBMClassifier(**({"n_estimators": rounds} if rounds else {}), verbose=-1)
        return LGBMClassifier(objective="multiclass", n_estimators=rounds, max_depth=depth,
                              num_leaves=2**depth, verbose=-1)
    from xgboost import XGBClassifier

    if depth is None:
        return XGBClassifier(**({"n_estimators": rounds} if rounds else {}), tree_method="hist")
    return XGBClassifier(tree_method="hist", max_depth=depth, n_estimators=rounds)


def worker(dataset: str, model: str, variant: str, quick: bool) -> None:
    """Load, warm up, then fit once per "fit" line on stdin; one JSON line per fit on stdout."""
    if model.startswith("rebel"):
        import rebelboost  # noqa: F401  (its import sets the wait, as in a user's session)

        if variant in ("gomp", "spin", "passive"):  # undo that: libgomp reads it when it loads
            os.environ.pop("OMP_WAIT_POLICY", None)
            os.environ.pop("GOMP_SPINCOUNT", None)
        if variant == "spin":
            os.environ["GOMP_SPINCOUNT"] = "10000"
        if variant == "passive":
            os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    with np.load(bench_core.DATA / f"{dataset}.npz") as d:
        X, y = d["X_train"].astype(np.float32), d["y_train"]
    depth, rebel_rounds, peer_rounds = DATASETS[dataset]
    rounds = rebel_rounds if model.startswith("rebel") else peer_rounds
    if quick:
        X, y, rounds = X[:5000], y[:5000], 5
    _estimator(model, depth, 2).fit(X[:5000], y[:5000])
    info = {"affinity": len(os.sched_getaffinity(0)), "wait": os.environ.get("OMP_WAIT_POLICY"),
            "spin": os.environ.get("GOMP_SPINCOUNT")}
    if model.startswith("rebel"):
        import numba

        info["layer"] = numba.threading_layer()
    print(json.dumps(info), flush=True)
    for line in sys.stdin:
        if line.strip() != "fit":
            break
        est = _estimator(model, depth, rounds)
        t0, c0 = time.perf_counter(), time.process_time()
        est.fit(X, y)
        fit_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
        del est
        print(json.dumps({"fit_s": fit_s, "cpu_s": cpu_s}), flush=True)


class _Worker:
    """One fit process (under ``taskset -c 0`` for the 1-core condition), kept for all repeats."""

    def __init__(self, dataset: str, model: str, variant: str, one_core: bool, quick: bool):
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", dataset, model,
               variant] + (["--quick"] if quick else [])
        if one_core:
            cmd = ["taskset", "-c", "0", *cmd]
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        for key in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS",
                    "NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER"):
            env.pop(key, None)
        if variant in ("workqueue", "tbb"):
            env["NUMBA_THREADING_LAYER"] = variant
        if variant == "tbb":  # (pip's libtbb, in the environment's lib)
            env["LD_LIBRARY_PATH"] = str(Path(sys.prefix) / "lib")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env, cwd=ROOT)
        self.info = json.loads(self.proc.stdout.readline())

    def fit(self) -> dict:
        self.proc.stdin.write("fit\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def _fit_beside(worker: _Worker, n_busy: int, limit: float) -> dict:
    """One fit with ``n_busy`` busy loops running (each stops after ``limit`` s regardless)."""
    busy = [subprocess.Popen([sys.executable, "-S", "-c", BUSY.format(limit=limit)])
            for _ in range(n_busy)]
    try:
        return worker.fit()
    finally:
        for p in busy:
            p.kill()
            p.wait()


def _jobs(dataset: str, variants: list[str]) -> list[tuple[str, str, str, str]]:
    jobs = [(dataset, c, m, "default") for c in CONDITIONS for m in MODELS]
    jobs += [(dataset, c, "rebel", v) for c in ("idle", "+1 busy") for v in variants]
    return jobs


def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run(args) -> dict:
    times: dict[tuple, list[float]] = {}
    loads = [_load()]
    rng = random.Random(0)
    start = time.perf_counter()
    for dataset in args.datasets:
        jobs = _jobs(dataset, args.variants)
        workers = {}
        for _, c, m, v in jobs:
            key = (m, v, c == "1 core")
            if key not in workers:
                workers[key] = _Worker(dataset, m, v, c == "1 core", args.quick)
        for rep in range(args.repeats):
            rng.shuffle(jobs)
            for job in jobs:
                _, c, m, v = job
                w = workers[(m, v, c == "1 core")]
                r = _fit_beside(w, CONDITIONS[c], args.busy_limit)
                times.setdefault(job, []).append(r["fit_s"])
                print(f"# rep {rep} {' / '.join(job):45s} fit {r['fit_s']:6.1f} s "
                      f"cpu {r['cpu_s']:6.1f} s {w.info}  [{time.perf_counter() - start:.0f} s]",
                      file=sys.stderr, flush=True)
            loads.append(_load())
            if args.results:  # kept after every repetition: an interrupted run can be shown
                Path(args.results).write_text(json.dumps(
                    {"times": [[list(k), v] for k, v in times.items()], "loads": loads}))
        for w in workers.values():
            w.close()
    return {"times": times, "loads": loads}


# ------------------------------------------------------------------------------- rendering


def _median(times, key) -> float | None:
    return float(np.median(times[key])) if times.get(key) else None


def _cell(t, idle) -> str:
    if t is None:
        return "-"
    text = f"{t:.2f}" if t < 10 else f"{t:.1f}"
    return f"{text} ({t / idle:.2f}x)" if idle else text


def render(result: dict, datasets: list[str]) -> str:
    times = result["times"]
    head = "| data set | setting | " + " | ".join(CONDITIONS) + " |"
    lines = ["Fit time in seconds, median (x its idle median):", "", head,
             "|" + "---|" * (len(CONDITIONS) + 2)]
    for d in datasets:
        depth, rebel_rounds, peer_rounds = DATASETS[d]
        rows = [(MODELS[m], [(d, c, m, "default") for c in CONDITIONS]) for m in MODELS]
        rows += [(f"REBEL, default n_jobs, {VARIANTS[v]}",
                  [(d, c, "rebel", v) for c in CONDITIONS]) for v in VARIANTS
                 if v != "default" and (d, "idle", "rebel", v) in times]
        for label, keys in rows:
            idle = _median(times, keys[0])
            cells = [_cell(_median(times, k), idle) for k in keys]
            rounds = rebel_rounds if label.startswith("REBEL") else peer_rounds
            shape = "defaults" if depth is None else f"depth {depth}, {rounds} rounds"
            lines.append(f"| {d}, {shape} | {label} | "
                         + " | ".join(cells) + " |")
    lines += ["", "Target: beside one busy process, REBEL's default takes at most 2.5x its idle "
              "time and is never slower than n_jobs=1:", ""]
    for d in datasets:
        idle = _median(times, (d, "idle", "rebel", "default"))
        busy = _median(times, (d, "+1 busy", "rebel", "default"))
        for c in CONDITIONS:
            one = _median(times, (d, c, "rebel-1", "default"))
            default = _median(times, (d, c, "rebel", "default"))
            if None in (one, default):
                continue
            if c == "+1 busy" and idle:
                verdict = "met" if busy / idle <= 2.5 and default <= one else "NOT met"
                lines.append(f"* {d}, {c}: default {default:.1f} s = {busy / idle:.2f}x idle, "
                             f"n_jobs=1 {one:.1f} s: **{verdict}**.")
            else:
                lines.append(f"* {d}, {c}: default {default:.1f} s, n_jobs=1 {one:.1f} s "
                             f"({'not slower' if default <= one else 'SLOWER'}).")
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", nargs=3, metavar=("DATASET", "MODEL", "VARIANT"))
    p.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--busy-limit", type=float, default=180.0,
                   help="seconds after which a busy process (and a fit) is stopped regardless")
    p.add_argument("--quick", action="store_true", help="5 rounds on 5000 rows, print only")
    p.add_argument("--output", default="BENCHMARKS.md")
    p.add_argument("--results", help="JSON file for the raw fit times (written as they come)")
    p.add_argument("--render", action="store_true", help="only show --results, run nothing")
    p.add_argument("--variants", nargs="*", default=[v for v in VARIANTS if v != "default"],
                   choices=[v for v in VARIANTS if v != "default"],
                   help="the other settings of REBEL's threads to time (tbb needs pip's tbb)")
    args = p.parse_args(argv)
    if args.worker:
        worker(*args.worker, args.quick)
        return
    if args.render:
        saved = json.loads(Path(args.results).read_text())
        result = {"times": {tuple(k): v for k, v in saved["times"]}, "loads": saved["loads"]}
    else:
        result = run(args)
    table = render(result, args.datasets)
    command = "python " + shlex.join(["benchmarks/bench_threads.py", *(argv or sys.argv[1:])])
    body = "\n".join([
        f"Command (from the repository root): `{command}`  ",
        f"Date: {datetime.date.today().isoformat()}; code: {bench_core._git()}  ",
        f"Machine: {bench_core._machine()}; load average (1, 5, 15 min) before the run and "
        f"after each repetition: {'; '.join(result['loads'])}  ",
        f"Versions: {bench_core._versions()}",
        "",
        f"{args.repeats} repetitions, every run of a repetition in shuffled order; each fit in a "
        "long-lived process per setting, after a 2-round warm-up fit on 5000 rows (not timed). "
        "Busy processes: a Python loop each, started just before the fit and killed when it "
        "ends. 1 core: the setting's process runs under `taskset -c 0`.",
        "",
        table,
    ])
    print(body)
    if args.quick:
        print("(--quick: BENCHMARKS.md not written)", file=sys.stderr)
    else:
        bench_core.write_section(ROOT / args.output, body, SECTION)
        print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
