"""The one definition of what each arith op computes.

Every consumer takes an op's meaning from here: the op classes' ``EVAL`` /
``evaluate`` (dialects/arith/ops.py), the te and tir interpreters, tir
bounds analysis (where it evaluates on constants) and tir-simplify's
constant folding.  The LLVM code generator implements the same rules, and
tests/test_arith_semantics.py checks that op by op on random operands.

Each op has two forms, side by side in one table (:data:`BINARY`):

* the **array form** works on numpy scalars or arrays of the operands'
  dtype (``index`` is ``int64``; ``i1`` is ``bool``; ``uiN`` is ``uintN``)
  and returns the result's dtype; it is the op's ``EVAL``;
* the **index form** works on Python ints, for ``index`` operands only: the
  interpreters' fast path for loop and address arithmetic.

The rules
---------

Integers are signless bit patterns of their width (MLIR's model); the
``uiN`` marker only says how numpy stores them and how casts read them.

* ``addi subi muli andi ori xori``: modulo 2^width (``i1``: ``addi`` and
  ``subi`` are xor, ``muli`` is and).  On ``index`` (64 bits) add/sub/mul
  are assumed not to overflow (LLVM gets ``nsw``: an overflow is poison);
  the index form then computes the exact Python int and the array form wraps
  at 64 bits.  Neither is an error.
* ``divsi remsi`` round toward zero (C, LLVM ``sdiv``/``srem``); the
  remainder has the dividend's sign.  ``floordivsi floormodsi`` (TVM's
  floordiv/floormod) round toward minus infinity; the remainder has the
  divisor's sign.  Division by zero and ``INT_MIN / -1`` (and its
  remainder) are **undefined behaviour** (LLVM ``sdiv``/``srem`` are UB
  there): the index form raises ``ZeroDivisionError`` (the tir interpreter
  reports a diagnostic at the op), the array form gives numpy's answer (0
  for division by zero, wrap-around for INT_MIN / -1), constant folding
  leaves such ops alone.
* ``maxsi minsi divsi remsi floordivsi floormodsi shrsi`` and the signed
  ``cmpi`` predicates read the bits as signed two's complement (a ``ui8``
  200 is -56; an ``i1`` true is -1); ``maxui minui divui remui`` and the
  ``cmpi`` predicates ``ult ule ugt uge`` read them as unsigned (-1 is
  2^width - 1; an ``i1`` true is 1, so ``maxui``/``minui`` are or/and), and
  ``shrui`` shifts them in logically (zero fill).
  The te builder picks the unsigned forms for ``uiN`` and ``i1`` values.
* shifts follow numpy (docs/targets.md "integer semantics"): the amount is
  read as unsigned; an amount of at least the width (a negative one
  included) gives 0 for ``shli`` and ``shrui`` and the sign fill (0 or -1)
  for ``shrsi``.
  ``shli`` wraps (no ``nsw``), also on ``index``.
* casts between integers (``index_cast extsi extui trunci``) and from
  integers to floats (``sitofp uitofp``): the source is read as unsigned
  when the op is ``extui``/``uitofp`` **or the source type is ``uiN`` or
  ``i1``** (``i1`` is a bool: it converts to 0/1, as numpy's ``astype``
  does and codegen's zero-extension of i1 does), else as signed.  A
  narrowing keeps the low bits (to ``i1``: the lowest bit).  Integer to
  float rounds to nearest even.  (The index form of ``index_cast`` to
  ``index`` is ``int()`` of the value: numpy keeps ``uiN`` and ``i1`` values
  unsigned already.)
* ``fptosi fptoui`` truncate toward zero; a NaN or a value outside the
  destination's range is **undefined** (LLVM: poison); the interpreters give
  numpy's ``astype`` result.  ``extf truncf`` round to nearest even.
  ``bitcast`` keeps the bits, between types of one width (``i32`` and
  ``f32``, ``i16`` and ``bf16``; never ``index``).
* floats are IEEE: ``divf`` by zero gives inf/NaN, ``remf`` is C's
  ``fmod`` (LLVM ``frem``), ``powf`` is libm ``pow``.  ``maximumf
  minimumf`` propagate NaN (LLVM ``llvm.maximum``/``llvm.minimum``, numpy
  ``maximum``/``minimum``) and order -0.0 below +0.0.
* ``cmpf``: ordered predicates (``o*``) are false when either operand is
  NaN, unordered ones (``u*``) true; ``cmpi``/``cmpf`` give ``i1``.
* ``select`` picks per lane.

Where the backends stand: LLVM codegen (backend/llvm/codegen.py) implements
every rule above and tests/test_arith_semantics.py checks it, op by op, on
i1/i8/ui8/i32/i64/index/f32/f64.  CUDA codegen (backend/cuda/codegen.py)
does too: C reads ``bool`` and unsigned types as unsigned, so the signed ops
cast them to their signed reading first, i1 arithmetic is written modulo 2,
a narrowing to i1 keeps the lowest bit and the prelude's ``tvmd_fmax`` /
``tvmd_fmin`` order the zeros; tests/test_cuda_arith_semantics.py runs the
generated C on the host (g++) against this table, every case but ``powf``
(the device's libm is not the host's).  Undefined cases are excluded there,
never compared.  One gap is C's own: signed ``i32``/``i64`` add, sub and
mul overflow is undefined in C++ (nvcc wraps in practice; LLVM's are
defined to wrap).

This module imports numpy lazily: parsing and printing never need it.
"""

