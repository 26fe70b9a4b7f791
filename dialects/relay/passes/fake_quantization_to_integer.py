"""--fake-quantization-to-integer: the products of a QDQ model on int8.

An ONNX QDQ model (what onnxruntime's quantizer writes by default) keeps
its products in float32 between ``DequantizeLinear`` and
``QuantizeLinear`` ops: the int8 arithmetic is implied ("fake").  Like
TVM's FakeQuantizationToInteger, this pass makes it real, for the
products (where the time goes); what surrounds them stays as it is:

    %x  = qnn.dequantize(%q, %sx, %zx)                q: ui8 or i8, sx and zx scalars
    %w  = qnn.dequantize(%wq, %sw, %zw) {axis = 0}    wq: an i8 constant O x I x KH x KW,
                                                      sw scalar or per O, zw all 0
    %y  = nn.conv2d(%x, %w) {padding = P, ...}        NCHW / OIHW, any groups, f32
      =>
    %qi = bitwise_xor(cast(%q) {dtype = "int8"}, -128)        (ui8 data only: q - 128)
    %p  = nn.pad(%qi) {pad_value = zx', pad_width = P}        (if padded: the padding
                                                               is zero *after* dequantize)
    %a  = nn.conv2d(%p, %wq) {padding = 0, out_dtype = "int32", ...}
    %c  = subtract(%a, zx' * sum(wq[o]))                      a constant per output channel
    %y  = multiply(cast(%c) {dtype = "float32"}, sx * sw[o])

with zx' = zx (i8 data) or zx - 128 (ui8 data: shifted into i8, since
nn.conv2d takes one element type).  Exactly sum (q - zx) * wq[o] * sx *
sw[o]: the integer sum is exact, and one rounding (the multiply) follows,
where the float product rounded at every term.  ``nn.dense(%x, %w)`` (x
rows of K, w N x K, sw per N) is the same without the padding; its weight
may also be ``transpose(qnn.dequantize(...))`` (the ONNX importer's form
of a Gemm / MatMul weight), transposed here on the int8 constant.  The
bias, the requantization and the activations' quantize / dequantize
pairs stay float32 (elementwise: they fuse into the product's kernel);
--alter-op-layout then puts the int8 products on the CPU's dot-product
instructions (vpdpbusd) where it has them, shifting the data back to
unsigned.

Left alone (the product stays float32): a weight that is not a constant,
a non-zero or non-constant weight zero point, data scaled per channel,
sums that could overflow int32 (more than 65793 terms), other products.
Run after infer-type, before fold-constant (which would fold the
weight's dequantize away); ``build`` does at -O3 for llvm.  Statistic:
``products-on-integers``.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import GraphFunctionPass, defining_constant, erase_if_dead

# terms of a sum of ui8 x i8 products that always fit int32: 255 * 128 * n < 2^31
MAX_TERMS = (2 ** 31 - 1) // (255 * 128)


@dataclass
class FakeQuantizationToInteger(GraphFunctionPass):
    """conv2d and dense over dequantized int8 operands computed on the int8 values."""

    NAME = "fake-quantization-to-integer"

    def run_on(self, func, ctx):
        ctx.stat(self, "products-on-integers", rewrite_ops(func.regions[0].blocks[0], _rewrite))


def rewrite_ops(block, rewrite):
    """Apply ``rewrite(op, block, dead)`` to every op of `block` and of the
    blocks nested in it; the ops it leaves in `dead` are erased when no
    longer used.  Returns how many it rewrote."""
    n, dead = 0, []
    for op in list(block.ops):
        for r in op.regions:
            for b in r.blocks:
                n += rewrite_ops(b, rewrite)
        if rewrite(op, block, dead):
            n += 1
    erase_if_dead(dead)
    return n


def _dequantized(v):
    """(q value, scale array, zero point array, axis) when `v` is a
    qnn.dequantize of i8/ui8 with constant parameters; else None."""
    import numpy as np
    from ....ir import types as T
    from ..ops.qnn import DequantizeOp
    d = v.defining_op()
    if not isinstance(d, DequantizeOp) or d.results[0].type.element_type is not T.f32:
        return None
    q, s, z = d.operands
    if q.type.element_type not in (T.i8, T.u8):
        return None
    sc, zc = defining_constant(s), defining_constant(z)
    if sc is None or zc is None:
        return None
    return d, q, np.asarray(sc.attributes["value"].array, np.float64), \
        np.asarray(zc.attributes["value"].array, np.int64), d.attributes["axis"]


def _transposed(v):
    """(perm, operand) when `v` is a transpose of a qnn.dequantize (what
    the ONNX importer makes of Gemm / MatMul weights); else (None, v)."""
    from ..ops.qnn import DequantizeOp
    d = v.defining_op()
    if getattr(d, "name", None) == "relay.transpose" and isinstance(d.operands[0].defining_op(), DequantizeOp):
        axes = d.attributes["axes"]
        rank = d.operands[0].type.rank
        return (list(axes) if axes else list(reversed(range(rank)))), d.operands[0]
    return None, v


def _rewrite(op, block, dead):
    import numpy as np
    from ....ir import types as T
    from ..ops.conv import Conv2DOp
    from ..ops.nn import DenseOp
    if isinstance(op, Conv2DOp):
        a = op.attributes
        if a["data_layout"] != "NCHW" or a["kernel_layout"] != "OIHW" or a["out_layout"] not in ("", "NCHW"):
            return False
        out_axis = 1
    elif isinstance(op, DenseOp):
        out_axis = -1
    else:
        return False
    if op.results[0].type.element_type is not T.f32 or op.attributes.get("out_dtype") not in ("", "float32"):
        return False
    perm, wv = _transposed(op.operands[1])
    tr = op.operands[1].defining_op() if perm is not None else None
    x, w = _dequantized(op.operands[0]), _dequantized(wv)
    if x is None or w is None:
        return False
    xd, q, sx, zx, _ = x
    wd, wq, sw, zw, w_axis = w
    wc = defining_constant(wq)
    if wc is None or wq.type.element_type is not T.i8 or np.any(zw != 0):
        return False
    if sx.size != 1 or zx.size != 1:
        return False
    warr = np.asarray(wc.attributes["value"].array, np.int64)
    if perm is not None:
        # the importer's transpose of a (K, N) weight for nn.dense: made
        # at compile time on the int8 values, the channel axis moved with it
        w_axis = perm.index(w_axis % warr.ndim)
        warr = warr.transpose(perm)
    o = warr.shape[0]
    if sw.size != 1 and (sw.size != o or w_axis % warr.ndim != 0):
        return False
    terms = int(np.prod(warr.shape[1:]))
    if terms > MAX_TERMS:
        return False
    new = []
    if perm is not None:
        new.append(_const(np.ascontiguousarray(warr.astype(np.int8)), op.loc))
        wq = new[-1].results[0]
    rank = op.results[0].type.rank
    acc = integer_product(op, type(op), q, int(zx.reshape(())), wq, warr, out_axis, new)
    new.append(_op("cast", acc, dtype="float32", loc=op.loc))
    scale = (sx.reshape(()) * sw.reshape(-1)).astype(np.float32)
    new.append(_const(scale.reshape(()) if scale.size == 1 else _along(scale, out_axis, rank), op.loc))
    new.append(_op("multiply", new[-2].results[0], new[-1].results[0], loc=op.loc))
    for n in new:
        block.insert_before(op, n)
    new[-1].results[0].name = op.results[0].name
    op.results[0].replace_all_uses_with(new[-1].results[0])
    op.erase()
    for d in (xd, wd):
        # producers first: erase_if_dead takes the dequantize, then its constants
        dead.extend(c for c in map(defining_constant, d.operands) if c is not None)
        dead.append(d)
    if tr is not None:
        dead.append(tr)
    return True


def integer_product(op, cls, q, zx, wq, warr, out_axis, new):
    """`cls` (nn.conv2d or nn.dense, with `op`'s attributes) of data `q`
    (i8 / ui8, zero point `zx`: an int, or a relay value of a scalar when
    known only at run time) by the i8 constant `wq` (values `warr`, output
    channels first), as an int32 sum of (q - zx) * w: the ops go into `new`,
    the sum is returned.  ui8 data is shifted into i8 (zx - 128), a conv's
    padding becomes an nn.pad of the zero point (an int zx only), and
    zx * sum(w[o]) is taken off."""
    import numpy as np
    from ....ir import types as T
    from ..ops.conv import Conv2DOp
    shifted = q.type.element_type is T.u8
    data = _signed(q, op.loc, new) if shifted else q
    attrs = dict(op.attributes)
    if issubclass(cls, Conv2DOp) and any(attrs["padding"]):
        top, left, bottom, right = attrs["padding"]
        new.append(_op("nn.pad", data, loc=op.loc, pad_value=float(zx - (128 if shifted else 0)),
                       pad_width=[[0, 0], [0, 0], [top, bottom], [left, right]]))
        data = new[-1].results[0]
        attrs["padding"] = [0, 0, 0, 0]
    attrs["out_dtype"] = "int32"
    new.append(cls.build(data, wq, loc=op.loc, **{k: v for k, v in attrs.items() if k in cls.ATTRS}))
    acc = new[-1].results[0]
    rank = op.results[0].type.rank
    sums = warr.reshape(warr.shape[0], -1).sum(axis=1)
    if isinstance(zx, int):
        zx -= 128 if shifted else 0
        if not zx:
            return acc
        new.append(_const(_along((zx * sums).astype(np.int32), out_axis, rank), op.loc))
    else:
        z = zx
        if z.type.element_type is not T.i32:
            new.append(_op("cast", z, dtype="int32", loc=op.loc))
            z = new[-1].results[0]
        if shifted:
            new.append(_const(np.array(128, np.int32), op.loc))
            new.append(_op("subtract", z, new[-1].results[0], loc=op.loc))
            z = new[-1].results[0]
        new.append(_const(_along(sums.astype(np.int32), out_axis, rank), op.loc))
        new.append(_op("multiply", z, new[-1].results[0], loc=op.loc))
    new.append(_op("subtract", acc, new[-1].results[0], loc=op.loc))
    return new[-1].results[0]


def _along(v, axis, rank):
    """`v` (one value per output channel) shaped to broadcast along `axis`."""
    shape = [1] * rank
    shape[axis] = v.size
    return v.reshape(shape)


def _signed(q, loc, new):
    """q - 128 as i8 for ui8 `q` (its sign bit flipped)."""
    import numpy as np
    new.append(_op("cast", q, dtype="int8", loc=loc))
    new.append(_const(np.array(-128, np.int8), loc))
    new.append(_op("bitwise_xor", new[-2].results[0], new[-1].results[0], loc=loc))
    return new[-1].results[0]


def _const(arr, loc):
    from ..ops.function import ConstantOp
    return ConstantOp.get(arr, loc=loc)


def _op(name, *operands, loc, **attrs):
    from .quantize.realize import op_class
    return op_class(name).build(*operands, loc=loc, **attrs)
