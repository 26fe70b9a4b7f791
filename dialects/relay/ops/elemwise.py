"""Elementwise and broadcasting operators.

Binary, numpy broadcasting, both operands of one dtype (pattern broadcast,
layout rule "broadcast"):

    %z = add(%x, %y) : tensor<1x64xf32>
    add subtract multiply divide power maximum minimum floor_divide floor_mod mod
    left_shift right_shift bitwise_and bitwise_or bitwise_xor            (integers)
    logical_and logical_or logical_xor                                   (any dtype, usually i1)
    equal not_equal less less_equal greater greater_equal                (result i1)

``divide`` and ``mod`` truncate on integers (C, TVM's truncdiv/truncmod);
``floor_divide`` and ``floor_mod`` round toward minus infinity.

Unary (pattern elemwise, layout rule "elemwise"):

    %r = nn.relu(%x) : tensor<1x64xf32>
    negative abs sign floor ceil round trunc copy zeros_like ones_like nn.relu
    logical_not bitwise_not                        isnan isinf isfinite (result i1)
    exp log log2 log10 sqrt rsqrt sigmoid tanh erf sin cos tan asin acos atan
    sinh cosh asinh acosh atanh                    (floating point only)

With attributes:

    clip(%x) {a_min = -1.0, a_max = 1.0}           a_min, a_max: required numbers
    cast(%x) {dtype = "int32"}                     dtype: required, TVM or MLIR name
    cast_like(%x, %like)                           the dtype of %like
    nn.leaky_relu(%x) {alpha = 0.01}
    nn.prelu(%x, %alpha) {axis = 1}                alpha: 1-d, the size of data's axis
    nn.gelu(%x) {approximate = "none"}             "none" (erf) | "tanh", as ONNX Gelu
    where(%cond, %x, %y)                           cond is i1; all three broadcast
    full_like(%x, %value)                          %value: a one-element tensor
"""

from __future__ import annotations

import math

from ....ir import types as T
from ....ir.attrkinds import FLOAT, INT, STR, enum
from ....ir.core import Attr
from ....ir.lazy import lazy_module, np_function
from ....ir.traits import COMMUTATIVE, PURE
from .base import OpPattern, RelayOp, broadcast_shapes, same_dtype, tensor_type
from .util import dtype_attr, norm_axis, scalar_like

np = lazy_module("numpy")   # parsing and printing never need numpy


# -- binary -------------------------------------------------------------------------

class BinaryBroadcastOp(RelayOp):
    __slots__ = ()
    OPERANDS = ("lhs", "rhs")
    PATTERN = OpPattern.BROADCAST
    LAYOUT = "broadcast"
    FN = None
    KIND = "any"          # "any" | "int" (shifts, bitwise) | "float"
    BOOL_RESULT = False   # comparisons

    def type_relation(self, a, b):
        tensor_type(self, a)
        tensor_type(self, b)
        e = same_dtype(self, a, b)
        if self.KIND == "int" and not (isinstance(e, T.IntegerType)):
            raise self.error(f"expects integer operands, got {a} and {b}")
        if e is T.string and self.name not in ("relay.equal", "relay.not_equal"):
            raise self.error("is not defined on strings (equal and not_equal are; strings.concat joins them)")
        shape = broadcast_shapes(self, a.shape, b.shape)
        return T.TensorType(shape, T.i1 if self.BOOL_RESULT else e)

    def compute(self, a, b):
        with np.errstate(all="ignore"):
            return np.asarray(self.FN(a, b)).astype(self.results[0].type.dtype, copy=False)


def _binary(name, fn, commutative=False, kind="any", bool_result=False, base=BinaryBroadcastOp):
    traits = frozenset({PURE, COMMUTATIVE}) if commutative else frozenset({PURE})
    cls = type(_class_name(name), (base,), {
        "__slots__": (), "name": "relay." + name, "FN": staticmethod(fn), "traits": traits,
        "KIND": kind, "BOOL_RESULT": bool_result, "__doc__": f"``{name}(%a, %b)``"})
    return cls


def _class_name(name):
    return "".join(p.capitalize() for p in name.replace(".", "_").split("_")) + "Op"


def _divide(a, b):
    if np.issubdtype(np.asarray(a).dtype, np.integer):
        # C division truncates toward zero; numpy's // floors
        q = np.abs(a) // np.abs(b)
        return np.where((np.asarray(a) < 0) != (np.asarray(b) < 0), -q, q)
    return np.divide(a, b)


