"""Tables, ranks, Friedman test and critical-difference diagram of the suite (issue 28).

Reads ``benchmarks/results/suite.jsonl`` (written by ``bench_suite.py``). Per set, a method's
test error is its mean over the seeds it finished; a method that timed out on every seed of a
set ranks last there (ties share the mean rank). Ranks are over the methods given, on the sets
where every one of them has a record. The Friedman test and the Nemenyi critical difference
(Demsar 2006) come from ``autorank``; its diagram is saved as a PNG.

``--candidates`` adds the sweep of candidate defaults: each candidate takes rebel-default's
place among the peers in turn, with its mean rank there, its wins and losses against the
current defaults, and its fit time relative to LightGBM's.

Usage (from the repository root)::

    python benchmarks/suite_report.py                       # prints; --section writes BENCHMARKS.md
    python benchmarks/suite_report.py --max-rows 10000 --candidates rebel-msl5,rebel-lr0.1-300
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import rankdata

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import write_section  # noqa: E402
from bench_suite import PEERS, RESULTS, ROOT, seeds_for  # noqa: E402

LABELS = {
    "rebel-default": "rebelboost defaults", "rebel-trees": "REBEL depth-2 trees (500)",
    "rebel-similarity": "REBEL similarities", "lightgbm": "LightGBM", "xgboost": "XGBoost hist",
    "hist-gb": "HistGradientBoosting", "catboost": "CatBoost",
    "random-forest": "random forest (500)",
}
SECTION = "## The 46-set suite and the defaults (issue 28)"
SMALL = 10_000
HEADER = """Commands: `nice -n 10 python benchmarks/bench_suite.py` (resumable, results appended to
`benchmarks/results/suite.jsonl`; `--methods` names the methods and candidates, `--max-rows`
and `--seeds` restrict the run), then `python benchmarks/suite_report.py --new-default
rebel-defaults-v7 --candidates rebel-defaults-v6 --plot benchmarks/results/suite_cd.png
--section` (these tables). `rebel-defaults-v7` is `RebelClassifier()` with eb4c7ac's sources
(recorded as 5df180b, the same tree), 127 value bins for vector trees on at most 10,000
training rows (stop 43), fitted on every set on 2026-11-29; `rebel-defaults-v6` is
`RebelClassifier()` at 842fd71, at most one bin per 5 training rows (stop 29). The 33 sets
whose binning 127 bins does not change gave v6's test errors seed for seed. v7's fit times
are not comparable with the peers' here: that day the machine ran the same code about 1.4x
slower than on 11-27 (MNIST's 20-iteration fits of 842fd71 and eb4c7ac took the same time,
about 1.4x per iteration of v6's suite fit), and the small sets ran beside tests, so its CPU
times are 1.0-3.7x v6's on sets whose models are the same. MNIST's v7 fit (146 s CPU) ran
under a limit of 400 s: at 120 s it was killed twice. Issue 28's time target is measured side
by side (`suite_fit_time.py`). The per-set table keeps the defaults of stop 17 as "old
defaults". Seeds: 5 up to 2,000 rows (the issue's protocol; seeds 3-4 were added at stop
19), 3 up to 10,000, 2 up to 30,000, 1 above.

