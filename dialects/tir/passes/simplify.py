"""tir-simplify: fold constants and simplify index arithmetic and loops.

Runs one pattern set through the greedy driver (``apply_patterns_greedily``,
constants materialised as ``arith.constant``), on each tir.func:

* constant folding: an arith op (or ``tir.intrin``) whose operands are all
  constants becomes a constant, computed from the op's one definition in
  :mod:`tvmd.dialects.arith.semantics` (so the result is what the
  interpreters compute); what that definition calls undefined (integer
  division by zero, INT_MIN / -1, an index add/sub/mul that leaves 64 bits)
  is left alone;
* integer identities: constants to the right of commutative ops;
  x+0, x-0, x-x, x*1, x*0, x floordiv 1, x floormod 1, x/1, x%1, x|0, x^0,
  x<<0, x>>0, max(x,x), min(x,x); nested constant adds
  ((x+c1)+c2 → x+(c1+c2), also with subi) and products ((x*c1)*c2);
* floats, only where exact: x*1.0, x/1.0, x-0.0, x+(-0.0) → x;
* on ``index`` values, with the range analysis of :mod:`tvmd.dialects.tir.bounds`:
  floordiv/floormod by a positive constant c pull out every term whose
  coefficient c divides ((a*c + b) floordiv c → a + b floordiv c, and
  (a*c) floordiv c → a) and drop the division when what is left lies in one
  period ([k*c, k*c + c)); divsi/remsi of a non-negative value become
  floordiv/floormod; comparisons that the ranges decide become constants;
  min/max whose ranges are ordered pick a side;
* ``arith.select`` on a constant condition or between equal values;
* control flow: ``tir.if`` on a constant condition is replaced by the branch
  taken (so split-tail guards that are provably in range disappear);
  ``tir.if`` with nothing to do, loops whose extent is 0 (or provably empty),
  loops with an empty body and allocs nobody uses are erased; a loop of
  extent 1 (not thread-bound) is inlined with its induction variable
  replaced by the lower bound;
* dead pure ops are erased by the driver.

Fixed-width integers (i32, ...) get only the identities that hold modulo
2^n; the range-based rewrites are for ``index`` (64-bit, assumed not to
overflow, as TVM assumes).
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir import types as T
from ....ir.core import BlockArgument
from ....ir.pass_manager import ModulePass, option
from ....ir.rewriter import RewritePattern, apply_patterns_greedily
from ...arith import ops as A
from ...arith import semantics as S
from ..bounds import INT64_MAX, INT64_MIN, Bounds, const_int, linear, linear_range
from ..ops import AllocOp, ForOp, IfOp, IntrinOp

_COMMUTATIVE = (A.AddIOp, A.MulIOp, A.MaxSIOp, A.MinSIOp, A.AndIOp, A.OrIOp, A.XOrIOp)
_MINMAX = (A.MaxSIOp, A.MinSIOp)


def _below_loop_bound(a, b, pred):
    """The value of ``a PRED b`` where one side is the induction variable of
    a loop whose run-time upper bound is the other (``tir.for %i = 0 to %n``:
    ``%i < %n`` holds inside), or None.  A compute_at'd stage guards its
    rows with it: the range analysis sees two unrelated '?' sizes."""
    flip = {"slt": "sgt", "sle": "sge", "sgt": "slt", "sge": "sle"}
    for x, n, p in ((a, b, pred), (b, a, flip.get(pred))):
        loop = x.block.parent_op if isinstance(x, BlockArgument) and x.block is not None else None
        if isinstance(loop, ForOp) and loop.induction_var is x and loop.upper is n:
            return {"slt": True, "sle": True, "sgt": False, "sge": False}.get(p)
    return None


def _materialize(value, type, loc):
    if isinstance(type, (T.IntegerType, T.IndexType, T.FloatType)):
        return A.ConstantOp.get(value.item() if hasattr(value, "item") else value, type, loc)
    return None


def _const_value(v):
    """The numpy value of a scalar arith.constant, else None (also for
    bf16, which numpy cannot hold: such arithmetic is left to the code)."""
    d = v.defining_op()
    if isinstance(d, A.ConstantOp) and str(v.type) != "bf16":
        return d.evaluate()
    return None


def _float_const(v):
    d = v.defining_op()
    if isinstance(d, A.ConstantOp) and T.is_float(v.type):
        return d.attributes["value"]
    return None


def _attached(op, root):
    """Whether `op` is still inside `root` (not in a region erased with its op)."""
    while op is not None:
        if op is root:
            return True
        b = op.parent
        if b is None or b.parent is None:
            return False
        op = b.parent.parent
    return False


def _empty(block):
    return block is None or block.first is None


class _Simplifier(RewritePattern):
    ROOT = None

    def __init__(self, root):
        self.root = root
        self.bounds = Bounds()
        self.stats: dict = {}

    def count(self, what):
        self.stats[what] = self.stats.get(what, 0) + 1
        return True

    def match_and_rewrite(self, op, rw) -> bool:
        if not _attached(op, self.root):
            return False
        if isinstance(op, ForOp):
            return self.loop(op, rw)
        if isinstance(op, IfOp):
            return self.if_(op, rw)
        if isinstance(op, AllocOp):
            if not op.results[0].uses:
                rw.erase_op(op)
                return self.count("allocs-removed")
            return False
        if isinstance(op, IntrinOp):
            return self.fold_intrin(op, rw)
        if not isinstance(op, A.ArithOp) or isinstance(op, A.ConstantOp) or len(op.results) != 1:
            return False
        if self.fold(op, rw):
            return self.count("constants-folded")
        rt = op.results[0].type
        if isinstance(rt, T.VectorType):
            return False
        if isinstance(op, A.SelectOp):
            return self.select(op, rw)
        if isinstance(op, A.CmpIOp):
            return self.compare(op, rw)
        if T.is_float(rt):
            return self.float_identity(op, rw)
        if T.is_int(rt) and len(op.operands) == 2:
            return self.integer(op, rw)
        return False

    # -- building blocks ----------------------------------------------------------

    def const(self, anchor, rw, value, type):
        c = _materialize(value, type, anchor.loc)
        rw.insert_before(anchor, c)
        return c.results[0]

    def make(self, anchor, rw, cls, a, b):
        op = cls([a, b], [a.type], None, (), anchor.loc)
        rw.insert_before(anchor, op)
        return op.results[0]

    def build(self, anchor, rw, terms, const):
        """sum(coeff * atom) + const as new index ops before `anchor`."""
        acc = None
        for atom, k in terms.items():
            if k == -1 and acc is not None:
                acc = self.make(anchor, rw, A.SubIOp, acc, atom)
                continue
            t = atom if k == 1 else self.make(anchor, rw, A.MulIOp, atom, self.const(anchor, rw, k, T.index))
            acc = t if acc is None else self.make(anchor, rw, A.AddIOp, acc, t)
        if acc is None:
            return self.const(anchor, rw, const, T.index)
        if const > 0:
            acc = self.make(anchor, rw, A.AddIOp, acc, self.const(anchor, rw, const, T.index))
        elif const < 0:
            acc = self.make(anchor, rw, A.SubIOp, acc, self.const(anchor, rw, -const, T.index))
        return acc

    def replace(self, op, rw, value, what):
        rw.replace_op(op, [value])
        return self.count(what)

    def replace_const(self, op, rw, value, what):
        return self.replace(op, rw, self.const(op, rw, value, op.results[0].type), what)

    # -- constant folding ------------------------------------------------------------

    def fold(self, op, rw) -> bool:
        vals = [_const_value(v) for v in op.operands]
        rt = op.results[0].type
        if not vals or any(v is None for v in vals) or isinstance(rt, T.VectorType) or str(rt) == "bf16":
            return False
        if isinstance(op, A.BinaryOp) and S.is_undefined(op.SEMANTICS, vals[0], vals[1], rt):
            return False   # undefined: leave it for the program to fail on
        try:
            if rt is T.index and op.INDEX_EVAL is not None:
                r = op.INDEX_EVAL(int(vals[0]), int(vals[1]))
                if not INT64_MIN <= r <= INT64_MAX:
                    return False   # index overflow: undefined (nsw)
            else:
                r = op.evaluate(*vals)
        except (ValueError, TypeError, ArithmeticError, OverflowError):
            return False
        c = _materialize(r, op.results[0].type, op.loc)
        if c is None:
            return False
        rw.insert_before(op, c)
        rw.replace_op(op, c.results)
        return True

    def fold_intrin(self, op, rw) -> bool:
        from ..interpreter import eval_intrinsic
        vals = [_const_value(v) for v in op.operands]
        if any(v is None for v in vals) or isinstance(op.results[0].type, T.VectorType):
            return False
        r = eval_intrinsic(op.attributes["intrin"], vals, op.results[0].type)
        return self.replace_const(op, rw, r, "constants-folded")

    # -- integers ---------------------------------------------------------------------

    def integer(self, op, rw) -> bool:
        a, b = op.operands
        ca, cb = const_int(a), const_int(b)
        t = op.results[0].type
        if isinstance(op, _COMMUTATIVE) and ca is not None and cb is None:
            rw.modify(op, lambda o: o.set_operands([b, a]))
            return self.count("operands-canonicalized")
        if cb is not None:
            if cb == 0 and isinstance(op, (A.AddIOp, A.SubIOp, A.OrIOp, A.XOrIOp, A.ShLIOp, A.ShRSIOp)):
                return self.replace(op, rw, a, "identities")
            if cb == 0 and isinstance(op, (A.MulIOp, A.AndIOp)):
                return self.replace_const(op, rw, 0, "identities")
            if cb == 1 and isinstance(op, (A.MulIOp, A.FloorDivSIOp, A.DivSIOp)):
                return self.replace(op, rw, a, "identities")
            if cb == 1 and isinstance(op, (A.FloorModSIOp, A.RemSIOp)):
                return self.replace_const(op, rw, 0, "identities")
        if a is b:
            if isinstance(op, A.SubIOp):
                return self.replace_const(op, rw, 0, "identities")
            if isinstance(op, (A.MaxSIOp, A.MinSIOp, A.AndIOp, A.OrIOp)):
                return self.replace(op, rw, a, "identities")
        if cb is not None and isinstance(op, (A.AddIOp, A.SubIOp)) and self.nested_add(op, rw, a, cb):
            return True
        if cb is not None and isinstance(op, A.MulIOp):
            d = a.defining_op()
            if isinstance(d, A.MulIOp) and const_int(d.operands[1]) is not None:
                k = S.wrap(const_int(d.operands[1]) * cb, t)
                return self.replace(op, rw, self.make(op, rw, A.MulIOp, d.operands[0],
                                                      self.const(op, rw, k, t)), "constants-reassociated")
        if t is not T.index:
            return False
        if isinstance(op, (A.FloorDivSIOp, A.FloorModSIOp)) and cb is not None and cb > 0:
            return self.divmod(op, rw, a, cb, isinstance(op, A.FloorModSIOp))
        if isinstance(op, (A.DivSIOp, A.RemSIOp)) and cb is not None and cb > 0:
            lo, _ = self.bounds.range(a)
            if lo is not None and lo >= 0:
                new = A.FloorDivSIOp if isinstance(op, A.DivSIOp) else A.FloorModSIOp
                return self.replace(op, rw, self.make(op, rw, new, a, b), "divisions-simplified")
        if isinstance(op, _MINMAX):
            ra, rb = self.bounds.range(a), self.bounds.range(b)
            a_le_b = ra[1] is not None and rb[0] is not None and ra[1] <= rb[0]
            b_le_a = rb[1] is not None and ra[0] is not None and rb[1] <= ra[0]
            if a_le_b or b_le_a:
                pick_a = b_le_a if isinstance(op, A.MaxSIOp) else a_le_b
                return self.replace(op, rw, a if pick_a else b, "min-max-decided")
        return False

    def nested_add(self, op, rw, a, cb) -> bool:
        """(x ± c1) ± c2 → x ± (c1 ± c2)."""
        d = a.defining_op()
        if not isinstance(d, (A.AddIOp, A.SubIOp)):
            return False
        c1 = const_int(d.operands[1])
        if c1 is None:
            return False
        t = op.results[0].type
        k = (c1 if isinstance(d, A.AddIOp) else -c1) + (cb if isinstance(op, A.AddIOp) else -cb)
        k = S.wrap(k, t)
        x = d.operands[0]
        if k == 0:
            return self.replace(op, rw, x, "constants-reassociated")
        new = self.make(op, rw, A.AddIOp if k > 0 else A.SubIOp, x, self.const(op, rw, abs(k), t))
        return self.replace(op, rw, new, "constants-reassociated")

    def divmod(self, op, rw, x, c, is_mod) -> bool:
        lo, hi = self.bounds.range(x)
        if lo is not None and hi is not None and lo // c == hi // c:
            k = lo // c
            if not is_mod:
                return self.replace_const(op, rw, k, "divisions-simplified")
            if k == 0:
                return self.replace(op, rw, x, "divisions-simplified")
            return self.replace(op, rw, self.make(op, rw, A.SubIOp, x, self.const(op, rw, k * c, T.index)),
                                "divisions-simplified")
        terms, const = linear(x)
        pulled = {v: k // c for v, k in terms.items() if k % c == 0}
        rest = {v: k for v, k in terms.items() if k % c != 0}
        q0, r0 = divmod(const, c)
        if not pulled and q0 == 0:
            return False
        rlo, rhi = linear_range(self.bounds, rest, r0)
        if rlo is not None and rhi is not None and rlo // c == rhi // c:
            k = rlo // c
            new = self.build(op, rw, rest, r0 - k * c) if is_mod else self.build(op, rw, pulled, q0 + k)
            return self.replace(op, rw, new, "divisions-simplified")
        inner = self.build(op, rw, rest, r0)
        cv = self.const(op, rw, c, T.index)
        if is_mod:
            new = self.make(op, rw, A.FloorModSIOp, inner, cv)
        else:
            q = self.make(op, rw, A.FloorDivSIOp, inner, cv)
            new = q if not pulled and q0 == 0 else self.make(op, rw, A.AddIOp, self.build(op, rw, pulled, q0), q)
        return self.replace(op, rw, new, "divisions-simplified")

    def compare(self, op, rw) -> bool:
        a, b = op.operands
        pred = op.attributes["predicate"]
        if a is b:
            return self.replace_const(op, rw, pred in ("eq", "sle", "sge", "ule", "uge"), "comparisons-decided")
        if a.type is not T.index:
            return False
        below = _below_loop_bound(a, b, pred)
        if below is not None:
            return self.replace_const(op, rw, below, "comparisons-decided")
        ra, rb = self.bounds.range(a), self.bounds.range(b)
        if pred[0] == "u":
            if ra[0] is None or rb[0] is None or ra[0] < 0 or rb[0] < 0:
                return False
            pred = "s" + pred[1:]
        r = _decide(pred, ra, rb)
        if r is None:
            return False
        return self.replace_const(op, rw, r, "comparisons-decided")

    # -- floats, select -------------------------------------------------------------------

    def float_identity(self, op, rw) -> bool:
        if len(op.operands) != 2:
            return False
        a, b = op.operands
        cb = _float_const(b)
        if cb is None:
            return False
        neg_zero = cb == 0.0 and str(cb).startswith("-")
        if (isinstance(op, (A.MulFOp, A.DivFOp)) and cb == 1.0) or \
                (isinstance(op, A.SubFOp) and cb == 0.0 and not neg_zero) or \
                (isinstance(op, A.AddFOp) and neg_zero):
            return self.replace(op, rw, a, "identities")
        return False

    def select(self, op, rw) -> bool:
        c, a, b = op.operands
        if a is b:
            return self.replace(op, rw, a, "selects-decided")
        cv = _const_value(c)
        if cv is not None:
            return self.replace(op, rw, a if bool(cv) else b, "selects-decided")
        return False

    # -- control flow ---------------------------------------------------------------------

    def inline(self, op, rw, block):
        for inner in list(block.ops):
            rw.insert_before(op, inner)
        rw.erase_op(op)

    def if_(self, op, rw) -> bool:
        cv = _const_value(op.operands[0])
        if cv is not None:
            block = op.then_block if bool(cv) else op.else_block
            if block is None:
                rw.erase_op(op)
            else:
                self.inline(op, rw, block)
            return self.count("ifs-decided")
        if _empty(op.then_block) and _empty(op.else_block):
            rw.erase_op(op)
            return self.count("ifs-decided")
        return False

    def loop(self, op, rw) -> bool:
        lo, hi = op.lower, op.upper
        ext = op.static_extent
        empty = _empty(op.body)
        if ext is None:
            rlo = (lo, lo) if isinstance(lo, int) else self.bounds.range(lo)
            rhi = (hi, hi) if isinstance(hi, int) else self.bounds.range(hi)
            if rhi[1] is not None and rlo[0] is not None and rhi[1] <= rlo[0]:
                empty = True
        if empty or (ext is not None and ext <= 0):
            rw.erase_op(op)
            return self.count("loops-removed")
        if ext == 1 and op.kind != "thread":
            iv = op.induction_var
            if iv.uses:
                rw.replace_all_uses(iv, self.const(op, rw, lo, T.index))
            self.inline(op, rw, op.body)
            return self.count("loops-inlined")
        return False


def _decide(pred, ra, rb):
    """True/False when the ranges decide `a pred b` (signed), else None."""
    (al, ah), (bl, bh) = ra, rb

    def lt(x_hi, y_lo):   # every a < every b
        return x_hi is not None and y_lo is not None and x_hi < y_lo

    def le(x_hi, y_lo):
        return x_hi is not None and y_lo is not None and x_hi <= y_lo

    if pred == "slt":
        return True if lt(ah, bl) else False if le(bh, al) else None
    if pred == "sle":
        return True if le(ah, bl) else False if lt(bh, al) else None
    if pred == "sgt":
        return True if lt(bh, al) else False if le(ah, bl) else None
    if pred == "sge":
        return True if le(bh, al) else False if lt(ah, bl) else None
    if pred in ("eq", "ne"):
        if al is not None and al == ah == bl == bh:
            return pred == "eq"
        if lt(ah, bl) or lt(bh, al):
            return pred == "ne"
    return None


@dataclass
class Simplify(ModulePass):
    """Fold constants and simplify index arithmetic in tir.

    See the module docstring."""

    NAME = "tir-simplify"
    OP = "tir.func"
    max_iterations: int = option(10, "the most sweeps over a function before giving up on a fixed point")

    def run_on(self, func, ctx):
        s = _Simplifier(func)
        apply_patterns_greedily(func, [s], max_iterations=self.max_iterations, materialize=_materialize)
        for k, n in s.stats.items():
            ctx.stat(self, k, n)

    def validate(self):
        if self.max_iterations < 1:
            raise ValueError("max-iterations must be at least 1")
