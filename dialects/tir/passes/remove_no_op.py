"""tir-remove-no-op: remove statements that cannot change any output.

Algorithm: sweep every tir.func bottom-up (inner ops before the ops that
hold them) and repeat until a sweep changes nothing:

* a loop whose extent is 0 or negative (static bounds, or the same dynamic
  value for both), or whose body is empty, is erased;
* ``tir.if`` on a constant condition is replaced by the branch taken;
  an if with nothing in either branch is erased;
* ``tir.store %v, %A[idx]`` where ``%v = tir.load %A[idx]`` (same buffer,
  the same index values, same type) in the same block with no write to %A
  and no barrier between them stores what is already there: erased;
* a ``tir.alloc`` that is never read (only stored to) is erased with its
  stores; pure ops whose results nobody uses are erased.

Example::

    tir.for %i = 0 to 16 { %v = tir.load %A[%i] : f32   tir.store %v, %A[%i] : f32 }

becomes nothing at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir.pass_manager import ModulePass, option
from ....ir.rewriter import Rewriter, is_trivially_dead
from ._util import buffers_written
from ...arith.ops import ConstantOp
from ..ops import AllocOp, BarrierOp, ForOp, IfOp, LoadOp, StoreOp


def _const_bool(v):
    d = v.defining_op()
    if isinstance(d, ConstantOp):
        return bool(d.attributes["value"])
    return None


def _inline(rw, op, block):
    for inner in list(block.ops):
        rw.insert_before(op, inner)
    rw.erase_op(op)


class _Remover:
    def __init__(self):
        self.rw = Rewriter()
        self.stats: dict = {}

    def count(self, what):
        self.stats[what] = self.stats.get(what, 0) + 1
        return True

    def sweep(self, func) -> bool:
        changed = False
        for op in reversed(list(func.walk(include_self=False))):
            if op.parent is None:
                continue   # erased with an op that held it
            changed |= self.visit(op)
        return changed

    def visit(self, op) -> bool:
        rw = self.rw
        if isinstance(op, ForOp):
            ext = op.static_extent
            empty = op.body.first is None
            if empty or (ext is not None and ext <= 0) or (ext is None and op.lower is op.upper):
                rw.erase_op(op)
                return self.count("loops-removed")
            return False
        if isinstance(op, IfOp):
            c = _const_bool(op.operands[0])
            if c is not None:
                block = op.then_block if c else op.else_block
                if block is None:
                    rw.erase_op(op)
                else:
                    _inline(rw, op, block)
                return self.count("ifs-removed")
            if op.then_block.first is None and (op.else_block is None or op.else_block.first is None):
                rw.erase_op(op)
                return self.count("ifs-removed")
            return False
        if isinstance(op, StoreOp):
            return self.store(op)
        if isinstance(op, AllocOp):
            buf = op.results[0]
            if all(isinstance(u, StoreOp) and u.operands[1] is buf and u.operands[0] is not buf for u in buf.uses):
                for u in list(buf.uses):
                    rw.erase_op(u)
                rw.erase_op(op)
                return self.count("allocs-removed")
            return False
        if is_trivially_dead(op):
            rw.erase_op(op)
            return self.count("dead-ops-removed")
        return False

    def store(self, op) -> bool:
        val, buf, *idx = op.operands
        ld = val.defining_op()
        if not isinstance(ld, LoadOp) or ld.parent is not op.parent:
            return False
        if ld.operands[0] is not buf or list(ld.operands[1:]) != idx:
            return False
        x = ld.next
        while x is not None and x is not op:
            if isinstance(x, BarrierOp) or buf in buffers_written(x) or \
                    any(isinstance(o, BarrierOp) for o in x.walk(include_self=False)):
                return False
            x = x.next
        if x is None:
            return False
        self.rw.erase_op(op)
        return self.count("stores-removed")


@dataclass
class RemoveNoOp(ModulePass):
    """Remove loops and ifs that do nothing."""

    NAME = "tir-remove-no-op"
    OP = "tir.func"
    max_iterations: int = option(10, "the most sweeps over a function before giving up on a fixed point")

    def run_on(self, func, ctx):
        r = _Remover()
        for _ in range(self.max_iterations):
            if not r.sweep(func):
                break
        for k, n in r.stats.items():
            ctx.stat(self, k, n)

    def validate(self):
        if self.max_iterations < 1:
            raise ValueError("max-iterations must be at least 1")
