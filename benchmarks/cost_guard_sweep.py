"""Choose the cost guard's margin and the final model's temperature factor on the suite.

For each (set, seed) of ``cost_suite``'s protocol (its splits and six matrices), cross-fit
the fold models once as the default route does (``cost_diagnose``'s loop) and fit the final
cost-neutral model; then, per matrix, record

* the guard's evidence: the mean out-of-fold per-row cost difference min_risk - argmax and
  its standard error (``z = mean / se``);
* the test mean cost of argmax and of min risk on the final model with the out-of-fold
  calibration map at its temperature times each factor in ``FACTORS`` (a factor < 1 makes
  the final model, trained on all rows, more confident than the fold models it was
  calibrated on);
* ``pair@m``: min risk only where its switch from argmax's decision (top class a -> d) was
  cheaper out of fold by ``m`` standard errors over the rows that make that switch;
* ``blend``: min risk on ``(1 - lam) p + lam onehot(argmax)``, ``lam`` the cheapest out of
  fold on an 11-point grid (its own guard evidence in ``blend_diff`` / ``blend_se``).

``--render`` then replays the guard for each margin: cases above 1.05 x argmax, and the
mean cost per set against the peers recorded in ``results/cost_suite.jsonl`` (the same
splits and matrices). Results: ``results/cost_guard_sweep.jsonl`` (resumable).

Usage: ``nice -n 10 python benchmarks/cost_guard_sweep.py --sets 16 --seeds 5``, then
``python benchmarks/cost_guard_sweep.py --render`` (``--folds 2``: the route with
``cost_cv=2``, into ``results/cost_guard_sweep_2folds.jsonl``; ``--out`` another file,
``--min-data-in-bin`` the models' binning).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

for var in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import numpy as np  # noqa: E402
from cost_suite import (  # noqa: E402
    beaten_by,
    geometric_mean,
    load_peers,
    load_split,
    matrices,
    suite_sets,
)

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "cost_guard_sweep.jsonl"
FACTORS = (1.0, 0.8, 0.6, 0.4)
MARGINS = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
PAIR_MARGINS = (0.0, 0.5, 1.0, 1.5, 2.0)
BLEND = np.linspace(0.0, 1.0, 11)  # weight of argmax's point mass in the blended posterior


def blend(proba, top, lam):
    """``(1 - lam) p + lam onehot(top)``: min risk at 0, argmax's class at 1."""
    out = (1.0 - lam) * proba
    out[np.arange(len(top)), top] += lam
    return out


def allowed_switches(top, pick, diff, margin):
    """(K, M) mask: switching from argmax's decision for top class a to min risk's d is
    allowed where the out-of-fold rows that switch (a, d) are cheaper by ``margin`` standard
    errors of their mean difference (a single row: its difference alone)."""
    k, m = top.max() + 1, pick.max() + 1
    mask = np.zeros((k, m), dtype=bool)
    for a, d in set(zip(top.tolist(), pick.tolist(), strict=True)):
        rows = (top == a) & (pick == d)
        x = diff[rows]
        se = x.std(ddof=1) / np.sqrt(len(x)) if len(x) > 1 else abs(x[0])
        mask[a, d] = x.mean() < -margin * se
    return mask


