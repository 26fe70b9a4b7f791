"""--quantize-weights: weight-only int8 for products over constant weights,
the decoding step's GEMVs reading a quarter of the bytes.

    %y = nn.dense(%x, %w)              x float32 (..., K), any rows or '?';
                                       %w: a float32 constant N x K
      =>
    %q = nn.contrib_dense_pack(%x, %wq) {weight_layout = "NC32n", units = N}
                                       %wq: an i8 constant N'/n x K x n
    %y = multiply(%q, %s)              %s: a float32 constant [N]

Each output column j (a row of w) gets its own scale, symmetric, so that
its largest weight is 127:

    s[j] = max_k |w[j, k]| / 127        (1 where the row is all zero)
    wq[j, k] = round(w[j, k] / s[j])    (to nearest even; in [-127, 127])

and y[.., j] = s[j] * sum_k x[.., k] * wq[j, k]: the data stays float32,
each weight is converted to float32 in the kernel (a sign extension and a
conversion per vector of weights, shared by the register tile's rows),
and the sums are float32 as before.  A decoding step (one row) is bound by
the bytes of weight it reads (GPT-2's are 4 x 85 MB per token in
float32); this reads a quarter of them.  The error is the rounding of
each weight, at most s[j] / 2: a relative 1/254 of the row's largest.

The weight is packed as --alter-op-layout packs a float one (panels of
two vectors of columns, one below 4 rows; zero columns up to a whole panel,
which units leaves off), so the same GEMM schedules tile it, and the
multiply fuses into the kernel as its epilogue.  ``nn.matmul`` with a
constant second operand (not transpose_a) and a 1x1 NHWC ``nn.conv2d``
are the dense they are (alter_op_layout._constant_weight).  Options:
dtype (int8, the only one), target (the vector width the panels are
made for), pack-width, min-elements (smaller weights stay float32).
Statistic: ``weights-quantized``.  Run after fold-constant, before
alter-op-layout and fuse-ops; build(quantize_weights="int8") does.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir.pass_manager import option
from . import GraphFunctionPass, erase_if_dead


@dataclass
class QuantizeWeights(GraphFunctionPass):
    """Weight-only int8: constant dense/matmul weights as int8 with a float32 scale per output column."""

    NAME = "quantize-weights"
    dtype: str = option("int8", "the weights' type (int8)")
    target: str = option("llvm", "the llvm target whose vector registers set the panel width")
    pack_width: int = option(0, "columns per packed weight panel (0: from the target)")
    min_elements: int = option(0, "weights with fewer elements stay float32")

    def validate(self):
        if self.dtype != "int8":
            raise ValueError(f"dtype must be int8, got '{self.dtype}'")
        if self.min_elements < 0:
            raise ValueError(f"min-elements must be >= 0, got {self.min_elements}")

    def run_on(self, func, ctx):
        ctx.stat(self, "weights-quantized", self._block(func.regions[0].blocks[0]))

    def _block(self, block):
        from ....backend.spec import parse_target
        vu = parse_target(self.target or "llvm").vector_unit()
        made, dead, n = {}, [], 0
        for op in list(block.ops):
            for r in op.regions:
                for b in r.blocks:
                    n += self._block(b)
            if self._rewrite(op, block, made, vu, dead):
                n += 1
        erase_if_dead(dead)
        return n

    def _rewrite(self, op, block, made, vu, dead):
        from ....ir import types as T
        from ..ops.conv import Conv2DOp
        from ..ops.elemwise import MultiplyOp
        from ..ops.nn import DensePackOp
        from .alter_op_layout import _constant_like, _constant_weight, _rows, _weight_nk, pack_panels, panel_width
        c = _constant_weight(op)
        if c is None or op.operands[0].type.element_type is not T.f32 or \
                c.results[0].type.element_type is not T.f32 or op.attributes.get("out_dtype") not in ("", "float32"):
            return False
        arr = _weight_nk(op, c)
        if arr.size < max(1, self.min_elements):
            return False
        n = arr.shape[0]
        nb = panel_width(n, _rows(op), vu.lanes, self.pack_width)
        key = (c, nb, arr.shape)
        if key not in made:
            q, scale = quantize_rows(arr)
            wq = _constant_like(c, pack_panels(q, nb), f"q{nb}", T.i8)
            s = _constant_like(c, scale, "scale")
            block.insert_before(op, wq)
            block.insert_before(op, s)
            made[key] = wq, s
        wq, s = made[key]
        units = n if isinstance(op, Conv2DOp) or n % nb else op.attributes.get("units")
        prod = DensePackOp.build(op.operands[0], wq.results[0], loc=op.loc, units=units,
                                 out_dtype="float32", weight_layout=f"NC{nb}n")
        block.insert_before(op, prod)
        mul = MultiplyOp.build(prod.results[0], s.results[0], loc=op.loc)
        block.insert_before(op, mul)
        mul.results[0].name = op.results[0].name
        op.results[0].replace_all_uses_with(mul.results[0])
        dead.append(c)
        op.erase()
        return True


def quantize_rows(w):
    """(wq int8 N x K, scale float32 [N]): each row symmetric, its largest
    magnitude 127, rounded to nearest even (the module docstring)."""
    import numpy as np
    w = np.asarray(w, np.float32)
    top = np.abs(w).max(axis=1) if w.size else np.zeros(w.shape[0], np.float32)
    scale = np.where(top > 0, top / np.float32(127), np.float32(1)).astype(np.float32)
    q = np.clip(np.rint(w / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale
