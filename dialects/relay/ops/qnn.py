"""Quantized operators (TVM's ``relay.qnn.op``) and ``annotation.simulated_quantize``.

A quantized tensor ``q`` with scale ``s`` (f32) and zero point ``z`` (i32)
stands for the real values ``s * (q - z)``.  As in TVM, scales and zero
points are tensor operands, not attributes: a scalar (``tensor<f32>``, or
one element) for per-tensor quantization, or a vector along the ``axis``
attribute for per-channel (per-axis) quantization.

    %q = qnn.quantize(%x, %s, %z) {out_dtype = "int8"} : tensor<1x8xi8>
    %x = qnn.dequantize(%q, %s, %z) : tensor<1x8xf32>
    %r = qnn.requantize(%a, %s_in, %z_in, %s_out, %z_out) {rounding = "TONEAREST"} : tensor<1x8xi8>
    %c = qnn.conv2d(%q, %w, %z_in, %z_w, %s_in, %s_w) {padding = [1, 1, 1, 1]} : tensor<1x16x8x8xi32>
    %d = qnn.dense(%q, %w, %z_in, %z_w, %s_in, %s_w) : tensor<1x10xi32>
    %m = qnn.batch_matmul(%a, %b, %z_a, %z_b, %s_a, %s_b) : tensor<2x4x5xi32>
    %e = qnn.add(%a, %b, %s_a, %z_a, %s_b, %z_b, %s_out, %z_out) : tensor<1x8xi8>
    (qnn.subtract and qnn.mul take the same operands)
    %k = qnn.concatenate(%a, %b, %s_a, %s_b, %z_a, %z_b, %s_out, %z_out) {axis = 1}

qnn.concatenate flattens TVM's three tuples into one operand list: the n
data tensors, then their n scales, then their n zero points, then the
output scale and zero point (3n + 2 operands).

Semantics (the ``compute`` methods, exact integer arithmetic; qnn_math.py
has the fixed-point details):

* quantize:   ``clip(round(x / s) + z)`` to out_dtype, computed in x's float
  type; round is half-to-even (numpy's rint, LLVM's nearbyint, ONNX's
  QuantizeLinear).
* dequantize: ``float(int32(q) - z) * s``.
* requantize: ``z_out + (s_in / s_out) * (q - z_in)``, saturated to out_dtype.
  compute_dtype "int64" (the default, "None") multiplies in fixed point
  (TVM's FixedPointMultiply); "float32" / "float64" multiply in floating
  point.  rounding "UPWARD" (the default, "None") rounds x.5 toward +inf,
  "TONEAREST" away from zero.  Unlike TVM, the output scale and zero point
  may be per-axis too (the quantize pass uses that).
* conv2d / dense / batch_matmul: the integer product of ``q - z`` and
  ``w - z_w`` (kernel zero point and kernel scale per output channel, or
  scalar), accumulated exactly; out_dtype int32.  The scales do not enter
  the result (its scale is ``s_in * s_w``), they document it and let the
  lowering and later passes reason about it.
* add / subtract: both sides requantized to the output scale and zero point
  (in int32), then ``l + r - z_out`` (``l - r + z_out``), saturated.
* mul: ``(l - z_l) * (r - z_r)`` requantized from scale ``s_l * s_r`` (a
  float32 product) to the output.
* concatenate: every input requantized to the output parameters, then
  concatenated.

``annotation.simulated_quantize(%x, %dom_scale, %clip_min, %clip_max)
{kind = "input"}`` is the quantize pass's annotation (TVM's
``relay.op.annotation.simulated_quantize``): in float,
``round(clip(x / dom_scale, clip_min, clip_max)) * dom_scale``; kind
"identity" passes x through.

Pattern kinds: quantize, dequantize, requantize and the binary ops are
broadcast (their per-axis parameters broadcast along an axis), conv2d /
dense / batch_matmul out-elemwise-fusable, concatenate injective.  Layout
rules: quantize / dequantize / requantize / simulated_quantize "axis" (the
axis is renumbered; the parameter vectors follow it unchanged), add /
subtract / mul "broadcast" (lhs_axis / rhs_axis renumbered), conv2d "layout",
concatenate "axis", dense and batch_matmul "opaque".
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import BOOL, INT, STR, enum, optional
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from ..layouts import convert_array
from . import qnn_math as Q
from .base import OpPattern, RelayOp, broadcast_shapes, tensor_type
from .conv import ConvOp, conv_attrs, conv_nd
from .nn import BatchMatmulOp, DenseOp

np = lazy_module("numpy")   # parsing and printing never need numpy

QUANTIZED = ("int8", "uint8", "int16", "uint16", "int32", "int4", "uint4", "int2", "uint2")
REQUANT_IN = ("int8", "uint8", "int16", "int32", "int64")
REQUANT_OUT = ("int8", "uint8", "int16", "int32")
PRODUCT_IN = ("int8", "uint8", "int16")
ACCUMULATORS = ("int32", "int64")
BINARY_IN = ("int8", "uint8", "int16", "int32")


def _dtype_name(t) -> str:
    return T.tvm_dtype_name(t)


class QnnOp(RelayOp):
    """Shared checks: quantization parameters and integer dtypes."""

    __slots__ = ()
    PATTERN = OpPattern.BROADCAST

    # -- type-relation helpers --------------------------------------------------

    def dtype_in(self, t, allowed, what):
        tensor_type(self, t, what)
        name = _dtype_name(t.element_type)
        if name not in allowed:
            raise self.error(f"{what} must be one of {', '.join(allowed)}, got {t}")
        return t

    def dtype_attr(self, name, allowed):
        s = self.attributes[name]
        try:
            t = T.from_dtype_name(s)
        except (ValueError, T.TypeSyntaxError):
            t = None
        if t is None or _dtype_name(t) not in allowed:
            raise self.error(f"{name} \"{s}\" must be one of {', '.join(allowed)}")
        return t

    def axis_of(self, data, name="axis"):
        """The normalised axis attribute for `data` (0 for a scalar)."""
        axis = self.attributes[name]
        if data.rank == 0:
            if axis not in (0, -1):
                raise self.error(f"{name} {axis} is out of range for a scalar")
            return 0
        if not -data.rank <= axis < data.rank:
            raise self.error(f"{name} {axis} is out of range for rank {data.rank}")
        return axis % data.rank

    def param(self, t, what, elem, dim, axis_name="axis", vector=True):
        """A scale (f32) or zero point (i32): a scalar, one element, or (when
        `vector`) a 1-d tensor of `dim` values along the axis."""
        tensor_type(self, t, what)
        if t.element_type is not elem:
            raise self.error(f"{what} must be a tensor of {elem}, got {t}")
        if t.rank == 0 or (t.rank == 1 and t.shape[0] == 1):
            return t
        if t.rank != 1:
            raise self.error(f"{what} must be a scalar or a 1-d tensor, got {t}")
        if not vector:
            raise self.error(f"{what} must be a scalar, got {t}")
        n = t.shape[0]
        if n is not None and dim is not None and n != dim:
            raise self.error(f"{what} has {n} values but the data has {dim} along {axis_name} "
                             f"{self.attributes.get(axis_name, '')}".rstrip())
        return t

    def axis_param_dim(self, data, params, name="axis"):
        """The data's size along the axis when any of `params` is a vector
        (only then must the axis be valid, as in TVM), else None."""
        if all(p.rank == 0 or (p.rank == 1 and p.shape[0] == 1) for p in params if isinstance(p, T.TensorType)):
            return None
        return data.shape[self.axis_of(data, name)] if data.rank else 1

    def compute_axis(self, x, name="axis"):
        axis = self.attributes[name]
        return axis % x.ndim if x.ndim else 0


def positive_scales(op, *scales):
    """Scales must be positive and finite to quantize with; checked at
    evaluation because scales are operands."""
    for s in scales:
        a = np.asarray(s)
        if not np.all(np.isfinite(a)) or np.any(a <= 0):
            raise op.error(f"scales must be positive and finite, got {a.reshape(-1)[:8].tolist()}")


# -- quantize, dequantize, requantize ----------------------------------------------------

class QuantizeOp(QnnOp):
    """``qnn.quantize(%data, %output_scale, %output_zero_point) {axis = -1, out_dtype = "int8"}``"""

    __slots__ = ()
    name = "relay.qnn.quantize"
    OPERANDS = ("data", "output_scale", "output_zero_point")
    ATTRS = {"axis": Attr(INT, -1), "out_dtype": Attr(STR, "int8")}
    LAYOUT = "axis"
    AXIS_ATTRS = ("axis",)

    def type_relation(self, x, s, z):
        tensor_type(self, x, "data")
        if not T.is_float(x.element_type):
            raise self.error(f"data must be a floating-point tensor, got {x}")
        dim = self.axis_param_dim(x, (s, z))
        self.param(s, "output_scale", T.f32, dim)
        self.param(z, "output_zero_point", T.i32, dim)
        return x.with_element(self.dtype_attr("out_dtype", QUANTIZED))

    def compute(self, x, s, z):
        positive_scales(self, s)
        axis = self.compute_axis(x)
        out = self.results[0].type.dtype
        lo, hi = Q.float_bounds(*Q.qrange(out), x.dtype)
        sf = Q.per_axis(np.asarray(s, x.dtype), x.ndim, axis)
        zf = Q.per_axis(np.asarray(z).astype(x.dtype), x.ndim, axis)
        with np.errstate(all="ignore"):
            v = np.round(np.divide(x, sf)) + zf
        return np.minimum(np.maximum(v, x.dtype.type(lo)), x.dtype.type(hi)).astype(out)


class DequantizeOp(QnnOp):
    """``qnn.dequantize(%data, %input_scale, %input_zero_point) {axis = -1}``"""

    __slots__ = ()
    name = "relay.qnn.dequantize"
    OPERANDS = ("data", "input_scale", "input_zero_point")
    ATTRS = {"axis": Attr(INT, -1), "out_dtype": Attr(STR, "float32")}
    LAYOUT = "axis"
    AXIS_ATTRS = ("axis",)

    def type_relation(self, x, s, z):
        self.dtype_in(x, QUANTIZED, "data")
        dim = self.axis_param_dim(x, (s, z))
        self.param(s, "input_scale", T.f32, dim)
        self.param(z, "input_zero_point", T.i32, dim)
        return x.with_element(self.dtype_attr("out_dtype", ("float32", "float16", "float64")))

    def compute(self, x, s, z):
        axis = self.compute_axis(x)
        out = self.results[0].type.dtype
        v = x.astype(np.int32) - Q.per_axis(np.asarray(z, np.int32), x.ndim, axis)
        return v.astype(out) * Q.per_axis(np.asarray(s, np.float32).astype(out), x.ndim, axis)


class RequantizeOp(QnnOp):
    """``qnn.requantize(%data, %input_scale, %input_zero_point, %output_scale,
    %output_zero_point) {axis = -1, rounding = "None", compute_dtype = "None",
    out_dtype = "int8"}``"""

    __slots__ = ()
    name = "relay.qnn.requantize"
    OPERANDS = ("data", "input_scale", "input_zero_point", "output_scale", "output_zero_point")
    ATTRS = {
        "axis": Attr(INT, -1),
        "rounding": Attr(enum("None", *Q.ROUNDINGS), "None"),
        "compute_dtype": Attr(enum("None", *Q.COMPUTE_DTYPES), "None"),
        "out_dtype": Attr(STR, "int8"),
    }
    LAYOUT = "axis"
    AXIS_ATTRS = ("axis",)

    @property
    def effective_rounding(self) -> str:
        r = self.attributes["rounding"]
        return Q.DEFAULT_ROUNDING if r == "None" else r

    @property
    def effective_compute_dtype(self) -> str:
        c = self.attributes["compute_dtype"]
        return Q.DEFAULT_COMPUTE_DTYPE if c == "None" else c

    def type_relation(self, x, s_in, z_in, s_out, z_out):
        self.dtype_in(x, REQUANT_IN, "data")
        dim = self.axis_param_dim(x, (s_in, z_in, s_out, z_out))
        self.param(s_in, "input_scale", T.f32, dim)
        self.param(z_in, "input_zero_point", T.i32, dim)
        self.param(s_out, "output_scale", T.f32, dim)
        self.param(z_out, "output_zero_point", T.i32, dim)
        return x.with_element(self.dtype_attr("out_dtype", REQUANT_OUT))

    def compute(self, x, s_in, z_in, s_out, z_out):
        positive_scales(self, s_in, s_out)
        return Q.requantize(x, s_in, z_in, s_out, z_out, self.compute_axis(x), self.effective_rounding,
                            self.effective_compute_dtype, self.results[0].type.dtype)


# -- products: conv2d, dense, batch_matmul -------------------------------------------------

class QnnConv2DOp(QnnOp):
    """``qnn.conv2d(%data, %kernel, %input_zero_point, %kernel_zero_point,
    %input_scale, %kernel_scale) {nn.conv2d's attributes, out_dtype = "int32"}``"""

    __slots__ = ()
    name = "relay.qnn.conv2d"
    OPERANDS = ("data", "kernel", "input_zero_point", "kernel_zero_point", "input_scale", "kernel_scale")
    ATTRS = dict(conv_attrs(2), out_dtype=Attr(STR, "int32"))
    PATTERN = OpPattern.OUT_ELEMWISE_FUSABLE
    LAYOUT = "layout"
    LAYOUT_ATTRS = ("data_layout", "kernel_layout", "out_layout")
    # nn.conv2d's layout handling and shape relation, borrowed (not
    # inherited: passes that look for ConvOp must not mistake this op for
    # a float convolution)
    NDIM = 2
    TRANSPOSE = False
    spatial = ConvOp.spatial
    layouts = ConvOp.layouts

    def kernel_out_axis(self):
        _, kl, _ = self.layouts()
        if kl.is_blocked():
            raise self.error(f"kernel_layout {kl.name} is blocked; qnn.conv2d takes unblocked kernels")
        return kl.index("O")

    def type_relation(self, x, w, z_in, z_w, s_in, s_w):
        self.dtype_in(x, PRODUCT_IN, "data")
        self.dtype_in(w, PRODUCT_IN, "kernel")
        self.dtype_attr("out_dtype", ACCUMULATORS)
        out = ConvOp.type_relation(self, x, w.with_element(x.element_type))
        o = w.shape[self.kernel_out_axis()] if w.rank == 4 else None
        self.param(z_in, "input_zero_point", T.i32, None, vector=False)
        self.param(s_in, "input_scale", T.f32, None, vector=False)
        self.param(z_w, "kernel_zero_point", T.i32, o, "output channels")
        self.param(s_w, "kernel_scale", T.f32, o, "output channels")
        return out

    def compute(self, x, w, z_in, z_w, s_in, s_w):
        a = self.attributes
        dl, kl, ol = self.layouts()
        xs = x.astype(np.int64) - np.asarray(z_in, np.int64).reshape(())
        ws = w.astype(np.int64) - Q.per_axis(np.asarray(z_w, np.int64), 4, self.kernel_out_axis())
        y = conv_nd(convert_array(xs, dl.name, "NCHW"), convert_array(ws, kl.name, "OIHW"),
                    a["strides"], a["padding"], a["dilation"], a["groups"])
        return convert_array(y, "NCHW", ol.name).astype(self.results[0].type.dtype)


class QnnDenseOp(QnnOp):
    """``qnn.dense(%data, %weight, %input_zero_point, %kernel_zero_point,
    %input_scale, %kernel_scale) {units, out_dtype = "int32"}``; weight (N, K)."""

    __slots__ = ()
    name = "relay.qnn.dense"
    OPERANDS = ("data", "weight", "input_zero_point", "kernel_zero_point", "input_scale", "kernel_scale")
    ATTRS = {"units": Attr(optional(INT), None), "out_dtype": Attr(STR, "int32")}
    PATTERN = OpPattern.OUT_ELEMWISE_FUSABLE
    LAYOUT = "opaque"

    def type_relation(self, x, w, z_in, z_w, s_in, s_w):
        self.dtype_in(x, PRODUCT_IN, "data")
        self.dtype_in(w, PRODUCT_IN, "weight")
        self.dtype_attr("out_dtype", ACCUMULATORS)
        out = DenseOp.type_relation(self, x, w.with_element(x.element_type))
        units = w.shape[0]
        self.param(z_in, "input_zero_point", T.i32, None, vector=False)
        self.param(s_in, "input_scale", T.f32, None, vector=False)
        self.param(z_w, "kernel_zero_point", T.i32, units, "units")
        self.param(s_w, "kernel_scale", T.f32, units, "units")
        return out

    def compute(self, x, w, z_in, z_w, s_in, s_w):
        xs = x.astype(np.int64) - np.asarray(z_in, np.int64).reshape(())
        ws = w.astype(np.int64) - Q.per_axis(np.asarray(z_w, np.int64), 2, 0)
        return np.matmul(xs, ws.T).astype(self.results[0].type.dtype)


class QnnBatchMatmulOp(QnnOp):
    """``qnn.batch_matmul(%x, %y, %x_zero_point, %y_zero_point, %x_scale,
    %y_scale) {out_dtype = "int32", transpose_a = false, transpose_b = true}``;
    per-tensor parameters only, as TVM."""

    __slots__ = ()
    name = "relay.qnn.batch_matmul"
    OPERANDS = ("x", "y", "x_zero_point", "y_zero_point", "x_scale", "y_scale")
    ATTRS = {"out_dtype": Attr(STR, "int32"), "transpose_a": Attr(BOOL, False), "transpose_b": Attr(BOOL, True)}
    PATTERN = OpPattern.OUT_ELEMWISE_FUSABLE
    LAYOUT = "opaque"

    def type_relation(self, x, y, z_x, z_y, s_x, s_y):
        self.dtype_in(x, PRODUCT_IN, "x")
        self.dtype_in(y, PRODUCT_IN, "y")
        self.dtype_attr("out_dtype", ACCUMULATORS)
        out = BatchMatmulOp.type_relation(self, x, y.with_element(x.element_type))
        for t, what, e in ((z_x, "x_zero_point", T.i32), (z_y, "y_zero_point", T.i32),
                           (s_x, "x_scale", T.f32), (s_y, "y_scale", T.f32)):
            self.param(t, what, e, None, vector=False)
        return out

    def compute(self, x, y, z_x, z_y, s_x, s_y):
        xs = x.astype(np.int64) - np.asarray(z_x, np.int64).reshape(())
        ys = y.astype(np.int64) - np.asarray(z_y, np.int64).reshape(())
        if self.attributes["transpose_a"]:
            xs = xs.transpose(0, 2, 1)
        if self.attributes["transpose_b"]:
            ys = ys.transpose(0, 2, 1)
        return np.matmul(xs, ys).astype(self.results[0].type.dtype)


# -- elementwise binary: add, subtract, mul ---------------------------------------------------

class QnnBinaryOp(QnnOp):
    """``qnn.X(%lhs, %rhs, %lhs_scale, %lhs_zero_point, %rhs_scale,
    %rhs_zero_point, %output_scale, %output_zero_point) {lhs_axis = -1,
    rhs_axis = -1}``: numpy broadcasting, one integer dtype in and out."""

    __slots__ = ()
    OPERANDS = ("lhs", "rhs", "lhs_scale", "lhs_zero_point", "rhs_scale", "rhs_zero_point",
                "output_scale", "output_zero_point")
    ATTRS = {"lhs_axis": Attr(INT, -1), "rhs_axis": Attr(INT, -1)}
    LAYOUT = "broadcast"
    AXIS_ATTRS = ("lhs_axis", "rhs_axis")

    def type_relation(self, l, r, s_l, z_l, s_r, z_r, s_o, z_o):
        self.dtype_in(l, BINARY_IN, "lhs")
        self.dtype_in(r, BINARY_IN, "rhs")
        if l.element_type is not r.element_type:
            raise self.error(f"lhs and rhs must have one dtype, got {l} and {r}")
        dim_l = self.axis_param_dim(l, (s_l, z_l), "lhs_axis")
        dim_r = self.axis_param_dim(r, (s_r, z_r), "rhs_axis")
        self.param(s_l, "lhs_scale", T.f32, dim_l, "lhs_axis")
        self.param(z_l, "lhs_zero_point", T.i32, dim_l, "lhs_axis")
        self.param(s_r, "rhs_scale", T.f32, dim_r, "rhs_axis")
        self.param(z_r, "rhs_zero_point", T.i32, dim_r, "rhs_axis")
        self.param(s_o, "output_scale", T.f32, None, vector=False)
        self.param(z_o, "output_zero_point", T.i32, None, vector=False)
        return T.TensorType(broadcast_shapes(self, l.shape, r.shape), l.element_type)

    def upcast(self, x, s, z, s_o, z_o, axis_name):
        """TVM's RequantizeOrUpcast: one side in int32 at the output's scale
        and zero point (fixed point, UPWARD)."""
        return Q.requantize(x, s, z, s_o, z_o, self.compute_axis(x, axis_name), "UPWARD", "int64", np.int32)

    def saturate(self, v):
        out = self.results[0].type.dtype
        lo, hi = Q.qrange(out)
        return np.clip(v.astype(np.int64), lo, hi).astype(out)


class QnnAddOp(QnnBinaryOp):
    __slots__ = ()
    name = "relay.qnn.add"

    def compute(self, l, r, s_l, z_l, s_r, z_r, s_o, z_o):
        positive_scales(self, s_l, s_r, s_o)
        lq = self.upcast(l, s_l, z_l, s_o, z_o, "lhs_axis").astype(np.int64)
        rq = self.upcast(r, s_r, z_r, s_o, z_o, "rhs_axis").astype(np.int64)
        return self.saturate(lq + rq - np.int64(np.asarray(z_o).reshape(())))


class QnnSubtractOp(QnnBinaryOp):
    __slots__ = ()
    name = "relay.qnn.subtract"

    def compute(self, l, r, s_l, z_l, s_r, z_r, s_o, z_o):
        positive_scales(self, s_l, s_r, s_o)
        lq = self.upcast(l, s_l, z_l, s_o, z_o, "lhs_axis").astype(np.int64)
        rq = self.upcast(r, s_r, z_r, s_o, z_o, "rhs_axis").astype(np.int64)
        return self.saturate(lq - rq + np.int64(np.asarray(z_o).reshape(())))


class QnnMulOp(QnnBinaryOp):
    __slots__ = ()
    name = "relay.qnn.mul"

    def product_scale(self, l_rank, r_rank, s_l, s_r):
        """The float32 scale of ``(l - z_l) * (r - z_r)`` and the output axis it
        runs along (a vector scale of either side keeps its axis)."""
        rank = len(self.results[0].type.shape)
        sl, sr = np.asarray(s_l, np.float32), np.asarray(s_r, np.float32)
        axes = []
        if sl.size > 1:
            axes.append(self.attributes["lhs_axis"] % l_rank + rank - l_rank)
        if sr.size > 1:
            axes.append(self.attributes["rhs_axis"] % r_rank + rank - r_rank)
        if len(axes) == 2 and axes[0] != axes[1]:
            raise self.error("per-axis scales of lhs and rhs run along different output axes")
        flat = lambda a: a.reshape(()) if a.size == 1 else a.reshape(-1)  # noqa: E731
        with np.errstate(over="ignore"):   # an infinite product is reported where it is used (ScaleError)
            return (flat(sl) * flat(sr)).astype(np.float32), (axes[0] if axes else 0)

    def compute(self, l, r, s_l, z_l, s_r, z_r, s_o, z_o):
        positive_scales(self, s_l, s_r, s_o)
        lz = l.astype(np.int64) - Q.per_axis(np.asarray(z_l, np.int64), l.ndim, self.compute_axis(l, "lhs_axis"))
        rz = r.astype(np.int64) - Q.per_axis(np.asarray(z_r, np.int64), r.ndim, self.compute_axis(r, "rhs_axis"))
        prod = (lz * rz).astype(np.int32)
        scale, axis = self.product_scale(l.ndim, r.ndim, s_l, s_r)
        return Q.requantize(prod, scale, 0, s_o, z_o, axis, "UPWARD", "int64", self.results[0].type.dtype)


# -- concatenate -------------------------------------------------------------------------------

class QnnConcatenateOp(QnnOp):
    """``qnn.concatenate(%d0, .., %dn-1, %s0, .., %sn-1, %z0, .., %zn-1,
    %output_scale, %output_zero_point) {axis = 0}``"""

    __slots__ = ()
    name = "relay.qnn.concatenate"
    OPERANDS = ("*operands",)
    ATTRS = {"axis": Attr(INT, 0)}
    PATTERN = OpPattern.INJECTIVE
    LAYOUT = "axis"
    AXIS_ATTRS = ("axis",)

    @property
    def num_inputs(self) -> int:
        return (len(self.operands) - 2) // 3

    def split(self, items):
        """(data, scales, zero points, output scale, output zero point) of
        the flattened operand list `items` (values, types or arrays)."""
        n = (len(items) - 2) // 3
        return items[:n], items[n:2 * n], items[2 * n:3 * n], items[3 * n], items[3 * n + 1]

    def type_relation(self, *types):
        if len(types) < 5 or (len(types) - 2) % 3:
            raise self.error(f"expects 3n + 2 operands (n data, n scales, n zero points, the output scale "
                             f"and zero point), got {len(types)}")
        data, scales, zps, s_o, z_o = self.split(types)
        first = self.dtype_in(data[0], BINARY_IN, "data 0")
        rank = first.rank
        if rank == 0:
            raise self.error("cannot concatenate scalars")
        axis = self.attributes["axis"]
        if not -rank <= axis < rank:
            raise self.error(f"axis {axis} is out of range for rank {rank}")
        axis %= rank
        total = 0
        shape = list(first.shape)
        for i, t in enumerate(data):
            self.dtype_in(t, BINARY_IN, f"data {i}")
            if t.element_type is not first.element_type or t.rank != rank:
                raise self.error(f"data {i} is {t}, but data 0 is {first}: inputs share a rank and dtype")
            for d in range(rank):
                if d != axis and None not in (t.shape[d], shape[d]) and t.shape[d] != shape[d]:
                    raise self.error(f"data {i} has {t.shape[d]} along axis {d}, data 0 has {shape[d]}")
            total = None if total is None or t.shape[axis] is None else total + t.shape[axis]
            self.param(scales[i], f"input scale {i}", T.f32, None, vector=False)
            self.param(zps[i], f"input zero point {i}", T.i32, None, vector=False)
        self.param(s_o, "output_scale", T.f32, None, vector=False)
        self.param(z_o, "output_zero_point", T.i32, None, vector=False)
        shape[axis] = total
        return T.TensorType(tuple(shape), first.element_type)

    def compute(self, *arrays):
        data, scales, zps, s_o, z_o = self.split(arrays)
        positive_scales(self, s_o, *scales)
        out = self.results[0].type.dtype
        parts = [Q.requantize(d, s, z, s_o, z_o, 0, "UPWARD", "int64", out) for d, s, z in zip(data, scales, zps)]
        return np.concatenate(parts, axis=self.attributes["axis"] % data[0].ndim)


# -- the quantize pass's annotation -------------------------------------------------------------

QANNOTATE_KINDS = ("identity", "input", "weight", "activation")


class SimulatedQuantizeOp(QnnOp):
    """``annotation.simulated_quantize(%data, %dom_scale, %clip_min, %clip_max)
    {kind = "input", sign = true, rounding = "round", axis = -1}``"""

    __slots__ = ()
    name = "relay.annotation.simulated_quantize"
    OPERANDS = ("data", "dom_scale", "clip_min", "clip_max")
    ATTRS = {"kind": Attr(enum(*QANNOTATE_KINDS)), "sign": Attr(BOOL, True),
             "rounding": Attr(STR, "round"), "axis": Attr(INT, -1)}
    PATTERN = OpPattern.ELEMWISE
    LAYOUT = "axis"
    AXIS_ATTRS = ("axis",)

    def type_relation(self, x, s, lo, hi):
        tensor_type(self, x, "data")
        if not T.is_float(x.element_type):
            raise self.error(f"data must be a floating-point tensor, got {x}")
        self.param(s, "dom_scale", T.f32, self.axis_param_dim(x, (s,)))
        self.param(lo, "clip_min", T.f32, None, vector=False)
        self.param(hi, "clip_max", T.f32, None, vector=False)
        return x

    def compute(self, x, s, lo, hi):
        if self.attributes["kind"] == "identity":
            return x
        positive_scales(self, s)
        sf = Q.per_axis(np.asarray(s, x.dtype), x.ndim, self.compute_axis(x))
        lo = np.asarray(lo, x.dtype).reshape(())
        hi = np.asarray(hi, x.dtype).reshape(())
        with np.errstate(all="ignore"):
            return (np.round(np.minimum(np.maximum(x / sf, lo), hi)) * sf).astype(x.dtype)


__all__ = ["QuantizeOp", "DequantizeOp", "RequantizeOp", "QnnConv2DOp", "QnnDenseOp", "QnnBatchMatmulOp",
           "QnnAddOp", "QnnSubtractOp", "QnnMulOp", "QnnConcatenateOp", "SimulatedQuantizeOp"]
