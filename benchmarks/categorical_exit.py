"""Exact early exit through categorical splits (issue 30, stop 76): the default native fit of
``bench_categorical``'s sets (seed 0's split), its test rows predicted in full and with
``early_exit='exact'`` (the same labels, checked), alternated 7 times: the learners' mean
share and the median predict times (2 threads).

    REBELBOOST_DATA=../shared/data python benchmarks/categorical_exit.py nursery krkopt splice
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))


def main() -> None:
    from bench_categorical import native_split

    from rebelboost import RebelClassifier

    for name in sys.argv[1:]:
        train, test, codes, _, _ = native_split(name, 0)
        model = RebelClassifier(random_state=0, n_jobs=2).fit(train, codes)
        X = model.encode(test)
        full, _ = model.model_.predict_codes(X)
        exact, used = model.model_.predict_codes(X, early_exit="exact")
        if not np.array_equal(exact, full):
            raise AssertionError(f"{name}: the exact exit changed a label")
        full_s, exact_s = [], []
        for _ in range(7):
            start = time.perf_counter()
            model.model_.predict_codes(X)
            full_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            model.model_.predict_codes(X, early_exit="exact")
            exact_s.append(time.perf_counter() - start)
        n = len(model.model_.learners)
        ratio = np.median(np.array(exact_s) / np.array(full_s))
        print(f"{name}: {X.shape[0]} test rows, {n} trees; exact exit: mean share of learners "
              f"{used.mean() / n:.3f}, labels equal; predict {np.median(full_s) * 1e3:.1f} ms "
              f"full, {np.median(exact_s) * 1e3:.1f} ms exact ({ratio:.2f}x, median of 7 "
              "ratios)", flush=True)


if __name__ == "__main__":
    main()
