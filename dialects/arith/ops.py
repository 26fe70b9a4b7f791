"""arith ops (MLIR's names), each with a numpy evaluator.

Custom forms (each class's ``ASSEMBLY_FORMAT``: ir/assembly_format.py)::

    %c = arith.constant 1.0 : f32
    %s = arith.addf %a, %b : f32                  binary, same type in and out
    %n = arith.negf %a : f32                      unary
    %p = arith.cmpi slt, %i, %n : index           compare, gives i1
    %v = arith.select %p, %a, %b : f32
    %k = arith.index_cast %i : index to i32       casts

Besides MLIR's set: ``arith.floordivsi`` / ``arith.floormodsi`` are TVM's
floordiv and floormod (rounding toward minus infinity), which index
arithmetic after split and fuse needs.

What each op computes is defined once, in :mod:`.semantics` (widths and
wrap-around, signedness, division, shifts, NaN, casts: see its docstring).
``EVAL`` is that definition's array form, ``evaluator()`` the same specialised
to the op's operand type, ``INDEX_EVAL`` the Python-int form for ``index``
operands; interpreters, bounds analysis and constant folding call these.
"""

from __future__ import annotations

from ...ir import types as T
from ...ir.lazy import lazy_module
from ...ir.attrkinds import ANY, STR
from ...ir.core import Attr, Operation
from ...ir.traits import COMMUTATIVE, PURE

from . import semantics as S

np = lazy_module("numpy")   # parsing and printing never need numpy


class ArithOp(Operation):
    __slots__ = ()
    traits = frozenset({PURE})
    EVAL = None         # the array form of the op's semantics (numpy)
    INDEX_EVAL = None   # the Python-int form, for index operands (None: none)

    @property
    def mnemonic(self):
        return self.name

    def evaluator(self):
        """The op's array form specialised to its operand types: a function
        of the operand values (numpy scalars or arrays)."""
        return self.EVAL

    def evaluate(self, *args):
        with np.errstate(all="ignore"):
            return self.evaluator()(*args)


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

    ASSEMBLY_FORMAT = "$lhs `,` $rhs attr-dict `:` type($result)"

    def evaluator(self):
        return self.SEMANTICS.for_type(T.element_type(self.operands[0].type))


def _binary(clsname, opname, is_float, commutative=False):
    traits = frozenset({PURE, COMMUTATIVE}) if commutative else frozenset({PURE})
    sem = S.BINARY[opname]
    cls = type(clsname, (BinaryOp,),
               {"__slots__": (), "name": opname, "SEMANTICS": sem, "EVAL": staticmethod(sem),
                "INDEX_EVAL": staticmethod(sem.index) if sem.index is not None else None,
                "DIVISION": sem.division, "FLOAT": is_float, "traits": traits, "__module__": __name__,
                "__qualname__": clsname})
    return cls


AddIOp = _binary("AddIOp", "arith.addi", False, True)
SubIOp = _binary("SubIOp", "arith.subi", False)
MulIOp = _binary("MulIOp", "arith.muli", False, True)
DivSIOp = _binary("DivSIOp", "arith.divsi", False)
RemSIOp = _binary("RemSIOp", "arith.remsi", False)
FloorDivSIOp = _binary("FloorDivSIOp", "arith.floordivsi", False)
FloorModSIOp = _binary("FloorModSIOp", "arith.floormodsi", False)
MaxSIOp = _binary("MaxSIOp", "arith.maxsi", False, True)
MinSIOp = _binary("MinSIOp", "arith.minsi", False, True)
DivUIOp = _binary("DivUIOp", "arith.divui", False)
RemUIOp = _binary("RemUIOp", "arith.remui", False)
MaxUIOp = _binary("MaxUIOp", "arith.maxui", False, True)
MinUIOp = _binary("MinUIOp", "arith.minui", False, True)
ShRUIOp = _binary("ShRUIOp", "arith.shrui", False)
AndIOp = _binary("AndIOp", "arith.andi", False, True)
OrIOp = _binary("OrIOp", "arith.ori", False, True)
XOrIOp = _binary("XOrIOp", "arith.xori", False, True)
ShLIOp = _binary("ShLIOp", "arith.shli", False)
ShRSIOp = _binary("ShRSIOp", "arith.shrsi", False)
AddFOp = _binary("AddFOp", "arith.addf", True, True)
SubFOp = _binary("SubFOp", "arith.subf", True)
MulFOp = _binary("MulFOp", "arith.mulf", True, True)
DivFOp = _binary("DivFOp", "arith.divf", True)
RemFOp = _binary("RemFOp", "arith.remf", True)
MaximumFOp = _binary("MaximumFOp", "arith.maximumf", True, True)
MinimumFOp = _binary("MinimumFOp", "arith.minimumf", True, True)
PowFOp = _binary("PowFOp", "arith.powf", True)

