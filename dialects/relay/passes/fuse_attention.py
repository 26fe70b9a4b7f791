"""--fuse-attention: softmax(Q Kᵀ · scale + mask) V as one nn.attention.

Matched from each ``nn.softmax`` over the last axis, in the forms the ONNX
importer and exporters produce:

    scores  := product(Q, K)                          a batched matrix product, below
             | multiply(scores, c) | divide(scores, c)     c a scalar constant: the scale
             | add(scores, bias) | add(bias, scores)        an additive mask (any tensor)
             | where(cond, scores, f)                       f a scalar constant <= -1e30 or
                                                            -inf: the mask where(cond, 0, f)
    P       := nn.softmax(scores) {axis = -1}
    out     := product(P, V)

    product(A, B) := nn.batch_matmul(A3, B3)                  3-d: heads folded into the batch
                   | expand_dims(nn.batch_matmul(squeeze(A4, [0]), squeeze(B4, [0])), 0)
                   | reshape(nn.batch_matmul(reshape(A4), reshape(B4)))   to (B*H, S, D) and back

Each 4-d operand may come through ``transpose`` ops and a scalar
``multiply`` (a scale on Q or K); the transposes compose, and an operand
that ends up in BSNH (batch, seq, heads, dim) or BNSH order is read in
place: nn.attention takes the layout all three share (else a transpose to
BNSH is inserted for the odd one out), and the key as Kᵀ per head
(key_layout "BNHS", the order exporters feed Q·Kᵀ: the transpose that
made it, or a new one, is what the kernel reads contiguously along the keys).  A ``transpose(out, [0, 2, 1, 3])``
after a BSNH attention is the op's own result.  The scale is the product of
the constants met (1 when none).  The scores, P and the products must have
no other users; Q, K, V and the mask are untouched.  Anything else (a
causal mask computed in the graph, a scale that is a tensor) is left as it
is: the op is only made where the result is the same up to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import GraphFunctionPass, defining_constant
from ..ops.attention import MASK_FILL
from ..ops.base import RelayOp
from .dce import erase_dead
from .simplify_inference import Emitter

BNSH, BSNH, BNHS = (0, 1, 2, 3), (0, 2, 1, 3), (0, 1, 3, 2)


@dataclass
class FuseAttention(GraphFunctionPass):
    """Rewrite softmax(Q K^T * scale + mask) V into nn.attention."""

    NAME = "fuse-attention"

    def run_on(self, func, ctx):
        from .fuse_ops import function_blocks
        n = 0
        for block in function_blocks(func):
            for op in list(block.ops):
                if op.parent is not None and _name(op) == "nn.softmax":
                    n += _rewrite(op)
        ctx.stat(self, "attentions-fused", n)


def _name(op):
    return op.op_name if isinstance(op, RelayOp) else op.name


def _def(v, name=None):
    d = v.defining_op()
    return d if d is not None and (name is None or _name(d) == name) else None


def _scalar(v):
    """The value of a one-element float constant, or None."""
    c = defining_constant(v)
    if c is None or c.attributes["value"].array.size != 1:
        return None
    x = c.attributes["value"].array.reshape(()).item()
    return float(x) if isinstance(x, float) else None


class _Match:
    def __init__(self):
        self.scale = 1.0
        self.bias = []        # (value, scale it is multiplied by)


def _product(v, m):
    """(the nn.batch_matmul, A4, B4) of a batched product whose result is
    `v`: A4 and B4 the 4-d tensors its 3-d operands view (None, None for
    the 3-d form); None if `v` is no such product."""
    d = v.defining_op()
    if d is None:
        return None
    if _name(d) == "nn.batch_matmul" and not d.attributes["transpose_a"]:
        return d, None, None
    if _name(d) in ("expand_dims", "reshape") and v.type.rank == 4:
        mm = _def(d.operands[0], "nn.batch_matmul")
        if mm is None or mm.attributes["transpose_a"] or not mm.results[0].has_one_use():
            return None
        views = []
        for x in mm.operands:
            u = x.defining_op()
            if _name(d) == "expand_dims":
                ok = (d.attributes["axis"] == 0 and d.attributes.get("num_newaxis", 1) == 1 and u is not None
                      and _name(u) == "squeeze" and list(u.attributes.get("axis") or []) == [0])
            else:
                ok = u is not None and _name(u) == "reshape" and u.operands[0].type.rank == 4 and \
                    _folds_heads(u.operands[0].type.shape, x.type.shape)
            if not ok:
                return None
            views.append(u.operands[0])
        if _name(d) == "reshape" and not _folds_heads(v.type.shape, mm.results[0].type.shape):
            return None
        return mm, views[0], views[1]
    return None


def _folds_heads(shape4, shape3):
    b, h, s, x = shape4
    return None not in shape4 and tuple(shape3) == (b * h, s, x)


def _operand(x, perm, m, scales=True):
    """(base, layout or None, perm) for a 4-d operand whose BNSH view is
    transpose(x, perm): transposes peeled, and scalar multiplies into
    m.scale where `scales` (Q and K: a factor there scales the scores; on V
    it would scale the output).  layout None: base needs transpose(base,
    perm) to be BNSH."""
    while True:
        d = x.defining_op()
        if d is None:
            break
        if scales and _name(d) == "multiply" and x.has_one_use():
            c = next((s for s in map(_scalar, d.operands) if s is not None), None)
            if c is None:
                break
            m.scale *= c
            x = d.operands[1] if _scalar(d.operands[0]) is not None else d.operands[0]
            continue
        if _name(d) == "transpose" and d.attributes.get("axes") and x.has_one_use():
            r = list(d.attributes["axes"])
            perm = tuple(r[p] for p in perm)
            x = d.operands[0]
            continue
        break
    if perm == BNSH:
        return x, "BNSH", perm
    if perm == BSNH:
        return x, "BSNH", perm
    return x, None, perm


def _scores(x, m, acc=1.0):
    """Walk softmax's input down to the Q K^T product; None if it is not one."""
    while True:
        d = x.defining_op()
        if d is None or not x.has_one_use():
            return None
        n = _name(d)
        if n in ("multiply", "divide"):
            c = _scalar(d.operands[1])
            y = d.operands[0]
            if c is None and n == "multiply":
                c, y = _scalar(d.operands[0]), d.operands[1]
            if c is None or c == 0:
                return None
            acc *= c if n == "multiply" else 1.0 / c
        elif n == "add":
            side = [s for s in (0, 1) if _reaches_product(d.operands[s])]
            if len(side) != 1:
                return None
            m.bias.append((d.operands[1 - side[0]], acc))
            y = d.operands[side[0]]
        elif n == "where":
            f = _scalar(d.operands[2])
            if f is None or f > MASK_FILL or acc <= 0:
                return None
            m.bias.append((("where", d.operands[0]), 1.0))
            y = d.operands[1]
        else:
            m.scale *= acc
            return _product(x, m)
        x = y


