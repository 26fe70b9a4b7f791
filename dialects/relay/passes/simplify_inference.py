"""--simplify-inference: rewrite training-style ops for inference (TVM's SimplifyInference).

* ``get_item(nn.batch_norm(x, gamma, beta, mean, var), 0)`` becomes
  ``add(multiply(x, scale), shift)`` (TVM's BatchNormToInferUnpack) with

      scale = gamma / sqrt(var + epsilon)        (1 / sqrt(...) without `scale`)
      shift = beta - mean * scale                (- mean * scale without `center`)

  both expanded to broadcast along the channel axis (shape ``C x 1 x 1`` for
  NCHW).  When gamma, beta, mean and var are constants -- the usual case,
  weights -- scale and shift are computed here, in float64, and become two
  constants (``%<bn>_scale``, ``%<bn>_shift``); otherwise the arithmetic is
  emitted as TVM does, for --fold-constant.  Other projections of the
  batch_norm (the statistics) keep it alive; without them it is erased.
* ``get_item(nn.dropout(x), 0)`` is ``x``.
* ``nn.layer_norm``, ``nn.instance_norm`` and ``nn.group_norm`` expand to
  TVM's unpacked form: ``mean`` and ``variance(x, mean)`` over the
  normalised axes (keepdims), ``(x - mean) / sqrt(var + epsilon)``, times
  gamma, plus beta (expanded along the channel axis).  group_norm first
  reshapes ``N x C x ...`` to ``N x G x C/G x ...`` and back (static shapes
  only).
* ``nn.l2_normalize(x)`` is ``x / sqrt(max(sum(x * x, axis, keepdims), eps))``.

One sweep over each function's blocks in order; every rewrite is local, so
the pass is linear.  Numerics: the expansions compute in the data's dtype
(the reductions in float64, as the reference ops do) and agree with the
interpreter's values of the original ops within 1e-5.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import GraphFunctionPass, defining_constant
from ..ops.control import TupleGetItemOp
from ..ops.function import ConstantOp
from ..ops.nn import DropoutOp, L2NormalizeOp
from ..ops.norm import BatchNormOp, GroupNormOp, InstanceNormOp, LayerNormOp

NORMS = (LayerNormOp, InstanceNormOp, GroupNormOp)


@dataclass
class SimplifyInference(GraphFunctionPass):
    """Rewrite batch_norm, dropout and the norms for inference."""

    NAME = "simplify-inference"

    def run_on(self, func, ctx):
        from .fuse_ops import function_blocks
        s = Simplifier()
        for block in function_blocks(func):
            s.block(block)
        for name, n in s.stats.items():
            ctx.stat(self, name, n)


class Emitter:
    """Builds ops before `anchor`, with result types inferred."""

    def __init__(self, anchor):
        self.anchor = anchor

    def op(self, name, *operands, **attrs):
        from ....ir.registry import get_op_class
        cls = get_op_class("relay." + name)
        if cls is None:
            raise self.anchor.error(f"cannot be rewritten: the relay dialect has no '{name}' op")
        op = cls.build(*operands, loc=self.anchor.loc, **attrs)
        self.anchor.parent.insert_before(self.anchor, op)
        return op.results[0]

    def const(self, array, name=None):
        op = ConstantOp.get(array, key=name, loc=self.anchor.loc)
        self.anchor.parent.insert_before(self.anchor, op)
        if name:
            op.results[0].name = name
        return op.results[0]

    def scalar(self, value, like):
        import numpy as np

        from ....ir.types import to_numpy_dtype
        return self.const(np.array(value, dtype=to_numpy_dtype(like.type.element_type)))

    def expand(self, v, axis, ndim):
        """A 1-d per-channel `v` shaped to broadcast along `axis` of an
        ndim-d tensor (TVM's ExpandBiasToMatchAxis)."""
        pad = ndim - axis - 1
        if pad <= 0:
            return v
        c = defining_constant(v)
        if c is not None:
            arr = c.attributes["value"].array
            return self.const(arr.reshape(arr.shape + (1,) * pad), _derived(v, "expanded"))
        return self.op("expand_dims", v, axis=1, num_newaxis=pad)


def _derived(v, suffix):
    return f"{v.name}_{suffix}" if v.name and not v.name[0].isdigit() else None


class Simplifier:
    def __init__(self):
        self.stats = {"batch-norms-unpacked": 0, "dropouts-removed": 0, "norms-expanded": 0}
        self.unpacked = {}    # batch_norm op -> its inference value

    def block(self, block):
        for op in list(block.ops):
            if op.parent is None:
                continue
            if isinstance(op, TupleGetItemOp) and op.attributes["index"] == 0:
                src = op.operands[0].defining_op()
                if src is None:
                    continue
                if isinstance(src, BatchNormOp):
                    self.replace(op, self.batch_norm(src))
                    self.stats["batch-norms-unpacked"] += 1
                    _erase_if_unused(src)
                elif isinstance(src, DropoutOp):
                    self.replace(op, src.operands[0])
                    self.stats["dropouts-removed"] += 1
                    _erase_if_unused(src)
            elif isinstance(op, NORMS):
                v = self.norm(op)
                if v is not None:
                    self.replace(op, v)
                    self.stats["norms-expanded"] += 1
            elif isinstance(op, L2NormalizeOp):
                self.replace(op, self.l2_normalize(op))
                self.stats["norms-expanded"] += 1

    @staticmethod
    def replace(op, value):
        r = op.results[0]
        if value.name is None and r.name is not None:
            value.name = r.name
        r.replace_all_uses_with(value)
        op.erase()

    # -- batch_norm ------------------------------------------------------------------

    def batch_norm(self, bn):
        done = self.unpacked.get(bn)
        if done is not None:
            return done
        import numpy as np

        from ....ir.types import to_numpy_dtype
        x, gamma, beta, mean, var = bn.operands
        a = bn.attributes
        ndim = x.type.rank
        axis = bn.channel_axis(ndim)
        e = Emitter(bn)
        consts = [defining_constant(v) for v in (gamma, beta, mean, var)]
        base = bn.results[0].name if bn.results[0].name and not bn.results[0].name[0].isdigit() else None
        if None not in consts:
            g, b, m, v = (c.attributes["value"].array.astype(np.float64) for c in consts)
            scale = 1.0 / np.sqrt(v + a["epsilon"])
            if a["scale"]:
                scale = scale * g
            shift = -m * scale
            if a["center"]:
                shift = shift + b
            dt = to_numpy_dtype(x.type.element_type)
            tail = (1,) * (ndim - axis - 1)
            s = e.const(scale.astype(dt).reshape(scale.shape + tail), f"{base}_scale" if base else None)
            sh = e.const(shift.astype(dt).reshape(shift.shape + tail), f"{base}_shift" if base else None)
        else:
            t = e.op("sqrt", e.op("add", var, e.scalar(a["epsilon"], x)))
            s = e.op("divide", e.scalar(1.0, x), t)
            if a["scale"]:
                s = e.op("multiply", s, gamma)
            sh = e.op("multiply", e.op("negative", mean), s)
            if a["center"]:
                sh = e.op("add", sh, beta)
            s, sh = e.expand(s, axis, ndim), e.expand(sh, axis, ndim)
        out = e.op("add", e.op("multiply", x, s), sh)
        self.unpacked[bn] = out
        return out

    # -- layer / instance / group norm ---------------------------------------------------

    def norm(self, op):
        x, gamma, beta = op.operands
        t = x.type
        ndim = t.rank
        axis = op.channel_axis(ndim)
        a = op.attributes
        e = Emitter(op)
        data = x
        if isinstance(op, LayerNormOp):
            axes = [axis]
        elif isinstance(op, InstanceNormOp):
            axes = [i for i in range(1, ndim) if i != axis]
        else:
            if not t.is_static:
                return None   # the group reshape needs the static shape
            g = a["num_groups"]
            shape = list(t.shape)
            grouped = shape[:axis] + [g, shape[axis] // g] + shape[axis + 1:]
            data = e.op("reshape", x, newshape=grouped)
            axes = [i for i in range(1, ndim + 1) if i != axis]
        mean = e.op("mean", data, axis=axes, keepdims=True)
        var = e.op("variance", data, mean, axis=axes, keepdims=True)
        denom = e.op("sqrt", e.op("add", var, e.scalar(a["epsilon"], x)))
        out = e.op("divide", e.op("subtract", data, mean), denom)
        if data is not x:
            out = e.op("reshape", out, newshape=list(t.shape))
        if a["scale"]:
            out = e.op("multiply", out, e.expand(gamma, axis, ndim))
        if a["center"]:
            out = e.op("add", out, e.expand(beta, axis, ndim))
        return out

    def l2_normalize(self, op):
        (x,) = op.operands
        e = Emitter(op)
        axes = op.axes(x.type.rank)
        s = e.op("sum", e.op("multiply", x, x), axis=axes, keepdims=True)
        q = e.op("sqrt", e.op("maximum", s, e.scalar(op.attributes["eps"], x)))
        return e.op("divide", x, q)


def _erase_if_unused(op):
    """Erase a batch_norm / dropout nothing reads any more, and the
    constants (its statistics) only it read."""
    if op.parent is not None and all(not r.uses for r in op.results):
        producers = [v.defining_op() for v in op.operands]
        op.erase()
        for d in producers:
            if isinstance(d, ConstantOp) and d.parent is not None and not d.results[0].uses:
                d.erase()
