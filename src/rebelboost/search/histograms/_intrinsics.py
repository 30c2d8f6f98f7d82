"""LLVM-level helpers for the histogram kernels: unrolled SIMD row adds and prefetch hints."""

from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, errors, types
from numba.extending import intrinsic


@intrinsic
def add_row(typingctx, dst, dst_start, src, src_start, width):
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


@intrinsic
def prefetch(typingctx, array, index):
    """Hint the CPU to fetch ``array[index]`` into cache (a no-op for the program's results)."""
    sig = types.void(array, index)

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        byte_ptr = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32]),
            "llvm.prefetch.p0",
        )
        ptr = builder.bitcast(builder.gep(data, [args[1]], inbounds=True), byte_ptr)
        builder.call(fn, [ptr, i32(0), i32(3), i32(1)])  # read, keep in all levels, data
        return context.get_dummy_value()

    return sig, codegen
