"""tir-unroll: unroll loops in tir itself.

Which loops:

* every ``unrolled`` loop with static bounds and an extent of at most
  ``max-step`` (default 64);
* inside a loop annotated ``pragma_auto_unroll_max_step = K`` (set by
  ``te.pragma %x {auto_unroll_max_step = K}``), every serial loop with
  static bounds whose *steps* -- its extent times the steps of the loops
  nested in it, TVM's measure -- are at most K;
* with ``auto-max-step = K`` (default 0: off), the same rule everywhere.

Algorithm: post-order over the loops (the innermost first, so a nest of
unrolled loops unrolls completely); for each loop chosen, for k = lower ..
upper-1, clone the body before the loop with the induction variable mapped
to a fresh ``arith.constant k``; then erase the loop.  Loops that stay
(too long, dynamic bounds) keep their kind, and the LLVM codegen gives an
``unrolled`` one LLVM's unroll metadata.  A thread-bound or parallel loop is
never unrolled.

    tir.for %i = 0 to 2 unrolled { tir.store %x, %A[%i] : f32 }
    ==>
    %c0 = arith.constant 0 : index
    tir.store %x, %A[%c0] : f32
    %c1 = arith.constant 1 : index
    tir.store %x, %A[%c1] : f32
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir.pass_manager import ModulePass, option
from ....ir.rewriter import Rewriter
from ._util import const
from ..ops import ForOp

PRAGMA = "pragma_auto_unroll_max_step"


def _steps(loop) -> int | None:
    """extent * (the largest steps of a loop nested in the body); None when
    some extent is dynamic."""
    ext = loop.static_extent
    if ext is None:
        return None
    inner = 1
    for op in loop.body.ops:
        for o in op.walk():
            if isinstance(o, ForOp) and o.parent_op is not None:
                # only the loops directly below this one count; deeper ones are in their steps
                if _enclosing_loop(o) is loop:
                    s = _steps(o)
                    if s is None:
                        return None
                    inner = max(inner, s)
    return max(ext, 0) * inner


def _enclosing_loop(op):
    p = op.parent_op
    while p is not None and not isinstance(p, ForOp):
        p = p.parent_op
    return p


def _finite(v):
    """Whether v is a finite number (not a bool)."""
    import math
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _auto_limit(loop, default):
    """The auto_unroll_max_step that applies to `loop` (the nearest pragma
    on it or an enclosing loop), else `default`."""
    p = loop
    while p is not None:
        if isinstance(p, ForOp) and p.attributes.get(PRAGMA) is not None:
            v = p.attributes[PRAGMA]
            if not _finite(v) or v != int(v):
                raise p.error(f"{PRAGMA} must be a whole number of steps, got {v!r}")
            return int(v)
        p = p.parent_op
    return default


@dataclass
class Unroll(ModulePass):
    """Unroll loops marked unrolled (and small constant loops)."""

    NAME = "tir-unroll"
    OP = "tir.func"
    max_step: int = option(64, "unroll an unrolled loop of at most this many iterations")
    auto_max_step: int = option(0, "also unroll serial loops of at most this many steps everywhere "
                                   "(0: only under pragma_auto_unroll_max_step)")

    def validate(self):
        if self.max_step < 0 or self.auto_max_step < 0:
            raise ValueError("max-step and auto-max-step must be non-negative")

    def chosen(self, loop) -> bool:
        ext = loop.static_extent
        if ext is None or loop.kind in ("thread", "parallel"):
            return False
        if loop.kind == "unrolled":
            return ext <= self.max_step
        if loop.kind != "serial":
            return False
        limit = _auto_limit(loop, self.auto_max_step)
        if limit <= 0:
            return False
        s = _steps(loop)
        return s is not None and s <= limit

    def run_on(self, func, ctx):
        rw = Rewriter()
        n = 0
        loops = [op for op in func.walk(include_self=False) if isinstance(op, ForOp)]
        for loop in reversed(loops):   # post-order: inner loops first
            if self.chosen(loop):
                unroll(rw, loop)
                n += 1
        if n:
            ctx.stat(self, "loops-unrolled", n)


def unroll(rw, loop):
    """Replace `loop` (static bounds) by copies of its body, one per step."""
    iv = loop.induction_var
    body = list(loop.body.ops)
    for k in range(loop.lower, loop.upper):
        mapping = {iv: const(rw, loop, k)}
        for op in body:
            rw.insert_before(loop, op.clone(mapping))
    rw.erase_op(loop)
