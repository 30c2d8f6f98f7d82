"""REBEL core vs peers (issue 2): test error, fit time, time per iteration, peak memory.

For each data set (official train/test splits from ``../shared/data/NAME.npz``, relative to the
repository root) every method is fitted once, each in a fresh subprocess:

* REBEL (``rebelboost.RebelClassifier``) with stumps and with depth-2 trees, QuickBoost as the
  default has it (``-qb`` / ``-noqb`` methods force it on / off: the same model bit for bit,
  different work; ``benchmarks/bench_quickboost.py`` compares them);
* LightGBM (multiclass, ``max_depth=2, num_leaves=4``: K trees per round), XGBoost
  (``tree_method='hist', max_depth=2``: K trees per round), scikit-learn
  ``HistGradientBoostingClassifier`` (``max_depth=2, max_leaf_nodes=4``: K trees per round),
  scikit-learn ``AdaBoostClassifier`` (SAMME) with depth-1 and depth-2 trees; learning rates are
  each library's default, stated in the table.

All run on ``--threads`` threads where the library has a setting (AdaBoost's trees are
single-threaded). A subprocess first fits the same estimator on a small slice of the data (a few
rounds) so that numba compilation and thread-pool start-up are not timed, then resets the peak
resident-set counter, and fits the full training set:

* fit time: wall clock of ``fit``; time per iteration = fit time / rounds (binning included);
* steady-state time per iteration: the median gap between consecutive iterations where the
  library reports them (REBEL and HistGradientBoosting through their ``verbose`` progress lines,
  LightGBM and XGBoost through callbacks), which leaves out the one-time binning;
* peak memory: peak RSS during ``fit`` minus the RSS just before it (``/proc/self/clear_refs``
  resets the peak; where that is not allowed, ``ru_maxrss`` minus the RSS after imports).

``--kernel`` times the histogram kernel alone (``rebelboost.search.histograms.build_histogram``)
against the pre-optimisation kernel kept below as a reference, on the full training bins with
REBEL's 2K channels.

Usage (from the repository root)::

    python benchmarks/bench_core.py                    # full run, writes BENCHMARKS.md
    python benchmarks/bench_core.py --quick            # smoke run, prints only
    python benchmarks/bench_core.py --kernel --datasets mnist
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
SECTION = "## REBEL core vs peers (issue 2)"
NOTES_BEGIN, NOTES_END = "<!-- notes: kept when the section is regenerated -->", "<!-- /notes -->"

# name: (label, library, trees per round: "K" = one per class)
METHODS = {
    "rebel-stump": ("REBEL, stumps", "rebelboost", "1"),
    "rebel-tree2": ("REBEL, depth-2 trees", "rebelboost", "1"),
    "rebel-stump-noqb": ("REBEL, stumps, QuickBoost off", "rebelboost", "1"),
    "rebel-tree2-noqb": ("REBEL, depth-2 trees, QuickBoost off", "rebelboost", "1"),
    "rebel-stump-qb": ("REBEL, stumps, QuickBoost on", "rebelboost", "1"),
    "rebel-tree2-qb": ("REBEL, depth-2 trees, QuickBoost on", "rebelboost", "1"),
    "lightgbm": ("LightGBM, depth 2 (4 leaves), lr 0.1", "lightgbm", "K"),
    "xgboost": ("XGBoost hist, depth 2, lr 0.3", "xgboost", "K"),
    "sklearn-hgb": ("sklearn HistGB, depth 2 (4 leaves), lr 0.1", "scikit-learn", "K"),
    "adaboost-d1": ("sklearn AdaBoost SAMME, depth 1", "scikit-learn", "1"),
    "adaboost-d2": ("sklearn AdaBoost SAMME, depth 2", "scikit-learn", "1"),
}


# --------------------------------------------------------------------------- one fit (worker)


def _load(name: str, quick: bool):
    import numpy as np

    with np.load(DATA / f"{name}.npz") as d:
        X_train, y_train = d["X_train"].astype(np.float32), d["y_train"]
        X_test, y_test = d["X_test"].astype(np.float32), d["y_test"]
    if quick:
        X_train, y_train = X_train[:5000], y_train[:5000]
        X_test, y_test = X_test[:2000], y_test[:2000]
    return X_train, y_train, X_test, y_test


def _estimator(method: str, rounds: int, threads: int, stamps: list):
    """The estimator and the keyword arguments of its ``fit`` (callbacks record iterations)."""
    if method.startswith("rebel"):
        from rebelboost import RebelClassifier

        kw = dict(weak_learner="stump" if "stump" in method else "tree", max_depth=2)
        if method.endswith("-noqb"):
            kw["quickboost"] = False
        elif method.endswith("-qb"):
            kw["quickboost"] = True
        return RebelClassifier(rounds, n_jobs=threads, verbose=1, **kw), {}
    if method == "lightgbm":
        from lightgbm import LGBMClassifier

        est = LGBMClassifier(objective="multiclass", n_estimators=rounds, max_depth=2,
                             num_leaves=4, learning_rate=0.1, n_jobs=threads, verbose=-1)
        return est, {"callbacks": [lambda env: stamps.append(time.perf_counter())]}
    if method == "xgboost":
        from xgboost import XGBClassifier
        from xgboost.callback import TrainingCallback

        class Stamp(TrainingCallback):
            def after_iteration(self, model, epoch, evals_log):
                stamps.append(time.perf_counter())
                return False

        est = XGBClassifier(tree_method="hist", max_depth=2, n_estimators=rounds, n_jobs=threads,
                            callbacks=[Stamp()])
        return est, {}
    if method == "sklearn-hgb":
        from sklearn.ensemble import HistGradientBoostingClassifier

        est = HistGradientBoostingClassifier(max_iter=rounds, max_depth=2, max_leaf_nodes=4,
                                             early_stopping=False, verbose=2)
        return est, {}
    if method.startswith("adaboost"):
        from sklearn.ensemble import AdaBoostClassifier
        from sklearn.tree import DecisionTreeClassifier

        depth = 1 if method.endswith("d1") else 2
        return AdaBoostClassifier(DecisionTreeClassifier(max_depth=depth), n_estimators=rounds), {}
    raise ValueError(f"unknown method {method!r}")


class _StampingStream:
    """Forwards writes to ``stream`` and stamps each line that reports one iteration."""

    def __init__(self, stream, pattern: str, stamps: list):
        self.stream, self.pattern, self.stamps = stream, re.compile(pattern), stamps

    def write(self, text: str) -> int:
        if self.pattern.search(text):
            self.stamps.append(time.perf_counter())
        return len(text)  # progress lines are not echoed

    def flush(self) -> None:
        self.stream.flush()


def _rss_kib(key: str = "VmRSS") -> int:
    with open("/proc/self/status") as f:
        return int(re.search(rf"{key}:\s+(\d+)", f.read()).group(1))


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _fit_once(est, fit_kw, X, y, stamps, method):
    """Fit with stdout/stderr progress lines turned into iteration stamps."""
    pattern = {"rebel": r"^\[\s*\d+\] train loss", "sklearn-hgb": r"^\[\d+/\d+\]"}
    key = "rebel" if method.startswith("rebel") else method
    old_out, old_err = sys.stdout, sys.stderr
    if key in pattern:
        sys.stdout = _StampingStream(old_out, pattern[key], stamps)
        sys.stderr = _StampingStream(old_err, pattern[key], stamps)
    try:
        est.fit(X, y, **fit_kw)
    finally:
        sys.stdout, sys.stderr = old_out, old_err


def worker(dataset: str, method: str, rounds: int, threads: int, quick: bool) -> dict:
    import resource

    import numpy as np
    from threadpoolctl import threadpool_limits

    X_train, y_train, X_test, y_test = _load(dataset, quick)
    est, fit_kw = _estimator(method, 3, threads, [])  # imports the library before the limits
    rss_after_imports = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with threadpool_limits(limits=threads):
        # Warm-up on a slice large enough to take the same code paths (numba compiles per path).
        warm = slice(0, min(len(y_train), 5000))
        _fit_once(est, fit_kw, X_train[warm], y_train[warm], [], method)

        stamps: list[float] = []
        est, fit_kw = _estimator(method, rounds, threads, stamps)
        reset = _reset_peak()
        rss_before = _rss_kib()
        t0, c0 = time.perf_counter(), time.process_time()
        _fit_once(est, fit_kw, X_train, y_train, stamps, method)
        fit_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        error = float(np.mean(est.predict(X_test) != y_test))
        rebel = method.startswith("rebel")
        staged = ([float(np.mean(p != y_test)) for p in est.staged_predict(X_test)] if rebel
                  else None)
    gaps = np.diff(stamps)
    return {
        "dataset": dataset,
        "method": method,
        "rounds": rounds,
        "n_train": len(y_train),
        "n_features": X_train.shape[1],
        "n_classes": len(np.unique(y_train)),
        "test_error": error,
        "fit_s": fit_s,
        "cpu_s": cpu_s,
        "per_iter_s": fit_s / rounds,
        "steady_iter_s": float(np.median(gaps)) if len(gaps) >= 3 else None,
        "peak_mib": (peak - (rss_before if reset else rss_after_imports)) / 1024.0,
        "peak_from": "pre-fit RSS" if reset else "RSS after imports",
        # Per iteration (REBEL): seconds from the start of fit, test error, histogram updates.
        "iteration_end_s": [s - t0 for s in stamps] if rebel else None,
        "staged_test_error": staged,
        "histogram_updates": est.histogram_updates_.tolist() if rebel else None,
    }


# ------------------------------------------------------------------------- the whole benchmark


def _run_worker(dataset, method, args) -> dict | None:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", dataset, method,
           "--rounds", str(args.rounds), "--threads", str(args.threads)]
    if args.quick:
        cmd.append("--quick")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads),
               NUMBA_NUM_THREADS=str(args.threads))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        print(f"{dataset}/{method} failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fmt(x, spec):
    return "—" if x is None else format(x, spec)


def dataset_label(r: dict) -> str:
    """A result's data set with its shape, as the tables name it."""
    return f"{r['dataset']} ({r['n_train']}x{r['n_features']}, K={r['n_classes']})"


