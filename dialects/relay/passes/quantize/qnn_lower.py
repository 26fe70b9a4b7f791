"""Lower qnn ops to relay integer arithmetic (TVM's QNN CanonicalizeOps).

Each qnn op becomes the plain relay ops that compute it; the result equals
the qnn op's own reference (``compute``) bit for bit, since both follow
ops/qnn_math.py step by step (the tests check it through the interpreter):

    qnn.quantize     divide(x, s) -> round -> add(z) -> clip -> cast
    qnn.dequantize   cast(i32) -> subtract(z) -> cast(f32) -> multiply(s)
    qnn.requantize   int64: cast(i64) -> subtract(z_in) -> left_shift -> multiply(m)
                       -> add(2^(n-1) [+ right_shift(p, 63) for TONEAREST])
                       -> right_shift(n) -> add(z_out) -> clip -> cast
                     float32/64: cast -> subtract -> multiply -> add -> floor(v + 0.5)
                       (UPWARD) or sign(v) * floor(|v| + 0.5) (TONEAREST) -> clip -> cast
    qnn.conv2d       zero points 0 and one dtype: nn.conv2d(x, w) {out_dtype = "int32"}
                     (int8 in, int32 out); otherwise TVM's fallback:
                     nn.conv2d(cast(x) - z_x, cast(w) - z_w) in int16 (int32 when the
                     differences could overflow int16)
    qnn.dense, qnn.batch_matmul   the same with nn.dense / nn.batch_matmul
    qnn.add, qnn.subtract   both sides requantized to the output parameters in int64,
                     l + r - z_out (l - r + z_out), clip, cast
    qnn.mul          (cast(l) - z_l) * (cast(r) - z_r) in int32, then requantized
                     from s_l * s_r
    qnn.concatenate  every input requantized to the output, then concatenate

Per-axis parameters become constants shaped ``(n, 1, .., 1)`` that broadcast
along the axis; uniform vectors become scalars.  Steps that would do
nothing (a zero point of 0, a left shift of 0, a multiplier of exactly 1)
are left out.  Scales and zero points must be constants, except the scalar
scale and zero point of qnn.quantize / qnn.dequantize (ONNX's dynamic
quantization), which may be computed values.

TVM lowers qnn.conv2d with non-zero zero points to four terms so that the
convolution itself stays int8; here the fallback form (which TVM uses for
per-channel kernel zero points) serves for all: exact, and fewer ops.  The
quantize pass emits zero points of 0, so its convolutions run on int8.
"""

from __future__ import annotations

from dataclasses import dataclass

from .....ir import types as T
from .....ir.builder import Builder
from .....ir.pass_manager import ModulePass
from ...ops import qnn as QO
from ...ops import qnn_math as Q
from .. import defining_constant, erase_if_dead, relay_functions
from .realize import op_class

QNN_PREFIX = "relay.qnn."


