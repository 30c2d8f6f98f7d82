"""QuickBoost vs the exhaustive search, and REBEL vs its peers end to end (issue 3).

Two parts, both written to the "QuickBoost (issue 3)" section of ``BENCHMARKS.md``:

* **fits**: on each data set (official splits from ``../shared/data``), REBEL with stumps and
  with depth-2 trees, QuickBoost on and off, and LightGBM, XGBoost and scikit-learn's
  HistGradientBoosting at depth 2 with the same number of rounds. Every fit runs in its own
  process through ``bench_core.py``'s worker (warm-up fit first, so compilation is not timed;
  ``--fit-repeats`` interleaved fits, medians). Reported: histogram updates (row x feature
  accumulations) per iteration, steady-state ms per iteration, fit time, test error, whether
  QuickBoost on and off predicted the same test labels at every iteration, and the time REBEL
  takes to first reach LightGBM's final test error.
* **bound**: why pruning does or does not pay. REBEL stumps are fitted (QuickBoost off) and,
  after chosen iterations, the next search is replayed: each feature's exact best score, the
  best stump's edge ``1 - best / no-split score``, and the share of features that QuickBoost's
  bound on the heaviest prefix holding a fraction ``m`` of the weight can prune *even when
  the incumbent is already the exact best* (the most any schedule starting with that prefix
  can prune there).

Usage (from the repository root)::

    python benchmarks/bench_quickboost.py                  # both parts, writes BENCHMARKS.md
    python benchmarks/bench_quickboost.py --part bound --datasets mnist --quick
"""

from __future__ import annotations

import argparse
import datetime
import shlex
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_core  # noqa: E402  (the worker processes, machine and version lines)

ROOT = bench_core.ROOT
SECTION = "## QuickBoost (issue 3)"
REBEL = ["rebel-stump-noqb", "rebel-stump-qb", "rebel-tree2-noqb", "rebel-tree2-qb"]
PEERS = ["lightgbm", "xgboost", "sklearn-hgb"]
MASSES = (0.5, 0.9, 0.99, 0.999)


# ------------------------------------------------------------------------------ part 1: fits


def _first_reach(r: dict, target: float) -> tuple[int, float] | None:
    """REBEL's first iteration (1-based) with test error <= ``target``, and its end time in
    seconds from the start of fit; None if never."""
    errors, ends = r.get("staged_test_error"), r.get("iteration_end_s")
    if not errors or not ends or len(errors) != len(ends):
        return None
    hit = np.flatnonzero(np.asarray(errors) <= target)
    return (int(hit[0]) + 1, float(ends[hit[0]])) if len(hit) else None


