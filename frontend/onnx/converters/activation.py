"""Activations and the softmax family.

Where relay has the op (nn.leaky_relu, nn.prelu, nn.gelu, nn.softmax, ...)
it is used; the rest are written with elementwise ops exactly as the ONNX
definition reads, so that FuseOps makes one kernel of them anyway.
"""

from __future__ import annotations

from ..registry import converter
from .common import norm_axis


def _where_negative(cx, x, neg, pos=None):
    """x < 0 ? neg : pos (default x)."""
    return cx.op("where", cx.op("less", x, cx.scalar(0, x)), neg, x if pos is None else pos)


@converter("LeakyRelu", 1)
def leaky_relu(cx, node):
    return cx.op("nn.leaky_relu", node.input(0), alpha=node.attr("alpha", 0.01))


@converter("PRelu", 1)
def prelu(cx, node):
    """nn.prelu when the slope is one value per channel (axis 1), else
    x < 0 ? slope * x : x with the slope broadcast as ONNX allows."""
    x, slope = node.input(0), node.input(1)
    xs, ss = cx.shape(x), cx.shape(slope)
    rank = len(xs)
    if node.version < 7 and len(ss) == 1 and rank >= 2 and ss[0] == xs[1] and ss[0] != 1:
        return cx.op("nn.prelu", x, slope, axis=1)   # opset 6: one slope per channel (axis 1)
    if rank >= 2 and len(ss) <= rank and xs[1] is not None:
        full = (1,) * (rank - len(ss)) + tuple(ss)
        if full[0] == 1 and all(d == 1 for d in full[2:]) and full[1] in (xs[1], 1):
            if full[1] == xs[1]:
                alpha = cx.op("reshape", slope, newshape=(xs[1],)) if ss != (xs[1],) else slope
                return cx.op("nn.prelu", x, alpha, axis=1)
    return _where_negative(cx, x, cx.op("multiply", x, slope))


@converter("Elu", 1)
def elu(cx, node):
    x = node.input(0)
    alpha = node.attr("alpha", 1.0)
    em1 = cx.op("subtract", cx.op("exp", x), cx.scalar(1, x))
    return _where_negative(cx, x, cx.op("multiply", em1, cx.scalar(alpha, x)))


@converter("Selu", 1)
def selu(cx, node):
    x = node.input(0)
    alpha = node.attr("alpha", 1.67326319217681884765625)
    gamma = node.attr("gamma", 1.05070102214813232421875)
    em1 = cx.op("subtract", cx.op("exp", x), cx.scalar(1, x))
    neg = cx.op("multiply", em1, cx.scalar(alpha, x))
    y = cx.op("where", cx.op("greater", x, cx.scalar(0, x)), x, neg)
    return cx.op("multiply", y, cx.scalar(gamma, x))


