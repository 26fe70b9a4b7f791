"""Bound inference for compute_at: the region of a producer that one
iteration of the consumer's attach loop reads.

An index is an interval ``[base, base + span]``: `span` a constant, `base`
an affine form ``c + sum(k * atom)`` whose atoms are index Values already
in scope at the attach point (the consumer's outer loop variables, or
quotients built there), each with a known static range.  The consumer's
leaves outside the attach point are points (their loop variables); those
inside run over [0, extent).  The intervals go up the split/fuse relations
to the consumer's root axes, then through the arith ops of its body to the
indices of each read of the producer:

    add, sub           [a, a+s] + [b, b+t] = [a+b, a+b+s+t]
    mul by constant k  scaled (k < 0 flips)
    floordiv by k > 0  a multiple of k stays affine (a / k, span // k); a
                       point stays a point (a new atom a // k); else
                       [a // k, a // k + (s + k - 1) // k]
    floormod by k > 0  a multiple of k with span < k is [0, span]; a point
                       becomes the atom a % k; else [0, k - 1]
    min, max           [m, m + max(s, t)], m = min(a, b) (max(a, b)) a new atom
    mul of two points  the product, a new atom

The region is the union over reads, which needs their bases to differ by a
constant (the usual case: windows of one affine index).  Anything else is
a diagnostic at the compute_at op.
"""

from __future__ import annotations

from ...ir.core import Value
from ...dialects.arith import ops as A


class Aff:
    """``const + sum(coef * atom)`` over index Values."""

    __slots__ = ("const", "terms")

    def __init__(self, const=0, terms=None):
        self.const = const
        self.terms = {k: v for k, v in (terms or {}).items() if v}

    @classmethod
    def of(cls, x):
        return cls(x) if isinstance(x, int) else cls(0, {x: 1})

    def __add__(self, o):
        t = dict(self.terms)
        for k, v in o.terms.items():
            t[k] = t.get(k, 0) + v
        return Aff(self.const + o.const, t)

    def scale(self, k):
        return Aff(self.const * k, {a: c * k for a, c in self.terms.items()})

    def __sub__(self, o):
        return self + o.scale(-1)

    def is_const(self):
        return not self.terms

    def static_range(self, ranges):
        lo = hi = self.const
        for a, c in self.terms.items():
            alo, ahi = ranges[a]
            lo += min(c * alo, c * ahi)
            hi += max(c * alo, c * ahi)
        return lo, hi

    def emit(self, e):
        """Materialize with the emitter: an int or an index Value."""
        v = 0
        for a, c in self.terms.items():
            v = e.add(v, e.mul(a, c))
        return e.add(v, self.const)


class Interval:
    __slots__ = ("base", "span")

    def __init__(self, base: Aff, span: int):
        self.base = base
        self.span = span

    @classmethod
    def point(cls, x):
        return cls(Aff.of(x), 0)

    def __add__(self, o):
        return Interval(self.base + o.base, self.span + o.span)

    def scale(self, k):
        if k >= 0:
            return Interval(self.base.scale(k), self.span * k)
        return Interval(self.base.scale(k) + Aff(self.span * k), -self.span * k)

    def __sub__(self, o):
        return self + o.scale(-1)

    def union(self, o):
        d = o.base - self.base
        if not d.is_const():
            return None
        lo = min(0, d.const)
        hi = max(self.span, d.const + o.span)
        return Interval(self.base + Aff(lo), hi - lo)


class Unbounded(Exception):
    """An index expression the analysis cannot bound (message says why)."""


# the index arithmetic interval analysis follows
_INDEX_BINARY = (A.AddIOp, A.SubIOp, A.MulIOp, A.FloorDivSIOp, A.FloorModSIOp, A.MinSIOp, A.MaxSIOp)


