"""Expression trees (classic/expr.py) -> ops inside a ``te.compute`` body.

Index arithmetic stays in ``index`` (Python ints fold through
``Emitter.index``, so ``i * 1 + 0`` emits nothing); integer values read from
tensors keep their own type, and an index meeting one is cast to it.  A
branch of ``if_then_else`` is emitted under its condition: its reads are
guarded reads (``te.read %A[...] if %c else 0.0``).
"""

from __future__ import annotations

from ..ir import types as T
from ..ir.core import Value
from . import expr as X


def mlir_type(dtype: str):
    """TVM dtype name -> tvmd type (``float32`` -> f32, ``bool`` -> i1)."""
    return T.from_dtype_name(dtype)


class BodyEmitter:
    """Emits one compute body with the te builder's Emitter ``e``.  `env`
    maps Vars (axes) to index Values; `tensors` maps a tensor's op to the
    Value of the stage or parameter that holds it."""

    def __init__(self, e, env, tensors):
        self.e = e
        self.env = env
        self.tensors = tensors
        self.guard = True

    # -- materialising -----------------------------------------------------------------

    def as_type(self, v, t):
        """`v` (a Value, or a Python int / bool / float constant) as a Value of type t."""
        e = self.e
        if isinstance(v, bool):
            return e.const(v, t) if t is T.i1 else e.const(int(v), t)
        if isinstance(v, (int, float)):
            if t is T.i1:
                return e.const(bool(v), t)
            return e.const(v, t)
        if v.type is t:
            return v
        if t is T.i1:   # x != 0
            zero = e.const(0.0 if T.is_float(v.type) else 0, v.type)
            return e.cmp("ne", v, zero)
        return e.cast(v, t)

    def index(self, v):
        """An index operand: an int or an index Value."""
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, int):
            return v
        if isinstance(v, Value) and v.type is T.index:
            return v
        if isinstance(v, Value) and T.is_float(v.type):
            raise X.TVMError(f"a float value ({v.type}) used as an index")
        return self.as_type(v, T.index)

    @staticmethod
    def _indexish(v):
        return isinstance(v, int) and not isinstance(v, bool) or isinstance(v, Value) and v.type is T.index

    # -- expressions ---------------------------------------------------------------------

    def emit(self, x):
        m = getattr(self, "_" + type(x).__name__, None)
        if m is None:
            for cls in type(x).__mro__:
                m = getattr(self, "_" + cls.__name__, None)
                if m is not None:
                    break
        if m is None:
            raise X.TVMError(f"cannot emit {type(x).__name__}")
        return m(x)

    def _Const(self, x):
        if x.dtype == "bool":
            return bool(x.value)
        if X.is_float(x.dtype):
            return self.e.const(x.value, mlir_type(x.dtype))
        return int(x.value)

    def _Var(self, x):
        v = self.env.get(x)
        if v is None:
            raise X.TVMError(f"variable '{x.name}' is not an axis of this compute (an axis of another compute, "
                             "or a reduce axis used outside its reduction)")
        return v

    def _Load(self, x):
        t = self.tensors.get(x.tensor.op)
        if t is None:
            raise X.TVMError(f"tensor '{x.tensor.name}' is not part of this schedule")
        idx = [self.index(self.emit(i)) for i in x.indices]
        return self.e.read(t, idx, guard=self.guard)

    def _Binary(self, x):
        e = self.e
        a, b = self.emit(x.a), self.emit(x.b)
        op = x.op
        if X.is_float(x.dtype):
            t = mlir_type(x.dtype)
            a, b = self.as_type(a, t), self.as_type(b, t)
            if op in ("add", "sub", "mul", "div", "max", "min"):
                return e.binary(op, a, b)
            if op == "floordiv":
                return e.intrin("floor", e.binary("div", a, b))
            if op == "floormod":
                q = e.intrin("floor", e.binary("div", a, b))
                return e.binary("sub", a, e.binary("mul", q, b))
            if op == "truncmod":
                return e.op("arith.remf", [a, b], [t])
            raise X.TVMError(f"no {op} on {x.dtype}")
        if self._indexish(a) and self._indexish(b):
            if op in ("add", "sub", "mul", "floordiv", "floormod", "max", "min"):
                if op in ("floordiv", "floormod") and b == 0:
                    raise X.TVMError(f"division by zero in {x.text()}")
                return e.index(op, a, b)
            if isinstance(a, int) and isinstance(b, int):
                if b == 0:
                    raise X.TVMError(f"division by zero in {x.text()}")
                q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
                return q if op == "div" else a - q * b
            name = {"div": "arith.divsi", "truncmod": "arith.remsi"}[op]
            return e.op(name, [e.val(a), e.val(b)], [T.index])
        # a typed integer (read from a tensor) meets another integer
        t = a.type if isinstance(a, Value) and a.type is not T.index else b.type
        a, b = self.as_type(a, t), self.as_type(b, t)
        if op in ("add", "sub", "mul", "floordiv", "floormod", "max", "min"):
            return e.binary(op, a, b)
        if T.reads_unsigned(t):   # truncating and flooring agree
            return e.binary("floordiv" if op == "div" else "floormod", a, b)
        name = {"div": "arith.divsi", "truncmod": "arith.remsi"}[op]
        return e.op(name, [a, b], [t])

    def _Compare(self, x):
        a, b = self.emit(x.a), self.emit(x.b)
        if isinstance(a, bool) or isinstance(b, bool):
            a, b = self.as_type(a, T.i1), self.as_type(b, T.i1)
            a, b = self.e.cast(a, T.i8), self.e.cast(b, T.i8)   # compare booleans as small integers
            return self.e.cmp(x.op, a, b)
        if not (self._indexish(a) and self._indexish(b)):
            t = a.type if isinstance(a, Value) and a.type is not T.index else b.type
            a, b = self.as_type(a, t), self.as_type(b, t)
        return self.e.cmp(x.op, a, b)

    def _Logical(self, x):
        e = self.e
        a, b = self.emit(x.a), self.emit(x.b)
        if x.op == "and":
            return e.and_(a if isinstance(a, bool) else self.as_type(a, T.i1),
                          b if isinstance(b, bool) else self.as_type(b, T.i1))
        if a is True or b is True:
            return True
        if a is False:
            return b
        if b is False:
            return a
        return e.op("arith.ori", [self.as_type(a, T.i1), self.as_type(b, T.i1)], [T.i1])

    def _Not(self, x):
        a = self.emit(x.a)
        if isinstance(a, bool):
            return not a
        return self.e.op("arith.xori", [self.as_type(a, T.i1), self.e.const(True, T.i1)], [T.i1])

    def _Cast(self, x):
        v = self.emit(x.value)
        if x.dtype == "bool":
            return bool(v) if isinstance(v, (bool, int, float)) else self.as_type(v, T.i1)
        if not X.is_float(x.dtype):
            if isinstance(v, bool):
                return int(v)
            if isinstance(v, int) or isinstance(v, Value) and v.type is T.index:
                return v       # integers stay index until something needs their type
            if isinstance(v, float):
                return int(v)
        return self.as_type(v, mlir_type(x.dtype))

    def _Select(self, x):
        e = self.e
        c = self.emit(x.cond)
        if c is True:
            return self.emit(x.t)
        if c is False:
            return self.emit(x.f)
        c = self.as_type(c, T.i1)
        outer = self.guard
        try:
            self.guard = e.and_(outer, c)
            a = self.emit(x.t)
            if any(isinstance(n, X.Load) for n in X.walk(x.f)):
                self.guard = e.and_(outer, self._negate(c))
            else:
                self.guard = outer
            b = self.emit(x.f)
        finally:
            self.guard = outer
        if self._indexish(a) and self._indexish(b) and not X.is_float(x.dtype):
            t = T.index
        elif x.dtype == "bool":
            t = T.i1
        elif X.is_float(x.dtype):
            t = mlir_type(x.dtype)
        else:
            t = a.type if isinstance(a, Value) and a.type is not T.index else b.type
        return e.select(c, self.as_type(a, t), self.as_type(b, t))

    def _negate(self, c):
        return self.e.op("arith.xori", [c, self.e.const(True, T.i1)], [T.i1])

    def _Call(self, x):
        t = mlir_type(x.dtype)
        args = [self.as_type(self.emit(a), t) for a in x.args]
        return self.e.intrin(x.name, *args)

    def _Reduce(self, x):
        raise X.TVMError("a reduction must be the whole body of a compute")
