"""Elementwise and broadcasting operators.

    %z = add(%x, %y) : tensor<1x64xf32>       numpy broadcasting, one dtype
    %r = nn.relu(%x) : tensor<1x64xf32>
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.lazy import lazy_module, np_function
from .base import OpPattern, RelayOp, broadcast_shapes, same_dtype, tensor_type
from ....ir.traits import COMMUTATIVE, PURE

np = lazy_module("numpy")   # parsing and printing never need numpy


class BinaryBroadcastOp(RelayOp):
    __slots__ = ()
    OPERANDS = ("lhs", "rhs")
    PATTERN = OpPattern.BROADCAST
    FN = None

    def type_relation(self, a, b):
        tensor_type(self, a)
        tensor_type(self, b)
        e = same_dtype(self, a, b)
        return T.TensorType(broadcast_shapes(self, a.shape, b.shape), e)

    def compute(self, a, b):
        with np.errstate(all="ignore"):
            return self.FN(a, b).astype(a.dtype, copy=False)


class UnaryOp(RelayOp):
    __slots__ = ()
    OPERANDS = ("data",)
    PATTERN = OpPattern.ELEMWISE
    FN = None
    FLOAT_ONLY = False

    def type_relation(self, a):
        tensor_type(self, a)
        if self.FLOAT_ONLY and not T.is_float(a.element_type):
            raise self.error(f"expects a float tensor, got {a}")
        return a

    def compute(self, a):
        with np.errstate(all="ignore"):
            return np.asarray(self.FN(a)).astype(a.dtype, copy=False)


def _binary(name, fn, commutative=False):
    traits = frozenset({PURE, COMMUTATIVE}) if commutative else frozenset({PURE})
    return type(name, (BinaryBroadcastOp,), {"__slots__": (), "name": "relay." + name,
                                            "FN": staticmethod(fn), "traits": traits})


def _unary(name, fn, float_only=False):
    return type(name, (UnaryOp,), {"__slots__": (), "name": "relay." + name,
                                   "FN": staticmethod(fn), "FLOAT_ONLY": float_only})


def _divide(a, b):
    if np.issubdtype(np.asarray(a).dtype, np.integer):
        q = np.abs(a) // np.abs(b)
        return np.where((np.asarray(a) < 0) != (np.asarray(b) < 0), -q, q)
    return np.divide(a, b)


AddOp = _binary("add", np_function("add"), True)
SubtractOp = _binary("subtract", np_function("subtract"))
MultiplyOp = _binary("multiply", np_function("multiply"), True)
DivideOp = _binary("divide", _divide)
MaximumOp = _binary("maximum", np_function("maximum"), True)
MinimumOp = _binary("minimum", np_function("minimum"), True)

ReluOp = _unary("nn.relu", lambda a: np.maximum(a, np.zeros((), a.dtype)))
NegativeOp = _unary("negative", np_function("negative"))
ExpOp = _unary("exp", np_function("exp"), True)
SigmoidOp = _unary("sigmoid", lambda a: 1 / (1 + np.exp(-a)), True)
TanhOp = _unary("tanh", np_function("tanh"), True)
