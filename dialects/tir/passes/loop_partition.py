"""tir-loop-partition: split a loop so that a guard on its induction
variable vanishes from the main part.

A guard is a ``tir.if`` anywhere inside a loop ``for i in [lo, hi)`` (static
bounds, not thread-bound) whose condition is a comparison of index values
(``arith.cmpi`` slt/sle/sgt/sge, or an ``arith.andi`` of such) that is
linear in ``i``::

    cond  :=  e1 < 0  and  e2 < 0  and ...        (after normalising each
    e     :=  k * i + R                            cmpi to that form)

where the rest ``R`` does not depend on ``i`` (it may depend on outer
loops, and on inner loops whose bounds do not depend on ``i``).  With the
range [Rlo, Rhi] of ``R`` (:mod:`tvmd.dialects.tir.bounds`), ``e < 0`` holds
for every value of the other variables exactly when ``k*i + Rhi <= -1``:
for k > 0 that is ``i <= floor((-1 - Rhi) / k)``, for k < 0 ``i >=
ceil((-1 - Rhi) / k)``.  The conjuncts' intervals intersect into [a, b];
clamped to the loop, the loop becomes up to three copies::

    for i in [lo, a)      guard kept, or removed where provably false
    for i in [a, b+1)     guard replaced by its then-branch
    for i in [b+1, hi)    guard kept, or removed where provably false

A loop whose guards bound it by a run-time size instead (a split of a
'?' axis: ``for o in [0, (n + 3) floordiv 4)`` around ``4*o + r < n``,
r in [0, 3] for the rows of an unrolled block) is split in two, at a
point computed before it: with every such guard ``k*i + R - S < 0``
(the same k > 0 and size S, defined outside the loop; R of static range
[Rlo, Rhi]), all hold for ``i <= (S - 1 - max Rhi) floordiv k``, so

    for i in [lo, p)      the guards replaced by their then-branches
    for i in [p, hi)      guards kept (the last, partial block)

with p = that + 1 clamped to [lo, hi].  A dynamic GEMM's row blocks then
run without a test per row and per k.

(``e >= 0`` for all values, i.e. ``k*i + Rlo >= 0`` over the whole part,
proves the guard false: it is replaced by its else-branch or erased, and
a part left with nothing but pure ops is dropped.)
The copies are then partitioned again for other guards, at most
``max-partitions`` splits per function.  The split tail of ``te.split``
(``o*64 + v < 1000``) thus partitions the *outer* loop: the main part runs
whole tiles with no test, and only the last tile keeps it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir import types as T
from ....ir.pass_manager import ModulePass, option
from ....ir.rewriter import Rewriter
from ..bounds import Bounds, linear, linear_range
from ._util import depends_on
from ...arith.ops import AddIOp, AndIOp, CmpIOp, FloorDivSIOp, MaxSIOp, MinSIOp, SubIOp
from ...arith.ops import ConstantOp as ArithConstant
from ..ops import AllocOp, ForOp, IfOp

_PRED = {"slt", "sle", "sgt", "sge"}


def _ceil_div(a, b):
    return -((-a) // b)


def _conjuncts(cond, out, depth=0):
    """The cmpi ops whose conjunction is `cond`, or None."""
    d = cond.defining_op()
    if d is None or depth > 16:
        return None
    if isinstance(d, AndIOp) and cond.type is T.i1:
        for x in d.operands:
            if _conjuncts(x, out, depth + 1) is None:
                return None
        return out
    if isinstance(d, CmpIOp) and d.operands[0].type is T.index and d.attributes["predicate"] in _PRED:
        out.append(d)
        return out
    return None


def _normalise(cmp):
    """(terms, const) of e with `cmp` <=> e < 0."""
    a, b = cmp.operands
    ta, ca = linear(a)
    tb, cb = linear(b)
    terms = dict(ta)
    for v, k in tb.items():
        terms[v] = terms.get(v, 0) - k
    c = ca - cb
    pred = cmp.attributes["predicate"]
    if pred in ("sgt", "sge"):    # a > b  <=>  b - a < 0
        terms = {v: -k for v, k in terms.items()}
        c = -c
    if pred in ("sle", "sge"):    # d <= 0  <=>  d - 1 < 0
        c -= 1
    return {v: k for v, k in terms.items() if k}, c


class _Guard:
    """One analysed guard: per conjunct (k, Rlo, Rhi) with e = k*i + R."""

    def __init__(self, op, parts):
        self.op = op
        self.parts = parts

    def true_interval(self):
        a, b = None, None
        for k, _, rhi in self.parts:
            if k > 0:
                t = (-1 - rhi) // k
                b = t if b is None else min(b, t)
            else:
                t = _ceil_div(-1 - rhi, k)
                a = t if a is None else max(a, t)
        return a, b

    def false_on(self, s, t) -> bool:
        """Whether the guard fails for every i in [s, t]."""
        for k, rlo, _ in self.parts:
            emin = k * (s if k > 0 else t) + rlo
            if emin >= 0:
                return True
        return False


def _analyse(loop, guard, bounds):
    iv = loop.induction_var
    cmps = _conjuncts(guard.operands[0], [])
    if not cmps:
        return None
    parts = []
    memo: dict = {}
    for c in cmps:
        terms, const = _normalise(c)
        k = terms.pop(iv, 0)
        if k == 0:
            return None
        if any(depends_on(v, {iv}, memo) for v in terms):
            return None
        rlo, rhi = linear_range(bounds, terms, const)
        if rlo is None or rhi is None:
            return None
        parts.append((k, rlo, rhi))
    return _Guard(guard, parts)


def _analyse_symbolic(loop, guard, bounds):
    """(k, S, Rhi) of a guard ``k*i + R - S < 0`` (one comparison; k > 0, S
    an index value defined outside `loop`, R of static range up to Rhi),
    or None."""
    iv = loop.induction_var
    cmps = _conjuncts(guard.operands[0], [])
    if not cmps or len(cmps) != 1:
        return None
    terms, const = _normalise(cmps[0])
    k = terms.pop(iv, 0)
    sizes = [v for v, c in terms.items() if c == -1 and not _inside(v, loop)]
    if k <= 0 or len(sizes) != 1:
        return None
    size = sizes[0]
    del terms[size]
    if any(depends_on(v, {iv}, {}) for v in terms):
        return None
    _, rhi = linear_range(bounds, terms, const)
    return None if rhi is None else (k, size, rhi)


def _inside(v, loop) -> bool:
    """Whether `v` is defined within `loop` (so not before it)."""
    from ....ir.core import BlockArgument
    op = v.block.parent_op if isinstance(v, BlockArgument) else v.defining_op()
    return op is not None and loop.is_ancestor(op)


def _set_bounds(loop, lo, hi):
    """Give `loop` the bounds lo, hi (ints or index Values)."""
    loop.attributes["lower"] = lo if isinstance(lo, int) else None
    loop.attributes["upper"] = hi if isinstance(hi, int) else None
    loop.set_operands([v for v in (lo, hi) if not isinstance(v, int)])


def _has_effect(loop) -> bool:
    """Whether anything in `loop` writes memory or synchronises (pure ops,
    loops, ifs and allocs by themselves do not)."""
    from ....ir.traits import PURE
    for o in loop.walk(include_self=False):
        if not isinstance(o, (ForOp, IfOp, AllocOp)) and PURE not in o.traits:
            return True
    return False


def _inline(rw, op, block):
    for inner in list(block.ops):
        rw.insert_before(op, inner)
    rw.erase_op(op)


def _resolve(rw, guard, taken: bool):
    block = guard.then_block if taken else guard.else_block
    if block is None:
        rw.erase_op(guard)
    else:
        _inline(rw, guard, block)


class _Partitioner:
    def __init__(self, budget):
        self.rw = Rewriter()
        self.budget = budget
        self.stats: dict = {}
        self.tails: set = set()   # the partial-block copies try_symbolic made: never split again

    def count(self, what):
        self.stats[what] = self.stats.get(what, 0) + 1

    def try_loop(self, loop) -> bool:
        lo, hi = loop.attributes.get("lower"), loop.attributes.get("upper")
        if loop.kind == "thread":
            return False
        if lo is None or hi is None:
            return self.try_symbolic(loop)
        if hi - lo < 1:
            return False
        bounds = Bounds()
        for op in loop.walk(include_self=False):
            if not isinstance(op, IfOp):
                continue
            g = _analyse(loop, op, bounds)
            if g is None:
                continue
            a, b = g.true_interval()
            a = lo if a is None else max(a, lo)
            b = hi - 1 if b is None else min(b, hi - 1)
            if a > b:
                if g.false_on(lo, hi - 1):
                    _resolve(self.rw, op, False)
                    self.count("guards-removed")
                    return True
                continue
            if a == lo and b == hi - 1:
                _resolve(self.rw, op, True)
                self.count("guards-removed")
                return True
            if self.budget <= 0:
                return False
            self.budget -= 1
            self.split(loop, g, [(lo, a), (a, b + 1), (b + 1, hi)], main=1)
            self.count("loops-partitioned")
            return True
        return False

    def try_symbolic(self, loop) -> bool:
        """The run-time split of the module docstring; whether it applied."""
        if id(loop) in self.tails:
            return False
        groups: dict = {}
        bounds = Bounds()
        for op in loop.walk(include_self=False):
            if isinstance(op, IfOp):
                g = _analyse_symbolic(loop, op, bounds)
                if g is not None:
                    groups.setdefault(g[:2], []).append((op, g[2]))
        if not groups or self.budget <= 0:
            return False
        (k, size), guards = max(groups.items(), key=lambda kv: len(kv[1]))
        self.budget -= 1
        rw = self.rw
        top = max(rhi for _, rhi in guards)

        def make(cls, a, b):
            op = cls([a, b], [T.index], None, (), loop.loc)
            rw.insert_before(loop, op)
            return op.results[0]

        def const(v):
            op = ArithConstant.get(v, T.index, loop.loc)
            rw.insert_before(loop, op)
            return op.results[0]
        lo, hi = (v if not isinstance(v, int) else const(v) for v in (loop.lower, loop.upper))
        p = make(AddIOp, make(FloorDivSIOp, make(SubIOp, size, const(1 + top)), const(k)), const(1))
        p = make(MinSIOp, make(MaxSIOp, p, lo), hi)
        walk = list(loop.walk())
        pos = [walk.index(op) for op, _ in guards]
        for n, (s, t) in enumerate(((loop.lower, p), (p, loop.upper))):
            part = loop.clone({})
            _set_bounds(part, s, t)
            rw.insert_before(loop, part)
            if n == 0:
                inner = list(part.walk())
                for i in sorted(pos, reverse=True):
                    _resolve(rw, inner[i], True)
            else:
                self.tails.add(id(part))
        rw.erase_op(loop)
        self.count("loops-partitioned")
        return True

    def split(self, loop, g, ranges, main):
        """Copies of `loop` over `ranges`; in copy `main` the guard is
        true throughout, in the others it is dropped where provably false."""
        rw = self.rw
        pos = list(loop.walk()).index(g.op)
        for n, (s, t) in enumerate(ranges):
            if s >= t:
                continue
            part = loop.clone({})
            part.attributes["lower"] = s
            part.attributes["upper"] = t
            rw.insert_before(loop, part)
            guard = list(part.walk())[pos]
            if n == main:
                _resolve(rw, guard, True)
            elif g.false_on(s, t - 1):
                _resolve(rw, guard, False)
                if not _has_effect(part):
                    rw.erase_op(part)   # the part only ever did what the guard kept it from
        rw.erase_op(loop)


@dataclass
class LoopPartition(ModulePass):
    """Split loops so guards vanish from the main part."""

    NAME = "tir-loop-partition"
    OP = "tir.func"
    max_partitions: int = option(32, "the most loops split in one function")

    def validate(self):
        if self.max_partitions < 0:
            raise ValueError("max-partitions must be non-negative")

    def run_on(self, func, ctx):
        p = _Partitioner(self.max_partitions)
        changed = True
        while changed:
            changed = False
            for op in list(func.walk(include_self=False)):
                if isinstance(op, ForOp) and op.parent is not None and p.try_loop(op):
                    changed = True
                    break
        for k, n in p.stats.items():
            ctx.stat(self, k, n)
