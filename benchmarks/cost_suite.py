"""The cost benchmark of issue 29 on the 46-set suite, plus known mixtures against Bayes risk.

Per (set, seed): a stratified 70/30 split (training rows capped at ``--max-train``, test rows
at 5000, both stratified, every class kept), six cost matrices (4 random ``|normal|`` ones
scaled so that uniform guessing costs 1; "hedge": every error on class 0 costs 10, others 1;
"refer": 0-1 costs plus a decision "refer" costing 0.2 whatever the class, K x (K + 1)), and
the mean test cost of:

* ``rebel-default``: ``RebelClassifier(cost_matrix=C)`` (the default route); the fold models'
  out-of-fold scores do not depend on C, so they are computed once per (set, seed) and
  reused for the other matrices (memoised: the same computation, the final fit still runs);
* ``rebel-argmax``: the cost-neutral REBEL's argmax (for "refer": the top class taken as
  certain, the least-cost decision for it);
* ``rebel-loss``: ``cost_strategy='loss'`` (not for "refer": one score per class);
* ``lgbm-minrisk``, ``lgbm-sigmoid``, ``lgbm-isotonic``: LightGBM's defaults, its
  ``predict_proba`` raw or through ``CalibratedClassifierCV`` (5 folds, fewer when the
  smallest training class has fewer rows), then ``argmin p @ C``; ``hgb-*`` the same with
  scikit-learn's HistGradientBoostingClassifier.

Everything single-threaded. Fit times: the plain REBEL fit and the default route's fit (the
first matrix, before any reuse). Results are appended to ``--out`` (JSON lines), so a rerun
resumes where it stopped. ``--mixtures`` runs the known-mixture check instead (2-D Gaussian
mixtures, Bayes decisions from the true densities; for two classes LightGBM and HGB with
``TunedThresholdClassifierCV`` on cost join the comparison).

Usage (from the repository root; ``--render`` prints the tables)::

    nice -n 10 python benchmarks/bench_cost.py --suite --seeds 5
    nice -n 10 python benchmarks/bench_cost.py --mixtures
    python benchmarks/bench_cost.py --suite --render
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import numpy as np  # noqa: E402
from stratified import subsample  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
MAIN_SETS = ("vowel", "letter", "pendigits", "optdigits", "satimage", "shuttle", "mnist",
             "connect4", "sleep", "fars")
PEERS = ("minrisk", "sigmoid", "isotonic")


def suite_sets() -> list[str]:
    """The 46 sets, smallest first."""
    sizes = {}
    for path in sorted((DATA / "suite").glob("*.npz")) + [DATA / f"{n}.npz" for n in MAIN_SETS]:
        with np.load(path) as d:
            sizes[path.stem] = len(d["y"]) if "y" in d else len(d["y_train"]) + len(d["y_test"])
    return sorted(sizes, key=sizes.get)


def load_split(name: str, seed: int, max_train: int, max_test: int = 5000):
    from sklearn.model_selection import train_test_split

    path = DATA / "suite" / f"{name}.npz"
    with np.load(path if path.exists() else DATA / f"{name}.npz") as d:
        if "y" in d:
            X, y = d["X"], d["y"]
        else:
            X, y = np.concatenate([d["X_train"], d["X_test"]]), np.concatenate(
                [d["y_train"], d["y_test"]])
    y = np.unique(y, return_inverse=True)[1]
    X_tr, X_te, y_tr, y_te = train_test_split(X.astype(np.float64), y, test_size=0.3,
                                              stratify=y, random_state=seed)
    rng = np.random.default_rng(seed)
    keep, keep_te = subsample(y_tr, max_train, rng), subsample(y_te, max_test, rng)
    return X_tr[keep], y_tr[keep], X_te[keep_te], y_te[keep_te]


def matrices(k: int, priors: np.ndarray, rng) -> list[tuple[str, np.ndarray]]:
    from rebelboost.experiments.cost_sensitive import random_cost_matrix

    out = [(f"random{i}", random_cost_matrix(rng, priors)) for i in range(4)]
    hedge = 1.0 - np.eye(k)
    hedge[0, 1:] = 10.0
    refer = np.hstack([1.0 - np.eye(k), np.full((k, 1), 0.2)])
    return out + [("hedge", hedge), ("refer", refer)]


class FoldMemo:
    """Memoise the default route's fold models (their out-of-fold scores depend on the rows,
    folds and parameters, never on the cost matrix) across the matrices of one split."""

    def __init__(self):
        from rebelboost.ensemble import _cost_route

        self.module, self.real, self.cache = _cost_route, _cost_route.out_of_fold_scores, {}
        _cost_route.out_of_fold_scores = self

    def __call__(self, model, X, codes, w, folds, params, sample_cost=None, alongside=None,
                 queued=()):
        from functools import partial

        from rebelboost.parallel import resolve_n_jobs

        if sample_cost is not None or params.get("cost_matrix", 0) is not None:
            return self.real(model, X, codes, w, folds, params, sample_cost,
                             alongside=alongside, queued=queued)
        if alongside is None:
            return self.scores(model, X, codes, w, folds, params)
        # (the final fit, run after the folds: the model it trains is the same)
        return (self.scores(model, X, codes, w, folds, params),
                partial(alongside, resolve_n_jobs(model.get_params()["n_jobs"])),
                [partial(self.scores, model, X, codes, w, folds, p) for p in queued])

    def scores(self, model, X, codes, w, folds, params):
        key = (X.shape, X[:3].tobytes(), codes.tobytes(), folds.tobytes(), repr(params),
               repr(sorted(model.resolved_params_.items())))
        if key not in self.cache:
            self.cache[key] = self.real(model, X, codes, w, folds, params)
        return self.cache[key]

    def clear(self):
        self.cache.clear()


def peer_proba(X, y, X_te, seed) -> dict:
    from lightgbm import LGBMClassifier
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.ensemble import HistGradientBoostingClassifier

    makers = {"lgbm": lambda: LGBMClassifier(n_jobs=1, verbose=-1, random_state=seed),
              "hgb": lambda: HistGradientBoostingClassifier(random_state=seed)}
    folds = int(min(5, np.bincount(y).min()))
    out = {}
    for name, make in makers.items():
        out[f"{name}-minrisk"] = make().fit(X, y).predict_proba(X_te)
        for method in ("sigmoid", "isotonic"):
            if folds < 2:
                out[f"{name}-{method}"] = None  # a class with one training row: refused
                continue
            cal = CalibratedClassifierCV(make(), method=method, cv=folds).fit(X, y)
            out[f"{name}-{method}"] = cal.predict_proba(X_te)
    return out, folds


def run_split(name: str, seed: int, max_train: int, memo: FoldMemo) -> list[dict]:
    from rebelboost import RebelClassifier
    from rebelboost.costs import certain_codes

    X, y, X_te, y_te = load_split(name, seed, max_train)
    k = int(y.max()) + 1
    rng = np.random.default_rng(1000 + seed)
    t = time.perf_counter()
    plain = RebelClassifier(random_state=seed, n_jobs=1).fit(X, y)
    plain_time = time.perf_counter() - t
    top = plain.predict(X_te)  # classes are 0..K-1: the codes of argmax H
    peers, peer_folds = peer_proba(X, y, X_te, seed)
    memo.clear()
    records = []
    for i, (label, C) in enumerate(matrices(k, np.bincount(y) / len(y), rng)):
        refer = C.shape[1] > k
        params = {"decisions": [*map(str, range(k)), "refer"]} if refer else {}
        t = time.perf_counter()
        default = RebelClassifier(cost_matrix=C, random_state=seed, n_jobs=1, **params)
        default.fit(X, y)
        fit_time = time.perf_counter() - t
        pred = default.predict(X_te)
        codes = (np.array([int(p) if p != "refer" else k for p in pred]) if refer else pred)
        costs = {"rebel-default": C[y_te, codes].mean(),
                 "rebel-argmax": C[y_te, certain_codes(top, C)].mean()}
        if not refer:
            loss = RebelClassifier(cost_matrix=C, cost_strategy="loss", random_state=seed,
                                   n_jobs=1).fit(X, y)
            costs["rebel-loss"] = C[y_te, loss.predict(X_te)].mean()
        for peer, proba in peers.items():
            if proba is not None:
                costs[peer] = C[y_te, np.argmin(proba @ C, axis=1)].mean()
        records.append({
            "set": name, "seed": seed, "matrix": label, "n_train": len(y),
            "n_test": len(y_te), "k": k, "costs": {m: float(v) for m, v in costs.items()},
            "route": default.cost_route_, "calibration": default.calibration_.kind,
            "temperature": default.temperature_, "peer_folds": peer_folds,
            "plain_fit_s": plain_time, "default_fit_s": fit_time if i == 0 else None})
    return records


def run_suite(args) -> None:
    out = Path(args.out)
    done = set()
    if out.exists():
        done = {(r["set"], r["seed"]) for r in map(json.loads, out.read_text().splitlines())}
    memo = FoldMemo()
    names = args.datasets or suite_sets()
    for name in names:
        for seed in range(args.seeds):
            if (name, seed) in done:
                continue
            t = time.perf_counter()
            records = run_split(name, seed, args.max_train, memo)
            with out.open("a") as fh:
                for r in records:
                    fh.write(json.dumps(r) + "\n")
            print(f"{name} seed {seed}: {time.perf_counter() - t:.0f} s", flush=True)


# ------------------------------------------------------------------ known mixtures


def bayes_proba(X: np.ndarray, centers) -> np.ndarray:
    """True posteriors of :func:`make_gaussian_mixture` (equal class priors, equal clusters)."""
    from scipy.stats import multivariate_normal

    dens = np.zeros((len(X), len(centers)))
    for k, clusters in enumerate(centers):
        for center, scale, angle in clusters:
            c, s = np.cos(angle), np.sin(angle)
            R = np.array([[c, -s], [s, c]])
            dens[:, k] += multivariate_normal(center, R @ np.diag(scale ** 2) @ R.T).pdf(X)
    return dens / dens.sum(axis=1, keepdims=True)


def run_mixtures(args) -> None:
    from sklearn.metrics import make_scorer
    from sklearn.model_selection import TunedThresholdClassifierCV

    from rebelboost import RebelClassifier
    from rebelboost.costs import certain_codes
    from rebelboost.experiments.cost_sensitive import make_gaussian_mixture

    out = Path(args.out)
    memo = FoldMemo()
    for k in (2, 3, 4, 5):
        for seed in range(args.seeds):
            rng = np.random.default_rng(seed * 10 + k)
            X, y, centers = make_gaussian_mixture(rng, k, 2, 1000)
            X_te, y_te, _ = make_gaussian_mixture(rng, k, 2, 20000, centers)
            truth = bayes_proba(X_te, centers)
            plain = RebelClassifier(random_state=seed, n_jobs=1).fit(X, y)
            top = plain.predict(X_te)
            memo.clear()
            for label, C in matrices(k, np.full(k, 1 / k), rng):
                refer = C.shape[1] > k
                params = {"decisions": [*map(str, range(k)), "refer"]} if refer else {}
                model = RebelClassifier(cost_matrix=C, random_state=seed, n_jobs=1, **params)
                pred = model.fit(X, y).predict(X_te)
                codes = np.array([k if p == "refer" else int(p) for p in pred])
                costs = {"bayes": C[y_te, np.argmin(truth @ C, axis=1)].mean(),
                         "rebel-default": C[y_te, codes].mean(),
                         "rebel-argmax": C[y_te, certain_codes(top, C)].mean()}
                if k == 2 and not refer:
                    scorer = make_scorer(lambda t, p, C=C: -C[t, p].mean())
                    for name, est in peers_for_threshold(seed).items():
                        tuned = TunedThresholdClassifierCV(est, scoring=scorer, cv=5)
                        costs[f"{name}-tuned"] = C[y_te, tuned.fit(X, y).predict(X_te)].mean()
                with out.open("a") as fh:
                    fh.write(json.dumps({"k": k, "seed": seed, "matrix": label, "route":
                                         model.cost_route_, "costs": costs}) + "\n")
            print(f"mixture k={k} seed {seed} done", flush=True)


def peers_for_threshold(seed) -> dict:
    from lightgbm import LGBMClassifier
    from sklearn.ensemble import HistGradientBoostingClassifier

    return {"lgbm": LGBMClassifier(n_jobs=1, verbose=-1, random_state=seed),
            "hgb": HistGradientBoostingClassifier(random_state=seed)}


# ------------------------------------------------------------------ tables


def load_peers(path) -> dict:
    """The peers' test costs of a ``--suite`` results file: (set, seed, matrix) -> {method:
    mean cost}, rebelboost's own methods and refusals left out."""
    peers = {}
    for line in Path(path).read_text().splitlines():
        r = json.loads(line)
        peers[(r["set"], r["seed"], r["matrix"])] = {
            m: v for m, v in r["costs"].items() if not m.startswith("rebel") and v is not None}
    return peers


