"""How sure must the cost route be before it takes the smooth shape? (issue 29, stop 37)

The route weighs the smooth shape (``_size_defaults.SMOOTH_SHAPE``) against the small-data
shape by their routes' out-of-fold costs, and takes it where it costs less by more than a
margin of standard errors of the paired per-row difference. Per (set, seed) of the cost
protocol's 19 smallest sets (``cost_suite.load_split``, its matrices) and per known mixture
(``cost_suite.run_mixtures``' data), this records that z-score per matrix and each matrix's
test cost of the route with the smooth shape given explicitly (the model the route trains
when it takes it); ``--render`` replays the margins against the records of the route
without the smooth shape (``BEFORE``: ``bench_cost.py --suite`` / ``--mixtures`` files at
the commit before it: their ``rebel-default`` and ``rebel-argmax`` costs, peers and Bayes
risks).

    python benchmarks/cost_shape_margin.py --seeds 5 [--mixtures --seeds 3]
    python benchmarks/cost_shape_margin.py --render
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
    FoldMemo,
    beaten_by,
    geometric_mean,
    load_split,
    matrices,
    suite_sets,
)

RESULTS = Path(__file__).resolve().parent / "results"
OUT = RESULTS / "cost_shape_margin.jsonl"
BEFORE = {"suite": RESULTS / "cost_suite_stop37_before.jsonl",
          "mixtures": RESULTS / "cost_mixtures_stop37_before.jsonl"}
MARGINS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)


def _z(X, y, mats, seed, k) -> dict:
    """Per matrix: the smooth shape's route's out-of-fold cost minus the defaults', in
    standard errors (the route's evidence)."""
    from rebelboost import RebelClassifier

    out = {}
    for label, C in mats:
        params = {"decisions": [*map(str, range(k)), "refer"]} if C.shape[1] > k else {}
        shape = RebelClassifier(cost_matrix=C, random_state=seed, n_jobs=1, **params).fit(
            X, y).cost_evidence_["shape"]
        out[label] = shape["mean_difference"] / max(shape["standard_error"], 1e-300)
    return out


def _smooth_costs(X, y, X_te, y_te, mats, seed, k) -> dict:
    from rebelboost import RebelClassifier
    from rebelboost.ensemble._size_defaults import SMOOTH_SHAPE

    out = {}
    for label, C in mats:
        refer = C.shape[1] > k
        params = {"decisions": [*map(str, range(k)), "refer"]} if refer else {}
        pred = RebelClassifier(cost_matrix=C, random_state=seed, n_jobs=1, **SMOOTH_SHAPE,
                               **params).fit(X, y).predict(X_te)
        codes = np.array([k if p == "refer" else int(p) for p in pred]) if refer else pred
        out[label] = float(C[y_te, codes].mean())
    return out


def run(args) -> None:
    memo = FoldMemo()
    done = set()
    if args.out.exists():
        done = {(r["kind"], r["set"], r["seed"])
                for r in map(json.loads, args.out.read_text().splitlines())}
    if args.mixtures:
        from rebelboost.experiments.cost_sensitive import make_gaussian_mixture

        jobs = [("mixtures", f"k{k}", seed, k) for k in (2, 3, 4, 5)
                for seed in range(args.seeds)]
    else:
        jobs = [("suite", name, seed, None) for seed in range(args.seeds)
                for name in suite_sets()[:args.sets]]
    for kind, name, seed, k in jobs:
        if (kind, name, seed) in done:
            continue
        memo.clear()
        if kind == "mixtures":
            rng = np.random.default_rng(seed * 10 + k)  # (cost_suite.run_mixtures' draws)
            X, y, centers = make_gaussian_mixture(rng, k, 2, 1000)
            X_te, y_te, _ = make_gaussian_mixture(rng, k, 2, 20000, centers)
            mats = matrices(k, np.full(k, 1 / k), rng)
        else:
            X, y, X_te, y_te = load_split(name, seed, 3000)
            k = int(y.max()) + 1
            mats = matrices(k, np.bincount(y) / len(y), np.random.default_rng(1000 + seed))
        record = {"kind": kind, "set": name, "seed": seed, "z": _z(X, y, mats, seed, k),
                  "smooth": _smooth_costs(X, y, X_te, y_te, mats, seed, k)}
        with args.out.open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        print(kind, name, seed, flush=True)


def render(path: Path) -> str:
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    lines = []
    for kind in ("suite", "mixtures"):
        mine = {(r["set"], r["seed"]): r for r in recs if r["kind"] == kind}
        if not mine or not BEFORE[kind].exists():
            continue
        before = [json.loads(line) for line in BEFORE[kind].read_text().splitlines()]
        for r in before:
            r["key"] = (r["set"], r["seed"]) if kind == "suite" else (f"k{r['k']}", r["seed"])
        before = [r for r in before if r["key"] in mine]
        lines.append(f"{kind}: {len(mine)} splits, {len(before)} cases")
        for margin in MARGINS:
            z = {r["key"]: m["z"] if isinstance(m["z"], dict) else dict.fromkeys(
                m["smooth"], m["z"]) for r in before for m in [mine[r["key"]]]}  # (one
            got = [mine[r["key"]]["smooth"][r["matrix"]]  # z a split: the error criterion)
                   if z[r["key"]][r["matrix"]] < -margin
                   else r["costs"]["rebel-default"] for r in before]
            n_smooth = sum(v < -margin for zs in z.values() for v in zs.values())
            if kind == "mixtures":
                ratio = [g / r["costs"]["bayes"] for g, r in zip(got, before, strict=True)]
                lines.append(f"  margin {margin}: smooth on {n_smooth} cases; cost / Bayes "
                             f"mean {np.mean(ratio):.3f}, worst {np.max(ratio):.3f}")
                continue
            bad = sum(g > 1.05 * r["costs"]["rebel-argmax"] + 1e-12
                      for g, r in zip(got, before, strict=True))
            peers = {(r["set"], r["seed"], r["matrix"]): {
                m: v for m, v in r["costs"].items() if not m.startswith("rebel")
                and v is not None} for r in before}
            sets = sorted({r["set"] for r in before})
            wins, rel = 0, []
            for s in sets:
                idx = [i for i, r in enumerate(before) if r["set"] == s]
                wins += not beaten_by([got[i] for i in idx], [
                    (s, before[i]["seed"], before[i]["matrix"]) for i in idx], peers)
                rel.append(np.mean([got[i] for i in idx]) / max(np.mean(
                    [before[i]["costs"]["rebel-argmax"] for i in idx]), 1e-12))
            lines.append(f"  margin {margin}: smooth on {n_smooth} cases; {bad} cases > 1.05 x "
                         f"argmax, lowest on {wins}/{len(sets)} sets, mean / argmax "
                         f"{geometric_mean(rel):.3f}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", type=int, default=19)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--mixtures", action="store_true")
    ap.add_argument("--render", action="store_true")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    if args.render:
        print(render(args.out))
    else:
        run(args)


if __name__ == "__main__":
    main()
