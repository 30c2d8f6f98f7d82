"""How the guard's margin trades cases above argmax against mean cost (issue 29's diagnosis).

Per set, seeds 0-2 and the five K x K matrices of ``cost_suite.matrices``: the default route's
out-of-fold evidence (min-risk minus argmax, and its standard error), and the test cost of the
calibrated minimum-risk decisions and of the plain model's argmax. One JSON line per case on
stdout; ``--analyse FILE`` then prints, for each margin M, what a guard taking min-risk only
when the out-of-fold difference is below ``-M`` standard errors would have cost.

    nice -n 10 python benchmarks/cost_guard_margin.py penguins iris > margin.jsonl
    python benchmarks/cost_guard_margin.py --analyse margin.jsonl
"""

from __future__ import annotations

import argparse
import json
import os

for var in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import numpy as np  # noqa: E402
from cost_suite import load_split, matrices  # noqa: E402


def run(sets: list[str], seeds: int) -> None:
    from rebelboost import RebelClassifier
    from rebelboost.costs import certain_codes

    for name in sets:
        for seed in range(seeds):
            X, y, X_te, y_te = load_split(name, seed, 3000)
            k = int(y.max()) + 1
            top = RebelClassifier(random_state=seed, n_jobs=1).fit(X, y).predict(X_te)
            rng = np.random.default_rng(1000 + seed)
            for label, C in matrices(k, np.bincount(y) / len(y), rng)[:5]:
                model = RebelClassifier(cost_matrix=C, random_state=seed, n_jobs=1).fit(X, y)
                against = model.cost_evidence_.get("against_argmax", {}).get("min_risk")
                if against is None:
                    continue
                min_risk = np.argmin(model.predict_proba(X_te) @ C, axis=1)
                print(json.dumps({
                    "set": name, "seed": seed, "m": label, "diff": against["mean_difference"],
                    "se": against["standard_error"], "minrisk": C[y_te, min_risk].mean(),
                    "argmax": C[y_te, certain_codes(top, C)].mean(),
                    "route": model.cost_route_}), flush=True)


def analyse(path: str) -> None:
    rows = [json.loads(line) for line in open(path) if line.startswith("{")]
    print(f"{len(rows)} cases, {len(set(r['set'] for r in rows))} sets")
    argmax_total = sum(r["argmax"] for r in rows)
    for margin in (0.5, 1.0, 1.5, 2.0, 3.0):
        chosen = [r["minrisk"] if r["diff"] < -margin * r["se"] else r["argmax"] for r in rows]
        above = sum(c > 1.05 * r["argmax"] + 1e-12 for c, r in zip(chosen, rows, strict=True))
        taken = sum(r["diff"] < -margin * r["se"] for r in rows)
        print(f"margin {margin}: min-risk taken in {taken}, above 1.05x argmax in {above}, "
              f"summed cost / argmax's {sum(chosen) / argmax_total:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sets", nargs="*")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--analyse")
    args = parser.parse_args()
    if args.analyse:
        analyse(args.analyse)
    else:
        run(args.sets, args.seeds)


if __name__ == "__main__":
    main()
