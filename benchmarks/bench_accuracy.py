"""Test error against training time (issue 16): rebelboost's defaults against LightGBM & co.

For each data set (``../shared/data/NAME.npz``: the official split, else a seeded stratified
80/20 split) every method runs in its own subprocess: a warm-up fit on a small slice (numba
cache loading, thread start-up), then the timed fit, with a callback that stamps the wall
time after every iteration; for rebelboost a process before it fits two iterations on all
the rows, so that numba compiles (and caches on disk) every kernel the timed fit runs, the
parallel ones too, and no compilation lands in a timed fit. Test error is computed
afterwards at checkpoints (staged predictions; not timed), so each method gives a curve of
test error against training time. Every library gets ``--threads`` threads. Peak memory is
the peak RSS during the fit minus the RSS just before it.

The callback changes what rebelboost runs: a fit with callbacks takes the booster's Python
loop, where a fit without them boosts a set of up to 65,536 rows x classes in one compiled
call. So for rebelboost the first iteration whose test error is at or below ``e*`` (from
every iteration's staged predictions) is also fitted on its own, without a callback, as a user
who asked for that many trees would, in a process of its own under the timed fit's protocol
(kernels compiled by a process before it, a warm-up on a small slice, then the first fit on
every row): its "fit to e*" time, beside the callback-stamped one.

Methods: rebelboost's defaults (``RebelClassifier()``), rebelboost at learning rate 0.5,
LightGBM's defaults (31 leaves, learning rate 0.1, 100 rounds) and LightGBM with 4 and 31
leaves at learning rates 0.1 and 0.05 (more rounds, up to a time budget), XGBoost ``hist``
with its defaults, scikit-learn ``HistGradientBoostingClassifier`` with its defaults but
``early_stopping=False`` (its per-iteration curve comes from ``warm_start`` steps of 5).
Methods other than the defaults stop at ``--budget`` times LightGBM-default's fit time.

Reported per set: LightGBM-default's final test error ``e*`` and fit time ``t*``; for each
method its final error, fit time, the time at which it first reaches ``e*`` (and the ratio to
``t*``), its best error within ``t*``, and peak memory. Targets (issue 16): rebelboost's
defaults reach ``e*`` in at most 0.7 ``t*`` and end at or below ``e*`` on most sets; MNIST under
2.0%; peak memory within 2x LightGBM's.

Usage (from the repository root)::

    python benchmarks/bench_accuracy.py                       # all sets: BENCHMARKS.md + plot
    python benchmarks/bench_accuracy.py --datasets letter --output /tmp/a.md
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import _git, _machine, _reset_peak, _rss_kib, _versions, write_section  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"
SECTION = "## Test error against training time (issue 16)"
DATASETS = ("mnist", "letter", "satimage", "pendigits", "optdigits", "shuttle", "connect4",
            "sleep", "fars")
# name: (label, library, parameters); rebel configurations are RebelClassifier parameters
METHODS = {
    "rebel-default": ("rebelboost defaults", "rebelboost", {}),
    "rebel-es-auto": ("rebelboost, early_stopping='auto'", "rebelboost",
                      {"early_stopping": "auto"}),
    "rebel-lr0.5": ("rebelboost, lr 0.5, 300 iterations, early_stopping='auto'", "rebelboost",
                    {"learning_rate": 0.5, "n_estimators": 300, "early_stopping": "auto"}),
    "rebel-l63": ("rebelboost, 63 leaves", "rebelboost", {"max_leaves": 63}),
    "rebel-l127": ("rebelboost, 127 leaves", "rebelboost", {"max_leaves": 127}),
    "rebel-goss0.5": ("rebelboost, GOSS on half the rows", "rebelboost",
                      {"subsample": 0.5, "sampling": "goss"}),
    "rebel-goss0.3": ("rebelboost, GOSS on 30% of the rows", "rebelboost",
                      {"subsample": 0.3, "sampling": "goss"}),
    "lgbm-default": ("LightGBM defaults (31 leaves, lr 0.1, 100 rounds)", "lightgbm", {}),
    "lgbm-l4-lr0.1": ("LightGBM, 4 leaves, lr 0.1", "lightgbm",
                      {"num_leaves": 4, "learning_rate": 0.1, "n_estimators": 2000}),
    "lgbm-l4-lr0.05": ("LightGBM, 4 leaves, lr 0.05", "lightgbm",
                       {"num_leaves": 4, "learning_rate": 0.05, "n_estimators": 2000}),
    "lgbm-l31-lr0.1": ("LightGBM, 31 leaves, lr 0.1, more rounds", "lightgbm",
                       {"num_leaves": 31, "learning_rate": 0.1, "n_estimators": 1000}),
    "lgbm-l31-lr0.05": ("LightGBM, 31 leaves, lr 0.05", "lightgbm",
                        {"num_leaves": 31, "learning_rate": 0.05, "n_estimators": 1000}),
    "xgb-hist": ("XGBoost hist defaults", "xgboost", {}),
    "hgb": ("sklearn HistGB defaults (no early stopping)", "scikit-learn", {}),
}
N_CHECKPOINTS = 40


def load(name: str):
    import numpy as np

    with np.load(DATA / f"{name}.npz") as d:
        if "X_train" in d:
            return (d["X_train"].astype(np.float32), d["y_train"],
                    d["X_test"].astype(np.float32), d["y_test"])
        X, y = d["X"].astype(np.float32), d["y"]
    from sklearn.model_selection import train_test_split

    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
    return X_tr, y_tr, X_te, y_te


# --------------------------------------------------------------------------- one method


class _Budget(Exception):
    pass


def worker(dataset: str, method: str, threads: int, budget_s: float | None,
           warm_only: bool = False, retime: int | None = None) -> dict:
    import numpy as np

    X, y, X_test, y_test = load(dataset)
    _, library, params = METHODS[method]
    stamps: list[float] = []
    start = [0.0]

    def tick() -> bool:
        stamps.append(time.perf_counter() - start[0])
        return budget_s is not None and stamps[-1] > budget_s

    if library == "rebelboost":
        from rebelboost import RebelClassifier

        def make(n=None):
            p = dict(params, n_jobs=threads, random_state=0)
            if n is not None:
                p["n_estimators"] = n
            return RebelClassifier(**p)

        def fit(est, X_, y_):
            est.fit(X_, y_, callbacks=[lambda info: tick()])

        def staged(est, its):
            wanted = set(its)
            return [np.mean(p != y_test) for i, p in enumerate(est.staged_predict(X_test), 1)
                    if i in wanted]
    elif library == "lightgbm":
        import lightgbm as lgb

        def make(n=None):
            p = dict(params, n_jobs=threads, verbose=-1, random_state=0)
            if n is not None:
                p["n_estimators"] = n
            return lgb.LGBMClassifier(**p)

        def callback(env):
            if tick():
                raise lgb.callback.EarlyStopException(env.iteration, env.evaluation_result_list)

        def fit(est, X_, y_):
            est.fit(X_, y_, callbacks=[callback])

        def staged(est, its):
            return [np.mean(est.predict(X_test, num_iteration=i) != y_test) for i in its]
    elif library == "xgboost":
        import xgboost as xgb

        class Stamp(xgb.callback.TrainingCallback):
            def after_iteration(self, model, epoch, evals_log):
                return tick()

        def make(n=None):
            p = dict(params, tree_method="hist", n_jobs=threads, random_state=0,
                     callbacks=[Stamp()])
            if n is not None:
                p["n_estimators"] = n
            return xgb.XGBClassifier(**p)

        def fit(est, X_, y_):
            est.fit(X_, y_)

        def staged(est, its):
            return [np.mean(est.predict(X_test, iteration_range=(0, i)) != y_test)
                    for i in its]
    else:
        from sklearn.ensemble import HistGradientBoostingClassifier

        def make(n=None):
            return HistGradientBoostingClassifier(early_stopping=False, random_state=0,
                                                  max_iter=n or 100)

        def fit(est, X_, y_):  # warm-start steps of 5 give the curve
            total = est.max_iter
            for n in range(5, total + 1, 5):
                est.set_params(max_iter=n, warm_start=True)
                est.fit(X_, y_)
                stamps.extend([time.perf_counter() - start[0]] * 5)
                if budget_s is not None and stamps[-1] > budget_s:
                    break

        def staged(est, its):
            wanted = set(its)
            return [np.mean(p != y_test) for i, p in enumerate(est.staged_predict(X_test), 1)
                    if i in wanted]

    if retime is not None:  # that many iterations, fitted without the callback
        def fit(est, X_, y_):
            est.fit(X_, y_)
    if warm_only:  # two iterations on all the rows: every kernel the fit runs is compiled
        fit(make(2), X, y)  # (numba caches it on disk for the timed process)
        return {}
    small = min(len(y), 3000)
    warm = make(3)
    fit(warm, X[:small], y[:small])
    stamps.clear()
    if retime is not None:
        est = make(retime)
        start[0] = time.perf_counter()
        fit(est, X, y)
        return {"iteration": retime, "fit_time": time.perf_counter() - start[0]}
    if library == "scikit-learn":
        from threadpoolctl import threadpool_limits

        limiter = threadpool_limits(threads)
    before = _rss_kib()
    peak_reset = _reset_peak()
    est = make()
    start[0] = time.perf_counter()
    fit(est, X, y)
    fit_time = time.perf_counter() - start[0]
    peak = _rss_kib("VmHWM")
    if library == "scikit-learn":
        limiter.unregister()
    # rebelboost's early stopping keeps its best iteration: the curve ends there (the time
    # spent on the iterations after it is in fit_time)
    n = getattr(est, "n_estimators_", len(stamps)) if library == "rebelboost" else len(stamps)
    grid = (max(1, round(n * (i / N_CHECKPOINTS) ** 1.5)) for i in range(1, N_CHECKPOINTS + 1))
    its = sorted(set(grid) | {n})
    every = None
    if library == "rebelboost":  # every iteration's error (its first at e* is fitted alone)
        every = [float(e) for e in staged(est, range(1, n + 1))]
        errors = [every[i - 1] for i in its]
    else:
        errors = staged(est, its)
    return {"dataset": dataset, "method": method, "iterations": len(stamps), "kept": n,
            "every_error": every,
            "fit_time": fit_time,
            "checkpoints": its, "times": [stamps[i - 1] for i in its],
            "errors": [float(e) for e in errors],
            "peak_mib": (peak - before) / 1024 if peak_reset else None}


# --------------------------------------------------------------------------- driver


def run(dataset: str, method: str, args, budget_s: float | None,
        retime: int | None = None) -> dict:
    cmd = [sys.executable, __file__, "--worker", dataset, method, "--threads", str(args.threads)]
    if budget_s is not None:
        cmd += ["--budget-s", f"{budget_s:.3f}"]
    if retime is not None:
        cmd += ["--retime", str(retime)]
    if METHODS[method][1] == "rebelboost":  # compile (and cache) every kernel beforehand
        subprocess.run(cmd + ["--warm-only"], check=True, capture_output=True, cwd=ROOT)
    out = subprocess.run(cmd, text=True, capture_output=True, cwd=ROOT)
    if out.returncode != 0:
        raise RuntimeError(f"{dataset} {method} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def summarise(rows: list[dict]) -> dict:
    ref = next(r for r in rows if r["method"] == "lgbm-default")
    target, t_ref = ref["errors"][-1], ref["fit_time"]
    out = {}
    for r in rows:
        reach = next((t for t, e in zip(r["times"], r["errors"], strict=True) if e <= target),
                     None)
        within = [e for t, e in zip(r["times"], r["errors"], strict=True) if t <= t_ref]
        alone = r.get("retimed")
        out[r["method"]] = {"final": r["errors"][-1], "fit_time": r["fit_time"],
                            "iterations": r["iterations"], "reach": reach,
                            "ratio": None if reach is None else reach / t_ref,
                            "alone": alone,
                            "alone_ratio": None if alone is None else alone["fit_time"] / t_ref,
                            "best_within": min(within) if within else None,
                            "peak_mib": r["peak_mib"]}
    return {"target": target, "t_ref": t_ref, "methods": out}


def render(results: dict[str, list[dict]], command: str) -> str:
    lines = [
        f"Command (from the repository root): `{command}`  ",
        f"Date: {datetime.date.today()}; code: {_git()}  ",
        f"Machine: {_machine()}; {ARGS.threads} threads for every library; other jobs may "
        "share the machine: compare rows of one data set (each method ran once, one after "
        "the other).  ",
        f"Versions: {_versions()}",
        "",
        "Time is wall-clock training time from the start of `fit` (binning included); test "
        "error at checkpoints of the staged predictions. `e*`, `t*`: LightGBM-default's final "
        "test error and fit time. 'reaches e*': the training time after which the method's "
        "test error is first at or below `e*` (ratio to `t*`). 'best in t*': the lowest test "
        "error reached within `t*`. Methods other than the defaults stop at "
        f"{ARGS.budget}x `t*`. 'fit to e* alone' (rebelboost): the first iteration at or "
        "below `e*`, fitted without the timing callback (which sends rebelboost's fit to its "
        "Python loop) in a process of its own as the timed fit is, and its ratio to `t*`.",
        "",
        "| data set | method | iterations | final test error | fit time (s) | reaches e* at (s) "
        "| vs t* | fit to e* alone (s) | vs t* | best in t* | peak memory (MiB) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    for dataset, rows in results.items():
        rows = sorted(rows, key=lambda r: list(METHODS).index(r["method"]))
        s = summarise(rows)
        for r in rows:
            m = s["methods"][r["method"]]
            reach = "never" if m["reach"] is None else f"{m['reach']:.2f}"
            ratio = "—" if m["ratio"] is None else f"{m['ratio']:.2f}"
            best = "—" if m["best_within"] is None else f"{m['best_within']:.4f}"
            peak = "—" if m["peak_mib"] is None else f"{m['peak_mib']:.0f}"
            alone = ("—" if m["alone"] is None else
                     f"{m['alone']['fit_time']:.2f} ({m['alone']['iteration']} it) | "
                     f"{m['alone_ratio']:.2f}")
            if m["alone"] is None:
                alone += " | —"
            lines.append(f"| {dataset} (e* {s['target']:.4f}, t* {s['t_ref']:.2f} s) | "
                         f"{METHODS[r['method']][0]} | {m['iterations']} | {m['final']:.4f} | "
                         f"{m['fit_time']:.2f} | {reach} | {ratio} | {alone} | {best} | "
                         f"{peak} |")
        d = s["methods"].get("rebel-default")
        if d is not None:
            verdicts.append((dataset, d, s))
    lines += ["", "Targets for rebelboost's defaults:", ""]
    low = [v for v in verdicts if v[1]["final"] <= v[2]["target"]]
    for bound, issue in ((0.6, 27), (0.7, 16)):
        fast = [v for v in verdicts if v[1]["ratio"] is not None and v[1]["ratio"] <= bound]
        lines.append(f"* reaches LightGBM-default's final test error within {bound}x its time "
                     f"(issue {issue}): {len(fast)} of {len(verdicts)} sets "
                     f"({', '.join(v[0] for v in fast)}).")
        alone = [v for v in verdicts if v[1]["alone_ratio"] is not None
                 and v[1]["alone_ratio"] <= bound]
        lines.append(f"  * a fit of that many iterations alone, within {bound}x: {len(alone)} of "
                     f"{len(verdicts)} sets ({', '.join(v[0] for v in alone)}).")
    lines.append(f"* ends at or below it: {len(low)} of {len(verdicts)} sets "
                 f"({', '.join(v[0] for v in low)}).")
    for dataset, d, s in verdicts:
        lgbm = s["methods"]["lgbm-default"]["peak_mib"]
        if dataset == "mnist":
            lines.append(f"* MNIST test error {d['final']:.4f} (target < 0.02): "
                         f"**{'met' if d['final'] < 0.02 else 'NOT met'}**.")
        if lgbm and d["peak_mib"] is not None:
            lines.append(f"* {dataset}: peak memory {d['peak_mib']:.0f} MiB against LightGBM's "
                         f"{lgbm:.0f} MiB ({d['peak_mib'] / lgbm:.2f}x; target <= 1.2x, issue 27).")
    return "\n".join(lines)


def plot(results: dict[str, list[dict]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(results)
    cols = min(3, n)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    for ax, (dataset, runs) in zip(axes.flat, results.items(), strict=False):
        for r in sorted(runs, key=lambda r: list(METHODS).index(r["method"])):
            style = "-" if r["method"].startswith("rebel") else "--"
            color = f"C{list(METHODS).index(r['method'])}"  # one colour per method everywhere
            ax.plot(r["times"], r["errors"], style, color=color, label=r["method"])
        ref = next(r for r in runs if r["method"] == "lgbm-default")
        ax.axhline(ref["errors"][-1], color="grey", lw=0.6)
        ax.set_xscale("log")
        ax.set_title(dataset)
        ax.set_xlabel("training time (s)")
        ax.set_ylabel("test error")
        low = min(min(r["errors"]) for r in runs)
        ax.set_ylim(low * 0.9, max(ref["errors"][-1] * 3, low * 2))
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--budget", type=float, default=2.0,
                        help="non-default methods stop at this multiple of t*")
    parser.add_argument("--output", default=str(ROOT / "BENCHMARKS.md"))
    parser.add_argument("--from-results", action="store_true",
                        help="render the saved results/accuracy_<set>.json of --datasets (a "
                        "set rerun alone, e.g. after other load disturbed it, joins the rest)")
    parser.add_argument("--add", action="store_true",
                        help="run only --methods and add them to each set's saved results")
    parser.add_argument("--worker", nargs=2, metavar=("DATASET", "METHOD"))
    parser.add_argument("--budget-s", type=float)
    parser.add_argument("--warm-only", action="store_true")
    parser.add_argument("--retime", type=int, help="(worker) time a fit of this many "
                        "iterations without the timing callback")
    global ARGS
    ARGS = args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(*args.worker, args.threads, args.budget_s, args.warm_only,
                                args.retime)))
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    results = {}
    methods = ["lgbm-default"] + [m for m in args.methods if m != "lgbm-default"]
    if args.add:  # LightGBM-default is the reference: rerun only when asked for
        methods = list(dict.fromkeys(args.methods))
    for dataset in args.datasets:
        saved = RESULTS / f"accuracy_{dataset}.json"
        if args.from_results:
            results[dataset] = json.loads(saved.read_text())
            continue
        rows = []
        if args.add and saved.exists():  # rerun only these methods, keep the others
            rows = [r for r in json.loads(saved.read_text()) if r["method"] not in methods]
        for method in methods:
            budget = None
            if method not in ("lgbm-default", "rebel-default", "rebel-es-auto"):
                ref = next(r for r in rows if r["method"] == "lgbm-default")
                budget = args.budget * ref["fit_time"]
            r = run(dataset, method, args, budget)
            rows.append(r)
            print(f"# {dataset:9s} {method:16s} {r['iterations']:5d} it  error "
                  f"{r['errors'][-1]:.4f}  fit {r['fit_time']:7.2f} s", flush=True)
        ref = next((r for r in rows if r["method"] == "lgbm-default"), None)
        for r in rows:  # rebelboost's first iteration at e*, fitted without a callback
            every = r.get("every_error")
            if ref is None or not every or r["method"] not in methods:
                continue
            reach = next((i for i, e in enumerate(every, 1) if e <= ref["errors"][-1]), None)
            if reach is not None:
                r["retimed"] = run(dataset, r["method"], args, None, retime=reach)
                print(f"# {dataset:9s} {r['method']:16s} {reach:5d} it alone: fit "
                      f"{r['retimed']['fit_time']:7.2f} s", flush=True)
        results[dataset] = rows
        (RESULTS / f"accuracy_{dataset}.json").write_text(json.dumps(rows))
    command = "python benchmarks/bench_accuracy.py" + (
        "" if args.datasets == list(DATASETS) else " --datasets " + " ".join(args.datasets))
    if args.from_results:
        command = ("python benchmarks/bench_accuracy.py --datasets SET (one run per set), then "
                   + command.replace(".py", ".py --from-results", 1))
    body = render(results, command)
    body += "\n\n![test error against training time](benchmarks/results/accuracy.png)"
    plot(results, RESULTS / "accuracy.png")
    out = Path(args.output)
    write_section(out, body, SECTION)
    print(body)


if __name__ == "__main__":
    main()