def _power(a, b):
    if np.issubdtype(np.asarray(a).dtype, np.integer):
        # numpy refuses negative integer exponents; C-style pow then truncates
        return np.trunc(np.power(a.astype(np.float64), b.astype(np.float64)))
    return np.power(a, b)


def _logical(fn):
    return lambda a, b: fn(a.astype(bool), b.astype(bool))


AddOp = _binary("add", np_function("add"), True)
SubtractOp = _binary("subtract", np_function("subtract"))
MultiplyOp = _binary("multiply", np_function("multiply"), True)
DivideOp = _binary("divide", _divide)
PowerOp = _binary("power", _power)
MaximumOp = _binary("maximum", np_function("maximum"), True)
MinimumOp = _binary("minimum", np_function("minimum"), True)
FloorDivideOp = _binary("floor_divide", np_function("floor_divide"))
FloorModOp = _binary("floor_mod", np_function("mod"))     # numpy's mod floors
ModOp = _binary("mod", np_function("fmod"))              # fmod truncates, as C's %
LeftShiftOp = _binary("left_shift", np_function("left_shift"), kind="int")
RightShiftOp = _binary("right_shift", np_function("right_shift"), kind="int")
BitwiseAndOp = _binary("bitwise_and", np_function("bitwise_and"), True, kind="int")
BitwiseOrOp = _binary("bitwise_or", np_function("bitwise_or"), True, kind="int")
BitwiseXorOp = _binary("bitwise_xor", np_function("bitwise_xor"), True, kind="int")
LogicalAndOp = _binary("logical_and", _logical(np_function("logical_and")), True)
LogicalOrOp = _binary("logical_or", _logical(np_function("logical_or")), True)
LogicalXorOp = _binary("logical_xor", _logical(np_function("logical_xor")), True)
EqualOp = _binary("equal", np_function("equal"), True, bool_result=True)
NotEqualOp = _binary("not_equal", np_function("not_equal"), True, bool_result=True)
LessOp = _binary("less", np_function("less"), bool_result=True)
LessEqualOp = _binary("less_equal", np_function("less_equal"), bool_result=True)
GreaterOp = _binary("greater", np_function("greater"), bool_result=True)
GreaterEqualOp = _binary("greater_equal", np_function("greater_equal"), bool_result=True)


# -- unary ----------------------------------------------------------------------------

class UnaryOp(RelayOp):
    __slots__ = ()
    OPERANDS = ("data",)
    PATTERN = OpPattern.ELEMWISE
    LAYOUT = "elemwise"
    FN = None
    KIND = "any"          # "any" | "float" | "int"
    BOOL_RESULT = False

    def type_relation(self, a):
        tensor_type(self, a)
        e = a.element_type
        if self.KIND == "float" and not T.is_float(e):
            raise self.error(f"expects a floating-point tensor, got {a}")
        if self.KIND == "int" and not isinstance(e, T.IntegerType):
            raise self.error(f"expects an integer tensor, got {a}")
        if e is T.string and self.name != "relay.copy":
            raise self.error(f"is not defined on strings, got {a}")
        return a.with_element(T.i1) if self.BOOL_RESULT else a

    def compute(self, a):
        with np.errstate(all="ignore"):
            return np.asarray(self.FN(a)).astype(self.results[0].type.dtype, copy=False)


def _unary(name, fn, kind="any", bool_result=False):
    return type(_class_name(name), (UnaryOp,), {
        "__slots__": (), "name": "relay." + name, "FN": staticmethod(fn), "KIND": kind,
        "BOOL_RESULT": bool_result, "__doc__": f"``{name}(%x)``"})


def erf(a):
    """numpy has no erf; math.erf per element is exact and fast enough for
    the reference interpreter."""
    a = np.asarray(a)
    return np.frompyfunc(math.erf, 1, 1)(a).astype(a.dtype)


def _sigmoid(a):
    # split by sign so that exp never overflows
    out = np.empty_like(a)
    pos = a >= 0
    out[pos] = 1 / (1 + np.exp(-a[pos]))
    e = np.exp(a[~pos])
    out[~pos] = e / (1 + e)
    return out


def _keep_int(fn):
    """floor/ceil/round/trunc leave integers as they are."""
    return lambda a: a if np.issubdtype(a.dtype, np.integer) or a.dtype == bool else fn(a)


