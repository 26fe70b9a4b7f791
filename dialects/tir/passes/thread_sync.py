"""tir-thread-sync: insert ``tir.barrier`` where threads of a block share memory.

A ``shared`` buffer written by one thread and read by another needs a
``__syncthreads`` in between (read after write), and so does a read
followed by the next overwrite (write after read: the next iteration of a
loop must not clobber what a slower thread still reads)::

    tir.for %ko = 0 to 8 {                  tir.for %ko = 0 to 8 {
      tir.store %a, %S[%tx] : f32             tir.store %a, %S[%tx] : f32
      tir.for %ki = 0 to 16 {        =>       tir.barrier
        %x = tir.load %S[%ki] : f32           tir.for %ki = 0 to 16 { %x = tir.load %S[%ki] ... }
        ...                                   tir.barrier
    } }                                     }

Algorithm (a conservative version of TVM's ThreadSync for the shared
scope): every tir.func is scanned in program order -- the order one thread
runs its code -- keeping the shared buffers read and written since the last
barrier.  Before an op whose accesses (its own, or anything nested in it)
conflict with those (a read of a buffer written, a write of a buffer read)
a barrier is inserted and the sets are cleared; a compound op (loop, if)
that conflicts gets the barrier in front of it, so the barrier is hoisted
out of inner loops, and otherwise is scanned inside.  After the body of a
serial loop, the accesses left pending are checked against those at the
start of the body, which the next iteration makes: a conflict puts a
barrier at the end of the body.  Thread-bound loops are parallel, so they
carry nothing from one iteration to the next.

Same-thread exemption: an access whose indices hold, each as an index of
its own, the variable of every enclosing ``threadIdx`` loop touches an
element no other thread touches through the same index values.  So a
thread updating its own slot (``RF[t] = RF[t] + x``, the partial sums of a
row reduction) needs no barrier between its read and its write, as long as
every access of that buffer since the last barrier uses the very same
index values.  Accesses of ``local`` and
global buffers never need a block barrier (a thread's own, or not shared
within a block in a way a barrier orders).  A barrier already present
clears the sets, so running the pass twice adds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir.pass_manager import ModulePass
from ..ops import AllocOp, BarrierOp, ForOp, LoadOp, StoreOp


@dataclass
class ThreadSync(ModulePass):
    """Insert barriers around shared-memory accesses."""

    NAME = "tir-thread-sync"
    OP = "tir.func"

    def run_on(self, func, ctx):
        n = sync_function(func)
        if n:
            ctx.stat(self, "barriers inserted", n)


class _Pending:
    """Shared buffers read and written since the last barrier, each with the
    set of its accesses' signatures (see :func:`_signature`)."""

    __slots__ = ("reads", "writes")

    def __init__(self):
        self.reads, self.writes = {}, {}

    def clear(self):
        self.reads.clear()
        self.writes.clear()

    def conflicts(self, reads, writes):
        return _clash(reads, self.writes) or _clash(writes, self.reads)

    def add(self, reads, writes):
        for mine, new in ((self.reads, reads), (self.writes, writes)):
            for b, sigs in new.items():
                mine.setdefault(b, set()).update(sigs)


def _clash(a, b):
    """Do accesses `a` and `b` ({buffer: signatures}) need a barrier between them?"""
    for buf, sa in a.items():
        sb = b.get(buf)
        if sb is None:
            continue
        both = sa | sb
        if len(both) != 1 or None in both:
            return True
    return False


def _signature(op, indices):
    """The indices, when they hold every enclosing threadIdx variable (so
    the element is this thread's alone); None otherwise."""
    tvs = []
    p = op.parent_op
    while p is not None:
        if isinstance(p, ForOp) and p.attributes.get("kind") == "thread" \
                and str(p.attributes.get("thread", "")).startswith("threadIdx") and p.static_extent != 1:
            tvs.append(p.induction_var)
        p = p.parent_op
    idx = tuple(indices)
    return idx if tvs and all(tv in idx for tv in tvs) else None


def sync_function(f):
    """Insert the barriers f needs; returns how many were inserted."""
    shared = {op.results[0] for op in f.walk() if isinstance(op, AllocOp)
              and getattr(op.results[0].type, "scope", None) == "shared"}
    if not shared:
        return 0
    s = _Sync(shared)
    s.block(f.body, _Pending())
    return s.inserted


class _Sync:
    def __init__(self, shared):
        self.shared = shared
        self.inserted = 0

    def accesses(self, op):
        """(reads, writes): {shared buffer: signatures} of op and its nested ops."""
        reads, writes = {}, {}
        for o in op.walk():
            if isinstance(o, LoadOp) and o.operands[0] in self.shared:
                reads.setdefault(o.operands[0], set()).add(_signature(o, o.operands[1:]))
            elif isinstance(o, StoreOp) and o.operands[1] in self.shared:
                writes.setdefault(o.operands[1], set()).add(_signature(o, o.operands[2:]))
        return reads, writes

    def barrier_before(self, op):
        op.parent.insert_before(op, BarrierOp([], [], {}, (), op.loc))
        self.inserted += 1

    def block(self, block, pending):
        for op in list(block.ops):
            if isinstance(op, BarrierOp):
                pending.clear()
                continue
            reads, writes = self.accesses(op)
            if not reads and not writes:
                continue
            if pending.conflicts(reads, writes):
                self.barrier_before(op)
                pending.clear()
            if not op.regions:
                pending.add(reads, writes)
                continue
            for r in op.regions:
                for b in r.blocks:
                    self.block(b, pending)
            if isinstance(op, ForOp) and op.attributes.get("kind") != "thread":
                self.loop_carried(op, pending)

    def loop_carried(self, loop, pending):
        """A barrier at the end of the body when what the body left pending
        conflicts with what its start (the next iteration) accesses."""
        reads, writes = {}, {}
        for op in loop.body.ops:
            if isinstance(op, BarrierOp):
                break
            r, w = self.accesses(op)
            for mine, new in ((reads, r), (writes, w)):
                for b, sigs in new.items():
                    mine.setdefault(b, set()).update(sigs)
        if pending.conflicts(reads, writes):
            loop.body.append(BarrierOp([], [], {}, (), loop.loc))
            self.inserted += 1
            pending.clear()