from __future__ import annotations

import operator

from ...ir import types as T
from ...ir.lazy import lazy_module

np = lazy_module("numpy")

INDEX_BITS = 64
_U64 = (1 << 64) - 1
INT64_MIN = -(1 << 63)


def wrap(k: int, t) -> int:
    """Python int `k` reduced modulo 2^width to the signed range of integer
    type `t` (index: 64 bits; i1: 0 or 1, a bool's value)."""
    w = INDEX_BITS if t is T.index else t.width
    m = 1 << w
    k &= m - 1
    return k - m if w > 1 and k >= m >> 1 else k


# -- index form: Python ints ----------------------------------------------------------------

def _idx_truncdiv(a, b):
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def _idx_truncrem(a, b):
    return a - b * _idx_truncdiv(a, b)


def _idx_shl(a, n):
    if 0 <= n < INDEX_BITS:
        r = (a << n) & _U64
        return r - (1 << 64) if r >> 63 else r
    return 0


def _idx_shr(a, n):
    if 0 <= n < INDEX_BITS:
        return a >> n
    return -1 if a < 0 else 0


INDEX_CMP = {
    "eq": operator.eq, "ne": operator.ne, "slt": operator.lt, "sle": operator.le,
    "sgt": operator.gt, "sge": operator.ge,
    "ult": lambda a, b: (a & _U64) < (b & _U64), "ule": lambda a, b: (a & _U64) <= (b & _U64),
    "ugt": lambda a, b: (a & _U64) > (b & _U64), "uge": lambda a, b: (a & _U64) >= (b & _U64),
}


# -- array form: numpy -------------------------------------------------------------------------

def _signed(x):
    """The bits of integer array `x` read as signed (bool: 0 / -1)."""
    x = np.asarray(x)
    k = x.dtype.kind
    if k == "u":
        return x.view(np.dtype(f"i{x.dtype.itemsize}"))
    if k == "b":
        return -(x.astype(np.int8))
    return x


def _unsigned(x):
    """The bits of integer array `x` read as unsigned (-1 -> 2^n - 1; bool: 0 / 1)."""
    x = np.asarray(x)
    k = x.dtype.kind
    if k == "i":
        return x.view(np.dtype(f"u{x.dtype.itemsize}"))
    if k == "b":
        return x.astype(np.uint8)
    return x


def _to_bits(r, dt):
    """Integer result `r` (any integer dtype) as dtype `dt`, keeping the low bits."""
    r = np.asarray(r)
    if dt.kind == "b":
        return (r & 1).astype(bool)[()]
    return r.astype(dt)[()]


def _truncdiv(a, b):
    # floor quotient, plus one where the division was inexact and the signs
    # differ (no abs(): abs(INT_MIN) overflows)
    q = np.floor_divide(a, b)
    r = np.remainder(a, b)
    fix = (r != 0) & ((np.bitwise_xor(a, b)) < 0)
    return q + fix.astype(q.dtype)


def _truncrem(a, b):
    return np.fmod(a, b)


def _shl(a, n):
    return np.left_shift(a, n)       # numpy: unsigned amount, >= width gives 0


def _shr(a, n):
    return np.right_shift(a, n)      # numpy: arithmetic on signed, >= width gives the sign fill


