"""Milliseconds spent on a DataFrame's categorical columns, outside the trees: finding them
(``CategoricalColumns.fit``), encoding them as codes (``transform``, which every ``fit``
and every prediction runs), and a prediction of one row and of the test rows, on seed 0's
split of ``bench_categorical``'s sets (the mean of 100 calls after two warm-ups; 20 calls for
the test rows' predictions)::

    python benchmarks/categorical_encoding_time.py splice lymphography calendarDOW dna
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_categorical import native_split  # noqa: E402

from rebelboost import RebelClassifier  # noqa: E402
from rebelboost.categorical import CategoricalColumns  # noqa: E402


def milliseconds(call, repeats: int = 100) -> float:
    call()
    call()
    start = time.perf_counter()
    for _ in range(repeats):
        call()
    return (time.perf_counter() - start) / repeats * 1e3


def times(name: str) -> str:
    """One set's line of milliseconds."""
    train, test, codes, _, _ = native_split(name, 0)
    columns = CategoricalColumns.fit(train, "from_dtype")
    model = RebelClassifier(categorical_features="from_dtype", n_jobs=2,
                            random_state=0).fit(train, codes)
    find = milliseconds(lambda: CategoricalColumns.fit(train, "from_dtype"))
    encode = milliseconds(lambda: columns.transform(train))
    one = milliseconds(lambda: model.predict(test.iloc[:1]))
    every = milliseconds(lambda: model.predict_proba(test), 20)
    return (f"{name}: find {find:.2f} ms, encode {encode:.2f} ms, predict one row {one:.2f} "
            f"ms, predict_proba of the {len(test)} test rows {every:.2f} ms")


def main() -> None:
    for name in sys.argv[1:]:
        print(times(name), flush=True)


if __name__ == "__main__":
    main()
