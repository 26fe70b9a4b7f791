"""``tvmd.tir``: the scalar helpers of classic ``tvm.tir`` that TE scripts use.

``tvm.tir.max(a, b)`` / ``min`` are elementwise (``arith.maxsi`` /
``maximumf`` ...), unlike ``te.max``, which is a reducer (it also takes two
expressions, as TVM's does).  Everything else is shared with ``tvmd.te``.
"""

from __future__ import annotations

from .expr import Call, Cast, Const, Expr, Select, TVMError, Var, binary, const  # noqa: F401
from .te import (abs, acos, acosh, all, any, asin, asinh, atan, atanh, ceil, cos, cosh, div, erf,  # noqa: F401
                 exp, floor, floordiv, floormod, if_then_else, indexdiv, indexmod, log, log2, log10,
                 max_value, min_value, nearbyint, power, round, rsqrt, sigmoid, sin, sinh, sqrt, tan,
                 tanh, trunc, truncdiv, truncmod)

IntImm = FloatImm = Const


def max(a, b):   # noqa: A001 (TVM's name)
    """Elementwise maximum (``arith.maxsi`` / ``arith.maximumf``)."""
    return binary("max", a, b)


def min(a, b):   # noqa: A001
    """Elementwise minimum (``arith.minsi`` / ``arith.minimumf``)."""
    return binary("min", a, b)