Methods, each with its library's defaults and 2 threads: rebelboost's defaults
(`RebelClassifier()`), the paper's learner (500 depth-2 REBEL trees, `weak_learner='tree'`),
REBEL similarities (`target_loss='auto'`, at most 2000 iterations), LightGBM, XGBoost
(`tree_method='hist'`), scikit-learn's `HistGradientBoostingClassifier` (its early stopping on
above 10,000 rows), CatBoost (`thread_count=2, verbose=0`) and a random forest (500 trees).
Sets: the 36 PMLB sets of `../shared/data/suite` and vowel, letter, pendigits, optdigits,
satimage, shuttle, mnist, connect4, sleep and fars (official splits pooled); nominal columns
keep PMLB's numeric codes. Stratified 75/25 splits by seed; a set's figures are means over the
seeds every method finished (the seeds column). A fit past its limit of CPU time (120 s, 60 s
for the sets started last; or 5x that in wall-clock time) is killed and ranks last on that set
("—" in the table, as are refusals). Test error % and mean fit CPU time (seconds, all threads;
the machine was shared at load 5-19, so wall-clock times, in the JSON lines, mostly measured
waiting)."""
# The machine was shared (load 5-11 on 2 cores): wall-clock times mostly measured waiting, so
# times are CPU seconds of the fit (all threads), and wall-clock seconds are in the JSON lines.
FIT_TIME = "fit_cpu_s"


def read(results: Path) -> pd.DataFrame:
    rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    # a fit killed with its driver may have been rerun: the first record of each fit counts
    frame = pd.DataFrame(rows).drop_duplicates(["set", "seed", "method"])
    size = frame.groupby("set").n.max()
    frame = frame.assign(n=frame.set.map(size))
    # every set's protocol seeds only (the first sets were run with more)
    return frame[frame.seed < frame.n.map(lambda n: seeds_for(int(n)))]


def per_set(frame: pd.DataFrame, methods: list[str]):
    """Mean test error and fit time per (set, method); NaN error where every seed timed out.
    Only sets with a record of every method; returns (error, fit_s, seeds, rows)."""
    frame = frame[frame.method.isin(methods)]
    # per set, the seeds that every method has a record for (ok or timeout)
    have = frame.groupby(["set", "seed"]).method.nunique()
    common = have[have == len(methods)].index
    frame = frame.set_index(["set", "seed"]).loc[lambda f: f.index.isin(common)].reset_index()
    sets = sorted(frame.set.unique())
    ok = frame[frame.status == "ok"]
    error = ok.pivot_table(index="set", columns="method", values="error", aggfunc="mean")
    fit = ok.pivot_table(index="set", columns="method", values=FIT_TIME, aggfunc="mean")
    seeds = ok.pivot_table(index="set", columns="method", values="error", aggfunc="count")
    rows = frame.groupby("set").n.max()
    order = sorted(sets, key=lambda s: (rows.get(s, np.inf), s))
    shape = dict(index=order, columns=methods)
    return (error.reindex(**shape), fit.reindex(**shape), seeds.reindex(**shape).fillna(0),
            rows.reindex(order))


def ranks(error: pd.DataFrame) -> pd.DataFrame:
    """Rank of each method on each set (1 = lowest error; timeouts last, ties averaged)."""
    filled = error.fillna(np.inf).to_numpy()
    return pd.DataFrame([rankdata(row) for row in filled], index=error.index,
                        columns=error.columns)


def rank_table(error, fit, rows) -> str:
    r = ranks(error)
    small = rows < SMALL
    lgbm_fit = fit["lightgbm"]
    lines = ["| method | mean rank | wins (ties shared) | mean error % | geo-mean fit CPU time / "
             "LightGBM's, sets < 10k rows | sets without a result |", "|---|---|---|---|---|---|"]
    best = error.min(axis=1)
    for m in r.mean().sort_values().index:
        ratio = np.exp(np.nanmean(np.log(fit.loc[small, m] / lgbm_fit[small])))
        wins = ((error[m] == best) / (error.eq(best, axis=0).sum(axis=1))).sum()
        lines.append(f"| {LABELS.get(m, m)} | {r[m].mean():.2f} | {wins:.1f} | "
                     f"{100 * error[m].mean():.2f} | {ratio:.2f}x | {int(error[m].isna().sum())} |")
    return "\n".join(lines)


def set_table(error, fit, seeds, rows) -> str:
    methods = list(error.columns)
    head = "| set | rows | seeds | " + " | ".join(LABELS.get(m, m) for m in methods) + " |"
    lines = [head, "|---" * (len(methods) + 3) + "|"]
    for s in error.index:
        best = error.loc[s].min()
        cells = []
        for m in methods:
            e = error.loc[s, m]
            if np.isnan(e):
                cells.append("—")
                continue
            text = f"{100 * e:.2f} ({fit.loc[s, m]:.2g}s)"
            cells.append(f"**{text}**" if e == best else text)
        lines.append(f"| {s} | {int(rows[s])} | {int(seeds.loc[s].max())} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def targets(error, fit, rows, method="rebel-default") -> str:
    r = ranks(error).mean()
    boosters = [m for m in error.columns if m not in (method, "random-forest")]
    ref = error[["lightgbm", "rebel-trees"]].min(axis=1)
    gap = 100 * (error[method] - ref)
    worse = gap[gap > 2 + 1e-9].sort_values(ascending=False)  # (exactly 2 is not more)
    small = rows < SMALL
    ratio = fit.loc[small, method] / fit.loc[small, "lightgbm"]
    slow = ratio[ratio > 2].sort_values(ascending=False)
    lines = [
        f"* Mean rank {r[method]:.2f}; best other booster {min(r[b] for b in boosters):.2f} "
        f"({LABELS.get(min(boosters, key=r.get))}); random forest {r['random-forest']:.2f}.",
        f"* Sets more than 2 points worse than the better of LightGBM and the paper's trees: "
        f"{len(worse)}" + (": " + ", ".join(f"{s} (+{g:.1f})" for s, g in worse.items())
                           if len(worse) else "") + ".",
        f"* Sets under 10,000 rows where the fit's CPU time was more than 2x LightGBM's: "
        f"{len(slow)} of "
        f"{int(small.sum())}" + (": " + ", ".join(f"{s} ({v:.1f}x)" for s, v in slow.items())
                                 if len(slow) else "") + ".",
    ]
    return "\n".join(lines)


def candidate_table(frame, candidates, max_rows) -> str:
    """Each candidate in rebel-default's place among the peers."""
    lines = ["| candidate | sets | mean rank among the 8 | rebel-default's there | "
             "wins / losses vs rebel-default | mean error % (defaults') | "
             "geo-mean fit CPU / LightGBM's |", "|---|---|---|---|---|---|---|"]
    for c in candidates:
        methods = [c if m == "rebel-default" else m for m in PEERS] + ["rebel-default"]
        error, fit, _, rows = per_set(frame, methods)
        keep = rows.index[rows <= max_rows] if max_rows else rows.index
        error, fit = error.loc[keep], fit.loc[keep]
        mine = ranks(error.drop(columns="rebel-default"))[c].mean()
        theirs = ranks(error.drop(columns=c))["rebel-default"].mean()
        diff = error[c] - error["rebel-default"]
        ratio = np.exp(np.nanmean(np.log(fit[c] / fit["lightgbm"])))
        lines.append(f"| {c} | {len(error)} | {mine:.2f} | {theirs:.2f} | "
                     f"{int((diff < 0).sum())} / {int((diff > 0).sum())} | "
                     f"{100 * error[c].mean():.2f} ({100 * error['rebel-default'].mean():.2f}) | "
                     f"{ratio:.2f}x |")
    return "\n".join(lines)


