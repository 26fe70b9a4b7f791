"""The te reference interpreter: ``run(func_op, *arrays) -> [outputs]``.

* A ``te.compute`` is evaluated all at once on numpy index grids: each
  index argument becomes ``np.arange(extent)`` shaped to broadcast along its
  own axis (spatial axes, then reduce axes), the body's ops run on whole
  arrays, and the reducer folds the reduce axes.  Large computes are cut
  into boxes along their spatial axes to bound memory.  Schedule ops do not
  change what a function computes, so they are skipped: this is the oracle
  every schedule and lowering is compared against.
* Scheduled functions (``tir.for`` / ``tir.if`` loop nests of ``te.write``
  into ``te.realize`` storage) run on a small loop executor, one closure per
  op.  Storage starts as NaN (floats) so a read before a write shows; every
  access is bounds-checked and an out-of-bounds access is an error at the
  op.  (Lowered tir.funcs run on dialects/tir/interpreter.py, whose
  semantics these match: index math on Python ints, ``round`` half to even.)
* arith ops mean what :mod:`tvmd.dialects.arith.semantics` defines: the
  array form on whole index grids and on non-index scalars, its Python-int
  form on index scalars in the loop executor (where an index division by
  zero is an error, as in the tir interpreter).
"""

from __future__ import annotations

import math

import numpy as np

from ...ir import types as T
from ...ir.diagnostics import DiagnosticError
from ..arith import ops as A
from ..tir.interpreter import dot2_bf16, dot4_u8s8
from .ops import ReadOp

# elements of one compute evaluated at once (index grid incl. reduce axes)
BOX_ELEMENTS = 1 << 22


_erf = np.frompyfunc(math.erf, 1, 1)

INTRINSIC_FNS = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "erf": lambda x: _erf(x), "fabs": np.abs,
    "floor": np.floor, "ceil": np.ceil, "round": np.rint, "trunc": np.trunc, "sin": np.sin,
    "cos": np.cos, "pow": np.power, "log2": np.log2, "log10": np.log10, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "dot4_u8s8": dot4_u8s8, "dot2_bf16": dot2_bf16,
}


def intrinsic(name, args, t):
    dt = T.to_numpy_dtype(t)
    return np.asarray(INTRINSIC_FNS[name](*args)).astype(dt)[()]


class InterpreterError(DiagnosticError):
    pass


def _check_inputs(func, arrays, params):
    if len(arrays) != len(params):
        raise InterpreterError(func.loc, f"@{func.sym_name} takes {len(params)} argument(s), got {len(arrays)}")
    out = []
    for a, p in zip(arrays, params):
        t = p.type
        if t is T.index:   # a symbolic size
            out.append(int(a))
            continue
        a = np.asarray(a)
        if len(a.shape) != len(t.shape) or any(n is not None and n != m for n, m in zip(t.shape, a.shape)):
            raise InterpreterError(func.loc, f"argument of shape {list(a.shape)} for parameter of type {t}")
        out.append(a.astype(t.dtype, copy=False))
    return out


def run(func, *arrays):
    """Evaluate a te.func (scheduled or not) on numpy arrays; returns the
    list of its results."""
    env = dict(zip(func.body.args, _check_inputs(func, arrays, func.body.args)))
    with np.errstate(all="ignore"):
        for op in func.body.ops:
            name = op.name
            if name == "te.compute":
                env[op.results[0]] = eval_compute(op, env)
            elif name == "te.extern":
                t = op.results[0].type
                out = np.full(_shape(t, op.result_sizes(), env), np.nan if T.is_float(t.element_type) else 0, t.dtype)
                _call_extern(op, [env[v] for v in op.operands] + [out])
                env[op.results[0]] = out
            elif name == "te.return":
                return [np.array(env[v]) for v in op.operands]
            elif name.startswith("te.") and name not in _LOOP_OPS:
                continue   # a schedule op: it changes how, not what
            else:
                _Loops(env).compile(op)()
    raise InterpreterError(func.loc, "function has no return")


def _call_extern(op, arrays):
    """Run the tir.func a te.extern names on the TIR interpreter (in place)."""
    from ..tir.interpreter import run as run_tir
    run_tir(op.callee_op(), *[np.ascontiguousarray(a) if isinstance(a, np.ndarray) else a for a in arrays[:-1]],
            arrays[-1])


# -- vectorized computes -----------------------------------------------------------

def _shape(t, sizes, env):
    it = iter(sizes)
    return tuple(int(env[next(it)]) if n is None else n for n in t.shape)


def eval_compute(op, env):
    t = op.results[0].type
    shape = _shape(t, op.operands, env)
    out = np.empty(shape, dtype=t.dtype)
    ranges = [(0, n) for n in shape]
    _eval_box(op, env, out, ranges)
    return out


