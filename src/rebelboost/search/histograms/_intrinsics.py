"""LLVM-level helpers for the histogram kernels: unrolled SIMD row adds and prefetch hints."""

from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, errors, types
from numba.extending import intrinsic

# Loops over a node's rows, which lie scattered in the row-major arrays, hint the row this many
# rows ahead, where the array is larger than a core's share of cache: on 1,000,000 x 50 bins
# a leaf holding a sixteenth of the rows was filled in 0.34x the time (with SIMD adds); on
# arrays that stay in cache the hint only costs instructions (connect4's partitions: 1.5x, when
# the hint was a compiled function that counted references to its arrays; see _hint_ahead).
AHEAD_ROWS = 16
AHEAD_MIN_BYTES = 1 << 23
# Rows ahead in loops that spend a few nanoseconds a row, where 16 rows ahead is too late for
# the memory's latency: a partition of a quarter of 2,000,000 rows, out of cache, 9.3 -> 5.1
# ns a row at 64 (16, 32, 64, 128: 9.3, 6.5, 5.1, 5.1; stop 66).
FAR_AHEAD_ROWS = 64


@intrinsic
def add_row(typingctx, dst, dst_start, src, src_start, width):
    """``dst[dst_start + c] += src[src_start + c]`` for ``c < len(width)``, unrolled.

    Emits <4 x double> (then <2 x double>, then scalar) loads, adds and stores: IEEE addition
    lane by lane, the same bits as the scalar loop. ``src`` may be float32 (the rows' lean
    channels): its lanes are widened exactly to double before the add. No bounds checks (like
    numba's indexing).
    """
    if not isinstance(width, (types.UniTuple, types.Tuple)):
        raise errors.TypingError("width must be a tuple whose length is the channel count")
    count = len(width)
    if count and (dst.dtype != types.float64 or src.dtype not in (types.float64, types.float32)):
        raise errors.TypingError("add_row adds float64 or float32 rows into float64 cells")
    narrow = src.dtype == types.float32
    sig = types.void(dst, dst_start, src, src_start, width)

    def codegen(context, builder, signature, args):
        dst_arr = context.make_array(signature.args[0])(context, builder, args[0])
        src_arr = context.make_array(signature.args[2])(context, builder, args[2])
        dst_ptr = builder.gep(dst_arr.data, [args[1]], inbounds=True)
        src_ptr = builder.gep(src_arr.data, [args[3]], inbounds=True)
        done = 0
        for lanes in (4, 2, 1):
            vec = ir.VectorType(ir.DoubleType(), lanes) if lanes > 1 else ir.DoubleType()
            src_vec = (vec if not narrow else
                       ir.VectorType(ir.FloatType(), lanes) if lanes > 1 else ir.FloatType())
            while count - done >= lanes:
                offset = [ir.Constant(ir.IntType(64), done)]
                d = builder.bitcast(builder.gep(dst_ptr, offset, inbounds=True), vec.as_pointer())
                s = builder.bitcast(builder.gep(src_ptr, offset, inbounds=True),
                                    src_vec.as_pointer())
                value = builder.load(s, align=4 if narrow else 8)
                if narrow:
                    value = builder.fpext(value, vec)
                total = builder.fadd(builder.load(d, align=8), value)
                builder.store(total, d, align=8)
                done += lanes
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def prefetch(typingctx, array, index):
    """Hint the CPU to fetch ``array[index]`` into cache (a no-op for the program's results)."""
    sig = types.void(array, index)

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        _emit_prefetch(builder, builder.gep(data, [args[1]], inbounds=True))
        return context.get_dummy_value()

    return sig, codegen


def _hint_ahead(distance: int, name: str):
    """An intrinsic ``name(array, rows, i, stop, column)`` hinting ``array[rows[i +
    distance], column]`` (a 2-d array, rows first) when ``i + distance < stop`` and the array
    is large enough to miss the cache (:data:`AHEAD_MIN_BYTES`).

    Emitted as LLVM code in the caller's loop: as a compiled function taking the arrays, the
    hint made numba count references to them (NRT calls) and divide the stride on every row,
    ~20 ns a row: a partition's loop took 23 ns a row instead of 3 (BENCHMARKS.md, issue 32,
    stop 66)."""

    def hint(typingctx, array, rows, i, stop, column):
        if not (isinstance(array, types.Array) and array.ndim == 2
                and isinstance(rows, types.Array) and rows.ndim == 1
                and isinstance(rows.dtype, types.Integer)):
            raise errors.TypingError(f"{name} hints a 2-d array's row given by a 1-d integer "
                                     "array")
        sig = types.void(array, rows, i, stop, column)

        def codegen(context, builder, signature, args):
            array_t, rows_t, i_t, stop_t, column_t = signature.args
            arr = context.make_array(array_t)(context, builder, args[0])
            row_index = context.make_array(rows_t)(context, builder, args[1])
            intp = context.get_value_type(types.intp)
            i_v = context.cast(builder, args[2], i_t, types.intp)
            stop_v = context.cast(builder, args[3], stop_t, types.intp)
            column_v = context.cast(builder, args[4], column_t, types.intp)
            ahead = builder.add(i_v, ir.Constant(intp, distance))
            itemsize = context.get_abi_sizeof(context.get_data_type(array_t.dtype))
            large = builder.icmp_signed(
                ">=", builder.mul(arr.nitems, ir.Constant(intp, itemsize)),
                ir.Constant(intp, AHEAD_MIN_BYTES))
            wanted = builder.and_(builder.icmp_signed("<", ahead, stop_v), large)
            with builder.if_then(wanted):
                where = cgutils.get_item_pointer(context, builder, rows_t, row_index, [ahead])
                row = context.cast(builder, builder.load(where), rows_t.dtype, types.intp)
                ptr = cgutils.get_item_pointer(context, builder, array_t, arr, [row, column_v])
                _emit_prefetch(builder, ptr)
            return context.get_dummy_value()

        return sig, codegen

    hint.__name__ = hint.__qualname__ = name
    return intrinsic(hint)


#: The hint of loops that do much with a row (a histogram's tile of features).
prefetch_ahead = _hint_ahead(AHEAD_ROWS, "prefetch_ahead")
#: The hint of loops that do little with a row (a partition reads a byte, a gather a few
#: channels): the row is wanted sooner, so it is asked for further ahead.
prefetch_far_ahead = _hint_ahead(FAR_AHEAD_ROWS, "prefetch_far_ahead")


def _emit_prefetch(builder, ptr) -> None:
    """``llvm.prefetch`` of ``ptr``: read, kept in all levels, data."""
    byte_ptr = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    fn = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32]),
        "llvm.prefetch.p0",
    )
    builder.call(fn, [builder.bitcast(ptr, byte_ptr), i32(0), i32(3), i32(1)])


@intrinsic
def fetch_add(typingctx, counter, value):
    """Atomically ``counter[0] += value``; returns the value before (threads claiming work
    from one shared count: each claim is a distinct number)."""
    if not (isinstance(counter, types.Array) and counter.dtype == types.int64):
        raise errors.TypingError("counter must be an int64 array")
    sig = types.int64(counter, types.int64)

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        return builder.atomic_rmw("add", data, args[1], "monotonic")

    return sig, codegen
