"""Integer range analysis and linear forms for tir index arithmetic.

``Bounds().range(v)`` gives an interval ``(lo, hi)`` (inclusive; ``None``
for an unknown side) that every value of the index/integer value `v` lies
in, from:

* constants: ``(c, c)``;
* loop induction variables: ``[lower, upper - 1]``, with dynamic bounds
  replaced by their own ranges (a loop that never runs makes any claim
  about its body vacuously true);
* interval arithmetic through addi, subi, muli, floordivsi / floormodsi /
  divsi / remsi by a constant, maxsi, minsi, select and index_cast.

The interval rules live here; the scalar meaning of each op they apply to
bounds (floordiv, truncdiv) is the one in :mod:`tvmd.dialects.arith.semantics`.

Only ``index`` values get ranges (plus constants and in-range index_casts):
fixed-width integers wrap, and interval arithmetic would then be wrong.

Everything else (function arguments, loads) is unknown.  Results are
memoised per value; the depth of the expression walk is capped so that long
chains stay cheap and never hit Python's recursion limit.

``linear(v)`` writes `v` as ``sum(coeff * atom) + const`` through addi,
subi and muli by constants, which is what floordiv/floormod simplification
needs: ``(o * 64 + v) floordiv 64`` is ``o + v floordiv 64``.
"""

from __future__ import annotations

from ...ir import types as T
from ..arith import ops as A
from .ops import ForOp

# scalar meaning of the ops the interval rules evaluate on bounds (one
# definition: dialects/arith/semantics.py)
_floordiv = A.FloorDivSIOp.INDEX_EVAL
_truncdiv = A.DivSIOp.INDEX_EVAL

MAX_DEPTH = 64
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def const_int(v):
    """The Python int of an integer arith.constant value, else None."""
    d = v.defining_op()
    if isinstance(d, A.ConstantOp) and T.is_int(v.type) and v.type is not T.i1:
        val = d.attributes["value"]
        if type(val) is int:
            return val
    return None


def _add(a, b):
    return None if a is None or b is None else a + b


def _scale(a, c):
    lo, hi = a
    lo = None if lo is None else lo * c
    hi = None if hi is None else hi * c
    return (lo, hi) if c >= 0 else (hi, lo)


def _mul_interval(a, b):
    (al, ah), (bl, bh) = a, b
    if bl is not None and bl == bh:
        return _scale(a, bl)
    if al is not None and al == ah:
        return _scale(b, al)
    if None in (al, ah, bl, bh):
        return (None, None)
    ps = (al * bl, al * bh, ah * bl, ah * bh)
    return (min(ps), max(ps))


def _floordiv_interval(a, c):
    lo, hi = a
    if c > 0:
        return (None if lo is None else _floordiv(lo, c), None if hi is None else _floordiv(hi, c))
    return (None if hi is None else _floordiv(hi, c), None if lo is None else _floordiv(lo, c))


