"""Reductions and arg-reductions.

The axes are an attribute up to opset 12 (ReduceSum) or 17 (the others)
and an optional input after; no axes means all of them, unless
``noop_with_empty_axes`` asks for the input back unchanged.  ReduceL1, L2,
LogSum and SumSquare are spelled with sum; ArgMax / ArgMin give relay's
int32 indices cast to ONNX's int64.
"""

from __future__ import annotations

from ....ir import types as T
from ..registry import converter
from .common import norm_axes, norm_axis

_SIMPLE = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min",
           "ReduceProd": "prod", "ReduceLogSumExp": "logsumexp"}
_COMPOSED = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceSumSquare")
# the opset from which each op takes its axes as an input
_AXES_INPUT_FROM = {"ReduceSum": 13}


def _axes(cx, node, x):
    """The axes to reduce (None: all), or "noop"."""
    if node.version >= _AXES_INPUT_FROM.get(node.op_type, 18):
        axes_v = node.input(1)
        axes = cx.static_ints(axes_v, "axes") if axes_v is not None else ()
    else:
        axes = tuple(node.attr("axes", ()))
    if not axes:
        return "noop" if node.attr("noop_with_empty_axes", 0) else None
    return tuple(norm_axes(cx, axes, cx.rank(x)))


@converter(tuple(_SIMPLE) + _COMPOSED, 1)
def reduce(cx, node):
    x = node.input(0)
    axes = _axes(cx, node, x)
    if axes == "noop":
        return x
    keep = bool(node.attr("keepdims", 1))
    op = node.op_type
    empty = _empty_reduction(cx, x, axes, keep, op)
    if empty is not None:
        return empty

    def red(name, v):
        return cx.op(name, v, axis=axes, keepdims=keep)
    if op in _SIMPLE:
        return red(_SIMPLE[op], x)
    if op == "ReduceL1":
        return red("sum", cx.op("abs", x))
    if op == "ReduceSumSquare":
        return red("sum", cx.op("multiply", x, x))
    if op == "ReduceL2":
        s = red("sum", cx.op("multiply", x, x))
        if T.is_float(cx.dtype(x)):
            return cx.op("sqrt", s)
        return cx.cast(cx.op("sqrt", cx.cast(s, T.f64)), cx.dtype(x))
    return cx.op("log", red("sum", x))     # ReduceLogSum


def _empty_reduction(cx, x, axes, keep, op):
    """A reduction over an axis of size 0 is its identity (ONNX defines
    them: 0 for sums, 1 for products, -inf for max ...), a constant of the
    output's static shape; None when nothing reduced is empty."""
    import numpy as np
    xs = cx.shape(x)
    red = range(len(xs)) if axes is None else axes
    if not any(xs[a] == 0 for a in red):
        return None
    out = [1 if a in red else d for a, d in enumerate(xs)] if keep else [d for a, d in enumerate(xs) if a not in red]
    if None in out:
        raise cx.unsupported("an empty reduction with a dynamic output shape")
    dt = T.to_numpy_dtype(cx.dtype(x))
    if dt == np.bool_:
        lo, hi = False, True
    elif dt.kind == "f":
        lo, hi = -np.inf, np.inf
    else:
        lo, hi = np.iinfo(dt).min, np.iinfo(dt).max
    value = {"ReduceMax": lo, "ReduceMin": hi, "ReduceProd": 1, "ReduceMean": np.nan,
             "ReduceLogSum": -np.inf, "ReduceLogSumExp": -np.inf}.get(op, 0)
    cx.check_size(out, dt, "the empty reduction's result")
    return cx.const(np.full(out, value, dtype=dt))


@converter(("ArgMax", "ArgMin"), 1)
def arg_reduce(cx, node):
    x = node.input(0)
    axis = norm_axis(cx, node.attr("axis", 0), cx.rank(x))
    extra = {}
    if node.attr("select_last_index", 0):
        extra["select_last_index"] = True
    idx = cx.op("argmax" if node.op_type == "ArgMax" else "argmin", x, axis=(axis,),
                keepdims=bool(node.attr("keepdims", 1)), **extra)
    return cx.cast(idx, T.i64)