ReluOp = _unary("nn.relu", lambda a: np.maximum(a, np.zeros((), a.dtype)))
NegativeOp = _unary("negative", np_function("negative"))
AbsOp = _unary("abs", np_function("abs"))
SignOp = _unary("sign", np_function("sign"))
FloorOp = _unary("floor", _keep_int(np_function("floor")))
CeilOp = _unary("ceil", _keep_int(np_function("ceil")))
RoundOp = _unary("round", _keep_int(np_function("round")))   # half to even, as nearbyint
TruncOp = _unary("trunc", _keep_int(np_function("trunc")))
CopyOp = _unary("copy", lambda a: a.copy())
ZerosLikeOp = _unary("zeros_like", np_function("zeros_like"))
OnesLikeOp = _unary("ones_like", np_function("ones_like"))
LogicalNotOp = _unary("logical_not", np_function("logical_not"))
BitwiseNotOp = _unary("bitwise_not", np_function("invert"), kind="int")
IsNanOp = _unary("isnan", np_function("isnan"), bool_result=True)
IsInfOp = _unary("isinf", np_function("isinf"), bool_result=True)
IsFiniteOp = _unary("isfinite", np_function("isfinite"), bool_result=True)
ExpOp = _unary("exp", np_function("exp"), "float")
LogOp = _unary("log", np_function("log"), "float")
Log2Op = _unary("log2", np_function("log2"), "float")
Log10Op = _unary("log10", np_function("log10"), "float")
SqrtOp = _unary("sqrt", np_function("sqrt"), "float")
RsqrtOp = _unary("rsqrt", lambda a: 1 / np.sqrt(a), "float")
SigmoidOp = _unary("sigmoid", _sigmoid, "float")
TanhOp = _unary("tanh", np_function("tanh"), "float")
ErfOp = _unary("erf", erf, "float")
SinOp = _unary("sin", np_function("sin"), "float")
CosOp = _unary("cos", np_function("cos"), "float")
TanOp = _unary("tan", np_function("tan"), "float")
AsinOp = _unary("asin", np_function("arcsin"), "float")
AcosOp = _unary("acos", np_function("arccos"), "float")
AtanOp = _unary("atan", np_function("arctan"), "float")
SinhOp = _unary("sinh", np_function("sinh"), "float")
CoshOp = _unary("cosh", np_function("cosh"), "float")
AsinhOp = _unary("asinh", np_function("arcsinh"), "float")
AcoshOp = _unary("acosh", np_function("arccosh"), "float")
AtanhOp = _unary("atanh", np_function("arctanh"), "float")


# -- unary with attributes -------------------------------------------------------------

class ClipOp(UnaryOp):
    """``clip(%x) {a_min, a_max}``: min(max(x, a_min), a_max), the bounds in
    the tensor's dtype."""
    __slots__ = ()
    name = "relay.clip"
    ATTRS = {"a_min": Attr(FLOAT), "a_max": Attr(FLOAT)}

    def compute(self, a):
        lo, hi = self.attributes["a_min"], self.attributes["a_max"]
        if np.issubdtype(a.dtype, np.integer):
            info = np.iinfo(a.dtype)
            lo = max(math.ceil(lo), info.min) if lo > -math.inf else info.min
            hi = min(math.floor(hi), info.max) if hi < math.inf else info.max
        # min(max(x, lo), hi): with a_min > a_max everything becomes a_max (as ONNX Clip)
        return np.minimum(np.maximum(a, a.dtype.type(lo)), a.dtype.type(hi)).astype(a.dtype)


class CastOp(UnaryOp):
    """``cast(%x) {dtype = "int32"}``: float to integer truncates toward zero."""
    __slots__ = ()
    name = "relay.cast"
    ATTRS = {"dtype": Attr(STR)}

    def type_relation(self, a):
        tensor_type(self, a)
        return a.with_element(dtype_attr(self))

    def compute(self, a):
        with np.errstate(all="ignore"):
            return a.astype(self.results[0].type.dtype)


class ReinterpretOp(UnaryOp):
    """``reinterpret(%x) {dtype = "int32"}``: the same bits read as another
    type of the same width (ONNX BitCast, little-endian); bool is a byte,
    and a byte other than 0 becomes true."""
    __slots__ = ()
    name = "relay.reinterpret"
    ATTRS = {"dtype": Attr(STR)}

    def type_relation(self, a):
        tensor_type(self, a)
        to = dtype_attr(self)
        src = a.element_type
        # bool is stored in a byte (as ONNX and numpy do): it pairs with the 8-bit types
        widths = [8 if t is T.i1 else getattr(t, "width", None) for t in (src, to)]
        if None in widths or widths[0] != widths[1]:
            raise self.error(f"reinterprets only between types of one bit width, got {src} to {to}")
        return a.with_element(to)

    def compute(self, a):
        to = self.results[0].type.element_type
        if to is T.i1:
            return a != 0      # a byte other than 0 or 1 is no bool: read it as true
        return np.array(a, order="C").view(T.to_numpy_dtype(to))


