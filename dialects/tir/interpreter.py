"""The reference interpreter for tir: the oracle for tir passes and codegen.

    from tvmd.dialects.tir.interpreter import run
    run(func_op, A, B, C)          # numpy arrays (and ints for index args), in
                                   # declaration order; C is written in place
    out = run(func_op, A, B, C)    # also returns the outputs (the last
                                   # num_outputs buffers), one array or a tuple

Algorithm: the function is compiled once into Python closures over a flat
register file (a list, one slot per SSA value), then run with plain Python
loops.  Closures, not a dispatch on op names per step, keep it a few times
faster than a tree walk; it stays an oracle, not a fast path.

Semantics (the ones codegen must match):

* arith ops mean what :mod:`tvmd.dialects.arith.semantics` defines: the
  array form (``op.evaluator()``: numpy, in the op's own dtype, under one
  ``np.errstate(all="ignore")``) for fixed-width and float values; ``index``
  values are Python ints and the index ops take the Python-int form
  (``INDEX_EVAL``) of the same definition.  An index division by zero is an
  error here (it is undefined behaviour in LLVM).
* ``tir.load`` / ``tir.store`` index n-d buffers row-major; a ``vector<N>``
  access reads/writes N consecutive elements of the flattened buffer.  Every
  access is bounds checked (an error names the op's location), so an
  out-of-range index never wraps silently as numpy's negative indices would.
* ``tir.alloc`` gives a fresh buffer each time it runs, filled with NaN for
  floats (so a read of uninitialised memory shows) and zeros for integers.
* ``tir.for`` runs its body for lower <= i < upper, whatever the loop kind.
  A thread-bound loop whose body holds a ``tir.barrier`` runs its threads in
  lockstep (each thread a Python generator that yields at every barrier), so
  shared-memory kernels mean what they mean on a GPU; without barriers the
  threads run one after another.  A barrier outside any thread loop is a no-op.
* ``tir.broadcast`` fills every lane with its scalar operand.
* ``tir.intrin``: exp log sqrt rsqrt tanh sigmoid erf fabs floor ceil round
  (half to even, like rint) trunc sin cos pow fma, in the operand dtype
  (erf through ``math.erf``).
"""

from __future__ import annotations

import math

import numpy as np

from ...ir import types as T
from ...ir.diagnostics import DiagnosticError
from ..arith import ops as A
from . import ops as tir


# -- values of each type ------------------------------------------------------

def _caster(t):
    """A function that turns a computed value into the canonical Python
    value for type `t`: int for index, bool for i1, a numpy scalar of the
    dtype for other scalars, a numpy array for vectors."""
    if t is T.index:
        return int
    if t is T.i1:
        return bool
    if isinstance(t, T.VectorType):
        dt = np.dtype("int64") if t.element_type is T.index else T.to_numpy_dtype(t.element_type)
        return lambda x: np.asarray(x).astype(dt, copy=False).reshape(-1)
    dt = T.to_numpy_dtype(t)
    st = dt.type
    if dt.kind == "f":
        return lambda x: x if type(x) is st else st(x)
    # integers wrap to their width, as they do in compiled code
    return lambda x: x if type(x) is st else np.asarray(x).astype(dt)[()]


def _vec_erf(x):
    if np.ndim(x) == 0:
        return math.erf(float(x))
    return np.array([math.erf(float(v)) for v in np.asarray(x).reshape(-1)])


def _rsqrt(x):
    one = np.ones((), np.asarray(x).dtype)
    return one / np.sqrt(x)


def _sigmoid(x):
    one = np.ones((), np.asarray(x).dtype)
    return one / (one + np.exp(-x))


def _fma(a, b, c):
    # one rounding: exact product and sum in double, rounded once to the dtype
    dt = np.asarray(a).dtype
    wide = np.float64 if dt.itemsize < 8 else np.longdouble
    return (np.asarray(a, wide) * np.asarray(b, wide) + np.asarray(c, wide)).astype(dt)


def dot4_u8s8(a, b):
    """tir.ops.WORD_INTRINSICS: the four byte products of words a (unsigned
    bytes) and b (signed), summed in int64 (at most 4 * 255 * 128)."""
    a, b = np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64)
    total = np.zeros(np.broadcast(a, b).shape, np.int64)
    for i in range(4):
        total += ((a >> 8 * i) & 255) * ((((b >> 8 * i) & 255) ^ 128) - 128)
    return total


