"""Stage ops: cache_read, cache_write and rfactor make new te.computes.

They run first, in program order, before the other schedule ops are read
(schedule_state.py); each replaces its own result by the te.compute it
makes, so later schedule ops name that stage like any other.

cache_read ``%AS = te.cache_read %A, %R1, ... {scope = s}``::

    %AS = te.compute [%i, ...] : T { %v = te.read %A[%i, ...] ; yield %v }
    te.set_scope %AS {scope = s}

  placed before the first reader; the readers' reads of %A read %AS.

cache_write ``%CL = te.cache_write %C {scope = s}``: %C's compute (body,
reduce axes, reducer) moves to %CL, and %C becomes the copy
``C[i] = CL[i]``; its returned value and readers are kept.  The old %C has
no axes left to name, so no other schedule op on %C may come before.

rfactor ``%CF = te.rfactor %C, %k {factor_axis = f}`` (TVM's rfactor), with
%k a reduce axis of %C from te.axes, or one part of a te.split of one::

    CF[.., k at f, ..] = reduce(body) over the other reduce axes
                         (and the other part of the split, with
                         k_root = outer * inner_extent + inner; where
                         that leaves the axis the body reads nothing and
                         gives the reducer's identity)
    C[..]              = reduce(CF[.., k, ..]) over k

The te.axes (and te.split) that made %k are consumed: a later use of any
handle they made is a diagnostic at that use.
"""

from __future__ import annotations

from ...dialects.te import schedule_ops as S
from ...dialects.te.ops import ComputeOp, ReadOp, YieldOp
from ...ir import types as T


def rewrite_stages(func):
    for op in list(func.body.ops):
        rewrite = _REWRITES.get(type(op))
        if rewrite is not None:
            rewrite(func, op)


def _compute_of(op, v, what="stage"):
    d = v.defining_op()
    if not isinstance(d, ComputeOp):
        raise op.error(f"expects a {what} (the result of a te.compute in this function)")
    return d


def _new_compute(anchor, t, reduce_extents, reducer, names, reduce_names, name, loc, sizes=()):
    """A compute of type t before `anchor`; `sizes`: the Values of t's '?'
    dimensions (a copy of a dynamic stage has its sizes)."""
    if sum(1 for d in t.shape if d is None) != len(sizes) or any(type(x) is not int for x in reduce_extents):
        raise anchor.error(f"cannot make stage '{name}' of a stage with run-time ('?') sizes: "
                           "cache_read and rfactor need static shapes")
    c = ComputeOp.create(t, reduce_extents, reducer, names, reduce_names, loc)
    if sizes:
        c.set_operands(list(sizes))
    if reducer is not None and not isinstance(reducer, str):
        c.attributes["reducer"] = reducer
    anchor.parent.insert_before(anchor, c)
    c.results[0].name = name
    return c


def _set_scope(anchor, stage, scope):
    op = S.SetScopeOp([stage], [], {"scope": scope}, (), anchor.loc)
    anchor.parent.insert_before(anchor, op)


def _finish(op, new_value):
    new_value.name = op.results[0].name or new_value.name
    op.results[0].replace_all_uses_with(new_value)
    op.erase()


def _reads_of(compute, tensor):
    return [o for o in compute.walk(include_self=False) if isinstance(o, ReadOp) and o.tensor is tensor]


def _copy_body(e, src, indices):
    v = e.read(src, indices)
    e.block.append(YieldOp([v], [], {}, (), e.loc))


def cache_read(func, op):
    from ...dialects.te.builder import Emitter
    src, *readers = op.operands
    rcs = [_compute_of(op, r, "reader stage") for r in readers]
    for r, c in zip(readers, rcs):
        if not _reads_of(c, src):
            raise op.error(f"stage '{r.name}' does not read '{src.name}'")
    first = min(rcs, key=lambda c: _position(func, c))
    t = src.type
    c = _new_compute(first, t, (), None, [f"ax{d}" for d in range(t.rank)], (), op.results[0].name, op.loc)
    e = Emitter(c.body, op.loc)
    _copy_body(e, src, list(c.body.args))
    for rc in rcs:
        for rd in _reads_of(rc, src):
            rd.set_operand(0, c.results[0])
    _set_scope(op, c.results[0], op.attributes["scope"])
    _finish(op, c.results[0])