def render_table(results: list[dict]) -> str:
    lines = [
        "| data set | method | rounds | trees/round | test error | fit time (s) "
        "| time/iteration (ms) | steady-state/iteration (ms) | vs LightGBM round "
        "| peak memory (MiB) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    lgbm = {r["dataset"]: r for r in results if r["method"] == "lightgbm"}
    for r in results:
        label, _, per_round = METHODS[r["method"]]
        trees = r["n_classes"] if per_round == "K" else 1
        ref = lgbm.get(r["dataset"])
        ratio = None
        if ref is not None and r["method"].startswith("rebel"):
            ratio = _ratio(r, ref)
        lines.append(
            f"| {dataset_label(r)} | {label} | {r['rounds']} | {trees} | {r['test_error']:.4f} "
            f"| {r['fit_s']:.1f} "
            f"| {r['per_iter_s'] * 1e3:.1f} | {_fmt(_ms(r['steady_iter_s']), '.1f')} "
            f"| {_fmt(ratio, '.2f')} | {r['peak_mib']:.0f} |"
        )
    return "\n".join(lines)


def _median_run(runs: list[dict]) -> dict:
    """One row from repeated fits of a method: the median of each timing and memory figure
    (the per-iteration times are those of the fit of median time)."""
    import numpy as np

    row = dict(sorted(runs, key=lambda r: r["fit_s"])[len(runs) // 2])
    for key in ("fit_s", "per_iter_s", "steady_iter_s", "peak_mib"):
        values = [r[key] for r in runs if r[key] is not None]
        row[key] = float(np.median(values)) if values else None
    if len({r["test_error"] for r in runs}) > 1:
        raise RuntimeError(f"{row['method']}: repeated fits gave different test errors")
    return row


def _ms(s):
    return None if s is None else s * 1e3


def _ratio(r, ref):
    """REBEL time per iteration / LightGBM time per round (steady state when both have it)."""
    if r["steady_iter_s"] is not None and ref["steady_iter_s"] is not None:
        return r["steady_iter_s"] / ref["steady_iter_s"]
    return r["per_iter_s"] / ref["per_iter_s"]


def _verdict(results: list[dict]) -> str:
    ref = {r["dataset"]: r for r in results if r["method"] == "lightgbm"}
    out = []
    for r in results:
        if r["dataset"] == "mnist" and r["method"].startswith("rebel-tree2") and "mnist" in ref:
            ratio = _ratio(r, ref["mnist"])
            met = "met" if ratio <= 0.5 else "NOT met"
            out.append(f"* MNIST, {METHODS[r['method']][0]}: one iteration takes {ratio:.2f} x a "
                       f"LightGBM depth-2 round (target <= 0.5): **{met}**.")
    return "\n".join(out)


def _machine() -> str:
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = re.search(r"model name\s*:\s*(.*)", f.read()).group(1).strip()
        with open("/proc/meminfo") as f:
            mem = int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1)) / 2**20
    except (OSError, AttributeError):
        mem = float("nan")
    return f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, {platform.system()}"


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = [f"Python {platform.python_version()}"]
    for pkg in ("rebelboost", "numpy", "numba", "scikit-learn", "lightgbm", "xgboost"):
        try:
            parts.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            pass
    return ", ".join(parts)


def _git() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, text=True, capture_output=True).stdout.strip()
    except OSError:
        head = ""
    if not head:
        return "unknown commit"
    return f"commit {head}" + (" with uncommitted changes" if dirty else "")


