"""Does calibrating on scale-normalised scores fit the final model better (issue 29)?

The default cost route fits its calibration map on the out-of-fold scores of fold models
trained on 2/3 of the rows and applies it to the final model's scores. Where the fold models
separate their training rows and the final model cannot (or the other way round), boosting
at rate 1 leaves the two with scores of different sizes, and the map is wrong for the final
model: on the known mixture K = 2, seed 2, the fold models' median in-sample margin is 199,
the final model's 47, and the route refers 55% of the test rows (5.75x the Bayes risk, argmax
1.80x). This replay compares, on the same folds and final model, the route's decision as it
is (``raw``) with one whose map is fitted on each fold model's out-of-fold scores divided by
that model's median in-sample margin between its top two classes, and applied to the final
model's scores divided by its own (``scaled``). The guard (2 standard errors against argmax)
runs on each version's own out-of-fold evidence. The small-data shape only (no smooth
shape), one thread.

    cd benchmarks && python cost_scale_replay.py --sets 19 --seeds 5 --mixtures \\
        --out results/cost_scale_replay.jsonl
    python cost_scale_replay.py --render --out results/cost_scale_replay.jsonl
    python cost_scale_replay.py --diagnose mixture2:2 balance_scale:1 vowel:0 vehicle:0
    python cost_scale_replay.py --skip 19 --sets 46 --seeds 2 \\
        --out results/cost_scale_replay_larger.jsonl   # the larger sets (MNIST left out)
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

for var in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import numpy as np  # noqa: E402
from cost_suite import bayes_proba, geometric_mean, load_split, matrices, suite_sets  # noqa: E402

from rebelboost.calibration import median_margin, row_margins  # noqa: E402


def replay(X, y, X_te, y_te, mats, seed, truth=None) -> list[dict]:
    from rebelboost import RebelClassifier
    from rebelboost.costs import certain_codes, min_risk_codes, resolve_costs
    from rebelboost.ensemble._cost_route import (
        _decide,
        assemble_scores,
        fold_assignment,
        fold_estimator,
    )

    k = int(y.max()) + 1
    w = np.ones(len(y))
    final = RebelClassifier(random_state=seed, n_jobs=1).fit(X, y)
    test = final.model_.scores(final.encode(X_te))
    final_scale = median_margin(row_margins(final.model_.scores(final.encode(X))))
    model = RebelClassifier(random_state=seed, n_jobs=1)
    model.classes_ = np.arange(k)
    model._resolve_size(len(y))
    folds = fold_assignment(y, 3, np.random.RandomState(seed))
    neutral = {"cost_strategy": "loss", "cost_matrix": None, "decisions": None}
    fitted, scaled_fitted = [], []
    for f in range(3):
        train = folds != f
        fold = fold_estimator(model, neutral, int(train.sum()), len(y)).fit(X[train], y[train])
        scale = median_margin(row_margins(fold.model_.scores(fold.encode(X[train]))))
        got = fold.model_.scores(fold.encode(X[~train]))
        fitted.append((np.unique(y[train]), got))
        scaled_fitted.append((np.unique(y[train]), got / scale))
    raw, unseen = assemble_scores(fitted, np.arange(3), folds, y, k)
    scaled, _ = assemble_scores(scaled_fitted, np.arange(3), folds, y, k)
    top = np.argmax(test, axis=1)
    records = []
    for label, C in mats:
        refer = C.shape[1] > k
        model.cost_matrix = C
        model.decisions = [*map(str, range(k)), "refer"] if refer else None
        model.cost_strategy = "posterior"
        model.cost_matrix_, model.decisions_, _ = resolve_costs(
            C, None, y, k, model.classes_, model.decisions)
        costs = {"argmax": float(C[y_te, certain_codes(top, C)].mean())}
        if truth is not None:
            costs["bayes"] = float(C[y_te, np.argmin(truth @ C, axis=1)].mean())
        routes = {}
        for name, oof, final_scores in (("raw", raw, test),
                                        ("scaled", scaled, test / final_scale)):
            choice = _decide(model, X, y, w, None, folds, None, oof, unseen)
            codes = (min_risk_codes(choice.calibration.proba(final_scores), C)
                     if choice.route == "min_risk" else certain_codes(top, C))
            costs[name] = float(C[y_te, codes].mean())
            routes[name] = choice.route
        records.append({"matrix": label, "costs": costs, "routes": routes,
                        "scales": {"final": final_scale}})
    return records


def diagnose(name: str, seed: int) -> str:
    """One split's sizes: each fold model's median in-sample margin, the final model's, and
    the temperature fitted on the raw out-of-fold scores against the one best for the final
    model's test scores (its labels used: a diagnosis, not a method)."""
    from rebelboost import RebelClassifier
    from rebelboost.calibration import fit_temperature
    from rebelboost.ensemble._cost_route import fold_assignment

    X, y, X_te, y_te, _, _ = split(name, seed)
    final = RebelClassifier(random_state=seed, n_jobs=1).fit(X, y)
    folds = fold_assignment(y, 3, np.random.RandomState(seed))
    oof, margins = np.empty((len(y), int(y.max()) + 1)), []
    for f in range(3):
        train = folds != f
        fold = RebelClassifier(random_state=seed, n_jobs=1, **final.resolved_params_).fit(
            X[train], y[train])
        oof[~train] = fold.model_.scores(X[~train])
        margins.append(median_margin(row_margins(fold.model_.scores(X[train]))))
    test = final.model_.scores(X_te)
    return (f"| {name} | {seed} | {', '.join(f'{m:.1f}' for m in margins)} | "
            f"{median_margin(row_margins(final.model_.scores(X))):.1f} | "
            f"{fit_temperature(oof, y, np.ones(len(y))):.1f} | "
            f"{fit_temperature(test, y_te, np.ones(len(y_te))):.1f} |")


