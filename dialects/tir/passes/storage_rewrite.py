"""tir-storage-rewrite: let allocations whose lifetimes do not overlap
share memory.

Liveness over the block structure: for the ``tir.alloc`` ops of one block,
the live range of buffer X is [first, last], the positions in the block of
the first and last op that use X (an op that uses X anywhere inside it,
e.g. a loop, counts as a use at its own position).  A loop or if that
holds both a use of X and of Y makes their ranges overlap, so reuse is
only ever across statements of the same block that run one after another;
an alloc nested in a loop is fresh per iteration and shares only with its
siblings in that body.

Algorithm (TVM's StorageRewrite, for one block at a time): walk the
block's allocs in order of their first use; keep a pool of buffers whose
range has ended.  An alloc takes a pooled buffer when the memory scope and
element type agree and either the types are equal or both are 1-d (a 1-d
pooled buffer that is too small grows to the larger size; run
``tir-flatten-buffer`` first to make most buffers 1-d); the smallest
fitting buffer is preferred.  Its uses are redirected to the pooled
buffer, its alloc erased, and the pooled range extended.  Allocs marked
``double_buffer`` and buffers used by anything but loads and stores are
not touched.

With ``merge-max-bytes=B`` (default 0: off), the 1-d allocs of a block
still left afterwards that hold at most B bytes each and agree in scope and
element type are merged into one (TVM merges small allocations the same
way): the first becomes the sum of their sizes and each other buffer's
accesses are offset by where it starts (``X[i]`` → ``M[i + off]``).

    %T1 = tir.alloc : memref<64xf32>     ...T1 used...      (dead after)
    %T2 = tir.alloc : memref<32xf32>     ...T2 used...
    ==>  T2's uses read and write T1's memory; one alloc of 64 floats.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir import types as T
from ....ir.pass_manager import ModulePass, option
from ....ir.rewriter import Rewriter
from ._util import binop, child_in, const, only_loaded_and_stored
from ..ops import AllocOp, LoadOp


def _movable(op) -> bool:
    if op.attributes.get("double_buffer") is not None or op.operands:   # a run-time size: its own
        return False
    buf = op.results[0]
    return bool(buf.uses) and only_loaded_and_stored(buf)


def _live_range(block, pos, buf):
    idx = [pos[child_in(block, u)] for u in buf.uses]
    return min(idx), max(idx)


def _compatible(have, want):
    """The type the shared buffer needs, or None."""
    if have.element_type is not want.element_type or have.scope != want.scope:
        return None
    if have is want:
        return have
    if have.rank == 1 and want.rank == 1:
        return have if have.shape[0] >= want.shape[0] else want
    return None


class _Rewriter:
    def __init__(self):
        self.rw = Rewriter()
        self.reused = 0
        self.merged = 0
        self.bytes_saved = 0

    def block(self, block):
        allocs = [op for op in block.ops if isinstance(op, AllocOp) and _movable(op)]
        if len(allocs) < 2:
            return
        pos = {op: i for i, op in enumerate(block.ops)}
        entries = sorted(((_live_range(block, pos, a.results[0]), a) for a in allocs), key=lambda e: e[0][0])
        pool = []   # [end, alloc op] of buffers whose ranges may have ended
        live = []
        for (start, end), op in entries:
            # ranges that ended strictly before this one starts go to the pool
            for e in [e for e in live if e[0] < start]:
                live.remove(e)
                pool.append(e)
            choice = None
            for e in pool:
                have = e[1].results[0].type
                t = _compatible(have, op.results[0].type)
                if t is None:
                    continue
                if choice is None or have.num_elements() < choice[1].results[0].type.num_elements():
                    choice = e
            if choice is None:
                live.append([end, op])
                continue
            pool.remove(choice)
            host = choice[1]
            self.share(host, op)
            choice[0] = max(choice[0], end)
            live.append(choice)

    def share(self, host, op):
        """Redirect op's buffer to host's (growing host if needed)."""
        rw = self.rw
        hb, ob = host.results[0], op.results[0]
        t = _compatible(hb.type, ob.type)
        if t is not hb.type:
            hb.type = t   # a 1-d buffer grows; its accesses stay valid
        self.bytes_saved += ob.type.num_elements() * _bytes(ob.type.element_type)
        rw.replace_all_uses(ob, hb)
        rw.erase_op(op)
        self.reused += 1


    def merge(self, block, max_bytes):
        """Merge the small 1-d allocs of `block` (see the module docstring)."""
        groups: dict = {}
        for op in block.ops:
            if not isinstance(op, AllocOp) or not _movable(op):
                continue
            t = op.results[0].type
            if t.rank == 1 and t.num_elements() * _bytes(t.element_type) <= max_bytes:
                groups.setdefault((t.element_type, t.scope), []).append(op)
        for (et, scope), allocs in groups.items():
            if len(allocs) < 2:
                continue
            host = allocs[0]
            hb = host.results[0]
            offset = hb.type.shape[0]
            for op in allocs[1:]:
                buf = op.results[0]
                n = buf.type.shape[0]
                for u in list(buf.uses):
                    i = 1 if isinstance(u, LoadOp) else 2
                    idx = u.operands[i]
                    off = const(self.rw, u, offset)
                    new_idx = binop(self.rw, u, "arith.addi", idx, off)
                    self.rw.modify(u, lambda o, i=i, v=new_idx: o.set_operand(i, v))
                self.rw.replace_all_uses(buf, hb)
                self.rw.erase_op(op)
                offset += n
                self.merged += 1
            hb.type = T.MemRefType((offset,), et, scope)


def _bytes(t):
    return 8 if t is T.index else max(t.bitwidth // 8, 1)


@dataclass
class StorageRewrite(ModulePass):
    """Share and shrink intermediate allocations."""

    NAME = "tir-storage-rewrite"
    OP = "tir.func"
    merge_max_bytes: int = option(0, "merge the 1-d allocations of a block of at most this many bytes each "
                                     "into one (0: off)")

    def validate(self):
        if self.merge_max_bytes < 0:
            raise ValueError("merge-max-bytes must be non-negative")

    def run_on(self, func, ctx):
        r = _Rewriter()
        blocks = [func.body] + [b for op in func.walk(include_self=False)
                                for reg in op.regions for b in reg.blocks]
        for b in blocks:
            r.block(b)
            if self.merge_max_bytes:
                r.merge(b, self.merge_max_bytes)
        if r.merged:
            ctx.stat(self, "allocs-merged", r.merged)
        if r.reused:
            ctx.stat(self, "allocs-reused", r.reused)
            ctx.stat(self, "bytes-saved", r.bytes_saved)
