"""Reproduce Tables 1 and 2 of Saberian and Vasconcelos, "Multiclass Boosting: Theory and
Algorithms" (NIPS 2011), on the official train/test splits in ``../shared/data``.

Table 1 (decision stumps): one-vs-all discrete AdaBoost with 20 rounds per class (20 K stumps
in all); AdaBoost.MH (factorized stumps, Kégl's Appendix C) and CD-MCBoost with the same total,
20 K iterations; extra row: REBEL with 20 K stumps.
Table 2 (trees of depth 2, 50 iterations): scikit-learn ``AdaBoostClassifier`` (SAMME, the
only algorithm it has) on ``DecisionTreeClassifier(max_depth=2)``; GD-MCBoost with depth-2
codeword trees; extra rows: REBEL with depth-2 trees and AdaBoost.MH with depth-2 Hamming trees.

isolet is not in ``../shared/data``, so its column is published-only. "landsat" is
``satimage.npz`` (Statlog sat.trn / sat.tst).

Usage (from the repository root)::

    python benchmarks/reproduce_mcboost.py                  # all, writes the results table
    python benchmarks/reproduce_mcboost.py --datasets pendigits --tables 2
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
OUT = ROOT / "benchmarks" / "results"

DATASETS = {"landsat": "satimage", "letter": "letter", "pendigit": "pendigits",
            "optdigit": "optdigits", "shuttle": "shuttle"}
COLUMNS = ["landsat", "letter", "pendigit", "optdigit", "shuttle", "isolet"]

# Published accuracies (%), column order as COLUMNS; None = not reported ('-').
PUBLISHED = {
    1: {
        "One Vs All": [84.80, 50.92, 86.56, 89.93, 87.11, 88.97],
        "AdaBoost-MH [18]": [47.70, 15.73, 24.41, 73.62, 79.16, 66.71],
        "CD-MCBoost": [85.70, 49.60, 89.51, 92.82, 88.01, 91.02],
    },
    2: {
        "AdaBoost-M1 [7]": [72.85, None, None, None, 96.45, None],
        "AdaBoost-SAMME [12]": [79.80, 45.65, 83.82, 87.53, 99.70, 61.00],
        "AdaBoost-Cost [16]": [83.95, 42.00, 80.53, 86.20, 99.55, 63.69],
        "GD-MCBoost": [86.65, 59.65, 92.94, 92.32, 99.73, 84.28],
    },
}


NOTES = """
Gaps larger than 3 points (from the run this file was written with):

* **AdaBoost-MH, every column (ours 79-99.96 vs published 15.7-79.2).** The paper's
  AdaBoost-MH is Schapire and Singer's, run by the MCBoost authors; its shuttle number, 79.16%,
  is exactly the share of the majority class in the shuttle test set (11478 / 14500), so it
  learned nothing there, and 15.73% on letter is near chance for 26 classes (3.8%) after 520
  stumps. Ours is Kégl's factorized AdaBoost.MH with the exact multi-class stump of his
  Appendix C (edge = L1 norm of the class-wise edges, votes = their signs), which Kégl (2014)
  shows to be competitive; the gap is the difference between the two base learners, not a
  tuning detail.
* **shuttle, One Vs All and CD-MCBoost (ours 99.93 / 99.97 vs published 87.11 / 88.01).** The
  same paper reports 99.55-99.73% on shuttle with depth-2 trees (Table 2) and every method
  here, stumps included, gets above 99.9%; 87-88% after 140 stumps points to a problem in the
  published Table 1 run (for example a different test file or a stump grid
  that misses the useful thresholds), not to something our stumps add.
* **letter, One Vs All and CD-MCBoost (ours 70.65 / 72.50 vs published 50.92 / 49.60).** Not
  explained: our stumps search every threshold between distinct training values (letter has at
  most 16 values per feature, so binning loses nothing) and include the constant learners; the
  paper does not say how its stump thresholds were chosen. The two methods are within 2 points of
  each other in both runs, and Table 2's letter numbers (GD-MCBoost, SAMME)
  reproduce within 3.2 points, so the data set and split are the same; the Table 1 gap looks
  like a weaker stump learner in the original code.