BINARY_OPS = [c for c in list(globals().values()) if isinstance(c, type) and issubclass(c, BinaryOp)
              and c is not BinaryOp]


class NegFOp(ArithOp):
    __slots__ = ()
    name = "arith.negf"
    OPERANDS = ("operand",)
    RESULTS = ("result",)
    EVAL = staticmethod(S.negf)

    def infer_types(self):
        return [self.operands[0].type]

    def verify_(self):
        if self.results[0].type is not self.operands[0].type:
            raise self.error("result type must equal the operand type")
        if not T.is_float(T.element_type(self.operands[0].type)):
            raise self.error(f"expects a float operand, got {self.operands[0].type}")

    ASSEMBLY_FORMAT = "$operand attr-dict `:` type($result)"


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
            msg = T.float_range_error(v, t)
            if msg:
                raise self.error(msg)
        elif T.is_int(t):
            if type(v) not in (int, bool):
                raise self.error(f"value {v!r} is not an integer for type {t}")
            msg = T.int_range_error(int(v), t, canonical=True) or T.storage_type_error(t)
            if msg:
                raise self.error(msg)
        else:
            raise self.error(f"constant of unsupported type {t}")

    def evaluate(self):
        t = self.results[0].type
        return np.array(self.attributes["value"], dtype=T.to_numpy_dtype(t))[()]

    ASSEMBLY_FORMAT = "$value attr-dict `:` type($result)"

    @classmethod
    def coerce_parsed_attrs(cls, attrs, result_types):
        """``arith.constant 1 : f32`` holds 1.0."""
        t = result_types[0]
        v = attrs.get("value")
        if T.is_float(t) and type(v) is int:
            try:
                attrs["value"] = float(v)
            except OverflowError:
                raise ValueError(f"integer constant {v} overflows {t}") from None
        elif type(v) is int and T.is_int(t):
            # MLIR's text range: `255 : i8` is -1 (ir/types.py, literal ranges)
            msg = T.int_range_error(v, t)
            if msg:
                raise ValueError(msg)
            attrs["value"] = T.canonical_int(v, t)
        return attrs


CMPI_PREDICATES = S.CMPI
CMPF_PREDICATES = S.CMPF


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

    def evaluator(self):
        return self.PREDICATES[self.attributes["predicate"]]

    ASSEMBLY_FORMAT = "keyword($predicate) `,` $lhs `,` $rhs attr-dict `:` type($lhs)"


class CmpIOp(_CmpOp):
    __slots__ = ()
    name = "arith.cmpi"
    PREDICATES = CMPI_PREDICATES
    INDEX_PREDICATES = S.INDEX_CMP

    def evaluator(self):
        return S.cmpi_for_type(self.attributes["predicate"], T.element_type(self.operands[0].type))


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
    EVAL = staticmethod(S.select)

    def infer_types(self):
        return [self.operands[1].type]

    def verify_(self):
        c, a, b = self.operands
        if a.type is not b.type or self.results[0].type is not a.type:
            raise self.error(f"both values and the result must have one type, got {a.type}, {b.type}")
        if T.element_type(c.type) is not T.i1:
            raise self.error(f"condition must be i1, got {c.type}")

    ASSEMBLY_FORMAT = "$condition `,` $true_value `,` $false_value attr-dict `:` type($result)"


