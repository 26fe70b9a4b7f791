"""compute_inline: substitute a stage's body for every read of its tensor.

    %v = te.read %P[%a, %b] : f32        with   %P = te.compute [%i, %j] { ...; yield %y }
  becomes P's body ops cloned in front of the read with %i -> %a, %j -> %b,
  and %v replaced by the clone of %y.

A guarded read ``te.read %P[..] if %c else x`` inlines as the body with %c
added to the guard of every read it makes, then ``select %c, y, x``: the
inlined body is evaluated at indices P was never defined on, and its own
reads must not touch memory there.
"""

from __future__ import annotations

from ...dialects.te.ops import ReadOp, YieldOp
from ...ir import types as T


def inline_stage(compute):
    res = compute.results[0]
    for user in list(res.users):
        if not isinstance(user, ReadOp):
            raise user.error(f"cannot inline '{res.name}' into a '{user.name}'")
        _inline_read(compute, user)


def _insert(block, anchor, cls_name, operands, result_type, attrs=None):
    from ...ir.registry import get_op_class
    op = get_op_class(cls_name)(operands, [result_type], attrs or {}, (), anchor.loc)
    block.insert_before(anchor, op)
    return op.results[0]


def _inline_read(compute, read):
    block = read.parent
    mapping = dict(zip(compute.spatial_axes, read.indices))
    guard = read.condition
    for op in compute.body.ops:
        if isinstance(op, YieldOp):
            break
        new = op.clone(mapping)
        block.insert_before(read, new)
        if guard is not None and isinstance(new, ReadOp):
            if new.guarded:
                both = _insert(block, new, "arith.andi", [new.condition, guard], T.i1)
                new.set_operand(len(new.operands) - 1, both)
            else:
                new.set_operands(new.operands + [guard])
                new.attributes["else_value"] = 0.0
    y = compute.yielded
    value = mapping.get(y, y)
    if guard is not None:
        t = value.type
        ev = read.attributes["else_value"]
        ev = float(ev) if T.is_float(t) else (bool(ev) if t is T.i1 else int(ev))
        other = _insert(block, read, "arith.constant", [], t, {"value": ev})
        value = _insert(block, read, "arith.select", [guard, value, other], t)
    if value.name is None:
        value.name = read.results[0].name
    read.results[0].replace_all_uses_with(value)
    read.erase()
