"""The vector-tree histogram kernel against this machine's memory bandwidth (issue 27).

Bandwidth: STREAM-like copy (``b[:] = a``, 16 bytes an element: read + write) and sum (8
bytes an element) over 256 MiB arrays, in numba with 1 and 2 threads (and numpy's copy/sum,
one thread). Kernel: the root histogram of MNIST-sized data (``../shared/data/mnist.npz``'s
60,000 x 784 training bins, K = 10 classes: 2K + 1 = 21 channels) built by
:meth:`LocalRows.histogram` (float64 channels gathered, then the dense kernel) and, with
``histogram_bits``, by the quantized integer path. The bytes it must move: per row its bins
(784 uint8), its channels (21 float64, or the quantized integers) and its index (8), plus
the histogram's cells written once. Achieved bytes/s as a fraction of the best copy rate.

``--profile NAME`` instead profiles one default fit on ``../shared/data/NAME.npz`` (cProfile,
the share of time in histograms, partitions, routing and the loss/channel update).

    python benchmarks/bench_quantized_roofline.py     # table, results/quantized_roofline.json
    python benchmarks/bench_quantized_roofline.py --profile letter
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import time
from pathlib import Path

import numba
import numpy as np

from rebelboost import RebelClassifier
from rebelboost.learners.row_set import LocalRows
from rebelboost.search.binned import BinnedData

sys.path.insert(0, str(Path(__file__).parent))
from bench_roofline import _copy, _sum  # noqa: E402  (the same bandwidth kernels)

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
OUT = Path(__file__).resolve().parent / "results" / "quantized_roofline.json"


def _best(fn, repeats):
    """Best wall time and the CPU time of that run (the machine is shared)."""
    fn()
    best = (np.inf, np.inf)
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        best = min(best, (time.perf_counter() - w, time.process_time() - c))
    return best


def bandwidth(threads: int, repeats: int) -> dict:
    n = 1 << 25  # 256 MiB of float64
    a = np.random.RandomState(0).rand(n)
    b = np.empty_like(a)
    numba.set_num_threads(threads)
    copy = _best(lambda: _copy(a, b), repeats)[0]
    total = _best(lambda: _sum(a), repeats)[0]
    out = {"copy_GBs": 16 * n / copy / 1e9, "sum_GBs": 8 * n / total / 1e9}
    if threads == 1:
        out["numpy_copy_GBs"] = 16 * n / _best(lambda: np.copyto(b, a), repeats)[0] / 1e9
        out["numpy_sum_GBs"] = 8 * n / _best(lambda: a.sum(), repeats)[0] / 1e9
    return out


def kernel(threads: int, repeats: int, bits: int | None) -> dict:
    with np.load(DATA / "mnist.npz") as d:
        X = d["X_train"]
    k = 10
    data = BinnedData.fit(X, None, 255, 0)
    rng = np.random.RandomState(0)
    channels = rng.exponential(size=(X.shape[0], 2 * k)) / X.shape[0]
    rows = LocalRows(data, channels, histogram_bits=bits, seed=1) if bits else LocalRows(
        data, channels)
    features = np.arange(X.shape[1], dtype=np.intp)
    leaf = rows.root()
    sums = rows.sums(leaf)
    out = np.empty((data.cell_offsets[-1], 2 * k + 1), dtype=rows.hist_dtype)
    numba.set_num_threads(threads)
    wall, cpu = _best(lambda: rows.histogram(leaf, sums, features, out), repeats)
    n, d = data.bins.shape
    cells = int(np.sum(data.layout.n_value_bins)) + d
    item = out.itemsize
    row_bytes = d * data.bins.itemsize + (2 * k + 1) * (rows.channel_bytes) + 8
    moved = n * row_bytes + cells * (2 * k + 1) * item
    return {"wall_s": wall, "cpu_s": cpu, "bytes": moved, "GBs": moved / wall / 1e9}


def profile(name: str) -> None:
    with np.load(DATA / f"{name}.npz") as d:
        X, y = d["X_train"], d["y_train"]
    RebelClassifier(n_estimators=3, random_state=0).fit(X[:2000], y[:2000])  # compile
    prof = cProfile.Profile()
    w = time.perf_counter()
    prof.enable()
    RebelClassifier(random_state=0).fit(X, y)
    prof.disable()
    print(f"{name}: default fit {time.perf_counter() - w:.2f} s wall")
    stats = pstats.Stats(prof)
    total = stats.total_tt
    groups = {"histograms (build)": ("histogram_of",), "subtraction": ("subtract_histogram",),
              "split scan": ("best_vector_split",), "partition": ("split",),
              "leaf sums": ("sums_of",), "routing (assign)": ("leaves_of",),
              "loss/channels": ("weights_and_loss", "add_to"),
              "binning": ("BinnedData.fit", "fit")}
    for label, names in groups.items():
        t = max((v[3] for key, v in stats.stats.items() if key[2] in names
                 and (label != "binning" or "binned" in key[0])), default=0.0)
        print(f"  {label:20s} {t:7.2f} s  {100 * t / total:5.1f}%")
    stats.sort_stats("cumulative").print_stats(25)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--bits", type=int, nargs="*", default=[8, 12])
    ap.add_argument("--profile", metavar="NAME")
    args = ap.parse_args()
    if args.profile:
        profile(args.profile)
        return
    result = {"note": "shared machine (2 cores, other agents running): best of repeats"}
    for threads in (1, 2):
        bw = bandwidth(threads, args.repeats)
        result[f"bandwidth_{threads}t"] = bw
        for bits in [None, *args.bits]:
            r = kernel(threads, args.repeats, bits)
            r["fraction_of_copy"] = r["GBs"] / bw["copy_GBs"]
            result[f"hist_{'float' if bits is None else f'q{bits}'}_{threads}t"] = r
    print(f"{'measure':24s} {'GB/s':>7s} {'wall s':>8s} {'cpu s':>8s} {'of copy':>8s}")
    for key, r in result.items():
        if key.startswith("bandwidth"):
            for m, v in r.items():
                print(f"{key + ' ' + m:24s} {v:7.2f}")
        elif key.startswith("hist"):
            print(f"{key:24s} {r['GBs']:7.2f} {r['wall_s']:8.4f} {r['cpu_s']:8.4f} "
                  f"{r['fraction_of_copy']:8.1%}")
    for kind in ["float", *(f"q{b}" for b in args.bits)]:
        one, two = result[f"hist_{kind}_1t"], result[f"hist_{kind}_2t"]
        print(f"{kind}: 2 threads / 1 thread speed-up {one['wall_s'] / two['wall_s']:.2f}x")
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