def beaten_by(got: list[float], keys: list[tuple], peers: dict) -> list[str]:
    """The peers whose mean cost over the cases they ran (``keys``, as :func:`load_peers`
    keys them) is below the mean of ``got`` over the same cases."""
    beaten = []
    for peer in sorted({m for key in keys for m in peers.get(key, {})}):
        both = np.array([(g, peers[key][peer]) for g, key in zip(got, keys, strict=True)
                         if peer in peers.get(key, {})])
        if len(both) and both[:, 0].mean() > both[:, 1].mean() + 1e-12:
            beaten.append(peer)
    return beaten


def geometric_mean(ratios: list[float]) -> float:
    """Of per-set ratios (floored at 1e-6: a set at zero cost)."""
    return float(np.exp(np.mean(np.log(np.maximum(ratios, 1e-6)))))


def render(kind: str, path) -> str:
    records = [json.loads(line) for line in Path(path).read_text().splitlines()]
    return (render_suite if kind == "suite" else render_mixtures)(records)


def render_suite(records: list[dict]) -> str:
    """Per set: each method's mean cost over its cases; the default's wins and its worst
    ratio to argmax; fit-time ratios."""
    by_set: dict[str, list[dict]] = {}
    for r in records:
        by_set.setdefault(r["set"], []).append(r)
    methods = sorted({m for r in records for m in r["costs"]})
    lines = ["| set | n_train | K | seeds | " + " | ".join(methods) + " | lowest | "
             "default / argmax (worst) | min-risk route | fit ratio |",
             "|---" * (len(methods) + 8) + "|"]
    wins, worse, cases, ratios = 0, 0, 0, []
    for name, rs in by_set.items():
        means = {m: np.mean([r["costs"][m] for r in rs if m in r["costs"]]) for m in methods
                 if any(m in r["costs"] for r in rs)}
        beaten = [m for m in means if m != "rebel-default" and np.mean(
            [r["costs"]["rebel-default"] for r in rs if m in r["costs"]]) > means[m] + 1e-12]
        wins += not beaten
        rel = [r["costs"]["rebel-default"] / r["costs"]["rebel-argmax"] for r in rs
               if r["costs"]["rebel-argmax"] > 0] or [float("nan")]
        bad = sum(r["costs"]["rebel-default"] > 1.05 * r["costs"]["rebel-argmax"] + 1e-12
                  for r in rs)
        worse, cases = worse + bad, cases + len(rs)
        fit = [r["default_fit_s"] / r["plain_fit_s"] for r in rs if r["default_fit_s"]]
        ratios += fit
        lowest = min(means, key=means.get)
        lines.append(
            f"| {name} | {rs[0]['n_train']} | {rs[0]['k']} | {len({r['seed'] for r in rs})} | "
            + " | ".join(f"{means[m]:.4f}" if m in means else "-" for m in methods)
            + f" | {lowest} | {max(rel):.2f} ({bad} > 1.05) | "  # worst over argmax > 0
            f"{np.mean([r['route'] == 'min_risk' for r in rs]):.0%} | {np.median(fit):.2f} |")
    lines.append("")
    lines.append(f"{len(by_set)} sets, {cases} cases (set x matrix x seed): the default route "
                 f"has the lowest mean cost (no method lower on the cases it ran) on {wins} of "
                 f"{len(by_set)} sets; {worse} cases cost more than 5% above the same model's "
                 f"argmax; fit time / plain fit: median {np.median(ratios):.2f}, max "
                 f"{np.max(ratios):.2f}.")
    return "\n".join(lines)


def render_mixtures(records: list[dict]) -> str:
    lines = ["| K | matrix | seeds | " + "Bayes | default / Bayes | argmax / Bayes | "
             "tuned thresholds / Bayes (LightGBM, HGB) |", "|---" * 7 + "|"]
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["k"], r["matrix"]), []).append(r)
    worst = 0.0
    for (k, label), rs in sorted(groups.items()):
        bayes = np.mean([r["costs"]["bayes"] for r in rs])
        ratio = {m: np.mean([r["costs"][m] for r in rs]) / bayes for m in rs[0]["costs"]}
        worst = max(worst, ratio["rebel-default"])
        tuned = ", ".join(f"{ratio[m]:.3f}" for m in ("lgbm-tuned", "hgb-tuned") if m in ratio)
        lines.append(f"| {k} | {label} | {len(rs)} | {bayes:.4f} | "
                     f"{ratio['rebel-default']:.3f} | {ratio['rebel-argmax']:.3f} | "
                     f"{tuned or '-'} |")
    lines.append("")
    lines.append(f"Worst default / Bayes over (K, matrix), seeds averaged: {worst:.3f}.")
    return "\n".join(lines)
