"""TE computes for relay's elementwise and broadcasting operators.

Every op here is one te.compute over the output's axes whose body reads
each operand at the output index (numpy broadcasting, ``load``) and
combines the scalars:

    out[i...] = f(a[bcast(i...)], b[bcast(i...)], ...)

The scalar semantics follow the ops' numpy ``compute()``:

* integers are signless (signed) by default; ``uiN`` and ``i1`` compare,
  divide, shift right and take max/min as unsigned.  arith has only the
  signed forms of those, so the operands are zero-extended to the next
  wider signed type, computed on, and truncated back (``uint64`` has no
  wider type: a diagnostic);
* ``i1`` is numpy's bool: ``add`` is ``or``, ``x.astype(bool)`` is
  ``x != 0`` (NaN is true), ``True`` converts to 1;
* floats: comparisons are ordered (false on NaN) except ``not_equal``;
  max/min propagate NaN; ``floor_divide`` / ``floor_mod`` use numpy's
  fmod-based algorithm (exact where ``floor(a / b)`` can round up);
  ``mod`` is C's fmod;
* integer ``divide`` / ``mod`` truncate toward zero, ``floor_*`` round
  toward minus infinity; ``power`` on integers is ``trunc(pow(f64, f64))``;
  a float ``power`` by the constant 2 or 3 is products (a pow call per
  lane does not vectorize).

nn.bias_add (``out = x + b[index along axis]``) and nn.prelu are here too.

Math functions are ``te.intrin`` (exp log log2 log10 sqrt rsqrt sigmoid
tanh erf sin cos tan asin acos atan sinh cosh asinh acosh atanh, fabs
floor ceil round trunc, pow).
"""

from __future__ import annotations

import math

from ...dialects.te.builder import compute
from ...ir import types as T
from .registry import Scalar, axis_names, load, out_type, stage_name, strategy


# -- scalar helpers --------------------------------------------------------------------

def narrow(e, v, t):
    return e.op("arith.trunci", [v], [t])


def const(e, value, t):
    """`value` in type `t`; -1 means all ones in an unsigned type."""
    if T.reads_unsigned(t) and t is not T.i1 and value < 0:
        value %= 1 << t.width
    return e.const(value, t)


def compare(e, kind, a, b):
    """lt le gt ge eq ne, numpy's: ordered on floats except ne (true on NaN),
    unsigned on uiN and i1 (the builder's cmp)."""
    return e.cmp(kind, a, b)


def truth(e, v):
    """numpy's ``astype(bool)``: non-zero, NaN included."""
    if v.type is T.i1:
        return v
    return compare(e, "ne", v, e.const(0, v.type))


def from_bool(e, c, t):
    """An i1 as 0 / 1 in type `t`."""
    if t is T.i1:
        return c
    return e.select(c, e.const(1, t), e.const(0, t))


def convert(e, v, to):
    """numpy's ``astype(to)`` for one scalar (values out of the target's
    range are undefined, as in C)."""
    src = v.type
    if src is to:
        return v
    if to is T.i1:
        return truth(e, v)
    if src is T.i1:
        return from_bool(e, v, to)
    if T.is_int(src) and T.is_int(to) and src.width == to.width:
        # same bits, other signedness: arith casts change width, so go through i64
        wide = e.op("arith.extui" if src.unsigned else "arith.extsi", [v], [T.i64]) if src.width < 64 else v
        return narrow(e, wide, to) if to.width < 64 else e.op("arith.index_cast", [wide], [to])
    return e.cast(v, to)


def maxmin(e, op, kind, a, b):
    """max or min; NaN-propagating on floats, unsigned on uiN and i1."""
    return e.binary(kind, a, b)


def int_div(e, op, kind, a, b):
    """divide (toward zero), mod (remainder of it), floor_divide, floor_mod on integers."""
    t = a.type
    if T.reads_unsigned(t):   # truncating and flooring agree
        return e.op("arith.divui" if kind in ("div", "floordiv") else "arith.remui", [a, b], [t])
    name = {"div": "arith.divsi", "mod": "arith.remsi", "floordiv": "arith.floordivsi",
            "floormod": "arith.floormodsi"}[kind]
    return e.op(name, [a, b], [t])


