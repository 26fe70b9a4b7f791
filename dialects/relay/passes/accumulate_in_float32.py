"""--accumulate-in-float32: products of float16 / bfloat16 operands sum in
float32 and round once, as onnxruntime's do.

    %d = nn.dense(%x, %w) : tensor<8x32xf16>           x, w float16
      =>
    %0 = nn.dense(%x, %w) {out_dtype = "float32"} : tensor<8x32xf32>
    %d = cast(%0) {dtype = "float16"} : tensor<8x32xf16>

for every product of to-mixed-precision's allow list (nn.dense, nn.matmul,
nn.batch_matmul, nn.contrib_dense_pack, the convs and their transposes)
whose float operands and result are all of one low type.  Summed in its
own type, a float16 product rounds at every multiply-add: a 256-long dot
product of N(0, 4) values was off by 0.1 on average (onnxruntime: 0.009),
and equal to the exactly rounded result at 11% of the outputs (onnxruntime:
99.8%).  On a CPU without float16 arithmetic (x86 before AVX512-FP16) the
float32 sums are also faster: nothing is rounded inside the loop.  The
build pipeline runs it at every level before fuse-ops (the cast becomes
the product's epilogue).  Statistic: `products-widened`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir import types as T
from . import GraphFunctionPass
from .to_mixed_precision import ALLOW, NAMES, _element

LOW = (T.f16, T.bf16)


@dataclass
class AccumulateInFloat32(GraphFunctionPass):
    """float16 / bfloat16 products sum in float32, rounded once."""

    NAME = "accumulate-in-float32"

    def run_on(self, func, ctx):
        from ..ops.base import RelayOp
        n = 0
        for op in list(func.regions[0].blocks[0].ops):
            if not isinstance(op, RelayOp) or op.op_name not in ALLOW or "out_dtype" not in op.attributes:
                continue
            low = _element(op.results[0])
            floats = {_element(v) for v in op.operands if _element(v) is not None and T.is_float(_element(v))}
            if low in LOW and floats == {low}:
                n += _widen(op, low)
        ctx.stat(self, "products-widened", n)


def _widen(op, low):
    """`op` again with float32 sums, its result cast down after it: 1, or 0
    where the op does not take float32 sums (it is left as it was)."""
    from ....ir.diagnostics import DiagnosticError
    from ..ops.elemwise import CastOp
    attrs = dict(op.attributes)
    attrs["out_dtype"] = "float32"
    try:
        new = type(op).build(*op.operands, loc=op.loc, **attrs)
    except DiagnosticError:
        return 0
    op.parent.insert_before(op, new)
    down = CastOp.build(new.results[0], dtype=NAMES[str(low)], loc=op.loc)
    op.parent.insert_after(new, down)
    op.results[0].replace_all_uses_with(down.results[0])
    down.results[0].name = op.results[0].name
    op.erase()
    return 1
