"""Localized similarities against trees, LightGBM, random forest and an RBF SVC (issue 4).

Official train/test splits from ``../shared/data``. REBEL with similarities runs until the
training loss is below 1/N or ``--cap`` iterations. The SVC is tuned by 3-fold CV over a 5 x 6
grid of C and gamma (``--svc-grid``) or run with scikit-learn's defaults. Prints a markdown table
of test errors (%) and fit times (s); pass ``--out FILE`` to also write it.

    python benchmarks/bench_similarity.py --datasets vowel optdigits pendigits satimage
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def load(name):
    d = np.load(DATA / f"{name}.npz")
    return (d["X_train"].astype(np.float64), d["y_train"], d["X_test"].astype(np.float64),
            d["y_test"])


def models(cap: int, svc_grid: bool):
    import lightgbm as lgb
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from rebelboost import RebelClassifier

    svc = make_pipeline(StandardScaler(), SVC())
    if svc_grid:
        svc = GridSearchCV(svc, {"svc__C": 10.0 ** np.arange(-1, 4),
                                 "svc__gamma": 10.0 ** np.arange(-4, 2)}, cv=3, n_jobs=1)
    return {
        "REBEL similarities": lambda: RebelClassifier(cap, weak_learner="similarity",
                                                      target_loss="auto", n_jobs=1),
        "REBEL depth-2 trees (500)": lambda: RebelClassifier(500, max_depth=2, n_jobs=1),
        "LightGBM (default)": lambda: lgb.LGBMClassifier(n_jobs=1, verbose=-1),
        "random forest (500)": lambda: RandomForestClassifier(500, n_jobs=1, random_state=0),
        "RBF SVC" + (" (5x6 grid)" if svc_grid else " (default)"): lambda: svc,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+",
                        default=["vowel", "optdigits", "pendigits", "satimage"])
    parser.add_argument("--cap", type=int, default=2000, help="similarity iteration cap")
    parser.add_argument("--svc-grid", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    from rebelboost import RebelClassifier

    warm = np.random.default_rng(0).random((50, 3))
    RebelClassifier(3).fit(warm, np.arange(50) % 2)  # compile the kernels before timing
    names = list(models(args.cap, args.svc_grid))
    rows = []
    for name in args.datasets:
        X, y, X_test, y_test = load(name)
        cells = []
        for label, make in models(args.cap, args.svc_grid).items():
            model = make()
            start = time.perf_counter()
            model.fit(X, y)
            seconds = time.perf_counter() - start
            err = 100 * np.mean(model.predict(X_test) != y_test)
            extra = f", {model.n_estimators_} it" if label.startswith("REBEL sim") else ""
            cells.append(f"{err:.2f} ({seconds:.1f}s{extra})")
            print(f"{name:10s} {label:28s} {cells[-1]}", flush=True)
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    table = "\n".join([
        "| data set | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
        *rows,
    ])
    print(table)
    if args.out:
        args.out.write_text(table + "\n")


if __name__ == "__main__":
    main()