class CastOp(ArithOp):
    __slots__ = ()
    OPERANDS = ("operand",)
    RESULTS = ("result",)

    def evaluator(self):
        return S.cast_fn(self.name, T.element_type(self.operands[0].type), T.element_type(self.results[0].type))

    def verify_(self):
        src = T.element_type(self.operands[0].type)
        dst = T.element_type(self.results[0].type)
        ok = self.ACCEPT(src, dst)
        if not ok:
            raise self.error(f"cannot cast {self.operands[0].type} to {self.results[0].type}")

    ASSEMBLY_FORMAT = "$operand attr-dict `:` type($operand) `to` type($result)"


def _cast(clsname, opname, accept):
    return type(clsname, (CastOp,),
                {"__slots__": (), "name": opname, "ACCEPT": staticmethod(accept), "__module__": __name__,
                 "__qualname__": clsname})


IndexCastOp = _cast("IndexCastOp", "arith.index_cast", lambda s, d: T.is_int(s) and T.is_int(d))
SIToFPOp = _cast("SIToFPOp", "arith.sitofp", lambda s, d: T.is_int(s) and T.is_float(d))
UIToFPOp = _cast("UIToFPOp", "arith.uitofp", lambda s, d: T.is_int(s) and T.is_float(d))
FPToSIOp = _cast("FPToSIOp", "arith.fptosi", lambda s, d: T.is_float(s) and T.is_int(d))
FPToUIOp = _cast("FPToUIOp", "arith.fptoui", lambda s, d: T.is_float(s) and T.is_int(d))
ExtFOp = _cast("ExtFOp", "arith.extf", lambda s, d: T.is_float(s) and T.is_float(d) and d.width > s.width)
TruncFOp = _cast("TruncFOp", "arith.truncf", lambda s, d: T.is_float(s) and T.is_float(d) and d.width < s.width)
ExtSIOp = _cast("ExtSIOp", "arith.extsi", lambda s, d: T.is_int(s) and T.is_int(d) and d.bitwidth > s.bitwidth)
ExtUIOp = _cast("ExtUIOp", "arith.extui", lambda s, d: T.is_int(s) and T.is_int(d) and d.bitwidth > s.bitwidth)
TruncIOp = _cast("TruncIOp", "arith.trunci", lambda s, d: T.is_int(s) and T.is_int(d) and d.bitwidth < s.bitwidth)
# the same bits read as another type of one width (bf16 <-> i16, f32 <-> i32):
# how a kernel packs bf16 values into the i32 words of a dot product
BitcastOp = _cast("BitcastOp", "arith.bitcast", lambda s, d: s is not d and s is not T.index and
                  d is not T.index and getattr(s, "bitwidth", None) is not None
                  and s.bitwidth == getattr(d, "bitwidth", None))

CAST_OPS = [IndexCastOp, SIToFPOp, UIToFPOp, FPToSIOp, FPToUIOp, ExtFOp, TruncFOp, ExtSIOp, ExtUIOp, TruncIOp,
            BitcastOp]



def binary_for(kind: str, t) -> type:
    """The arith op class for `kind` (add, sub, mul, div, max, min, ...) on
    type `t`: on ``uiN`` and ``i1`` the ones that read the bits as unsigned
    (floor and truncating division agree there)."""
    et = T.element_type(t)
    fl = T.is_float(et)
    if T.reads_unsigned(et):
        unsigned = {"div": DivUIOp, "floordiv": DivUIOp, "floormod": RemUIOp, "max": MaxUIOp, "min": MinUIOp}
        if kind in unsigned:
            return unsigned[kind]
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
