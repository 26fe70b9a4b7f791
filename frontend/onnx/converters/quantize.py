"""Quantization: QuantizeLinear, DequantizeLinear, QLinearMatMul,
QLinearConv, MatMulInteger, ConvInteger -> relay's qnn ops.

Relay's qnn ops take f32 scales and i32 zero points as operands (scalars,
or vectors along `axis` for per-channel parameters); ONNX's are cast to
those.  To and from float8 (a float8 zero point), and blocked quantization
(``block_size``: each parameter covers a block of B elements along the
axis), is plain f32 arithmetic and a cast, saturating as QuantizeLinear's
``saturate`` says.  The QLinear ops multiply exactly in integers (qnn.dense,
qnn.batch_matmul, qnn.conv2d), then rescale as ONNX defines it: the
accumulator times a_scale * b_scale / y_scale in floating point, rounded
half to even by qnn.quantize (qnn.requantize rounds halves up or away from
zero, which would differ from ONNX on ties).
"""

from __future__ import annotations

from ....ir import types as T
from ..registry import converter
from .common import norm_axis

_QUANT_OUT = {"int8", "uint8", "int16", "uint16", "int32", "int4", "uint4", "int2", "uint2"}


def _scale(cx, s):
    return cx.cast(s, T.f32)


def _zero_point(cx, z):
    if z is None:
        return cx.const(0, T.i32)
    return cx.cast(z, T.i32)


def _axis(cx, node, x, params):
    """The per-channel axis when a parameter is a vector, else -1."""
    if all(p is None or (cx.rank(p) == 0 or cx.shape(p) == (1,)) for p in params):
        return -1
    return norm_axis(cx, node.attr("axis", 1), cx.rank(x))


def _float(cx, x):
    return x if cx.dtype(x) is T.f32 else cx.cast(x, T.f32)


def _along_axis(cx, node, x, p, params):
    """Parameter `p` (a scalar, or a vector along the per-channel axis)
    shaped to broadcast against `x` (the float8 forms, plain arithmetic)."""
    axis = _axis(cx, node, x, params)
    if axis < 0:
        return cx.op("reshape", p, newshape=()) if cx.rank(p) else p
    return cx.op("expand_dims", p, axis=1, num_newaxis=cx.rank(x) - axis - 1) if axis < cx.rank(x) - 1 else p


