"""ATen ops to relay, one converter per op name (the schema's name without
``aten::`` and without the overload: ``add.Tensor`` and ``add.Scalar`` are
both ``add``).

A converter is ``fn(cx, a)``: `cx` is the relay-emitting context (the ONNX
frontend's ConvertContext: ``cx.op(name, *operands, **attrs)``,
``cx.const``, ``cx.static``), `a` the node's arguments by schema name with
the schema's defaults filled in (:class:`Args`); tensors are relay values,
lists of tensors lists of values, everything else Python values.  It
returns a relay value, or a tuple of them for an op with several results.
Both front doors (torch.export graphs and traced TorchScript) read their
nodes into this one table.
"""

from __future__ import annotations

import operator

import numpy as np

from ...ir import types as T
from ...ir.core import Value

CONVERTERS: dict = {}


def converter(*names):
    def register(fn):
        for n in names:
            CONVERTERS[n] = fn
        return fn
    return register


class Args(dict):
    """A node's arguments by schema name; ``a.x`` is ``a["x"]``."""

    __getattr__ = dict.__getitem__


# -- helpers ---------------------------------------------------------------------------

def _tensor_or_scalar(cx, v, like):
    """A relay value for `v`: a value as it is, a Python number as a 0-d
    constant of `like`'s element type (PyTorch's type promotion of a
    scalar operand keeps the tensor's type)."""
    if isinstance(v, Value):
        return v
    dt = cx.dtype(like)
    if isinstance(v, bool):
        v = int(v)
    if isinstance(v, float) and not T.is_float(dt):
        dt = T.f32
    return cx.const(v, dt)


def _promote(cx, x, y):
    """Cast two tensors to one element type (float beats int, wider beats narrower)."""
    dx, dy = cx.dtype(x), cx.dtype(y)
    if dx is dy:
        return x, y
    nx, ny = np.dtype(T.to_numpy_dtype(dx)), np.dtype(T.to_numpy_dtype(dy))
    if cx.rank(y) == 0 and (nx.kind == "f" or nx.kind == ny.kind):
        return x, cx.cast(y, dx)     # a 0-d tensor behaves like a scalar
    if cx.rank(x) == 0 and (ny.kind == "f" or nx.kind == ny.kind):
        return cx.cast(x, dy), y
    to = T.from_numpy_dtype(np.promote_types(nx, ny))
    return cx.cast(x, to), cx.cast(y, to)


_PY = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul, "divide": operator.truediv,
       "floor_divide": operator.floordiv, "floor_mod": operator.mod, "power": operator.pow,
       "maximum": max, "minimum": min, "equal": operator.eq, "not_equal": operator.ne, "less": operator.lt,
       "less_equal": operator.le, "greater": operator.gt, "greater_equal": operator.ge}


def _binary(relay_name):
    def convert(cx, a):
        x = a["self"]
        other = a["other"]
        if not isinstance(x, Value) and not isinstance(other, Value) and relay_name in _PY:
            # arithmetic on sizes and scalars (TorchScript traces `C // heads`)
            if relay_name in ("add", "subtract"):
                other = other * a.get("alpha", 1)
            return _PY[relay_name](x, other)
        if not isinstance(x, Value):   # rsub(scalar, tensor) and the like
            x = _tensor_or_scalar(cx, x, other)
        y = _tensor_or_scalar(cx, other, x)
        alpha = a.get("alpha", 1)
        if alpha != 1:
            y = cx.op("multiply", y, _tensor_or_scalar(cx, alpha, y))
        x, y = _promote(cx, x, y)
        return cx.op(relay_name, x, y)
    return convert


def _axis(cx, x, d):
    return d + cx.rank(x) if d < 0 else d


def _ints(v):
    return [int(i) for i in (v if isinstance(v, (list, tuple)) else [v])]


# -- elementwise -------------------------------------------------------------------------

for _name, _relay in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("div", "divide"),
                      ("maximum", "maximum"), ("minimum", "minimum"),
                      ("eq", "equal"), ("ne", "not_equal"), ("lt", "less"), ("le", "less_equal"),
                      ("gt", "greater"), ("ge", "greater_equal"), ("logical_and", "logical_and"),
                      ("logical_or", "logical_or"), ("logical_xor", "logical_xor"),
                      ("remainder", "floor_mod"), ("floor_divide", "floor_divide"),
                      ("floordiv", "floor_divide")]:
    CONVERTERS[_name] = _binary(_relay)
    CONVERTERS[_name + "_"] = CONVERTERS[_name]


@converter("rsub")
def rsub(cx, a):
    """other - alpha * self: subtract with the operands swapped (it scales its second by alpha)."""
    return _binary("subtract")(cx, Args({"self": a["other"], "other": a["self"], "alpha": a.get("alpha", 1)}))


@converter("pow", "pow_")
def pow_(cx, a):
    """pow.Tensor_Tensor / Tensor_Scalar / Scalar: the exponent is `exponent`."""
    return _binary("power")(cx, Args({"self": a["self"], "other": a["exponent"]}))


@converter("div")
def div(cx, a):
    mode = a.get("rounding_mode")
    x, y = a["self"], _tensor_or_scalar(cx, a["other"], a["self"])
    if not T.is_float(cx.dtype(x)) and mode is None:
        # true division of integers gives floats
        x, y = cx.cast(x, T.f32), cx.cast(y, T.f32)
    x, y = _promote(cx, x, y)
    if mode == "floor":
        return cx.op("floor_divide", x, y)
    if mode == "trunc":
        return cx.op("divide", x, y) if not T.is_float(cx.dtype(x)) else \
            cx.op("trunc", cx.op("divide", x, y))   # relay's integer divide truncates
    return cx.op("divide", x, y)


CONVERTERS["div_"] = div


