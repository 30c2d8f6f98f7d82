"""Categorical benchmark (issue 30): native category splits against codes, one-hot and the peers.

The suite's sets whose columns PMLB marks nominal (``nominal`` in each ``../shared/data/suite``
file; connect4 and fars from ``../shared/data`` with the columns the suite README lists) and a
synthetic high-cardinality set (4 classes, one column of 300 levels each leaning to one class,
one numeric column; and one of 10,000 levels on 100,000 rows). Methods, with their defaults and
2 threads:

* ``rebel-native``: ``RebelClassifier`` with the nominal columns as pandas categories;
* ``rebel-codes``: the same columns as plain numbers (``categorical_features=None``);
* ``rebel-onehot``: the nominal columns one-hot encoded;
* ``lightgbm``, ``xgboost`` (``enable_categorical``), ``hist-gb`` (``categorical_features=
  'from_dtype'``): their native modes on the pandas categories;
* ``catboost``: ``cat_features`` on the same columns as strings (missing values as their own
  level); each fit in a child process stopped after ``--catboost-limit`` seconds (its
  defaults' 1,000 iterations can take minutes on a few hundred rows) and recorded as a
  timeout.

Stratified 75/25 splits per seed; test error, fit wall and CPU time. Results are appended to
``benchmarks/results/categorical.jsonl`` (resumable: finished (set, seed, method) are skipped);
``--report`` prints mean ranks and per-set errors::

    python benchmarks/bench_categorical.py --seeds 3
    python benchmarks/bench_categorical.py --report
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from bench_suite import DATA, THREADS, load, split  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "categorical.jsonl"
SUITE_SETS = ("dna", "splice", "dermatology", "calendarDOW", "krkopt", "nursery",
              "lymphography", "flags", "allbp", "allhypo", "allrep", "analcatdata_authorship",
              "analcatdata_dmft", "hayes_roth", "mfeat_morphological", "cars")
FARS_NOMINAL = ("SEX", "PERSON_TYPE", "EJECTION", "EJECTION_PATH", "EXTRICATION",
                "POLICE_REPORTED_ALCOHOL_INVOLVEMENT", "METHOD_ALCOHOL_DETERMINATION",
                "ALCOHOL_TEST_TYPE", "POLICE-REPORTED_DRUG_INVOLVEMENT",
                "METHOD_OF_DRUG_DETERMINATION", "DRUG_TEST_TYPE", "DRUG_TEST_TYPE_(2_of_3)",
                "DRUG_TEST_TYPE_(3_of_3)", "HISPANIC_ORIGIN", "TAKEN_TO_HOSPITAL")
SETS = (*SUITE_SETS, "connect4", "fars", "synthetic300", "synthetic10000")
METHODS = ("rebel-native", "rebel-codes", "rebel-onehot", "lightgbm", "xgboost", "hist-gb",
           "catboost")


def nominal_set(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, y, nominal mask) of a set."""
    if name == "synthetic300":
        return synthetic(300)
    if name == "synthetic10000":
        return synthetic(10_000, n=100_000)
    X, y = load(name)
    if name == "connect4":
        return X, y, np.ones(X.shape[1], bool)
    if name == "fars":
        with np.load(DATA / "fars.npz") as d:
            names = [str(n) for n in d["feature_names"]] if "feature_names" in d else []
        return X, y, np.array([n in FARS_NOMINAL for n in names], bool)
    with np.load(DATA / "suite" / f"{name}.npz") as d:
        nominal = np.asarray(d["nominal"], bool)
        if name == "cars":  # issue 30's "brand set": PMLB marks cylinders only
            nominal = nominal | (d["feature_names"] == "brand")
        return X, y, nominal


def synthetic(n_levels: int, n: int = 4000, k: int = 4, seed: int = 0):
    """One column of ``n_levels`` levels, each leaning to one class (70%), and a numeric one
    that flips the class beyond 1.5 standard deviations."""
    rng = np.random.default_rng(seed)
    leaning = rng.integers(0, k, n_levels)
    level = rng.integers(0, n_levels, n)
    x = rng.normal(size=n)
    y = np.where(rng.random(n) < 0.7, leaning[level], rng.integers(0, k, n))
    y = np.where(x > 1.5, (y + 1) % k, y)
    return np.column_stack([level, x]).astype(np.float32), y.astype(np.int64), \
        np.array([True, False])


