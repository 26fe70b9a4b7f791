"""arith ops (MLIR's names), each with a numpy evaluator.

Custom forms::

    %c = arith.constant 1.0 : f32
    %s = arith.addf %a, %b : f32                  binary, same type in and out
    %n = arith.negf %a : f32                      unary
    %p = arith.cmpi slt, %i, %n : index           compare, gives i1
    %v = arith.select %p, %a, %b : f32
    %k = arith.index_cast %i : index to i32       casts

Besides MLIR's set: ``arith.floordivsi`` / ``arith.floormodsi`` are TVM's
floordiv and floormod (rounding toward minus infinity), which index
arithmetic after split and fuse needs.  ``EVAL`` is the numpy function that
defines each op's meaning; interpreters and constant folding call it.
"""

from __future__ import annotations

from ...ir import types as T
from ...ir.lazy import lazy_module, np_function
from ...ir.attrkinds import ANY, STR
from ...ir.core import Attr, Operation
from ...ir.traits import COMMUTATIVE, PURE

np = lazy_module("numpy")   # parsing and printing never need numpy


def _floordiv(a, b):
    return np.floor_divide(a, b)


def _floormod(a, b):
    return np.mod(a, b)


def _truncdiv(a, b):
    q = np.floor_divide(np.abs(a), np.abs(b))
    return np.where((np.asarray(a) < 0) != (np.asarray(b) < 0), -q, q).astype(np.result_type(a, b))


def _truncrem(a, b):
    return np.fmod(a, b)


class ArithOp(Operation):
    __slots__ = ()
    traits = frozenset({PURE})
    EVAL = None

    @property
    def mnemonic(self):
        return self.name

    def evaluate(self, *args):
        with np.errstate(all="ignore"):
            return self.EVAL(*args)


class BinaryOp(ArithOp):
    __slots__ = ()
    OPERANDS = ("lhs", "rhs")
    RESULTS = ("result",)
    FLOAT = True  # float ops (addf) vs integer ops (addi)

    def infer_types(self):
        return [self.operands[0].type]

    def verify_(self):
        a, b = self.operands
        r = self.results[0]
        if a.type is not b.type or r.type is not a.type:
            raise self.error(f"operands and result must have one type, got {a.type}, {b.type} -> {r.type}")
        et = T.element_type(a.type)
        if self.FLOAT != T.is_float(et):
            raise self.error(f"expects {'float' if self.FLOAT else 'integer or index'} operands, got {a.type}")

    def print_custom(self, p):
        p.write(f"{self.name} {p.value(self.operands[0])}, {p.value(self.operands[1])} : {self.results[0].type}")


def _binary(opname, fn, is_float, commutative=False):
    traits = frozenset({PURE, COMMUTATIVE}) if commutative else frozenset({PURE})
    cls = type(opname.split(".")[1].capitalize() + "Op", (BinaryOp,),
               {"__slots__": (), "name": opname, "EVAL": staticmethod(fn), "FLOAT": is_float, "traits": traits})
    return cls


AddIOp = _binary("arith.addi", np_function("add"), False, True)
SubIOp = _binary("arith.subi", np_function("subtract"), False)
MulIOp = _binary("arith.muli", np_function("multiply"), False, True)
DivSIOp = _binary("arith.divsi", _truncdiv, False)
RemSIOp = _binary("arith.remsi", _truncrem, False)
FloorDivSIOp = _binary("arith.floordivsi", _floordiv, False)
FloorModSIOp = _binary("arith.floormodsi", _floormod, False)
MaxSIOp = _binary("arith.maxsi", np_function("maximum"), False, True)
MinSIOp = _binary("arith.minsi", np_function("minimum"), False, True)
AndIOp = _binary("arith.andi", np_function("bitwise_and"), False, True)
OrIOp = _binary("arith.ori", np_function("bitwise_or"), False, True)
XOrIOp = _binary("arith.xori", np_function("bitwise_xor"), False, True)
ShLIOp = _binary("arith.shli", np_function("left_shift"), False)
ShRSIOp = _binary("arith.shrsi", np_function("right_shift"), False)
AddFOp = _binary("arith.addf", np_function("add"), True, True)
SubFOp = _binary("arith.subf", np_function("subtract"), True)
MulFOp = _binary("arith.mulf", np_function("multiply"), True, True)
DivFOp = _binary("arith.divf", np_function("divide"), True)
RemFOp = _binary("arith.remf", np_function("fmod"), True)
MaximumFOp = _binary("arith.maximumf", np_function("maximum"), True, True)
MinimumFOp = _binary("arith.minimumf", np_function("minimum"), True, True)
PowFOp = _binary("arith.powf", np_function("power"), True)

BINARY_OPS = [c for c in list(globals().values()) if isinstance(c, type) and issubclass(c, BinaryOp)
              and c is not BinaryOp]