def _reaches_product(v, depth=16):
    """Whether `v` is, through the scores' own ops, a batched product."""
    for _ in range(depth):
        d = v.defining_op()
        if d is None:
            return False
        n = _name(d)
        if n == "nn.batch_matmul" or n in ("expand_dims", "reshape") and _def(d.operands[0], "nn.batch_matmul"):
            return True
        if n not in ("multiply", "divide", "add", "where"):
            return False
        v = d.operands[1] if n == "where" else \
            next((x for x in d.operands if _scalar(x) is None), d.operands[0])
    return False


class _Emitter(Emitter):
    """simplify_inference's Emitter, remembering what it built so that
    undo() can take it back."""

    def __init__(self, anchor):
        super().__init__(anchor)
        self.made = []

    def op(self, name, *operands, **attrs):
        r = super().op(name, *operands, **attrs)
        self.made.append(r.defining_op())
        return r

    def const(self, array, name=None):
        r = super().const(array, name)
        self.made.append(r.defining_op())
        return r

    def undo(self):
        for op in reversed(self.made):
            op.erase()
        self.made = []


def _rewrite(sm):
    """Fuse the attention around softmax `sm`; 1 if it did."""
    from ....ir.diagnostics import DiagnosticError
    x = sm.operands[0]
    if x.type.rank not in (3, 4) or sm.attributes["axis"] % x.type.rank != x.type.rank - 1:
        return 0
    p = sm.results[0]
    if not p.has_one_use():
        return 0
    m = _Match()
    qk = _scores(x, m)
    out = _pv_result(p)
    pv = _product(out, m) if out is not None else None
    if qk is None or pv is None or pv[0].attributes["transpose_b"] or (qk[1] is None) != (pv[1] is None):
        return 0
    mm_s, qv, kv = qk
    mm_o, pview, vv = pv
    if (pview if pview is not None else mm_o.operands[0]) is not p:
        return 0
    e = _Emitter(out.defining_op())   # after V, which may come after the softmax
    try:
        if qv is None:   # the 3-d form, heads folded into the batch: a leading axis of 1
            q, k, v = (e.op("expand_dims", t, axis=0) for t in (mm_s.operands[0], mm_s.operands[1], mm_o.operands[1]))
        else:
            q, k, v = qv, kv, vv
        kperm = BNSH if mm_s.attributes["transpose_b"] else (0, 1, 3, 2)
        ops = [_operand(q, BNSH, m), _operand(k, kperm, m), _operand(v, BNSH, m, scales=False)]
        layout = "BSNH" if [lay for _, lay, _ in ops].count("BSNH") >= 2 else "BNSH"
        want = BSNH if layout == "BSNH" else BNSH
        # transpose(base, c) is in `layout` where the BNSH view is transpose(base, perm): c = perm o want
        args = [base if lay == layout else e.op("transpose", base, axes=[perm[w] for w in want])
                for base, lay, perm in ops]
        # the key as Kᵀ per head, what Q·Kᵀ reads along the keys
        kbase, _, kperm = ops[1]
        kaxes = [kperm[w] for w in BNHS]
        args[1] = kbase if kaxes == list(BNSH) else e.op("transpose", kbase, axes=kaxes)
        bias = _bias(e, m, p)
        a = e.op("nn.attention", *args, *([bias] if bias is not None else []), scale=m.scale, layout=layout,
                 key_layout="BNHS")
        if qv is None:
            r = e.op("squeeze", a, axis=[0])
        elif layout == "BSNH":
            t = out.uses[0] if out.has_one_use() else None
            if t is not None and _name(t) == "transpose" and list(t.attributes.get("axes") or []) == list(BSNH):
                out, r = t.results[0], a
            else:
                r = e.op("transpose", a, axes=list(BSNH))
        else:
            r = a
        if r.type != out.type:
            raise ValueError(f"{r.type} is not {out.type}")
    except (DiagnosticError, ValueError, TypeError):
        e.undo()   # a form the op does not take (a mask that does not broadcast): left as it was
        return 0
    if out.name and not out.name[0].isdigit():
        r.name = out.name
    dead = out.defining_op()
    out.replace_all_uses_with(r)
    erase_dead([dead])   # the old products, softmax, transposes: what only they used
    return 1


