"""--qnn-legalize: qnn.dense and qnn.conv2d over an i8 constant weight as
int8 products (TVM's qnn Legalize for x86, in spirit: the operand types
the CPU's dot products take).

    %y = qnn.dense(%x, %w, %zx, %zw, %sx, %sw)      x i8 / ui8; w an i8 constant N x K;
                                                    zw a constant, all 0; zx a scalar,
                                                    a constant or a run-time value
      =>
    %xi = bitwise_xor(cast(%x) {dtype = "int8"}, -128)       (ui8 data only: x - 128)
    %a  = nn.dense(%xi, %w) {out_dtype = "int32"}
    %y  = subtract(%a, zx' * sum(w[n]))                       zx' = zx (- 128 for ui8)

``qnn.conv2d`` (NCHW / OIHW) is the same, its padding an nn.pad of zx'
(a constant zx only).  The int32 result is the qnn op's exactly; the
scales are the op's consumers' business, as before.  Without the rewrite
the qnn ops are computed in int32 loops with the zero points subtracted
per term; with it --alter-op-layout puts them on vpdpbusd where the CPU
has it.  This is what onnxruntime's dynamic quantization produces
(DynamicQuantizeLinear's ui8 data and run-time zero point, MatMulInteger
with int8 weights), and QLinearConv / QLinearMatMul / ConvInteger.

Left alone: a weight that is not an i8 constant, a weight zero point that
is not all 0, a data zero point per channel, a conv with padding and a
run-time zero point, sums of more than 65793 terms.  Run after a
fold-constant (the importer's transposes and casts of constants), before
convert-layout and alter-op-layout; ``build`` does at -O3 for llvm.
Statistic: ``products-legalized``.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import GraphFunctionPass, defining_constant
from .fake_quantization_to_integer import MAX_TERMS, integer_product, rewrite_ops


@dataclass
class QnnLegalize(GraphFunctionPass):
    """qnn.dense / qnn.conv2d over an i8 constant weight as int8 nn products."""

    NAME = "qnn-legalize"

    def run_on(self, func, ctx):
        ctx.stat(self, "products-legalized", rewrite_ops(func.regions[0].blocks[0], _rewrite))


def _rewrite(op, block, dead):
    import numpy as np
    from ....ir import types as T
    from ..ops.conv import Conv2DOp
    from ..ops.nn import DenseOp
    from ..ops.qnn import QnnConv2DOp, QnnDenseOp
    if isinstance(op, QnnConv2DOp):
        a = op.attributes
        if a["data_layout"] != "NCHW" or a["kernel_layout"] != "OIHW" or a["out_layout"] not in ("", "NCHW"):
            return False
        cls, out_axis = Conv2DOp, 1
    elif isinstance(op, QnnDenseOp):
        cls, out_axis = DenseOp, -1
    else:
        return False
    x, w, zx, zw = op.operands[:4]
    wc, zwc = defining_constant(w), defining_constant(zw)
    if wc is None or zwc is None or w.type.element_type is not T.i8 or x.type.element_type not in (T.i8, T.u8):
        return False
    if op.results[0].type.element_type is not T.i32 or np.any(np.asarray(zwc.attributes["value"].array) != 0):
        return False
    warr = np.asarray(wc.attributes["value"].array, np.int64)
    if int(np.prod(warr.shape[1:])) > MAX_TERMS:
        return False
    zc = defining_constant(zx)
    if zc is not None:
        z = np.asarray(zc.attributes["value"].array)
        if z.size != 1:
            return False
        zv = int(z.reshape(-1)[0])
    else:
        if zx.type.rank != 0 and (zx.type.shape != (1,)):
            return False
        if cls is Conv2DOp and any(op.attributes["padding"]):
            return False       # the padding's value would be a run-time value
        zv = zx
        if zx.type.rank:
            from .quantize.realize import op_class
            r = op_class("reshape").build(zx, newshape=[], loc=op.loc)
            block.insert_before(op, r)
            zv = r.results[0]
    new = []
    integer_product(op, cls, x, zv, w, warr, out_axis, new)
    for n in new:
        block.insert_before(op, n)
    new[-1].results[0].name = op.results[0].name
    op.results[0].replace_all_uses_with(new[-1].results[0])
    op.erase()
    dead.extend(c for c in (zwc, zc) if c is not None)
    return True