def render_fits(results: list[dict]) -> str:
    lines = [
        "| data set | method | test error | fit time (s) | steady ms/iteration "
        "| updates/iteration (M) | QuickBoost: updates, time vs off | same predictions "
        "| time to LightGBM's error (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    by = {(r["dataset"], r["method"]): r for r in results}
    for r in results:
        d, m = r["dataset"], r["method"]
        lgbm = by.get((d, "lightgbm"))
        upd = r.get("histogram_updates")
        ratios = same = reach = "—"
        if m.endswith("-qb") and (d, m[:-3] + "-noqb") in by:
            off = by[(d, m[:-3] + "-noqb")]
            ratios = (f"{np.sum(upd) / np.sum(off['histogram_updates']):.2f}x, "
                      f"{r['steady_iter_s'] / off['steady_iter_s']:.2f}x")
            same = "yes" if r["staged_test_error"] == off["staged_test_error"] else "**no**"
        if lgbm is not None and m.startswith("rebel"):
            hit = _first_reach(r, lgbm["test_error"])
            reach = "not reached" if hit is None else f"{hit[1]:.1f}"
        elif m == "lightgbm":
            reach = f"{r['fit_s']:.1f} (its fit)"
        lines.append(
            f"| {bench_core.dataset_label(r)} | {bench_core.METHODS[m][0]} "
            f"| {r['test_error']:.4f} | {r['fit_s']:.1f} "
            f"| {bench_core._fmt(bench_core._ms(r['steady_iter_s']), '.1f')} "
            f"| {'—' if upd is None else f'{np.mean(upd) / 1e6:.2f}'} | {ratios} | {same} "
            f"| {reach} |"
        )
    return "\n".join(lines)


def targets(results: list[dict]) -> str:
    """The issue's three targets, each with its measured figure."""
    by = {(r["dataset"], r["method"]): r for r in results}
    out = []
    on, off = by.get(("mnist", "rebel-stump-qb")), by.get(("mnist", "rebel-stump-noqb"))
    if on and off:
        upd = np.sum(on["histogram_updates"]) / np.sum(off["histogram_updates"])
        wall = on["fit_s"] / off["fit_s"]
        out.append(f"* MNIST stumps, histogram updates: QuickBoost / exhaustive = {upd:.2f} "
                   f"(target <= 0.20): **{'met' if upd <= 0.2 else 'NOT met'}**.")
        out.append(f"* MNIST stumps, fit time: QuickBoost / exhaustive = {wall:.2f} "
                   f"(target <= 0.33): **{'met' if wall <= 1 / 3 else 'NOT met'}**.")
    qb, lgbm = by.get(("mnist", "rebel-tree2-qb")), by.get(("mnist", "lightgbm"))
    if qb and lgbm:
        met = qb["fit_s"] < lgbm["fit_s"]
        out.append(f"* MNIST, 200 depth-2 trees with QuickBoost: {qb['fit_s']:.1f} s against "
                   f"LightGBM's 200 depth-2 rounds {lgbm['fit_s']:.1f} s (target: faster): "
                   f"**{'met' if met else 'NOT met'}**.")
    return "\n".join(out)


def render_reach(long_runs: list[dict], results: list[dict]) -> str:
    """REBEL's longer fits: when each first reaches LightGBM's test error."""
    lgbm = {r["dataset"]: r for r in results if r["method"] == "lightgbm"}
    lines = ["| data set | LightGBM: test error, fit (s) | REBEL learner | iterations run "
             "| test error at the end | first iteration at LightGBM's error | time to it (s) |",
             "|---|---|---|---|---|---|---|"]
    for r in long_runs:
        ref = lgbm.get(r["dataset"])
        if ref is None:
            continue
        hit = _first_reach(r, ref["test_error"])
        lines.append(
            f"| {r['dataset']} | {ref['test_error']:.4f}, {ref['fit_s']:.1f} "
            f"| {bench_core.METHODS[r['method']][0].split(', ')[1]} | {r['rounds']} "
            f"| {r['test_error']:.4f} | {'not reached' if hit is None else hit[0]} "
            f"| {'—' if hit is None else f'{hit[1]:.1f}'} |"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------------------ part 2: bound


def pruning_potential(dataset: str, iterations: list[int], threads: int, quick: bool) -> list:
    """Replays REBEL-stump searches after ``iterations``: edges and the most the bound prunes."""
    from rebelboost import RebelClassifier
    from rebelboost.binning import Binner
    from rebelboost.losses.rebel import RebelLoss
    from rebelboost.search.histograms import bin_columns, column_histograms
    from rebelboost.search.quickboost import bound_feature, prunable, rounding_slack
    from rebelboost.search.scores import rebel_score
    from rebelboost.search.splits import best_split_per_feature

    X, y, _, _ = bench_core._load(dataset, quick)
    model = RebelClassifier(max(iterations), weak_learner="stump", quickboost=False,
                            n_jobs=threads, random_state=0).fit(X, y)
    if len(model.classes_) < 3:
        raise ValueError("the replay reads K-column scores: use a data set with 3+ classes")
    codes = np.searchsorted(model.classes_, y)
    loss = RebelLoss(model.cost_matrix_, codes, np.ones(len(y)))
    binner = Binner(model.max_bins).fit(X)  # the model's bins (no subsampling at these sizes)
    columns = bin_columns(binner.transform(X))
    nvb, has_missing = binner.n_value_bins_, binner.has_missing_
    mb, nbt = binner.missing_bin, binner.n_bins_total
    candidates = np.flatnonzero((nvb >= 2) | (has_missing & (nvb >= 1)))
    n = len(y)
    rows = []
    for t, scores in enumerate(model.staged_decision_function(X), start=1):
        if t not in iterations:
            continue
        channels, _ = loss.weights(scores)  # what iteration t + 1 searches
        hist, total = column_histograms(columns, channels, np.zeros(n, np.int32), 1, nbt)
        full = best_split_per_feature(hist[0], binner.layout, rebel_score)[0][candidates]
        best_at = int(np.argmin(full))
        best, best_f = float(full[best_at]), int(candidates[best_at])
        no_split = float(rebel_score(total[0], np.zeros_like(total[0])))
        slack = rounding_slack(rebel_score, n, nbt, channels.shape[1], float(channels.sum()))
        weight = channels.sum(axis=1)
        heaviest = np.argsort(-weight, kind="stable")
        mass = np.cumsum(weight[heaviest])
        row = {"dataset": dataset, "iteration": t, "edge": 1.0 - best / no_split,
               "median_gap": float(np.median(full) - best) / no_split, "masses": []}
        for m in MASSES:
            m0 = min(n, int(np.searchsorted(mass, m * mass[-1])) + 1)
            label = np.full(n, -1, np.int32)
            label[heaviest[:m0]] = 0
            prefix, seen = column_histograms(columns, channels, label, 1, nbt)
            unseen = total[0] - seen[0]
            bound = np.array([bound_feature(prefix[0, f], nvb[f], has_missing[f], mb,
                                            rebel_score.code, unseen) for f in candidates])
            pruned = prunable(bound, candidates, best, best_f, slack)
            row["masses"].append({"mass": m, "rows": m0 / n, "pruned": float(pruned.mean())})
        rows.append(row)
        print(f"# bound {dataset} after {t}: edge {row['edge']:.2e}, "
              + ", ".join(f"m={x['mass']}: rows {x['rows']:.2f} pruned {x['pruned']:.2f}"
                          for x in row["masses"]), file=sys.stderr, flush=True)
    return rows


def render_bound(rows: list[dict]) -> str:
    head = " | ".join(f"m = {m}: rows / pruned" for m in MASSES)
    lines = [f"| data set | after iteration | best stump's edge | median feature's gap | {head} |",
             "|---|---|---|---|" + "---|" * len(MASSES)]
    for r in rows:
        cells = " | ".join(f"{x['rows']:.2f} / **{x['pruned']:.2f}**" for x in r["masses"])
        lines.append(f"| {r['dataset']} | {r['iteration']} | {r['edge']:.2e} "
                     f"| {r['median_gap']:.2e} | {cells} |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------- main


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", nargs="+",
                   default=["letter", "pendigits", "optdigits", "satimage", "mnist"])
    p.add_argument("--part", choices=["fits", "bound", "all"], default="all")
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--reach-rounds", type=int, default=1000,
                   help="fits: REBEL's longer runs, to see when it reaches LightGBM's error")
    p.add_argument("--iterations", type=int, nargs="+", default=[10, 50, 100, 200],
                   help="bound: replay the searches after these iterations")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--fit-repeats", type=int, default=1)
    p.add_argument("--quick", action="store_true", help="5000 rows, 10 rounds; prints only")
    p.add_argument("--output", default="BENCHMARKS.md")
    args = p.parse_args(argv)
    if args.quick:
        args.rounds = min(args.rounds, 10)
        args.reach_rounds = min(args.reach_rounds, 30)
        args.iterations = [i for i in args.iterations if i <= 10] or [5, 10]

    t0 = time.perf_counter()
    parts = []
    if args.part in ("fits", "all"):
        fits = bench_core.run_methods(args.datasets, REBEL + PEERS, args)
        parts += ["### Pruning on vs off, and the peers", "",
                  f"{args.rounds} rounds; {args.fit_repeats} fit(s) per method, interleaved, "
                  "medians. QuickBoost's ratios are on/off (updates summed over the fit; "
                  "steady-state time per iteration). \"Same predictions\": QuickBoost on and "
                  "off predicted the same test labels after every iteration (the unit tests "
                  "check the models bit for bit). LightGBM, XGBoost and HistGradientBoosting "
                  "build K depth-2 trees per round, REBEL one tree (or stump) per iteration.", "",
                  render_fits(fits), "", targets(fits), ""]
        print(render_fits(fits) + "\n" + targets(fits))
        long_args = argparse.Namespace(**{**vars(args), "rounds": args.reach_rounds})
        long_runs = bench_core.run_methods(args.datasets, REBEL[::2], long_args)
        parts += [f"REBEL run longer ({args.reach_rounds} iterations, QuickBoost off: the "
                  "same models either way), against LightGBM's test error after "
                  f"{args.rounds} rounds from the table above; times from the start of fit.",
                  "", render_reach(long_runs, fits), ""]
        print(render_reach(long_runs, fits))
    if args.part in ("bound", "all"):
        rows = []
        for d in args.datasets:
            rows += pruning_potential(d, sorted(args.iterations), args.threads, args.quick)
        parts += ["### How much the bound can prune", "",
                  "REBEL stumps (QuickBoost off). After each listed iteration the next split "
                  "search is replayed. Edge = 1 - best stump's score / no-split score; median "
                  "gap = (median feature's best - best) / no-split score. For each prefix "
                  "(the heaviest rows holding a fraction m of the weight): the share of rows "
                  "in it, and the share of features QuickBoost's bound prunes there with the "
                  "exact best as incumbent (an upper limit for any schedule that starts there).",
                  "", render_bound(rows), ""]
        print(render_bound(rows))
    command = "python " + shlex.join(["benchmarks/bench_quickboost.py", *sys.argv[1:]])
    head = [f"Command (from the repository root): `{command}`  ",
            f"Date: {datetime.date.today().isoformat()}; code: {bench_core._git()}; "
            f"{time.perf_counter() - t0:.0f} s  ",
            f"Machine: {bench_core._machine()}; {args.threads} threads.  ",
            f"Versions: {bench_core._versions()}", ""]
    if args.quick:
        print("(--quick: BENCHMARKS.md not written)", file=sys.stderr)
    else:
        bench_core.write_section(ROOT / args.output, "\n".join(head + parts), SECTION)
        print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