def friedman(error: pd.DataFrame, plot: Path | None) -> str:
    """Friedman test and Nemenyi critical difference (autorank); the CD diagram to ``plot``."""
    from autorank import autorank, plot_stats

    if len(error) < 5:
        return "Friedman test: fewer than 5 sets so far."
    data = error.fillna(1.0).rename(columns=lambda m: LABELS.get(m, m))
    with contextlib.redirect_stdout(io.StringIO()):  # autorank prints despite verbose=False
        result = autorank(data, alpha=0.05, verbose=False, order="ascending",
                          force_mode="nonparametric")
    if plot is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        plot_stats(result, allow_insignificant=True)
        plt.savefig(plot, dpi=150, bbox_inches="tight")
        plt.close("all")
    return (f"Friedman test over {len(error)} sets and {error.shape[1]} methods: "
            f"p = {result.pvalue:.2g}; Nemenyi critical difference at alpha 0.05: "
            f"{result.cd:.2f} ranks.")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument("--methods", default=",".join(PEERS))
    p.add_argument("--max-rows", type=int, default=None)
    p.add_argument("--candidates", default="")
    p.add_argument("--plot", type=Path, default=None, help="CD diagram PNG")
    p.add_argument("--out", type=Path, default=None, help="write the markdown here")
    p.add_argument("--section", action="store_true",
                   help="write the tables into BENCHMARKS.md (its notes block is kept)")
    p.add_argument("--new-default", default=None,
                   help="a candidate that takes rebel-default's place in the ranks (the old "
                        "defaults stay in the per-set table)")
    args = p.parse_args(argv)
    frame = read(args.results)
    methods = args.methods.split(",")
    if args.new_default:
        LABELS[args.new_default] = f"rebelboost new defaults ({args.new_default})"
        LABELS["rebel-default"] = "rebelboost old defaults"
        methods = [args.new_default if m == "rebel-default" else m for m in methods]
    error, fit, seeds, rows = per_set(frame, methods + (["rebel-default"] * bool(args.new_default)))
    if args.max_rows:
        keep = rows.index[rows <= args.max_rows]
        error, fit, seeds, rows = error.loc[keep], fit.loc[keep], seeds.loc[keep], rows[keep]
    ranked, ranked_fit = error[methods], fit[methods]
    parts = [f"{len(error)} sets.", rank_table(ranked, ranked_fit, rows),
             friedman(ranked, args.plot)]
    if set(PEERS) <= set(error.columns):
        parts.append(targets(ranked, ranked_fit, rows, args.new_default or "rebel-default"))
    if args.candidates:
        parts.append(candidate_table(frame, args.candidates.split(","), args.max_rows))
    parts.append(set_table(error, fit, seeds, rows))
    text = "\n\n".join(parts)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    if args.section:
        write_section(ROOT / "BENCHMARKS.md", HEADER + "\n\n" + text, SECTION)


if __name__ == "__main__":
    main()
