"""Normalisations.

    %bn = nn.batch_norm(%x, %gamma, %beta, %mean, %var) {epsilon = 1e-05}
              : tuple<tensor<1x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>>
    %ln = nn.layer_norm(%x, %gamma, %beta) {axis = -1, epsilon = 1e-05}
    %gn = nn.group_norm(%x, %gamma, %beta) {num_groups = 8}
    %in = nn.instance_norm(%x, %gamma, %beta)

Attributes (TVM's): axis (the channel axis: 1, layer_norm -1), epsilon =
1e-05, center = true (add beta), scale = true (multiply by gamma);
group_norm also num_groups (required).  gamma and beta are 1-d, the size
of data's axis.

nn.batch_norm returns TVM's 3-tuple (out, moving_mean, moving_var); it is
the inference form, normalising with the moving statistics given, and the
two statistics come back unchanged.  layer_norm normalises over `axis`;
instance_norm over every axis but 0 (batch) and `axis`; group_norm over
each group of num_groups consecutive channels together with every axis but
0 and `axis`.  Variances are the biased (population) ones.  All four are
opaque to FuseOps, as in TVM: SimplifyInference expands them first.
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import BOOL, FLOAT, INT
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from .base import OpPattern, RelayOp, same_dtype, tensor_type
from .util import dims_match, norm_axis, shape_text

np = lazy_module("numpy")   # parsing and printing never need numpy


def norm_attrs(axis, groups=False):
    attrs = {"num_groups": Attr(INT)} if groups else {}
    attrs.update({"axis": Attr(INT, axis), "epsilon": Attr(FLOAT, 1e-5),
                  "center": Attr(BOOL, True), "scale": Attr(BOOL, True)})
    return attrs


class NormOp(RelayOp):
    __slots__ = ()
    PATTERN = OpPattern.OPAQUE
    PARAMS = ("gamma", "beta")

    def channel_axis(self, rank):
        return norm_axis(self, self.attributes["axis"], rank)

    def check(self, x, *params):
        tensor_type(self, x)
        if not T.is_float(x.element_type):
            raise self.error(f"expects floating-point data, got {x}")
        axis = self.channel_axis(x.rank)
        c = x.shape[axis]
        for name, p in zip(self.PARAMS, params):
            tensor_type(self, p, name)
            same_dtype(self, x, p)
            if p.rank != 1 or not dims_match(p.shape[0], c):
                raise self.error(f"{name} must be 1-d of size {shape_text([c])[1:-1]} (axis {axis} of the data), "
                                 f"got {p}")
        return axis

    def param(self, p, axis, ndim):
        shape = [1] * ndim
        shape[axis] = -1
        return p.astype(np.float64).reshape(shape)

    def affine(self, y, gamma, beta, axis):
        if self.attributes["scale"]:
            y = y * self.param(gamma, axis, y.ndim)
        if self.attributes["center"]:
            y = y + self.param(beta, axis, y.ndim)
        return y


class BatchNormOp(NormOp):
    __slots__ = ()
    name = "relay.nn.batch_norm"
    OPERANDS = ("data", "gamma", "beta", "moving_mean", "moving_var")
    ATTRS = norm_attrs(1)
    PARAMS = ("gamma", "beta", "moving_mean", "moving_var")
    LAYOUT = "axis"
    AXIS_ATTRS = ("axis",)

    def type_relation(self, x, gamma, beta, mean, var):
        self.check(x, gamma, beta, mean, var)
        return T.TupleType((x, mean, var))

    def compute(self, x, gamma, beta, mean, var):
        axis = self.channel_axis(x.ndim)
        with np.errstate(all="ignore"):   # a negative variance gives NaN, as it would compiled
            std = np.sqrt(self.param(var, axis, x.ndim) + self.attributes["epsilon"])
            y = (x - self.param(mean, axis, x.ndim)) / std
        return (self.affine(y, gamma, beta, axis).astype(x.dtype), mean.copy(), var.copy())


class ReducingNormOp(NormOp):
    """layer/instance/group norm: normalise over `reduce_axes`."""
    __slots__ = ()
    OPERANDS = ("data", "gamma", "beta")

    def type_relation(self, x, gamma, beta):
        self.check(x, gamma, beta)
        return x

    def normalize(self, z, axes):
        mean = z.mean(axis=axes, keepdims=True)
        var = ((z - mean) ** 2).mean(axis=axes, keepdims=True)
        with np.errstate(all="ignore"):
            return (z - mean) / np.sqrt(var + self.attributes["epsilon"])

    def compute(self, x, gamma, beta):
        axis = self.channel_axis(x.ndim)
        y = self.normalized(x.astype(np.float64), axis)
        return self.affine(y, gamma, beta, axis).astype(x.dtype)


class LayerNormOp(ReducingNormOp):
    __slots__ = ()
    name = "relay.nn.layer_norm"
    ATTRS = norm_attrs(-1)
    LAYOUT = "axis"
    AXIS_ATTRS = ("axis",)

    def normalized(self, z, axis):
        return self.normalize(z, (axis,))


class InstanceNormOp(ReducingNormOp):
    __slots__ = ()
    name = "relay.nn.instance_norm"
    ATTRS = norm_attrs(1)

    def type_relation(self, x, gamma, beta):
        self.check(x, gamma, beta)
        if x.rank < 2 or self.channel_axis(x.rank) == 0:
            raise self.error(f"expects data of rank >= 2 with the channel axis after the batch axis, got {x}")
        return x

    def normalized(self, z, axis):
        return self.normalize(z, tuple(i for i in range(1, z.ndim) if i != axis))


class GroupNormOp(ReducingNormOp):
    __slots__ = ()
    name = "relay.nn.group_norm"
    ATTRS = norm_attrs(1, groups=True)

    def type_relation(self, x, gamma, beta):
        axis = self.check(x, gamma, beta)
        if x.rank < 2 or axis == 0:
            raise self.error(f"expects data of rank >= 2 with the channel axis after the batch axis, got {x}")
        g, c = self.attributes["num_groups"], x.shape[axis]
        if g < 1 or (c is not None and c % g):
            raise self.error(f"{'?' if c is None else c} channels do not divide into num_groups = {g}")
        return x

    def normalized(self, z, axis):
        g = self.attributes["num_groups"]
        zc = np.moveaxis(z, axis, 1)
        shape = zc.shape
        zg = zc.reshape((shape[0], g, shape[1] // g) + shape[2:])
        y = self.normalize(zg, tuple(range(2, zg.ndim))).reshape(shape)
        return np.moveaxis(y, 1, axis)