class NegFOp(ArithOp):
    __slots__ = ()
    name = "arith.negf"
    OPERANDS = ("operand",)
    RESULTS = ("result",)
    EVAL = staticmethod(np_function("negative"))

    def infer_types(self):
        return [self.operands[0].type]

    def verify_(self):
        if self.results[0].type is not self.operands[0].type:
            raise self.error("result type must equal the operand type")
        if not T.is_float(T.element_type(self.operands[0].type)):
            raise self.error(f"expects a float operand, got {self.operands[0].type}")

    def print_custom(self, p):
        p.write(f"{self.name} {p.value(self.operands[0])} : {self.results[0].type}")


UNARY_OPS = [NegFOp]


class ConstantOp(ArithOp):
    """A scalar constant: ``value`` is an int, float or bool."""

    __slots__ = ()
    name = "arith.constant"
    OPERANDS = ()
    RESULTS = ("result",)
    ATTRS = {"value": Attr(ANY)}

    @classmethod
    def get(cls, value, type, loc=None):
        from ...ir.location import UNKNOWN
        if T.is_float(type):
            value = float(value)
        elif type is T.i1:
            value = bool(value)
        else:
            value = int(value)
        return cls((), (type,), {"value": value}, (), loc or UNKNOWN)

    def verify_(self):
        v = self.attributes["value"]
        t = self.results[0].type
        if T.is_float(t):
            if type(v) is not float:
                raise self.error(f"value {v!r} is not a float for type {t}")
        elif T.is_int(t):
            if type(v) not in (int, bool):
                raise self.error(f"value {v!r} is not an integer for type {t}")
        else:
            raise self.error(f"constant of unsupported type {t}")

    def evaluate(self):
        t = self.results[0].type
        return np.array(self.attributes["value"], dtype=T.to_numpy_dtype(t))[()]

    def print_custom(self, p):
        from ...ir.attributes import print_attr
        p.write(f"arith.constant {print_attr(self.attributes['value'])} : {self.results[0].type}")


def _as_unsigned(x):
    """The two's-complement bits of a signed integer read as unsigned (-1 -> 2^n - 1)."""
    x = np.asarray(x)
    return x.astype(np.dtype(f"u{x.dtype.itemsize}")) if x.dtype.kind == "i" else x


def _unsigned(fn):
    return lambda a, b: fn(_as_unsigned(a), _as_unsigned(b))


CMPI_PREDICATES = {
    "eq": np_function("equal"), "ne": np_function("not_equal"), "slt": np_function("less"), "sle": np_function("less_equal"),
    "sgt": np_function("greater"), "sge": np_function("greater_equal"), "ult": _unsigned(np_function("less")), "ule": _unsigned(np_function("less_equal")),
    "ugt": _unsigned(np_function("greater")), "uge": _unsigned(np_function("greater_equal")),
}


def _ordered(fn):
    """True only when neither operand is NaN (and `fn` holds)."""
    return lambda a, b: fn(a, b) & ~np.isnan(a) & ~np.isnan(b)


def _unordered(fn):
    """True when either operand is NaN, or `fn` holds (LLVM's u* predicates)."""
    return lambda a, b: fn(a, b) | np.isnan(a) | np.isnan(b)


# numpy's comparisons are false on NaN, which is right for the ordered
# predicates except `one`; the unordered ones must be true on NaN.
CMPF_PREDICATES = {
    "oeq": np_function("equal"), "one": _ordered(np_function("not_equal")), "olt": np_function("less"), "ole": np_function("less_equal"),
    "ogt": np_function("greater"), "oge": np_function("greater_equal"), "ueq": _unordered(np_function("equal")), "une": np_function("not_equal"),
    "ult": _unordered(np_function("less")), "ule": _unordered(np_function("less_equal")), "ugt": _unordered(np_function("greater")),
    "uge": _unordered(np_function("greater_equal")),
}


class _CmpOp(ArithOp):
    __slots__ = ()
    OPERANDS = ("lhs", "rhs")
    RESULTS = ("result",)
    ATTRS = {"predicate": Attr(STR)}
    PREDICATES: dict = {}
    FLOAT = False

    def infer_types(self):
        t = self.operands[0].type
        if isinstance(t, T.VectorType):
            return [T.VectorType(t.shape, T.i1)]
        return [T.i1]

    def verify_(self):
        pred = self.attributes["predicate"]
        if pred not in self.PREDICATES:
            raise self.error(f"unknown predicate '{pred}'; expected one of {', '.join(self.PREDICATES)}")
        a, b = self.operands
        if a.type is not b.type:
            raise self.error(f"operands must have one type, got {a.type} and {b.type}")
        if self.FLOAT != T.is_float(T.element_type(a.type)):
            raise self.error(f"expects {'float' if self.FLOAT else 'integer'} operands, got {a.type}")
        if self.results[0].type is not self.infer_types()[0]:
            raise self.error(f"result must be {self.infer_types()[0]}")

    def evaluate(self, a, b):
        return self.PREDICATES[self.attributes["predicate"]](a, b)

    def print_custom(self, p):
        a, b = self.operands
        p.write(f"{self.name} {self.attributes['predicate']}, {p.value(a)}, {p.value(b)} : {a.type}")


