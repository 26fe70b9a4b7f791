"""--canonicalize patterns for data movement and tuples (see canonicalize.py).

Each pattern keeps the value exactly (they only drop or merge copies), and
each checks types, so a rewrite never changes a value's type.
"""

from __future__ import annotations

from ....ir.rewriter import RewritePattern
from ..ops.control import TupleOp
from ..ops.elemwise import AddOp
from ..ops.nn import DenseOp
from ..ops.transform import ExpandDimsOp, ReshapeOp, SqueezeOp, TransposeOp


def shape_patterns(bias_add_to_add=False):
    out = [ReshapeReshape(), NoOp("relay.reshape"), NoOp("relay.transpose"), NoOp("relay.squeeze"),
           NoOp("relay.expand_dims"), TransposeTranspose(), SqueezeExpandDims(), ExpandDimsSqueeze(),
           CastSame(), ConcatenateOne(), GetItemOfTuple(), DenseOfFlatten(), AxisShuffle()]
    if bias_add_to_add:
        out.append(BiasAddToAdd())
    return out


def _producer(v, cls):
    d = v.defining_op()
    return d if isinstance(d, cls) else None


def _build(rw, before, cls, *operands, **attrs):
    new = cls.build(*operands, loc=before.loc, **attrs)
    rw.insert_before(before, new)
    return new.results[0]


class NoOp(RewritePattern):
    """A data-movement op whose result type is its input's type: its input
    (a reshape to the same shape, an identity transpose, ...)."""

    def __init__(self, root):
        self.ROOT = root

    def match_and_rewrite(self, op, rw) -> bool:
        x = op.operands[0]
        if x.type is not op.results[0].type:
            return False
        if isinstance(op, TransposeOp):
            axes = op.attributes.get("axes")
            if axes is not None and list(axes) != list(range(len(axes))):
                return False
        rw.replace_op(op, [x])
        return True


class ReshapeReshape(RewritePattern):
    ROOT = "relay.reshape"

    def match_and_rewrite(self, op, rw) -> bool:
        inner = _producer(op.operands[0], ReshapeOp)
        t = op.results[0].type
        if inner is None or not t.is_static:
            return False
        new = _build(rw, op, ReshapeOp, inner.operands[0], newshape=list(t.shape))
        rw.replace_op(op, [new])
        return True


class TransposeTranspose(RewritePattern):
    ROOT = "relay.transpose"

    def match_and_rewrite(self, op, rw) -> bool:
        inner = _producer(op.operands[0], TransposeOp)
        if inner is None:
            return False
        x = inner.operands[0]
        rank = x.type.rank
        p = inner.perm(rank)
        q = op.perm(rank)
        axes = [p[i] for i in q]          # out[i] = mid[q[i]] = x[p[q[i]]]
        if axes == list(range(rank)):
            if x.type is not op.results[0].type:
                return False
            rw.replace_op(op, [x])
            return True
        new = _build(rw, op, TransposeOp, x, axes=axes)
        rw.replace_op(op, [new])
        return True


class AxisShuffle(RewritePattern):
    """``reshape(transpose(reshape(x, S1), p), S0)`` where S0 is x's shape,
    S1 splits one axis a of it into factors F (the other axes as they are)
    and p permutes only those factors -> ``take(x, P, axis=a)`` with the
    constant permutation P = arange(d_a).reshape(F).transpose(p')
    .flatten().  This is ShuffleNet's channel shuffle (reshape to (N, G,
    C/G, H, W), swap the two channel axes, reshape back).  As a take along
    one axis it is a layout-agnostic "axis" op: convert-layout carries it
    into NHWC, where the reshape-transpose pair would have been a barrier
    (two layout transforms per shuffle)."""
    ROOT = "relay.reshape"

    def match_and_rewrite(self, op, rw) -> bool:
        import numpy as np
        from ..ops.function import ConstantOp
        from ..ops.tensor import TakeOp
        t = _producer(op.operands[0], TransposeOp)
        r = _producer(t.operands[0], ReshapeOp) if t is not None else None
        if r is None:
            return False
        x = r.operands[0]
        s0, s1 = getattr(x.type, "shape", None), r.results[0].type.shape
        if s0 is None or op.results[0].type != x.type or not x.type.is_static or None in s1:
            return False
        s0, s1 = list(s0), list(s1)
        pre = 0
        while pre < min(len(s0), len(s1)) and s0[pre] == s1[pre]:
            pre += 1
        post = 0
        while post < min(len(s0), len(s1)) - pre and s0[-1 - post] == s1[-1 - post]:
            post += 1
        mid0, mid1 = s0[pre:len(s0) - post], s1[pre:len(s1) - post]
        if len(mid0) != 1 or len(mid1) < 2 or int(np.prod(mid1)) != mid0[0]:
            return False
        p = t.perm(len(s1))
        inner = range(pre, pre + len(mid1))
        if any(p[i] != i for i in range(len(s1)) if i not in inner) or sorted(p[i] for i in inner) != list(inner):
            return False
        perm = np.arange(mid0[0]).reshape(mid1).transpose([p[i] - pre for i in inner]).ravel()
        c = ConstantOp.get(perm.astype(np.int64), loc=op.loc)
        rw.insert_before(op, c)
        new = _build(rw, op, TakeOp, x, c.results[0], axis=pre, mode="fast")
        rw.replace_op(op, [new])
        return True


