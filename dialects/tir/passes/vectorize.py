"""tir-vectorize: turn ``vectorized`` loops into vector operations.

A loop ``tir.for %i = lo to lo+N vectorized`` is rewritten when N is a
constant no larger than ``max-lanes`` (default 64) and its body (no nested
loops or ifs) is straight-line loads, stores, arith and ``tir.intrin``.
Every value of the body gets a class:

* uniform -- the same in every lane (no dependence on %i): the op is moved
  before the loop, once;
* affine index -- ``index`` values ``base + s * %i`` built from %i through
  addi, subi and muli by a constant; kept as the scalar ``base`` (the value
  at %i = lo, computed by cloning the chain with %i := lo) and the stride s;
* vector -- N lanes, ``vector<NxT>``.

Rules: a load or store whose last index is affine with stride 1 and whose
other indices are uniform becomes a ``vector<N>`` access at the base
indices (N consecutive elements, row-major).  An ``arith.select`` of
indices under a uniform condition is affine when both sides are, with one
stride, or when one side is affine and the other a constant b (a guarded
read's clamped index, ``select(inside, i, 0)``): then, where the condition
takes the constant, the lanes read b, b+s, ... instead of b N times, so a
load may use it as its last index only when those stay inside the
buffer's last dimension (the value read there is then discarded by the
guard's select); a store or any arithmetic may not use it.  A comparison
``x >= b`` or ``x < b`` (``b <= x``, ``b > x``) of an affine index x of
stride 1 with a uniform b is uniform when x - b is a multiple of N at the
first lane (every coefficient of its linear form, and its constant plus
the loop's start, divisible by N): the N lanes then never straddle b.  It
is what a concatenation along the vectorized axis tests, when N divides
each input's extent (``select(c >= 64, B[c - 64], A[c])`` at N = 16); per
lane it would make the loads gathers.  A load with all indices
uniform stays a scalar load (when nothing in the loop stores to that
buffer); arith and intrinsics with a vector operand become the same op on
``vector<N>`` types, uniform operands entering through ``tir.broadcast``.
Anything else -- a stride other than 1 in the last index (a gather), an
affine value used as data (it would need a ramp), a store at a uniform
address, an access to a buffer the loop stores to at a different index,
a nested region -- leaves the loop as it is: the LLVM codegen then marks it
for LLVM's loop vectoriser.

    tir.for %v = 0 to 8 vectorized {
      %a = tir.load %A[%v] : f32
      %s = arith.addf %a, %x : f32
      tir.store %s, %B[%v] : f32
    }
    ==>
    %c0 = arith.constant 0 : index
    %a = tir.load %A[%c0] : vector<8xf32>
    %0 = tir.broadcast %x : vector<8xf32>
    %s = arith.addf %a, %0 : vector<8xf32>
    tir.store %s, %B[%c0] : vector<8xf32>
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir import types as T
from ....ir.pass_manager import ModulePass, option
from ....ir.rewriter import Rewriter
from ..bounds import const_int, linear
from ._util import const
from ...arith.ops import AddIOp, ArithOp, CmpIOp, MulIOp, SelectOp, SubIOp
from ..ops import AllocOp, BarrierOp, BroadcastOp, ForOp, IntrinOp, LoadOp, StoreOp

U, A, V = "uniform", "affine", "vector"


class _Reject(Exception):
    pass


def _same_index(xs, ys) -> bool:
    if len(xs) != len(ys):
        return False
    for x, y in zip(xs, ys):
        if x is not y and linear(x) != linear(y):
            return False
    return True


def _analyse(loop):
    """{value: (class, stride)} for the body, or raise _Reject."""
    iv = loop.induction_var
    cls = {iv: (A, 1)}
    n = loop.static_extent
    clamped: dict = {}   # select(c, affine, b) -> b: where c is false the lanes read b + s*lane

    def of(v):
        return cls.get(v, (U, 0))   # values from outside the loop are uniform

    stored: dict = {}   # buffer -> index lists stored to
    accesses: dict = {}   # buffer -> index lists accessed
    for op in loop.body.ops:
        if op.regions:
            raise _Reject("nested region")
        ins = [of(v) for v in op.operands]
        kinds = {k for k, _ in ins}
        is_load = isinstance(op, LoadOp)
        if is_load or isinstance(op, StoreOp):
            buf_i = 0 if is_load else 1
            buf = op.operands[buf_i]
            idx = list(op.operands[buf_i + 1:])
            ik = [of(v) for v in idx]
            if any(k == V for k, _ in ik) or any(k == A and s != 0 for k, s in ik[:-1]):
                raise _Reject("gather")
            if any(v in clamped for v in idx[:-1]) or (idx and idx[-1] in clamped and not is_load):
                raise _Reject("a clamped index")
            if idx and idx[-1] in clamped:
                dim = buf.type.shape[-1] if buf.type.shape else None
                b, step = clamped[idx[-1]], ik[-1][1]
                if not isinstance(dim, int) or b < 0 or b + step * (n - 1) >= dim:
                    raise _Reject("a clamped index past the buffer")
            last = ik[-1] if ik else (U, 0)
            uniform_addr = last[0] == U or (last[0] == A and last[1] == 0)
            if not uniform_addr and last[1] != 1:
                raise _Reject("stride")
            if isinstance((op.results[0].type if is_load else op.operands[0].type), T.VectorType):
                raise _Reject("already a vector access")
            accesses.setdefault(buf, []).append(idx)
            if is_load:
                cls[op.results[0]] = (U, 0) if uniform_addr else (V, 0)
            else:
                if uniform_addr:
                    raise _Reject("store to one address in every lane")
                if of(op.operands[0])[0] == A:
                    raise _Reject("an index stored as data")
                stored.setdefault(buf, []).append(idx)
            continue
        if isinstance(op, (BarrierOp, AllocOp)) or not op.results:
            raise _Reject(op.name)
        if any(v in clamped for v in op.operands):
            # its lanes are b + s*lane only as a load's last index, where the
            # bound is checked; arithmetic on them would move that unchecked
            raise _Reject("arithmetic on a clamped index")
        r = op.results[0]
        if kinds <= {U}:
            cls[r] = (U, 0)
            continue
        if r.type is T.index or any(v.type is T.index and of(v)[0] != U for v in op.operands):
            if isinstance(op, CmpIOp) and _lane_uniform_cmp(op, of, loop):
                cls[r] = (U, 0)
                continue
            if isinstance(op, (AddIOp, SubIOp)) and r.type is T.index:
                sa, sb = ins[0][1], ins[1][1]
                cls[r] = (A, sa + sb if isinstance(op, AddIOp) else sa - sb)
                continue
            if isinstance(op, SelectOp) and r.type is T.index and of(op.operands[0])[0] == U:
                (ka, sa), (kb, sb) = ins[1], ins[2]
                if ka == A and kb == A and sa == sb:
                    cls[r] = (A, sa)
                    continue
                for (k, st), other in (((ka, sa), op.operands[2]), ((kb, sb), op.operands[1])):
                    b = const_int(other)
                    if k == A and b is not None and of(other)[0] == U:
                        cls[r] = (A, st)
                        clamped[r] = b
                        break
                else:
                    raise _Reject("index arithmetic")
                continue
            if isinstance(op, MulIOp) and r.type is T.index:
                (ka, sa), (kb, sb) = ins
                ca, cb = const_int(op.operands[0]), const_int(op.operands[1])
                if ka == A and cb is not None:
                    cls[r] = (A, sa * cb)
                    continue
                if kb == A and ca is not None:
                    cls[r] = (A, sb * ca)
                    continue
            raise _Reject("index arithmetic")
        if A in kinds:
            raise _Reject("an index used as data")
        if not isinstance(op, (ArithOp, IntrinOp)):
            raise _Reject(op.name)
        cls[r] = (V, 0)
    for buf, stores in stored.items():
        first = stores[0]
        if any(not _same_index(first, other) for other in accesses[buf]):
            raise _Reject("loop-carried dependence")
    return cls


# x pred b with x the affine side: the predicates under which lanes that
# start at a multiple of N past b agree (x >= b, x < b); b on the left mirrors
_UNIFORM_PRED = {("sge", 0): True, ("slt", 0): True, ("sle", 1): True, ("sgt", 1): True}


def _lane_uniform_cmp(op, of, loop) -> bool:
    """Whether cmpi `op` of an affine index (stride 1) and a uniform one is
    the same in all lanes of `loop` (module docstring)."""
    (ka, sa), (kb, sb) = of(op.operands[0]), of(op.operands[1])
    if (ka, sa, kb) == (A, 1, U):
        side = 0
    elif (kb, sb, ka) == (A, 1, U):
        side = 1
    else:
        return False
    if not _UNIFORM_PRED.get((op.attributes["predicate"], side)):
        return False
    n, iv = loop.static_extent, loop.induction_var
    lo = loop.lower if isinstance(loop.lower, int) else const_int(loop.lower)
    if lo is None:
        return False
    tx, cx = linear(op.operands[side])
    tb, cb = linear(op.operands[1 - side])
    if tx.get(iv) != 1 or (cx - cb + lo) % n:
        return False
    for terms in (tx, tb):
        for atom, k in terms.items():
            if atom is not iv and (of(atom)[0] != U or k % n):
                return False
    return iv not in tb


class _Emitter:
    def __init__(self, loop, cls, rw):
        self.loop = loop
        self.cls = cls
        self.rw = rw
        self.n = loop.static_extent
        self.scalar: dict = {}   # value -> its scalar (uniform value or lane-0 base)
        self.vec: dict = {}
        self.splats: dict = {}

    def s(self, v):
        return self.scalar.get(v, v)

    def vector(self, v):
        if v in self.vec:
            return self.vec[v]
        x = self.s(v)
        b = self.splats.get(x)
        if b is None:
            op = BroadcastOp([x], [T.VectorType((self.n,), x.type)], None, (), self.loop.loc)
            self.rw.insert_before(self.loop, op)
            b = self.splats[x] = op.results[0]
        return b

    def emit(self):
        loop, rw, n = self.loop, self.rw, self.n
        iv = loop.induction_var
        self.scalar[iv] = const(rw, loop, loop.lower)
        for op in list(loop.body.ops):
            if isinstance(op, StoreOp):
                val, buf, *idx = op.operands
                new = StoreOp([self.vector(val), buf] + [self.s(i) for i in idx], (), None, (), op.loc)
                rw.insert_before(loop, new)
                continue
            r = op.results[0]
            k = self.cls[r][0]
            if k in (U, A):
                mapping = {v: self.s(v) for v in op.operands}
                new = op.clone(mapping)
                rw.insert_before(loop, new)
                self.scalar[r] = new.results[0]
                continue
            if isinstance(op, LoadOp):
                buf, *idx = op.operands
                new = LoadOp([buf] + [self.s(i) for i in idx], [T.VectorType((n,), r.type)], None, (), op.loc)
            else:
                rt = T.VectorType((n,), r.type)
                new = type(op)([self.vector(v) for v in op.operands], [rt], dict(op.attributes), (), op.loc)
            new.results[0].name = r.name
            rw.insert_before(loop, new)
            self.vec[r] = new.results[0]
        rw.erase_op(loop)


def vectorize_loop(loop, rw, max_lanes=64) -> bool:
    """Rewrite one vectorized loop into vector ops; False when it stays."""
    n = loop.static_extent
    if n is None or n < 1 or n > max_lanes:
        return False
    try:
        cls = _analyse(loop)
    except _Reject:
        return False
    _Emitter(loop, cls, rw).emit()
    return True


@dataclass
class Vectorize(ModulePass):
    """Turn vectorized loops into vector operations."""

    NAME = "tir-vectorize"
    OP = "tir.func"
    max_lanes: int = option(64, "the widest vector: a longer vectorized loop stays a loop")

    def validate(self):
        if self.max_lanes < 1:
            raise ValueError("max-lanes must be at least 1")

    def run_on(self, func, ctx):
        rw = Rewriter()
        done = kept = 0
        for op in list(func.walk(include_self=False)):
            if isinstance(op, ForOp) and op.kind == "vectorized":
                if vectorize_loop(op, rw, self.max_lanes):
                    done += 1
                else:
                    kept += 1
        if done:
            ctx.stat(self, "loops-vectorized", done)
        if kept:
            ctx.stat(self, "loops-kept", kept)