def _eval_box(op, env, out, ranges):
    rext = [x if type(x) is int else int(env[x]) for x in op.reduce_extents]
    size = math.prod(b - a for a, b in ranges) * math.prod(rext)
    if size > BOX_ELEMENTS:
        d = max(range(len(ranges)), key=lambda k: ranges[k][1] - ranges[k][0], default=None)
        if d is not None and ranges[d][1] - ranges[d][0] > 1:
            a, b = ranges[d]
            mid = (a + b) // 2
            _eval_box(op, env, out, ranges[:d] + [(a, mid)] + ranges[d + 1:])
            _eval_box(op, env, out, ranges[:d] + [(mid, b)] + ranges[d + 1:])
            return
    dims = [(a, b) for a, b in ranges] + [(0, e) for e in rext]
    n = len(dims)
    vals = {}
    for k, (arg, (a, b)) in enumerate(zip(op.body.args, dims)):
        shape = [1] * n
        shape[k] = b - a
        vals[arg] = np.arange(a, b, dtype=np.int64).reshape(shape)
    v = _eval_block(op.body, vals, env)
    full = [b - a for a, b in dims]
    v = np.broadcast_to(np.asarray(v), full)
    if rext:
        v = _reduce(op, v, len(ranges), env)
    out[tuple(slice(a, b) for a, b in ranges)] = v


def _reduce(op, v, rank, env):
    """Fold the reduce axes (the trailing ones of v)."""
    red = op.reducer
    axes = tuple(range(rank, v.ndim))
    dt = op.results[0].type.dtype
    if red in ("sum", "prod"):
        return (np.sum if red == "sum" else np.prod)(v, axis=axes, dtype=dt)
    if red in ("max", "min"):
        return (np.max if red == "max" else np.min)(v, axis=axes)
    flat = v.reshape(v.shape[:rank] + (-1,))
    if red in ("argmax", "argmin"):   # numpy picks the first extreme one, as the loops do
        return (np.argmax if red == "argmax" else np.argmin)(flat, axis=-1).astype(dt)
    r = op.reducer_op()
    a, b = r.body.args
    acc = np.full(flat.shape[:rank], r.identity_value(), dtype=dt)
    for k in range(flat.shape[-1]):   # in order: the reducer is only required to be associative
        acc = np.asarray(_eval_block(r.body, {a: acc, b: flat[..., k]}, env)).astype(dt)
    return acc


def _eval_block(block, vals, env):
    def get(v):
        x = vals.get(v)
        if x is None:
            x = env[v]
        return x

    for op in block.ops:
        name = op.name
        if name == "te.yield":
            return get(op.operands[0])
        if name == "te.read":
            vals[op.results[0]] = _read_array(op, get)
        elif name == "te.intrin":
            vals[op.results[0]] = intrinsic(op.attributes["intrin"], [get(v) for v in op.operands],
                                            op.results[0].type)
        elif isinstance(op, A.ConstantOp):
            vals[op.results[0]] = op.evaluate()
        elif isinstance(op, A.ArithOp):
            vals[op.results[0]] = op.evaluate(*[get(v) for v in op.operands])
        else:
            raise InterpreterError(op.loc, f"the te interpreter cannot evaluate '{op.name}' in a compute body")
    raise InterpreterError(block.parent_op.loc, "compute body has no yield")


def _read_array(op, get):
    arr = get(op.tensor)
    idx = [np.asarray(get(v)) for v in op.indices]
    if op.guarded:
        cond = np.asarray(get(op.condition))
        idx = [np.where(cond, i, 0) for i in idx]
    for d, i in enumerate(idx):
        if i.size and (i.min() < 0 or i.max() >= arr.shape[d]):
            raise InterpreterError(op.loc, f"reads dimension {d} at {int(i.min() if i.min() < 0 else i.max())}, "
                                           f"outside [0, {arr.shape[d]})")
    v = arr[tuple(idx)] if idx else arr[()]
    if op.guarded:
        v = np.where(cond, v, np.asarray(op.attributes["else_value"]).astype(arr.dtype))
    return v


# -- loop executor -------------------------------------------------------------------

_LOOP_OPS = {"te.realize", "te.write", "te.read", "te.intrin", "te.extern_call"}


