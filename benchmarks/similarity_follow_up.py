"""Similarities with and without the follow-up step (a constant step's search reused), one thread.

For each ``name:cap`` argument, fits REBEL with localized similarities twice on the official
split (``spiral`` is the paper's 500-point spiral) and prints fit time, iterations, final
training loss, learner kinds and test error % at checkpoints.

    python benchmarks/similarity_follow_up.py pendigits:2000 optdigits:2000
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_similarity import load  # noqa: E402


def run(name: str, cap: int, reuse: bool) -> None:
    from rebelboost import RebelClassifier
    from rebelboost.ensemble import rebel

    follow_up = rebel.fit_follow_up
    if not reuse:  # every iteration searches
        rebel.fit_follow_up = lambda candidate, channels: None
    try:
        if name == "spiral":
            from rebelboost.experiments.spiral import split_spiral

            X, y, X_test, y_test = split_spiral(500)
        else:
            X, y, X_test, y_test = load(name)
        model = RebelClassifier(cap, weak_learner="similarity", target_loss="auto", n_jobs=1)
        start = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - start
    finally:
        rebel.fit_follow_up = follow_up
    errors = [100 * np.mean(p != y_test) for p in model.staged_predict(X_test)]
    marks = {it: round(float(errors[it - 1]), 2) for it in (250, 500, 1000, 2000, 5000)
             if it <= len(errors)}
    print(f"{name} {'follow-up' if reuse else 'search every iteration'}: {seconds:.1f} s, "
          f"{model.n_estimators_} it, final loss {model.train_loss_[-1]:.3g}, kinds "
          f"{np.bincount(model.learners_.kind, minlength=3).tolist()}, test error % {marks}",
          flush=True)


def main() -> None:
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        for arg in sys.argv[1:]:
            name, cap = arg.split(":")
            for reuse in (False, True):
                run(name, int(cap), reuse)


if __name__ == "__main__":
    main()
