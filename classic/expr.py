"""Scalar expressions of the classic TE builder (TVM's ``PrimExpr``).

An expression is a small immutable tree; nothing is emitted until a
schedule is printed, lowered or built (classic/emit.py turns a tree into
``arith`` / ``te.read`` / ``te.intrin`` ops inside a ``te.compute``).

What maps to what (TVM -> te dialect):

=========================  =================================================
``a + b``, ``-``, ``*``     ``arith.addi/addf``, ``subi/subf``, ``muli/mulf``
``a / b``                   floats ``arith.divf``; integers truncate
                            (``arith.divsi``), as TVM's ``div``
``a // b``, ``a % b``       ``arith.floordivsi`` / ``floormodsi`` (TVM's
                            floordiv / floormod); floats: ``floor(a / b)``
``<  <= > >= == !=``        ``arith.cmpi`` / ``arith.cmpf`` (``.equal``)
``&``, ``|``, ``~``         ``arith.andi`` / ``ori`` / ``xori`` on ``i1``
``tir.max/min(a, b)``       ``arith.maxsi/maxui/maximumf``, ``minsi/minui/minimumf``
``e.astype(t)``             ``arith.sitofp``, ``extf``, ``index_cast``, ...
``te.exp(x)`` ...           ``te.intrin "exp"(%x)``
``if_then_else(c, a, b)``   ``arith.select``; reads inside a branch become
                            guarded reads (``te.read ... if %c else 0.0``),
                            so a padding read never leaves its tensor
``A[i, k]``                 ``te.read %A[%i, %k]``
``te.sum(e, axis=k)``       ``te.compute ... reduce [%k: N] "sum"``
=========================  =================================================

Types follow TVM: an index variable is ``int32`` (``index`` in the IR), a
Python number takes the type of the expression it meets, and mixed types
are promoted (int -> float, narrow -> wide).
"""

from __future__ import annotations

_FLOATS = ("float16", "bfloat16", "float32", "float64")
_INTS = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")


class TVMError(RuntimeError):
    """An error of the classic API (TVM's ``tvm.error.TVMError`` is a RuntimeError too)."""


def _check_dtype(dtype) -> str:
    dtype = str(dtype)
    if dtype not in _FLOATS and dtype not in _INTS:
        raise TVMError(f"unsupported dtype '{dtype}' (supported: {', '.join(_FLOATS + _INTS)})")
    return dtype


def is_float(dtype) -> bool:
    return dtype in _FLOATS


def _bits(dtype) -> int:
    if dtype == "bool":
        return 1
    return int("".join(c for c in dtype if c.isdigit()))


def promote(a: str, b: str) -> str:
    """The type two operands meet at (TVM's BinaryOpMatchTypes, simplified)."""
    if a == b:
        return a
    fa, fb = is_float(a), is_float(b)
    if fa != fb:
        return a if fa else b
    return a if _bits(a) >= _bits(b) else b


def const(value, dtype=None):
    """``tvm.tir.const``: an int (int32), float (float32) or bool constant."""
    if dtype is None:
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, int):
            dtype = "int32"
        else:
            dtype = "float32"
    dtype = _check_dtype(dtype)
    if dtype == "bool":
        value = bool(value)
    elif is_float(dtype):
        value = float(value)
    else:
        value = int(value)
    return Const(value, dtype)


