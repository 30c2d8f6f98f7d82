"""How close to the Bayes risk can any learner get on the cost benchmark's known mixtures?

Issue 29 asks the default cost route for at most 1.03x the Bayes risk on every matrix of the
known mixtures (``bench_cost.py --mixtures``: 2-D Gaussian mixtures, two clusters a class,
1,000 training rows, 20,000 test rows). This script draws the same splits and matrices (the
same generator calls, in the same order) and decides by a well-specified plug-in model: a
two-component full-covariance Gaussian mixture fitted to each class's training rows
(scikit-learn's ``GaussianMixture``, 10 starts), equal class priors (as the generator's), and
the minimum-risk rule on its posteriors. That is the true model family with its parameters
estimated: no learner that does not know the family should expect to beat it. With
``--results`` (a ``bench_cost.py --mixtures`` file) its table sets the route's cost beside
the reference's, both over the Bayes risk (the mean cost over the seeds over the mean Bayes
risk, as ``bench_cost.py --render``); ``--similarity`` adds the default route with REBEL's
localized similarities as the weak learner, a smooth learner of the library's own.

    cd benchmarks && python mixture_reference.py --seeds 3 --similarity \\
        --results results/cost_mixtures_stop37.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
from cost_suite import bayes_proba, matrices
from scipy.stats import multivariate_normal
from sklearn.mixture import GaussianMixture

from rebelboost import RebelClassifier
from rebelboost.experiments.cost_sensitive import make_gaussian_mixture


def plug_in_proba(X, y, X_te, n_clusters: int, seed: int) -> np.ndarray:
    """Posteriors of per-class Gaussian mixtures of ``n_clusters`` full-covariance
    components fitted to the training rows, under equal class priors."""
    dens = np.zeros((len(X_te), y.max() + 1))
    for k in range(y.max() + 1):
        gm = GaussianMixture(n_clusters, covariance_type="full", n_init=10,
                             random_state=seed).fit(X[y == k])
        for w, mean, cov in zip(gm.weights_, gm.means_, gm.covariances_, strict=True):
            dens[:, k] += w * multivariate_normal(mean, cov).pdf(X_te)
    return dens / np.maximum(dens.sum(axis=1, keepdims=True), 1e-300)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--results", help="a bench_cost.py --mixtures results file")
    parser.add_argument("--similarity", action="store_true",
                        help="also the default route with REBEL's localized similarities "
                             "(200 iterations) as the weak learner")
    args = parser.parse_args()
    route = {}
    if args.results:
        for line in Path(args.results).read_text().splitlines():
            r = json.loads(line)
            route[(r["k"], r["seed"], r["matrix"])] = r["costs"]
    costs = defaultdict(list)  # (K, matrix) -> [(Bayes, plug-in, route, similarity) per seed]
    for k in (2, 3, 4, 5):
        for seed in range(args.seeds):
            rng = np.random.default_rng(seed * 10 + k)  # (bench_cost.py --mixtures' draws)
            X, y, centers = make_gaussian_mixture(rng, k, 2, 1000)
            X_te, y_te, _ = make_gaussian_mixture(rng, k, 2, 20000, centers)
            truth = bayes_proba(X_te, centers)
            proba = plug_in_proba(X, y, X_te, 2, seed)
            for label, C in matrices(k, np.full(k, 1 / k), rng):
                bayes = C[y_te, np.argmin(truth @ C, axis=1)].mean()
                theirs = route.get((k, seed, label))
                if theirs is not None and not np.isclose(theirs["bayes"], bayes, rtol=1e-12):
                    raise SystemExit(f"{args.results} drew other splits (K = {k}, seed {seed})")
                similarity = np.nan
                if args.similarity:
                    params = {"decisions": [*map(str, range(k)), "refer"]} if C.shape[1] > k else {}
                    pred = RebelClassifier(weak_learner="similarity", n_estimators=200,
                                           cost_matrix=C, random_state=seed, n_jobs=1,
                                           **params).fit(X, y).predict(X_te)
                    codes = np.array([k if p == "refer" else int(p) for p in pred])
                    similarity = C[y_te, codes].mean()
                costs[(k, label)].append((bayes, C[y_te, np.argmin(proba @ C, axis=1)].mean(),
                                          np.nan if theirs is None else theirs["rebel-default"],
                                          similarity))
    # (as bench_cost.py --render: the mean cost over the seeds over the mean Bayes risk)
    print("| K | matrix | plug-in Gaussian mixtures / Bayes | default route / Bayes | "
          "route with similarities / Bayes |")
    print("|---|---|---|---|---|")
    ratios = []
    for (k, label), got in costs.items():
        mean = np.mean(got, axis=0)
        ratios.append(mean[1:] / mean[0])
        text = ["-" if np.isnan(v) else f"{v / mean[0]:.3f}" for v in mean[1:]]
        print(f"| {k} | {label} | {' | '.join(text)} |")
    ratios = np.array(ratios)
    print(f"\nplug-in: mean {ratios[:, 0].mean():.3f}, worst {ratios[:, 0].max():.3f}, "
          f"matrices over 1.03: {(ratios[:, 0] > 1.03).sum()} of {len(ratios)}")
    for column, name in ((1, "route"), (2, "route with similarities")):
        if not np.isnan(ratios[:, column]).all():
            print(f"{name}: mean {np.nanmean(ratios[:, column]):.3f}, worst "
                  f"{np.nanmax(ratios[:, column]):.3f}, matrices over 1.03: "
                  f"{(ratios[:, column] > 1.03).sum()} of {len(ratios)}")


if __name__ == "__main__":
    main()
