"""tir-serialize-small-parallel: run a parallel loop with little work on
the calling thread.

Handing a loop to the thread pool costs a few microseconds when the
workers are spinning and tens when they sleep; a kernel that does less than
that in all is faster on one thread.  The work of a loop nest is estimated
statically, in operations::

    work(block) = sum of work(op) over its ops
    work(for)   = extent * work(body)           (unknown for a dynamic extent)
    work(if)    = work(then) + work(else)
    work(op)    = 1                              (any other op)

A ``parallel`` loop (outermost: one inside another is serial already in
the codegen) whose work is known and below ``min-work`` becomes
``serial``.  Loops with a dynamic extent are left alone: their work is
known only at run time.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir.pass_manager import ModulePass, option
from ..ops import ForOp, FuncOp

MIN_WORK = 1 << 15


def work(ops, limit):
    """The operations `ops` (a block's, in order) run, or None when unknown
    or at least `limit` (counting stops there)."""
    total = 0
    for op in ops:
        if isinstance(op, ForOp):
            ext = op.static_extent
            if ext is None:
                return None
            if ext <= 0:
                continue
            inner = work(op.body.ops, -(-limit // ext))
            if inner is None:
                return None
            total += ext * inner
        elif op.regions:
            for r in op.regions:
                for b in r.blocks:
                    w = work(b.ops, limit)
                    if w is None:
                        return None
                    total += w
        else:
            total += 1
        if total >= limit:
            return None
    return total


@dataclass
class SerializeSmallParallel(ModulePass):
    """Make parallel loops with little static work serial (no thread-pool fork/join).

    A parallel loop whose nest runs fewer than min-work operations
    (extents known at compile time) runs on the calling thread."""

    NAME = "tir-serialize-small-parallel"
    OP = "builtin.module"
    min_work: int = option(MIN_WORK, "operations below which a parallel loop nest runs serially")

    def run(self, module, ctx):
        n = 0
        for f in [op for op in module.walk() if isinstance(op, FuncOp)]:
            for op in list(f.walk(include_self=False)):
                if isinstance(op, ForOp) and op.kind == "parallel" and not _inside_parallel(op):
                    if work([op], self.min_work) is not None:
                        op.attributes["kind"] = "serial"
                        n += 1
        ctx.stat(self, "parallel loops made serial", n)


def _inside_parallel(op):
    p = op.parent_op
    while p is not None:
        if isinstance(p, ForOp) and p.kind == "parallel":
            return True
        p = p.parent_op
    return False
