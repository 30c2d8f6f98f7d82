"""The same cost-route fit, repeated: how many distinct calibrations come out.

A fit with ``random_state`` set must give the same model file every time. The cost route's
fold models, final fit and calibration run on threads beside each other; this fits vowel's
training rows (30 trees, per-row costs drawn from a fixed seed) ``N`` times in one process and
prints the distinct cross-fitted log-losses of the calibration's three maps.

    python benchmarks/cost_route_repeats.py 30
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from rebelboost import RebelClassifier

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    with np.load(DATA / "vowel.npz") as d:
        X, y = d["X_train"].astype(float), d["y_train"]
    rng = np.random.RandomState(0)
    classes = np.unique(y)
    cost = rng.uniform(0, 1, size=(len(y), len(classes)))
    cost[np.arange(len(y)), np.searchsorted(classes, y)] = 0
    seen = set()
    for _ in range(repeats):
        model = RebelClassifier(30, random_state=0).fit(X, y, sample_cost=cost)
        seen.add(json.dumps(model.cost_evidence_["log_loss"], sort_keys=True))
    print(f"{len(seen)} distinct calibration(s) in {repeats} fits")
    for s in sorted(seen):
        print(s)


if __name__ == "__main__":
    main()