class Bounds:
    def __init__(self):
        self.memo: dict = {}

    def range(self, v, depth=0):
        r = self.memo.get(v)
        if r is not None:
            return r
        if depth > MAX_DEPTH:
            return (None, None)
        r = self._compute(v, depth + 1)
        self.memo[v] = r
        return r

    def _compute(self, v, depth):
        t = v.type
        if not T.is_int(t) or t is T.i1:
            return (None, None)
        c = const_int(v)
        if c is not None:
            return (c, c)
        d = v.defining_op()
        if t is not T.index and not isinstance(d, A.IndexCastOp):
            return (None, None)   # fixed-width integers wrap: interval arithmetic would lie
        if d is None:
            owner = v.block.parent_op
            if isinstance(owner, ForOp) and v is owner.body.args[0]:
                lo = owner.lower
                hi = owner.upper
                lo = lo if isinstance(lo, int) else self.range(lo, depth)[0]
                hi = hi if isinstance(hi, int) else self.range(hi, depth)[1]
                return (lo, None if hi is None else hi - 1)
            return (None, None)
        ops = d.operands
        if isinstance(d, A.AddIOp):
            a, b = self.range(ops[0], depth), self.range(ops[1], depth)
            return (_add(a[0], b[0]), _add(a[1], b[1]))
        if isinstance(d, A.SubIOp):
            a, b = self.range(ops[0], depth), self.range(ops[1], depth)
            return (_add(a[0], None if b[1] is None else -b[1]), _add(a[1], None if b[0] is None else -b[0]))
        if isinstance(d, A.MulIOp):
            return _mul_interval(self.range(ops[0], depth), self.range(ops[1], depth))
        if isinstance(d, (A.MaxSIOp, A.MinSIOp)):
            a, b = self.range(ops[0], depth), self.range(ops[1], depth)
            if isinstance(d, A.MaxSIOp):
                return (None if a[0] is None and b[0] is None else max(x for x in (a[0], b[0]) if x is not None),
                        None if a[1] is None or b[1] is None else max(a[1], b[1]))
            return (None if a[0] is None or b[0] is None else min(a[0], b[0]),
                    None if a[1] is None and b[1] is None else min(x for x in (a[1], b[1]) if x is not None))
        if isinstance(d, A.SelectOp):
            a, b = self.range(ops[1], depth), self.range(ops[2], depth)
            return (None if a[0] is None or b[0] is None else min(a[0], b[0]),
                    None if a[1] is None or b[1] is None else max(a[1], b[1]))
        if isinstance(d, A.IndexCastOp):
            a = self.range(ops[0], depth)
            w = 64 if t is T.index else t.width
            lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
            if a[0] is not None and a[1] is not None and lo <= a[0] and a[1] <= hi:
                return a
            return (None, None)
        c = const_int(ops[1]) if len(ops) == 2 else None
        if c is None or c == 0:
            return (None, None)
        a = self.range(ops[0], depth)
        if isinstance(d, A.FloorDivSIOp):
            return _floordiv_interval(a, c)
        if isinstance(d, A.DivSIOp):
            if a[0] is not None and a[1] is not None:
                qs = (_truncdiv(a[0], c), _truncdiv(a[1], c))
                return (min(qs), max(qs))
            return (None, None)
        if isinstance(d, A.FloorModSIOp):
            if c > 0:
                if a[0] is not None and a[1] is not None and _floordiv(a[0], c) == _floordiv(a[1], c):
                    k = _floordiv(a[0], c)
                    return (a[0] - k * c, a[1] - k * c)
                return (0, c - 1)
            return (c + 1, 0)
        if isinstance(d, A.RemSIOp):
            m = abs(c) - 1
            if a[0] is not None and a[0] >= 0:
                if a[1] is not None and _floordiv(a[0], abs(c)) == _floordiv(a[1], abs(c)):
                    k = _floordiv(a[0], abs(c))
                    return (a[0] - k * abs(c), a[1] - k * abs(c))
                return (0, m)
            return (-m, m)
        return (None, None)

    def within(self, v, lo, hi) -> bool:
        """Whether every value of `v` lies in [lo, hi]."""
        r = self.range(v)
        return r[0] is not None and r[1] is not None and lo <= r[0] and r[1] <= hi


def linear(v, depth=0):
    """(terms, const): `v` == sum(coeff * atom for atom, coeff in terms) + const,
    terms an ordered dict {atom Value: int coeff}, through index addi, subi
    and muli by a constant.  Atoms are the values it cannot split further."""
    terms: dict = {}
    const = 0

    def add(x, k, depth):
        nonlocal const
        c = const_int(x)
        if c is not None:
            const += k * c
            return
        d = x.defining_op()
        if depth < MAX_DEPTH and d is not None and x.type is T.index:
            if isinstance(d, A.AddIOp):
                add(d.operands[0], k, depth + 1)
                add(d.operands[1], k, depth + 1)
                return
            if isinstance(d, A.SubIOp):
                add(d.operands[0], k, depth + 1)
                add(d.operands[1], -k, depth + 1)
                return
            if isinstance(d, A.MulIOp):
                c0, c1 = const_int(d.operands[0]), const_int(d.operands[1])
                if c1 is not None:
                    add(d.operands[0], k * c1, depth + 1)
                    return
                if c0 is not None:
                    add(d.operands[1], k * c0, depth + 1)
                    return
        terms[x] = terms.get(x, 0) + k
        if terms[x] == 0:
            del terms[x]

    add(v, 1, depth)
    return terms, const


def linear_range(bounds: Bounds, terms, const):
    """The interval of sum(coeff * atom) + const."""
    lo = hi = const
    for atom, k in terms.items():
        a = _mul_interval(bounds.range(atom), (k, k))
        lo = _add(lo, a[0])
        hi = _add(hi, a[1])
    return lo, hi
