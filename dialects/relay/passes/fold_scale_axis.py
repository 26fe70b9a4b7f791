"""--fold-scale-axis: fold per-channel scales into conv2d / dense weights (TVM's FoldScaleAxis).

A per-channel scale is ``multiply(v, s)`` with ``s`` a constant that varies
along one axis of ``v`` only (``C x 1 x 1`` on NCHW data, ``C`` on NHWC, a
scalar), as --simplify-inference leaves a batch_norm.  TVM runs the backward
pass, then the forward one; so does this pass, one sweep each per function.

Backward (the scale comes after the conv): ``multiply(f(conv(x, w)), s)``
where s lies along the conv's output-channel axis and ``f`` is a chain of
single-use ops that commute with the scale -- ``nn.bias_add`` or an
``add`` / ``subtract`` of a per-channel constant (the constant is scaled
too), ``nn.relu`` / ``nn.leaky_relu`` when every scale is positive -- becomes
``f'(conv(x, multiply(w, s_O)))``: the weight is scaled along its O axis
and the multiply disappears.  ``nn.dense`` works the same way on its units
(the weight's rows), for a scale along the last axis.

Forward (the scale comes before the conv): ``conv(f(multiply(x, s)), w)``
with s along the conv's input-channel axis, groups = 1, and ``f`` a chain of
single-use ops as above (an added constant is divided by s, so every scale
must be non-zero; relu needs them positive) becomes
``conv(f'(x), multiply(w, s_I))``.  ``nn.dense`` likewise scales the
weight's columns.

Only constant weights take a scale (TVM binds the weights before it
folds): a parameter weight would only trade one runtime multiply for
another.  The weight's ``multiply`` is left for --fold-constant, as in TVM
(the -O3 preset runs it next).  Blocked layouts are left alone.  Statistics:
``scales-folded-backward``, ``scales-folded-forward``.  Linear: each
multiply is looked at once and its chain walked once.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import GraphFunctionPass, defining_constant
from ..ops.conv import Conv2DOp
from ..ops.elemwise import AddOp, LeakyReluOp, MultiplyOp, ReluOp, SubtractOp
from ..ops.function import ConstantOp
from ..ops.nn import BiasAddOp, DenseOp

# ops a per-channel scale commutes with when the scales are positive
ELEMENTWISE = (ReluOp, LeakyReluOp)
# ops that shift by a constant the scale can move through
SHIFTS = (AddOp, SubtractOp, BiasAddOp)
ANCHORS = (Conv2DOp, DenseOp)


@dataclass
class FoldScaleAxis(GraphFunctionPass):
    """Fold per-channel scales into conv2d/dense weights."""

    NAME = "fold-scale-axis"

    def run_on(self, func, ctx):
        block = func.regions[0].blocks[0]
        back = sum(1 for op in list(block.ops) if op.parent is not None and isinstance(op, MultiplyOp)
                   and fold_backward(op))
        fwd = sum(1 for op in list(block.ops) if op.parent is not None and isinstance(op, MultiplyOp)
                  and fold_forward(op))
        ctx.stat(self, "scales-folded-backward", back)
        ctx.stat(self, "scales-folded-forward", fwd)


# -- scales ----------------------------------------------------------------------------

def channel_scale(s_value, rank, axis):
    """The scale as a 1-d array over `axis` (length 1 for a scalar), or None
    when the constant varies along another axis or has a higher rank."""
    c = defining_constant(s_value)
    if c is None:
        return None
    arr = c.attributes["value"].array
    if arr.ndim > rank or arr.dtype.kind != "f":
        return None
    full = arr.reshape((1,) * (rank - arr.ndim) + arr.shape)
    if any(d != 1 for i, d in enumerate(full.shape) if i != axis):
        return None
    return full.reshape(-1)


def split_scale(op):
    """multiply(v, s) or multiply(s, v) with s constant -> (v, s), else None."""
    a, b = op.operands
    rtype = op.results[0].type
    for v, s in ((a, b), (b, a)):
        if defining_constant(s) is not None and v.type is rtype and defining_constant(v) is None:
            return v, s
    return None


def anchor_axes(op):
    """(data channel axis, weight axis for the output, weight axis for the
    input[, output channel axis]) of a conv2d / dense, or None when the
    layouts are blocked or the weight is not a constant."""
    from ..layouts import Layout
    if defining_constant(op.operands[1]) is None:
        return None
    if isinstance(op, DenseOp):
        return op.operands[0].type.rank - 1, 0, 1
    if not isinstance(op, Conv2DOp):
        return None
    a = op.attributes
    d, k = Layout(a["data_layout"]), Layout(a["kernel_layout"])
    o = Layout(a["out_layout"] or a["data_layout"])
    if d.is_blocked() or k.is_blocked() or o.is_blocked():
        return None
    return (d.index("C"), k.index("O"), k.index("I"), o.index("C"))


def scaled_weight(op, w_axis, vec, before):
    """multiply(weight, vec along w_axis), built before `before`."""
    w = op.operands[1]
    rank = w.type.rank
    shape = [1] * rank
    shape[w_axis] = -1
    arr = vec.astype(w.type.dtype).reshape(shape)
    c = ConstantOp.get(arr.copy(), loc=op.loc)
    before.parent.insert_before(before, c)
    m = MultiplyOp.build(w, c.results[0], loc=op.loc)
    before.parent.insert_before(before, m)
    if w.name:
        m.results[0].name = f"{w.name}_scaled"
    return m.results[0]


def shift_constant(op, x, axis, vec, forward):
    """For shift op `op` (one operand the chain value `x`): its constant
    operand times (backward) or divided by (forward) the scale, or None."""
    import numpy as np
    if isinstance(op, BiasAddOp):
        if op.operands[0] is not x or op.norm_axis(x.type.rank) != axis:
            return None
        k = defining_constant(op.operands[1])
        if k is None:
            return None
        arr = k.attributes["value"].array
        new = arr / vec if forward else arr * vec
        return 1, new.astype(arr.dtype)
    if isinstance(op, SubtractOp) and op.operands[0] is not x:
        return None
    i = 1 if op.operands[0] is x else 0
    k = defining_constant(op.operands[i])
    rank = x.type.rank
    if k is None or op.results[0].type is not x.type:
        return None
    arr = k.attributes["value"].array
    if arr.ndim > rank:
        return None
    full = arr.reshape((1,) * (rank - arr.ndim) + arr.shape)
    if any(d != 1 for j, d in enumerate(full.shape) if j != axis):
        return None
    shape = [1] * rank
    shape[axis] = -1
    s = vec.reshape(shape)
    new = full / s if forward else full * s
    return i, np.ascontiguousarray(new.astype(arr.dtype))


def commutes(op, x, axis, vec, forward):
    """How the chain passes `op` (x its chain operand): ("same", None),
    ("shift", (operand index, new constant array)), or None."""
    if isinstance(op, ELEMENTWISE):
        return ("same", None) if (vec > 0).all() else None
    if isinstance(op, SHIFTS):
        if forward and not (vec != 0).all():
            return None
        r = shift_constant(op, x, axis, vec, forward)
        return None if r is None else ("shift", r)
    return None


def apply_shift(op, index, arr):
    c = ConstantOp.get(arr, loc=op.loc)
    op.parent.insert_before(op, c)
    old = op.operands[index]
    op.set_operand(index, c.results[0])
    d = old.defining_op()
    if d is not None and not old.uses:
        d.erase()


# -- backward ----------------------------------------------------------------------------

def fold_backward(mul) -> bool:
    sv = split_scale(mul)
    if sv is None:
        return False
    v, s = sv
    rank = v.type.rank
    chain = []          # (op, its chain operand) from the multiply back to the anchor
    cur = v
    while True:
        d = cur.defining_op()
        if d is None or len(cur.uses) != 1:
            return False
        if isinstance(d, ANCHORS):
            anchor = d
            break
        if not isinstance(d, ELEMENTWISE + SHIFTS):
            return False
        x = next((o for o in d.operands if defining_constant(o) is None), None)
        if x is None:
            return False
        chain.append((d, x))
        cur = x
    axes = anchor_axes(anchor)
    if axes is None:
        return False
    out_axis = axes[3] if isinstance(anchor, Conv2DOp) else axes[0]
    vec = channel_scale(s, rank, out_axis)
    if vec is None:
        return False
    plans = []
    for d, x in chain:
        r = commutes(d, x, out_axis, vec, forward=False)
        if r is None:
            return False
        plans.append((d, r))
    for d, (kind, data) in plans:
        if kind == "shift":
            apply_shift(d, *data)
    n_out = anchor.results[0].type.shape[out_axis]
    full = vec if vec.size == n_out else vec.repeat(n_out)
    anchor.set_operand(1, scaled_weight(anchor, axes[1], full, anchor))
    r = mul.results[0]
    if v.name is None and r.name is not None:
        v.name = r.name
    r.replace_all_uses_with(v)
    mul.erase()
    _erase_dead_constant(s)
    return True


# -- forward -------------------------------------------------------------------------------

def fold_forward(mul) -> bool:
    sv = split_scale(mul)
    if sv is None:
        return False
    x, s = sv
    rank = x.type.rank
    chain = []
    cur = mul.results[0]
    while True:
        if len(cur.uses) != 1:
            return False
        u = cur.uses[0]
        if isinstance(u, ANCHORS):
            if u.operands[0] is not cur or u.operands[1] is cur:
                return False
            anchor = u
            break
        if not isinstance(u, ELEMENTWISE + SHIFTS):
            return False
        chain.append((u, cur))
        cur = u.results[0]
    axes = anchor_axes(anchor)
    if axes is None or (isinstance(anchor, Conv2DOp) and anchor.attributes["groups"] != 1):
        return False
    in_axis = axes[0]
    vec = channel_scale(s, rank, in_axis)
    if vec is None:
        return False
    plans = []
    for d, v in chain:
        r = commutes(d, v, in_axis, vec, forward=True)
        if r is None:
            return False
        plans.append((d, r))
    for d, (kind, data) in plans:
        if kind == "shift":
            apply_shift(d, *data)
    n_in = x.type.shape[in_axis]
    full = vec if vec.size == n_in else vec.repeat(n_in)
    anchor.set_operand(1, scaled_weight(anchor, axes[2], full, anchor))
    mul.results[0].replace_all_uses_with(x)
    mul.erase()
    _erase_dead_constant(s)
    return True


def _erase_dead_constant(v):
    d = v.defining_op()
    if isinstance(d, ConstantOp) and not v.uses:
        d.erase()