def dot2_bf16(a, b):
    """tir.ops.WORD_INTRINSICS: hi(a) * hi(b) + lo(a) * lo(b), the bf16
    halves of words a and b as f32 (their products are exact in f32), the
    sum in f64 (the caster rounds it to f32)."""
    a, b = np.asarray(a).astype(np.uint32), np.asarray(b).astype(np.uint32)

    def half(w, shift):
        return ((w >> shift) << 16).astype(np.uint32).view(np.float32).astype(np.float64)
    return half(a, 16) * half(b, 16) + half(a & 0xFFFF, 0) * half(b & 0xFFFF, 0)


# name -> numpy implementation (dtype preserving; the caster rounds back)
INTRINSIC_IMPLS = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": _rsqrt, "tanh": np.tanh,
    "sigmoid": _sigmoid, "erf": _vec_erf, "fabs": np.abs, "floor": np.floor, "ceil": np.ceil,
    "round": np.rint, "trunc": np.trunc, "sin": np.sin, "cos": np.cos, "pow": np.power, "fma": _fma,
    "log2": np.log2, "log10": np.log10, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "dot4_u8s8": dot4_u8s8, "dot2_bf16": dot2_bf16,
}


def eval_intrinsic(name, args, result_type):
    """The value of ``tir.intrin name(args)``; also used by tir-simplify to fold."""
    with np.errstate(all="ignore"):
        return _caster(result_type)(INTRINSIC_IMPLS[name](*args))


# -- the compiler to closures -------------------------------------------------