class IndexIntervals:
    """Intervals of the index Values of one consumer body.

    `args` maps the body's block arguments to intervals; `e` emits the
    atoms quotients need, at the attach point; `ranges` maps atoms to their
    static (lo, hi) and grows with the atoms made here."""

    def __init__(self, args, e, ranges):
        self.memo = dict(args)
        self.e = e
        self.ranges = ranges

    def atom(self, v, lo, hi):
        if isinstance(v, int):
            return Interval.point(v)
        self.ranges[v] = (lo, hi)
        return Interval.point(v)

    def of(self, v: Value) -> Interval:
        it = self.memo.get(v)
        if it is None:
            it = self.memo[v] = self._compute(v)
        return it

    def _compute(self, v):
        op = v.defining_op()
        if op is None:
            raise Unbounded(f"the index '%{v.name}' is not made from the consumer's axes")
        if isinstance(op, A.ConstantOp):
            return Interval.point(int(op.attributes["value"]))
        if isinstance(op, _INDEX_BINARY):
            a, b = (self.of(x) for x in op.operands)
            if isinstance(op, A.AddIOp):
                return a + b
            if isinstance(op, A.SubIOp):
                return a - b
            if isinstance(op, A.MulIOp):
                if b.span == 0 and b.base.is_const():
                    return a.scale(b.base.const)
                if a.span == 0 and a.base.is_const():
                    return b.scale(a.base.const)
                if a.span == 0 and b.span == 0:   # both fixed here: the product is
                    (alo, ahi), (blo, bhi) = a.base.static_range(self.ranges), b.base.static_range(self.ranges)
                    ends = [alo * blo, alo * bhi, ahi * blo, ahi * bhi]
                    e = self.e
                    return self.atom(e.mul(a.base.emit(e), b.base.emit(e)), min(ends), max(ends))
                raise Unbounded("it multiplies two loop-dependent indices")
            if isinstance(op, (A.MinSIOp, A.MaxSIOp)):
                return self._minmax(op, a, b)
            if not (b.span == 0 and b.base.is_const() and b.base.const > 0):
                raise Unbounded(f"'{op.name}' divides by something other than a positive constant")
            return self._divmod(op, a, b.base.const)
        raise Unbounded(f"the index uses '{op.name}'")

    def _minmax(self, op, a, b):
        """min/max of [a, a+s] and [b, b+t] lies in [m, m + max(s, t)] for
        m = min(a, b) (or max(a, b))."""
        e = self.e
        kind = "min" if isinstance(op, A.MinSIOp) else "max"
        fold = min if kind == "min" else max
        (alo, ahi), (blo, bhi) = a.base.static_range(self.ranges), b.base.static_range(self.ranges)
        span = max(a.span, b.span)
        if a.base.is_const() and b.base.is_const():
            return Interval(Aff(fold(a.base.const, b.base.const)), span)
        m = e.index(kind, a.base.emit(e), b.base.emit(e))
        return Interval(self.atom(m, fold(alo, blo), fold(ahi, bhi)).base, span)

    def _divmod(self, op, a, k):
        e = self.e
        if a.base.const % k == 0 and all(c % k == 0 for c in a.base.terms.values()):
            # a multiple of k plus [0, span]: (32*jo + [0, 31]) / 32 is jo, % 32 is [0, 31]
            if isinstance(op, A.FloorDivSIOp):
                return Interval(Aff(a.base.const // k, {x: c // k for x, c in a.base.terms.items()}), a.span // k)
            if a.span < k:
                return Interval(Aff(0), a.span)
        lo, hi = a.base.static_range(self.ranges)
        if isinstance(op, A.FloorDivSIOp):
            if a.base.is_const():
                c = a.base.const
                return Interval(Aff(c // k), (c + a.span) // k - c // k)
            q = e.floordiv(a.base.emit(e), k)
            it = self.atom(q, lo // k, hi // k)
            return Interval(it.base, (a.span + k - 1) // k)
        if a.span == 0:
            if a.base.is_const():
                return Interval.point(a.base.const % k)
            return self.atom(e.floormod(a.base.emit(e), k), 0, k - 1)
        return Interval(Aff(0), k - 1)