def _position(func, op):
    for k, o in enumerate(func.body.ops):
        if o is op:
            return k
    return -1


def _earlier_uses(op, value, allowed=()):
    """Schedule ops before `op` that use `value` (other than `allowed`)."""
    return [u for u in value.users if u.parent is op.parent and u is not op and u not in allowed
            and u.is_before_in_block(op) and not isinstance(u, ComputeOp)]


def cache_write(func, op):
    from ...dialects.te.builder import Emitter
    stage = op.operands[0]
    c = _compute_of(op, stage)
    early = [u for u in _earlier_uses(op, stage) if u.name.startswith("te.") and not isinstance(u, ReadOp)]
    if early:
        raise op.error(f"te.cache_write of '{stage.name}' must come before the other schedule ops on it",
                       notes=[(early[0].loc, "scheduled here")])
    cl = c.clone({})
    cl.results[0].name = op.results[0].name
    c.parent.insert_before(c, cl)
    t = c.tensor_type
    sizes = c.operands[:sum(1 for d in t.shape if d is None)]
    copy = _new_compute(c, t, (), None, [a.name for a in c.spatial_axes], (), stage.name, c.loc, sizes)
    e = Emitter(copy.body, c.loc)
    _copy_body(e, cl.results[0], list(copy.body.args))
    stage.replace_all_uses_with(copy.results[0])
    c.erase()
    _set_scope(op, cl.results[0], op.attributes["scope"])
    _finish(op, cl.results[0])