def write_section(path: Path, body: str, section: str = SECTION) -> None:
    """Replace (or append) ``section`` (issue 2's by default) of ``path``; keep its notes block."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    start = text.find(section)
    notes = ""
    if start >= 0:
        nxt = text.find("\n## ", start + len(section))
        end = len(text) if nxt < 0 else nxt + 1
        old = text[start:end]
        a, b = old.find(NOTES_BEGIN), old.find(NOTES_END)
        if 0 <= a < b:
            notes = old[a : b + len(NOTES_END)] + "\n"
        text = text[:start] + text[end:]
    if not notes:
        notes = f"{NOTES_BEGIN}\n{NOTES_END}\n"
    block = f"{section}\n\n{body}\n\n{notes}"
    text = text.rstrip("\n") + "\n\n" + block if start < 0 else (
        text[:start] + block + text[start:]
    )
    path.write_text(text)


def run_methods(datasets: list[str], methods: list[str], args) -> list[dict]:
    """Each method on each data set, ``args.fit_repeats`` times interleaved: median rows."""
    results = []
    for dataset in datasets:
        runs: dict[str, list[dict]] = {m: [] for m in methods}
        for _ in range(args.fit_repeats):  # interleaved: every method sees the same load
            for method in methods:
                t = time.perf_counter()
                r = _run_worker(dataset, method, args)
                if r is not None:
                    runs[method].append(r)
                    print(f"# {dataset:10s} {method:18s} error {r['test_error']:.4f}  fit "
                          f"{r['fit_s']:7.1f} s  steady "
                          f"{_fmt(_ms(r['steady_iter_s']), '.1f')} ms  "
                          f"({time.perf_counter() - t:.0f} s with start-up)",
                          file=sys.stderr, flush=True)
        results.extend(_median_run(rs) for rs in runs.values() if rs)
    return results


def run_benchmark(args) -> None:
    methods = args.methods or [m for m in METHODS if not m.endswith("qb")]
    results = run_methods(args.datasets, methods, args)
    table = render_table(results)
    command = "python " + shlex.join(["benchmarks/bench_core.py", *sys.argv[1:]])
    body = "\n".join([
        f"Command (from the repository root): `{command}`  ",
        f"Date: {datetime.date.today().isoformat()}; code: {_git()}  ",
        f"Machine: {_machine()}; {args.threads} threads for every library that has a setting "
        "(AdaBoost's trees are single-threaded); other jobs shared the machine, so timings are "
        "noisy: compare rows of one run.  ",
        f"Versions: {_versions()}",
        "",
        f"Every method was fitted {args.fit_repeats} time(s), the methods interleaved; the "
        "timings and memory are the medians.",
        "",
        "Each fit runs in its own process after a warm-up fit on the first 5000 training rows "
        "(3 rounds) in the same process, so numba compilation and thread start-up are not timed. "
        "Time/iteration = fit time / rounds (binning included); steady-state = median time "
        "between consecutive iterations (binning excluded). \"vs LightGBM round\" = REBEL's time "
        "per iteration / LightGBM's per round (steady state), where LightGBM builds K trees per "
        "round and REBEL one tree per iteration. Peak memory = peak RSS during fit minus the RSS "
        "just before it. Target (issue 2): on MNIST a REBEL depth-2 iteration takes at most half "
        "of a LightGBM depth-2 round.",
        "",
        table,
        "",
        _verdict(results),
    ])
    print(table)
    print(_verdict(results))
    if args.quick:
        print("(--quick: BENCHMARKS.md not written)", file=sys.stderr)
    else:
        write_section(ROOT / args.output, body)
        print(f"wrote {args.output}", file=sys.stderr)


# ---------------------------------------------------------------------------- kernel timing


def _reference_kernel():
    """The histogram kernel as it was before issue 2 (feature blocks of ~12, no scratch)."""
    import numba
    import numpy as np

    @numba.njit(parallel=True, nogil=True)
    def kernel(bins, channels, rows, n_bins_total, block):
        n_features = bins.shape[1]
        n_channels = channels.shape[1]
        hist = np.zeros((n_features, n_bins_total, n_channels))
        n_blocks = (n_features + block - 1) // block
        for blk in numba.prange(n_blocks):
            f0 = blk * block
            f1 = min(n_features, f0 + block)
            for r in range(rows.shape[0]):
                i = rows[r]
                for f in range(f0, f1):
                    b = bins[i, f]
                    for c in range(n_channels):
                        hist[f, b, c] += channels[i, c]
        return hist

    def build(bins, channels, rows, n_bins_total):
        per_feature = n_bins_total * channels.shape[1] * 8
        size = max(1, (1 << 19) // per_feature)
        block = int(max(1, min(size, -(-bins.shape[1] // (4 * numba.get_num_threads())))))
        return kernel(bins, channels, rows, n_bins_total, block)

    return build


def run_kernel(args) -> None:
    import numba
    import numpy as np

    from rebelboost.binning import Binner
    from rebelboost.losses.rebel import RebelLoss
    from rebelboost.search.histograms import build_histogram
    from rebelboost.validation import check_cost_matrix

    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    reference = _reference_kernel()
    print("| data set | rows | kernel | channels | time (s), median | min | same bits |")
    print("|---|---|---|---|---|---|---|")
    for dataset in args.datasets:
        X, y, _, _ = _load(dataset, args.quick)
        binner = Binner(255, random_state=0)
        bins = binner.fit_transform(X)
        k = len(np.unique(y))
        loss = RebelLoss(check_cost_matrix(None, k), y, np.ones(len(y)))
        channels, _ = loss.weights(np.random.default_rng(0).normal(size=(len(y), k)) * 0.5)
        n = len(y)
        layer = np.ascontiguousarray(channels[:, :2])  # a tree layer's (g+, g-) shape
        shuffled = np.random.default_rng(1).permutation(n)
        cases = {
            "all, in order": (np.arange(n), channels),
            "all, shuffled": (shuffled, channels),
            "half, in order": (np.sort(shuffled[: n // 2]), channels),
            "half, shuffled, 2 channels": (shuffled[: n // 2], layer),
        }
        for what, (rows, ch) in cases.items():
            rows = rows.astype(np.intp)
            times = {"before (reference)": [], "library": []}
            fns = {"before (reference)": reference, "library": build_histogram}
            out = {name: fn(bins, ch, rows, binner.n_bins_total) for name, fn in fns.items()}
            same = np.array_equal(out["library"], out["before (reference)"])
            for _ in range(args.repeats):
                for name, fn in fns.items():  # interleaved: both see the same load
                    t = time.perf_counter()
                    fn(bins, ch, rows, binner.n_bins_total)
                    times[name].append(time.perf_counter() - t)
            for name, ts in times.items():
                print(f"| {dataset} | {what} ({len(rows)}) | {name} | {ch.shape[1]} "
                      f"| {np.median(ts):.3f} | {min(ts):.3f} | {same} |", flush=True)


# ------------------------------------------------------------------------------------- main


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", nargs="+", default=["letter", "pendigits", "mnist"])
    p.add_argument("--rounds", type=int, default=200, help="boosting rounds per method")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 10 rounds, at most 5000 training rows; prints only")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--fit-repeats", type=int, default=1,
                   help="fits per method, interleaved; the table reports medians")
    p.add_argument("--methods", nargs="+", choices=list(METHODS), default=None,
                   help="subset of methods (default: all but the -qb / -noqb ones)")
    p.add_argument("--output", default="BENCHMARKS.md", help="markdown file, repo-relative")
    p.add_argument("--kernel", action="store_true", help="time the histogram kernel alone")
    p.add_argument("--repeats", type=int, default=7, help="kernel timings per variant")
    p.add_argument("--worker", nargs=2, metavar=("DATASET", "METHOD"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick and args.rounds == 200:
        args.rounds = 10
    if args.worker:
        result = worker(*args.worker, args.rounds, args.threads, args.quick)
        sys.stdout.write(json.dumps(result) + "\n")
    elif args.kernel:
        run_kernel(args)
    else:
        run_benchmark(args)


if __name__ == "__main__":
    main()
