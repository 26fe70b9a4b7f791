"""Normalisations: batch, instance, layer, group, RMS, Lp, mean-variance.

nn.batch_norm / nn.instance_norm / nn.layer_norm / nn.group_norm are used
where ONNX means what they mean (per-channel 1-d scale and bias); other
forms -- layer norm over several trailing axes, statistics as outputs --
are spelled with reductions, as the ONNX definitions read.
"""

from __future__ import annotations

from ..registry import converter
from .common import norm_axis


@converter("BatchNormalization", 1)
def batch_norm(cx, node):
    """Inference form: the running statistics normalise.  Opset 14's
    training mode (batch statistics, updated running ones) is spelled out
    with mean and variance."""
    x, scale, bias, mean, var = (node.input(i) for i in range(5))
    eps = node.attr("epsilon", 1e-5)
    if node.version < 7 and not node.attr("is_test", 0) and node.num_outputs > 1:
        raise cx.unsupported("training (is_test = 0 with statistics outputs)")
    if node.attr("training_mode", 0):
        return _batch_norm_training(cx, node, x, scale, bias, mean, var, eps)
    if node.version < 9 and node.attr("spatial", 1) == 0:
        raise cx.unsupported("spatial = 0 (per-activation statistics)")
    out = cx.op("nn.batch_norm", x, scale, bias, mean, var, axis=1, epsilon=eps)
    return cx.get_item(out, 0)


def _batch_norm_training(cx, node, x, scale, bias, mean, var, eps):
    axes = tuple(a for a in range(cx.rank(x)) if a != 1)
    momentum = node.attr("momentum", 0.9)
    bmean = cx.op("mean", x, axis=axes)
    bvar = cx.op("variance", x, axis=axes)
    y = _affine(cx, x, bmean, bvar, scale, bias, eps, cx.rank(x))
    m = cx.scalar(momentum, x)
    one_m = cx.scalar(1 - momentum, x)
    run_mean = cx.op("add", cx.op("multiply", mean, m), cx.op("multiply", bmean, one_m))
    run_var = cx.op("add", cx.op("multiply", var, m), cx.op("multiply", bvar, one_m))
    return [y, run_mean, run_var]


def _per_channel(cx, v, rank):
    """A (C,) vector shaped (C, 1, ...) to broadcast along axis 1."""
    return cx.op("expand_dims", v, axis=1, num_newaxis=rank - 2) if rank > 2 else v


def _affine(cx, x, mean, var, scale, bias, eps, rank):
    inv = cx.op("rsqrt", cx.op("add", _per_channel(cx, var, rank), cx.scalar(eps, x)))
    y = cx.op("multiply", cx.op("subtract", x, _per_channel(cx, mean, rank)), inv)
    y = cx.op("multiply", y, _per_channel(cx, scale, rank))
    return cx.op("add", y, _per_channel(cx, bias, rank))


@converter("InstanceNormalization", 1)
def instance_norm(cx, node):
    x, scale, bias = node.input(0), node.input(1), node.input(2)
    return cx.op("nn.instance_norm", x, scale, bias, axis=1, epsilon=node.attr("epsilon", 1e-5))


@converter("LayerNormalization", 17)
def layer_norm(cx, node):
    """nn.layer_norm for the usual case (the last axis, a matching 1-d
    scale, no statistics asked for); otherwise the definition: normalise
    over every axis from `axis` on, and Mean / InvStdDev as outputs."""
    x, scale, bias = node.input(0), node.input(1), node.input(2)
    rank = cx.rank(x)
    axis = norm_axis(cx, node.attr("axis", -1), rank)
    eps = node.attr("epsilon", 1e-5)
    n = cx.shape(x)[-1]
    plain = (axis == rank - 1 and not node.wants_output(1) and not node.wants_output(2)
             and cx.shape(scale) == (n,) and (bias is None or cx.shape(bias) == (n,)))
    # a narrower float is normalised in f32 (stash_type 1): only the long form does that
    if plain and (cx.dtype(x).bitwidth >= 32 or node.attr("stash_type", 1) != 1):
        if bias is None:
            bias = cx.const(_zeros(cx, n, x))
        return cx.op("nn.layer_norm", x, scale, bias, axis=-1, epsilon=eps)
    return _normalize_over(cx, node, x, tuple(range(axis, rank)), eps, scale, bias)


def _zeros(cx, n, like):
    import numpy as np
    from ....ir import types as T
    if n is None:
        raise cx.unsupported("LayerNormalization without B over a dynamic last axis")
    cx.check_size((n,), cx.dtype(like), "a zero bias")
    return np.zeros((n,), dtype=T.to_numpy_dtype(cx.dtype(like)))


