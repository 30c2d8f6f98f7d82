"""Where a split's children are built and scanned in one region on every thread: the default
fit's wall time with ``compiled_grower.PARALLEL_CHILDREN_WORK`` at several values, on suite
sets (seed 0's 75% training split, as ``bench_suite.py``) and the two synthetic stand-ins of
``synthetic_heldout.py``. Each value's fits alternate with the others' (``--rounds`` rounds
after a warm-up fit per value); the table gives the median wall time per value over the
rounds and its ratio to the one-thread children (``off``), and checks that every value fits
the same model (the decision function, bit for bit). ``2^13-sparse-serial``: the default's
value with sparse bins' smaller children built on the calling thread, as before stop 46.

    cd benchmarks
    REBELBOOST_DATA=../../shared/data python children_threads.py --sets satimage,iris
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from bench_suite import load, split
from synthetic_heldout import waveform

from rebelboost import RebelClassifier
from rebelboost.ensemble import _compiled_stages
from rebelboost.learners import compiled_grower

OFF = 1 << 62
VALUES = {"off": OFF, "0": 0, **{f"2^{e}": 1 << e for e in range(12, 20)}}
# the default's value, with sparse bins' smaller children built on the calling thread (their
# feature blocks not claimed: stop 45's code)
SPARSE_SERIAL = "2^13-sparse-serial"
VALUES[SPARSE_SERIAL] = 1 << 13


def data(name: str):
    if name == "waveform":
        X, y = waveform()
    elif name == "blocks":
        from sklearn.datasets import make_classification

        X, y = make_classification(5473, 10, n_informative=6, n_classes=5,
                                   weights=[.9, .06, .02, .01, .01], random_state=0)
    else:
        X, y = load(name)
    X_tr, X_te, y_tr, _ = split(X, y, 0)
    return X_tr, y_tr, X_te


children_together = compiled_grower.children_together


def serial_sparse(*args):
    """:func:`compiled_grower.children_together` without sparse bins' feature blocks."""
    *rest, blocks = children_together(*args)
    return (*rest, blocks[:, :0])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", required=True, help="comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--values", default=",".join(VALUES))
    args = parser.parse_args()
    values = args.values.split(",")
    print(f"| set | rows x features | {' | '.join(values)} | same model |")
    print(f"|---|---|{'---|' * len(values)}---|")
    for name in args.sets.split(","):
        X, y, X_te = data(name)
        walls = {v: [] for v in values}
        scores = {}
        for round_ in range(args.rounds + 1):
            for v in values:
                compiled_grower.PARALLEL_CHILDREN_WORK = VALUES[v]
                for module in (compiled_grower, _compiled_stages):
                    module.children_together = (
                        serial_sparse if v == SPARSE_SERIAL else children_together)
                model = RebelClassifier(n_jobs=2, random_state=0)
                start = time.perf_counter()
                model.fit(X, y)
                wall = time.perf_counter() - start
                if round_:  # (round 0 warms up)
                    walls[v].append(wall)
                scores[v] = model.decision_function(X_te)
        same = all(np.array_equal(scores[values[0]], s) for s in scores.values())
        base = np.median(walls[values[0]])
        cells = [f"{np.median(walls[v]):.3f} ({np.median(walls[v]) / base:.2f}x)"
                 for v in values]
        print(f"| {name} | {X.shape[0]} x {X.shape[1]} | {' | '.join(cells)} | "
              f"{'yes' if same else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