class _Loops:
    """Compiles ops to closures over a shared environment (Value -> value)."""

    def __init__(self, env):
        self.env = env

    def block(self, block):
        fns = [self.compile(op) for op in block.ops]

        def run():
            for f in fns:
                f()
        return run

    def compile(self, op):
        env = self.env
        name = op.name
        ops = op.operands
        if name == "tir.for":
            lo, hi = op.lower, op.upper
            iv = op.induction_var
            body = self.block(op.body)

            def run_for():
                a = lo if isinstance(lo, int) else env[lo]
                b = hi if isinstance(hi, int) else env[hi]
                for i in range(a, b):
                    env[iv] = i
                    body()
            return run_for
        if name == "tir.if":
            then = self.block(op.regions[0].blocks[0])
            other = self.block(op.regions[1].blocks[0]) if len(op.regions) > 1 else None
            c = ops[0]

            def run_if():
                if env[c]:
                    then()
                elif other is not None:
                    other()
            return run_if
        if name == "te.realize":
            r = op.results[0]
            t = r.type
            fill = np.nan if T.is_float(t.element_type) else 0
            sizes = op.operands

            def alloc():
                env[r] = np.full(_shape(t, sizes, env), fill, dtype=t.dtype)
            return alloc
        if name == "te.read":
            return self._read(op)
        if name == "te.write":
            return self._write(op)
        if name == "te.intrin":
            r, fname, t = op.results[0], op.attributes["intrin"], op.results[0].type

            def intrin():
                env[r] = intrinsic(fname, [env[v] for v in ops], t)
            return intrin
        if name == "te.return":
            return lambda: None
        if name == "te.extern_call":
            def call():
                _call_extern(op, [env[v] for v in ops])
            return call
        return self._arith(op)

    def _arith(self, op):
        env = self.env
        ops = op.operands
        name = op.name
        if not op.results or not isinstance(op, A.ArithOp):
            raise InterpreterError(op.loc, f"the loop executor cannot run '{name}'")
        r = op.results[0]
        if isinstance(r.type, T.VectorType):
            raise InterpreterError(op.loc, "the loop executor runs scalar code only")
        if isinstance(op, A.ConstantOp):
            c = op.evaluate()
            if r.type is T.index:
                c = int(c)

            def const():
                env[r] = c
            return const
        is_index = ops and all(v.type is T.index for v in ops)
        if is_index and op.INDEX_EVAL is not None:
            fn, a, b = op.INDEX_EVAL, ops[0], ops[1]
            if op.DIVISION:
                loc = op.loc

                def idiv():
                    y = env[b]
                    if y == 0:
                        raise InterpreterError(loc, f"'{name}' divides by zero")
                    env[r] = fn(env[a], y)
                return idiv

            def ibin():
                env[r] = fn(env[a], env[b])
            return ibin
        if isinstance(op, A.CmpIOp) and is_index:
            fn, a, b = op.INDEX_PREDICATES[op.attributes["predicate"]], ops[0], ops[1]

            def icmp():
                env[r] = fn(env[a], env[b])
            return icmp
        if isinstance(op, A.SelectOp):
            c, a, b = ops

            def sel():
                env[r] = env[a] if env[c] else env[b]
            return sel
        if isinstance(op, A.IndexCastOp) and r.type is T.index:
            a = ops[0]

            def to_index():
                env[r] = int(env[a])
            return to_index
        ev = op.evaluator()
        if r.type is T.i1:
            def pred():
                env[r] = bool(ev(*[env[v] for v in ops]))
            return pred
        if r.type is T.index:
            def to_int():
                env[r] = int(ev(*[env[v] for v in ops]))
            return to_int

        def generic():
            env[r] = ev(*[env[v] for v in ops])
        return generic

    def _access(self, op, buf_i):
        env = self.env
        buf = op.operands[buf_i]
        idx = op.indices if isinstance(op, ReadOp) else op.operands[buf_i + 1:]
        static = buf.type.shape if None not in buf.type.shape else None

        def index():
            ix = tuple(env[v] for v in idx)
            shape = static or env[buf].shape
            for d, (i, n) in enumerate(zip(ix, shape)):
                if not 0 <= i < n:
                    raise InterpreterError(op.loc, f"accesses dimension {d} at {i}, outside [0, {n})")
            return ix
        return buf, index

    def _read(self, op):
        env = self.env
        buf, index = self._access(op, 0)
        r = op.results[0]
        if op.guarded:
            c = op.condition
            other = np.asarray(op.attributes["else_value"]).astype(T.to_numpy_dtype(r.type))[()]
            if r.type is T.index:
                other = int(other)

            def gread():
                env[r] = (int(env[buf][index()]) if r.type is T.index else env[buf][index()]) if env[c] else other
            return gread
        if r.type is T.index:   # index values are Python ints here
            def iread():
                env[r] = int(env[buf][index()])
            return iread

        def read():
            env[r] = env[buf][index()]
        return read

    def _write(self, op):
        env = self.env
        buf, index = self._access(op, 1)
        v = op.operands[0]

        def write():
            env[buf][index()] = env[v]
        return write