for _name, _relay in [("relu", "nn.relu"), ("sigmoid", "sigmoid"), ("tanh", "tanh"), ("exp", "exp"),
                      ("log", "log"), ("sqrt", "sqrt"), ("rsqrt", "rsqrt"), ("neg", "negative"),
                      ("abs", "abs"), ("erf", "erf"), ("sin", "sin"), ("cos", "cos"), ("floor", "floor"),
                      ("ceil", "ceil"), ("round", "round"), ("logical_not", "logical_not"),
                      ("sign", "sign")]:
    def _unary(cx, a, _relay=_relay):
        x = a["self"]
        if _relay in ("exp", "log", "sqrt", "rsqrt", "erf", "sigmoid", "tanh", "sin", "cos") \
                and not T.is_float(cx.dtype(x)):
            x = cx.cast(x, T.f32)
        return cx.op(_relay, x)
    CONVERTERS[_name] = CONVERTERS[_name + "_"] = _unary


@converter("reciprocal", "reciprocal_")
def reciprocal(cx, a):
    """1 / self; an integer tensor's reciprocal is a float one, as in torch."""
    x = a["self"]
    if not T.is_float(cx.dtype(x)):
        x = cx.cast(x, T.f32)
    return cx.op("divide", cx.scalar(1.0, x), x)


