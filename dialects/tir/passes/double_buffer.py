"""tir-inject-double-buffer: double a buffer that a loop fills and then
reads, so that the fill for iteration i+1 can overlap the compute of i.

Applies to ``%X = tir.alloc {double_buffer} : memref<S>`` placed directly
in the body of a serial (or unrolled) loop ``for i in [lo, hi)`` (where
``te.compute_at`` plus ``te.double_buffer`` put it).  The body after the
alloc must start with the *fill*: pure ops and statements that write
only X and do not read it; the *compute* after it must not write X.
Legality: nothing else in the loop body writes a buffer the fill reads
(the fill of i+1 now runs before the compute of i).

Rewrite (p = (i - lo) mod 2 selects the half)::

    %X2 = tir.alloc : memref<2xS>                 before the loop
    fill(lo) into X2[0]                           prologue
    tir.for %i = lo to hi {
      ... ops before the alloc ...
      if i + 1 < hi { fill(i+1) into X2[1 - p] }  where the fill was
      compute(i) reading X2[p]
    }

``fill(k)`` clones the fill statements and the pure ops they need from the
body with i := k; every access ``X[idx]`` becomes ``X2[half, idx]``.  An
alloc that does not fit the pattern keeps its attribute and is left alone
(statistic ``skipped``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir import types as T
from ....ir.pass_manager import ModulePass
from ....ir.rewriter import Rewriter
from ._util import binop, buffers_read, buffers_written, const
from ..ops import AllocOp, BarrierOp, ForOp, IfOp, LoadOp, StoreOp


class _Skip(Exception):
    pass


def _plan(alloc):
    """(loop, deps, writers, rest) or raise _Skip."""
    loop = alloc.parent_op
    if loop is None or not isinstance(loop, ForOp) or loop.kind not in ("serial", "unrolled"):
        raise _Skip
    X = alloc.results[0]
    for u in X.uses:
        if not ((isinstance(u, LoadOp) and u.operands[0] is X) or
                (isinstance(u, StoreOp) and u.operands[1] is X and u.operands[0] is not X)):
            raise _Skip   # e.g. passed to a kernel launch: its accesses are not ours to rewrite
    body = list(loop.body.ops)
    ai = body.index(alloc)
    writers, k = [], ai + 1
    while k < len(body):
        op = body[k]
        if X in buffers_read(op):
            break
        if not op.regions and op.results and not isinstance(op, AllocOp) and \
                not any(isinstance(o, (StoreOp, BarrierOp)) for o in op.walk()):
            k += 1
            continue   # a pure op: stays, and is cloned if the fill needs it
        if buffers_written(op) == {X} and not any(isinstance(o, BarrierOp) for o in op.walk()):
            writers.append(op)
            k += 1
            continue
        break
    rest = body[k:]
    if not writers or not rest or any(X in buffers_written(op) for op in rest):
        raise _Skip
    # the pure ops of the body the writers need, in body order
    in_body = {op: i for i, op in enumerate(body)}
    need, stack = set(), [v for w in writers for o in w.walk() for v in o.operands]
    while stack:
        v = stack.pop()
        d = v.defining_op()
        if v is X or d is None or d not in in_body or d in need or d in writers:
            continue
        if d.regions or isinstance(d, AllocOp):
            raise _Skip
        need.add(d)
        stack.extend(d.operands)
    deps = sorted(need, key=in_body.get)
    reads = set()
    for op in deps + writers:
        reads |= buffers_read(op)
    others = [op for op in body if op not in writers]
    for op in others:
        if reads & buffers_written(op):
            raise _Skip
    return loop, deps, writers, rest


def _retarget(rw, root_ops, X, X2, half):
    """Every access to X inside `root_ops` -> X2 with `half` prepended."""
    for r in root_ops:
        for o in list(r.walk()):
            if isinstance(o, LoadOp) and o.operands[0] is X:
                rw.modify(o, lambda o: o.set_operands([X2, half] + list(o.operands[1:])))
            elif isinstance(o, StoreOp) and o.operands[1] is X:
                rw.modify(o, lambda o: o.set_operands([o.operands[0], X2, half] + list(o.operands[2:])))


def inject(rw, alloc):
    from ....ir.core import Block, Region
    loop, deps, writers, rest = _plan(alloc)
    X = alloc.results[0]
    t = X.type
    X2op = AllocOp((), [T.MemRefType((2,) + tuple(t.shape), t.element_type, t.scope)], None, (), alloc.loc)
    X2op.results[0].name = X.name
    rw.insert_before(loop, X2op)
    X2 = X2op.results[0]
    iv = loop.induction_var
    lo, hi = loop.lower, loop.upper
    lo_v = const(rw, loop, lo) if isinstance(lo, int) else lo

    def fill(anchor, k_value, half):
        mapping = {iv: k_value}
        clones = [rw.insert_before(anchor, op.clone(mapping)) for op in deps + writers]
        _retarget(rw, clones, X, X2, half)

    fill(loop, lo_v, const(rw, loop, 0))
    # the halves for this iteration, at the top of the body
    top = loop.body.first
    d = binop(rw, top, "arith.subi", iv, const(rw, top, lo) if isinstance(lo, int) else lo)
    p = binop(rw, top, "arith.floormodsi", d, const(rw, top, 2))
    q = binop(rw, top, "arith.subi", const(rw, top, 1), p)
    first = writers[0]
    nxt = binop(rw, first, "arith.addi", iv, const(rw, first, 1))
    hi_v = const(rw, first, hi) if isinstance(hi, int) else hi
    from ....ir.registry import get_op_class
    cmp = get_op_class("arith.cmpi")([nxt, hi_v], [T.i1], {"predicate": "slt"}, (), first.loc)
    rw.insert_before(first, cmp)
    guard = IfOp([cmp.results[0]], (), None, [Region([Block()])], first.loc)
    rw.insert_before(first, guard)
    mapping = {iv: nxt}
    clones = [guard.then_block.append(op.clone(mapping)) for op in deps + writers]
    _retarget(rw, clones, X, X2, q)
    for w in writers:
        rw.erase_op(w)
    _retarget(rw, rest, X, X2, p)
    rw.erase_op(alloc)


@dataclass
class InjectDoubleBuffer(ModulePass):
    """Double-buffer allocations marked double_buffer."""

    NAME = "tir-inject-double-buffer"
    OP = "tir.func"

    def run_on(self, func, ctx):
        rw = Rewriter()
        done = skipped = 0
        for op in list(func.walk(include_self=False)):
            if isinstance(op, AllocOp) and op.attributes.get("double_buffer") is not None:
                try:
                    inject(rw, op)
                    done += 1
                except _Skip:
                    skipped += 1
        if done:
            ctx.stat(self, "buffers-doubled", done)
        if skipped:
            ctx.stat(self, "skipped", skipped)