class CastLikeOp(RelayOp):
    """``cast_like(%x, %like)``: %x in the dtype of %like."""
    __slots__ = ()
    name = "relay.cast_like"
    OPERANDS = ("data", "dtype_like")
    PATTERN = OpPattern.ELEMWISE
    LAYOUT = "elemwise"

    def type_relation(self, a, like):
        tensor_type(self, a)
        tensor_type(self, like, "dtype_like operand")
        return a.with_element(like.element_type)

    def compute(self, a, like):
        with np.errstate(all="ignore"):
            return a.astype(like.dtype)


class LeakyReluOp(UnaryOp):
    """``nn.leaky_relu(%x) {alpha = 0.01}``: x for x > 0, alpha * x otherwise."""
    __slots__ = ()
    name = "relay.nn.leaky_relu"
    ATTRS = {"alpha": Attr(FLOAT, 0.01)}
    KIND = "float"

    def compute(self, a):
        return np.where(a > 0, a, a * a.dtype.type(self.attributes["alpha"])).astype(a.dtype)


class GeluOp(UnaryOp):
    """``nn.gelu(%x) {approximate = "none"}``: ONNX's Gelu.  TVM composes it
    from erf or tanh; one op keeps the graph readable and FuseOps treats it
    as the elementwise op it is."""
    __slots__ = ()
    name = "relay.nn.gelu"
    ATTRS = {"approximate": Attr(enum("none", "tanh"), "none")}
    KIND = "float"

    def compute(self, a):
        x = a.astype(np.float64)
        if self.attributes["approximate"] == "tanh":
            y = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        else:
            y = 0.5 * x * (1 + erf(x / math.sqrt(2)))
        return y.astype(a.dtype)


class PReluOp(RelayOp):
    """``nn.prelu(%x, %alpha) {axis = 1}``: alpha per channel along `axis`."""
    __slots__ = ()
    name = "relay.nn.prelu"
    OPERANDS = ("data", "alpha")
    ATTRS = {"axis": Attr(INT, 1)}
    PATTERN = OpPattern.BROADCAST
    LAYOUT = "axis"
    AXIS_ATTRS = ("axis",)

    def type_relation(self, x, alpha):
        tensor_type(self, x)
        tensor_type(self, alpha, "alpha")
        same_dtype(self, x, alpha)
        axis = norm_axis(self, self.attributes["axis"], x.rank)
        c = x.shape[axis]
        if alpha.rank != 1 or (c is not None and alpha.shape[0] is not None and alpha.shape[0] != c):
            raise self.error(f"alpha must be 1-d of size {'?' if c is None else c} (axis {axis} of the data), "
                             f"got {alpha}")
        return x

    def compute(self, x, alpha):
        axis = self.attributes["axis"] % x.ndim
        shape = [1] * x.ndim
        shape[axis] = -1
        return np.where(x > 0, x, x * alpha.reshape(shape)).astype(x.dtype)


class WhereOp(RelayOp):
    """``where(%cond, %x, %y)``: %x where %cond holds, else %y; all broadcast."""
    __slots__ = ()
    name = "relay.where"
    OPERANDS = ("condition", "x", "y")
    PATTERN = OpPattern.BROADCAST
    LAYOUT = "broadcast"

    def type_relation(self, c, x, y):
        tensor_type(self, c, "condition")
        tensor_type(self, x)
        tensor_type(self, y)
        if c.element_type is not T.i1:
            raise self.error(f"condition must be a boolean (i1) tensor, got {c}")
        e = same_dtype(self, x, y)
        shape = broadcast_shapes(self, broadcast_shapes(self, c.shape, x.shape), y.shape)
        return T.TensorType(shape, e)

    def compute(self, c, x, y):
        return np.where(c, x, y).astype(x.dtype, copy=False)


class FullLikeOp(RelayOp):
    """``full_like(%x, %value)``: %x's shape and dtype, filled with %value."""
    __slots__ = ()
    name = "relay.full_like"
    OPERANDS = ("data", "fill_value")
    PATTERN = OpPattern.ELEMWISE
    LAYOUT = "elemwise"

    def type_relation(self, x, v):
        tensor_type(self, x)
        scalar_like(self, v, "fill_value")
        return x

    def compute(self, x, v):
        return np.full(x.shape, v.reshape(()), dtype=x.dtype)
