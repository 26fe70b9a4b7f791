"""--alter-op-layout's bf16 half: a bf16 product summed in float32 onto
x86's bf16 pair dot product, vdpbf16ps (AVX512-BF16), on a target that has
it.

    %c = cast(%w) {dtype = "bfloat16"}       %w: an f32 constant N x K, 2 | K
    %y = nn.dense(%x, %c) {out_dtype = "float32"}       x bf16, any rows (or '?')
      =>
    %y = nn.contrib_dense_pack(%x, %wp) {weight_layout = "NC32n2c", out_dtype = "float32", units = N}
                                       %wp: an i32 constant N/n x K/2 x n, each word
                                       w[j, 2kw] | w[j, 2kw + 1] << 16 as bf16 bits

That is what --to-mixed-precision leaves of a float32 dense with a
constant weight, or of it after fold-constant (a bf16 constant).  The weight is rounded to bf16 here, to nearest even as
the cast rounds, and packed in i32 words of two consecutive k: vdpbf16ps
multiplies such pairs, 32 multiply-adds per AVX-512 instruction against an
FMA's 16, with no conversion of the weight in the kernel (the plain bf16
GEMM converts each weight to f32 before its FMA).  Panels and padding are
the float form's (two vectors of columns, one below 4 rows, as the int8
form's; zero columns up to a whole panel, left off by units).  A product
of few rows reads half the bytes of the f32 one, and no cast of the
weight runs per call: 768x3072 at 1 row took 0.61 of the f32 time, at 8
rows 0.26.  ``nn.matmul`` with such a second operand (not transpose_a) is
the dense it is.  Without AVX512-BF16 nothing changes.
"""

from __future__ import annotations


def pack_bf16(op, block, made, vu, pack_width=0):
    """The op inserted before `op` when `op` is a bf16 product the module
    docstring rewrites for vector unit `vu`, and the ops it leaves dead
    (the cast and its constant, if nothing else reads them); else None.
    `made` caches packed weights."""
    from ....ir import types as T
    from ..ops.nn import DensePackOp
    from .alter_op_layout import _rows, panel_width
    if not vu.bf16_lanes:
        return None
    found = _cast_weight(op)
    if found is None:
        return None
    cast, c = found
    arr = c.attributes["value"].array
    if op.op_name == "nn.matmul" and not op.attributes["transpose_b"]:
        arr = arr.T
    n, k = arr.shape
    nb = panel_width(n, _rows(op), vu.lanes, pack_width)
    key = ("bf16-words", c, nb, arr.shape)
    wp = made.get(key)
    if wp is None:
        from .alter_op_layout import _constant_like
        bits = bf16_bits(arr) if cast is not None else T.as_storage(arr)
        wp = made[key] = _constant_like(c, pack_pairs(bits, nb), f"w{nb}", T.i32)
        block.insert_before(op, wp)
    new = DensePackOp.build(op.operands[0], wp.results[0], loc=op.loc, units=n, out_dtype="float32",
                            weight_layout=f"NC{nb}n2c")
    block.insert_before(op, new)
    return new, [c, cast] if cast is not None else [c]


def pack_pairs(bits, nb):
    """bf16 bits [N, K] (uint16) as "NC{nb}n2c" words [N'/nb, K/2, nb], N
    padded with zero columns to N' (whole panels); word [j / nb, kw, j %
    nb] holds w[j, 2kw] in its low half and w[j, 2kw + 1] in its high."""
    import numpy as np
    from ..ops.util import halves_as_words
    n, k = bits.shape
    pad = -n % nb
    if pad:
        bits = np.concatenate([bits, np.zeros((pad, k), np.uint16)])
    return halves_as_words(bits.reshape((n + pad) // nb, nb, k // 2, 2).transpose(0, 2, 1, 3))


def bf16_bits(x):
    """float32 values rounded to bf16, to nearest even, as their bits
    (uint16); a NaN stays a NaN (quiet, its sign kept): what the runtime's
    cast to bfloat16 computes."""
    import numpy as np
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    out = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), ((b >> 16) | 0x40).astype(np.uint16), out)


def _cast_weight(op):
    """(the cast, its f32 constant) when `op` is a dense (or a matmul that is
    one) of bf16 data [.., K] (K even, static) by cast(constant f32 2-d) to
    bfloat16, summing in float32; (None, the constant) when the weight is a
    bf16 constant (fold-constant folded the cast); else None."""
    from ....ir import types as T
    from ..ops.nn import DenseOp, MatmulOp
    from . import defining_constant
    if isinstance(op, MatmulOp):
        if op.attributes["transpose_a"]:
            return None
    elif not isinstance(op, DenseOp):
        return None
    if op.attributes.get("out_dtype") != "float32" or op.attributes.get("units") is not None:
        return None
    x, w = op.operands[0].type, op.operands[1].type
    if not isinstance(x, T.TensorType) or x.element_type is not T.bf16 or x.rank < 2 or \
            x.shape[-1] is None or x.shape[-1] % 2:
        return None
    if not isinstance(w, T.TensorType) or w.element_type is not T.bf16 or w.rank != 2:
        return None
    c = defining_constant(op.operands[1])
    if c is not None:     # the cast already folded: a bf16 constant
        return (None, c) if c.results[0].type.is_static else None
    cast = op.operands[1].defining_op()
    if cast is None or getattr(cast, "op_name", None) != "cast":
        return None
    c = defining_constant(cast.operands[0])
    if c is None or c.results[0].type.element_type is not T.f32 or not c.results[0].type.is_static:
        return None
    return cast, c
