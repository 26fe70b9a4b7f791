"""tir-serialize-small-parallel: run a parallel loop with little work on
the calling thread.

Handing a loop to the thread pool costs a few microseconds when the
workers are spinning and tens when they sleep; a kernel that does less than
that in all is faster on one thread.  The work of a loop nest is estimated
statically, in operations::

    work(block) = sum of work(op) over its ops
    work(for)   = extent * work(body)           (a run-time size as a factor; unknown for
                                                 an extent computed inside the nest)
    work(if)    = work(then) + work(else)
    work(op)    = 1                              (any other op)

A ``parallel`` loop (outermost: one inside another is serial already in
the codegen) whose work is known and below ``min-work`` becomes
``serial``.  Where extents are sizes known at run time (a kernel over a
sequence: one token or a thousand), the work is a static count times
those sizes; the loop is versioned on it::

    %w = arith.muli %n, <static work> : index
    %small = arith.cmpi slt, %w, <min-work> : index
    tir.if %small { the loop, serial } else { the loop, parallel }

(only when the sizes are defined outside the loop: parameters, or index
arithmetic at the top of the function).
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir.pass_manager import ModulePass, option
from ..ops import ForOp, FuncOp

MIN_WORK = 1 << 15


@dataclass
class SerializeSmallParallel(ModulePass):
    """Make parallel loops with little static work serial (no thread-pool fork/join).

    A parallel loop whose nest runs fewer than min-work operations
    (extents known at compile time) runs on the calling thread."""

    NAME = "tir-serialize-small-parallel"
    OP = "builtin.module"
    min_work: int = option(MIN_WORK, "operations below which a parallel loop nest runs serially")

    def run(self, module, ctx):
        n = versioned = 0
        for f in [op for op in module.walk() if isinstance(op, FuncOp)]:
            for op in list(f.walk(include_self=False)):
                if isinstance(op, ForOp) and op.kind == "parallel" and not _inside_parallel(op):
                    w = work([op], _defined_before(op))
                    if w is None or w[0] >= self.min_work:
                        continue
                    if not w[1]:
                        op.attributes["kind"] = "serial"
                        n += 1
                    else:
                        _version(op, *w, self.min_work)
                        versioned += 1
        ctx.stat(self, "parallel loops made serial", n)
        ctx.stat(self, "parallel loops versioned on run-time sizes", versioned)


def work(ops, outside):
    """(static count, [size Values]) whose product bounds the operations of
    `ops` (the module docstring's count; exact when every extent is
    static, the size list then empty), the sizes being loop bounds from
    `outside` (Values defined before the loop); None when another bound
    is dynamic."""
    count, sizes = 0, None
    terms = []
    for op in ops:
        if isinstance(op, ForOp):
            lo, hi = op.lower, op.upper
            inner = work(op.body.ops, outside)
            if inner is None:
                return None
            c, vs = inner
            if isinstance(lo, int) and isinstance(hi, int):
                terms.append((max(hi - lo, 0) * c, vs))
            elif lo == 0 and hi in outside:
                terms.append((c, vs + [hi]))
            else:
                return None
        elif op.regions:
            for r in op.regions:
                for b in r.blocks:
                    inner = work(b.ops, outside)
                    if inner is None:
                        return None
                    terms.append(inner)
        else:
            count += 1
    # a sum of products: bounded above by (sum of the counts) x (the sizes of the largest term)
    for c, vs in terms:
        if sizes is None or len(vs) > len(sizes):
            sizes = vs
        elif vs and vs != sizes[:len(vs)]:
            return None
        count += c
    return count, list(sizes or [])


def _defined_before(loop):
    """The Values defined before `loop` at its function's top level (the
    parameters and the index arithmetic before the first nest)."""
    func = _func_of(loop)
    outside = set(func.body.args)
    for op in func.body.ops:
        if op is loop or op.regions:
            break
        outside.update(op.results)
    return outside


def _version(loop, count, sizes, min_work):
    """Version `loop` on its run-time work, count x the sizes (module
    docstring)."""
    from ....ir import types as T
    from ....ir.core import Block, Region
    from ....ir.registry import get_op_class
    from ..ops import IfOp
    f = loop.parent

    def emit(name, operands, rtype, attrs=None):
        op = get_op_class(name)(list(operands), [rtype], attrs or {}, (), loop.loc)
        f.insert_before(loop, op)
        return op.results[0]
    v = emit("arith.constant", [], T.index, {"value": count})
    for x in sizes:
        v = emit("arith.muli", [v, x], T.index)
    limit = emit("arith.constant", [], T.index, {"value": min_work})
    small = emit("arith.cmpi", [v, limit], T.i1, {"predicate": "slt"})
    serial = loop.clone({})
    serial.attributes["kind"] = "serial"
    then, other = Block(), Block()
    f.insert_before(loop, IfOp([small], [], {}, [Region([then]), Region([other])], loop.loc))
    loop.detach()
    then.append(serial)
    other.append(loop)


def _func_of(op):
    p = op.parent_op
    while p is not None and not isinstance(p, FuncOp):
        p = p.parent_op
    return p


def _inside_parallel(op):
    p = op.parent_op
    while p is not None:
        if isinstance(p, ForOp) and p.kind == "parallel":
            return True
        p = p.parent_op
    return False
