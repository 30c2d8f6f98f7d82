"""Cost-sensitive decisions (issue 15): mean test cost of REBEL's routes against peers.

For each data set (``../shared/data/NAME.npz``; official test split where there is one, else a
seeded random one) the training set is subsampled (stratified, every class kept) to
``--n-train`` rows so that the run fits a 2-core budget. Each set gets 20 random cost matrices
(|normal| off-diagonal, scaled so that uniform random guessing costs 1 under the training
priors) and two structured ones: missing the rarest class costs 10 (1 otherwise), and ordinal
``|i - j|`` costs, both scaled the same way. Per (set, matrix), the mean test cost of:

* ``rebel-loss-<subcosts>``: ``RebelClassifier(cost_matrix=C, subcosts=...)`` (argmax H);
* ``rebel-posterior``: ``cost_strategy='posterior'``, a cost-neutral REBEL, temperature fitted
  on 10% held-out rows, ``argmin (p @ C)`` (the model does not depend on C: fitted once);
* ``rebel-auto-<subcosts>``: ``cost_strategy='auto'`` (route picked on a 10% split);
* ``lgbm-minrisk`` / ``hgb-minrisk``: LightGBM / scikit-learn HistGradientBoosting, cost-neutral,
  ``argmin (predict_proba @ C)``;
* ``lgbm-weights``: LightGBM with sample weights ``mean_k C[y, k]`` (class weights), argmax;
* ``ignore-costs``: cost-neutral REBEL's argmax.

REBEL runs with the library's defaults (100 vector-leaf trees), or with ``--weak-learner``
``--trees`` trees of depth ``--depth``; LightGBM and HistGradientBoosting their
defaults (100 rounds). Everything single-threaded. Also recorded per set: log-loss and top-label
expected calibration error of the cost-neutral probabilities (REBEL at T = 1 and with the
temperature its posterior route fits, LightGBM, HistGradientBoosting).

Issue 29's suite benchmark and known mixtures: ``--suite`` / ``--mixtures``
(:mod:`cost_suite`, its docstring says what they run).

Usage (from the repository root)::

    python benchmarks/bench_cost.py                # full run: results/cost_<set>.json, cost.md
    python benchmarks/bench_cost.py --datasets vowel   # one set (then --render merges them)
    python benchmarks/bench_cost.py --quick        # 2 sets, 3 matrices, prints only
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from stratified import subsample

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"
DATASETS = ("pendigits", "satimage", "letter", "optdigits", "vowel", "shuttle", "connect4")
SUBCOSTS = ("calibrated", "paper", "thesis")


def load(name: str, n_train: int, n_test: int, rng: np.random.Generator):
    """(X_train, y_train, X_test, y_test, n_train_full), training rows subsampled."""
    with np.load(DATA / f"{name}.npz") as d:
        if "X_train" in d:
            X, y, X_test, y_test = d["X_train"], d["y_train"], d["X_test"], d["y_test"]
        else:
            order = rng.permutation(len(d["y"]))
            X_all, y_all = d["X"][order], d["y"][order]
            X, y = X_all[n_test:], y_all[n_test:]
            X_test, y_test = X_all[:n_test], y_all[:n_test]
    keep = subsample(y, n_train, rng)
    return (X[keep].astype(np.float64), y[keep], X_test.astype(np.float64), y_test, len(y))


def cost_matrices(rng: np.random.Generator, priors: np.ndarray, n_random: int):
    """``[(label, C)]``: random |normal| matrices, then the structured ones."""
    from rebelboost.experiments.cost_sensitive import random_cost_matrix

    k = len(priors)

    def scaled(c):
        return c / (priors @ c.mean(axis=1))

    out = [(f"random-{m + 1}", random_cost_matrix(rng, priors)) for m in range(n_random)]
    miss = 1.0 - np.eye(k)
    miss[np.argmin(priors)] *= 10.0
    i = np.arange(k)
    out.append(("miss-rarest-10x", scaled(miss)))
    out.append(("ordinal", scaled(np.abs(i[:, None] - i[None, :]).astype(float))))
    return out


def mean_cost(cost: np.ndarray, y: np.ndarray, pred: np.ndarray) -> float:
    return float(cost[y, pred].mean())


def calibration(proba: np.ndarray, y: np.ndarray) -> dict:
    from rebelboost.costs import expected_calibration_error

    p = np.maximum(proba[np.arange(len(y)), y], 1e-15)
    return {"log_loss": float(-np.log(p).mean()),
            "ece": expected_calibration_error(proba, y), "error": float(np.mean(
                np.argmax(proba, axis=1) != y))}


def run_dataset(name: str, args, rng: np.random.Generator) -> dict:
    import lightgbm as lgb
    from sklearn.ensemble import HistGradientBoostingClassifier

    from rebelboost import RebelClassifier
    from rebelboost.costs import min_risk_codes

    X, y, X_test, y_test, n_full = load(name, args.n_train, args.n_test, rng)
    k = int(y.max()) + 1
    priors = np.bincount(y, minlength=k) / len(y)
    rebel_params = dict(random_state=0, n_jobs=1)  # the library's defaults
    if args.weak_learner is not None:
        rebel_params.update(weak_learner=args.weak_learner, n_estimators=args.trees,
                            max_depth=args.depth)
    t0 = time.perf_counter()
    neutral = RebelClassifier(**rebel_params).fit(X, y)
    # The posterior route's model and temperature do not depend on C: fit once, swap C.
    # (Any matrix other than 1 - I takes the route; predictions below swap in each C.)
    posterior = RebelClassifier(cost_strategy="posterior", cost_matrix=2.0 * (1 - np.eye(k)),
                                **rebel_params)
    posterior.fit(X, y)
    lgbm = lgb.LGBMClassifier(n_jobs=1, verbose=-1, random_state=0).fit(X, y)
    hgb = HistGradientBoostingClassifier(random_state=0).fit(X, y)
    probas = {"rebel T=1": neutral.predict_proba(X_test),
              f"rebel T={posterior.temperature_:.2f}": posterior.predict_proba(X_test),
              "lightgbm": lgbm.predict_proba(X_test), "hgb": hgb.predict_proba(X_test)}
    calib = {m: calibration(p, y_test) for m, p in probas.items()}
    neutral_pred = neutral.predict(X_test)
    trials = []
    for label, cost in cost_matrices(rng, priors, args.matrices):
        row = {"matrix": label}
        for kind in SUBCOSTS:
            model = RebelClassifier(cost_matrix=cost, subcosts=kind, cost_strategy="loss",
                                    **rebel_params).fit(X, y)
            row[f"rebel-loss-{kind}"] = mean_cost(cost, y_test, model.predict(X_test))
        posterior.cost_matrix_ = cost
        row["rebel-posterior"] = mean_cost(cost, y_test, posterior.predict(X_test))
        for kind in args.auto_subcosts:
            auto = RebelClassifier(cost_matrix=cost, subcosts=kind, cost_strategy="auto",
                                   **rebel_params).fit(X, y)
            row[f"rebel-auto-{kind}"] = mean_cost(cost, y_test, auto.predict(X_test))
            row[f"auto-{kind}-route"] = auto.cost_strategy_
        row["lgbm-minrisk"] = mean_cost(cost, y_test, min_risk_codes(probas["lightgbm"], cost))
        weighted = lgb.LGBMClassifier(n_jobs=1, verbose=-1, random_state=0)
        weighted.fit(X, y, sample_weight=cost[y].sum(axis=1) / (k - 1))
        row["lgbm-weights"] = mean_cost(cost, y_test, weighted.predict(X_test))
        row["hgb-minrisk"] = mean_cost(cost, y_test, min_risk_codes(probas["hgb"], cost))
        row["ignore-costs"] = mean_cost(cost, y_test, neutral_pred)
        trials.append(row)
    seconds = time.perf_counter() - t0
    print(f"{name}: {len(trials)} matrices in {seconds:.0f} s", flush=True)
    return {"dataset": name, "n_train": len(y), "n_train_full": n_full, "n_test": len(y_test),
            "n_features": X.shape[1], "n_classes": k, "seconds": seconds,
            "calibration": calib, "trials": trials}


def methods(result: dict) -> list[str]:
    return [m for m in result["trials"][0] if m != "matrix" and not m.endswith("-route")]


def paired(a: np.ndarray, b: np.ndarray) -> str:
    """Mean of a - b with its standard error over the matrices, and a's wins/losses."""
    d = a - b
    se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
    return f"{d.mean():+.4f} ± {se:.4f} ({int((d < 0).sum())}/{int((d > 0).sum())})"