@converter("bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "__and__", "__or__", "__xor__")
def bitwise(cx, a):
    """On bool tensors the logical ops (what masks use), else the bit ops."""
    x = a["self"]
    op = a.op_name.strip("_").replace("bitwise_", "")
    logical = cx.dtype(x) is T.i1
    if op == "not":
        return cx.op("logical_not" if logical else "bitwise_not", x)
    y = _tensor_or_scalar(cx, a["other"], x)
    return cx.op(("logical_" if logical else "bitwise_") + op, x, y)


@converter("gelu")
def gelu(cx, a):
    x = a["self"]
    if a.get("approximate", "none") == "tanh":
        # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        x3 = cx.op("multiply", cx.op("multiply", x, x), x)
        inner = cx.op("multiply", cx.op("add", x, cx.op("multiply", x3, cx.scalar(0.044715, x))),
                      cx.scalar(float(np.sqrt(2 / np.pi)), x))
        return cx.op("multiply", cx.op("multiply", x, cx.scalar(0.5, x)),
                     cx.op("add", cx.op("tanh", inner), cx.scalar(1.0, x)))
    # 0.5 x (1 + erf(x / sqrt 2))
    e = cx.op("erf", cx.op("multiply", x, cx.scalar(float(1 / np.sqrt(2)), x)))
    return cx.op("multiply", cx.op("multiply", x, cx.scalar(0.5, x)), cx.op("add", e, cx.scalar(1.0, x)))


@converter("silu", "silu_")
def silu(cx, a):
    x = a["self"]
    return cx.op("multiply", x, cx.op("sigmoid", x))


@converter("hardtanh", "hardtanh_")
def hardtanh(cx, a):
    return cx.op("clip", a["self"], a_min=float(a["min_val"]), a_max=float(a["max_val"]))


@converter("relu6", "relu6_")
def relu6(cx, a):
    return cx.op("clip", a["self"], a_min=0.0, a_max=6.0)


@converter("clamp", "clamp_", "clip")
def clamp(cx, a):
    x = a["self"]
    lo, hi = a.get("min"), a.get("max")
    if isinstance(lo, Value) or isinstance(hi, Value):
        if lo is not None:
            x = cx.op("maximum", x, _tensor_or_scalar(cx, lo, x))
        if hi is not None:
            x = cx.op("minimum", x, _tensor_or_scalar(cx, hi, x))
        return x
    inf = float("inf")
    return cx.op("clip", x, a_min=float(-inf if lo is None else lo), a_max=float(inf if hi is None else hi))


@converter("hardsigmoid", "hardsigmoid_")
def hardsigmoid(cx, a):
    x = a["self"]
    return cx.op("clip", cx.op("add", cx.op("divide", x, cx.scalar(6.0, x)), cx.scalar(0.5, x)),
                 a_min=0.0, a_max=1.0)


@converter("hardswish", "hardswish_")
def hardswish(cx, a):
    x = a["self"]
    return cx.op("multiply", x, hardsigmoid(cx, a))


@converter("leaky_relu", "leaky_relu_")
def leaky_relu(cx, a):
    return cx.op("nn.leaky_relu", a["self"], alpha=float(a.get("negative_slope", 0.01)))


@converter("where")
def where(cx, a):
    x = _tensor_or_scalar(cx, a["self"], a["other"]) if isinstance(a["other"], Value) else a["self"]
    y = _tensor_or_scalar(cx, a["other"], x)
    x = _tensor_or_scalar(cx, x, y)
    x, y = _promote(cx, x, y)
    return cx.op("where", a["condition"], x, y)


@converter("masked_fill", "masked_fill_")
def masked_fill(cx, a):
    x = a["self"]
    v = _tensor_or_scalar(cx, a["value"], x)
    return cx.op("where", a["mask"], cx.cast(v, cx.dtype(x)), x)


@converter("to", "_to_copy", "type_as")
def to(cx, a):
    x = a["self"]
    dt = a.get("dtype")
    if "other" in a and isinstance(a["other"], Value):
        return cx.cast(x, cx.dtype(a["other"]))
    if dt is None:
        return x
    return cx.cast(x, torch_dtype(cx, dt))


@converter("alias", "clone", "contiguous", "detach", "dropout", "dropout_", "feature_dropout",
           "lift_fresh_copy", "_assert_tensor_metadata")
def identity(cx, a):
    return a.get("self", a.get("input"))


# -- nn ---------------------------------------------------------------------------------

@converter("conv2d", "convolution", "_convolution", "conv1d")
def conv(cx, a):
    x, w, b = a["input"], a["weight"], a.get("bias")
    if a.get("transposed"):
        raise cx.unsupported("transposed convolution (conv_transpose2d)")
    r = cx.rank(x)
    if r == 3:   # conv1d as conv2d over a height of 1
        x, w = cx.op("expand_dims", x, axis=2), cx.op("expand_dims", w, axis=2)
        y = _conv2d(cx, x, w, b, [1] + _ints(a["stride"])[-1:], [0] + _ints(a["padding"])[-1:],
                    [1] + _ints(a["dilation"])[-1:], a["groups"])
        return cx.op("squeeze", y, axis=[2])
    if r != 4:
        raise cx.unsupported(f"a convolution over rank-{r} input")
    return _conv2d(cx, x, w, b, _ints(a["stride"]), _ints(a["padding"]), _ints(a["dilation"]), a["groups"])


def _conv2d(cx, x, w, b, stride, padding, dilation, groups):
    if isinstance(padding, str):
        raise cx.unsupported(f"padding='{padding}'")
    stride = stride * 2 if len(stride) == 1 else stride
    dilation = dilation * 2 if len(dilation) == 1 else dilation
    padding = padding * 2 if len(padding) == 1 else padding
    ws = cx.static_shape(w, "weight")
    y = cx.op("nn.conv2d", x, w, strides=stride, padding=[padding[0], padding[1], padding[0], padding[1]],
              dilation=dilation, groups=int(groups), channels=ws[0], kernel_size=list(ws[2:]))
    if b is not None:
        y = cx.op("nn.bias_add", y, b, axis=1)
    return y


@converter("linear")
def linear(cx, a):
    """nn.dense takes data of any rank (..., K) against an N x K weight."""
    x, w, b = a["input"], a["weight"], a.get("bias")
    y = cx.op("nn.dense", x, w)
    return cx.op("add", y, b) if b is not None else y


@converter("addmm")
def addmm(cx, a):
    y = cx.op("nn.matmul", a["mat1"], a["mat2"])
    beta, alpha = a.get("beta", 1), a.get("alpha", 1)
    if alpha != 1:
        y = cx.op("multiply", y, cx.scalar(float(alpha), y))
    c = a["self"]
    if beta != 1:
        c = cx.op("multiply", c, cx.scalar(float(beta), c))
    return cx.op("add", y, c)


@converter("mm")
def mm(cx, a):
    return cx.op("nn.matmul", a["self"], a["mat2"])


@converter("bmm")
def bmm(cx, a):
    return cx.op("nn.batch_matmul", a["self"], a["mat2"], transpose_b=False)


@converter("matmul")
def matmul(cx, a):
    x, y = a["self"], a["other"]
    rx, ry = cx.rank(x), cx.rank(y)
    if rx == 2 and ry == 2:
        return cx.op("nn.matmul", x, y)
    if ry == 2:
        return cx.op("nn.matmul", x, y)   # (..., K) x (K, N)
    if rx >= 3 and rx == ry:
        sx = cx.shape(x)
        if rx == 3:
            return cx.op("nn.batch_matmul", x, y, transpose_b=False)
        if rx != 4:
            raise cx.unsupported(f"matmul of rank-{rx} tensors")
        # (B, H, M, K) x (B, H, K, N): B and H merged (-3), the rest copied (0)
        out = cx.op("nn.batch_matmul", cx.op("reshape", x, newshape=[-3, 0, 0]),
                    cx.op("reshape", y, newshape=[-3, 0, 0]), transpose_b=False)
        if None in sx[:2]:
            raise cx.unsupported("a batched matmul over dynamic leading dimensions")
        return cx.op("reshape", out, newshape=[-4, sx[0], sx[1], 0, 0])
    raise cx.unsupported(f"matmul of rank {rx} by rank {ry}")


@converter("batch_norm", "_native_batch_norm_legit_no_training", "native_batch_norm")
def batch_norm(cx, a):
    x = a["input"]
    training = a.get("training", False)
    if training:
        raise cx.unsupported("batch_norm in training mode (call model.eval() first)")
    c = cx.shape(x)[1]
    gamma = a.get("weight") if a.get("weight") is not None else cx.const(np.ones(c, np.float32))
    beta = a.get("bias") if a.get("bias") is not None else cx.const(np.zeros(c, np.float32))
    out = cx.op("nn.batch_norm", x, gamma, beta, a["running_mean"], a["running_var"],
                axis=1, epsilon=float(a["eps"]))
    y = cx.get_item(out, 0)
    if a.op_name in ("_native_batch_norm_legit_no_training", "native_batch_norm"):
        return (y, cx.get_item(out, 1), cx.get_item(out, 2))
    return y


@converter("layer_norm", "native_layer_norm")
def layer_norm(cx, a):
    x = a["input"]
    shape = _ints(a["normalized_shape"])
    if len(shape) != 1:
        raise cx.unsupported("layer_norm over more than the last dimension")
    w, b = a.get("weight"), a.get("bias")
    n = shape[0]
    gamma = w if w is not None else cx.const(np.ones(n, np.float32))
    beta = b if b is not None else cx.const(np.zeros(n, np.float32))
    y = cx.op("nn.layer_norm", x, gamma, beta, axis=-1, epsilon=float(a["eps"]))
    if a.op_name == "native_layer_norm":
        mean = cx.op("mean", x, axis=[-1], keepdims=True)
        var = cx.op("variance", x, mean, axis=[-1], keepdims=True)
        rstd = cx.op("rsqrt", cx.op("add", var, cx.scalar(float(a["eps"]), var)))
        return (y, mean, rstd)
    return y


@converter("group_norm")
def group_norm(cx, a):
    x = a["input"]
    g = int(a["num_groups"])
    s = cx.static_shape(x)
    n, c = s[0], s[1]
    xs = cx.op("reshape", x, newshape=[n, g, -1])
    mean = cx.op("mean", xs, axis=[2], keepdims=True)
    var = cx.op("variance", xs, mean, axis=[2], keepdims=True)
    norm = cx.op("divide", cx.op("subtract", xs, mean),
                 cx.op("sqrt", cx.op("add", var, cx.scalar(float(a["eps"]), var))))
    y = cx.op("reshape", norm, newshape=list(s))
    ones = [1] * (len(s) - 2)
    if a.get("weight") is not None:
        y = cx.op("multiply", y, cx.op("reshape", a["weight"], newshape=[c] + ones))
    if a.get("bias") is not None:
        y = cx.op("add", y, cx.op("reshape", a["bias"], newshape=[c] + ones))
    return y


def _pool_args(a, two=True):
    k = _ints(a["kernel_size"])
    s = _ints(a["stride"]) if a.get("stride") else k
    p = _ints(a["padding"])
    k, s, p = [v * 2 if len(v) == 1 else v for v in (k, s, p)]
    return k, s, p


@converter("max_pool2d", "max_pool2d_with_indices")
def max_pool2d(cx, a):
    k, s, p = _pool_args(a)
    d = _ints(a.get("dilation", [1, 1]))
    d = d * 2 if len(d) == 1 else d
    y = cx.op("nn.max_pool2d", a["self"], pool_size=k, strides=s, padding=[p[0], p[1], p[0], p[1]],
              dilation=d, ceil_mode=bool(a.get("ceil_mode", False)))
    if a.op_name == "max_pool2d_with_indices":
        raise cx.unsupported("max_pool2d's indices")
    return y


@converter("avg_pool2d")
def avg_pool2d(cx, a):
    k, s, p = _pool_args(a)
    if a.get("divisor_override") is not None:
        raise cx.unsupported("avg_pool2d with divisor_override")
    return cx.op("nn.avg_pool2d", a["self"], pool_size=k, strides=s, padding=[p[0], p[1], p[0], p[1]],
                 ceil_mode=bool(a.get("ceil_mode", False)), count_include_pad=bool(a.get("count_include_pad", True)))


@converter("adaptive_avg_pool2d", "_adaptive_avg_pool2d")
def adaptive_avg_pool2d(cx, a):
    size = _ints(a["output_size"])
    size = size * 2 if len(size) == 1 else size
    if size == [1, 1]:
        return cx.op("nn.global_avg_pool2d", a["self"])
    return cx.op("nn.adaptive_avg_pool2d", a["self"], output_size=size)


@converter("softmax", "_softmax")
def softmax(cx, a):
    x = a["self"]
    if a.get("dtype") is not None:
        x = cx.cast(x, torch_dtype(cx, a["dtype"]))
    return cx.op("nn.softmax", x, axis=_axis(cx, x, int(a["dim"])))


@converter("log_softmax", "_log_softmax")
def log_softmax(cx, a):
    x = a["self"]
    return cx.op("nn.log_softmax", x, axis=_axis(cx, x, int(a["dim"])))


@converter("embedding")
def embedding(cx, a):
    return cx.op("take", a["weight"], a["indices"], axis=0)


@converter("scaled_dot_product_attention")
def sdpa(cx, a):
    """4-d (batch, heads, L, E) operands: one nn.attention ("BNSH";
    is_causal is torch's tril, top-left; a bool mask becomes a 0 / -inf
    bias; a query that sees no key gives 0, as torch's safe softmax does).
    Other ranks: the product, softmax and product it stands for."""
    q, k, v = a["query"], a["key"], a["value"]
    if a.get("dropout_p", 0.0):
        raise cx.unsupported("scaled_dot_product_attention with dropout")
    mask = a.get("attn_mask")
    if cx.rank(q) == cx.rank(k) == cx.rank(v) == 4 and not a.get("enable_gqa") and \
            (mask is None or cx.rank(mask) <= 4):
        bias = []
        if mask is not None:
            bias = [cx.op("where", mask, cx.scalar(0.0, q), cx.scalar(float("-inf"), q))
                    if cx.dtype(mask) is T.i1 else cx.op("cast", mask, dtype=cx.dtype(q))]
        scale = a.get("scale")
        kt = cx.op("transpose", k, axes=[0, 1, 3, 2])   # Kᵀ per head: what the kernel reads along the keys
        return cx.op("nn.attention", q, kt, v, *bias, layout="BNSH", key_layout="BNHS",
                     scale=None if scale is None else float(scale),
                     causal_mask="top_left" if a.get("is_causal") else "none", empty_rows="zero")
    d = cx.shape(q)[-1]
    scale = a.get("scale") or 1.0 / float(np.sqrt(d))
    kt = cx.op("transpose", k, axes=list(range(cx.rank(k) - 2)) + [cx.rank(k) - 1, cx.rank(k) - 2])
    s = matmul(cx, Args({"self": q, "other": kt}))
    s = cx.op("multiply", s, cx.scalar(float(scale), s))
    if a.get("is_causal"):
        lq, lk = cx.static_shape(q)[-2], cx.static_shape(k)[-2]
        causal = np.tril(np.ones((lq, lk), dtype=bool))
        s = cx.op("where", cx.const(causal), s, cx.scalar(float("-inf"), s))
    if mask is not None:
        if cx.dtype(mask) is T.i1:
            s = cx.op("where", mask, s, cx.scalar(float("-inf"), s))
        else:
            s = cx.op("add", s, mask)
    p = cx.op("nn.softmax", s, axis=cx.rank(s) - 1)
    return matmul(cx, Args({"self": p, "other": v}))


# -- reductions ---------------------------------------------------------------------------

def _reduce(relay_name):
    def convert(cx, a):
        x = a["self"]
        dims = a.get("dim")
        keep = bool(a.get("keepdim", False))
        if a.get("dtype") is not None:
            x = cx.cast(x, torch_dtype(cx, a["dtype"]))
        if relay_name in ("mean",) and not T.is_float(cx.dtype(x)):
            raise cx.error("mean of an integer tensor (PyTorch refuses it too)")
        axis = None if dims is None or dims == [] else [_axis(cx, x, d) for d in _ints(dims)]
        return cx.op(relay_name, x, axis=axis, keepdims=keep)
    return convert


CONVERTERS["mean"] = _reduce("mean")
CONVERTERS["sum"] = _reduce("sum")
CONVERTERS["prod"] = _reduce("prod")
CONVERTERS["amax"] = _reduce("max")
CONVERTERS["amin"] = _reduce("min")


@converter("var")
def var(cx, a):
    x = a["self"]
    dims = a.get("dim")
    axis = None if dims is None else [_axis(cx, x, d) for d in _ints(dims)]
    corr = a.get("correction")
    unbiased = a.get("unbiased", True) if corr is None else bool(corr)
    mean = cx.op("mean", x, axis=axis, keepdims=True)
    return cx.op("variance", x, mean, axis=axis, keepdims=bool(a.get("keepdim", False)), unbiased=unbiased)


@converter("max", "min")
def max_min(cx, a):
    x = a["self"]
    name = "max" if a.op_name == "max" else "min"
    if "other" in a:
        return _binary("maximum" if name == "max" else "minimum")(cx, a)
    if "dim" not in a:
        return cx.op(name, x)
    d = _axis(cx, x, int(a["dim"]))
    keep = bool(a.get("keepdim", False))
    vals = cx.op(name, x, axis=[d], keepdims=keep)
    idx = cx.op("argmax" if name == "max" else "argmin", x, axis=[d], keepdims=keep)
    return (vals, cx.cast(idx, T.i64))


@converter("argmax", "argmin")
def argmax(cx, a):
    x = a["self"]
    if a.get("dim") is None:
        x, d = cx.op("reshape", x, newshape=[-1]), 0
    else:
        d = _axis(cx, x, int(a["dim"]))
    return cx.cast(cx.op(a.op_name, x, axis=[d], keepdims=bool(a.get("keepdim", False))), T.i64)


@converter("cumsum")
def cumsum(cx, a):
    x = a["self"]
    return cx.op("cumsum", x, axis=_axis(cx, x, int(a["dim"])))


# -- shapes ----------------------------------------------------------------------------------

def _newshape(cx, x, shape):
    """A view's target as relay reshape codes: a size known at run time
    only (a SymDim) that is dimension i of `x` at position i is 0 (copy
    it); one other unknown size is -1 (inferred)."""
    from .importer import SymDim
    out = []
    for i, d in enumerate(shape):
        if isinstance(d, SymDim):
            same = d.value is x and d.axis == i and all(not isinstance(e, SymDim) or e.value is x
                                                         for e in shape[:i])
            out.append(0 if same else -1)
            continue
        if isinstance(d, Value):
            v = cx.static(d)
            if v is None:
                raise cx.unsupported("a size computed at run time")
            d = int(v)
        out.append(int(d))
    if out.count(-1) > 1:
        raise cx.unsupported("a shape with more than one size known only at run time")
    return out


@converter("view", "reshape", "_unsafe_view", "_reshape_alias")
def view(cx, a):
    x = a["self"]
    shape = _newshape(cx, x, a["size"] if "size" in a else a["shape"])
    return cx.op("reshape", x, newshape=shape)


@converter("unflatten")
def unflatten(cx, a):
    x = a["self"]
    d = _axis(cx, x, int(a["dim"]))
    shape = cx.shape(x)
    sizes = _ints(a["sizes"])
    lead = [0] * d   # copy the dimensions before (a '?' among them stays)
    rest = [0 if shape[k] is None else shape[k] for k in range(d + 1, len(shape))]
    if None in shape[d + 1:]:
        raise cx.unsupported("unflatten before a dimension known only at run time")
    return cx.op("reshape", x, newshape=lead + sizes + rest)


@converter("index")
def index(cx, a):
    """x[..., idx, ...]: one index tensor (the others None) is a take along
    its axis; index tensors on the leading dimensions are broadcast together
    and gathered (gather_nd); a negative index counts from the end."""
    x = a["self"]
    given = [i for i, v in enumerate(a["indices"]) if v is not None]
    if not given:
        return x
    if any(cx.dtype(a["indices"][k]) is T.i1 for k in given):
        raise cx.unsupported("indexing by a boolean mask (a data-dependent shape)")
    shape = cx.shape(x)

    def wrapped(k):
        i = cx.cast(a["indices"][k], T.i64)
        n = shape[k]
        if n is None:
            return i
        zero = cx.const(0, T.i64)
        return cx.op("where", cx.op("less", i, zero), cx.op("add", i, cx.const(n, T.i64)), i)
    if len(given) == 1:
        return cx.op("take", x, wrapped(given[0]), axis=given[0])
    if given != list(range(len(given))):
        raise cx.unsupported("advanced indexing with index tensors after a full slice")
    bshape = list(np.broadcast_shapes(*[cx.static_shape(a["indices"][k]) for k in given]))
    parts = [cx.op("expand_dims", cx.op("broadcast_to", wrapped(k), shape=bshape), axis=0) for k in given]
    return cx.op("gather_nd", x, cx.op("concatenate", *parts, axis=0))


@converter("diff")
def diff(cx, a):
    x = a["self"]
    d = _axis(cx, x, int(a.get("dim", -1)))
    parts = [v for v in (a.get("prepend"), x, a.get("append")) if v is not None]
    x = cx.op("concatenate", *parts, axis=d) if len(parts) > 1 else x
    for _ in range(int(a.get("n", 1))):
        n = cx.shape(x)[d]
        if n is None:
            raise cx.unsupported("diff along a dimension known only at run time")
        hi = cx.op("strided_slice", x, begin=[1], end=[n], strides=[1], axes=[d])
        lo = cx.op("strided_slice", x, begin=[0], end=[n - 1], strides=[1], axes=[d])
        x = cx.op("logical_xor" if cx.dtype(x) is T.i1 else "subtract", hi, lo)
    return x


@converter("grid_sampler", "grid_sampler_2d", "grid_sampler_3d", "grid_sample")
def grid_sample(cx, a):
    """F.grid_sample: the interpolation and padding modes arrive as numbers."""
    method = ["bilinear", "nearest", "bicubic"][int(a.get("interpolation_mode", 0))]
    pad = ["zeros", "border", "reflection"][int(a.get("padding_mode", 0))]
    return cx.op("image.grid_sample", a["input"], a["grid"], method=method, padding_mode=pad,
                 align_corners=bool(a.get("align_corners", False)))


@converter("gather")
def gather(cx, a):
    x = a["self"]
    return cx.op("gather", x, a["index"], axis=_axis(cx, x, int(a["dim"])))


@converter("scatter", "scatter_")
def scatter(cx, a):
    x = a["self"]
    src = a.get("src")
    if src is None:
        src = cx.op("broadcast_to", _tensor_or_scalar(cx, a["value"], x), shape=list(cx.static_shape(a["index"])))
    if a.get("reduce") is not None:
        raise cx.unsupported("scatter with a reduction")
    return cx.op("scatter_elements", x, a["index"], src, axis=_axis(cx, x, int(a["dim"])))


@converter("flip")
def flip(cx, a):
    x = a["self"]
    for d in _ints(a["dims"]):
        x = cx.op("reverse", x, axis=_axis(cx, x, d))
    return x


@converter("topk")
def topk(cx, a):
    x = a["self"]
    out = cx.op("topk", x, k=int(a["k"]), axis=_axis(cx, x, int(a.get("dim", -1))), ret_type="both",
                is_ascend=not a.get("largest", True), dtype="int64")
    return (cx.get_item(out, 0), cx.get_item(out, 1))


@converter("sort")
def sort(cx, a):
    x = a["self"]
    d = _axis(cx, x, int(a.get("dim", -1)))
    asc = not a.get("descending", False)
    return (cx.op("sort", x, axis=d, is_ascend=asc), cx.op("argsort", x, axis=d, is_ascend=asc, dtype="int64"))


@converter("isnan", "isinf")
def isnan(cx, a):
    return cx.op(a.op_name, a["self"])


@converter("roll")
def roll(cx, a):
    x = a["self"]
    shifts, dims = _ints(a["shifts"]), _ints(a["dims"]) if a.get("dims") else []
    if not dims:
        flat = cx.op("reshape", x, newshape=[-1])
        return cx.op("reshape", roll(cx, Args({"self": flat, "shifts": shifts, "dims": [0]}, )),
                     newshape=list(cx.static_shape(x)))
    for s_, d in zip(shifts, dims):
        d = _axis(cx, x, d)
        n = cx.shape(x)[d]
        if n is None:
            raise cx.unsupported("roll along a dimension known only at run time")
        s_ %= n
        if s_:
            head = cx.op("strided_slice", x, begin=[n - s_], end=[n], strides=[1], axes=[d])
            tail = cx.op("strided_slice", x, begin=[0], end=[n - s_], strides=[1], axes=[d])
            x = cx.op("concatenate", head, tail, axis=d)
    return x


@converter("flatten")
def flatten(cx, a):
    x = a["self"]
    r = cx.rank(x)
    s, e = _axis(cx, x, int(a.get("start_dim", 0))) if r else 0, _axis(cx, x, int(a.get("end_dim", -1))) if r else 0
    shape = cx.shape(x)
    if None in shape[:s] or None in shape[e + 1:]:
        raise cx.unsupported("flatten next to a dynamic dimension")
    return cx.op("reshape", x, newshape=list(shape[:s]) + [-1] + list(shape[e + 1:]))


@converter("permute")
def permute(cx, a):
    x = a["self"]
    return cx.op("transpose", x, axes=[_axis(cx, x, d) for d in _ints(a["dims"])])


@converter("transpose", "swapaxes")
def transpose(cx, a):
    x = a["self"]
    r = cx.rank(x)
    d0, d1 = _axis(cx, x, int(a["dim0"])), _axis(cx, x, int(a["dim1"]))
    axes = list(range(r))
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return cx.op("transpose", x, axes=axes)


@converter("t", "numpy_T")
def t(cx, a):
    x = a["self"]
    return x if cx.rank(x) < 2 else cx.op("transpose", x, axes=[1, 0])


@converter("unsqueeze", "unsqueeze_")
def unsqueeze(cx, a):
    x = a["self"]
    d = int(a["dim"])
    d = d + cx.rank(x) + 1 if d < 0 else d
    return cx.op("expand_dims", x, axis=d)


@converter("squeeze", "squeeze_")
def squeeze(cx, a):
    x = a["self"]
    dims = a.get("dim")
    shape = cx.shape(x)
    if dims is None:
        axes = [i for i, s in enumerate(shape) if s == 1]
    else:
        axes = [d for d in (_axis(cx, x, d) for d in _ints(dims)) if shape[d] == 1]
    return cx.op("squeeze", x, axis=axes) if axes else x


@converter("cat", "concat", "concatenate")
def cat(cx, a):
    xs = [x for x in a["tensors"] if not (cx.rank(x) == 1 and cx.shape(x)[0] == 0)]
    first = xs[0]
    return cx.op("concatenate", *xs, axis=_axis(cx, first, int(a.get("dim", 0))))


@converter("stack")
def stack(cx, a):
    xs = a["tensors"]
    d = int(a.get("dim", 0))
    d = d + cx.rank(xs[0]) + 1 if d < 0 else d
    return cx.op("concatenate", *[cx.op("expand_dims", x, axis=d) for x in xs], axis=d)


@converter("split", "split_with_sizes", "chunk", "tensor_split", "unbind")
def split(cx, a):
    x = a["self"]
    d = _axis(cx, x, int(a.get("dim", 0)))
    n = cx.shape(x)[d]
    if n is None:
        raise cx.unsupported(f"{a.op_name} along a dimension known only at run time")
    if a.op_name == "chunk":
        c = int(a["chunks"])
        size = -(-n // c)
        sizes = [size] * (n // size) + ([n % size] if n % size else [])
    elif a.op_name == "unbind":
        sizes = [1] * n
    else:
        s = a.get("split_size") if "split_size" in a else a.get("split_sizes", a.get("split_size_or_sections"))
        sizes = _ints(s) if isinstance(s, (list, tuple)) else [int(s)] * (n // int(s)) + \
            ([n % int(s)] if n % int(s) else [])
    cuts = list(np.cumsum(sizes)[:-1])
    out = cx.op("split", x, indices_or_sections=[int(c) for c in cuts], axis=d) if cuts else None
    parts = [cx.get_item(out, i) for i in range(len(sizes))] if out is not None else [x]
    if a.op_name == "unbind":
        parts = [cx.op("squeeze", p, axis=[d]) for p in parts]
    return tuple(parts)


@converter("slice")
def slice_(cx, a):
    x = a["self"]
    d = _axis(cx, x, int(a.get("dim", 0)))
    n = cx.shape(x)[d]
    start, end, step = a.get("start"), a.get("end"), int(a.get("step", 1))
    start = 0 if start is None else int(start)
    big = (1 << 63) - 1
    end = big if end is None else int(end)
    if n is not None:
        start = max(0, start + n) if start < 0 else min(start, n)
        end = max(0, end + n) if end < 0 else min(end, n)
        if start == 0 and end == n and step == 1:
            return x
    return cx.op("strided_slice", x, begin=[start], end=[end], strides=[step], axes=[d])


@converter("slice_scatter")
def slice_scatter(cx, a):
    """`self` with self[start:end] (along dim) replaced by `src`: the two
    untouched parts of self around src, concatenated."""
    x, src = a["self"], a["src"]
    d = _axis(cx, x, int(a.get("dim", 0)))
    n = cx.shape(x)[d]
    if n is None or int(a.get("step", 1)) != 1:
        raise cx.unsupported("slice_scatter with a step, or along a dimension known only at run time")
    start, end = a.get("start"), a.get("end")
    start = 0 if start is None else int(start) + (n if int(start) < 0 else 0)
    end = n if end is None else min(int(end) + (n if int(end) < 0 else 0), n)
    parts = []
    if start > 0:
        parts.append(cx.op("strided_slice", x, begin=[0], end=[start], strides=[1], axes=[d]))
    parts.append(cx.cast(src, cx.dtype(x)))
    if end < n:
        parts.append(cx.op("strided_slice", x, begin=[end], end=[n], strides=[1], axes=[d]))
    return parts[0] if len(parts) == 1 else cx.op("concatenate", *parts, axis=d)


@converter("select")
def select(cx, a):
    x = a["self"]
    d = _axis(cx, x, int(a["dim"]))
    i = int(a["index"])
    n = cx.shape(x)[d]
    if i < 0:
        if n is None:
            raise cx.unsupported("select with a negative index along a dynamic dimension")
        i += n
    s = cx.op("strided_slice", x, begin=[i], end=[i + 1], strides=[1], axes=[d])
    return cx.op("squeeze", s, axis=[d])


@converter("narrow")
def narrow(cx, a):
    x = a["self"]
    d = _axis(cx, x, int(a["dim"]))
    s = int(a["start"])
    return cx.op("strided_slice", x, begin=[s], end=[s + int(a["length"])], strides=[1], axes=[d])


@converter("expand", "expand_as", "broadcast_to")
def expand(cx, a):
    x = a["self"]
    if "other" in a:
        shape = list(cx.static_shape(a["other"]))
    else:
        want = [d if isinstance(d, int) else cx.static(d) if isinstance(d, Value) else None for d in a["size"]]
        have = [1] * (len(want) - cx.rank(x)) + list(cx.shape(x))
        shape = [h if w is not None and int(w) == -1 else w for w, h in zip(want, have)]
        if any(d is None for d in shape):
            raise cx.unsupported("expand to a size known only at run time")
        shape = [int(d) for d in shape]
    return cx.op("broadcast_to", x, shape=shape)


@converter("repeat")
def repeat(cx, a):
    return cx.op("tile", a["self"], reps=_ints(a["repeats"]))


@converter("index_select")
def index_select(cx, a):
    x = a["self"]
    return cx.op("take", x, a["index"], axis=_axis(cx, x, int(a["dim"])))


@converter("pad", "constant_pad_nd")
def pad(cx, a):
    x = a["input"] if "input" in a else a["self"]
    p = _ints(a["pad"])
    mode = a.get("mode", "constant")
    r = cx.rank(x)
    width = [[0, 0] for _ in range(r)]
    for i in range(len(p) // 2):
        width[r - 1 - i] = [p[2 * i], p[2 * i + 1]]
    value = a.get("value") or 0.0
    if mode != "constant":
        return cx.op("nn.pad", x, pad_width=width, pad_mode={"reflect": "reflect", "replicate": "edge"}.get(mode, mode))
    return cx.op("nn.pad", x, pad_width=width, pad_value=float(value))


@converter("upsample_nearest2d", "upsample_bilinear2d")
def upsample(cx, a):
    x = a["input"] if "input" in a else a["self"]
    size = a.get("output_size")
    if size is None:
        s = cx.static_shape(x)
        sc = a.get("scale_factors") or [a.get("scales_h"), a.get("scales_w")]
        size = [int(s[2] * sc[0]), int(s[3] * sc[1])]
    method = "nearest_neighbor" if "nearest" in a.op_name else "linear"
    mode = "asymmetric" if method == "nearest_neighbor" else \
        ("align_corners" if a.get("align_corners") else "half_pixel")
    return cx.op("image.resize2d", x, size=_ints(size), method=method, coordinate_transformation_mode=mode,
                 rounding_method="floor" if method == "nearest_neighbor" else "")


# -- creation ---------------------------------------------------------------------------------

@converter("arange")
def arange(cx, a):
    start, end, step = a.get("start", 0), a.get("end"), a.get("step", 1)
    vals = [cx.static(v) if isinstance(v, Value) else v for v in (start, end, step)]
    if any(v is None for v in vals):
        raise cx.unsupported("arange with bounds computed at run time")
    dt = a.get("dtype")
    arr = np.arange(*[np.asarray(v).item() for v in vals])
    np_dt = T.to_numpy_dtype(torch_dtype(cx, dt)) if dt is not None else \
        (np.int64 if arr.dtype.kind in "iu" else np.float32)
    return cx.const(arr.astype(np_dt))


@converter("zeros", "ones", "full", "new_zeros", "new_ones", "zeros_like", "ones_like", "full_like",
           "scalar_tensor", "new_full")
def full(cx, a):
    name = a.op_name
    like = a.get("self")
    if name.endswith("_like"):
        shape = list(cx.static_shape(like))
    elif name == "scalar_tensor":
        shape = []
    else:
        shape = _newshape(cx, None, a["size"])
    value = 0 if "zeros" in name else 1 if "ones" in name else a.get("fill_value", a.get("s"))
    dt = a.get("dtype")
    if dt is not None:
        dtype = torch_dtype(cx, dt)
    elif like is not None:
        dtype = cx.dtype(like)
    else:
        dtype = T.f32 if isinstance(value, float) or name in ("zeros", "ones") else T.i64
    if isinstance(value, Value):
        return cx.op("broadcast_to", cx.cast(value, dtype), shape=shape)
    return cx.const(np.full(shape, value, dtype=T.to_numpy_dtype(dtype)))


@converter("fill", "fill_")
def fill(cx, a):
    """Every element of `self` set to `value` (export's functional form of
    ``t.fill_(v)``)."""
    x = a["self"]
    v = a["value"]
    if isinstance(v, Value):
        return cx.op("broadcast_to", cx.cast(v, cx.dtype(x)), shape=list(cx.static_shape(x)))
    return cx.const(np.full(cx.static_shape(x), v, dtype=T.to_numpy_dtype(cx.dtype(x))))


@converter("tril", "triu")
def tril(cx, a):
    x = a["self"]
    s = cx.static_shape(x)
    k = int(a.get("diagonal", 0))
    m = (np.tril if a.op_name == "tril" else np.triu)(np.ones(s[-2:], dtype=bool), k)
    return cx.op("where", cx.const(m), x, cx.scalar(0, x))


@converter("size")
def size(cx, a):
    x = a["self"]
    if a.get("dim") is None:
        return list(cx.static_shape(x))
    return cx.static_shape(x)[_axis(cx, x, int(a["dim"]))]


@converter("dim")
def dim(cx, a):
    return cx.rank(a["self"])


# -- dtypes --------------------------------------------------------------------------------

def torch_dtype(cx, dt):
    """A tvmd type for a torch.dtype (or TorchScript's ScalarType number)."""
    import torch
    if isinstance(dt, int):   # TorchScript passes ScalarType as an int
        table = {0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32, 4: torch.int64,
                 5: torch.float16, 6: torch.float32, 7: torch.float64, 11: torch.bool, 15: torch.bfloat16}
        if dt not in table:
            raise cx.unsupported(f"scalar type {dt}")
        dt = table[dt]
    name = str(dt).replace("torch.", "")
    if name == "bfloat16":
        return T.bf16
    try:
        return T.from_numpy_dtype(np.dtype(name))
    except TypeError:
        raise cx.unsupported(f"dtype {dt}") from None


# -- recurrent layers ------------------------------------------------------------------

class _OnnxNode:
    """An ONNX LSTM / GRU node as the ONNX frontend's converters read it
    (``input(i)``, ``attr(name, default)``): one PyTorch layer is one such
    node, so both frontends share one unrolling (onnx/converters/rnn.py)."""

    def __init__(self, inputs, attrs):
        self.inputs, self.attrs = inputs, attrs

    def input(self, i):
        return self.inputs[i] if i < len(self.inputs) else None

    def attr(self, name, default=None):
        return self.attrs.get(name, default)


# PyTorch's gate blocks in ONNX's order: LSTM i f g o -> i o f c; GRU r z n -> z r h
_GATE_ORDER = {"lstm": [0, 3, 1, 2], "gru": [1, 0, 2]}


@converter("lstm", "gru")
def rnn(cx, a):
    """nn.LSTM / nn.GRU (eval): each layer is the ONNX converter's unrolled
    loop over the sequence, its weights re-laid out at import time (gate
    order, both biases); a layer's output (seq, batch, dirs * hidden) feeds
    the next; h_n (and c_n) stack the layers' final states."""
    from ..onnx.converters.rnn import gru as onnx_gru
    from ..onnx.converters.rnn import lstm as onnx_lstm
    kind = a.op_name
    if a.get("train"):
        raise cx.unsupported(f"{kind} in training mode (call model.eval() first)")
    x, params = a["input"], a["params"]
    layers, ndir = int(a["num_layers"]), 2 if a["bidirectional"] else 1
    if a["batch_first"]:
        x = cx.op("transpose", x, axes=[1, 0, 2])
    h0 = a["hx"][0] if kind == "lstm" else a["hx"]
    c0 = a["hx"][1] if kind == "lstm" else None
    per = 4 if a["has_biases"] else 2
    order = _GATE_ORDER[kind]
    finals = [[], []]
    for layer in range(layers):
        ws, rs, bs = [], [], []
        for d in range(ndir):
            p = [cx.static(v) for v in params[(layer * ndir + d) * per:(layer * ndir + d + 1) * per]]
            if any(v is None for v in p):
                raise cx.unsupported(f"{kind} weights computed at run time")
            hidden = p[1].shape[1]

            def gates(m):
                return np.concatenate([m[g * hidden:(g + 1) * hidden] for g in order])
            ws.append(gates(p[0]))
            rs.append(gates(p[1]))
            bs.append(np.concatenate([gates(p[2]), gates(p[3])]) if per == 4
                      else np.zeros(2 * len(order) * hidden, p[0].dtype))
        state = [layer * ndir, (layer + 1) * ndir]

        def part(v):
            return cx.op("strided_slice", v, begin=state[:1], end=state[1:], strides=[1], axes=[0])
        node = _OnnxNode([x, cx.const(np.stack(ws)), cx.const(np.stack(rs)), cx.const(np.stack(bs)), None,
                          part(h0), part(c0) if c0 is not None else None],
                         {"hidden_size": hidden, "direction": "bidirectional" if ndir == 2 else "forward",
                          "linear_before_reset": 1})
        outs = (onnx_lstm if kind == "lstm" else onnx_gru)(cx, node)
        y = outs[0]   # (seq, dirs, batch, hidden) -> (seq, batch, dirs * hidden)
        x = cx.op("reshape", cx.op("transpose", y, axes=[0, 2, 1, 3]), newshape=[0, 0, -1])
        for k, s in enumerate(outs[1:]):
            finals[k].append(s)
    out = cx.op("transpose", x, axes=[1, 0, 2]) if a["batch_first"] else x
    states = [cx.op("concatenate", *f, axis=0) if len(f) > 1 else f[0] for f in finals if f]
    return (out, *states)