def convert(x, like: str | None = None):
    """An Expr for `x`: an Expr itself, or a Python number typed after `like`."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, bool):
        return Const(x, "bool")
    if isinstance(x, int) or hasattr(x, "__index__") and not isinstance(x, float):
        x = int(x)
        if like is not None and like != "bool":
            return Const(float(x) if is_float(like) else x, like)
        return Const(x, "int32")
    if isinstance(x, float):
        if like is not None and is_float(like):
            return Const(x, like)
        return Const(x, "float32")
    raise TVMError(f"cannot use {type(x).__name__} {x!r} in an expression")


def _pair(a, b):
    if isinstance(a, Expr) and not isinstance(b, Expr):
        b = convert(b, a.dtype)
    elif isinstance(b, Expr) and not isinstance(a, Expr):
        a = convert(a, b.dtype)
    else:
        a, b = convert(a), convert(b)
    t = promote(a.dtype, b.dtype)
    return (a if a.dtype == t else Cast(t, a)), (b if b.dtype == t else Cast(t, b)), t


def binary(op, a, b):
    a, b, t = _pair(a, b)
    if t == "bool" and op in ("add", "sub", "mul", "div", "floordiv", "floormod", "truncmod"):
        a, b, t = Cast("int32", a), Cast("int32", b), "int32"
    return Binary(op, a, b, t)


def compare(op, a, b):
    a, b, _ = _pair(a, b)
    return Compare(op, a, b)


class Expr:
    """Base of every scalar expression; ``dtype`` is TVM's type name."""

    __slots__ = ("dtype",)
    __hash__ = object.__hash__

    def __add__(self, o):
        return binary("add", self, o)

    def __radd__(self, o):
        return binary("add", o, self)

    def __sub__(self, o):
        return binary("sub", self, o)

    def __rsub__(self, o):
        return binary("sub", o, self)

    def __mul__(self, o):
        return binary("mul", self, o)

    def __rmul__(self, o):
        return binary("mul", o, self)

    def __truediv__(self, o):
        return binary("div", self, o)

    def __rtruediv__(self, o):
        return binary("div", o, self)

    def __floordiv__(self, o):
        return binary("floordiv", self, o)

    def __rfloordiv__(self, o):
        return binary("floordiv", o, self)

    def __mod__(self, o):
        return binary("floormod", self, o)

    def __rmod__(self, o):
        return binary("floormod", o, self)

    def __neg__(self):
        return binary("sub", convert(0, self.dtype), self)

    def __lt__(self, o):
        return compare("lt", self, o)

    def __le__(self, o):
        return compare("le", self, o)

    def __gt__(self, o):
        return compare("gt", self, o)

    def __ge__(self, o):
        return compare("ge", self, o)

    def __eq__(self, o):
        return EqualOp(self, o)

    def __ne__(self, o):
        return NotEqualOp(self, o)

    def __and__(self, o):
        return logical("and", self, o)

    def __rand__(self, o):
        return logical("and", o, self)

    def __or__(self, o):
        return logical("or", self, o)

    def __ror__(self, o):
        return logical("or", o, self)

    def __invert__(self):
        return Not(self)

    def __bool__(self):
        raise ValueError("cannot use and / or / not (or if) on an Expr; use tvm.tir.all / tvm.tir.any, "
                         "te.if_then_else, or & | ~")

    def equal(self, o):
        return compare("eq", self, o)

    def astype(self, dtype):
        dtype = _check_dtype(dtype)
        return self if dtype == self.dtype else Cast(dtype, self)

    def __repr__(self):
        return self.text()

    def text(self) -> str:
        return type(self).__name__


class Const(Expr):
    __slots__ = ("value",)

    def __init__(self, value, dtype):
        self.value = value
        self.dtype = dtype

    @property
    def val(self):   # IntImm.value / FloatImm.value in TVM; .value works too
        return self.value

    def __int__(self):
        return int(self.value)

    def __float__(self):
        return float(self.value)

    def __index__(self):
        if is_float(self.dtype):
            raise TypeError("a float constant is not an index")
        return int(self.value)

    def text(self):
        return repr(self.value)


class Var(Expr):
    """An index variable (TVM's ``tir.Var``): a compute's axis, a reduce axis."""

    __slots__ = ("name",)

    def __init__(self, name, dtype="int32"):
        self.name = name
        self.dtype = dtype

    def text(self):
        return self.name


class Binary(Expr):
    __slots__ = ("op", "a", "b")

    def __init__(self, op, a, b, dtype):
        self.op, self.a, self.b, self.dtype = op, a, b, dtype

    def text(self):
        sym = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "floormod": "%"}.get(self.op)
        if sym:
            return f"({self.a.text()} {sym} {self.b.text()})"
        return f"{self.op}({self.a.text()}, {self.b.text()})"


class Compare(Expr):
    __slots__ = ("op", "a", "b")

    def __init__(self, op, a, b):
        self.op, self.a, self.b, self.dtype = op, a, b, "bool"

    def text(self):
        sym = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}[self.op]
        return f"({self.a.text()} {sym} {self.b.text()})"


