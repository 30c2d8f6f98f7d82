"""Nanoseconds a row of the loops over a leaf's scattered rows (issues 27 and 32): a split's
partition (in place, one thread), a gather of the rows' channels, and the dense histogram of
the gathered rows (per row and feature), on ``bench_dask.py``'s synthetic bins (50 features)
with random float32 channels, for leaves holding all, a quarter and a twentieth of the rows.
Best of 4 after a first call (compilation). Run two source trees one after the other::

    PYTHONPATH=/tmp/before/src python benchmarks/row_kernels.py
    python benchmarks/row_kernels.py
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

REPEATS = 4


def _best(call, setup=lambda: None) -> float:
    setup()
    call()
    times = []
    for _ in range(REPEATS):
        setup()
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--channels", type=int, default=8, help="2K + 2 (a Dask block's)")
    args = parser.parse_args()
    numba.set_num_threads(1)
    import dask
    from bench_dask import synthetic

    from rebelboost.learners.row_channels import gather
    from rebelboost.learners.row_set import _partition_in_place_serial
    from rebelboost.search.binned import BinnedData
    from rebelboost.search.histograms.dense import add_rows

    n = args.rows
    X, _ = dask.compute(*synthetic(n, 50, -(-n // 8)))
    data = BinnedData.fit(X, None, 255, 0)
    caps = np.ascontiguousarray(data.layout.n_value_bins, dtype=np.int32)
    features = np.arange(data.bins.shape[1], dtype=np.intp)
    rng = np.random.default_rng(0)
    packed = rng.random((n, args.channels), dtype=np.float32)
    weight = packed[:, -1].astype(np.float64)
    out = np.empty((int(data.cell_offsets[-1]), args.channels))
    print(f"{n} rows x {len(features)} features, {args.channels} channels, one thread")
    for share in (1.0, 0.25, 0.05):
        rows = np.flatnonzero(rng.random(n) < share).astype(np.intp)
        partition, gathered, histogram = _leaf_times(data, caps, features, packed, weight, out,
                                                     rows, gather, _partition_in_place_serial,
                                                     add_rows)
        print(f"a leaf of {share:.0%} of the rows: partition {partition:.1f} ns a row, gather "
              f"{gathered:.1f} ns a row, histogram {histogram:.2f} ns a row and feature")


def _leaf_times(data, caps, features, packed, weight, out, rows, gather, partition, add_rows
                ) -> tuple[float, float, float]:
    """Nanoseconds a row of the leaf's partition and gather, a row and feature of its
    histogram."""
    order, scratch = rows.copy(), np.empty_like(rows)
    goes_left = np.arange(data.layout.n_bins_total) <= 100

    def reset():
        order[:] = rows

    gathered = gather(packed[:, :-1], rows, None, weight)
    t_partition = _best(lambda: partition(data.bins, order, scratch, 0, len(rows), 3,
                                          goes_left), reset)
    t_gather = _best(lambda: gather(packed[:, :-1], rows, None, weight))
    t_hist = _best(lambda: add_rows(data.bins, gathered, rows, features, out, caps,
                                    data.cell_offsets, True))
    return (1e9 * t_partition / len(rows), 1e9 * t_gather / len(rows),
            1e9 * t_hist / len(rows) / len(features))


if __name__ == "__main__":
    main()