class IntBinary:
    """An integer binary op: `core` is the numpy function on signed operands
    of one width (`unsigned`: on unsigned ones); `index` its Python-int form
    (None: no fast form)."""

    __slots__ = ("name", "core", "index", "division", "boolean", "unsigned")

    def __init__(self, name, core, index, division=False, boolean=None, unsigned=False):
        self.name = name
        self.core = core
        self.index = index
        self.division = division
        self.boolean = boolean   # the i1 form on bools (Python or numpy, scalars or arrays)
        self.unsigned = unsigned

    def __call__(self, a, b):
        a = np.asarray(a)
        dt = a.dtype
        if dt.kind == ("u" if self.unsigned else "i"):
            return self.core(a, np.asarray(b, dt))
        view = _unsigned if self.unsigned else _signed
        return _to_bits(self.core(view(a), view(np.asarray(b, dt))), dt)

    def for_type(self, t):
        """The array form specialised to element type `t` (a plain numpy
        function where no reinterpretation is needed)."""
        if isinstance(t, T.IntegerType) and t.unsigned and self.unsigned:
            return self.core
        if not self.unsigned and (t is T.index or (isinstance(t, T.IntegerType) and not t.unsigned
                                                   and t.width > 1)):
            return self.core
        if t is T.i1 and self.boolean is not None:
            return self.boolean
        return self


def _U(name, core, division=False):
    """An op reading its operands' bits as unsigned (no index form)."""
    return IntBinary(name, core, None, division=division, unsigned=True)


def _fmax(a, b):
    r = np.maximum(a, b)
    z = (np.asarray(a) == 0) & (np.asarray(b) == 0)
    if z.any():   # -0.0 < +0.0: +0.0 + -0.0 is +0.0, -0.0 + -0.0 is -0.0
        r = np.where(z, np.add(a, b), r)[()]
    return r


def _fmin(a, b):
    r = np.minimum(a, b)
    z = (np.asarray(a) == 0) & (np.asarray(b) == 0)
    if z.any():
        r = np.where(z, np.negative(np.add(np.negative(a), np.negative(b))), r)[()]
    return r


def _pow(a, b):
    # libm pow on 1-element arrays: numpy's scalar power takes shortcuts
    # (x ** 0.5 as sqrt gives -0.0 for -0.0; pow gives +0.0)
    if np.ndim(a) == 0 and np.ndim(b) == 0:
        return np.power(np.reshape(a, 1), np.reshape(b, 1))[0]
    return np.power(a, b)


class FloatBinary:
    __slots__ = ("name", "core")
    index = None
    division = False   # IEEE: never undefined

    def __init__(self, name, core):
        self.name = name
        self.core = core

    def __call__(self, a, b):
        return self.core(a, b)

    def for_type(self, t):
        return self.core


def _ufunc(name):
    def call(a, b):
        return getattr(np, name)(a, b)
    call.__name__ = name
    return call


_I = IntBinary
_F = FloatBinary

# op name -> its semantics.  The op classes in ops.py take EVAL from here.
BINARY = {r.name: r for r in [
    _I("arith.addi", _ufunc("add"), operator.add, boolean=operator.xor),
    _I("arith.subi", _ufunc("subtract"), operator.sub, boolean=operator.xor),
    _I("arith.muli", _ufunc("multiply"), operator.mul, boolean=operator.and_),
    _I("arith.divsi", _truncdiv, _idx_truncdiv, division=True),
    _I("arith.remsi", _truncrem, _idx_truncrem, division=True),
    _I("arith.floordivsi", _ufunc("floor_divide"), operator.floordiv, division=True),
    _I("arith.floormodsi", _ufunc("remainder"), operator.mod, division=True),
    _I("arith.maxsi", _ufunc("maximum"), max),
    _I("arith.minsi", _ufunc("minimum"), min),
    _U("arith.divui", _ufunc("floor_divide"), division=True),
    _U("arith.remui", _ufunc("remainder"), division=True),
    _U("arith.maxui", _ufunc("maximum")),
    _U("arith.minui", _ufunc("minimum")),
    _U("arith.shrui", _shr),
    _I("arith.andi", _ufunc("bitwise_and"), operator.and_, boolean=operator.and_),
    _I("arith.ori", _ufunc("bitwise_or"), operator.or_, boolean=operator.or_),
    _I("arith.xori", _ufunc("bitwise_xor"), operator.xor, boolean=operator.xor),
    _I("arith.shli", _shl, _idx_shl),
    _I("arith.shrsi", _shr, _idx_shr),
    _F("arith.addf", _ufunc("add")),
    _F("arith.subf", _ufunc("subtract")),
    _F("arith.mulf", _ufunc("multiply")),
    _F("arith.divf", _ufunc("divide")),
    _F("arith.remf", _ufunc("fmod")),
    _F("arith.maximumf", _fmax),
    _F("arith.minimumf", _fmin),
    _F("arith.powf", _pow),
]}


def negf(a):
    return np.negative(a)