@converter("Celu", 12)
def celu(cx, node):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))"""
    x = node.input(0)
    alpha = cx.scalar(node.attr("alpha", 1.0), x)
    e = cx.op("subtract", cx.op("exp", cx.op("divide", x, alpha)), cx.scalar(1, x))
    neg = cx.op("minimum", cx.scalar(0, x), cx.op("multiply", alpha, e))
    return cx.op("add", cx.op("nn.relu", x), neg)


@converter("HardSigmoid", 1)
def hard_sigmoid(cx, node):
    x = node.input(0)
    return _hard_sigmoid(cx, x, node.attr("alpha", 0.2), node.attr("beta", 0.5))


def _hard_sigmoid(cx, x, alpha, beta):
    y = cx.op("add", cx.op("multiply", x, cx.scalar(alpha, x)), cx.scalar(beta, x))
    return cx.op("clip", y, a_min=0.0, a_max=1.0)


@converter("HardSwish", 14)
def hard_swish(cx, node):
    x = node.input(0)
    return cx.op("multiply", x, _hard_sigmoid(cx, x, 1.0 / 6, 0.5))


@converter("Softplus", 1)
def softplus(cx, node):
    x = node.input(0)
    return _softplus(cx, x)


def _softplus(cx, x):
    return cx.op("log", cx.op("add", cx.op("exp", x), cx.scalar(1, x)))


@converter("Softsign", 1)
def softsign(cx, node):
    x = node.input(0)
    return cx.op("divide", x, cx.op("add", cx.op("abs", x), cx.scalar(1, x)))


@converter("ThresholdedRelu", 10)
def thresholded_relu(cx, node):
    x = node.input(0)
    keep = cx.op("greater", x, cx.scalar(node.attr("alpha", 1.0), x))
    return cx.op("where", keep, x, cx.scalar(0, x))


@converter("Gelu", 20)
def gelu(cx, node):
    approx = node.attr("approximate", "none")
    if approx not in ("none", "tanh"):
        raise cx.error(f"approximate must be 'none' or 'tanh', got '{approx}'")
    return cx.op("nn.gelu", node.input(0), approximate=approx)


@converter("Mish", 18)
def mish(cx, node):
    x = node.input(0)
    return cx.op("multiply", x, cx.op("tanh", _softplus(cx, x)))


@converter("Swish", 24)
def swish(cx, node):
    x = node.input(0)
    alpha = node.attr("alpha", 1.0)
    ax = x if alpha == 1.0 else cx.op("multiply", x, cx.scalar(alpha, x))
    return cx.op("multiply", x, cx.op("sigmoid", ax))


@converter("Shrink", 9)
def shrink(cx, node):
    """x < -lambd ? x + bias : x > lambd ? x - bias : 0"""
    x = node.input(0)
    lambd, bias = node.attr("lambd", 0.5), node.attr("bias", 0.0)
    lo = cx.op("less", x, cx.scalar(-lambd, x))
    hi = cx.op("greater", x, cx.scalar(lambd, x))
    inner = cx.op("where", hi, cx.op("subtract", x, cx.scalar(bias, x)), cx.scalar(0, x))
    return cx.op("where", lo, cx.op("add", x, cx.scalar(bias, x)), inner)


# -- softmax, log-softmax, hardmax ---------------------------------------------------

def _coerced_2d(cx, node, x, fn):
    """Opsets before 13 treat the input as 2-d, (prod(shape[:axis]),
    prod(shape[axis:])), and normalise each row: a softmax over all the
    axes from `axis` on."""
    rank = cx.rank(x)
    axis = norm_axis(cx, node.attr("axis", 1), rank) if rank else 0
    if axis == rank - 1 or rank <= 1:
        return fn(x, -1)
    shape = cx.static_shape(x)
    rows = 1
    for d in shape[:axis]:
        rows *= d
    flat = cx.op("reshape", x, newshape=(rows, -1))
    return cx.op("reshape", fn(flat, 1), newshape=shape)


def _axis(cx, node, x):
    return norm_axis(cx, node.attr("axis", -1), cx.rank(x)) if cx.rank(x) else 0


@converter("Softmax", 1)
def softmax_v1(cx, node):
    return _coerced_2d(cx, node, node.input(0), lambda v, a: cx.op("nn.softmax", v, axis=a))


@converter("Softmax", 13)
def softmax_v13(cx, node):
    x = node.input(0)
    return cx.op("nn.softmax", x, axis=_axis(cx, node, x))


@converter("LogSoftmax", 1)
def log_softmax_v1(cx, node):
    return _coerced_2d(cx, node, node.input(0), lambda v, a: cx.op("nn.log_softmax", v, axis=a))


@converter("LogSoftmax", 13)
def log_softmax_v13(cx, node):
    x = node.input(0)
    return cx.op("nn.log_softmax", x, axis=_axis(cx, node, x))


def _hardmax(cx, x, axis):
    """1 at the first maximum along `axis`, 0 elsewhere: the argmax compared
    with the positions along the axis."""
    import numpy as np
    rank = cx.rank(x)
    if rank == 0:
        raise cx.error("its input is a scalar: there is no axis to take the maximum along")
    axis %= rank
    n = cx.static_shape(x)[axis]
    idx = cx.op("argmax", x, axis=(axis,), keepdims=True)
    cx.check_size((n,), "int64", "the positions along the axis")
    pos = np.arange(n).reshape((n,) + (1,) * (rank - axis - 1))
    hit = cx.op("equal", idx, cx.const(pos, cx.dtype(idx)))
    return cx.cast(hit, cx.dtype(x))


@converter("Hardmax", 1)
def hardmax_v1(cx, node):
    return _coerced_2d(cx, node, node.input(0), lambda v, a: _hardmax(cx, v, a))


@converter("Hardmax", 13)
def hardmax_v13(cx, node):
    x = node.input(0)
    return _hardmax(cx, x, _axis(cx, node, x))