def float_floormod(e, a, b):
    """numpy's floored remainder: fmod, moved into b's sign when it is not already."""
    t = a.type
    m = e.op("arith.remf", [a, b], [t])
    zero = e.const(0.0, t)
    fix = e.and_(compare(e, "ne", m, zero), compare(e, "ne", compare(e, "lt", b, zero), compare(e, "lt", m, zero)))
    return e.select(fix, e.binary("add", m, b), m)


def float_floordiv(e, a, b):
    """numpy's floor_divide on floats (npy_divmod): (a - fmod(a, b)) / b,
    one less when the remainder's sign differs from b's, floored, plus one
    when that dropped more than a half; a / b when b is 0."""
    t = a.type
    zero = e.const(0.0, t)
    m = e.op("arith.remf", [a, b], [t])
    div = e.binary("div", e.binary("sub", a, m), b)
    fix = e.and_(compare(e, "ne", m, zero), compare(e, "ne", compare(e, "lt", b, zero), compare(e, "lt", m, zero)))
    div = e.select(fix, e.binary("sub", div, e.const(1.0, t)), div)
    fl = e.intrin("floor", div)
    fl = e.select(compare(e, "gt", e.binary("sub", div, fl), e.const(0.5, t)), e.binary("add", fl, e.const(1.0, t)), fl)
    return e.select(compare(e, "eq", b, zero), e.binary("div", a, b), fl)


def no_bool(op, t):
    if t is T.i1:
        raise op.error(f"'{op.op_name}' on booleans has no TE compute")


# -- binary ---------------------------------------------------------------------------

def _add(e, op, a, b):
    if a.type is T.i1:
        return e.op("arith.ori", [a, b], [T.i1])   # numpy: True + True is True
    return e.binary("add", a, b)


def _sub(e, op, a, b):
    no_bool(op, a.type)
    return e.binary("sub", a, b)


def _mul(e, op, a, b):
    if a.type is T.i1:
        return e.op("arith.andi", [a, b], [T.i1])
    return e.binary("mul", a, b)


def _divide(e, op, a, b):
    no_bool(op, a.type)
    return e.binary("div", a, b) if T.is_float(a.type) else int_div(e, op, "div", a, b)


def _floor_divide(e, op, a, b):
    no_bool(op, a.type)
    return float_floordiv(e, a, b) if T.is_float(a.type) else int_div(e, op, "floordiv", a, b)


def _floor_mod(e, op, a, b):
    no_bool(op, a.type)
    return float_floormod(e, a, b) if T.is_float(a.type) else int_div(e, op, "floormod", a, b)


def _mod(e, op, a, b):
    no_bool(op, a.type)
    if T.is_float(a.type):
        return e.op("arith.remf", [a, b], [a.type])
    return int_div(e, op, "mod", a, b)


def _power(e, op, a, b):
    t = a.type
    no_bool(op, t)
    if T.is_float(t):
        n = _small_exponent(b)
        if n == 2:
            return e.binary("mul", a, a)       # one rounding: pow's own result
        if n == 3:
            # GELU's x^3 (tanh form): libm pow is a call per lane, which no
            # vector loop takes; two products are within 2 ulp of it
            return e.binary("mul", e.binary("mul", a, a), a)
        return e.intrin("pow", a, b)
    fa, fb = convert(e, a, T.f64), convert(e, b, T.f64)
    return convert(e, e.intrin("trunc", e.intrin("pow", fa, fb)), t)


def _small_exponent(b):
    """2 or 3 when float exponent `b` is that constant, else None."""
    from ...dialects.arith.ops import ConstantOp
    d = b.defining_op()
    v = d.attributes["value"] if isinstance(d, ConstantOp) else None
    return int(v) if isinstance(v, float) and v in (2.0, 3.0) else None


def _right_shift(e, op, a, b):
    t = a.type
    return e.op("arith.shrui" if T.reads_unsigned(t) else "arith.shrsi", [a, b], [t])


def _int_op(name):
    return lambda e, op, a, b: e.op(name, [a, b], [a.type])


def _logical(name):
    def fn(e, op, a, b):
        return from_bool(e, e.op(name, [truth(e, a), truth(e, b)], [T.i1]), op.results[0].type.element_type)
    return fn


def _cmp(kind):
    return lambda e, op, a, b: compare(e, kind, a, b)