def render(results: list[dict], reference: str) -> str:
    """Markdown: mean cost per method and set; paired differences against ``reference``."""
    names = methods(results[0])
    head = "| data set | " + " | ".join(names) + " |"
    lines = ["Mean test cost over all matrices (random guessing = 1); lowest in bold.", "",
             head, "|---" * (len(names) + 1) + "|"]
    for r in results:
        means = {m: np.mean([t[m] for t in r["trials"]]) for m in names}
        best = min(means.values())
        cells = [f"**{v:.4f}**" if v == best else f"{v:.4f}" for v in means.values()]
        lines.append(f"| {label(r)} | " + " | ".join(cells) + " |")
    lines += ["", f"Paired difference `{reference}` minus each method: mean ± standard error "
              "over the set's matrices (wins/losses of the reference); negative = the "
              "reference is cheaper.", "",
              "| data set | " + " | ".join(m for m in names if m != reference) + " |",
              "|---" * len(names) + "|"]
    for r in results:
        ref = np.array([t[reference] for t in r["trials"]])
        cells = [paired(ref, np.array([t[m] for t in r["trials"]]))
                 for m in names if m != reference]
        lines.append(f"| {label(r)} | " + " | ".join(cells) + " |")
    lines += ["", "Structured matrices (mean test cost):", "",
              "| data set | matrix | " + " | ".join(names) + " |",
              "|---" * (len(names) + 2) + "|"]
    for r in results:
        for t in r["trials"]:
            if not t["matrix"].startswith("random"):
                lines.append(f"| {r['dataset']} | {t['matrix']} | "
                             + " | ".join(f"{t[m]:.4f}" for m in names) + " |")
    lines += ["", "Calibration of the cost-neutral probabilities on the test set "
              "(log-loss / top-label ECE, 15 bins):", "",
              "| data set | REBEL, T = 1 | REBEL, fitted T | LightGBM | HistGradientBoosting |",
              "|---|---|---|---|---|"]
    for r in results:
        cells = [f"{c['log_loss']:.3f} / {c['ece']:.3f}" for c in r["calibration"].values()]
        t = list(r["calibration"])[1].split("=")[1]
        cells[1] += f" (T = {t})"
        lines.append(f"| {r['dataset']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def label(r: dict) -> str:
    sub = f"{r['n_train']} of {r['n_train_full']}" if r["n_train"] < r["n_train_full"] \
        else f"{r['n_train']}"
    return f"{r['dataset']} ({sub} train, {r['n_test']} test, K={r['n_classes']})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=None)
    parser.add_argument("--suite", action="store_true",
                        help="issue 29's benchmark on the 46-set suite (benchmarks/cost_suite.py)")
    parser.add_argument("--mixtures", action="store_true",
                        help="issue 29's known mixtures against the Bayes risk")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--max-train", type=int, default=3000)
    parser.add_argument("--out", help="results file (JSON lines) of --suite / --mixtures")
    parser.add_argument("--n-train", type=int, default=1500)
    parser.add_argument("--n-test", type=int, default=5000, help="for sets without a split")
    parser.add_argument("--matrices", type=int, default=20, help="random matrices per set")
    parser.add_argument("--weak-learner", help="REBEL's weak learner with --trees and --depth "
                        "(default: the library's defaults, 100 vector-leaf trees)")
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--auto-subcosts", nargs="*", default=["calibrated"])
    parser.add_argument("--reference", default="rebel-posterior", help="the default path")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--render", action="store_true",
                        help="only merge the per-set results already written")
    args = parser.parse_args()
    if args.suite or args.mixtures:
        import cost_suite

        kind = "suite" if args.suite else "mixtures"
        args.out = args.out or str(RESULTS / f"cost_{kind}.jsonl")
        if not args.render:
            (cost_suite.run_suite if args.suite else cost_suite.run_mixtures)(args)
        print(cost_suite.render(kind, args.out))
        return
    args.datasets = args.datasets or list(DATASETS)
    if args.quick:
        args.datasets, args.matrices, args.n_train = args.datasets[:2], 3, 1000
    RESULTS.mkdir(exist_ok=True)
    if not args.render:
        for name in args.datasets:
            result = run_dataset(name, args, np.random.default_rng(15))
            result["args"] = vars(args)
            if not args.quick:
                (RESULTS / f"cost_{name}.json").write_text(json.dumps(result, indent=1))
            else:
                print(render([result], args.reference))
    if args.quick:
        return
    results = [json.loads(path.read_text()) for name in DATASETS
               if (path := RESULTS / f"cost_{name}.json").exists()]
    table = render(results, args.reference)
    print(table)
    (RESULTS / "cost.md").write_text(table)

if __name__ == "__main__":
    main()