def _blocked(cx, node, x, p):
    """Parameter `p` of blocked quantization (``block_size`` B: p's `axis`
    is ceil(D / B) long) repeated B times along it and cut to x's D, so it
    is elementwise with x."""
    rank = cx.rank(x)
    axis = norm_axis(cx, node.attr("axis", 1), rank)
    b = node.attr("block_size")
    if cx.rank(p) != rank:
        raise cx.error(f"blocked quantization takes parameters of x's rank {rank}, got {cx.type(p)}")
    d = cx.static_shape(x)[axis]
    if cx.static_shape(p)[axis] != -(-d // b):
        raise cx.error(f"block_size {b} cuts axis {axis} (length {d}) into {-(-d // b)} blocks, "
                       f"but the parameters have {cx.static_shape(p)[axis]}")
    full = cx.op("repeat", p, repeats=b, axis=axis)
    if -(-d // b) * b != d:
        begin, end = [0] * rank, list(cx.static_shape(full))
        end[axis] = d
        full = cx.op("strided_slice", full, begin=tuple(begin), end=tuple(end))
    return full


def _elementwise_params(cx, node, x, s, z):
    """A function shaping a parameter (as f32) to broadcast against x:
    blocked (``block_size``) or per tensor / per axis."""
    if node.attr("block_size", 0):
        return lambda p: cx.cast(_blocked(cx, node, x, p), T.f32)
    return lambda p: _along_axis(cx, node, x, cx.cast(p, T.f32), (s, z))


def _quantize_float(cx, node, x, s, z, out):
    """saturate(x / s + z) in f32 arithmetic: rounded half to even and
    clamped for an integer `out`; a float8 `out` rounds in its cast
    (saturating as the node says)."""
    shaped = _elementwise_params(cx, node, x, s, z)
    y = cx.op("divide", _float(cx, x), shaped(s))
    if T.is_minifloat(out):
        from .math import cast_saturating
        return cast_saturating(cx, node, y if z is None else cx.op("add", y, shaped(z)), out)
    y = cx.op("round", y)
    if z is not None:
        y = cx.op("add", y, shaped(z))
    from ....dialects.relay.ops.qnn_math import qrange
    lo, hi = qrange(T.to_numpy_dtype(out))
    return cx.cast(cx.op("clip", y, a_min=float(lo), a_max=float(hi)), out)


def _dequantize_float(cx, node, x, s, z, out):
    """(x - z) * s in f32, cast to `out`."""
    shaped = _elementwise_params(cx, node, x, s, z)
    y = cx.cast(x, T.f32)
    if z is not None:
        y = cx.op("subtract", y, shaped(z))
    return cx.cast(cx.op("multiply", y, shaped(s)), out)


@converter("QuantizeLinear", 10)
def quantize_linear(cx, node):
    from ..dtypes import onnx_type_name, to_tvmd
    x, s, z = node.input(0), node.input(1), node.input(2)
    if z is not None:
        out = cx.dtype(z)
    elif node.attr("output_dtype"):
        out = to_tvmd(node.attr("output_dtype"))
        if out is None:
            raise cx.unsupported(f"output_dtype {onnx_type_name(node.attr('output_dtype'))}")
    else:
        out = T.u8
    name = T.tvm_dtype_name(out)
    if not T.is_minifloat(out) and name not in _QUANT_OUT:
        raise cx.unsupported(f"quantizing to {name}")
    if T.is_minifloat(out) or node.attr("block_size", 0):
        return _quantize_float(cx, node, x, s, z, out)
    if not T.is_float(cx.dtype(x)) or T.is_minifloat(cx.dtype(x)):
        x = cx.cast(x, T.f32)   # (a float8 input: qnn.quantize would round its storage bytes)
    return cx.op("qnn.quantize", x, _scale(cx, s), _zero_point(cx, z), axis=_axis(cx, node, x, (s, z)),
                 out_dtype=name)


@converter("DequantizeLinear", 10)
def dequantize_linear(cx, node):
    x, s, z = node.input(0), node.input(1), node.input(2)
    out = cx.dtype(s)
    if node.attr("output_dtype"):
        from .common import onnx_dtype
        out = onnx_dtype(cx, node.attr("output_dtype"), "output_dtype")
    if T.is_minifloat(cx.dtype(x)) or node.attr("block_size", 0):
        return _dequantize_float(cx, node, x, s, z, out)
    return cx.op("qnn.dequantize", x, _scale(cx, s), _zero_point(cx, z), axis=_axis(cx, node, x, (s, z)),
                 out_dtype=T.tvm_dtype_name(out))


def _rescale(cx, acc, multiplier, y_zp, out_dtype, channel_axis=None):
    """round_half_even(acc * multiplier) + y_zp, saturated to out_dtype: in
    f64 as ONNX's reference computes it (int32 times float32 promotes)."""
    accf = cx.cast(acc, T.f64)
    m = cx.cast(multiplier, T.f64)
    if channel_axis is not None and cx.rank(m) == 1 and cx.shape(m) != (1,):
        m = cx.op("expand_dims", m, axis=1, num_newaxis=cx.rank(acc) - channel_axis - 1)
    scaled = cx.op("multiply", accf, m)
    return cx.op("qnn.quantize", scaled, cx.const(1.0, T.f32), _zero_point(cx, y_zp),
                 out_dtype=T.tvm_dtype_name(out_dtype))


def _multiplier(cx, a_s, b_s, y_s=None):
    m = cx.op("multiply", _scale(cx, a_s), _scale(cx, b_s))
    return m if y_s is None else cx.op("divide", m, _scale(cx, y_s))


def _integer_matmul(cx, a, b, a_zp, b_zp, a_s, b_s):
    """(a - a_zp) @ (b - b_zp) in int32 with qnn.dense (any rows of a by a
    2-d b: a transformer's activations by its weight, '?' rows included) or
    qnn.batch_matmul (batches broadcast, flattened to one)."""
    ra, rb = cx.rank(a), cx.rank(b)
    azp, bzp = _zero_point(cx, a_zp), _zero_point(cx, b_zp)
    if ra >= 2 and rb == 2:
        return cx.op("qnn.dense", a, cx.op("transpose", b, axes=(1, 0)), azp, bzp, _scale(cx, a_s),
                     _scale(cx, b_s), units=cx.shape(b)[1], out_dtype="int32")
    if ra < 2 or rb < 2:
        raise cx.unsupported("integer MatMul of 1-d operands")
    import numpy as np
    sa, sb = cx.static_shape(a), cx.static_shape(b)
    batch = cx.broadcast(sa[:-2], sb[:-2], "batch dimensions")
    nb = int(np.prod(batch)) if batch else 1

    def to3(v, s):
        full = batch + tuple(s[-2:])
        if s != full:
            if len(s) < len(full):
                v = cx.op("reshape", v, newshape=(1,) * (len(full) - len(s)) + tuple(s))
            if cx.shape(v) != full:
                v = cx.op("broadcast_to", v, shape=full)
        return v if len(full) == 3 else cx.op("reshape", v, newshape=(nb,) + tuple(s[-2:]))
    if b_zp is not None and cx.rank(b_zp) > 0 and cx.shape(b_zp) != (1,):
        raise cx.unsupported("per-column zero points in a batched integer MatMul")
    y = cx.op("qnn.batch_matmul", to3(a, sa), to3(b, sb), azp, bzp, _scale(cx, a_s), _scale(cx, b_s),
              transpose_b=False, out_dtype="int32")
    return cx.op("reshape", y, newshape=batch + (sa[-2], sb[-1]))


@converter("QLinearMatMul", 10)
def qlinear_matmul(cx, node):
    a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp = (node.input(i) for i in range(8))
    acc = _integer_matmul(cx, a, b, a_zp, b_zp, a_s, b_s)
    out = cx.dtype(y_zp) if y_zp is not None else cx.dtype(a)
    return _rescale(cx, acc, _multiplier(cx, a_s, b_s, y_s), y_zp, out)


@converter("MatMulInteger", 10)
def matmul_integer(cx, node):
    a, b, a_zp, b_zp = (node.input(i) for i in range(4))
    one = cx.const(1.0, T.f32)
    return _integer_matmul(cx, a, b, a_zp, b_zp, one, one)


def _integer_conv(cx, node, x, w, x_zp, w_zp, x_s, w_s):
    from .common import spatial_attrs
    if cx.rank(x) != 4:
        raise cx.unsupported(f"{cx.rank(x) - 2}-d quantized convolution (qnn has conv2d)")
    ws = cx.shape(w)
    kernel, strides, dilations, pads = spatial_attrs(cx, node, x, ws)
    return cx.op("qnn.conv2d", x, w, _zero_point(cx, x_zp), _zero_point(cx, w_zp), _scale(cx, x_s),
                 _scale(cx, w_s), strides=strides, padding=pads, dilation=dilations,
                 groups=node.attr("group", 1), channels=ws[0], kernel_size=kernel, out_dtype="int32")


@converter("QLinearConv", 10)
def qlinear_conv(cx, node):
    x, x_s, x_zp, w, w_s, w_zp, y_s, y_zp, bias = (node.input(i) for i in range(9))
    acc = _integer_conv(cx, node, x, w, x_zp, w_zp, x_s, w_s)
    if bias is not None:
        acc = cx.op("nn.bias_add", acc, cx.cast(bias, T.i32), axis=1)
    out = cx.dtype(y_zp) if y_zp is not None else cx.dtype(x)
    return _rescale(cx, acc, _multiplier(cx, x_s, w_s, y_s), y_zp, out, channel_axis=1)


@converter("ConvInteger", 10)
def conv_integer(cx, node):
    x, w, x_zp, w_zp = (node.input(i) for i in range(4))
    one = cx.const(1.0, T.f32)
    return _integer_conv(cx, node, x, w, x_zp, w_zp, one, one)
