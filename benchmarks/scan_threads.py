"""A vector-leaf tree's split scan on one thread and in feature blocks on numba's threads.

For each set (``bench_accuracy.load``'s training rows), its first 1, 2, ... features binned
as a fit bins them, random weight channels and the histogram of a quarter of the rows: the
best of 3 rounds of ``--calls`` scans, on the calling thread (``best_in_tasks`` in one task)
and in one or two feature blocks on two threads (``_scan_vector_features``). A parallel
region's threads wait as the environment says (rebelboost sets ``OMP_WAIT_POLICY=PASSIVE``
unless it is set), so compare, in separate runs::

    python benchmarks/scan_threads.py satimage letter
    OMP_WAIT_POLICY=active python benchmarks/scan_threads.py satimage letter
    GOMP_SPINCOUNT=10000 python benchmarks/scan_threads.py satimage letter

(libgomp takes a spin count that is set over the one ``PASSIVE`` implies, none).
"""

from __future__ import annotations

import argparse
import os
import time

import numba
import numpy as np
from bench_accuracy import load

from rebelboost.search.binned import BinnedData
from rebelboost.search.histograms.leaf import build_leaf_histogram
from rebelboost.search.vector_scan import _scan_vector_features, best_in_tasks

FEATURES = (1, 2, 4, 8, 16, 10**9)


def _per_call(f, calls: int) -> float:
    """Microseconds a call, best of 3 rounds."""
    f()
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best * 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("datasets", nargs="+")
    p.add_argument("--calls", type=int, default=300)
    args = p.parse_args()
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    print(f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')} "
          f"GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT')} threads={numba.get_num_threads()}")
    print("| set | features | cells x channels | one thread (us) | 1 block on the threads | "
          "2 blocks |")
    print("|---|---|---|---|---|---|")
    for name in args.datasets:
        X_all, y, _, _ = load(name)
        y = np.unique(y, return_inverse=True)[1]
        k = int(y.max()) + 1
        rng = np.random.default_rng(0)
        channels = np.c_[rng.random((len(y), 2 * k)), np.ones(len(y))]
        rows = np.arange(len(y) // 4)
        for n_features in sorted({min(f, X_all.shape[1]) for f in FEATURES}):
            data = BinnedData.fit(X_all[:, :n_features], None, 255, 0, min_data_in_bin=5)
            offsets = data.cell_offsets
            hist = np.zeros((offsets[-1], 2 * k + 1))
            features = np.arange(n_features)
            build_leaf_histogram(data, channels[rows], rows, channels[rows].sum(0), features,
                                 hist)
            scan = (hist, features, np.ascontiguousarray(data.layout.n_value_bins, np.int32),
                    np.ascontiguousarray(data.layout.has_missing, np.bool_), offsets,
                    np.zeros(k), 10.0)
            serial = _per_call(lambda s=scan: best_in_tasks(*s, 1), args.calls)
            one, two = (_per_call(lambda s=scan, t=t: _scan_vector_features(*s, t), args.calls)
                        for t in (1, 2))
            print(f"| {name} | {n_features} | {offsets[-1] * (2 * k + 1)} | {serial:.0f} | "
                  f"{one:.0f} | {two:.0f} |", flush=True)


if __name__ == "__main__":
    main()
