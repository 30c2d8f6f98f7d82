"""How an iteration's time grows with rows, classes and features (issue 27, "growth that
scales"): rebelboost's defaults beside LightGBM (with and without ``use_quantized_grad``) and
XGBoost ``hist``, on synthetic data, 2 threads each.

An iteration's time is the difference of two fits of ``a`` and ``b`` iterations divided by
``b - a`` (the setup, binning included, cancels out); a LightGBM or XGBoost iteration fits K
trees, one of rebelboost's one vector-leaf tree. Each library first fits a small slice so
that compilation and thread start-up are not timed. The data: float32 standard normal
features, K classes from the argmax of a random linear score plus noise.

    python benchmarks/bench_growth.py                  # the three sweeps, plot + BENCHMARKS.md
    python benchmarks/bench_growth.py --quick          # smaller sweeps, prints only
    python benchmarks/bench_growth.py --point 20000000 50 3 --methods rebelboost lightgbm
                                                       # one configuration, prints only
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SECTION = "## How an iteration grows with the data (issue 27)"
METHODS = ("rebelboost", "lightgbm", "lightgbm-quantized", "xgboost")
THREADS = 2


def synthetic(n: int, d: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d), dtype=np.float32)
    w = rng.standard_normal((min(d, 10), k)).astype(np.float32)
    score = X[:, :min(d, 10)] @ w + rng.standard_normal((n, k), dtype=np.float32)
    return X, score.argmax(axis=1)


def estimator(method: str, n_iter: int):
    if method == "rebelboost":
        from rebelboost import RebelClassifier

        return RebelClassifier(n_iter, n_jobs=THREADS, random_state=0)
    if method.startswith("lightgbm"):
        from lightgbm import LGBMClassifier

        return LGBMClassifier(n_estimators=n_iter, n_jobs=THREADS, verbose=-1, random_state=0,
                              use_quantized_grad=method.endswith("quantized"))
    from xgboost import XGBClassifier

    return XGBClassifier(n_estimators=n_iter, tree_method="hist", n_jobs=THREADS,
                         random_state=0)


def per_iteration(method: str, X, y, a: int, b: int) -> float:
    # one iteration on these rows first: rebelboost compiles kernels specialised for a size
    # (the channel count's SIMD adds) on the first call that pays for them
    estimator(method, 1).fit(X, y)
    times = {}
    for n_iter in (a, b):
        gc.collect()
        start = time.perf_counter()
        estimator(method, n_iter).fit(X, y)
        times[n_iter] = time.perf_counter() - start
    return max(times[b] - times[a], 0.0) / (b - a)


def sweeps(quick: bool) -> dict[str, list[dict]]:
    """(axis, [{n, d, k}]): rows at 50 features and 3 classes, classes and features at
    100,000 rows."""
    rows = [10_000, 100_000, 1_000_000] if quick else [10_000, 100_000, 1_000_000, 4_000_000]
    base = 30_000 if quick else 100_000
    return {"rows": [{"n": n, "d": 50, "k": 3} for n in rows],
            "classes": [{"n": base, "d": 50, "k": k} for k in (3, 10, 26)],
            "features": [{"n": base, "d": d, "k": 3} for d in (10, 50, 200)]}


def run(quick: bool, point: tuple[int, int, int] | None = None,
        methods: tuple[str, ...] = METHODS) -> list[dict]:
    X, y = synthetic(2000, 20, 3)
    for method in methods:  # compile and start threads outside the timings
        estimator(method, 2).fit(X, y)
    out = []
    chosen = sweeps(quick) if point is None else {
        "point": [dict(zip(("n", "d", "k"), point, strict=True))]}
    for axis, cases in chosen.items():
        for case in cases:
            X, y = synthetic(case["n"], case["d"], case["k"])
            a, b = (2, 6) if case["n"] >= 1_000_000 else (5, 25)
            for method in methods:
                row = {"axis": axis, **case, "method": method, "iterations": [a, b],
                       "seconds_per_iteration": per_iteration(method, X, y, a, b)}
                out.append(row)
                print(json.dumps(row), flush=True)
            del X, y
    return out


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, (axis, key, label) in zip(axes, [("rows", "n", "training rows (50 features, K=3)"),
                                             ("classes", "k", "classes K (100,000 rows)"),
                                             ("features", "d", "features (100,000 rows, K=3)")],
                                      strict=True):
        for method in METHODS:
            pts = sorted((r[key], r["seconds_per_iteration"]) for r in results
                         if r["axis"] == axis and r["method"] == method)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=method)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("seconds per iteration")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend()
    fig.suptitle("Time per boosting iteration (2 threads; LightGBM and XGBoost fit K trees "
                 "an iteration)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def table(results: list[dict]) -> str:
    lines = ["| sweep | rows | features | K | " + " | ".join(METHODS)
             + " | rebelboost / LightGBM |", "|---" * (5 + len(METHODS)) + "|"]
    keys = sorted({(r["axis"], r["n"], r["d"], r["k"]) for r in results},
                  key=lambda t: (["rows", "classes", "features"].index(t[0]), t[1], t[3], t[2]))
    for axis, n, d, k in keys:
        got = {r["method"]: r["seconds_per_iteration"] for r in results
               if (r["axis"], r["n"], r["d"], r["k"]) == (axis, n, d, k)}
        ratio = got["rebelboost"] / got["lightgbm"] if got.get("lightgbm") else float("nan")
        lines.append(f"| {axis} | {n:,} | {d} | {k} | "
                     + " | ".join(f"{1e3 * got[m]:.1f} ms" for m in METHODS)
                     + f" | {ratio:.2f}x |")
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller sweeps; prints only")
    p.add_argument("--point", nargs=3, type=int, metavar=("ROWS", "FEATURES", "K"),
                   help="time one configuration only; prints only")
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    args = p.parse_args(argv)
    results = run(args.quick, args.point, tuple(args.methods))
    if args.point:
        for r in results:
            print(f"{r['method']}: {1e3 * r['seconds_per_iteration']:.1f} ms an iteration")
        return
    print(table(results))
    if args.quick:
        return
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "growth.json").write_text(json.dumps(results, indent=1))
    plot(results, RESULTS / "growth.png")


if __name__ == "__main__":
    main()
