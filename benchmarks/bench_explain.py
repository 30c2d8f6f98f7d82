"""Open models (issue 31): exact contributions against LightGBM's ``pred_contrib``, and the
ONNX graph in onnxruntime against ``predict``.

Per data set (official training split; test split scored):

* models: ``RebelClassifier(random_state=0, n_jobs=threads)`` (the default: 100 vector-leaf
  trees of 31 leaves) and ``LGBMClassifier(n_jobs=threads)`` (LightGBM's default: 100 rounds
  of 31 leaves, K trees a round);
* contributions: rows per second of ``model.contributions(X_test)`` and of LightGBM's
  ``predict(X_test, pred_contrib=True)``, interleaved, ``--repeats`` rounds, the median ratio;
  the largest relative gap between the contributions' row sums and ``decision_function``;
* ONNX: ``model.to_onnx()`` run by onnxruntime (``intra_op_num_threads=threads``): labels
  compared with ``predict`` on every test row and on a copy with 10% of the cells set to NaN,
  probabilities' largest gap; for a cost-sensitive model (a random cost matrix, the posterior
  route) the cost decision too; batch throughput (median of rounds) and single-row latency
  (p50 and p99 of ``--calls`` calls, each timed alone) against ``predict``.

Usage (from the repository root; needs lightgbm, onnx, onnxruntime)::

    python benchmarks/bench_explain.py                        # pendigits and optdigits
    python benchmarks/bench_explain.py --datasets mnist --contrib-rows 1000
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"


def load(name: str):
    with np.load(DATA / f"{name}.npz") as d:
        return (d["X_train"].astype(np.float64), d["y_train"], d["X_test"].astype(np.float64),
                d["y_test"])


def seconds(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def single_row_latency(call, rows: np.ndarray, calls: int) -> tuple[float, float]:
    """(p50, p99) microseconds of ``call(row)``, each call timed alone."""
    times = np.empty(calls)
    for i in range(calls):
        row = rows[i % len(rows)][None]
        start = time.perf_counter()
        call(row)
        times[i] = time.perf_counter() - start
    return float(np.median(times) * 1e6), float(np.percentile(times, 99) * 1e6)


def onnx_session(model, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    return ort.InferenceSession(model.to_onnx().SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def run(name: str, threads: int, repeats: int, calls: int, contrib_rows: int | None) -> dict:
    import lightgbm as lgb

    from rebelboost import RebelClassifier

    X, y, X_test, y_test = load(name)
    rng = np.random.RandomState(0)
    rebel = RebelClassifier(random_state=0, n_jobs=threads).fit(X, y)
    light = lgb.LGBMClassifier(n_jobs=threads, verbose=-1).fit(X, y)
    out: dict = {"dataset": name, "threads": threads, "test_rows": len(X_test),
                 "classes": len(rebel.classes_), "features": X.shape[1]}

    # contributions
    X_contrib = X_test[:contrib_rows]
    out["contrib_rows"] = len(X_contrib)
    rebel.contributions(X_test[:10])  # compile
    light.predict(X_test[:10], pred_contrib=True)
    ours, theirs = [], []
    for _ in range(repeats):
        ours.append(seconds(lambda: rebel.contributions(X_contrib)))
        theirs.append(seconds(lambda: light.predict(X_contrib, pred_contrib=True)))
    phi = rebel.contributions(X_contrib)
    scores = rebel.decision_function(X_contrib)
    out["contrib_sum_rel_gap"] = float(np.max(np.abs(phi.sum(1) - scores))
                                       / np.max(np.abs(scores)))
    out["rebel_contrib_rows_s"] = len(X_contrib) / float(np.median(ours))
    out["lightgbm_contrib_rows_s"] = len(X_contrib) / float(np.median(theirs))
    out["contrib_speedup"] = float(np.median(np.array(theirs) / np.array(ours)))
    out["rebel_predict_proba_rows_s"] = len(X_test) / seconds(lambda: rebel.predict_proba(X_test))

    # ONNX against predict
    session = onnx_session(rebel, threads)
    X_nan = X_test.copy()
    X_nan[rng.uniform(size=X_nan.shape) < 0.1] = np.nan
    for label, data in (("", X_test), ("_nan", X_nan)):
        got = dict(zip([o.name for o in session.get_outputs()],
                       session.run(None, {"X": data}), strict=True))
        out[f"onnx_label_mismatches{label}"] = int(np.sum(got["label"] != rebel.predict(data)))
        out[f"onnx_proba_max_gap{label}"] = float(
            np.max(np.abs(got["probabilities"] - rebel.predict_proba(data))))
    ort_t, pred_t = [], []
    for _ in range(repeats):
        ort_t.append(seconds(lambda: session.run(["label"], {"X": X_test})))
        pred_t.append(seconds(lambda: rebel.predict(X_test)))
    out["onnx_rows_s"] = len(X_test) / float(np.median(ort_t))
    out["predict_rows_s"] = len(X_test) / float(np.median(pred_t))
    out["onnx_p50_us"], out["onnx_p99_us"] = single_row_latency(
        lambda r: session.run(["label"], {"X": r}), X_test, calls)
    out["predict_p50_us"], out["predict_p99_us"] = single_row_latency(
        rebel.predict, X_test, calls)

    # the cost decision in the graph
    k = len(rebel.classes_)
    cost = rng.uniform(1, 10, size=(k, k)) * (1 - np.eye(k))
    costly = RebelClassifier(random_state=0, n_jobs=threads, cost_matrix=cost).fit(X, y)
    costly_session = onnx_session(costly, threads)
    for label, data in (("", X_test), ("_nan", X_nan)):
        got = costly_session.run(["label"], {"X": data})[0]
        out[f"onnx_cost_label_mismatches{label}"] = int(np.sum(got != costly.predict(data)))
    out["cost_route"] = costly.cost_strategy_
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["pendigits", "optdigits"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--contrib-rows", type=int, default=None,
                        help="Test rows explained per timing (default: all).")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    for name in args.datasets:
        result = run(name, args.threads, args.repeats, args.calls, args.contrib_rows)
        (RESULTS / f"explain_{name}.json").write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