Table 2 reproduces: GD-MCBoost within 1.8 points of the published accuracy on every available
data set, scikit-learn's SAMME within 3.2 points (sklearn's trees split on the weighted Gini
index, the paper's on the weighted error).
"""


def _methods(table: int, k: int, n_jobs: int):
    """(row name, published row name or None, estimator factory) for a table."""
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.tree import DecisionTreeClassifier

    from rebelboost import RebelClassifier
    from rebelboost.ensemble.adaboost_mh import AdaBoostMHClassifier
    from rebelboost.ensemble.mcboost import MCBoostClassifier
    from rebelboost.ensemble.one_vs_all import OneVsAllAdaBoostClassifier

    if table == 1:
        total = 20 * k
        return [
            ("One Vs All", "One Vs All",
             lambda: OneVsAllAdaBoostClassifier(20, n_jobs=n_jobs)),
            ("AdaBoost-MH", "AdaBoost-MH [18]",
             lambda: AdaBoostMHClassifier(total, n_jobs=n_jobs)),
            ("CD-MCBoost", "CD-MCBoost",
             lambda: MCBoostClassifier(total, algorithm="cd", n_jobs=n_jobs)),
            ("REBEL (stumps)", None,
             lambda: RebelClassifier(total, weak_learner="stump", n_jobs=n_jobs,
                                     random_state=0)),
        ]
    return [
        ("AdaBoost-SAMME (sklearn)", "AdaBoost-SAMME [12]",
         lambda: AdaBoostClassifier(DecisionTreeClassifier(max_depth=2), n_estimators=50,
                                    random_state=0)),
        ("GD-MCBoost", "GD-MCBoost",
         lambda: MCBoostClassifier(50, algorithm="gd", max_depth=2, n_jobs=n_jobs)),
        ("REBEL (depth-2 trees)", None,
         lambda: RebelClassifier(50, weak_learner="tree", max_depth=2, n_jobs=n_jobs,
                                 random_state=0)),
        ("AdaBoost.MH (depth-2 Hamming trees)", None,
         lambda: AdaBoostMHClassifier(50, weak_learner="tree", max_depth=2, n_jobs=n_jobs)),
    ]


def _load(name: str):
    d = np.load(DATA / f"{name}.npz")
    return (d["X_train"].astype(np.float64), d["y_train"], d["X_test"].astype(np.float64),
            d["y_test"])


def run(tables, columns, n_jobs: int) -> dict:
    results: dict = {str(t): {} for t in tables}
    warmed: set = set()
    for col in columns:
        X, y, Xt, yt = _load(DATASETS[col])
        k = len(np.unique(y))
        for table in tables:
            for row, _, make in _methods(table, k, n_jobs):
                if (table, row) not in warmed:  # numba compilation is not timed
                    make().set_params(n_estimators=2).fit(X[:300], y[:300])
                    warmed.add((table, row))
                model = make()
                start = time.perf_counter()
                model.fit(X, y)
                fit_s = time.perf_counter() - start  # binning included
                acc = 100.0 * float(np.mean(model.predict(Xt) == yt))
                results[str(table)].setdefault(row, {})[col] = {"acc": acc, "fit_s": fit_s}
                print(f"table {table} {col:9s} {row:38s} {acc:6.2f}%  {fit_s:7.1f} s",
                      flush=True)
    return results


def _cell(v):
    return "–" if v is None else f"{v:.2f}"


def markdown(results: dict) -> str:
    lines = []
    titles = {1: "Table 1: decision stumps (one-vs-all: 20 rounds per class, the others 20 K "
                 "weak learners)",
              2: "Table 2: trees of depth 2, 50 iterations"}
    for table in sorted(int(t) for t in results):
        res = results[str(table)]
        lines += [f"### {titles[table]}", "",
                  "Accuracy (%) on the official test sets: published / ours (fit time).", "",
                  "| method | " + " | ".join(COLUMNS) + " |",
                  "|---|" + "---|" * len(COLUMNS)]
        ours_rows = {row: pub for row, pub, _ in _methods(table, 2, 1)}
        published = PUBLISHED[table]
        for row, pub in ours_rows.items():
            cells = []
            for i, col in enumerate(COLUMNS):
                p = published[pub][i] if pub else None
                o = res.get(row, {}).get(col)
                if o is None:
                    cells.append(_cell(p) if pub else "–")
                elif pub:
                    cells.append(f"{_cell(p)} / **{o['acc']:.2f}** ({o['fit_s']:.1f} s)")
                else:
                    cells.append(f"**{o['acc']:.2f}** ({o['fit_s']:.1f} s)")
            lines.append(f"| {row} | " + " | ".join(cells) + " |")
        for pub, values in published.items():
            if pub not in ours_rows.values():
                lines.append(f"| {pub} (published only) | "
                             + " | ".join(_cell(v) for v in values) + " |")
        lines.append("")
    lines.append("isolet is not in `../shared/data`: its column shows the published numbers "
                 "only. Fit times: one thread, binning included, numba compilation excluded, "
                 "on a shared 2-core machine (indicative only).")
    return "\n".join(lines) + "\n" + NOTES


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="*", default=list(DATASETS), choices=list(DATASETS))
    ap.add_argument("--tables", nargs="*", type=int, default=[1, 2], choices=[1, 2])
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--out", default=str(OUT / "mcboost_tables.md"))
    ap.add_argument("--from-json", help="rewrite the table from a saved results JSON")
    args = ap.parse_args()
    if args.from_json:
        results = json.loads(Path(args.from_json).read_text())
    else:
        results = run(args.tables, args.datasets, args.n_jobs)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(results, indent=1))
    text = markdown(results)
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
