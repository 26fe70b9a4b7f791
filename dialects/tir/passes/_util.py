"""Small helpers the structural tir passes share: building index constants
and arith ops, cloning a block's ops under a value mapping, and asking
which buffers an op (with everything nested in it) reads or writes."""

from __future__ import annotations

from ....ir import types as T
from ..ops import ForOp, LoadOp, StoreOp


def const(rw, anchor, value, type=T.index):
    """An ``arith.constant`` inserted before `anchor`; returns its value."""
    from ...arith.ops import ConstantOp
    c = ConstantOp.get(value, type, anchor.loc)
    rw.insert_before(anchor, c)
    return c.results[0]


def binop(rw, anchor, name, a, b):
    """``name(a, b)`` (an arith binary op of a's type) inserted before `anchor`."""
    from ....ir.registry import get_op_class
    op = get_op_class(name)([a, b], [a.type], None, (), anchor.loc)
    rw.insert_before(anchor, op)
    return op.results[0]


def clone_before(rw, anchor, ops, mapping):
    """Clone `ops` (in order) before `anchor`, extending `mapping`."""
    out = []
    for op in ops:
        out.append(rw.insert_before(anchor, op.clone(mapping)))
    return out


def buffers_written(op) -> set:
    return {o.operands[1] for o in op.walk() if isinstance(o, StoreOp)}


def buffers_read(op) -> set:
    return {o.operands[0] for o in op.walk() if isinstance(o, LoadOp)}


def defined_inside(v, op) -> bool:
    """Whether value `v` is defined inside `op`'s regions."""
    d = v.defining_op()
    if d is None:
        owner = v.block.parent_op
        return owner is not None and op.is_ancestor(owner)
    return d is not op and op.is_ancestor(d)


def only_loaded_and_stored(buf) -> bool:
    """Whether every use of buffer `buf` is a tir.load from it or a tir.store
    into it (not of it): no call, launch or extern sees the buffer itself."""
    for u in buf.uses:
        if isinstance(u, LoadOp) and u.operands[0] is buf:
            continue
        if isinstance(u, StoreOp) and u.operands[1] is buf and u.operands[0] is not buf:
            continue
        return False
    return True


def depends_on(v, roots, memo=None, depth=0) -> bool:
    """Whether `v` is computed (through ops' operands, and loop bounds of
    induction variables) from any value in `roots`."""
    if memo is None:
        memo = {}
    if v in roots:
        return True
    r = memo.get(v)
    if r is not None:
        return r
    if depth > 200:
        return True   # too deep to tell: assume the worst
    d = v.defining_op()
    if d is None:
        owner = v.block.parent_op
        deps = list(owner.operands) if isinstance(owner, ForOp) else []
    else:
        deps = d.operands
    r = any(depends_on(x, roots, memo, depth + 1) for x in deps)
    memo[v] = r
    return r


def child_in(block, op):
    """The op of `block` that is `op` or contains it, else None."""
    while op is not None and op.parent is not block:
        op = op.parent_op
    return op
