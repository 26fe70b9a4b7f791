"""Realize: simulated_quantize points become qnn ops (TVM's QuantizeRealize).

TVM's realize (src/relay/quantize/realize.cc) tracks, for each value, an
integer tensor with its ``dom_scale`` (a QRealizeIntExpr) and emits shifts,
multiplies and clips directly.  Here the same walk emits qnn ops, which say
what they compute and lower to the same arithmetic (qnn_lower.py):

    simulated_quantize of a float       qnn.quantize(x, dom_scale, 0)
    simulated_quantize of an integer    qnn.requantize(q, scale, 0, dom_scale, 0)
    nn.conv2d / nn.dense                qnn.conv2d / qnn.dense on the int8 operands,
                                        int32 out at scale s_lhs * s_rhs
    add, nn.bias_add                    both sides qnn.requantize'd (or cast) to int32
                                        at the smaller scale, then the op
    multiply                            both sides cast to int32; scale s_l * s_r
    nn.relu                             the op on the integers, same scale
    clip                                bounds divided by the scale
    nn.max_pool2d                       cast to dtype_input, the op
    nn.avg_pool2d, nn.global_avg_pool2d cast to int32, the op
    reshape, transpose, strided_slice,
    nn.batch_flatten                    the op (on a per-tensor scale)
    concatenate                         all inputs to int32 at the smallest scale
    anything else, and the results      qnn.dequantize(q, scale, 0) back to float

Quantization is symmetric (zero points 0).  A value's scale is a scalar
or, after a per-channel weight, a vector along one axis (the conv's output
channels): elementwise ops keep it, and where an op would move that axis
(reshape, ...) or needs one scale (clip, concatenate, an 8-bit operand),
the value is first requantized to one scale, the smallest of the vector.
Where both sides of an add carry a scale, the result takes the elementwise
smaller one (TVM's ChooseDomScale).  An op whose type relation refuses
integers falls back to float.

Differences from TVM, all in the direction of precision: adds and
concatenates always run in int32 (TVM may stay in int8), a concatenate of
more than two inputs uses the smallest input scale (TVM a fixed
global_scale / 2^31), and qnn.quantize clamps to the dtype's full range
(-128 .. 127) where simulated_quantize clamps to +-127.
"""

from __future__ import annotations

from .....ir.builder import Builder
from .....ir.diagnostics import DiagnosticError
from .....ir.registry import get_op_class
from ...ops.base import RELAY_PREFIX
from .. import defining_constant, erase_if_dead
from ...ops.function import ConstantOp
from ...ops.nn import BiasAddOp
from ...ops.qnn import SimulatedQuantizeOp


class QVal:
    """An integer tensor standing for ``scale * value`` (zero point 0)."""

    __slots__ = ("value", "scale", "axis", "dtype")

    def __init__(self, value, scale, axis, dtype):
        import numpy as np
        self.value = value
        self.scale = np.asarray(scale, np.float32)
        if self.scale.size == 1:
            self.scale = self.scale.reshape(())
        self.axis = axis if self.scale.ndim else None
        self.dtype = dtype

    @property
    def per_tensor(self) -> bool:
        return self.scale.ndim == 0


def op_class(name):
    cls = get_op_class(RELAY_PREFIX + name)
    if cls is None:
        raise RuntimeError(f"quantize needs the relay op '{name}', which is not registered")
    return cls