def _normalize_over(cx, node, x, axes, eps, scale, bias):
    """(x - mean) / sqrt(var + eps) * scale + bias over `axes`, computed in
    f32 for narrower floats (stash_type 1), with Mean and InvStdDev."""
    from ....ir import types as T
    dt = cx.dtype(x)
    xs = cx.cast(x, T.f32) if node.attr("stash_type", 1) == 1 and dt.bitwidth < 32 else x
    mean = cx.op("mean", xs, axis=axes, keepdims=True)
    d = cx.op("subtract", xs, mean)
    var = cx.op("mean", cx.op("multiply", d, d), axis=axes, keepdims=True)
    inv = cx.op("rsqrt", cx.op("add", var, cx.scalar(eps, xs)))
    y = cx.cast(cx.op("multiply", d, inv), dt)
    y = cx.op("multiply", y, scale)
    if bias is not None:
        y = cx.op("add", y, bias)
    return [y, mean, inv]


@converter("GroupNormalization", 18)
def group_norm(cx, node):
    """Opset 18 scales per group, 21 per channel (as nn.group_norm does):
    per-group scales are repeated over each group's channels."""
    import numpy as np
    x, scale, bias = node.input(0), node.input(1), node.input(2)
    groups = node.attr("num_groups")
    if cx.rank(x) < 2:
        raise cx.error(f"expects an input of rank 2 or more (N, C, ...), got {cx.ttype(x)}")
    c = cx.static_shape(x)[1]
    if groups <= 0 or c % groups:
        raise cx.error(f"num_groups must be positive and divide the {c} channels, got {groups}")
    if node.version < 21 and groups != c:
        reps = c // groups
        for v, what in ((scale, "scale"), (bias, "bias")):
            if cx.shape(v) != (groups,):
                raise cx.error(f"{what} must hold num_groups = {groups} values, got {cx.ttype(v)}")
        cx.check_size((c,), cx.dtype(scale), "repeating the per-group scale")
        scale = cx.const(np.repeat(cx.static_value(scale, "scale"), reps))
        bias = cx.const(np.repeat(cx.static_value(bias, "bias"), reps))
    return cx.op("nn.group_norm", x, scale, bias, num_groups=groups, axis=1,
                 epsilon=node.attr("epsilon", 1e-5))


@converter("RMSNormalization", 23)
def rms_norm(cx, node):
    """x / sqrt(mean(x^2 over the axes from `axis` on) + eps) * scale."""
    from ....ir import types as T
    x, scale = node.input(0), node.input(1)
    rank = cx.rank(x)
    axes = tuple(range(norm_axis(cx, node.attr("axis", -1), rank), rank))
    dt = cx.dtype(x)
    xs = cx.cast(x, T.f32) if node.attr("stash_type", 1) == 1 and dt.bitwidth < 32 else x
    ms = cx.op("mean", cx.op("multiply", xs, xs), axis=axes, keepdims=True)
    inv = cx.op("rsqrt", cx.op("add", ms, cx.scalar(node.attr("epsilon", 1e-5), xs)))
    return cx.op("multiply", cx.cast(cx.op("multiply", xs, inv), dt), scale)


@converter("LpNormalization", 1)
def lp_norm(cx, node):
    x = node.input(0)
    axis = norm_axis(cx, node.attr("axis", -1), cx.rank(x))
    p = node.attr("p", 2)
    if p == 1:
        norm = cx.op("sum", cx.op("abs", x), axis=(axis,), keepdims=True)
    elif p == 2:
        norm = cx.op("sqrt", cx.op("sum", cx.op("multiply", x, x), axis=(axis,), keepdims=True))
    else:
        raise cx.error(f"p must be 1 or 2, got {p}")
    zero = cx.op("equal", norm, cx.scalar(0, norm))      # an all-zero slice stays 0, not nan
    return cx.op("where", zero, cx.scalar(0, x), cx.op("divide", x, norm))


@converter("MeanVarianceNormalization", 9)
def mvn(cx, node):
    """(x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9), ONNX's function."""
    x = node.input(0)
    axes = tuple(norm_axis(cx, a, cx.rank(x)) for a in node.attr("axes", (0, 2, 3)))
    mean = cx.op("mean", x, axis=axes, keepdims=True)
    mean_sq = cx.op("mean", cx.op("multiply", x, x), axis=axes, keepdims=True)
    std = cx.op("sqrt", cx.op("subtract", mean_sq, cx.op("multiply", mean, mean)))
    return cx.op("divide", cx.op("subtract", x, mean), cx.op("add", std, cx.scalar(1e-9, x)))