def frame(X: np.ndarray, nominal: np.ndarray, categories: list) -> pd.DataFrame:
    """X as a DataFrame whose nominal columns are pandas categories over the training values
    (values unseen in training become missing, for every library alike)."""
    columns = {}
    for j in range(X.shape[1]):
        col = X[:, j]
        if nominal[j]:  # whole-number codes (PMLB's), as integers: XGBoost wants them so
            values = pd.array(np.where(np.isnan(col), 0, col).astype(np.int64), dtype="Int64")
            values[np.isnan(col)] = pd.NA
            col = pd.Categorical(values, categories=categories[j].astype(np.int64))
        columns[f"f{j}"] = col
    return pd.DataFrame(columns)


def make(method: str, seed: int):
    if method.startswith("rebel"):
        from rebelboost import RebelClassifier

        spec = "from_dtype" if method == "rebel-native" else None
        return RebelClassifier(categorical_features=spec, n_jobs=THREADS, random_state=seed)
    if method == "lightgbm":
        import lightgbm as lgb

        return lgb.LGBMClassifier(n_jobs=THREADS, verbose=-1, random_state=seed)
    if method == "xgboost":
        import xgboost as xgb

        return xgb.XGBClassifier(tree_method="hist", enable_categorical=True, n_jobs=THREADS,
                                 random_state=seed)
    if method == "catboost":
        from catboost import CatBoostClassifier

        return CatBoostClassifier(thread_count=THREADS, random_seed=seed, verbose=0,
                                  allow_writing_files=False)
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(categorical_features="from_dtype", random_state=seed)


def inputs(method: str, X_tr, X_te, nominal):
    """The training and test inputs a method reads."""
    cats = [np.unique(X_tr[:, j][~np.isnan(X_tr[:, j])]) if nominal[j] else None
            for j in range(X_tr.shape[1])]
    if method == "rebel-codes":
        return X_tr, X_te
    train, test = frame(X_tr, nominal, cats), frame(X_te, nominal, cats)
    if method == "catboost":  # (CatBoost reads categories as strings, NaN not among them)
        strings = {c: lambda d, c=c: d[c].astype(object).fillna("missing").astype(str)
                   for c, n in zip(train.columns, nominal, strict=True) if n}
        return train.assign(**strings), test.assign(**strings)
    if method == "rebel-onehot":
        return (pd.get_dummies(train, dtype=np.float32).to_numpy(np.float32),
                pd.get_dummies(test, dtype=np.float32).to_numpy(np.float32))
    if method == "hist-gb" and any(c is not None and len(c) > 255 for c in cats):
        raise RuntimeError("more than 255 categories")  # (scikit-learn refuses them)
    return train, test


def native_split(name: str, seed: int):
    """``(train, test, codes, classes, y_test)``: seed's split of a set with its nominal
    columns as pandas categories (the native method's inputs), the training labels as codes
    into ``classes``."""
    X, y, nominal = nominal_set(name)
    X_tr, X_te, y_tr, y_te = split(X.astype(np.float64), y, seed)
    classes, codes = np.unique(y_tr, return_inverse=True)
    train, test = inputs("rebel-native", X_tr, X_te, nominal)
    return train, test, codes, classes, y_te


def run_one(name: str, seed: int, method: str) -> dict:
    from threadpoolctl import threadpool_limits

    X, y, nominal = nominal_set(name)
    X = X.astype(np.float64)
    X_tr, X_te, y_tr, y_te = split(X, y, seed)
    classes, codes = np.unique(y_tr, return_inverse=True)
    record = _header(name, seed, method, X, y, nominal)
    try:
        train, test = inputs(method, X_tr, X_te, nominal)
        est = make(method, seed)
        fit = {"cat_features": list(np.flatnonzero(nominal))} if method == "catboost" else {}
        with threadpool_limits(THREADS):
            start, cpu = time.perf_counter(), time.process_time()
            est.fit(train, codes, **fit)
            record["fit_s"] = round(time.perf_counter() - start, 4)
            record["fit_cpu_s"] = round(time.process_time() - cpu, 4)
            pred = classes[np.asarray(est.predict(test)).reshape(-1).astype(np.int64)]
        record.update(status="ok", error=float(np.mean(pred != y_te)))
    except Exception as exc:  # a method that cannot run a set is recorded, not fatal
        record.update(status="failed", reason=f"{type(exc).__name__}: {exc}"[:300])
    return record