def rfactor(func, op):
    from ...dialects.te.builder import Emitter
    from .schedule_state import Split, int_attr
    stage, h = op.operands
    c = _compute_of(op, stage)
    if c.reducer is None:
        raise op.error(f"cannot rfactor '{stage.name}': it is not a reduction")
    if c.reducer in ("argmax", "argmin"):
        raise op.error(f"cannot rfactor the {c.reducer} reduction '{stage.name}'")
    hop = h.defining_op()
    split = None
    if isinstance(hop, S.SplitOp):
        split, hop = hop, hop.operands[0].defining_op()
    if not isinstance(hop, S.AxesOp) or hop.operands[0] is not stage:
        raise op.error(f"the axis must be a reduce axis of '{stage.name}' from te.axes, or one part of a te.split "
                       "of one")
    root = hop.results.index(split.operands[0] if split is not None else h)
    rank = c.rank
    if root < rank:
        raise op.error(f"axis '{c.body.args[root].name}' of '{stage.name}' is not a reduce axis")
    consumed = [hop] + ([split] if split is not None else [])
    early = [u for u in _earlier_uses(op, stage, consumed) if u.name.startswith("te.") and not isinstance(u, ReadOp)]
    if early:
        raise op.error(f"te.rfactor of '{stage.name}' must come before its other schedule ops",
                       notes=[(early[0].loc, "scheduled here")])
    for x in consumed:
        for r in x.results:
            for u in r.users:
                if u is not op and u not in consumed and u.is_before_in_block(op):
                    raise op.error(f"te.rfactor of '{stage.name}' must come before its other schedule ops",
                                   notes=[(u.loc, "scheduled here")])
                if u is not op and u not in consumed:
                    raise u.error(f"axis handle '{r.name}' was consumed by te.rfactor",
                                  notes=[(op.loc, "rfactor here")])
    fa = int_attr(op, "factor_axis")
    if not 0 <= fa <= rank:
        raise op.error(f"factor_axis must be in [0, {rank}], got {fa}")
    args = list(c.body.args)
    rext = list(c.reduce_extents)
    k = root - rank
    e_root = rext[k]
    if split is not None:
        rel = Split.__new__(Split)
        rel.factor, rel.nparts = int_attr(split, "factor"), int_attr(split, "nparts")
        oe, ie = rel.extents(e_root)
        is_outer = h is split.results[0]
        fext, other_ext = (oe, ie) if is_outer else (ie, oe)
        other_name = f"{args[root].name}.{'inner' if is_outer else 'outer'}"
        fname = f"{args[root].name}.{'outer' if is_outer else 'inner'}"
    else:
        fext, fname, other_ext = e_root, args[root].name, None
    out_t = c.tensor_type
    shape = list(out_t.shape)
    shape.insert(fa, fext)
    cf_t = T.TensorType(shape, out_t.element_type)
    sp_names = [a.name for a in args[:rank]]
    sp_names.insert(fa, fname)
    red_idx = [d for d in range(len(rext)) if d != k]
    red_ext = [rext[d] for d in red_idx] + ([other_ext] if split is not None else [])
    red_names = [args[rank + d].name for d in red_idx] + ([other_name] if split is not None else [])
    reducer = c.attributes.get("reducer")
    cf = _new_compute(c, cf_t, red_ext, reducer if red_ext else None, sp_names, red_names,
                      op.results[0].name, op.loc)
    nargs = list(cf.body.args)
    fiv = nargs[fa]
    sp_new = nargs[:fa] + nargs[fa + 1:rank + 1]
    red_new = nargs[rank + 1:]
    mapping = dict(zip(args[:rank], sp_new))
    for d, a in zip(red_idx, red_new):
        mapping[args[rank + d]] = a
    e = Emitter(cf.body, op.loc)
    guard = True
    if split is not None:
        other = red_new[-1]
        outer, inner = (fiv, other) if is_outer else (other, fiv)
        ie = fext if not is_outer else other_ext
        kv = e.add(e.mul(outer, ie), inner)
        mapping[args[root]] = e.val(kv)
        if fext * other_ext != e_root:
            guard = e.cmp("lt", kv, e_root)
    else:
        mapping[args[root]] = fiv
    v = _clone_body(e, c, mapping, guard)
    cf.body.append(YieldOp([v], [], {}, (), op.loc))
    # the original stage now reduces the factored stage over the factor axis
    nc = _new_compute(c, out_t, [fext], reducer, sp_names[:fa] + sp_names[fa + 1:], [fname], stage.name, c.loc)
    e = Emitter(nc.body, c.loc)
    a = list(nc.body.args)
    idx = a[:rank]
    idx.insert(fa, a[rank])
    _copy_body(e, cf.results[0], idx)
    stage.replace_all_uses_with(nc.results[0])
    c.erase()
    nv = cf.results[0]
    op.results[0].replace_all_uses_with(nv)
    nv.name = op.results[0].name
    op.erase()
    for x in reversed(consumed):
        x.erase()


def _clone_body(e, c, mapping, guard):
    """Clone c's body into e's block; with a guard (an i1 Value), reads are
    guarded and the value is the reducer's identity where it fails."""
    from ...dialects.te.builder import reducer_identity_value
    for o in c.body.ops:
        if isinstance(o, YieldOp):
            break
        new = o.clone(mapping)
        e.block.append(new)
        if guard is not True and isinstance(new, ReadOp):
            if new.guarded:
                both = e.op("arith.andi", [new.condition, guard], [T.i1])
                both.defining_op().detach()
                e.block.insert_before(new, both.defining_op())
                new.set_operand(len(new.operands) - 1, both)
            else:
                new.set_operands(new.operands + [guard])
                new.attributes["else_value"] = 0.0
    y = c.yielded
    v = mapping.get(y, y)
    if guard is not True:
        v = e.select(guard, v, reducer_identity_value(e, c, v.type))
    return v


# the stage op class -> its rewrite into te.computes
_REWRITES = {S.CacheReadOp: cache_read, S.CacheWriteOp: cache_write, S.RFactorOp: rfactor}
