"""--to-mixed-precision: run the products in float16 or bfloat16,
accumulating in float32 (TVM's ToMixedPrecision).

Each op of a function body (top-level block; ops with regions are left
in float32) falls in one of three lists, as in TVM:

    allow   products, always in the low type: their float32 operands cast
            down, the sums kept in float32 (out_dtype = "float32"), the
            result cast down for the ops after it
            (nn.dense, nn.matmul, nn.batch_matmul, nn.contrib_dense_pack,
            nn.conv1d/2d/3d and their transposes)
    deny    never: operands in the low type are cast back up to float32
            (softmax, the norms, reductions, exp / log / pow / sqrt / erf
            and the like: their ranges or sums need float32)
    follow  everything else: in the low type when every float operand
            already is, or is a constant (cast down with it: a bias), else
            in float32 (low operands cast up; a product's float32 sums are
            used as they are rather than rounded down and up)

Function results keep their types (a low result is cast back up), so the
signature never changes.  Casts of constants are folded by a later
--fold-constant (float16; numpy has no bfloat16, so a bfloat16 weight's
cast stays a kernel).  Options: `dtype` ("float16" or "bfloat16"),
`allow` and `deny` (op names, replacing the defaults).  Arithmetic on
float16 / bfloat16 runs in float32 where the CPU has none of its own
(LLVM promotes it); bench/lowp.py measures the products.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir import types as T
from ....ir.pass_manager import option
from . import GraphFunctionPass, defining_constant

ALLOW = ("nn.dense", "nn.matmul", "nn.batch_matmul", "nn.contrib_dense_pack", "nn.conv1d", "nn.conv2d",
         "nn.conv3d", "nn.conv1d_transpose", "nn.conv2d_transpose", "nn.conv3d_transpose")
DENY = ("nn.softmax", "nn.log_softmax", "nn.layer_norm", "nn.batch_norm", "nn.group_norm", "nn.instance_norm",
        "nn.l2_normalize", "nn.lrn", "sum", "mean", "variance", "std", "prod", "logsumexp", "cumsum", "cumprod",
        "exp", "log", "log2", "log10", "log1p", "expm1", "power", "sqrt", "rsqrt", "erf", "erfinv", "tan",
        "sinh", "cosh", "sin", "cos", "atan", "tanh", "sigmoid", "nn.attention", "divide", "image.resize2d")
LOW = {"float16": T.f16, "bfloat16": T.bf16}
NAMES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32"}


@dataclass
class ToMixedPrecision(GraphFunctionPass):
    """Run products in float16/bfloat16 with float32 accumulation."""

    NAME = "to-mixed-precision"
    dtype: str = option("float16", "the low type: float16 or bfloat16")
    allow: list[str] = option([], "ops always run in the low type (empty: the products)")
    deny: list[str] = option([], "ops never run in it (empty: softmax, norms, reductions, exp, log, ...)")

    def validate(self):
        if self.dtype not in LOW:
            raise ValueError(f"dtype must be float16 or bfloat16, got '{self.dtype}'")

    def run_on(self, func, ctx):
        low = LOW[self.dtype]
        allow, deny = set(self.allow or ALLOW), set(self.deny or DENY)
        stats = _Converter(low, allow, deny).block(func.regions[0].blocks[0])
        for k, n in stats.items():
            ctx.stat(self, k, n)


def _element(v):
    """The element type of a tensor value, None for anything else."""
    return v.type.element_type if isinstance(v.type, T.TensorType) else None


class _Converter:
    def __init__(self, low, allow, deny):
        self.low, self.allow, self.deny = low, allow, deny
        self.stats = {"ops-in-low-precision": 0, "casts-inserted": 0}
        self.sums = {}   # a product's result cast down -> its float32 sums

    def cast(self, v, to, anchor, after=False):
        from ..ops.elemwise import CastOp
        op = CastOp.build(v, dtype=NAMES[str(to)], loc=anchor.loc)
        (anchor.parent.insert_after if after else anchor.parent.insert_before)(anchor, op)
        self.stats["casts-inserted"] += 1
        return op.results[0]

    def block(self, block):
        from ..ops.base import RelayOp
        from ..ops.function import ReturnOp
        for op in list(block.ops):
            if isinstance(op, ReturnOp):
                for i, v in enumerate(op.operands):
                    if _element(v) is self.low:
                        op.set_operand(i, self.cast(v, T.f32, op))
                continue
            if op.name == "relay.get_item" and op.results[0].type != op.operands[0].type.types[op.attributes["index"]]:
                # an element of a tuple an earlier op now makes in low
                # precision (split): its type follows, and its users see it
                self.rebuild(op, list(op.operands))
                continue
            if not isinstance(op, RelayOp) or op.regions:
                self.up(op)
                continue
            name = op.op_name
            lows = [v for v in op.operands if _element(v) is self.low]
            f32s = [v for v in op.operands if _element(v) is T.f32]
            if name in self.allow and (lows or f32s) and "out_dtype" in op.attributes:
                self.product(op)
            elif name in self.deny or not lows or name == "cast":
                self.up(op)
            elif all(defining_constant(v) is not None for v in f32s):
                # constants (a bias) cast down with it: --fold-constant folds the casts
                ops = [self.cast(v, self.low, op) if v in f32s else v for v in op.operands]
                if self.rebuild(op, ops) is not None:
                    self.stats["ops-in-low-precision"] += 1
            else:
                self.up(op)
        return self.stats

    def up(self, op):
        """Low-precision operands of `op` cast back to float32 (a product's
        float32 sums are used as they are, not rounded down and up)."""
        for i, v in enumerate(op.operands):
            if _element(v) is self.low:
                src = self.sums.get(v)
                op.set_operand(i, src if src is not None else self.cast(v, T.f32, op))

    def product(self, op):
        """Operands cast down, float32 sums, the result cast down after."""
        if any(_element(v) is not None and T.is_float(_element(v)) and _element(v) not in (T.f32, self.low)
               for v in op.operands):
            return self.up(op)   # a float64 operand: left alone
        ops = [self.cast(v, self.low, op) if _element(v) is T.f32 else v for v in op.operands]
        attrs = dict(op.attributes)
        attrs["out_dtype"] = "float32"
        new = self.rebuild(op, ops, attrs)
        if new is None:
            return
        r = new.results[0]
        users = list(r.uses)
        down = self.cast(r, self.low, new, after=True)
        r.replace_uses_if(down, lambda u: u in users)
        self.sums[down] = r
        self.stats["ops-in-low-precision"] += 1

    def rebuild(self, op, operands, attrs=None):
        """`op` again over `operands`, its result types inferred anew; None
        (and `op` kept, in float32) where the op does not take them."""
        from ....ir.diagnostics import DiagnosticError
        attrs = dict(op.attributes) if attrs is None else attrs
        try:
            new = type(op).build(*operands, loc=op.loc, **attrs)
        except DiagnosticError:
            for v in operands:   # the casts made for it, unused now
                d = v.defining_op()
                if d is not None and not v.has_uses() and v not in op.operands:
                    d.erase()
            self.up(op)
            return None
        op.parent.insert_before(op, new)
        for a, b in zip(op.results, new.results):
            a.replace_all_uses_with(b)
            b.name = a.name
        op.erase()
        return new
