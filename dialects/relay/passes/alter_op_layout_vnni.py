"""--alter-op-layout's int8 half: dense and conv2d onto x86's u8 x s8 dot
product, vpdpbusd (AVX512-VNNI, AVX-VNNI), on a target that has it.

    %y = nn.dense(%x, %w) {out_dtype = "int32"}     x i8, w an i8 constant N x K, 4 | K, any rows
      =>
    %u = cast(bitwise_xor(%x, -128)) {dtype = "uint8"}          x + 128, unsigned
    %d = nn.contrib_dense_pack(%u, %wp) {weight_layout = "NC32n4c", out_dtype = "int32"}
    %y = subtract(%d, %c)              %c: relay.constant N, 128 * sum_k w[j, k]

    %y = nn.conv2d(%x, %w) {data_layout = "NHWC", out_dtype = "int32", ...}
                                       x i8 NHWC, w an i8 constant (any kernel layout), one
      =>                               group, n | output channels (input channels padded
                                       to a multiple of 4 with zero weights)
    %u = cast(bitwise_xor(%x, -128)) {dtype = "uint8"}
    %p = nn.pad(%u) {pad_width = [[0, 0], [t, b], [l, r], [0, e]], pad_value = 128.0}   (if padded, or e > 0)
    %d = nn.contrib_conv2d_pack(%p, %wp) {kernel_layout = "OHWI32o4i", strides, dilation}
    %y = subtract(%d, %c)              %c: 128 * the sum of each output channel's weights

vpdpbusd multiplies unsigned bytes by signed ones, four per i32 lane, 64
multiply-adds per AVX-512 instruction against 16 f32 FMAs; so the weight
is packed as i32 words of four consecutive k (input channels), and int8
data is shifted to unsigned, x + 128 (a flip of the sign bit, in the
kernel that makes the data), whose extra 128 * sum w per output a
constant takes off again: TVM's x86 int8 kernels take uint8 data the same
way.  A conv's zero padding, shifted, is 128: so the padding moves into an
nn.pad of the unsigned data.  Panels are two vectors of output columns
(channels), one vector below 4 rows (a dense then gets no GEMM tile, and
j % n must be the vector's lane); a dense whose N no panel divides is
padded like the float form.  Without VNNI the int8 ops stay.
"""

from __future__ import annotations


def pack_int8(op, block, made, vu, pack_width=0):
    """(statistic, the last op inserted) when `op` is an int8 dense or
    conv2d the module docstring rewrites for vector unit `vu` (its ops
    inserted before op); else None.  `made` caches packed weights."""
    from ..ops.conv import Conv2DOp
    if not vu.vnni_lanes:
        return None
    if isinstance(op, Conv2DOp):
        last = _conv(op, block, made, vu, pack_width)
        return None if last is None else ("int8-conv-pack", last)
    last = _dense(op, block, made, vu, pack_width)
    return None if last is None else ("int8-dense-pack", last)


def _dense(op, block, made, vu, pack_width):
    import numpy as np
    from ....ir import types as T
    from ..ops.nn import DensePackOp
    from ..ops.util import bytes_as_words
    from .alter_op_layout import _constant_like, _rows, _weight_nk, panel_width
    w = _dense_weight(op)
    if w is None:
        return None
    arr = _weight_nk(op, w)
    n, k = arr.shape
    nb = panel_width(n, _rows(op), vu.vnni_lanes[0], pack_width)
    pad = -n % nb
    key = ("words", w, nb)
    wp = made.get(key)
    if wp is None:
        full = np.concatenate([arr, np.zeros((pad, k), np.int8)]) if pad else np.asarray(arr, np.int8)
        words = bytes_as_words(full.reshape((n + pad) // nb, nb, k // 4, 4).transpose(0, 2, 1, 3))
        wp = made[key] = _constant_like(w, words, f"w{nb}", T.i32)
        block.insert_before(op, wp)
    new_ops = _unsigned(op)
    new_ops.append(DensePackOp.build(new_ops[-1].results[0], wp.results[0], loc=op.loc, units=n,
                                     out_dtype="int32", weight_layout=f"NC{nb}n4c"))
    return _compensated(op, block, new_ops, arr)


def _conv(op, block, made, vu, pack_width):
    from ....ir import types as T
    from ..layouts import convert_array
    from ..ops.conv import Conv2DPackOp
    from ..ops.util import bytes_as_words
    from .alter_op_layout import _constant_like
    from .quantize.realize import op_class
    w = _conv_weight(op)
    if w is None:
        return None
    a = op.attributes
    oihw = convert_array(w.attributes["value"].array, a["kernel_layout"], "OIHW")
    # input channels up to a whole word (an image's 3): zero weights, so the
    # padded data channel's value does not matter
    extra = -oihw.shape[1] % 4
    if extra:
        import numpy as np
        oihw = np.concatenate([oihw, np.zeros(oihw.shape[:1] + (extra,) + oihw.shape[2:], oihw.dtype)], axis=1)
    o, i, kh, kw = oihw.shape
    widths = (pack_width,) if pack_width > 0 else (2 * vu.vnni_lanes[0], vu.vnni_lanes[0])
    nb = next((c for c in widths if o % c == 0), None)
    if nb is None:
        return None
    key = ("conv-words", w, nb)
    wp = made.get(key)
    if wp is None:
        # [O/n, n, I/4, 4, KH, KW] -> [O/n, KH, KW, I/4, n, 4]: a word's bytes are 4 input channels
        words = bytes_as_words(oihw.reshape(o // nb, nb, i // 4, 4, kh, kw).transpose(0, 4, 5, 2, 1, 3))
        wp = made[key] = _constant_like(w, words, f"w{nb}", T.i32)
        block.insert_before(op, wp)
    new_ops = _unsigned(op)
    top, left, bottom, right = a["padding"]
    if any(a["padding"]) or extra:
        new_ops.append(op_class("nn.pad").build(new_ops[-1].results[0], loc=op.loc, pad_value=128.0,
                                                pad_width=[[0, 0], [top, bottom], [left, right], [0, extra]]))
    new_ops.append(Conv2DPackOp.build(new_ops[-1].results[0], wp.results[0], loc=op.loc, strides=a["strides"],
                                      dilation=a["dilation"], kernel_layout=f"OHWI{nb}o4i"))
    return _compensated(op, block, new_ops, oihw.reshape(o, -1))


def _unsigned(op):
    """The ops making op's i8 data unsigned, x + 128 (x ^ 0x80 as ui8)."""
    import numpy as np
    from ..ops.function import ConstantOp
    from .quantize.realize import op_class
    flip = ConstantOp.get(np.array(-128, np.int8), loc=op.loc)
    xor = op_class("bitwise_xor").build(op.operands[0], flip.results[0], loc=op.loc)
    return [flip, xor, op_class("cast").build(xor.results[0], dtype="uint8", loc=op.loc)]


def _compensated(op, block, new_ops, w_rows):
    """new_ops, then the subtraction of 128 * each output's weight sum
    (`w_rows`: one row of weights per output column), inserted before op;
    returns the subtraction."""
    import numpy as np
    from ..ops.function import ConstantOp
    from .quantize.realize import op_class
    comp = ConstantOp.get((128 * w_rows.astype(np.int64).sum(axis=1)).astype(np.int32), loc=op.loc)
    new_ops += [comp, op_class("subtract").build(new_ops[-1].results[0], comp.results[0], loc=op.loc)]
    for o in new_ops:
        block.insert_before(op, o)
    return new_ops[-1]


def _int8_operands(op, data_rank_ok):
    """The i8 weight constant of `op` when its data and weight are i8 and
    its result int32 (a static weight); else None."""
    from ....ir import types as T
    from . import defining_constant
    x, w = op.operands[0].type, op.operands[1].type
    c = defining_constant(op.operands[1])
    if c is None or not isinstance(x, T.TensorType) or not isinstance(w, T.TensorType) or not w.is_static:
        return None
    if x.element_type is not T.i8 or w.element_type is not T.i8 or not data_rank_ok(x):
        return None
    if op.results[0].type.element_type is not T.i32:
        return None
    return c


def _dense_weight(op):
    """The constant weight of a dense (or a matmul that is one, not
    transpose_a) whose reduction is a multiple of 4."""
    from ..ops.nn import DenseOp, MatmulOp
    if isinstance(op, MatmulOp):
        if op.attributes["transpose_a"]:
            return None
    elif not isinstance(op, DenseOp):
        return None
    c = _int8_operands(op, lambda x: x.rank >= 1 and x.shape[-1] is not None and x.shape[-1] % 4 == 0)
    return c if c is not None and op.operands[1].type.rank == 2 else None


def _conv_weight(op):
    """The constant weight of an NHWC conv2d (out NHWC, one group) over
    static data (input channels that are not a multiple of 4 are padded
    to one: the data by nn.pad, the weight by zeros)."""
    a = op.attributes
    if a["data_layout"] != "NHWC" or a["out_layout"] not in ("", "NHWC") or a["groups"] != 1:
        return None
    return _int8_operands(op, lambda x: x.is_static and x.rank == 4)