def is_undefined(sem, a, b, t) -> bool:
    """Whether binary op semantics `sem` on the integers a, b (Python ints or
    numpy scalars) of type `t` is undefined behaviour: an integer division
    by zero, or INT_MIN / -1 in the type's width (signed division only)."""
    if not sem.division:
        return False
    a, b = int(a), int(b)
    if b == 0 or sem.unsigned:
        return b == 0
    w = INDEX_BITS if t is T.index else t.width
    m = (1 << w) - 1
    return b & m == m and a & m == 1 << (w - 1)    # b is -1, a is INT_MIN


# -- comparisons ---------------------------------------------------------------------------------

def _cmp_signed(fn):
    def cmp(a, b):
        return fn(_signed(a), _signed(b))
    return cmp


def _cmp_unsigned(fn):
    def cmp(a, b):
        return fn(_unsigned(a), _unsigned(b))
    return cmp


CMPI = {
    "eq": _ufunc("equal"), "ne": _ufunc("not_equal"),
    "slt": _cmp_signed(_ufunc("less")), "sle": _cmp_signed(_ufunc("less_equal")),
    "sgt": _cmp_signed(_ufunc("greater")), "sge": _cmp_signed(_ufunc("greater_equal")),
    "ult": _cmp_unsigned(_ufunc("less")), "ule": _cmp_unsigned(_ufunc("less_equal")),
    "ugt": _cmp_unsigned(_ufunc("greater")), "uge": _cmp_unsigned(_ufunc("greater_equal")),
}


def _ordered(fn):
    """True only when neither operand is NaN (and `fn` holds)."""
    return lambda a, b: fn(a, b) & ~np.isnan(a) & ~np.isnan(b)


def _unordered(fn):
    """True when either operand is NaN, or `fn` holds (LLVM's u* predicates)."""
    return lambda a, b: fn(a, b) | np.isnan(a) | np.isnan(b)


# numpy's comparisons are false on NaN, which is right for the ordered
# predicates except `one`; the unordered ones must be true on NaN.
CMPF = {
    "oeq": _ufunc("equal"), "one": _ordered(_ufunc("not_equal")), "olt": _ufunc("less"),
    "ole": _ufunc("less_equal"), "ogt": _ufunc("greater"), "oge": _ufunc("greater_equal"),
    "ueq": _unordered(_ufunc("equal")), "une": _ufunc("not_equal"), "ult": _unordered(_ufunc("less")),
    "ule": _unordered(_ufunc("less_equal")), "ugt": _unordered(_ufunc("greater")),
    "uge": _unordered(_ufunc("greater_equal")),
}


def cmpi_for_type(pred, t):
    """The array form of ``cmpi pred`` specialised to element type `t`."""
    if pred in ("eq", "ne") or pred[0] == "s" and (t is T.index or (isinstance(t, T.IntegerType)
                                                   and not t.unsigned and t.width > 1)):
        return getattr(np, {"eq": "equal", "ne": "not_equal", "slt": "less", "sle": "less_equal",
                            "sgt": "greater", "sge": "greater_equal"}[pred])
    return CMPI[pred]


def select(c, a, b):
    return np.where(c, a, b)


# -- casts -----------------------------------------------------------------------------------------

_READS_UNSIGNED = {"arith.extui", "arith.uitofp"}
INT_CASTS = {"arith.index_cast", "arith.extsi", "arith.extui", "arith.trunci"}


def _dtype(t):
    return np.dtype("int64") if t is T.index else T.to_numpy_dtype(t)


def cast_fn(name, src, dst):
    """The array form of cast op `name` from element type `src` to `dst`."""
    sdt, ddt = _dtype(src), _dtype(dst)
    if name == "arith.bitcast":
        def bitcast(a):
            return np.asarray(a, sdt).view(ddt)[()]
        return bitcast
    if T.is_int(src):
        unsigned = name in _READS_UNSIGNED or src is T.i1 or getattr(src, "unsigned", False)
        read = _unsigned if unsigned else _signed
        if T.is_int(dst):
            def int_to_int(a):
                return _to_bits(read(np.asarray(a, sdt)), ddt)
            return int_to_int

        def int_to_float(a):
            return read(np.asarray(a, sdt)).astype(ddt)[()]
        return int_to_float
    if T.is_int(dst):
        # in range (else undefined): through the destination width's signed
        # or unsigned type, then the bits into the destination's dtype
        w = INDEX_BITS if dst is T.index else max(dst.width, 8)
        mid = np.dtype(f"{'u' if name == 'arith.fptoui' else 'i'}{w // 8}")

        def float_to_int(a):
            return _to_bits(np.asarray(a, sdt).astype(mid), ddt)
        return float_to_int

    def float_to_float(a):
        return np.asarray(a, sdt).astype(ddt)[()]
    return float_to_float