class _Compiler:
    def __init__(self):
        self.slots: dict = {}
        self.consts: list = []       # (slot, value) preset in every fresh register file
        self.barrier_ops: set = set()

    def slot(self, v) -> int:
        s = self.slots.get(v)
        if s is None:
            s = self.slots[v] = len(self.slots)
        return s

    # -- blocks -----------------------------------------------------------------

    def block(self, block):
        """A function env -> None running the block's ops in order."""
        steps = [s for s in (self.op(op) for op in block.ops) if s is not None]
        if not steps:
            return lambda env: None
        if len(steps) == 1:
            return steps[0]
        if len(steps) == 2:
            s0, s1 = steps

            def run2(env):
                s0(env)
                s1(env)
            return run2

        def run(env):
            for s in steps:
                s(env)
        return run

    def gen_block(self, block):
        """A generator function env -> (yields at each barrier) for a block
        that contains a barrier somewhere inside."""
        steps = []
        for op in block.ops:
            if op in self.barrier_ops:
                steps.append((True, self.gen_op(op)))
            else:
                s = self.op(op)
                if s is not None:
                    steps.append((False, s))

        def run(env):
            for is_gen, s in steps:
                if is_gen:
                    yield from s(env)
                else:
                    s(env)
        return run

    # -- ops --------------------------------------------------------------------

    def op(self, op):
        if op in self.barrier_ops and not isinstance(op, tir.BarrierOp):
            # a loop or if holding a barrier, reached outside any lockstep group
            g = self.gen_op(op)

            def run_gen(env):
                for _ in g(env):
                    pass
            return run_gen
        h = _HANDLERS.get(type(op))
        if h is None:
            if isinstance(op, A.ArithOp):
                return self.arith_generic(op)
            raise DiagnosticError(op.loc, f"the tir interpreter cannot run '{op.name}'")
        return h(self, op)

    def gen_op(self, op):
        if isinstance(op, tir.BarrierOp):
            def barrier(env):
                yield
            return barrier
        if isinstance(op, tir.IfOp):
            return self.if_(op, gen=True)
        if isinstance(op, tir.ForOp):
            return self.for_(op, gen=True)
        raise DiagnosticError(op.loc, f"'{op.name}' cannot hold a tir.barrier")

    # arith -----------------------------------------------------------------

    def op_arith_constant(self, op):
        self.consts.append((self.slot(op.results[0]), _caster(op.results[0].type)(op.evaluate())))
        return None

    def arith_generic(self, op):
        r = self.slot(op.results[0])
        rt = op.results[0].type
        cast = _caster(rt)
        srcs = [self.slot(v) for v in op.operands]
        loc = op.loc
        if rt is T.index and op.INDEX_EVAL is not None and all(v.type is T.index for v in op.operands):
            fn = op.INDEX_EVAL
            a, b = srcs
            if op.DIVISION:
                name = op.name

                def div(env):
                    y = env[b]
                    if y == 0:
                        raise DiagnosticError(loc, f"'{name}' divides by zero")
                    env[r] = fn(env[a], y)
                return div

            def index_binary(env):
                env[r] = fn(env[a], env[b])
            return index_binary
        if isinstance(op, A.CmpIOp) and op.operands[0].type is T.index:
            fn = op.INDEX_PREDICATES[op.attributes["predicate"]]
            a, b = srcs

            def cmp(env):
                env[r] = fn(env[a], env[b])
            return cmp
        if isinstance(op, A.SelectOp):
            c, a, b = srcs
            if not isinstance(op.operands[0].type, T.VectorType):
                def select(env):
                    env[r] = env[a] if env[c] else env[b]
                return select

            def vselect(env):
                env[r] = cast(np.where(env[c], env[a], env[b]))
            return vselect
        if isinstance(op, A.IndexCastOp) and rt is T.index:
            # the value of an iN (sign-extended), uiN or i1 (zero-extended) scalar
            a = srcs[0]

            def to_index(env):
                env[r] = int(env[a])
            return to_index
        if not isinstance(op, A.ArithOp):
            raise DiagnosticError(loc, f"the tir interpreter cannot run '{op.name}'")
        ev = op.evaluator()
        if len(srcs) == 1:
            a = srcs[0]

            def unary(env):
                env[r] = cast(ev(env[a]))
            return unary
        if len(srcs) == 2:
            a, b = srcs

            def binary(env):
                env[r] = cast(ev(env[a], env[b]))
            return binary

        def nary(env):
            env[r] = cast(ev(*[env[s] for s in srcs]))
        return nary

    # memory ----------------------------------------------------------------

    def op_tir_alloc(self, op):
        r = self.slot(op.results[0])
        t = op.results[0].type
        dt = T.to_numpy_dtype(t.element_type)
        fill = np.nan if dt.kind == "f" else 0
        dims = [(d, None) if type(d) is int else (0, self.slot(d)) for d in op.dims()]   # (size, or its slot)

        def alloc(env):
            env[r] = np.full([n if k is None else int(env[k]) for n, k in dims], fill, dt)
        return alloc

    def _oob(self, op, arr, idx, lanes=1):
        what = f"{lanes} elements at " if lanes > 1 else ""
        return DiagnosticError(op.loc, f"'{op.name}' out of bounds: {what}index "
                                       f"[{', '.join(str(i) for i in idx)}] of a buffer of shape "
                                       f"{list(arr.shape)}")

    def op_tir_load(self, op):
        buf, *idx = op.operands
        b = self.slot(buf)
        r = self.slot(op.results[0])
        ix = [self.slot(v) for v in idx]
        rt = op.results[0].type
        oob = self._oob
        if isinstance(rt, T.VectorType):
            n = rt.lanes

            def vload(env):
                a = env[b]
                i = [env[s] for s in ix]
                lin = _linear(a.shape, i)
                if min(i, default=0) < 0 or lin + n > a.size:
                    raise oob(op, a, i, n)
                env[r] = a.reshape(-1)[lin:lin + n].copy()
            return vload
        cast = None if T.is_float(rt) else _caster(rt)
        if len(ix) == 1:
            s0 = ix[0]

            def load1(env):
                a = env[b]
                i = env[s0]
                if i < 0:
                    raise oob(op, a, [i])
                try:
                    v = a[i]
                except IndexError:
                    raise oob(op, a, [i]) from None
                env[r] = v if cast is None else cast(v)
            return load1

        def load(env):
            a = env[b]
            i = tuple([env[s] for s in ix])
            if min(i, default=0) < 0:
                raise oob(op, a, i)
            try:
                v = a[i]
            except IndexError:
                raise oob(op, a, i) from None
            env[r] = v if cast is None else cast(v)
        return load

    def op_tir_store(self, op):
        val, buf, *idx = op.operands
        v = self.slot(val)
        b = self.slot(buf)
        ix = [self.slot(x) for x in idx]
        oob = self._oob
        if isinstance(val.type, T.VectorType):
            n = val.type.lanes

            def vstore(env):
                a = env[b]
                i = [env[s] for s in ix]
                lin = _linear(a.shape, i)
                if min(i, default=0) < 0 or lin + n > a.size:
                    raise oob(op, a, i, n)
                a.reshape(-1)[lin:lin + n] = env[v]
            return vstore
        if len(ix) == 1:
            s0 = ix[0]

            def store1(env):
                a = env[b]
                i = env[s0]
                if i < 0:
                    raise oob(op, a, [i])
                try:
                    a[i] = env[v]
                except IndexError:
                    raise oob(op, a, [i]) from None
            return store1

        def store(env):
            a = env[b]
            i = tuple([env[s] for s in ix])
            if min(i, default=0) < 0:
                raise oob(op, a, i)
            try:
                a[i] = env[v]
            except IndexError:
                raise oob(op, a, i) from None
        return store

    # control flow ----------------------------------------------------------

    def _bound(self, loop, key):
        b = loop.lower if key == "lower" else loop.upper
        if isinstance(b, int):
            return lambda env: b
        s = self.slot(b)
        return lambda env: env[s]

    def op_tir_for(self, op):
        return self.for_(op, gen=False)

    def for_(self, op, gen):
        lo, hi = self._bound(op, "lower"), self._bound(op, "upper")
        iv = self.slot(op.induction_var)
        lockstep = op.attributes.get("kind") == "thread" and op.attributes.get("thread") != "vthread" \
            and op in self.barrier_ops
        if lockstep:
            body = self.gen_block(op.body)
            loc = op.loc

            def threads(env):
                gens = []
                for i in range(lo(env), hi(env)):
                    e = env.copy()
                    e[iv] = i
                    gens.append(body(e))
                yield from _lockstep(gens, loc)
            if gen:
                return threads

            def run_threads(env):
                for _ in threads(env):
                    pass
            return run_threads
        if gen:
            body = self.gen_block(op.body)

            def gen_loop(env):
                for i in range(lo(env), hi(env)):
                    env[iv] = i
                    yield from body(env)
            return gen_loop
        body = self.block(op.body)

        def loop(env):
            for i in range(lo(env), hi(env)):
                env[iv] = i
                body(env)
        return loop

    def op_tir_if(self, op):
        return self.if_(op, gen=False)

    def if_(self, op, gen):
        c = self.slot(op.operands[0])
        mk = self.gen_block if gen else self.block
        then = mk(op.then_block)
        els = mk(op.else_block) if op.else_block is not None else None
        if gen:
            def gen_if(env):
                if env[c]:
                    yield from then(env)
                elif els is not None:
                    yield from els(env)
            return gen_if

        def if_(env):
            if env[c]:
                then(env)
            elif els is not None:
                els(env)
        return if_

    def op_tir_barrier(self, op):
        return None   # outside a lockstep thread group: nothing to wait for

    def op_tir_prefetch(self, op):
        return None   # a cache hint: nothing to compute

    def op_tir_broadcast(self, op):
        a = self.slot(op.operands[0])
        r = self.slot(op.results[0])
        t = op.results[0].type
        n = t.lanes
        dt = np.dtype("int64") if t.element_type is T.index else T.to_numpy_dtype(t.element_type)

        def broadcast(env):
            env[r] = np.full(n, env[a], dt)
        return broadcast

    def op_tir_intrin(self, op):
        fn = INTRINSIC_IMPLS[op.attributes["intrin"]]
        cast = _caster(op.results[0].type)
        r = self.slot(op.results[0])
        srcs = [self.slot(v) for v in op.operands]
        if len(srcs) == 1:
            a = srcs[0]

            def intrin1(env):
                env[r] = cast(fn(env[a]))
            return intrin1

        def intrin(env):
            env[r] = cast(fn(*[env[s] for s in srcs]))
        return intrin