class EqualOp(Compare):
    """``a == b``: an expression, and in ``if`` the identity of a and b (as TVM)."""

    __slots__ = ()

    def __init__(self, a, b):
        a, b, _ = _pair(a, b)
        super().__init__("eq", a, b)

    def __bool__(self):
        return self.a is self.b or (isinstance(self.a, Const) and isinstance(self.b, Const)
                                    and self.a.value == self.b.value)


class NotEqualOp(Compare):
    __slots__ = ()

    def __init__(self, a, b):
        a, b, _ = _pair(a, b)
        super().__init__("ne", a, b)

    def __bool__(self):
        return not EqualOp(self.a, self.b).__bool__()


def _as_bool(x):
    x = convert(x)
    if x.dtype != "bool":
        raise TVMError(f"expected a boolean expression, got {x.dtype} {x.text()}")
    return x


def logical(op, a, b):
    return Logical(op, _as_bool(a), _as_bool(b))


class Logical(Expr):
    __slots__ = ("op", "a", "b")

    def __init__(self, op, a, b):
        self.op, self.a, self.b, self.dtype = op, a, b, "bool"

    def text(self):
        return f"({self.a.text()} {'&&' if self.op == 'and' else '||'} {self.b.text()})"


class Not(Expr):
    __slots__ = ("a",)

    def __init__(self, a):
        self.a = _as_bool(a)
        self.dtype = "bool"

    def text(self):
        return f"!{self.a.text()}"


class Cast(Expr):
    __slots__ = ("value",)

    def __init__(self, dtype, value):
        self.dtype = _check_dtype(dtype)
        self.value = convert(value)

    def text(self):
        return f"{self.dtype}({self.value.text()})"


class Select(Expr):
    """``if_then_else`` (lazy: a branch's reads are guarded by its condition)."""

    __slots__ = ("cond", "t", "f")

    def __init__(self, cond, t, f):
        self.cond = _as_bool(cond)
        self.t, self.f, self.dtype = _pair(t, f)

    def text(self):
        return f"if_then_else({self.cond.text()}, {self.t.text()}, {self.f.text()})"


class Call(Expr):
    """A math intrinsic (``te.intrin "name"``), or ``abs`` on integers."""

    __slots__ = ("name", "args")

    def __init__(self, name, args, dtype):
        self.name, self.args, self.dtype = name, tuple(args), dtype

    def text(self):
        return f"{self.name}({', '.join(a.text() for a in self.args)})"


class Load(Expr):
    """``A[i, j]``: an element of a tensor (``te.read``)."""

    __slots__ = ("tensor", "indices")

    def __init__(self, tensor, indices):
        self.tensor = tensor
        self.indices = tuple(convert(i) for i in indices)
        for i in self.indices:
            if is_float(i.dtype):
                raise TVMError(f"index {i.text()} of {tensor.name} is {i.dtype}, not an integer")
        self.dtype = tensor.dtype

    def text(self):
        return f"{self.tensor.name}[{', '.join(i.text() for i in self.indices)}]"


class Reduce(Expr):
    """``te.sum(e, axis=k)``: allowed only as the whole body of a compute."""

    __slots__ = ("combiner", "source", "axis", "where")

    def __init__(self, combiner, source, axis, where=None):
        self.combiner = combiner
        self.source = convert(source)
        self.axis = tuple(axis)
        self.where = None if where is None else _as_bool(where)
        self.dtype = self.source.dtype

    def text(self):
        return f"{self.combiner.name}({self.source.text()}, axis=[{', '.join(a.var.name for a in self.axis)}])"


def walk(e):
    """Every node of `e`, pre-order (a Reduce's source included)."""
    stack = [e]
    while stack:
        x = stack.pop()
        yield x
        if isinstance(x, (Binary, Compare, Logical)):
            kids = [x.a, x.b]
        elif isinstance(x, Not):
            kids = [x.a]
        elif isinstance(x, Cast):
            kids = [x.value]
        elif isinstance(x, Select):
            kids = [x.cond, x.t, x.f]
        elif isinstance(x, Call):
            kids = list(x.args)
        elif isinstance(x, Load):
            kids = list(x.indices)
        elif isinstance(x, Reduce):
            kids = [x.source] + ([x.where] if x.where is not None else [])
        else:
            continue
        stack += reversed(kids)