def run_split(name: str, seed: int, n_folds: int = 3, min_data_in_bin: int | None = None
              ) -> list[dict]:
    from sklearn.base import clone

    from rebelboost import RebelClassifier
    from rebelboost.calibration import (
        CalibrationMap,
        fit_calibration,
        median_margin,
        row_margins,
    )
    from rebelboost.costs import certain_codes, min_risk_codes
    from rebelboost.ensemble._cost_route import fold_assignment, out_of_fold_scores

    X, y, X_te, y_te = load_split(name, seed, 2000)
    k = int(y.max()) + 1
    bins = {} if min_data_in_bin is None else {"min_data_in_bin": min_data_in_bin}
    final = RebelClassifier(random_state=seed, n_jobs=1, **bins).fit(X, y)
    # (the route's out-of-fold scores are over each fold model's median margin since stop
    # 38: the final model's test scores over its own, as the route sizes its map)
    s_te = final._scores(X_te) / median_margin(row_margins(final._scores(X)))
    folds = fold_assignment(y, n_folds, np.random.RandomState(seed))
    model = clone(final)
    model.cost_matrix_ = 1.0 - np.eye(k)
    model.resolved_params_ = final.resolved_params_  # (the folds keep the final model's)
    oof, unseen = out_of_fold_scores(model, X, y, np.ones(len(y)), folds, {})
    cal, proba, ev = fit_calibration(oof, y, np.ones(len(y)), np.where(unseen, -1, folds))
    records = []
    rng = np.random.default_rng(1000 + seed)
    for label, C in matrices(k, np.bincount(y) / len(y), rng):
        rows = C[y]
        idx = np.arange(len(y))
        diff = (rows[idx, min_risk_codes(proba, C)]
                - rows[idx, certain_codes(oof.argmax(1), C)])
        sure = certain_codes(s_te.argmax(1), C)
        test = {"argmax": float(C[y_te, sure].mean())}
        pick_te = min_risk_codes(cal.proba(s_te), C)
        for pm in PAIR_MARGINS:
            mask = allowed_switches(oof.argmax(1), min_risk_codes(proba, C), diff, pm)
            mask = np.pad(mask, ((0, k - mask.shape[0]), (0, C.shape[1] - mask.shape[1])))
            ok = mask[s_te.argmax(1), pick_te]
            test[f"pair@{pm}"] = float(C[y_te, np.where(ok, pick_te, sure)].mean())
        for f in FACTORS:
            m = CalibrationMap(cal.kind, cal.temperature * f, cal.weights, cal.bias)
            test[f"min_risk@{f}"] = float(C[y_te, min_risk_codes(m.proba(s_te), C)].mean())
        sure_oof = rows[idx, certain_codes(oof.argmax(1), C)]
        blend_rows = [rows[idx, min_risk_codes(blend(proba, oof.argmax(1), lam), C)]
                      for lam in BLEND]
        best = int(np.argmin([b.mean() + 1e-12 * i for i, b in enumerate(blend_rows[::-1])]))
        lam = BLEND[::-1][best]  # ties: the largest weight on argmax
        bdiff = blend_rows[len(BLEND) - 1 - best] - sure_oof
        test["blend"] = float(C[y_te, min_risk_codes(blend(cal.proba(s_te), s_te.argmax(1),
                                                           lam), C)].mean())
        records.append({"blend_lambda": float(lam), "blend_diff": float(bdiff.mean()),
                        "blend_se": float(bdiff.std(ddof=1) / np.sqrt(len(y))),
                        "set": name, "seed": seed, "matrix": label, "n": len(y),
                        "n_test": len(y_te), "kind": cal.kind, "T": cal.temperature,
                        "diff": float(diff.mean()),
                        "se": float(diff.std(ddof=1) / np.sqrt(len(y))), "test": test})
    return records


def render(path=OUT) -> str:
    recs = [json.loads(line) for line in Path(path).read_text().splitlines()]
    peers = load_peers(ROOT / "benchmarks" / "results" / "cost_suite.jsonl")
    sets = sorted({r["set"] for r in recs}, key=lambda s: min(r["n"] for r in recs
                                                              if r["set"] == s))
    lines = [f"{len(recs)} cases, {len(sets)} sets: per (margin in standard errors, "
             "temperature factor): cases > 1.05 x argmax, sets where min risk beats every "
             "peer's mean, mean cost / argmax's (geometric mean over sets)"]
    variants = ([f"min_risk@{f}" for f in FACTORS] + [f"pair@{m}" for m in PAIR_MARGINS]
                + ["blend"])
    for factor in variants:
        for margin in MARGINS:
            bad, wins, rel = 0, 0, []
            for s in sets:
                rs = [r for r in recs if r["set"] == s]
                pre = "blend_" if factor == "blend" else ""
                got = [r["test"][factor] if r[pre + "diff"] < -margin * r[pre + "se"]
                       else r["test"]["argmax"] for r in rs]
                bad += sum(g > 1.05 * r["test"]["argmax"] + 1e-12
                           for g, r in zip(got, rs, strict=True))
                wins += not beaten_by(got, [(s, r["seed"], r["matrix"]) for r in rs], peers)
                rel.append(np.mean(got) / max(np.mean([r["test"]["argmax"] for r in rs]),
                                              1e-12))
            lines.append(f"{factor} margin {margin:.1f}: {bad} cases > 1.05, "
                         f"lowest on {wins}/{len(sets)} sets, mean/argmax "
                         f"{geometric_mean(rel):.3f}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", type=int, default=16)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--folds", type=int, default=3, help="cost_cv of the replayed route")
    ap.add_argument("--render", action="store_true")
    ap.add_argument("--out", type=Path, default=None, help="results file (default: "
                    "results/cost_guard_sweep.jsonl, or _{folds}folds with --folds)")
    ap.add_argument("--min-data-in-bin", type=int, default=None,
                    help="RebelClassifier's (default: its default)")
    args = ap.parse_args()
    out = args.out or (OUT if args.folds == 3
                       else OUT.with_name(f"cost_guard_sweep_{args.folds}folds.jsonl"))
    if args.render:
        print(render(out))
        return
    done = set()
    if out.exists():
        done = {(r["set"], r["seed"]) for r in map(json.loads, out.read_text().splitlines())}
    for seed in range(args.seeds):
        for name in suite_sets()[:args.sets]:
            if (name, seed) in done:
                continue
            with out.open("a") as fh:
                for r in run_split(name, seed, args.folds, args.min_data_in_bin):
                    fh.write(json.dumps(r) + "\n")
            print(name, seed, flush=True)


if __name__ == "__main__":
    main()
