"""What float32 rows' state would cost in accuracy (issue 27's "float32 where the loss
allows it: show that it does"), measured before building it.

The rows' per-iteration state is float64: the REBEL weights (n, 2K), read by every
histogram, and the scores (n, K). Stored as float32 they would take half the memory and
histogram traffic. This study rounds that state to float32 precision where the booster
writes it (each iteration's weights after they are filled, the scores after each tree's
step), leaving everything else float64, and pairs the default fit with and without the
rounding: final test error and training loss. Both arms run the booster's Python loop (a
callback is passed, so no fit takes the one-call loop, which this cannot reach); the
rounding changes no memory, only the values, so it says what the accuracy target would see.

    python benchmarks/float32_state_study.py satimage,letter,shuttle --seeds 3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_accuracy import load  # noqa: E402

from rebelboost import RebelClassifier  # noqa: E402
from rebelboost.learners import contract  # noqa: E402
from rebelboost.losses.rebel import RebelLoss  # noqa: E402

_weights_and_loss = RebelLoss.weights_and_loss
_add_slot_values = contract.add_slot_values


def _rounded_weights_and_loss(self, scores, out=None):
    channels, scale, loss = _weights_and_loss(self, scores, out)
    channels[...] = channels.astype(np.float32)
    return channels, scale, loss


def _rounded_add(scores, slot_of_row, weight_of_row, values):
    _add_slot_values(scores, slot_of_row, weight_of_row, values)
    scores[...] = scores.astype(np.float32)


def rounding(on: bool) -> None:
    """The float32 rounding of the rows' state on or off."""
    RebelLoss.weights_and_loss = _rounded_weights_and_loss if on else _weights_and_loss
    contract.add_slot_values = _rounded_add if on else _add_slot_values


def fit(dataset: str, seed: int, float32: bool) -> tuple[float, float, float]:
    """Test error (%), final training loss and fit seconds of the default fit."""
    X, y, X_test, y_test = load(dataset)
    rounding(float32)
    try:
        start = time.perf_counter()
        model = RebelClassifier(random_state=seed, n_jobs=2).fit(
            X, y, callbacks=[lambda info: False])
        seconds = time.perf_counter() - start
    finally:
        rounding(False)
    error = 100.0 * float(np.mean(model.predict(X_test) != y_test))
    return error, float(model.train_loss_[-1]), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("datasets")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    X, y, _, _ = load(args.datasets.split(",")[0])
    RebelClassifier(3).fit(X[:2000], y[:2000], callbacks=[lambda info: False])  # (compile)
    print("| set | seed | test error % float64 | float32 state | difference | "
          "training loss, float32 / float64 - 1 |")
    print("|---|---|---|---|---|---|")
    diffs = {}
    for dataset in args.datasets.split(","):
        for seed in range(args.seeds):
            e64, l64, _ = fit(dataset, seed, False)
            e32, l32, _ = fit(dataset, seed, True)
            diffs.setdefault(dataset, []).append(e32 - e64)
            print(f"| {dataset} | {seed} | {e64:.3f} | {e32:.3f} | {e32 - e64:+.3f} | "
                  f"{l32 / l64 - 1:+.1e} |", flush=True)
    means = {d: float(np.mean(v)) for d, v in diffs.items()}
    print("\nMean difference per set (float32 - float64, points): "
          + ", ".join(f"{d} {m:+.3f}" for d, m in means.items()))
    print(f"Mean over sets: {np.mean(list(means.values())):+.3f} points; "
          f"largest per set: {max(means.values(), key=abs):+.3f}")


if __name__ == "__main__":
    main()
