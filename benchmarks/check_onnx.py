"""ONNX graphs against ``predict`` on every test row (issue 31's target), numeric and
categorical models.

Per set: ``RebelClassifier(random_state=0)`` (the defaults) fitted on the training split,
exported with ``to_onnx`` and run in onnxruntime on every test row and on a copy with 10% of
the cells set to NaN: label mismatches, the largest probability gap; then a cost-sensitive model
(a random K x K cost matrix, uniform 1-10 off the diagonal, the default route), fitted on at
most ``--cost-rows`` training rows, and its cost decision in the graph: the route the guard
chose and, when that is argmax, the minimum-risk rule too (``cost_route_`` set to it).
The benchmark's sets (``bench_accuracy``) are read as numbers; the suite's sets with nominal
columns (and connect4, fars) as in ``bench_categorical`` (nominal columns as pandas
categories), so their graphs hold ``BRANCH_MEMBER`` nodes and read ``model.encode(X)``.
No timing: see ``bench_explain``.

Usage (from the repository root; needs onnx and onnxruntime)::

    python benchmarks/check_onnx.py                    # all sets; results appended to
    python benchmarks/check_onnx.py --sets shuttle     # benchmarks/results/onnx_check.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_accuracy import DATASETS  # noqa: E402
from bench_categorical import SUITE_SETS, frame, nominal_set  # noqa: E402
from bench_suite import DATA, load, split  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "onnx_check.jsonl"
CATEGORICAL = (*SUITE_SETS, "connect4", "fars")


def data(name: str, categorical: bool):
    """(train, y_train, test, nan_copy) as the model reads them."""
    if not categorical:  # the official split where the file has one, else seed 0's
        with np.load(DATA / f"{name}.npz") as d:
            official = "X_train" in d
        if official:
            with np.load(DATA / f"{name}.npz") as d:
                X_tr, y_tr, X_te = d["X_train"], d["y_train"], d["X_test"]
        else:
            X_tr, X_te, y_tr, _ = split(*load(name), 0)
        X_tr, X_te = X_tr.astype(np.float64), X_te.astype(np.float64)
        return X_tr, y_tr, X_te, _with_nans(X_te)
    X, y, nominal = nominal_set(name)
    X_tr, X_te, y_tr, _ = split(X, y, 0)
    cats = [np.unique(X_tr[:, j][~np.isnan(X_tr[:, j])]) if nominal[j] else None
            for j in range(X.shape[1])]
    return (frame(X_tr, nominal, cats), y_tr, frame(X_te, nominal, cats),
            frame(_with_nans(X_te.astype(np.float64)), nominal, cats))


def _with_nans(X: np.ndarray) -> np.ndarray:
    X = X.copy()
    X[np.random.RandomState(0).uniform(size=X.shape) < 0.1] = np.nan
    return X


def session(model):
    import onnxruntime as ort

    return ort.InferenceSession(model.to_onnx().SerializeToString(),
                                providers=["CPUExecutionProvider"])


def check(name: str, categorical: bool, cost_rows: int) -> dict:
    from rebelboost import RebelClassifier

    X_tr, y_tr, X_te, X_nan = data(name, categorical)
    start = time.perf_counter()
    model = RebelClassifier(random_state=0, n_jobs=2).fit(X_tr, y_tr)
    out = {"set": name, "categorical": categorical, "test_rows": len(X_te),
           "classes": len(model.classes_), "fit_s": round(time.perf_counter() - start, 1),
           "member_nodes": int(np.isnan(model.model_.learners.threshold).sum())}
    graph = session(model)
    for tag, X in (("", X_te), ("_nan", X_nan)):
        label, probabilities = graph.run(["label", "probabilities"],
                                         {"X": model.encode(X)})
        out[f"label_mismatches{tag}"] = int(np.sum(label != model.predict(X)))
        out[f"proba_max_gap{tag}"] = float(np.max(np.abs(probabilities
                                                        - model.predict_proba(X))))
    k = len(model.classes_)
    cost = np.random.RandomState(0).uniform(1, 10, size=(k, k)) * (1 - np.eye(k))
    rows = np.random.RandomState(1).permutation(len(y_tr))[:cost_rows]
    X_sub = X_tr.iloc[rows] if hasattr(X_tr, "iloc") else X_tr[rows]
    costly = RebelClassifier(random_state=0, n_jobs=2, cost_matrix=cost).fit(X_sub, y_tr[rows])
    out["cost_route"] = costly.cost_route_
    # the route the guard chose, then the minimum-risk rule itself (expected costs in the
    # graph) whichever was chosen
    for route in dict.fromkeys([costly.cost_route_, "min_risk"]):
        costly.cost_route_ = route
        graph = session(costly)
        for tag, X in (("", X_te), ("_nan", X_nan)):
            label = graph.run(["label"], {"X": costly.encode(X)})[0]
            out[f"cost_{route}_label_mismatches{tag}"] = int(np.sum(label
                                                                    != costly.predict(X)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+",  # connect4 and fars: categorical only
                        default=[s for s in DATASETS if s not in CATEGORICAL] + [*CATEGORICAL])
    parser.add_argument("--cost-rows", type=int, default=20_000)
    args = parser.parse_args()
    for name in args.sets:
        result = check(name, name in CATEGORICAL, args.cost_rows)
        with RESULTS.open("a") as f:
            f.write(json.dumps(result) + "\n")
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
