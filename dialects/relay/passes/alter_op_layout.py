"""--alter-op-layout: give constant weights the layout the llvm kernels read
fastest (the dense half of TVM's AlterOpLayout for x86).

    %y = nn.dense(%x, %w)              %w: relay.constant N x K, x with M >= 4 rows
      =>
    %y = nn.matmul(%x, %wt)            %wt: relay.constant K x N (w transposed, here)

nn.dense reads its weight along k; a GEMM schedule wants a vector of output
columns (j) per k, i.e. the weight as K x N.  Done on the constant at
compile time, the transpose costs nothing per run (the kernel would
otherwise pack N x K weights on every call).  A dense with fewer rows (a
matrix-vector product: one dot product per output, contiguous in k) keeps
its layout.  Run it after fold-constant (weights must be constants) and
before fuse-ops; runtime/build.py does so for llvm targets at -O3.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir.pass_manager import ModulePass
from . import defining_constant, erase_if_dead, relay_functions
from ..ops.nn import DenseOp

MIN_ROWS = 4


@dataclass
class AlterOpLayout(ModulePass):
    """Transpose constant dense weights for the llvm GEMM schedule (dense -> matmul).

    nn.dense with a constant weight and several rows -> nn.matmul with the
    weight transposed at compile time."""

    NAME = "alter-op-layout"
    OP = "relay.func"

    def run(self, module, ctx):
        n = 0
        for func in relay_functions(module, include_primitive=False):
            n += self._block(func.regions[0].blocks[0])
        ctx.stat(self, "dense-to-matmul", n)

    def run_on(self, func, ctx):
        ctx.stat(self, "dense-to-matmul", self._block(func.regions[0].blocks[0]))

    def _block(self, block):
        n = 0
        transposed = {}
        dead = []
        for op in list(block.ops):
            for r in op.regions:
                for b in r.blocks:
                    n += self._block(b)
            if not isinstance(op, DenseOp) or not _worth_it(op):
                continue
            w = defining_constant(op.operands[1])
            wt = transposed.get(w)
            if wt is None:
                wt = _transposed_constant(w)
                block.insert_before(op, wt)
                transposed[w] = wt
            from ..ops.nn import MatmulOp
            mm = MatmulOp.build(op.operands[0], wt.results[0], loc=op.loc, units=op.attributes.get("units"),
                                out_dtype=op.attributes.get("out_dtype", ""))
            block.insert_before(op, mm)
            mm.results[0].name = op.results[0].name
            op.results[0].replace_all_uses_with(mm.results[0])
            op.erase()
            dead.append(w)
            n += 1
        erase_if_dead(dead)
        return n


def _worth_it(op):
    from ....ir import types as T
    x, w = op.operands[0].type, op.operands[1].type
    if defining_constant(op.operands[1]) is None:
        return False
    if not (isinstance(x, T.TensorType) and x.is_static and isinstance(w, T.TensorType) and w.is_static):
        return False
    if not T.is_float(w.element_type) or x.rank < 2:
        return False
    rows = 1
    for d in x.shape[:-1]:
        rows *= d
    return rows >= MIN_ROWS


def _transposed_constant(c):
    import numpy as np
    from ....ir import types as T
    from ..ops.function import ConstantOp
    attr = c.attributes["value"]
    arr = np.ascontiguousarray(attr.array.T)
    t = c.results[0].type
    key = f"{attr.key}_t" if attr.key else None
    new = ConstantOp.get(arr, T.TensorType(arr.shape, t.element_type), key, loc=c.loc)
    name = c.results[0].name
    if name and not name[0].isdigit():
        new.results[0].name = f"{name}_t"
    return new
