"""Which tree shape do the cost benchmark's known mixtures want? (issues 28 and 29)

The known mixtures of ``cost_suite.py --mixtures`` (2-D Gaussian mixtures, 2 clusters per
class, K = 2-5, 1,000 training rows: the small-data shape of the defaults) are fitted with the
defaults and with the smoother shapes of ``bench_suite.CANDIDATES``; per (K, seed): the plain
model's test error and the default cost route's mean test cost over the Bayes risk, mean and
worst over the four random matrices and "hedge" (the K x K matrices of the protocol).

Usage: ``python benchmarks/mixture_shapes.py --seeds 3`` (results appended to ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

for var in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import numpy as np  # noqa: E402
from bench_suite import METHODS  # noqa: E402
from cost_suite import bayes_proba, matrices  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHAPES = ("rebel-default", "rebel-l31-100-lr0.1-msl20", "rebel-d2-500-lr0.1-msl20",
          "rebel-d2-500-lr0.3-msl5")


def main() -> None:
    from rebelboost import RebelClassifier
    from rebelboost.experiments.cost_sensitive import make_gaussian_mixture

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path,
                    default=ROOT / "benchmarks" / "results" / "mixture_shapes.jsonl")
    args = ap.parse_args()
    rows = []
    for k in (2, 3, 4, 5):
        for seed in range(args.seeds):
            rng = np.random.default_rng(seed * 10 + k)  # (cost_suite's mixtures)
            X, y, centers = make_gaussian_mixture(rng, k, 2, 1000)
            X_te, y_te, _ = make_gaussian_mixture(rng, k, 2, 20000, centers)
            truth = bayes_proba(X_te, centers)
            square = [(label, C) for label, C in matrices(k, np.full(k, 1 / k), rng)
                      if C.shape[1] == k]
            record = {"k": k, "seed": seed, "shapes": {}}
            for shape in SHAPES:
                params = METHODS[shape][1]
                plain = RebelClassifier(random_state=seed, n_jobs=1, **params).fit(X, y)
                ratios = []
                for _, C in square:
                    route = RebelClassifier(cost_matrix=C, random_state=seed, n_jobs=1,
                                            **params).fit(X, y)
                    bayes = C[y_te, np.argmin(truth @ C, axis=1)].mean()
                    ratios.append(float(C[y_te, route.predict(X_te)].mean() / bayes))
                record["shapes"][shape] = {
                    "error": float(np.mean(plain.predict(X_te) != y_te)),
                    "cost_over_bayes": ratios}
            with args.out.open("a") as fh:
                fh.write(json.dumps(record) + "\n")
            rows.append(record)
            print(k, seed, {s: (round(100 * v["error"], 2),
                                round(float(np.mean(v["cost_over_bayes"])), 3))
                            for s, v in record["shapes"].items()}, flush=True)
    print("\n| shape | test error % (mean) | route cost / Bayes, mean | worst (K, seed) mean |")
    print("|---|---|---|---|")
    for shape in SHAPES:
        err = np.mean([r["shapes"][shape]["error"] for r in rows])
        means = [np.mean(r["shapes"][shape]["cost_over_bayes"]) for r in rows]
        print(f"| {shape} | {100 * err:.2f} | {np.mean(means):.3f} | {np.max(means):.3f} |")


if __name__ == "__main__":
    main()