def split(name: str, seed: int):
    """``(X, y, X_te, y_te, mats, truth)`` of a suite set's split or a known mixture
    ('mixtureK'), with its six cost matrices and (mixtures) the test rows' true posteriors,
    drawn as ``bench_cost.py`` draws them."""
    from rebelboost.experiments.cost_sensitive import make_gaussian_mixture

    if not name.startswith("mixture"):
        X, y, X_te, y_te = load_split(name, seed, 3000)
        k = int(y.max()) + 1
        mats = matrices(k, np.bincount(y) / len(y), np.random.default_rng(1000 + seed))
        return X, y, X_te, y_te, mats, None
    k = int(name[len("mixture"):])
    rng = np.random.default_rng(seed * 10 + k)
    X, y, centers = make_gaussian_mixture(rng, k, 2, 1000)
    X_te, y_te, _ = make_gaussian_mixture(rng, k, 2, 20000, centers)
    return (X, y, X_te, y_te, matrices(k, np.full(k, 1 / k), rng),
            bayes_proba(X_te, centers))


def run(args) -> None:
    out = Path(args.out)
    done = set()
    if out.exists():
        done = {(r["set"], r["seed"]) for r in map(json.loads, out.read_text().splitlines())}
    names = [n for n in suite_sets()[args.skip:args.sets] if n != "mnist"]  # (as bench_cost)
    jobs = [(name, seed) for name in names for seed in range(args.seeds)]
    if args.mixtures:
        jobs += [(f"mixture{k}", seed) for k in (2, 3, 4, 5) for seed in range(3)]
    for name, seed in jobs:
        if (name, seed) in done:
            continue
        X, y, X_te, y_te, mats, truth = split(name, seed)
        records = replay(X, y, X_te, y_te, mats, seed, truth)
        with out.open("a") as fh:
            for r in records:
                fh.write(json.dumps({"set": name, "seed": seed, **r}) + "\n")
        print(f"{name} seed {seed} done", flush=True)


def render(args) -> None:
    records = [json.loads(line) for line in Path(args.out).read_text().splitlines()]
    for part, keep in (("the suite's smallest sets", lambda s: not s.startswith("mixture")),
                       ("known mixtures", lambda s: s.startswith("mixture"))):
        rs = [r for r in records if keep(r["set"])]
        if not rs:
            continue
        print(f"\n{part}: {len(rs)} cases, {len({r['set'] for r in rs})} sets")
        print("| route | cases > 1.05x argmax | mean cost / argmax's (geometric mean over "
              "sets) | min_risk taken | worst / Bayes |")
        print("|---|---|---|---|---|")
        for name in ("raw", "scaled"):
            over = sum(r["costs"][name] > 1.05 * r["costs"]["argmax"] + 1e-12 for r in rs)
            by_set = {}
            for r in rs:
                by_set.setdefault(r["set"], []).append((r["costs"][name], r["costs"]["argmax"]))
            ratio = geometric_mean([np.mean([c for c, _ in v]) / max(np.mean([a for _, a in v]),
                                                                     1e-12)
                                    for v in by_set.values()])
            taken = sum(r["routes"][name] == "min_risk" for r in rs)
            worst = "-"
            if "bayes" in rs[0]["costs"]:
                cells = {}
                for r in rs:
                    cells.setdefault((r["set"], r["matrix"]), []).append(
                        (r["costs"][name], r["costs"]["bayes"]))
                worst = max(np.mean([c for c, _ in v]) / np.mean([b for _, b in v])
                            for v in cells.values())
                worst = f"{worst:.3f}"
            print(f"| {name} | {over} | {ratio:.3f} | {taken} | {worst} |")
        changed = [(r["set"], r["seed"], r["matrix"], round(r["costs"]["raw"], 4),
                    round(r["costs"]["scaled"], 4), round(r["costs"]["argmax"], 4))
                   for r in rs if abs(r["costs"]["raw"] - r["costs"]["scaled"]) > 1e-12]
        print(f"cases whose cost changed: {len(changed)}; scaled cheaper in "
              f"{sum(s < raw for _, _, _, raw, s, _ in changed)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", type=int, default=19, help="the N smallest suite sets")
    parser.add_argument("--skip", type=int, default=0, help="leave out the SKIP smallest")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--mixtures", action="store_true")
    parser.add_argument("--render", action="store_true")
    parser.add_argument("--out", default="results/cost_scale_replay.jsonl")
    parser.add_argument("--diagnose", nargs="+", metavar="SET:SEED",
                        help="print the sizes and temperatures of these splits instead")
    args = parser.parse_args()
    if args.diagnose:
        print("| set | seed | fold models' median in-sample margins | final model's | "
              "temperature on out-of-fold scores | best on the final model's test scores |")
        print("|---|---|---|---|---|---|")
        for item in args.diagnose:
            name, seed = item.split(":")
            print(diagnose(name, int(seed)), flush=True)
        return
    (render if args.render else run)(args)


if __name__ == "__main__":
    main()
