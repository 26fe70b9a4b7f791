"""onnxruntime's quantized operators (domain com.microsoft): what its
quantizer writes in the QOperator format besides ONNX's QLinearConv and
QLinearMatMul (quantize.py).

    QGemm(A, a_s, a_zp, B, b_s, b_zp, C?, y_s?, y_zp?) {alpha, transA, transB}
        acc = (A' - a_zp)(B' - b_zp) + C         int32, qnn.dense (vpdpbusd)
        y   = requantize(acc * alpha * a_s * b_s / y_s) + y_zp, or without
              y_s the float acc * alpha * a_s * b_s
    QLinearAdd / QLinearMul(A, a_s, a_zp, B, b_s, b_zp, c_s, c_zp)
    QLinearSigmoid / QLinearLeakyRelu {alpha}(X, x_s, x_zp, y_s, y_zp)
    QLinearGlobalAveragePool / QLinearAveragePool {channels_last, pool attrs}
    QLinearSoftmax {axis, opset}(X, x_s, x_zp, y_s, y_zp)
    QLinearConcat {axis}(y_s, y_zp, X1, x1_s, x1_zp, X2, ...)

The elementwise, pooling and softmax ops are what onnxruntime's reference
for them is: dequantize each input, the float op (its ONNX converter, with
the node's attributes), quantize the result (rounded half to even,
saturated); fused into one kernel like any elementwise chain.  The output
type is the output zero point's (else the first input's).  A zero point
left out is 0.
"""

from __future__ import annotations

from ....ir import types as T
from ..context import Node
from ..registry import converter
from .quantize import _integer_matmul, _rescale, _scale, _zero_point

MS = "com.microsoft"


def _dq(cx, x, s, z):
    return cx.op("qnn.dequantize", x, _scale(cx, s), _zero_point(cx, z), axis=-1, out_dtype="float32")


def _q(cx, y, s, z, like):
    out = cx.dtype(z) if z is not None else cx.dtype(like)
    if out not in (T.u8, T.i8):
        raise cx.unsupported(f"a quantized {T.tvm_dtype_name(out)} output (uint8 or int8)")
    return cx.op("qnn.quantize", y, _scale(cx, s), _zero_point(cx, z), axis=-1, out_dtype=T.tvm_dtype_name(out))


def _as_float(node, op_type, inputs, attrs=None):
    """`node` as the float ONNX op `op_type` on `inputs` (its attributes,
    or `attrs`), for that op's converter."""
    return Node(node.proto, op_type, "", node.name, node.version, list(inputs), node.outputs,
                node.attrs if attrs is None else attrs, node.loc)


def _unary(cx, node, float_op):
    x, x_s, x_zp, y_s, y_zp = (node.input(i) for i in range(5))
    return _q(cx, float_op(_dq(cx, x, x_s, x_zp)), y_s, y_zp, x)


@converter(("QLinearAdd", "QLinearMul"), 1, domain=MS)
def qlinear_binary(cx, node):
    a, a_s, a_zp, b, b_s, b_zp, c_s, c_zp = (node.input(i) for i in range(8))
    name = {"QLinearAdd": "add", "QLinearMul": "multiply"}[node.op_type]
    return _q(cx, cx.op(name, _dq(cx, a, a_s, a_zp), _dq(cx, b, b_s, b_zp)), c_s, c_zp, a)


@converter("QLinearSigmoid", 1, domain=MS)
def qlinear_sigmoid(cx, node):
    return _unary(cx, node, lambda x: cx.op("sigmoid", x))


@converter("QLinearLeakyRelu", 1, domain=MS)
def qlinear_leaky_relu(cx, node):
    return _unary(cx, node, lambda x: cx.op("nn.leaky_relu", x, alpha=node.attr("alpha", 0.01)))


def _channels_first(cx, node, x, fn):
    """fn on x in NCHW..: a channels_last x is transposed to it and back."""
    if not node.attr("channels_last", 0):
        return fn(x)
    r = cx.rank(x)
    y = fn(cx.op("transpose", x, axes=(0, r - 1) + tuple(range(1, r - 1))))
    return cx.op("transpose", y, axes=(0,) + tuple(range(2, r)) + (1,))


@converter("QLinearGlobalAveragePool", 1, domain=MS)
def qlinear_global_avg_pool(cx, node):
    from .nn import global_avg_pool
    return _unary(cx, node, lambda x: _channels_first(
        cx, node, x, lambda v: global_avg_pool(cx, _as_float(node, "GlobalAveragePool", [v]))))


@converter("QLinearAveragePool", 1, domain=MS)
def qlinear_avg_pool(cx, node):
    from .nn import avg_pool
    attrs = {k: v for k, v in node.attrs.items() if k != "channels_last"}
    return _unary(cx, node, lambda x: _channels_first(
        cx, node, x, lambda v: avg_pool(cx, _as_float(node, "AveragePool", [v], attrs))))


@converter("QLinearSoftmax", 1, domain=MS)
def qlinear_softmax(cx, node):
    """Softmax as ONNX opset `opset` defines it: before 13, over the axes
    from `axis` on (default 1), flattened; from 13, along `axis` (-1)."""
    from .activation import softmax_v1, softmax_v13
    opset = node.attr("opset", 13)
    attrs = {"axis": node.attr("axis", 1 if opset < 13 else -1)}
    fn = softmax_v1 if opset < 13 else softmax_v13
    return _unary(cx, node, lambda x: fn(cx, _as_float(node, "Softmax", [x], attrs)))


@converter("QLinearConcat", 1, domain=MS)
def qlinear_concat(cx, node):
    y_s, y_zp = node.input(0), node.input(1)
    rest = node.inputs[2:]
    if not rest or len(rest) % 3:
        raise cx.error(f"QLinearConcat takes y_scale, y_zero_point and triples (X, scale, zero point); "
                       f"got {len(node.inputs)} inputs")
    xs = [_dq(cx, rest[i], rest[i + 1], rest[i + 2]) for i in range(0, len(rest), 3)]
    from .common import norm_axis
    axis = norm_axis(cx, node.attr("axis", 0), cx.rank(rest[0]))
    return _q(cx, cx.op("concatenate", *xs, axis=axis), y_s, y_zp, rest[0])


@converter("QGemm", 1, domain=MS)
def qgemm(cx, node):
    a, a_s, a_zp, b, b_s, b_zp, c, y_s, y_zp = (node.input(i) for i in range(9))
    if cx.rank(a) != 2 or cx.rank(b) != 2:
        raise cx.error(f"QGemm multiplies 2-d matrices, got {cx.ttype(a)} and {cx.ttype(b)}")
    if node.attr("transA", 0):
        a = cx.op("transpose", a, axes=(1, 0))
    if node.attr("transB", 0):
        b = cx.op("transpose", b, axes=(1, 0))
    acc = _integer_matmul(cx, a, b, a_zp, b_zp, a_s, b_s)
    if c is not None:
        acc = cx.op("add", acc, cx.cast(c, T.i32))
    m = cx.op("multiply", cx.op("multiply", _scale(cx, a_s), _scale(cx, b_s)),
              cx.const(float(node.attr("alpha", 1.0)), T.f32))
    if y_s is None:
        return cx.op("multiply", cx.cast(acc, T.f32), m)
    out = cx.dtype(y_zp) if y_zp is not None else cx.dtype(a)
    return _rescale(cx, acc, cx.op("divide", m, _scale(cx, y_s)), y_zp, out, channel_axis=1)
