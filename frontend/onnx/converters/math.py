"""Elementwise math: arithmetic, comparisons, logic, bit operations,
unary functions, variadic Sum / Mean / Max / Min, Clip, Cast, Where.

Binary ops broadcast as numpy does from opset 7 on; before that they took
``broadcast`` / ``axis`` attributes (common.legacy_broadcast).
"""

from __future__ import annotations

import math

from ....ir import minifloat
from ....ir import types as T
from ..registry import converter
from .common import legacy_broadcast, onnx_dtype

# ONNX op -> relay op, for binary ops that map one to one.
BINARY = {
    "Add": "add", "Sub": "subtract", "Mul": "multiply", "Div": "divide",
    "Equal": "equal", "Less": "less", "Greater": "greater",
    "LessOrEqual": "less_equal", "GreaterOrEqual": "greater_equal",
    "And": "logical_and", "Or": "logical_or", "Xor": "logical_xor",
    "BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor",
}

UNARY = {
    "Abs": "abs", "Neg": "negative", "Exp": "exp", "Log": "log", "Sqrt": "sqrt",
    "Floor": "floor", "Ceil": "ceil", "Round": "round", "Sign": "sign", "Erf": "erf",
    "Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "asin", "Acos": "acos", "Atan": "atan",
    "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh", "Acosh": "acosh", "Atanh": "atanh",
    "Tanh": "tanh", "Sigmoid": "sigmoid", "Not": "logical_not", "BitwiseNot": "bitwise_not",
    "IsNaN": "isnan", "Relu": "nn.relu",
}


@converter(tuple(BINARY), 1)
def binary(cx, node):
    a, b = node.input(0), node.input(1)
    b = legacy_broadcast(cx, node, a, b)
    return cx.op(BINARY[node.op_type], a, b)


@converter(tuple(UNARY), 1)
def unary(cx, node):
    return cx.op(UNARY[node.op_type], node.input(0))


@converter("Reciprocal", 1)
def reciprocal(cx, node):
    x = node.input(0)
    return cx.op("divide", cx.scalar(1, x), x)


@converter("Pow", 1)
def power(cx, node):
    """From opset 12 the exponent may have another type than the base; the
    result has the base's."""
    x, y = node.input(0), node.input(1)
    y = legacy_broadcast(cx, node, x, y)
    return cx.op("power", x, cx.cast(y, cx.dtype(x)))


@converter("Mod", 10)
def mod(cx, node):
    """fmod = 0: the remainder has the divisor's sign (floor_mod);
    fmod = 1: the dividend's, as C's fmod (mod)."""
    return cx.op("mod" if node.attr("fmod", 0) else "floor_mod", node.input(0), node.input(1))


