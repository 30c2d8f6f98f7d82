"""The 46-set suite (issue 28): rebelboost's defaults against the other boosters and a forest.

Sets: the 36 PMLB multi-class sets in ``../shared/data/suite/`` and ten in ``../shared/data/``
(vowel, letter, pendigits, optdigits, satimage, shuttle, mnist, connect4, sleep, fars; official
train/test splits are pooled). Every set gets stratified 75/25 splits by seed: 3 seeds up to
10,000 rows, 2 up to 30,000, 1 above (the shared 2-core machine allowed no more).
Nominal columns keep PMLB's numeric codes for every method. Each (set, seed, method) is one
fit with 2 threads, timed (after a warm-up fit on a small slice in the same process: numba
compilation, thread start-up), under a limit of CPU time (``--limit``, 120 s, the warm-up
included, or 5x that in wall-clock time; a fit past it is killed and recorded as a timeout, and
the method's other seeds on that set are recorded as timeouts without being tried). Fit time
is wall-clock and CPU time (all threads); idle OpenMP threads spin about 10 us, then sleep
(``GOMP_SPINCOUNT=1000``, rebelboost's own setting; runs up to stop 49 had every library's
threads sleep at once, ``OMP_WAIT_POLICY=PASSIVE``, which slowed the peers' short parallel
regions several times on small sets).

Resumable: every finished fit appends one JSON line to ``--results``; a rerun skips what is
there. The workers run one set at a time in a child process, which the parent kills and
restarts when a fit overruns.

Usage (from the repository root)::

    nice -n 10 python benchmarks/bench_suite.py --max-rows 10000      # small sets first
    nice -n 10 python benchmarks/bench_suite.py                       # then the rest
    nice -n 10 python benchmarks/bench_suite.py --methods rebel-lr0.1 --max-rows 30000
    python benchmarks/suite_report.py                                 # tables, ranks, CD plot
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results" / "suite.jsonl"
TOP_SETS = ("vowel", "letter", "pendigits", "optdigits", "satimage", "shuttle", "mnist",
            "connect4", "sleep", "fars")
THREADS = 2
WARMUP_ROWS = 200
WALL_FACTOR = 5  # a fit is also stopped after 5x its CPU-time limit in wall-clock time

# name: (library, parameters). 'rebel' entries are RebelClassifier parameters.
METHODS = {
    "rebel-default": ("rebelboost", {}),
    "rebel-trees": ("rebelboost", {"weak_learner": "tree", "max_depth": 2,
                                   "n_estimators": 500}),
    "rebel-similarity": ("rebelboost", {"weak_learner": "similarity", "target_loss": "auto",
                                        "n_estimators": 2000}),
    "lightgbm": ("lightgbm", {}),
    "xgboost": ("xgboost", {"tree_method": "hist"}),
    "hist-gb": ("scikit-learn", {}),
    "catboost": ("catboost", {}),
    "random-forest": ("forest", {"n_estimators": 500}),
}
PEERS = tuple(METHODS)
# Candidate defaults (issue 28, part 2): RebelClassifier parameters.
CANDIDATES = {
    "rebel-msl5": {"min_samples_leaf": 5},
    "rebel-lr0.1-300-msl5": {"learning_rate": 0.1, "n_estimators": 300, "min_samples_leaf": 5},
    "rebel-lr0.1-300": {"learning_rate": 0.1, "n_estimators": 300},
    "rebel-l15-lr0.1-300-msl5": {"learning_rate": 0.1, "n_estimators": 300,
                                 "min_samples_leaf": 5, "max_leaves": 15},
    "rebel-lr0.1-300-msl5-s5": {"learning_rate": 0.1, "n_estimators": 300,
                                "min_samples_leaf": 5, "leaf_smoothing": 5.0},
    "rebel-msl1-s5": {"min_samples_leaf": 1, "leaf_smoothing": 5.0},
    "rebel-msl10": {"min_samples_leaf": 10},
    "rebel-msl5-l15": {"min_samples_leaf": 5, "max_leaves": 15},
    "rebel-msl1-s10": {"min_samples_leaf": 1, "leaf_smoothing": 10.0},
    "rebel-msl2-s5": {"min_samples_leaf": 2, "leaf_smoothing": 5.0},
    "rebel-msl1-s5-l15": {"min_samples_leaf": 1, "leaf_smoothing": 5.0, "max_leaves": 15},
    "rebel-msl1-s5-lr0.1-300": {"min_samples_leaf": 1, "leaf_smoothing": 5.0,
                                "learning_rate": 0.1, "n_estimators": 300},
    # small trees, many of them: the paper's depth-2 trees with vector leaves
    "rebel-l4-500": {"max_leaves": 4, "n_estimators": 500},
    "rebel-d2-500-lr1": {"max_depth": 2, "n_estimators": 500, "learning_rate": 1.0},
    "rebel-l8-300": {"max_leaves": 8, "n_estimators": 300},
    "rebel-d2-500-lr1-msl1": {"max_depth": 2, "n_estimators": 500, "learning_rate": 1.0,
                              "min_samples_leaf": 1},
    "rebel-d2-500-msl1": {"max_depth": 2, "n_estimators": 500, "min_samples_leaf": 1},
    # more leaves for large data (stop 19: krkopt 17.8% -> 9.0% at 127 leaves, seed 0)
    "rebel-l127": {"max_leaves": 127},
    "rebel-l63": {"max_leaves": 63},
    "rebel-l4-500-msl1-s5": {"max_leaves": 4, "n_estimators": 500, "min_samples_leaf": 1,
                             "leaf_smoothing": 5.0},
    # stop 30: larger leaves for the small-data shape too (with rebel-msl5; more_seeds.py)
    "rebel-msl3": {"min_samples_leaf": 3},
    # stop 30: a lower learning rate for the small-data shape (above 1,000 rows: 0.3 already)
    "rebel-lr0.3": {"learning_rate": 0.3},
    "rebel-lr0.5": {"learning_rate": 0.5},
    # stop 37: smooth small-data shapes (LightGBM's leaf minimum and rate), which the known
    # 2-D mixtures of the cost benchmark prefer (benchmarks/mixture_shapes.py)
    "rebel-d2-500-lr0.1-msl20": {"max_depth": 2, "n_estimators": 500, "learning_rate": 0.1,
                                 "min_samples_leaf": 20},
    "rebel-d2-500-lr0.3-msl5": {"max_depth": 2, "n_estimators": 500, "learning_rate": 0.3,
                                "min_samples_leaf": 5},
    "rebel-l31-100-lr0.1-msl20": {"max_depth": -1, "n_estimators": 100, "learning_rate": 0.1,
                                  "min_samples_leaf": 20},
}
METHODS.update({name: ("rebelboost", params) for name, params in CANDIDATES.items()})
# The defaults since the small-data rule (issue 28, stop 19: 500 depth-2 trees at rate 1 on at
# most 1,000 training rows, else those of rebel-msl10), run under their own name so that the
# results of earlier defaults stay apart.
METHODS["rebel-defaults-v3"] = ("rebelboost", {})
# The same models, timed again after small fits stopped launching threads (stop 19, 0a31c38):
METHODS["rebel-defaults-v4"] = ("rebelboost", {})
# With 63 leaves above 10,000 training rows and the compact leaf histograms (stop 20):
METHODS["rebel-defaults-v5"] = ("rebelboost", {})
# With at most one bin per min_data_in_bin = 5 training rows (stop 29; v5 had a bin per
# distinct value). The records named rebel-mdib3-merging and rebel-mdib5-merging come from
# b4808d6, whose first version of the rule also merged rare values into their neighbours'
# bins (as LightGBM's min_data_in_bin), with 3 and 5 (run there as rebel-defaults-v6 and
# rebel-mdib5, renamed since); that rule is gone, so they are not methods here.
METHODS["rebel-defaults-v6"] = ("rebelboost", {})
# With 127 value bins for vector trees on at most 10,000 training rows (stop 43, 48a2921; 255
# before), every set fitted again at one commit.
METHODS["rebel-defaults-v7"] = ("rebelboost", {})
# An internal choice on small data (issue 28, part 2): up to CV_ROWS training rows, 3-fold
# stratified cross-validation picks the defaults or the paper's trees (refit on all rows);
# above it, the defaults.
METHODS["rebel-cv-trees"] = ("rebelboost-cv", {"alternative": "rebel-trees"})
# Stop 37: the same choice between the defaults and a smooth shape, by CV error or by CV
# log-loss.
METHODS["rebel-cv-smooth"] = ("rebelboost-cv", {"alternative": "rebel-d2-500-lr0.1-msl20"})
METHODS["rebel-cv-smooth-ll"] = ("rebelboost-cv", {"alternative": "rebel-d2-500-lr0.1-msl20",
                                                   "score": "log_loss"})
METHODS["rebel-cv-l31-ll"] = ("rebelboost-cv", {"alternative": "rebel-l31-100-lr0.1-msl20",
                                                "score": "log_loss"})
CV_ROWS = 1000


def set_names() -> list[str]:
    suite = sorted(p.stem for p in (DATA / "suite").glob("*.npz"))
    return suite + list(TOP_SETS)


def load(name: str):
    """All rows of a set (official splits pooled), X float32, y int64 0..K-1."""
    import numpy as np

    path = DATA / "suite" / f"{name}.npz" if name not in TOP_SETS else DATA / f"{name}.npz"
    with np.load(path) as d:
        if "X" in d:
            X, y = d["X"], d["y"]
        else:
            X = np.concatenate([d["X_train"], d["X_test"]])
            y = np.concatenate([d["y_train"], d["y_test"]])
    return np.ascontiguousarray(X, dtype=np.float32), np.asarray(y, dtype=np.int64)


def n_rows(name: str) -> int:
    import numpy as np

    path = DATA / "suite" / f"{name}.npz" if name not in TOP_SETS else DATA / f"{name}.npz"
    with np.load(path) as d:
        return len(d["y"]) if "y" in d else len(d["y_train"]) + len(d["y_test"])


def seeds_for(n: int) -> int:
    """Seeds a set of ``n`` rows gets: 5 (the issue's protocol) up to 2,000 rows, fewer for
    larger sets (time)."""
    return 5 if n <= 2_000 else 3 if n <= 10_000 else 2 if n <= 30_000 else 1


def split(X, y, seed: int):
    from sklearn.model_selection import train_test_split

    return train_test_split(X, y, test_size=0.25, random_state=seed, stratify=y)


# ------------------------------------------------------------------------- one fit


def make(method: str, seed: int):
    """A fresh estimator for ``method`` with 2 threads and ``seed``."""
    library, params = METHODS[method]
    if library == "rebelboost":
        from rebelboost import RebelClassifier

        return RebelClassifier(**params, n_jobs=THREADS, random_state=seed)
    if library == "rebelboost-cv":
        return CrossValidatedChoice(seed, **params)
    if library == "lightgbm":
        import lightgbm as lgb

        return lgb.LGBMClassifier(**params, n_jobs=THREADS, verbose=-1, random_state=seed)
    if library == "xgboost":
        import xgboost as xgb

        return xgb.XGBClassifier(**params, n_jobs=THREADS, random_state=seed)
    if library == "catboost":
        from catboost import CatBoostClassifier

        return CatBoostClassifier(**params, thread_count=THREADS, verbose=0, random_seed=seed,
                                  allow_writing_files=False)
    if library == "forest":
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(**params, n_jobs=THREADS, random_state=seed)
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(**params, random_state=seed)


class CrossValidatedChoice:
    """The defaults or ``alternative`` (a method's parameters), whichever scores better in
    3-fold stratified CV (``score``: 'error', or 'log_loss' of the held-out rows' classes;
    ties: the defaults), on at most ``CV_ROWS`` training rows; the defaults above."""

    def __init__(self, seed: int, alternative: str = "rebel-trees", score: str = "error"):
        self.seed, self.alternative, self.score = seed, alternative, score

    def fit(self, X, y):
        import numpy as np
        from sklearn.model_selection import StratifiedKFold

        from rebelboost import RebelClassifier

        configs = [METHODS["rebel-default"][1], METHODS[self.alternative][1]]
        losses = np.zeros(2)
        if len(y) <= CV_ROWS and np.bincount(y).min() >= 2:
            folds = StratifiedKFold(3, shuffle=True, random_state=self.seed)
            for train, test in folds.split(X, y):
                for i, c in enumerate(configs):
                    model = RebelClassifier(**c, n_jobs=THREADS, random_state=self.seed)
                    model.fit(X[train], y[train])
                    losses[i] += self._loss(model, X[test], y[test])
        best = int(losses[1] < losses[0])
        self.chosen_ = self.alternative if best else "defaults"
        self.model_ = RebelClassifier(**configs[best], n_jobs=THREADS,
                                      random_state=self.seed).fit(X, y)
        return self

    def _loss(self, model, X, y) -> float:
        import numpy as np

        if self.score == "error":
            return float(np.sum(model.predict(X) != y))
        proba = model.predict_proba(X)
        column = np.searchsorted(model.classes_, y).clip(0, len(model.classes_) - 1)
        seen = model.classes_[column] == y
        p = np.where(seen, proba[np.arange(len(y)), column], 0.0)
        return float(-np.sum(np.log(np.clip(p, 1e-6, 1.0))))

    def predict(self, X):
        return self.model_.predict(X)


def fit_predict(method: str, seed: int, X, y, X_test):
    """Fit on (X, y), predict X_test; labels are re-encoded to 0..K'-1 for the fit (a class
    absent from a training split cannot be predicted) and mapped back."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    classes, codes = np.unique(y, return_inverse=True)
    est = make(method, seed)
    with threadpool_limits(THREADS):
        start, cpu = time.perf_counter(), time.process_time()
        est.fit(X, codes)
        fit_s, fit_cpu_s = time.perf_counter() - start, time.process_time() - cpu
        start = time.perf_counter()
        pred = np.asarray(est.predict(X_test)).reshape(-1).astype(np.int64)
        predict_s = time.perf_counter() - start
    extra = {"fit_cpu_s": round(fit_cpu_s, 4)}
    if getattr(est, "n_estimators_", None) is not None and METHODS[method][0] == "rebelboost":
        extra["iterations"] = int(est.n_estimators_)
    if hasattr(est, "chosen_"):
        extra["chosen"] = est.chosen_
    return classes[pred], fit_s, predict_s, extra


def worker(name: str, tasks: list[tuple[int, str]], results: Path) -> None:
    """Run ``tasks`` (seed, method) on set ``name``; announce each on stdout, append results."""
    import numpy as np

    X, y = load(name)
    warmed: set[str] = set()
    for seed, method in tasks:
        print(f"BEGIN {seed} {method}", flush=True)
        X_tr, X_te, y_tr, y_te = split(X, y, seed)
        if method not in warmed:  # compilation and thread start-up stay out of the timing
            rows = np.random.RandomState(0).permutation(len(y_tr))[:WARMUP_ROWS]
            fit_predict(method, seed, X_tr[rows], y_tr[rows], X_te[:10])
            warmed.add(method)
        pred, fit_s, predict_s, extra = fit_predict(method, seed, X_tr, y_tr, X_te)
        record = {"set": name, "seed": seed, "method": method, "status": "ok",
                  "error": float(np.mean(pred != y_te)), "fit_s": round(fit_s, 4),
                  "predict_s": round(predict_s, 4), "n": len(y), "d": X.shape[1],
                  "k": int(len(np.unique(y))), **extra, **_stamp()}
        append(results, record)
        print("DONE", flush=True)


def append(results: Path, record: dict) -> None:
    results.parent.mkdir(parents=True, exist_ok=True)
    with open(results, "a") as f:
        f.write(json.dumps(record) + "\n")


_STAMP: dict = {}


def _stamp() -> dict:
    if not _STAMP:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True).stdout.strip()
        _STAMP.update(commit=head, date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    return dict(_STAMP)


# ----------------------------------------------------------------------- the driver


def done_keys(results: Path) -> set[tuple[str, int, str]]:
    if not results.exists():
        return set()
    keys = set()
    for line in results.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            keys.add((r["set"], r["seed"], r["method"]))
    return keys


def run_set(name: str, tasks: list[tuple[int, str]], results: Path, limit: float) -> None:
    """Run ``tasks`` in child processes; a fit past ``limit`` seconds is killed, recorded as
    a timeout, and the rest of the tasks go on in a fresh child."""
    while tasks:
        arg = ",".join(f"{s}:{m}" for s, m in tasks)
        proc = subprocess.Popen([sys.executable, __file__, "--worker", name, "--tasks", arg,
                                 "--results", str(results)], stdout=subprocess.PIPE,
                                cwd=ROOT, env=_child_env())
        fd, pending = proc.stdout.fileno(), b""  # raw reads: no line hides in a buffer
        current, deadline = None, None
        while True:
            if b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if line.startswith(b"BEGIN "):
                    _, seed, method = line.decode().split()
                    current, deadline = (int(seed), method), (time.monotonic(),
                                                               _cpu_seconds(proc.pid))
                elif line.startswith(b"DONE"):
                    print(f"  {name} seed {current[0]} {current[1]}: done", flush=True)
                    tasks = [t for t in tasks if t != current]
                    current, deadline = None, None
                continue
            ready, _, _ = select.select([fd], [], [], None if current is None else 1.0)
            if not ready and not _overran(proc.pid, deadline, limit):
                continue
            if not ready:  # the fit overran
                proc.kill()
                proc.wait()
                seed, method = current
                for later, m in tasks:  # its other seeds would overrun too: not tried
                    if m == method:
                        append(results, {"set": name, "seed": later, "method": method,
                                         "status": "timeout", "limit_cpu_s": limit,
                                         "tried": later == seed, **_stamp()})
                print(f"  {name} seed {seed} {method}: timeout", flush=True)
                tasks = [t for t in tasks if t[1] != method]
                break
            chunk = os.read(fd, 1 << 16)
            if chunk:
                pending += chunk
                continue
            code = proc.wait()  # the child ended
            if current is None and code != 0:
                raise RuntimeError(f"the worker for {name} failed before a fit ({code})")
            if current is not None:
                seed, method = current
                append(results, {"set": name, "seed": seed, "method": method,
                                 "status": "error", "code": code, **_stamp()})
                print(f"  {name} seed {seed} {method}: error {code}", flush=True)
                tasks = tasks[tasks.index(current) + 1:]
            else:
                tasks = []
            break


def _cpu_seconds(pid: int) -> float:
    """CPU time (user + system, all threads) of a running process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _overran(pid: int, start: tuple[float, float], limit: float) -> bool:
    """Past ``limit`` CPU seconds since ``start`` (the machine is shared: wall-clock time
    measures the neighbours), or past WALL_FACTOR times it in wall-clock time."""
    wall, cpu = start
    return (time.monotonic() - wall > WALL_FACTOR * limit
            or _cpu_seconds(pid) - cpu > limit)


def _child_env() -> dict:
    env = dict(os.environ)
    # every library's OpenMP threads wait as after rebelboost's import, whichever loads
    # libgomp first (up to stop 49: OMP_WAIT_POLICY=PASSIVE, which slowed the peers' fits)
    if "OMP_WAIT_POLICY" not in env:
        env.setdefault("GOMP_SPINCOUNT", "1000")
    src = str(ROOT / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--methods", default=",".join(PEERS),
                   help=f"comma-separated, from {', '.join(METHODS)}")
    p.add_argument("--sets", default=None, help="comma-separated set names (default: all 46)")
    p.add_argument("--max-rows", type=int, default=None, help="only sets with at most so many")
    p.add_argument("--min-rows", type=int, default=0, help="only sets with more rows than this")
    p.add_argument("--limit", type=float, default=120.0,
                   help="CPU seconds per fit, the warm-up included (default 120)")
    p.add_argument("--seeds", type=int, default=None,
                   help="at most so many seeds per set (breadth first: --seeds 1, then more)")
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--tasks", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        tasks = [(int(t.split(":")[0]), t.split(":", 1)[1]) for t in args.tasks.split(",")]
        worker(args.worker, tasks, args.results)
        return
    methods = args.methods.split(",")
    unknown = set(methods) - set(METHODS)
    if unknown:
        p.error(f"unknown methods {sorted(unknown)}")
    names = args.sets.split(",") if args.sets else set_names()
    sizes = {name: n_rows(name) for name in names}
    done = done_keys(args.results)
    for name in sorted(names, key=sizes.get):  # small sets first
        n = sizes[name]
        if n <= args.min_rows or (args.max_rows is not None and n > args.max_rows):
            continue
        seeds = min(seeds_for(n), args.seeds or seeds_for(n))
        tasks = [(seed, m) for seed in range(seeds) for m in methods
                 if (name, seed, m) not in done]
        if tasks:
            print(f"{name} ({n} rows): {len(tasks)} fits", flush=True)
            run_set(name, tasks, args.results, args.limit)


if __name__ == "__main__":
    main()
