"""A local fit's iteration with and without NumPy's hugepage advice on the arrays the boosting
loop makes afresh every stage (``rebelboost._malloc.fresh_arrays_unadvised``), alternated in
one process on bench_dask.py's synthetic rows: the wall time of each iteration (a callback's
clock), its median per fit, and a hash of the model's scores (the same model either way).

    python benchmarks/loop_pages_ab.py 20000000 --rounds 4 --trees 6
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", type=int)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--trees", type=int, default=6)
    args = parser.parse_args()
    import dask
    from bench_dask import synthetic

    import rebelboost.engine.boosting as boosting
    from rebelboost import RebelClassifier

    X, y = dask.compute(*synthetic(args.rows, 50, -(-args.rows // 8)))
    unadvised = boosting.fresh_arrays_unadvised
    RebelClassifier(2, n_jobs=2, random_state=0).fit(X[:300_000], y[:300_000])  # (compile)
    medians: dict[str, list[float]] = {"advised": [], "unadvised": []}
    for r in range(args.rounds):
        for mode in ("advised", "unadvised")[::1 if r % 2 == 0 else -1]:
            boosting.fresh_arrays_unadvised = (unadvised if mode == "unadvised"
                                               else contextlib.nullcontext)
            stamps: list[float] = []
            model = RebelClassifier(args.trees, n_jobs=2, random_state=0).fit(
                X, y, callbacks=[lambda info, stamps=stamps: stamps.append(time.perf_counter())])
            per_tree = np.diff(stamps)  # (from the first iteration's end)
            medians[mode].append(float(np.median(per_tree)))
            digest = hashlib.sha256(model.decision_function(X[:5000]).tobytes()).hexdigest()
            print(r, mode, "s an iteration:", np.round(per_tree, 3), digest[:12], flush=True)
    ratios = np.divide(medians["unadvised"], medians["advised"])
    print("medians advised", np.round(medians["advised"], 3), "unadvised",
          np.round(medians["unadvised"], 3), "ratios", np.round(ratios, 2),
          "median ratio", round(float(np.median(ratios)), 2))


if __name__ == "__main__":
    main()