@converter("BitShift", 11)
def bit_shift(cx, node):
    direction = node.attr("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise cx.error(f"direction must be LEFT or RIGHT, got '{direction}'")
    return cx.op("left_shift" if direction == "LEFT" else "right_shift", node.input(0), node.input(1))


@converter("IsInf", 10)
def is_inf(cx, node):
    x = node.input(0)
    pos, neg = node.attr("detect_positive", 1), node.attr("detect_negative", 1)
    inf = cx.op("isinf", x)
    if pos and neg:
        return inf
    if not pos and not neg:
        return cx.op("logical_and", inf, cx.const(False))
    side = cx.op("greater" if pos else "less", x, cx.scalar(0, x))
    return cx.op("logical_and", inf, side)


_VARIADIC = {"Sum": "add", "Max": "maximum", "Min": "minimum", "Mean": "add"}


@converter(tuple(_VARIADIC), 1)
def variadic(cx, node):
    """Sum / Max / Min / Mean of any number of inputs (broadcasting from
    opset 8), as a chain of binary ops."""
    xs = [v for v in node.inputs if v is not None]
    if not xs:
        raise cx.error("needs at least one input")
    acc = xs[0]
    for x in xs[1:]:
        acc = cx.op(_VARIADIC[node.op_type], acc, x)
    if node.op_type == "Mean" and len(xs) > 1:
        acc = cx.op("divide", acc, cx.scalar(len(xs), acc))
    return acc


@converter("Clip", 1)
def clip_v1(cx, node):
    x = node.input(0)
    return _clip(cx, x, node.attr("min", float("-inf")), node.attr("max", float("inf")))


@converter("Clip", 11)
def clip_v11(cx, node):
    """Bounds are optional inputs: static ones give one clip, run-time ones
    a maximum and a minimum."""
    x = node.input(0)
    lo, hi = node.input(1), node.input(2)
    for v, what in ((lo, "min"), (hi, "max")):
        if v is not None and None not in cx.shape(v) and math.prod(cx.shape(v)) != 1:
            raise cx.error(f"its {what} must be a scalar, got {cx.ttype(v)}")
    slo = cx.static(lo) if lo is not None else None
    shi = cx.static(hi) if hi is not None else None
    if (lo is None or slo is not None) and (hi is None or shi is not None):
        return _clip(cx, x, None if lo is None else slo.item(), None if hi is None else shi.item())
    if lo is not None:
        x = cx.op("maximum", x, lo)
    if hi is not None:
        x = cx.op("minimum", x, hi)
    return x


def _clip(cx, x, lo, hi):
    """clip for floats; integers (whose bounds a float attribute may not
    hold exactly) clamp with maximum / minimum against constants."""
    if T.is_float(cx.dtype(x)):
        lo = float("-inf") if lo is None else float(lo)
        hi = float("inf") if hi is None else float(hi)
        return cx.op("clip", x, a_min=lo, a_max=hi)
    if lo is not None:
        x = cx.op("maximum", x, cx.scalar(lo, x))
    if hi is not None:
        x = cx.op("minimum", x, cx.scalar(hi, x))
    return x


@converter("Cast", 1)
def cast(cx, node):
    to = node.attr("to")
    if isinstance(to, str):   # opset 1-5 named the type
        from onnx import TensorProto
        try:
            to = TensorProto.DataType.Value(to.upper())
        except ValueError:
            raise cx.error(f"'to' names an unknown element type '{to}'") from None
    return cast_saturating(cx, node, node.input(0), onnx_dtype(cx, to, "cast to"))


def cast_saturating(cx, node, x, to):
    """`x` cast to `to`; to an 8-bit float with ``saturate`` (opset 19,
    default 1), a value beyond the largest finite one (inf included)
    becomes that value, NaN staying NaN; without it, inf or NaN (the
    format's rounding, ir/minifloat.py)."""
    fmt = minifloat.format_of(to)
    if fmt is not None and node.version >= 19 and node.attr("saturate", 1) and cx.dtype(x) is not to:
        if not T.is_float(cx.dtype(x)):
            x = cx.cast(x, T.f32)    # exact up to 2^24, and larger integers saturate anyway
        src = minifloat.format_of(cx.dtype(x))
        if src is None or src.max_value > fmt.max_value:
            x = cx.op("clip", x, a_min=-fmt.max_value, a_max=fmt.max_value)
    return cx.cast(x, to)


@converter("BitCast", 26)
def bit_cast(cx, node):
    """reinterpret: the same bits as the type `to` names (same width)."""
    return cx.op("reinterpret", node.input(0), dtype=onnx_dtype(cx, node.attr("to"), "bit-cast to"))


@converter("CastLike", 15)
def cast_like(cx, node):
    return cast_saturating(cx, node, node.input(0), cx.dtype(node.input(1)))


@converter("Where", 9)
def where(cx, node):
    return cx.op("where", node.input(0), node.input(1), node.input(2))


@converter("Identity", 1)
def identity(cx, node):
    return node.input(0)


@converter("DFT", 17)
def dft(cx, node):
    """dft; dft_length and (opset 20) axis are inputs that must be known at import."""
    x = node.input(0)
    if node.version >= 20:
        axis = int(cx.static_scalar(node.input(2), "axis")) if node.input(2) is not None else -2
    else:
        axis = node.attr("axis", 1)
    r = cx.rank(x)
    if not (-r <= axis <= -2 or 0 <= axis <= r - 2):
        raise cx.error(f"axis {axis} is not a signal axis of a rank-{r} input")
    length = int(cx.static_scalar(node.input(1), "dft_length")) if node.input(1) is not None else 0
    return cx.op("dft", x, axis=axis % r, length=length, inverse=bool(node.attr("inverse", 0)),
                 onesided=bool(node.attr("onesided", 0)))


@converter("Det", 11)
def det(cx, node):
    return cx.op("det", node.input(0))


@converter("Col2Im", 18)
def col2im(cx, node):
    """col2im; image_shape and block_shape are inputs known at import."""
    image = [int(v) for v in cx.static_ints(node.input(1), "image_shape")]
    block = [int(v) for v in cx.static_ints(node.input(2), "block_shape")]
    return cx.op("col2im", node.input(0), image_shape=image, block_shape=block,
                 strides=node.attr("strides", []) or None, pads=node.attr("pads", []) or None,
                 dilations=node.attr("dilations", []) or None)


@converter("STFT", 17)
def stft(cx, node):
    """Frames taken with one take (an index matrix known at import), times
    the window, then a dft along the frame axis: (batch, frames, bins, 2)."""
    import numpy as np
    x, window = node.input(0), node.input(2)
    shape = cx.static_shape(x, "signal")
    if len(shape) != 3 or shape[2] not in (1, 2):
        raise cx.error(f"expects a signal (batch, length, 1 or 2), got {cx.ttype(x)}")
    step = int(cx.static_scalar(node.input(1), "frame_step"))
    if node.input(3) is not None:
        length = int(cx.static_scalar(node.input(3), "frame_length"))
    elif window is not None:
        length = cx.static_shape(window, "window")[0]
    else:
        length = shape[1]
    if step < 1 or not 1 <= length <= shape[1]:
        raise cx.error(f"frame_step {step} and frame_length {length} do not fit a signal of {shape[1]}")
    frames = (shape[1] - length) // step + 1
    idx = (np.arange(frames)[:, None] * step + np.arange(length)[None, :]).astype(np.int64)
    y = cx.op("take", x, cx.const(idx), axis=1)                 # batch, frames, length, c
    if window is not None:
        y = cx.op("multiply", y, cx.op("reshape", cx.cast(window, cx.dtype(x)), newshape=[length, 1]))
    return cx.op("dft", y, axis=2, onesided=bool(node.attr("onesided", 1)))
