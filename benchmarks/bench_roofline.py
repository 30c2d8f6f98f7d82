"""Roofline of the vector-leaf histogram kernel (issue 27): this machine's memory bandwidth,
and the kernel's effective bandwidth as a fraction of it, on 1 and 2 threads.

Bandwidth: a STREAM-like copy (``b[:] = a``: 16 bytes a float64) and sum (8 bytes) over
256 MiB arrays, numba-parallel, best of 5. The kernel: one root histogram of the vector-leaf
grower (``search.histograms.build_leaf_histogram``, every row, every feature, 2K + 1
channels) on a dense synthetic set (60,000 x 784 bins, K = 10) and on MNIST's training rows
(sparse path: the zero pixels are each feature's default bin). Its *effective* traffic is the
least it must move: the bins (1 byte a cell), the rows' channels once (4 (2K + 1) bytes a row:
float32, as a fit keeps them; for the sparse path the stored entries, 4 bytes each, instead of
the bins), and the histogram (float64 cells) written once; effective bandwidth = that / time
(best of 5). A fraction far below 1 means the kernel is bound by its scattered additions, not
by memory traffic. Results to
``benchmarks/results/roofline.json``::

    python benchmarks/bench_roofline.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numba
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from rebelboost.losses.rebel import CHANNEL_DTYPE  # noqa: E402
from rebelboost.search.binned import BinnedData  # noqa: E402
from rebelboost.search.histograms import build_leaf_histogram  # noqa: E402
from rebelboost.search.histograms import dense as dense_kernel  # noqa: E402
from rebelboost.search.histograms.dense import TILE_BYTES  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "roofline.json"
REPEATS = 5


@numba.njit(parallel=True, cache=True)
def _copy(a, b):
    for i in numba.prange(a.shape[0]):
        b[i] = a[i]


@numba.njit(parallel=True, cache=True)
def _sum(a):
    total = 0.0
    for i in numba.prange(a.shape[0]):
        total += a[i]
    return total


def best(fn, *args) -> float:
    fn(*args)  # compile and warm
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times)


def bandwidth() -> dict:
    a = np.random.default_rng(0).random(1 << 25)  # 256 MiB
    b = np.empty_like(a)
    return {"copy_GBps": 2 * a.nbytes / best(_copy, a, b) / 1e9,
            "sum_GBps": a.nbytes / best(_sum, a) / 1e9}


def kernel(data: BinnedData, k: int) -> dict:
    n, d = data.bins.shape
    c = 2 * k + 1
    rng = np.random.default_rng(1)
    channels = rng.random((n, c)).astype(CHANNEL_DTYPE)  # (as a fit holds them)
    channels[:, -1] = 1.0
    rows = np.arange(n, dtype=np.intp)
    totals = channels.sum(axis=0, dtype=np.float64)
    features = np.arange(d, dtype=np.intp)
    out = np.empty((data.cell_offsets[-1], c))  # the compact leaf histogram
    seconds = best(build_leaf_histogram, data, channels, rows, totals, features, out)
    cells = int(np.sum(data.layout.n_value_bins) + d)
    if data.sparse is None:
        moved = n * d + channels.nbytes + cells * c * 8
    else:
        moved = int(data.sparse.entries.size) * 4 + channels.nbytes + cells * c * 8
    return {"seconds": seconds, "effective_GBps": moved / seconds / 1e9, "bytes": moved,
            "adds_per_s": n * d * c / seconds}


def main() -> None:
    from rebelboost.datasets.benchmark_sets import load_benchmark

    rng = np.random.default_rng(0)
    dense = rng.normal(size=(60_000, 784)).astype(np.float32)
    sets = {"dense 60000 x 784, K=10": BinnedData.fit(dense)}
    X = load_benchmark("mnist").X_train.astype(np.float32)
    sets["mnist 60000 x 784, K=10 (sparse)"] = BinnedData.fit(X[:60_000], row_layout=True)
    report = {"date": time.strftime("%Y-%m-%d"), "cpus": numba.config.NUMBA_NUM_THREADS}
    for threads in (1, 2):
        numba.set_num_threads(threads)
        bw = bandwidth()
        report[f"{threads} threads"] = {"bandwidth": bw}
        for name, data in sets.items():
            for tiled in ((True, False) if data.sparse is None else (True,)):
                # untiled: every feature of a thread's block in one pass (the kernel before
                # feature tiles), measured beside the tiled one
                dense_kernel.TILE_BYTES = TILE_BYTES if tiled else 1 << 40
                got = kernel(data, 10)
                got["fraction_of_copy"] = got["effective_GBps"] / bw["copy_GBps"]
                label = name + ("" if tiled else ", untiled")
                report[f"{threads} threads"][label] = got
                print(f"{threads} thread(s) {label}: {got['seconds']:.3f} s, effective "
                      f"{got['effective_GBps']:.2f} GB/s = {got['fraction_of_copy']:.1%} of "
                      f"copy ({bw['copy_GBps']:.1f} GB/s; sum {bw['sum_GBps']:.1f} GB/s), "
                      f"{got['adds_per_s'] / 1e9:.2f} G channel additions/s", flush=True)
            dense_kernel.TILE_BYTES = TILE_BYTES
    RESULTS.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
