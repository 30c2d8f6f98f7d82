"""Early stopping on the validation loss against the validation cost (issue 16, item 4).

For each data set (the official split, else a seeded stratified 80/20 split) REBEL's defaults
are fitted with 100 and 300 iterations without early stopping, and with 300 iterations and
early stopping on the loss (patience 10) and on the cost (patience 10, 20 and 50); each line
gives the test error, the iterations kept and run, and the fit time. Single runs, 2 threads.

Usage (from the repository root)::

    python benchmarks/early_stopping.py                  # letter satimage connect4 sleep pendigits
    python benchmarks/early_stopping.py --datasets letter
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SETTINGS = {
    "no ES, 100": dict(n_estimators=100, early_stopping=False),
    "no ES, 300": dict(n_estimators=300, early_stopping=False),
    "ES loss p10": dict(n_estimators=300, early_stopping=True, validation_metric="loss",
                        n_iter_no_change=10),
    "ES cost p10": dict(n_estimators=300, early_stopping=True, validation_metric="cost",
                        n_iter_no_change=10),
    "ES cost p20": dict(n_estimators=300, early_stopping=True, validation_metric="cost",
                        n_iter_no_change=20),
    "ES cost p50": dict(n_estimators=300, early_stopping=True, validation_metric="cost",
                        n_iter_no_change=50),
}


def main() -> None:
    from sklearn.model_selection import train_test_split

    from rebelboost import RebelClassifier

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+",
                        default=["letter", "satimage", "connect4", "sleep", "pendigits"])
    args = parser.parse_args()
    for name in args.datasets:
        with np.load(DATA / f"{name}.npz") as d:
            if "X_train" in d:
                X, y = d["X_train"].astype(np.float32), d["y_train"]
                X_test, y_test = d["X_test"].astype(np.float32), d["y_test"]
            else:
                X, X_test, y, y_test = train_test_split(
                    d["X"].astype(np.float32), d["y"], test_size=0.2, random_state=0,
                    stratify=d["y"])
        out = []
        for label, params in SETTINGS.items():
            start = time.perf_counter()
            model = RebelClassifier(random_state=0, n_jobs=2, **params).fit(X, y)
            error = np.mean(model.predict(X_test) != y_test)
            out.append(f"{label}: error {error:.4f}, kept {model.n_estimators_} of "
                       f"{len(model.histogram_updates_)}, {time.perf_counter() - start:.1f} s")
        print(f"{name}: " + " | ".join(out), flush=True)


if __name__ == "__main__":
    main()