class SqueezeExpandDims(RewritePattern):
    ROOT = "relay.squeeze"

    def match_and_rewrite(self, op, rw) -> bool:
        inner = _producer(op.operands[0], ExpandDimsOp)
        if inner is None or inner.operands[0].type is not op.results[0].type:
            return False
        a = inner.attributes
        rank = op.operands[0].type.rank
        added = [(a["axis"] % rank) + i for i in range(a["num_newaxis"])]
        ax = op.attributes.get("axis")
        if ax is None or sorted(x % rank for x in ax) != added:
            return False
        rw.replace_op(op, [inner.operands[0]])
        return True


class ExpandDimsSqueeze(RewritePattern):
    ROOT = "relay.expand_dims"

    def match_and_rewrite(self, op, rw) -> bool:
        inner = _producer(op.operands[0], SqueezeOp)
        if inner is None or inner.operands[0].type is not op.results[0].type:
            return False
        ax = inner.attributes.get("axis")
        a = op.attributes
        if ax is None or a["num_newaxis"] != 1:
            return False
        rank = inner.operands[0].type.rank
        if [x % rank for x in ax] != [a["axis"] % rank]:
            return False
        rw.replace_op(op, [inner.operands[0]])
        return True


class CastSame(RewritePattern):
    ROOT = "relay.cast"

    def match_and_rewrite(self, op, rw) -> bool:
        x = op.operands[0]
        if x.type is not op.results[0].type:
            return False
        rw.replace_op(op, [x])
        return True


class ConcatenateOne(RewritePattern):
    ROOT = "relay.concatenate"

    def match_and_rewrite(self, op, rw) -> bool:
        if len(op.operands) != 1 or op.operands[0].type is not op.results[0].type:
            return False
        rw.replace_op(op, [op.operands[0]])
        return True


class GetItemOfTuple(RewritePattern):
    ROOT = "relay.get_item"

    def match_and_rewrite(self, op, rw) -> bool:
        t = _producer(op.operands[0], TupleOp)
        if t is None:
            return False
        rw.replace_op(op, [t.operands[op.attributes["index"]]])
        return True


class DenseOfFlatten(RewritePattern):
    """reshape(dense(reshape(x, [-1, K]), w), x.shape[:-1] + [N]) -> dense(x, w)."""

    ROOT = "relay.reshape"

    def match_and_rewrite(self, op, rw) -> bool:
        dense = _producer(op.operands[0], DenseOp)
        if dense is None or len(dense.results[0].uses) != 1:
            return False
        flat = _producer(dense.operands[0], ReshapeOp)
        if flat is None:
            return False
        x = flat.operands[0]
        xt, ft, rt = x.type, flat.results[0].type, op.results[0].type
        if not (xt.is_static and rt.is_static) or xt.rank < 3 or ft.rank != 2:
            return False
        if ft.shape[1] != xt.shape[-1] or rt.shape != xt.shape[:-1] + (dense.results[0].type.shape[-1],):
            return False
        new = _build(rw, op, DenseOp, x, dense.operands[1], **dense.attributes)
        if new.type is not rt:
            return False
        rw.replace_op(op, [new])
        return True


class BiasAddToAdd(RewritePattern):
    """TVM's CanonicalizeOps: bias_add(x, b) -> add(x, expand_dims(b))."""

    ROOT = "relay.nn.bias_add"

    def match_and_rewrite(self, op, rw) -> bool:
        x, b = op.operands
        rank = x.type.rank
        pad = rank - op.norm_axis(rank) - 1
        if pad > 0:
            b = _build(rw, op, ExpandDimsOp, b, axis=1, num_newaxis=pad)
        new = _build(rw, op, AddOp, x, b)
        rw.replace_op(op, [new])
        return True