class CmpIOp(_CmpOp):
    __slots__ = ()
    name = "arith.cmpi"
    PREDICATES = CMPI_PREDICATES


class CmpFOp(_CmpOp):
    __slots__ = ()
    name = "arith.cmpf"
    PREDICATES = CMPF_PREDICATES
    FLOAT = True


class SelectOp(ArithOp):
    __slots__ = ()
    name = "arith.select"
    OPERANDS = ("condition", "true_value", "false_value")
    RESULTS = ("result",)
    EVAL = staticmethod(np_function("where"))

    def infer_types(self):
        return [self.operands[1].type]

    def verify_(self):
        c, a, b = self.operands
        if a.type is not b.type or self.results[0].type is not a.type:
            raise self.error(f"both values and the result must have one type, got {a.type}, {b.type}")
        if T.element_type(c.type) is not T.i1:
            raise self.error(f"condition must be i1, got {c.type}")

    def print_custom(self, p):
        c, a, b = self.operands
        p.write(f"arith.select {p.value(c)}, {p.value(a)}, {p.value(b)} : {a.type}")


class CastOp(ArithOp):
    __slots__ = ()
    OPERANDS = ("operand",)
    RESULTS = ("result",)

    def evaluate(self, a):
        rt = T.element_type(self.results[0].type)
        with np.errstate(all="ignore"):
            return np.asarray(a).astype(T.to_numpy_dtype(rt))[()]

    def verify_(self):
        src = T.element_type(self.operands[0].type)
        dst = T.element_type(self.results[0].type)
        ok = self.ACCEPT(src, dst)
        if not ok:
            raise self.error(f"cannot cast {self.operands[0].type} to {self.results[0].type}")

    def print_custom(self, p):
        p.write(f"{self.name} {p.value(self.operands[0])} : {self.operands[0].type} to {self.results[0].type}")


def _cast(opname, accept):
    return type(opname.split(".")[1].capitalize() + "Op", (CastOp,),
                {"__slots__": (), "name": opname, "ACCEPT": staticmethod(accept)})


IndexCastOp = _cast("arith.index_cast", lambda s, d: T.is_int(s) and T.is_int(d))
SIToFPOp = _cast("arith.sitofp", lambda s, d: T.is_int(s) and T.is_float(d))
UIToFPOp = _cast("arith.uitofp", lambda s, d: T.is_int(s) and T.is_float(d))
FPToSIOp = _cast("arith.fptosi", lambda s, d: T.is_float(s) and T.is_int(d))
FPToUIOp = _cast("arith.fptoui", lambda s, d: T.is_float(s) and T.is_int(d))
ExtFOp = _cast("arith.extf", lambda s, d: T.is_float(s) and T.is_float(d) and d.width > s.width)
TruncFOp = _cast("arith.truncf", lambda s, d: T.is_float(s) and T.is_float(d) and d.width < s.width)
ExtSIOp = _cast("arith.extsi", lambda s, d: T.is_int(s) and T.is_int(d) and d.bitwidth > s.bitwidth)
ExtUIOp = _cast("arith.extui", lambda s, d: T.is_int(s) and T.is_int(d) and d.bitwidth > s.bitwidth)
TruncIOp = _cast("arith.trunci", lambda s, d: T.is_int(s) and T.is_int(d) and d.bitwidth < s.bitwidth)

CAST_OPS = [IndexCastOp, SIToFPOp, UIToFPOp, FPToSIOp, FPToUIOp, ExtFOp, TruncFOp, ExtSIOp, ExtUIOp, TruncIOp]


def binary_for(kind: str, t) -> type:
    """The arith op class for `kind` (add, sub, mul, div, max, min, ...) on type `t`."""
    fl = T.is_float(T.element_type(t))
    table = {
        "add": (AddFOp, AddIOp), "sub": (SubFOp, SubIOp), "mul": (MulFOp, MulIOp),
        "div": (DivFOp, FloorDivSIOp), "max": (MaximumFOp, MaxSIOp), "min": (MinimumFOp, MinSIOp),
        "floordiv": (None, FloorDivSIOp), "floormod": (None, FloorModSIOp),
    }
    pair = table[kind]
    cls = pair[0] if fl else pair[1]
    if cls is None:
        raise TypeError(f"no {kind} for {t}")
    return cls
