"""Would the cost route decide better on fewer trees, or on its fold models too? (issue 29)

For each (set, seed) of ``cost_suite``'s protocol (its splits and six matrices): fit the
default cost-neutral model on the training rows and the route's fold models as the route
does (``cost_cv`` = 3 stratified folds, the final model's parameters), and keep the scores
after each of a geometric grid of iterations, out of fold and on the test rows. Per grid
point ``t``: the calibration of the route (:func:`rebelboost.calibration.fit_calibration`)
on the out-of-fold scores of ``t`` iterations, its cross-fitted log-loss, and per matrix

* ``diff`` / ``se``: the guard's evidence, min risk at ``t`` against argmax of the full
  model, per-row paired, out of fold;
* the test mean cost of min risk on the final model's first ``t`` iterations (``staged``) and
  on the mean of the fold models' calibrated posteriors and the final model's (``bag``).

``--render`` replays the route for each rule: the iterations chosen by out-of-fold log-loss
(``ll``) or all of them (``full``: today's route), the guard at 2 standard errors, against
argmax and the peers recorded in ``results/cost_suite_v3.jsonl`` (the same splits and
matrices). Results: ``results/cost_staged_sweep.jsonl`` (resumable).

``--shape METHOD`` fits a ``bench_suite`` candidate's parameters instead of the defaults (its
models, folds and posteriors; stop 37), and ``--render --choose-from OTHER.jsonl`` replays a
route that picks, per split, whichever of the two files' models has the lower out-of-fold
log-loss, against the defaults' argmax (and, for comparison, each file alone and the better
of the two per case).

Usage: ``nice -n 10 python benchmarks/cost_staged_sweep.py --sets 19 --seeds 5``, then
``python benchmarks/cost_staged_sweep.py --render``.

(Its fold models' scores are the raw ones, as the route used them before stop 38; the route
now sizes them by each model's median margin: ``cost_scale_replay.py``.)
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
OUT = ROOT / "benchmarks" / "results" / "cost_staged_sweep.jsonl"
PEERS = ROOT / "benchmarks" / "results" / "cost_suite_v3.jsonl"
MARGIN = 2.0


def grid(n: int) -> list[int]:
    """Iteration counts ~1.7x apart from 5 up to ``n`` (``n`` included)."""
    out = sorted({int(round(v)) for v in np.geomspace(5, n, max(2, int(np.log(n / 5) / 0.53)
                                                                 + 1)) if v <= n} | {n})
    return [t for t in out if t >= 1]


def staged_at(model, X, points) -> dict:
    """Class scores after each of ``points`` iterations (the model's ``_staged_scores``)."""
    want, out = set(points), {}
    for i, s in enumerate(model._staged_scores(X, 0, None), start=1):
        if i in want:
            out[i] = s.copy()
    last = max(out) if out else 0
    for t in points:  # (a model that stopped early: its last scores)
        if t not in out:
            out[t] = out[last] if last else model._scores(X)
    return out


def run_split(name: str, seed: int, n_folds: int = 3, params: dict | None = None
              ) -> list[dict]:
    from sklearn.base import clone

    from rebelboost import RebelClassifier
    from rebelboost.calibration import fit_calibration
    from rebelboost.costs import certain_codes, min_risk_codes
    from rebelboost.ensemble._cost_route import assemble_scores, fold_assignment, fold_estimator

    X, y, X_te, y_te = load_split(name, seed, 3000)
    k = int(y.max()) + 1
    final = RebelClassifier(random_state=seed, n_jobs=1, **(params or {})).fit(X, y)
    n_it = len(final.model_.learners) if hasattr(final.model_, "learners") else None
    n_it = n_it or final.resolved_params_["n_estimators"]
    points = grid(n_it)
    test_final = staged_at(final, X_te, points)
    folds = fold_assignment(y, n_folds, np.random.RandomState(seed))
    model = clone(final)
    model.resolved_params_ = final.resolved_params_
    held_out = {t: [] for t in points}  # per fold: (classes it saw, its held-out rows' scores)
    test_folds = {t: [] for t in points}
    every_test_row = np.zeros(len(y_te), dtype=np.intp)  # (one "fold" of all test rows)
    for f in range(n_folds):
        train = folds != f
        fm = fold_estimator(model, {}, int(train.sum()), len(y)).fit(X[train], y[train])
        present = np.unique(y[train])
        held = staged_at(fm, X[~train], points)
        te = staged_at(fm, X_te, points)
        for t in points:  # (a class the fold never saw: the route's scores for it)
            held_out[t].append((present, held[t]))
            test_folds[t].append(assemble_scores([(present, te[t])], [0], every_test_row,
                                                 y_te, k)[0])
    oof = {}
    for t in points:
        oof[t], unseen = assemble_scores(held_out[t], range(n_folds), folds, y, k)
    w = np.ones(len(y))
    use = np.where(unseen, -1, folds)
    top_full = oof[n_it].argmax(1)
    sure_te = test_final[n_it].argmax(1)
    rng = np.random.default_rng(1000 + seed)
    mats = matrices(k, np.bincount(y) / len(y), rng)
    idx = np.arange(len(y))
    per_t = []
    for t in points:
        cal, proba, ev = fit_calibration(oof[t], y, w, use)
        p_final = cal.proba(test_final[t])
        p_bag = (p_final + sum(cal.proba(s) for s in test_folds[t])) / (n_folds + 1)
        row = {"t": t, "kind": cal.kind, "T": cal.temperature,
               "log_loss": ev["log_loss"][ev["calibration"]],
               "oof_error": float(np.mean(oof[t].argmax(1) != y)),
               "test_error": float(np.mean(test_final[t].argmax(1) != y_te)),
               "matrices": {}}
        for label, C in mats:
            rows = C[y]
            diff = rows[idx, min_risk_codes(proba, C)] - rows[idx, certain_codes(top_full, C)]
            row["matrices"][label] = {
                "diff": float(diff.mean()), "se": float(diff.std(ddof=1) / np.sqrt(len(y))),
                "staged": float(C[y_te, min_risk_codes(p_final, C)].mean()),
                "bag": float(C[y_te, min_risk_codes(p_bag, C)].mean())}
        per_t.append(row)
    argmax = {label: float(C[y_te, certain_codes(sure_te, C)].mean()) for label, C in mats}
    return [{"set": name, "seed": seed, "n": len(y), "k": k, "n_test": len(y_te),
             "n_iterations": n_it, "argmax": argmax, "points": per_t}]


def choose(rec: dict, rule: str) -> dict:
    """The grid point a rule keeps: ``full`` all iterations, ``ll`` the lowest out-of-fold
    log-loss (ties: more iterations)."""
    pts = rec["points"]
    if rule == "full":
        return pts[-1]
    losses = np.array([p["log_loss"] for p in pts])
    return pts[int(np.flatnonzero(losses <= losses.min() + 1e-12)[-1])]


def render(path=OUT, margin: float = MARGIN) -> str:
    recs = [json.loads(line) for line in Path(path).read_text().splitlines()]
    peers = load_peers(PEERS)
    compared = {key[0] for key in peers}
    unpeered = sorted({r["set"] for r in recs} - compared)  # (MNIST: the cost protocol's peers
    recs = [r for r in recs if r["set"] in compared]  # left it out)
    sets = sorted({r["set"] for r in recs}, key=lambda s: min(r["n"] for r in recs
                                                              if r["set"] == s))
    lines = [f"(left out, no peers recorded: {' '.join(unpeered) or 'none'})",
             f"{sum(len(r['argmax']) for r in recs)} cases, {len(sets)} sets, guard at "
             f"{margin} se: cases > 1.05 x argmax, sets where the route beats every peer's "
             "mean, mean cost / argmax's (geometric mean over sets)"]
    for rule in ("full", "ll"):
        for kind in ("staged", "bag"):
            bad, rel, lost = 0, [], []
            for s in sets:
                got, ref, keys = [], [], []
                for r in (r for r in recs if r["set"] == s):
                    p = choose(r, rule)
                    for label, m in p["matrices"].items():
                        a = r["argmax"][label]
                        g = m[kind] if m["diff"] < -margin * m["se"] else a
                        got.append(g)
                        ref.append(a)
                        keys.append((s, r["seed"], label))
                        bad += g > 1.05 * a + 1e-12
                if beaten_by(got, keys, peers):
                    lost.append(s)
                rel.append(np.mean(got) / max(np.mean(ref), 1e-12))
            lines.append(f"{rule:>4} {kind:>6}: {bad} cases > 1.05, lowest on "
                         f"{len(sets) - len(lost)}/{len(sets)} sets, mean/argmax "
                         f"{geometric_mean(rel):.3f}; not lowest: {' '.join(lost)}")
    chosen = {}
    for r in recs:
        p = choose(r, "ll")
        chosen.setdefault(r["set"], []).append(f"{p['t']}/{r['n_iterations']}")
    lines.append("iterations chosen by log-loss: " + "; ".join(
        f"{s} {' '.join(v)}" for s, v in chosen.items()))
    return "\n".join(lines)


def render_choice(path_a: Path, path_b: Path, margin: float = MARGIN) -> str:
    """Routes over two files' models of the same splits (``full``: all iterations; where the
    guard keeps argmax, that model's own argmax): ``a``,
    ``b``, ``choice`` (per split, the lower out-of-fold log-loss), ``choice-error`` (the
    lower out-of-fold error; ties: ``a``) and ``either`` (per case,
    the cheaper on the test rows: a bound no rule reaches), each under the guard, against
    ``a``'s argmax and the peers."""
    def load(path):
        return {(r["set"], r["seed"]): r
                for r in map(json.loads, Path(path).read_text().splitlines())}

    a_recs, b_recs = load(path_a), load(path_b)
    peers = load_peers(PEERS)
    keys = sorted(set(a_recs) & set(b_recs))
    sets = sorted({s for s, _ in keys}, key=lambda s: a_recs[(s, 0)]["n"])

    def guarded(rec, label):  # (argmax: the record's own model's)
        m = rec["points"][-1]["matrices"][label]
        return m["staged"] if m["diff"] < -margin * m["se"] else rec["argmax"][label]

    lines = [f"{path_a.name} against {path_b.name}: {len(keys)} splits, {len(sets)} sets, "
             f"guard at {margin} se; cases > 1.05 x {path_a.name}'s argmax, sets where the "
             "route beats every peer's mean, mean cost / argmax's (geometric mean over sets)"]
    for rule in ("a", "b", "choice", "choice-error", "either"):
        bad, rel, lost = 0, [], []
        for s in sets:
            got, ref, case_keys = [], [], []
            for key in (k for k in keys if k[0] == s):
                a, b = a_recs[key], b_recs[key]
                pick = {"a": a, "b": b}.get(rule)
                if rule.startswith("choice"):
                    field = "oof_error" if rule == "choice-error" else "log_loss"
                    pick = b if b["points"][-1][field] < a["points"][-1][field] else a
                for label, argmax in a["argmax"].items():
                    g = (min(guarded(a, label), guarded(b, label)) if rule == "either"
                         else guarded(pick, label))
                    got.append(g)
                    ref.append(argmax)
                    case_keys.append((*key, label))
                    bad += g > 1.05 * argmax + 1e-12
            if beaten_by(got, case_keys, peers):
                lost.append(s)
            rel.append(np.mean(got) / max(np.mean(ref), 1e-12))
        lines.append(f"{rule:>6}: {bad} cases > 1.05, lowest on {len(sets) - len(lost)}/"
                     f"{len(sets)} sets, mean/argmax {geometric_mean(rel):.3f}; "
                     f"not lowest: {' '.join(lost)}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", type=int, default=19)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--render", action="store_true")
    ap.add_argument("--margin", type=float, default=MARGIN)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--shape", help="a bench_suite method whose parameters are fitted")
    ap.add_argument("--choose-from", type=Path, help="with --render: a second file")
    args = ap.parse_args()
    if args.render:
        print(render(args.out, args.margin) if args.choose_from is None
              else render_choice(args.out, args.choose_from, args.margin))
        return
    params = {}
    if args.shape:
        from bench_suite import METHODS

        params = METHODS[args.shape][1]
    done = set()
    if args.out.exists():
        done = {(r["set"], r["seed"]) for r in map(json.loads, args.out.read_text().splitlines())}
    for seed in range(args.seeds):
        for name in suite_sets()[args.first:args.sets]:
            if (name, seed) in done:
                continue
            with args.out.open("a") as fh:
                for r in run_split(name, seed, params=params):
                    fh.write(json.dumps(r) + "\n")
            print(name, seed, flush=True)


if __name__ == "__main__":
    main()