def _pv_result(p):
    """The result of the batched product that reads P (its 4-d view's
    expand_dims or reshape, or the 3-d batch_matmul)."""
    user = p.uses[0]
    n = _name(user)
    if n == "nn.batch_matmul":
        return user.results[0]
    if n in ("squeeze", "reshape") and user.results[0].has_one_use():
        mm = user.results[0].uses[0]
        if _name(mm) == "nn.batch_matmul" and mm.operands[0] is user.results[0] and mm.results[0].has_one_use():
            return mm.results[0].uses[0].results[0]
    return None


def _bias(e, m, p):
    """The sum of the mask terms, each times the scale above it (None
    without one); ValueError for one of another dtype."""
    import numpy as np

    from ....ir.types import to_numpy_dtype
    dt = to_numpy_dtype(p.type.element_type)
    out = None
    for b, acc in m.bias:
        if isinstance(b, tuple):   # where(cond, scores, -inf): where(cond, 0, -inf)
            b = e.op("where", b[1], e.const(np.array(0, dt)), e.const(np.array(-np.inf, dt)))
        elif b.type.element_type is not p.type.element_type:
            raise ValueError(f"a mask of type {b.type}, the scores are {p.type.element_type}")
        elif acc != 1.0:
            b = e.op("multiply", b, e.const(np.array(acc, dt)))
        out = b if out is None else e.op("add", out, b)
    return out