# op class -> the _Compiler method that compiles it (arith ops other than
# constants go through arith_generic)
_HANDLERS = {
    A.ConstantOp: _Compiler.op_arith_constant,
    tir.AllocOp: _Compiler.op_tir_alloc,
    tir.LoadOp: _Compiler.op_tir_load,
    tir.StoreOp: _Compiler.op_tir_store,
    tir.ForOp: _Compiler.op_tir_for,
    tir.IfOp: _Compiler.op_tir_if,
    tir.BarrierOp: _Compiler.op_tir_barrier,
    tir.PrefetchOp: _Compiler.op_tir_prefetch,
    tir.BroadcastOp: _Compiler.op_tir_broadcast,
    tir.IntrinOp: _Compiler.op_tir_intrin,
}


def _linear(shape, idx):
    lin = 0
    for d, i in zip(shape, idx):
        lin = lin * d + i
    return lin


def _lockstep(gens, loc):
    """Advance every thread to its next barrier; yield once all are there.
    A thread that finishes while another waits at a barrier is an error (on
    a GPU it deadlocks or is undefined)."""
    live = gens
    while live:
        waiting, finished = [], 0
        for g in live:
            try:
                next(g)
                waiting.append(g)
            except StopIteration:
                finished += 1
        if waiting and finished:
            raise DiagnosticError(loc, "barrier divergence: some threads reached a tir.barrier "
                                       "that others never reach")
        if not waiting:
            return
        live = waiting
        yield