class Realizer:
    def __init__(self, cfg, func):
        self.cfg = cfg
        self.func = func
        self.env: dict = {}          # value -> QVal
        self.floats: dict = {}       # value -> its dequantized float value
        self.consts: dict = {}       # (dtype, shape, bytes) -> constant value
        self.const_ops: list = []
        self.dead: list = []         # ops replaced, erased at the end
        self.anchor = func.body.first
        self.requantized: dict = {}  # (value, scale, dtype, axis) -> QVal
        self.rules = {
            "nn.conv2d": self.conv2d, "nn.dense": self.dense, "add": self.add, "nn.bias_add": self.add,
            "multiply": self.multiply, "nn.relu": self.same_scale, "clip": self.clip,
            "nn.max_pool2d": self.max_pool, "nn.max_pool1d": self.max_pool,
            "nn.avg_pool2d": self.avg_pool, "nn.global_avg_pool2d": self.avg_pool,
            "reshape": self.tensor_scale, "transpose": self.tensor_scale,
            "strided_slice": self.tensor_scale, "nn.batch_flatten": self.tensor_scale,
            "concatenate": self.concatenate,
        }

    # -- the walk ---------------------------------------------------------------------------

    def run(self):
        for op in list(self.func.body.ops):
            if isinstance(op, SimulatedQuantizeOp):
                self.simulated_quantize(op)
                continue
            name = op.name[len(RELAY_PREFIX):] if op.name.startswith(RELAY_PREFIX) else op.name
            rule = self.rules.get(name)
            if rule is not None and op.operands and all(v in self.env for v in op.operands):
                q = rule(op, Builder.before(op))
                if q is not None:
                    q.value.name = op.results[0].name      # keep the user's names
                    self.env[op.results[0]] = q
                    self.dead.append(op)
                    continue
            for i, v in enumerate(op.operands):
                if v in self.env:
                    op.set_operand(i, self.to_float(v, op))
        for op in reversed(self.dead):
            if all(not r.uses for r in op.results):
                used = [d for d in (v.defining_op() for v in op.operands) if d is not None]
                op.erase()
                erase_if_dead([d for d in used if isinstance(d, ConstantOp)])
        erase_if_dead(self.const_ops)

    # -- building blocks ------------------------------------------------------------------------

    def const(self, array, name=None):
        """A constant at the top of the function, shared by equal values."""
        import numpy as np
        a = np.array(array, copy=True)
        key = (a.dtype.str, a.shape, a.tobytes())
        v = self.consts.get(key)
        if v is None:
            op = ConstantOp.get(a)
            self.func.body.insert_before(self.anchor, op)
            v = op.results[0]
            v.name = name
            self.consts[key] = v
            self.const_ops.append(op)
        return v

    def scale_const(self, scale):
        import numpy as np
        return self.const(np.asarray(scale, np.float32), "scale")

    def zero(self):
        import numpy as np
        return self.const(np.zeros((), np.int32), "zero")

    def to_float(self, v, before):
        f = self.floats.get(v)
        if f is None:
            q = self.env[v]
            from ...ops.qnn import DequantizeOp
            b = Builder.before(before)
            f = b.create(DequantizeOp, q.value, self.scale_const(q.scale), self.zero(),
                         axis=q.axis if q.axis is not None else -1)
            self.floats[v] = f
        return f

    def requantize(self, b, q, scale, dtype, axis=None):
        """`q` as `dtype` at `scale` (a scalar, or a vector along `axis`);
        one conversion per (value, scale, dtype), shared by its users."""
        import numpy as np
        from ...ops.qnn import RequantizeOp
        scale = np.asarray(scale, np.float32)
        if scale.size == 1:
            scale = scale.reshape(())
        axis = axis if scale.ndim else None
        same_scale = q.scale.shape == scale.shape and np.array_equal(q.scale, scale) and q.axis == axis
        if same_scale and q.dtype == dtype:
            return q
        key = (q.value, scale.tobytes(), scale.shape, dtype, axis)
        done = self.requantized.get(key)
        if done is not None:
            return done
        if same_scale:
            v = b.create(op_class("cast"), q.value, dtype=dtype)
        else:
            if q.axis is not None and axis is not None and q.axis != axis:
                q = self.per_tensor(b, q)
            rq_axis = q.axis if q.axis is not None else (axis if axis is not None else -1)
            v = b.create(RequantizeOp, q.value, self.scale_const(q.scale), self.zero(), self.scale_const(scale),
                         self.zero(), axis=rq_axis, rounding=self.cfg.rounding, out_dtype=dtype)
        out = self.requantized[key] = QVal(v, scale, axis, dtype)
        return out

    def per_tensor(self, b, q):
        """`q` at one scale, the smallest of its vector (no precision lost)."""
        import numpy as np
        if q.per_tensor:
            return q
        return self.requantize(b, q, np.float32(q.scale.min()), self.cfg.dtype_activation)

    def forward(self, op, b, operands, **changes):
        """The op again, on new operands; None when it refuses them."""
        attrs = dict(op.attributes)
        attrs.update(changes)
        try:
            return b.create(type(op), *operands, **attrs)
        except DiagnosticError:
            return None

    def channel_axis(self, op):
        """The channel axis of a conv/pool result, from its output layout."""
        from ...layouts import Layout
        a = op.attributes
        lay = a.get("out_layout") or a.get("data_layout") or a.get("layout") or "NCHW"
        try:
            return Layout(lay).index("C")
        except ValueError:
            return 1

    # -- simulated_quantize ----------------------------------------------------------------------

    def simulated_quantize(self, op):
        import numpy as np
        from ...ops.qnn import QuantizeOp
        data = op.operands[0]
        kind = op.attributes["kind"]
        self.dead.append(op)
        if kind == "identity":
            if data in self.env:
                self.env[op.results[0]] = self.env[data]
            else:
                op.results[0].replace_all_uses_with(data)
            return
        c = defining_constant(op.operands[1])
        if c is None:
            raise op.error("has no calibrated dom_scale constant")
        scale = np.asarray(c.attributes["value"].array, np.float32)
        dtype = self.cfg.dtype(kind)
        b = Builder.before(op)
        rank = len(data.type.shape)
        axis = op.attributes["axis"] % rank if scale.size > 1 else None
        if data in self.env:
            q = self.requantize(b, self.env[data], scale, dtype, axis)
        else:
            v = b.create(QuantizeOp, data, self.scale_const(scale), self.zero(),
                         axis=axis if axis is not None else -1, out_dtype=dtype)
            q = QVal(v, scale, axis, dtype)
        bound = self.cfg.clip_bound(kind)
        if bound < np.iinfo(dtype).max:
            # nbit below the dtype's width: TVM's clip to +-(2^(nbit-1) - 1)
            q = QVal(b.create(op_class("clip"), q.value, a_min=float(-bound), a_max=float(bound)),
                     q.scale, q.axis, q.dtype)
        if q.value.name is None:           # a new value (not one passed through)
            q.value.name = op.results[0].name
        self.env[op.results[0]] = q

    # -- rules ---------------------------------------------------------------------------------------

    def products(self, op):
        ql, qr = self.env[op.operands[0]], self.env[op.operands[1]]
        if not ql.per_tensor or ql.dtype not in ("int8", "int16") or qr.dtype not in ("int8", "int16"):
            return None
        return ql, qr

    def conv2d(self, op, b):
        from ...ops.qnn import QnnConv2DOp
        pair = self.products(op)
        if pair is None:
            return None
        ql, qr = pair
        attrs = {k: v for k, v in op.attributes.items() if k != "out_dtype"}
        v = b.create(QnnConv2DOp, ql.value, qr.value, self.zero(), self.zero(), self.scale_const(ql.scale),
                     self.scale_const(qr.scale), out_dtype=self.cfg.dtype_activation, **attrs)
        return QVal(v, ql.scale * qr.scale, self.channel_axis(op), self.cfg.dtype_activation)

    def dense(self, op, b):
        from ...ops.qnn import QnnDenseOp
        pair = self.products(op)
        if pair is None:
            return None
        ql, qr = pair
        v = b.create(QnnDenseOp, ql.value, qr.value, self.zero(), self.zero(), self.scale_const(ql.scale),
                     self.scale_const(qr.scale), units=op.attributes.get("units"),
                     out_dtype=self.cfg.dtype_activation)
        return QVal(v, ql.scale * qr.scale, len(v.type.shape) - 1, self.cfg.dtype_activation)

    def side_axis(self, op, side, out_axis):
        """The axis of operand `side` that output axis `out_axis` maps to
        (numpy broadcasting; bias_add aligns its bias with `axis`), or None
        when that operand cannot carry a scale vector along it."""
        out_rank = len(op.results[0].type.shape)
        t = op.operands[side].type
        if isinstance(op, BiasAddOp) and side == 1:
            a = op.attributes.get("axis", 1) % out_rank
            return 0 if a == out_axis else None
        a = out_axis - (out_rank - len(t.shape))
        return a if a >= 0 else None

    def out_axis_of(self, op, side, q):
        """The output axis that operand `side`'s scale vector runs along."""
        if q.axis is None:
            return None
        if isinstance(op, BiasAddOp) and side == 1:
            return op.attributes.get("axis", 1) % len(op.results[0].type.shape)
        return q.axis + len(op.results[0].type.shape) - len(op.operands[side].type.shape)

    def unify(self, op, b, sides):
        """Operands `sides` in int32 at a common scale (elementwise smaller);
        returns (quantized values, scale, output axis)."""
        import numpy as np
        act = self.cfg.dtype_activation
        qs = [self.env[op.operands[i]] for i in sides]
        axes = {self.out_axis_of(op, i, q) for i, q in zip(sides, qs)} - {None}
        out_axis = axes.pop() if len(axes) == 1 else None

        def carries(i):
            """Can operand i hold a scale vector along out_axis?"""
            a = self.side_axis(op, i, out_axis)
            return a is not None and op.operands[i].type.shape[a] != 1

        if out_axis is None or not all(carries(i) for i in sides):
            qs = [self.per_tensor(b, q) for q in qs]
            out_axis = None
        target = qs[0].scale
        for q in qs[1:]:
            target = np.minimum(target, q.scale)
        out = []
        for i, q in zip(sides, qs):
            ax = self.side_axis(op, i, out_axis) if out_axis is not None else None
            out.append(self.requantize(b, q, target, act, ax).value)
        return out, target, out_axis

    def add(self, op, b):
        vals, scale, axis = self.unify(op, b, (0, 1))
        v = self.forward(op, b, vals)
        return None if v is None else QVal(v, scale, axis, self.cfg.dtype_activation)

    def multiply(self, op, b):
        act = self.cfg.dtype_activation
        ql, qr = self.env[op.operands[0]], self.env[op.operands[1]]
        al, ar = self.out_axis_of(op, 0, ql), self.out_axis_of(op, 1, qr)
        if al is not None and ar is not None and al != ar:
            ql, qr = self.per_tensor(b, ql), self.per_tensor(b, qr)
            al = ar = None
        vals = [self.requantize(b, q, q.scale, act, q.axis).value for q in (ql, qr)]
        v = self.forward(op, b, vals)
        if v is None:
            return None
        return QVal(v, ql.scale * qr.scale, al if al is not None else ar, act)

    def same_scale(self, op, b):
        q = self.env[op.operands[0]]
        v = self.forward(op, b, [q.value])
        return None if v is None else QVal(v, q.scale, q.axis, q.dtype)

    def tensor_scale(self, op, b):
        q = self.per_tensor(b, self.env[op.operands[0]])
        v = self.forward(op, b, [q.value])
        return None if v is None else QVal(v, q.scale, None, q.dtype)

    def clip(self, op, b):
        q = self.per_tensor(b, self.env[op.operands[0]])
        s = float(q.scale)
        v = self.forward(op, b, [q.value], a_min=op.attributes["a_min"] / s, a_max=op.attributes["a_max"] / s)
        return None if v is None else QVal(v, q.scale, None, q.dtype)

    def max_pool(self, op, b):
        q = self.env[op.operands[0]]
        dt = self.cfg.dtype_input
        if q.dtype != dt:
            q = self.requantize(b, q, q.scale, dt, q.axis)
        v = self.forward(op, b, [q.value])
        return None if v is None else QVal(v, q.scale, q.axis, dt)

    def avg_pool(self, op, b):
        q = self.env[op.operands[0]]
        act = self.cfg.dtype_activation
        q = self.requantize(b, q, q.scale, act, q.axis)
        v = self.forward(op, b, [q.value])
        return None if v is None else QVal(v, q.scale, q.axis, act)

    def concatenate(self, op, b):
        import numpy as np
        qs = [self.per_tensor(b, self.env[v]) for v in op.operands]
        target = np.float32(min(float(q.scale) for q in qs))
        act = self.cfg.dtype_activation
        vals = [self.requantize(b, q, target, act).value for q in qs]
        v = self.forward(op, b, vals)
        return None if v is None else QVal(v, target, None, act)


def realize(cfg, func):
    """Realize the annotated, calibrated relay.func `func` in place."""
    Realizer(cfg, func).run()
