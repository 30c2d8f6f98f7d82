"""Per (feature, bin) sums of per-sample channels: the one kernel every split search shares.

A booster describes its split problem as C float64 channels per sample (REBEL stumps: the 2K
weights ``w+`` and ``w-``; fixed-``a`` tree layers: the two costs ``g+`` and ``g-``; ...). The
histogram of a node sums those channels over the node's rows for every feature and bin; a split
score then needs only the histogram. Children use the subtraction trick: build the smaller one,
subtract it from the parent for the sibling.

Exactness: every (feature, bin, channel) sum is accumulated one row at a time, in the order the
rows are given, starting from +0.0 (or from the value already there, for
:func:`accumulate_histogram`). Threads split the *features*, never the rows, so the result does
not depend on the number of threads, the block size or which kernel variant runs.

How the kernel is fast (measured on MNIST, 60,000 x 784 bins, 20 channels, 2 cores):

* One parallel task per thread, each owning a contiguous block of features, streams the rows once:
  fewer passes over the ``(N, d)`` bins and the channels matter more than anything else.
* A task accumulates into a private scratch histogram laid out ``(bin, feature, channel)``, so the
  cells of the busy bins (bin 0 of sparse features, say) of all its features are adjacent and stay
  in cache; the ``(feature, bin, channel)`` output layout would put them 40 KB apart. The scratch
  is copied into the output at the end.
* The per-row channel vector is added with fixed-width SIMD loads, adds and stores
  (:func:`_add_row`) when the channel count is a compile-time constant; numba's loop over a
  run-time channel count compiles to vector code wrapped in trip-count checks and remainder loops,
  about 1.6x slower here. Each channel count gets its own compiled kernel (compiled once, cached
  on disk), so small problems (tests, tiny data) take the generic kernel and never pay for that.
* Small problems run on the calling thread: waking the thread pool costs more than they do.

The previous kernel (blocks of ~12 features accumulated straight into the output) took 0.26-0.32 s
for a full MNIST histogram with the rows in order and 0.50 s with them shuffled (heaviest first);
this one takes 0.12 s either way (``python benchmarks/bench_core.py --kernel --datasets mnist``).
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba.core import errors, types
from numba.extending import intrinsic

# Largest scratch histogram (bytes) one parallel task may use; beyond it the features are split
# into more tasks than threads.
_BLOCK_BYTES = 1 << 23
# Below this many additions (rows x features x channels) the kernel runs on the calling thread:
# waking the thread pool costs more than the work (much more when other processes share the cores).
_PARALLEL_MIN_ADDS = 1 << 22
# Additions from which a histogram is worth a kernel compiled for its channel count (a one-time
# compile of a few seconds, cached on disk) rather than the generic kernel.
_SPECIALIZE_MIN_ADDS = 1 << 23
# Channel counts up to this get a specialised kernel (its inner add is unrolled C/4 times).
_SPECIALIZE_MAX_CHANNELS = 64
# Bins are uint8 codes, so a scratch histogram with this many bin rows can take any of them.
_SCRATCH_BINS = 256


def feature_block_size(n_features: int, n_bins_total: int, n_channels: int) -> int:
    """Features per parallel task: one task per thread, split further if its scratch is huge.

    (``n_bins_total`` does not matter: a task's scratch always has room for every uint8 code.)
    """
    return _block_size(n_features, n_channels, numba.get_num_threads())


def _block_size(n_features: int, n_channels: int, n_threads: int) -> int:
    per_thread = -(-n_features // n_threads)
    per_feature = _SCRATCH_BINS * max(1, n_channels) * 8
    return int(max(1, min(per_thread, _BLOCK_BYTES // per_feature)))


def build_histogram(
    bins: np.ndarray, channels: np.ndarray, rows: np.ndarray, n_bins_total: int
) -> np.ndarray:
    """Histogram of shape (n_features, n_bins_total, n_channels) over ``rows``.

    ``bins`` is the C-ordered (n_samples, n_features) uint8 matrix, ``channels`` a C-ordered
    (n_samples, n_channels) float64 matrix, ``rows`` the sample indices of the node (any order;
    sums are accumulated in that order). Bin codes at or above ``n_bins_total`` are not counted.
    """
    bins, channels, rows = _check(bins, channels, rows, n_bins_total)
    n_features = bins.shape[1]
    hist = np.zeros((n_features, n_bins_total, channels.shape[1]))
    features = np.arange(n_features, dtype=np.intp)
    _run(bins, channels, rows, 0, len(rows), features, hist, False, True)
    return hist


def accumulate_histogram(
    bins: np.ndarray,
    rows: np.ndarray,
    row_channels: np.ndarray,
    r0: int,
    r1: int,
    features: np.ndarray,
    hist: np.ndarray,
) -> None:
    """Add rows ``rows[r0:r1]`` to the histogram ``hist`` of the listed ``features``, in place.

    ``row_channels[r]`` holds the channels of sample ``rows[r]`` (gathered in row order, as an
    incremental search keeps them). Each (feature, bin) continues its running sum in the given
    row order, so accumulating a node's rows in several consecutive ranges gives the same bits as
    one :func:`build_histogram` over all of them. ``hist`` is the C-ordered
    (n_features, n_bins_total, n_channels) float64 histogram; ``features`` are distinct feature
    indices (any order); the other features' histograms are left alone.
    """
    n_bins_total = hist.shape[1]
    bins, row_channels, rows = _check(bins, row_channels, rows, n_bins_total, by_position=True)
    if not (hist.flags.c_contiguous and hist.dtype == np.float64):
        raise ValueError("hist must be a C-ordered float64 array")
    if row_channels.shape[1] != hist.shape[2] or bins.shape[1] != hist.shape[0]:
        raise ValueError("hist shape does not match the bins and channels")
    if not 0 <= r0 <= r1 <= len(rows):
        raise ValueError(f"row range [{r0}, {r1}) is outside the {len(rows)} rows")
    features = np.ascontiguousarray(features, dtype=np.intp)
    if len(features) and (features.min() < 0 or features.max() >= bins.shape[1]):
        raise ValueError("feature index out of range")
    if len(np.unique(features)) != len(features):
        raise ValueError("features must be distinct")  # two tasks would write one histogram
    _run(bins, row_channels, rows, r0, r1, features, hist, True, False)


def _check(bins, channels, rows, n_bins_total, by_position=False):
    if bins.dtype != np.uint8 or bins.ndim != 2:
        raise TypeError(f"bins must be a 2-d uint8 array, got {bins.dtype} with {bins.ndim} dims")
    if not 1 <= n_bins_total <= _SCRATCH_BINS:
        raise ValueError(f"n_bins_total must be in [1, {_SCRATCH_BINS}], got {n_bins_total}")
    rows = np.ascontiguousarray(rows, dtype=np.intp)
    channels = np.ascontiguousarray(channels, dtype=np.float64)
    if channels.ndim != 2 or (channels.shape[0] != (len(rows) if by_position else bins.shape[0])):
        raise ValueError(f"channels of shape {channels.shape} do not match the samples")
    return np.ascontiguousarray(bins), channels, rows


def _run(bins, channels, rows, r0, r1, features, hist, by_position, fresh) -> None:
    n_channels = channels.shape[1]
    if len(features) == 0 or n_channels == 0:
        return
    adds = (r1 - r0) * len(features) * n_channels
    serial = adds < _PARALLEL_MIN_ADDS
    n_threads = 1 if serial else numba.get_num_threads()
    block = _block_size(len(features), n_channels, n_threads)
    # The tuple's length is part of its numba type: a non-empty one compiles a kernel for
    # exactly that many channels.
    specialize = adds >= _SPECIALIZE_MIN_ADDS and n_channels <= _SPECIALIZE_MAX_CHANNELS
    width = (0,) * n_channels if specialize else ()
    kernel = _accumulate_serial if serial else _accumulate_parallel
    kernel(bins, channels.reshape(-1), n_channels, rows, r0, r1, features, hist, block,
           by_position, fresh, width)


@intrinsic
def _add_row(typingctx, dst, dst_start, src, src_start, width):
    """``dst[dst_start + c] += src[src_start + c]`` for ``c < len(width)``, unrolled.

    Emits <4 x double> (then <2 x double>, then scalar) loads, adds and stores: IEEE addition
    lane by lane, the same bits as the scalar loop. No bounds checks (like numba's indexing).
    """
    if not isinstance(width, (types.UniTuple, types.Tuple)):
        raise errors.TypingError("width must be a tuple whose length is the channel count")
    count = len(width)
    sig = types.void(dst, dst_start, src, src_start, width)

    def codegen(context, builder, signature, args):
        dst_arr = context.make_array(signature.args[0])(context, builder, args[0])
        src_arr = context.make_array(signature.args[2])(context, builder, args[2])
        dst_ptr = builder.gep(dst_arr.data, [args[1]], inbounds=True)
        src_ptr = builder.gep(src_arr.data, [args[3]], inbounds=True)
        done = 0
        for lanes in (4, 2, 1):
            vec = ir.VectorType(ir.DoubleType(), lanes) if lanes > 1 else ir.DoubleType()
            while count - done >= lanes:
                offset = [ir.Constant(ir.IntType(64), done)]
                d = builder.bitcast(builder.gep(dst_ptr, offset, inbounds=True), vec.as_pointer())
                s = builder.bitcast(builder.gep(src_ptr, offset, inbounds=True), vec.as_pointer())
                total = builder.fadd(builder.load(d, align=8), builder.load(s, align=8))
                builder.store(total, d, align=8)
                done += lanes
        return context.get_dummy_value()

    return sig, codegen


@numba.njit(cache=True, nogil=True, inline="always")
def _accumulate_block(
    bins, channels, n_channels, rows, r0, r1, features, j0, nf, hist, by_position, fresh, width
):
    """Add rows ``r0:r1`` to ``hist`` for ``features[j0:j0 + nf]``; one task of the kernel.

    Copies those features' histograms into a private ``(bin, feature, channel)`` scratch (unless
    ``fresh``: they are all zeros), streams the rows once, and copies the scratch back. ``width``
    empty: generic code; else specialised for ``len(width)`` channels. ``channels`` is flat: the
    channels of row ``r`` start at ``k * n_channels``, ``k = r`` if ``by_position`` else
    ``rows[r]``.
    """
    if len(width) > 0:
        n_channels = len(width)  # a compile-time constant: constant strides below
    n_bins_total = hist.shape[1]
    stride = nf * n_channels  # scratch[b * stride + j * n_channels + c]
    scratch = np.zeros(_SCRATCH_BINS * stride)
    if not fresh:
        for j in range(nf):
            f = features[j0 + j]
            for b in range(n_bins_total):
                at = b * stride + j * n_channels
                for c in range(n_channels):
                    scratch[at + c] = hist[f, b, c]
    for r in range(r0, r1):
        i = rows[r]
        src = (r if by_position else i) * n_channels
        for j in range(nf):
            at = np.intp(bins[i, features[j0 + j]]) * stride + j * n_channels
            if len(width) == 0:
                for c in range(n_channels):
                    scratch[at + c] += channels[src + c]
            else:
                _add_row(scratch, at, channels, src, width)
    for j in range(nf):
        f = features[j0 + j]
        for b in range(n_bins_total):
            at = b * stride + j * n_channels
            for c in range(n_channels):
                hist[f, b, c] = scratch[at + c]


@numba.njit(parallel=True, cache=True, nogil=True)
def _accumulate_parallel(
    bins, channels, n_channels, rows, r0, r1, features, hist, block, by_position, fresh, width
):
    """:func:`_accumulate_block` over blocks of ``block`` features, in parallel."""
    n_blocks = (features.shape[0] + block - 1) // block
    for blk in numba.prange(n_blocks):
        j0 = blk * block
        nf = min(features.shape[0], j0 + block) - j0
        _accumulate_block(bins, channels, n_channels, rows, r0, r1, features, j0, nf, hist,
                          by_position, fresh, width)


@numba.njit(cache=True, nogil=True)
def _accumulate_serial(
    bins, channels, n_channels, rows, r0, r1, features, hist, block, by_position, fresh, width
):
    """:func:`_accumulate_block` over blocks of ``block`` features, on the calling thread."""
    n_blocks = (features.shape[0] + block - 1) // block
    for blk in range(n_blocks):
        j0 = blk * block
        nf = min(features.shape[0], j0 + block) - j0
        _accumulate_block(bins, channels, n_channels, rows, r0, r1, features, j0, nf, hist,
                          by_position, fresh, width)


@numba.njit(cache=True, nogil=True)
def partition_rows(rows, bins, feature, bin_threshold, missing_bin, missing_left):
    """Split ``rows`` into (left, right) by ``bin <= bin_threshold``; missing by the flag.

    Order within each side is kept, so children sum in the same order as their parent.
    """
    n = rows.shape[0]
    go_left = np.empty(n, dtype=np.bool_)
    n_left = 0
    for r in range(n):
        b = bins[rows[r], feature]
        left = missing_left if b == missing_bin else b <= bin_threshold
        go_left[r] = left
        n_left += left
    left_rows = np.empty(n_left, dtype=rows.dtype)
    right_rows = np.empty(n - n_left, dtype=rows.dtype)
    li = 0
    ri = 0
    for r in range(n):
        if go_left[r]:
            left_rows[li] = rows[r]
            li += 1
        else:
            right_rows[ri] = rows[r]
            ri += 1
    return left_rows, right_rows