def run_limited(name: str, seed: int, method: str, limit: float) -> dict:
    """:func:`run_one` in a child process, recorded as a timeout past ``limit`` seconds."""
    command = [sys.executable, __file__, "--one", f"{name},{seed},{method}"]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=limit,
                             check=True).stdout
        return json.loads(out.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return {**_header(name, seed, method, *nominal_set(name)), "status": "timeout",
                "limit_s": limit}


def _header(name: str, seed: int, method: str, X, y, nominal) -> dict:
    """The fields every record of a fit starts with."""
    return {"set": name, "seed": seed, "method": method, "n": len(y), "d": X.shape[1],
            "n_nominal": int(nominal.sum())}


def done(results: Path) -> set:
    if not results.exists():
        return set()
    rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    return {(r["set"], r["seed"], r["method"]) for r in rows}


def report(results: Path) -> None:
    from scipy.stats import rankdata

    rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    ok = {(r["set"], r["seed"], r["method"]): r for r in rows if r["status"] == "ok"}
    late = {(r["set"], r["seed"], r["method"]) for r in rows if r["status"] == "timeout"}
    sets = sorted({s for s, _, _ in ok})
    print("| set | " + " | ".join(METHODS) + " |")
    print("|---|" + "---|" * len(METHODS))
    ranks = []
    for s in sets:
        seeds = sorted({sd for (ss, sd, _) in ok if ss == s})
        # a method past its time limit on any seed ranks last on the set (ties averaged)
        errs = [np.inf if any((s, sd, m) in late for sd in seeds)
                else np.mean([ok[(s, sd, m)]["error"] for sd in seeds if (s, sd, m) in ok])
                if any((s, sd, m) in ok for sd in seeds) else np.nan for m in METHODS]
        cells = [f"{100 * e:.2f}" if np.isfinite(e) else "timeout" if e == np.inf else "-"
                 for e in errs]
        print(f"| {s} ({len(seeds)} seeds) | " + " | ".join(cells) + " |")
        if not any(np.isnan(errs)):
            ranks.append(rankdata(errs))
    if ranks:
        mean = np.mean(ranks, axis=0)
        print(f"\nMean rank over {len(ranks)} sets where every method ran or timed out "
              "(last): " + ", ".join(f"{m} {r:.2f}" for m, r in zip(METHODS, mean,
                                                                    strict=True)))
    ratios = {m: [] for m in METHODS}  # fit CPU time over LightGBM's, same set and seed
    for (s, sd, m), r in ok.items():
        peer = ok.get((s, sd, "lightgbm"))
        if peer and peer["fit_cpu_s"] > 0 and r["fit_cpu_s"] > 0:
            ratios[m].append(r["fit_cpu_s"] / peer["fit_cpu_s"])
    print("Geometric mean fit CPU time / LightGBM's (same split): " + ", ".join(
        f"{m} {np.exp(np.mean(np.log(v))):.2f}x" for m, v in ratios.items() if v))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--catboost-limit", type=float, default=300.0,
                        help="wall-clock seconds a CatBoost fit may take")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # 'set,seed,method': one fit, printed
    args = parser.parse_args()
    if args.one:
        name, seed, method = args.one.split(",")
        print(json.dumps(run_one(name, int(seed), method)))
        return
    if args.report:
        report(args.results)
        return
    args.results.parent.mkdir(parents=True, exist_ok=True)
    finished = done(args.results)
    for seed in range(args.seeds):  # breadth first: every set once before the second seed
        for name in args.sets.split(","):
            for method in args.methods.split(","):
                if (name, seed, method) in finished:
                    continue
                record = (run_limited(name, seed, method, args.catboost_limit)
                          if method == "catboost" else run_one(name, seed, method))
                with open(args.results, "a") as f:
                    f.write(json.dumps(record) + "\n")
                print(name, seed, method, record["status"], record.get("error"), flush=True)


if __name__ == "__main__":
    main()
