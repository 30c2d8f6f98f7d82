"""Fit time and test error of rebelboost's defaults and LightGBM's on two synthetic stand-ins
for issue 27's held-out tabular sets, which are not in this repository: Breiman's waveform
generator (5,000 x 40, 3 classes: 21 noisy mixtures of two of three triangular waves, 19
noise features) and a scikit-learn ``make_classification`` set shaped like the second
(5,473 x 10, 5 classes, imbalanced). One library per process; a warm-up fit, then the best
wall time of 3 fits (2 threads), the CPU time of the last, and the test error (stratified
75/25 split, seed 0).

    python benchmarks/synthetic_heldout.py wave rebel
    python benchmarks/synthetic_heldout.py blocks lightgbm
"""

from __future__ import annotations

import sys
import time

import numpy as np
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split


def waveform(n: int = 5000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Breiman's waveform-40 (CART, 1984): each row mixes two of three base waves."""
    rs = np.random.RandomState(seed)
    waves = np.array([np.maximum(6 - np.abs(np.arange(21) - c), 0) for c in (6, 10, 14)], float)
    y = rs.randint(3, size=n)
    u = rs.rand(n, 1)
    pairs = np.array([(0, 1), (0, 2), (1, 2)])[y]
    X = np.empty((n, 40))
    X[:, :21] = u * waves[pairs[:, 0]] + (1 - u) * waves[pairs[:, 1]] + rs.randn(n, 21)
    X[:, 21:] = rs.randn(n, 19)
    return X, y


def main() -> None:
    which, library = sys.argv[1], sys.argv[2]
    if which == "wave":
        X, y = waveform()
    else:
        X, y = make_classification(5473, 10, n_informative=6, n_classes=5,
                                   weights=[.9, .06, .02, .01, .01], random_state=0)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, stratify=y,
                                              random_state=0)
    if library == "rebel":
        from rebelboost import RebelClassifier

        def make():
            return RebelClassifier(n_jobs=2, random_state=0)
    else:
        import lightgbm

        def make():
            return lightgbm.LGBMClassifier(n_jobs=2, verbose=-1, random_state=0)
    make().fit(X_tr, y_tr)
    best = np.inf
    for _ in range(3):
        model = make()
        wall, cpu = time.perf_counter(), time.process_time()
        model.fit(X_tr, y_tr)
        best = min(best, time.perf_counter() - wall)
        cpu = time.process_time() - cpu
    print(f"{which} {library}: wall {best:.3f} s, CPU {cpu:.3f} s, "
          f"test error {np.mean(model.predict(X_te) != y_te):.4f}")


if __name__ == "__main__":
    main()