class Lowering:
    """Builds the lowered form of the qnn ops of one function."""

    def __init__(self, func):
        self.func = func
        self.consts: dict = {}
        self.last_const: dict = {}   # block -> the last constant placed at its top

    # -- building blocks ---------------------------------------------------------------

    def const(self, b, array, name=None):
        """A constant at the top of the lowered op's block, shared by equal values."""
        import numpy as np
        from ...ops.function import ConstantOp
        a = np.array(array, copy=True)
        if a.ndim and a.size and np.all(a == a.reshape(-1)[0]):
            a = a.reshape(-1)[:1].reshape(())           # a uniform vector is a scalar
        block = b.block
        key = (id(block), a.dtype.str, a.shape, a.tobytes())
        v = self.consts.get(key)
        if v is None:
            op = ConstantOp.get(a)
            last = self.last_const.get(id(block))
            if last is None:
                block.prepend(op)
            else:
                block.insert_after(last, op)
            self.last_const[id(block)] = op
            v = op.results[0]
            v.name = name
            self.consts[key] = v
        return v

    def op(self, b, name, *operands, **attrs):
        if name == "cast" and operands[0].type.element_type is T.from_dtype_name(attrs["dtype"]):
            return operands[0]          # already that dtype
        return b.create(op_class(name), *operands, **attrs)

    def param(self, op, index, what=None):
        """The constant array of operand `index`, or an error naming it."""
        c = defining_constant(op.operands[index])
        if c is None:
            what = what or type(op).OPERANDS[index]
            raise op.error(f"{what} must be a constant to lower {op.name[len('relay.'):]} to integer arithmetic")
        return c.attributes["value"].array

    @staticmethod
    def axis(op, name, rank):
        a = op.attributes[name]
        return a % rank if rank else 0

    # -- shared pieces -------------------------------------------------------------------------

    def fixed_point(self, b, v, in_scale, out_scale, rank, axis, rounding):
        """int64 `v` times in_scale / out_scale (qnn_math.fixed_point_multiply)."""
        import numpy as np
        fp = Q.FixedPoint(in_scale, out_scale)
        m, left, total, rnd = fp.at(rank, axis)
        if fp.needs_left_shift:
            v = self.op(b, "left_shift", v, self.const(b, left.astype(np.int64), "shift"))
        p = self.op(b, "multiply", v, self.const(b, m.astype(np.int64), "multiplier"))
        bias = self.const(b, rnd.astype(np.int64), "round")
        if rounding == "TONEAREST":
            bias = self.op(b, "add", bias, self.op(b, "right_shift", p, self.const(b, np.int64(63), "sign_shift")))
        return self.op(b, "right_shift", self.op(b, "add", p, bias), self.const(b, total.astype(np.int64), "shift"))

    def requant64(self, b, x, s_in, z_in, s_out, z_out, axis, rounding, lo, hi):
        """`x` requantized, as int64 clipped to [lo, hi] (the int64 path of
        qnn_math.requantize without its final cast)."""
        import numpy as np
        rank = len(x.type.shape)
        z_in = np.asarray(z_in, np.int64)
        z_out = np.asarray(z_out, np.int64)
        identity = bool(np.all(Q.float_multipliers(s_in, s_out) == 1.0)) and x.type.element_type.width <= 32
        v = self.op(b, "cast", x, dtype="int64")
        same_zp = np.unique(z_in).size == 1 and np.unique(z_out).size == 1 and z_in.flat[0] == z_out.flat[0]
        lo_x, hi_x = Q.qrange(x.type.dtype)
        if identity and same_zp and lo <= lo_x and hi_x <= hi:
            return v
        if np.any(z_in):
            v = self.op(b, "subtract", v, self.const(b, Q.per_axis(z_in, rank, axis), "zero_point"))
        if not identity:
            v = self.fixed_point(b, v, s_in, s_out, rank, axis, rounding)
        if np.any(z_out):
            v = self.op(b, "add", v, self.const(b, Q.per_axis(z_out, rank, axis), "zero_point"))
        return self.op(b, "clip", v, a_min=float(lo), a_max=float(hi))

    def saturate_cast(self, b, v, dtype):
        lo, hi = Q.qrange(dtype)
        if T.is_float(v.type.element_type):
            lo, hi = Q.float_bounds(lo, hi, v.type.dtype)
        return self.op(b, "cast", self.op(b, "clip", v, a_min=float(lo), a_max=float(hi)), dtype=T_name(dtype))

    # -- the ops ------------------------------------------------------------------------------------

    def quantize(self, b, op):
        import numpy as np
        x = op.operands[0]
        rank = len(x.type.shape)
        axis = self.axis(op, "axis", rank)
        ft = x.type.dtype
        out = op.results[0].type.dtype
        lo, hi = Q.float_bounds(*Q.qrange(out), ft)
        s = self.maybe_param(op, 1)
        z = self.maybe_param(op, 2)
        sv = (self.const(b, Q.per_axis(np.asarray(s).astype(ft), rank, axis), "scale") if s is not None
              else self.dynamic(b, op.operands[1], ft))
        v = self.op(b, "round", self.op(b, "divide", x, sv))
        if z is None:
            v = self.op(b, "add", v, self.dynamic(b, op.operands[2], ft))
        elif np.any(z):
            v = self.op(b, "add", v, self.const(b, Q.per_axis(np.asarray(z).astype(ft), rank, axis), "zero_point"))
        v = self.op(b, "clip", v, a_min=float(lo), a_max=float(hi))
        return self.op(b, "cast", v, dtype=T_name(out))

    def dequantize(self, b, op):
        import numpy as np
        x = op.operands[0]
        rank = len(x.type.shape)
        axis = self.axis(op, "axis", rank)
        out = op.results[0].type.dtype
        s = self.maybe_param(op, 1)
        z = self.maybe_param(op, 2)
        v = self.op(b, "cast", x, dtype="int32")
        if z is None:
            v = self.op(b, "subtract", v, self.dynamic(b, op.operands[2], np.dtype(np.int32)))
        elif np.any(z):
            v = self.op(b, "subtract", v, self.const(b, Q.per_axis(np.asarray(z, np.int32), rank, axis), "zero_point"))
        v = self.op(b, "cast", v, dtype=T_name(out))
        sv = (self.const(b, Q.per_axis(np.asarray(s, np.float32).astype(out), rank, axis), "scale") if s is not None
              else self.dynamic(b, op.operands[1], out))
        return self.op(b, "multiply", v, sv)

    def maybe_param(self, op, index):
        c = defining_constant(op.operands[index])
        if c is not None:
            return c.attributes["value"].array
        t = op.operands[index].type
        if any(d != 1 for d in t.shape):
            raise op.error(f"{type(op).OPERANDS[index]} must be a constant to lower a per-axis "
                           f"{op.name[len('relay.'):]} to integer arithmetic")
        return None

    def dynamic(self, b, v, dtype):
        """A computed scalar parameter in `dtype`."""
        import numpy as np
        if v.type.dtype != np.dtype(dtype):
            v = self.op(b, "cast", v, dtype=T_name(dtype))
        return v

    def requantize(self, b, op):
        import numpy as np
        x = op.operands[0]
        rank = len(x.type.shape)
        axis = self.axis(op, "axis", rank)
        s_in, z_in, s_out, z_out = (self.param(op, i) for i in range(1, 5))
        out = op.results[0].type.dtype
        lo, hi = Q.qrange(out)
        cd = op.effective_compute_dtype
        if cd == "int64":
            v = self.requant64(b, x, s_in, z_in, s_out, z_out, axis, op.effective_rounding, lo, hi)
            return self.op(b, "cast", v, dtype=T_name(out))
        ft = np.dtype(cd)
        v = self.op(b, "cast", x, dtype=cd)
        if np.any(z_in):
            zf = Q.per_axis(np.asarray(z_in).astype(ft), rank, axis)
            v = self.op(b, "subtract", v, self.const(b, zf, "zero_point"))
        mult = Q.float_multipliers(s_in, s_out).astype(ft)
        v = self.op(b, "multiply", v, self.const(b, Q.per_axis(mult, rank, axis), "multiplier"))
        if np.any(z_out):
            v = self.op(b, "add", v, self.const(b, Q.per_axis(np.asarray(z_out).astype(ft), rank, axis), "zero_point"))
        half = self.const(b, ft.type(0.5), "half")
        if op.effective_rounding == "UPWARD":
            v = self.op(b, "floor", self.op(b, "add", v, half))
        else:
            mag = self.op(b, "floor", self.op(b, "add", self.op(b, "abs", v), half))
            v = self.op(b, "multiply", self.op(b, "sign", v), mag)
        return self.saturate_cast(b, v, out)

    def shifted(self, b, x, z, wide, rank, axis):
        """cast(x, wide) - z (z a scalar or a vector along `axis`)."""
        import numpy as np
        v = self.op(b, "cast", x, dtype=wide)
        if np.any(z):
            v = self.op(b, "subtract", v, self.const(b, Q.per_axis(np.asarray(z).astype(wide), rank, axis),
                                                     "zero_point"))
        return v

    @staticmethod
    def wide_dtype(x, w, z_x, z_w):
        """int16 when every ``q - z`` fits it (TVM's choice), else int32."""
        import numpy as np
        for t, z in ((x, z_x), (w, z_w)):
            lo, hi = Q.qrange(t.type.dtype)
            z = np.asarray(z, np.int64)
            if lo - z.max() < -32768 or hi - z.min() > 32767:
                return "int32"
        return "int16"

    def product(self, b, op, float_op, w_axis, attrs):
        """conv2d / dense / batch_matmul: zero points subtracted when any."""
        import numpy as np
        x, w = op.operands[0], op.operands[1]
        z_x, z_w = self.param(op, 2), self.param(op, 3)
        if not np.any(z_x) and not np.any(z_w) and x.type.element_type is w.type.element_type:
            return self.op(b, float_op, x, w, **attrs)
        wide = self.wide_dtype(x, w, z_x, z_w)
        xs = self.shifted(b, x, z_x, wide, len(x.type.shape), 0)
        ws = self.shifted(b, w, z_w, wide, len(w.type.shape), w_axis)
        return self.op(b, float_op, xs, ws, **attrs)

    def conv2d(self, b, op):
        return self.product(b, op, "nn.conv2d", op.kernel_out_axis(), dict(op.attributes))

    def dense(self, b, op):
        return self.product(b, op, "nn.dense", 0, dict(op.attributes))

    def batch_matmul(self, b, op):
        return self.product(b, op, "nn.batch_matmul", 0, dict(op.attributes))

    def binary_sides(self, b, op):
        l, r = op.operands[0], op.operands[1]
        s_l, z_l, s_r, z_r, s_o, z_o = (self.param(op, i) for i in range(2, 8))
        lo, hi = Q.qrange("int32")
        lq = self.requant64(b, l, s_l, z_l, s_o, z_o, self.axis(op, "lhs_axis", len(l.type.shape)), "UPWARD", lo, hi)
        rq = self.requant64(b, r, s_r, z_r, s_o, z_o, self.axis(op, "rhs_axis", len(r.type.shape)), "UPWARD", lo, hi)
        return lq, rq, z_o

    def add(self, b, op):
        import numpy as np
        lq, rq, z_o = self.binary_sides(b, op)
        v = self.op(b, "add", lq, rq)
        if np.any(z_o):
            v = self.op(b, "subtract", v, self.const(b, np.asarray(z_o, np.int64).reshape(()), "zero_point"))
        return self.saturate_cast(b, v, op.results[0].type.dtype)

    def subtract(self, b, op):
        import numpy as np
        lq, rq, z_o = self.binary_sides(b, op)
        v = self.op(b, "subtract", lq, rq)
        if np.any(z_o):
            v = self.op(b, "add", v, self.const(b, np.asarray(z_o, np.int64).reshape(()), "zero_point"))
        return self.saturate_cast(b, v, op.results[0].type.dtype)

    def mul(self, b, op):
        l, r = op.operands[0], op.operands[1]
        s_l, z_l, s_r, z_r, s_o, z_o = (self.param(op, i) for i in range(2, 8))
        rl, rr = len(l.type.shape), len(r.type.shape)
        lz = self.shifted(b, l, z_l, "int32", rl, self.axis(op, "lhs_axis", rl))
        rz = self.shifted(b, r, z_r, "int32", rr, self.axis(op, "rhs_axis", rr))
        prod = self.op(b, "multiply", lz, rz)
        scale, axis = op.product_scale(rl, rr, s_l, s_r)
        out = op.results[0].type.dtype
        lo, hi = Q.qrange(out)
        v = self.requant64(b, prod, scale, 0, s_o, z_o, axis, "UPWARD", lo, hi)
        return self.op(b, "cast", v, dtype=T_name(out))

    def concatenate(self, b, op):
        n = op.num_inputs
        data = op.operands[:n]
        out = op.results[0].type.dtype
        lo, hi = Q.qrange(out)
        s_o, z_o = self.param(op, 3 * n, "output_scale"), self.param(op, 3 * n + 1, "output_zero_point")
        parts = []
        for i, d in enumerate(data):
            s = self.param(op, n + i, f"input scale {i}")
            z = self.param(op, 2 * n + i, f"input zero point {i}")
            v = self.requant64(b, d, s, z, s_o, z_o, 0, "UPWARD", lo, hi)
            parts.append(self.op(b, "cast", v, dtype=T_name(out)))
        return self.op(b, "concatenate", *parts, axis=op.attributes["axis"])

    LOWER = {
        QO.QuantizeOp: quantize, QO.DequantizeOp: dequantize, QO.RequantizeOp: requantize,
        QO.QnnConv2DOp: conv2d, QO.QnnDenseOp: dense, QO.QnnBatchMatmulOp: batch_matmul, QO.QnnAddOp: add,
        QO.QnnSubtractOp: subtract, QO.QnnMulOp: mul, QO.QnnConcatenateOp: concatenate,
    }

    def run(self) -> int:
        n = 0
        for op in [o for o in self.func.walk() if o.name.startswith(QNN_PREFIX)]:
            fn = self.LOWER.get(type(op))
            if fn is None:
                raise op.error("has no lowering to integer arithmetic")
            b = Builder.before(op)
            try:
                new = fn(self, b, op)
            except Q.ScaleError as err:
                raise op.error(str(err)) from None
            new.name = op.results[0].name
            op.results[0].replace_all_uses_with(new)
            params = [c for c in (defining_constant(v) for v in op.operands) if c is not None]
            op.erase()
            erase_if_dead(params)
            n += 1
        return n


def T_name(dtype) -> str:
    """A numpy dtype's TVM name (``int8``), for cast's dtype attribute."""
    import numpy as np
    return np.dtype(dtype).name


def lower_qnn(module) -> int:
    """Lower every qnn op in the module's relay functions; returns how many."""
    return sum(Lowering(f).run() for f in relay_functions(module))


@dataclass
class QnnCanonicalize(ModulePass):
    """Lower qnn ops to relay integer arithmetic (TVM's qnn CanonicalizeOps)."""

    NAME = "qnn-canonicalize"
    OP = "relay.func"

    def run(self, module, ctx):
        from ..infer_type import ensure_types
        ensure_types(module)
        super().run(module, ctx)

    def run_on(self, func, ctx):
        ctx.stat(self, "qnn-ops-lowered", Lowering(func).run())