BINARY = {
    "add": _add, "subtract": _sub, "multiply": _mul, "divide": _divide, "power": _power,
    "maximum": lambda e, op, a, b: maxmin(e, op, "max", a, b),
    "minimum": lambda e, op, a, b: maxmin(e, op, "min", a, b),
    "floor_divide": _floor_divide, "floor_mod": _floor_mod, "mod": _mod,
    "left_shift": _int_op("arith.shli"), "right_shift": _right_shift,
    "bitwise_and": _int_op("arith.andi"), "bitwise_or": _int_op("arith.ori"), "bitwise_xor": _int_op("arith.xori"),
    "logical_and": _logical("arith.andi"), "logical_or": _logical("arith.ori"), "logical_xor": _logical("arith.xori"),
    "equal": _cmp("eq"), "not_equal": _cmp("ne"), "less": _cmp("lt"), "less_equal": _cmp("le"),
    "greater": _cmp("gt"), "greater_equal": _cmp("ge"),
}


def elementwise(e, op, args, fn, default_name=None):
    """One te.compute: out[i] = fn(e, *[each arg read at i, broadcast])."""
    t = out_type(op)
    name = stage_name(op, default_name or "T_" + op.op_name.split(".")[-1])
    return compute(e, t, lambda e, *idx: fn(e, *[load(e, a, idx) for a in args]),
                   names=axis_names(t.rank), name=name)


@strategy(*BINARY)
def binary(e, op, args):
    f = BINARY[op.op_name]
    return elementwise(e, op, args, lambda e, a, b: f(e, op, a, b))


# -- unary ------------------------------------------------------------------------------

FLOAT_INTRIN = ("exp", "log", "log2", "log10", "sqrt", "rsqrt", "sigmoid", "tanh", "erf", "sin", "cos",
                "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh")
ROUNDING = ("floor", "ceil", "round", "trunc")


def _negative(e, op, x):
    no_bool(op, x.type)
    if T.is_float(x.type):
        return e.op("arith.negf", [x], [x.type])
    return e.binary("sub", e.const(0, x.type), x)


def _abs(e, op, x):
    t = x.type
    if T.is_float(t):
        return e.intrin("fabs", x)
    if T.reads_unsigned(t):
        return x
    return e.select(compare(e, "lt", x, e.const(0, t)), e.binary("sub", e.const(0, t), x), x)


def _sign(e, op, x):
    """-1, 0 or 1; a float NaN or signed zero stays itself."""
    t = x.type
    if t is T.i1:
        return x
    zero, one = e.const(0, t), e.const(1, t)
    if T.reads_unsigned(t):
        return e.select(compare(e, "ne", x, zero), one, zero)
    rest = x if T.is_float(t) else zero
    return e.select(compare(e, "gt", x, zero), one, e.select(compare(e, "lt", x, zero), e.const(-1, t), rest))


def _rounding(name):
    return lambda e, op, x: e.intrin(name, x) if T.is_float(x.type) else x


def _float_intrin(name):
    return lambda e, op, x: e.intrin(name, x)


def _isnan(e, op, x):
    if not T.is_float(x.type):
        return e.const(False, T.i1)
    return compare(e, "ne", x, x)


def _isinf(e, op, x):
    if not T.is_float(x.type):
        return e.const(False, T.i1)
    return compare(e, "eq", e.intrin("fabs", x), e.const(math.inf, x.type))


def _isfinite(e, op, x):
    if not T.is_float(x.type):
        return e.const(True, T.i1)
    return compare(e, "lt", e.intrin("fabs", x), e.const(math.inf, x.type))


def _logical_not(e, op, x):
    t = x.type
    if t is T.i1:
        return e.op("arith.xori", [x, e.const(True, T.i1)], [T.i1])
    return from_bool(e, compare(e, "eq", x, e.const(0, t)), t)


def _relu(e, op, x):
    return maxmin(e, op, "max", x, e.const(0, x.type))


def _leaky_relu(e, op, x):
    t = x.type
    alpha = e.const(op.attributes["alpha"], t)
    return e.select(compare(e, "gt", x, e.const(0.0, t)), x, e.binary("mul", x, alpha))


