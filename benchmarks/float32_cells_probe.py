"""Would float32 histogram cells of exact small integers (quantized channels) be faster? (issue 27)

This machine has AVX but not AVX2: a 256-bit add is 8 float32 lanes or 4 float64 ones, and
integers get only 128 bits. A quantized tree's channels are small integers, which float32
sums exactly below 2^24, so 8 channels (2K + 2 at K = 3) could be one add a row and feature
instead of two. This times the dense kernel's float64 cells (``dense.add_rows``, SIMD adds,
prefetch) against the same loop on float32 cells (no prefetch), one thread, 2,000,000 x 50
uint8 bins of 256 levels, 8 channels, on all rows (a root) and on sorted random subsets
(a child's scattered rows); best of 3.

    python benchmarks/float32_cells_probe.py
"""

from __future__ import annotations

import time

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from rebelboost.search.histograms.dense import add_rows, feature_tile


@intrinsic
def _add_row32(typingctx, dst, dst_start, src, src_start, width):
    count = len(width)
    sig = types.void(dst, dst_start, src, src_start, width)

    def codegen(context, builder, signature, args):
        dst_ptr = builder.gep(context.make_array(signature.args[0])(
            context, builder, args[0]).data, [args[1]], inbounds=True)
        src_ptr = builder.gep(context.make_array(signature.args[2])(
            context, builder, args[2]).data, [args[3]], inbounds=True)
        done = 0
        for lanes in (8, 4, 2, 1):
            vec = ir.VectorType(ir.FloatType(), lanes) if lanes > 1 else ir.FloatType()
            while count - done >= lanes:
                off = [ir.Constant(ir.IntType(64), done)]
                d = builder.bitcast(builder.gep(dst_ptr, off, inbounds=True), vec.as_pointer())
                s = builder.bitcast(builder.gep(src_ptr, off, inbounds=True), vec.as_pointer())
                builder.store(builder.fadd(builder.load(d, align=4), builder.load(s, align=4)),
                              d, align=4)
                done += lanes
        return context.get_dummy_value()

    return sig, codegen


@numba.njit(nogil=True)
def _float32_cells(bins, channels, rows, features, hist, offsets, tile, width):
    n_channels = len(width)
    flat_hist, flat_channels = hist.reshape(-1), channels.reshape(-1)
    hist[:] = 0
    for t0 in range(0, features.shape[0], tile):
        t1 = min(t0 + tile, features.shape[0])
        for i in range(rows.shape[0]):
            r = rows[i]
            for j in range(t0, t1):
                f = features[j]
                cell = offsets[f] + np.intp(bins[r, f])
                _add_row32(flat_hist, cell * n_channels, flat_channels, i * n_channels, width)


def main() -> None:
    rng = np.random.default_rng(0)
    n, n_features, n_channels = 2_000_000, 50, 8
    bins = rng.integers(0, 255, size=(n, n_features), dtype=np.uint8)
    features = np.arange(n_features, dtype=np.intp)
    caps = np.full(n_features, 255, dtype=np.int64)
    offsets = (np.arange(n_features + 1) * 256).astype(np.intp)
    print("| rows | float64 cells (s) | float32 cells (s) | ratio |\n|---|---|---|---|")
    for share in (1.0, 0.25, 0.03):
        rows = np.sort(rng.choice(n, int(n * share), replace=False)).astype(np.intp)
        ch64 = rng.integers(0, 255, size=(len(rows), n_channels)).astype(np.float64)
        ch32 = ch64.astype(np.float32)
        h64 = np.zeros((offsets[-1], n_channels))
        h32 = np.zeros((offsets[-1], n_channels), dtype=np.float32)
        best = [np.inf, np.inf]
        for _ in range(3):
            t = time.perf_counter()
            add_rows(bins, ch64, rows, features, h64, caps, offsets, False)
            best[0] = min(best[0], time.perf_counter() - t)
            t = time.perf_counter()
            _float32_cells(bins, ch32, rows, features, h32, offsets,
                           feature_tile(128, n_channels), (0,) * n_channels)
            best[1] = min(best[1], time.perf_counter() - t)
        assert np.array_equal(h64, h32.astype(np.float64))  # exact: integers below 2^24
        print(f"| {len(rows):,} | {best[0]:.3f} | {best[1]:.3f} | {best[1] / best[0]:.2f} |")


if __name__ == "__main__":
    main()