def _barrier_ops(func_op) -> set:
    """The ops that hold a tir.barrier somewhere inside (and the barriers)."""
    out = set()
    for op in func_op.walk(include_self=False):
        if isinstance(op, tir.BarrierOp):
            p = op
            while p is not None and p is not func_op:
                out.add(p)
                p = p.parent_op
    return out


class Program:
    """A tir.func compiled to closures; call it with the arguments."""

    def __init__(self, func_op):
        if not isinstance(func_op, tir.FuncOp):
            raise TypeError(f"expected a tir.func, got {func_op.name}")
        self.func = func_op
        c = _Compiler()
        c.barrier_ops = _barrier_ops(func_op)
        self.arg_slots = [c.slot(a) for a in func_op.args]
        self.body = c.block(func_op.body)
        self.nslots = len(c.slots)
        self.consts = c.consts

    def __call__(self, *args):
        f = self.func
        params = f.args
        if len(args) != len(params):
            raise ValueError(f"@{f.sym_name} takes {len(params)} argument(s), got {len(args)}")
        env = [None] * self.nslots
        for s, v in self.consts:
            env[s] = v
        for i, (p, a, s) in enumerate(zip(params, args, self.arg_slots)):
            env[s] = check_arg(f, i, p, a)
        with np.errstate(all="ignore"):
            self.body(env)
        outs = [args[params.index(b)] for b in f.outputs]
        return outs[0] if len(outs) == 1 else tuple(outs)


def check_arg(func, i, param, value):
    """Check one argument against its parameter type; returns the value the
    interpreter uses.  Raises ValueError/TypeError with the argument named."""
    t = param.type
    label = f"argument {i} (%{param.name or i}) of @{func.sym_name}"
    if isinstance(t, T.MemRefType):
        if not isinstance(value, np.ndarray):
            raise TypeError(f"{label} must be a numpy array for {t}, got {type(value).__name__}")
        want = T.to_numpy_dtype(t.element_type)
        if value.dtype != want:
            raise TypeError(f"{label} has dtype {value.dtype}, expected {want} for {t}")
        if value.ndim != t.rank or any(d is not None and d != s for d, s in zip(t.shape, value.shape)):
            raise ValueError(f"{label} has shape {list(value.shape)}, expected {t}")
        if not value.flags.c_contiguous:
            raise ValueError(f"{label} must be C-contiguous")
        return value
    if isinstance(value, np.ndarray) and value.ndim != 0:
        raise TypeError(f"{label} is a scalar of type {t}, got an array")
    return _caster(t)(value if not isinstance(value, np.ndarray) else value[()])


def run(func_op, *args):
    """Run a tir.func on numpy arrays (in place) and scalars; returns the
    output buffer(s).  See the module docstring for the semantics."""
    return Program(func_op)(*args)


def run_in_module(module, name, *args):
    """Run the tir.func named `name` in `module`."""
    f = module.lookup(name) if hasattr(module, "lookup") else None
    if not isinstance(f, tir.FuncOp):
        raise KeyError(f"no tir.func @{name} in the module")
    return run(f, *args)