def _gelu(e, op, x):
    """0.5 x (1 + erf(x / sqrt 2)), or with tanh(sqrt(2 / pi) (x + 0.044715 x^3))."""
    t = x.type

    def c(v):
        return e.const(v, t)
    if op.attributes["approximate"] == "tanh":
        x3 = e.binary("mul", e.binary("mul", x, x), x)
        inner = e.binary("mul", c(math.sqrt(2 / math.pi)), e.binary("add", x, e.binary("mul", c(0.044715), x3)))
        s = e.intrin("tanh", inner)
    else:
        s = e.intrin("erf", e.binary("mul", x, c(1 / math.sqrt(2))))
    return e.binary("mul", e.binary("mul", c(0.5), x), e.binary("add", c(1.0), s))


def _clip(e, op, x):
    """min(max(x, a_min), a_max); an infinite bound is no bound (so NaN
    stays NaN), and on integers the bounds are rounded inward and clamped
    to the dtype's range."""
    t = x.type
    lo, hi = op.attributes["a_min"], op.attributes["a_max"]
    if T.is_float(t):
        if lo > -math.inf:
            x = maxmin(e, op, "max", x, e.const(lo, t))
        if hi < math.inf:
            x = maxmin(e, op, "min", x, e.const(hi, t))
        return x
    no_bool(op, t)
    tmin, tmax = (0, (1 << t.width) - 1) if t.unsigned else (-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1)
    lo = max(math.ceil(lo), tmin) if lo > -math.inf else tmin
    hi = min(math.floor(hi), tmax) if hi < math.inf else tmax
    return maxmin(e, op, "min", maxmin(e, op, "max", x, e.const(lo, t)), e.const(hi, t))


UNARY = {
    "negative": _negative, "abs": _abs, "sign": _sign, "copy": lambda e, op, x: x,
    "zeros_like": lambda e, op, x: e.const(0, x.type), "ones_like": lambda e, op, x: e.const(1, x.type),
    "logical_not": _logical_not,
    "bitwise_not": lambda e, op, x: e.op("arith.xori", [x, const(e, -1, x.type)], [x.type]),
    "isnan": _isnan, "isinf": _isinf, "isfinite": _isfinite,
    "nn.relu": _relu, "nn.leaky_relu": _leaky_relu, "nn.gelu": _gelu, "clip": _clip,
    "cast": lambda e, op, x: convert(e, x, op.results[0].type.element_type),
    "reinterpret": lambda e, op, x: x if x.type is op.results[0].type.element_type else
    convert(e, x, op.results[0].type.element_type) if T.i1 in (x.type, op.results[0].type.element_type) else
    e.op("arith.bitcast", [x], [op.results[0].type.element_type]),
    **{n: _rounding(n) for n in ROUNDING},
    **{n: _float_intrin(n) for n in FLOAT_INTRIN},
}


@strategy(*UNARY)
def unary(e, op, args):
    f = UNARY[op.op_name]
    return elementwise(e, op, args[:1], lambda e, x: f(e, op, x))


# -- the rest ---------------------------------------------------------------------------

@strategy("cast_like")
def cast_like(e, op, args):
    to = op.results[0].type.element_type
    return elementwise(e, op, args[:1], lambda e, x: convert(e, x, to))


@strategy("where")
def where(e, op, args):
    return elementwise(e, op, args, lambda e, c, x, y: e.select(truth(e, c), x, y))


@strategy("full_like")
def full_like(e, op, args):
    t = out_type(op)
    v = args[1]

    def body(e, *idx):
        s = e.const(v.value, v.type.element_type) if isinstance(v, Scalar) else e.read(v, [0] * v.type.rank)
        return convert(e, s, t.element_type)
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_full_like"))


@strategy("nn.prelu")
def prelu(e, op, args):
    t = out_type(op)
    x, alpha = args
    axis = op.attributes["axis"] % t.rank

    def body(e, *idx):
        xv = load(e, x, idx)
        av = e.const(alpha.value, t.element_type) if isinstance(alpha, Scalar) else e.read(alpha, [idx[axis]])
        zero = e.const(0, t.element_type)
        return e.select(compare(e, "gt", xv, zero), xv, e.binary("mul", xv, av))
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_prelu"))


@strategy("nn.bias_add")
def bias_add(e, op, args):
    t = out_type(op)
    x, b = args
    axis = op.norm_axis(t.rank)

    def body(e, *idx):
        bv = e.const(b.value, t.element_type) if isinstance(b, Scalar) else e.read(b, [idx[axis]])
        return e.binary("add", load(e, x, idx), bv)
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_bias_add"))
