"""Neural-network operators: dense, bias_add, conv2d.

    %d = nn.dense(%x, %w) : tensor<1x1000xf32>                   x: (..., K), w: (N, K)
    %b = nn.bias_add(%d, %bias) {axis = 1} : tensor<1x1000xf32>
    %c = nn.conv2d(%x, %w) {strides = [2, 2], padding = [3, 3, 3, 3]} : tensor<1x64x112x112xf32>

conv2d takes TVM's attributes and defaults; ``padding`` is normalised to
four values (top, left, bottom, right); layouts NCHW / NHWC for data and
OIHW / HWIO / OHWI for the kernel.
"""

from __future__ import annotations

from ....ir.lazy import lazy_module

from ....ir import types as T
from ....ir.attrkinds import INT, STR, ints, optional
from ....ir.core import Attr
from ..layouts import Layout, LayoutError, convert_array
from .base import OpPattern, RelayOp, out_dtype, same_dtype, tensor_type

np = lazy_module("numpy")   # parsing and printing never need numpy


class DenseOp(RelayOp):
    __slots__ = ()
    name = "relay.nn.dense"
    OPERANDS = ("data", "weight")
    ATTRS = {"units": Attr(optional(INT), None), "out_dtype": Attr(STR, "")}
    PATTERN = OpPattern.OUT_ELEMWISE_FUSABLE

    def type_relation(self, x, w):
        tensor_type(self, x)
        tensor_type(self, w)
        e = same_dtype(self, x, w)
        if w.rank != 2 or x.rank < 1:
            raise self.error(f"expects data of rank >= 1 and a 2-d weight, got {x} and {w}")
        k, wk = x.shape[-1], w.shape[1]
        if k is not None and wk is not None and k != wk:
            raise self.error(f"reduction dimensions differ: data has {k}, weight has {wk}")
        units = self.attributes.get("units")
        if units is not None and w.shape[0] is not None and units != w.shape[0]:
            raise self.error(f"units = {units} but the weight has {w.shape[0]} rows")
        return T.TensorType(x.shape[:-1] + (w.shape[0],), out_dtype(self, e))

    def compute(self, x, w):
        dt = self.results[0].type.dtype
        return np.matmul(x.astype(dt), w.T.astype(dt))


class BiasAddOp(RelayOp):
    __slots__ = ()
    name = "relay.nn.bias_add"
    OPERANDS = ("data", "bias")
    ATTRS = {"axis": Attr(INT, 1)}
    PATTERN = OpPattern.BROADCAST

    def norm_axis(self, rank):
        axis = self.attributes["axis"]
        if not -rank <= axis < rank:
            raise self.error(f"axis {axis} is out of range for rank {rank}")
        return axis % rank

    def type_relation(self, x, b):
        tensor_type(self, x)
        tensor_type(self, b)
        same_dtype(self, x, b)
        axis = self.norm_axis(x.rank)
        if b.rank != 1 or (x.shape[axis] is not None and b.shape[0] is not None and b.shape[0] != x.shape[axis]):
            raise self.error(f"bias must be 1-d of size {x.shape[axis]} (axis {axis} of the data), got {b}")
        return x

    def compute(self, x, b):
        axis = self.norm_axis(x.ndim)
        shape = [1] * x.ndim
        shape[axis] = b.shape[0]
        return (x + b.reshape(shape)).astype(x.dtype, copy=False)


def normalize_padding(p):
    p = tuple(p)
    if len(p) == 1:
        return p * 4
    if len(p) == 2:
        return (p[0], p[1], p[0], p[1])
    return p


PADDING = ints(1, 2, 4)
PADDING.coerce = lambda v: normalize_padding(v) if isinstance(v, (list, tuple)) else v


class Conv2DOp(RelayOp):
    __slots__ = ()
    name = "relay.nn.conv2d"
    OPERANDS = ("data", "weight")
    ATTRS = {
        "strides": Attr(ints(2), (1, 1)),
        "padding": Attr(PADDING, (0, 0, 0, 0)),
        "dilation": Attr(ints(2), (1, 1)),
        "groups": Attr(INT, 1),
        "channels": Attr(optional(INT), None),
        "kernel_size": Attr(optional(ints(2)), None),
        "data_layout": Attr(STR, "NCHW"),
        "kernel_layout": Attr(STR, "OIHW"),
        "out_layout": Attr(STR, ""),
        "out_dtype": Attr(STR, ""),
    }
    PATTERN = OpPattern.OUT_ELEMWISE_FUSABLE

    def layouts(self):
        a = self.attributes
        try:
            d, k = Layout(a["data_layout"]), Layout(a["kernel_layout"])
            o = Layout(a["out_layout"] or a["data_layout"])
        except LayoutError as e:
            raise self.error(str(e)) from None
        if d.primal not in ("NCHW", "NHWC") or d.is_blocked():
            raise self.error(f"data_layout {d.name} is not supported (NCHW or NHWC)")
        if sorted(k.primal) != sorted("OIHW") or k.is_blocked():
            raise self.error(f"kernel_layout {k.name} is not supported (a permutation of OIHW)")
        if sorted(o.primal) != sorted("NCHW") or o.is_blocked():
            raise self.error(f"out_layout {o.name} is not supported")
        return d, k, o

    def type_relation(self, x, w):
        tensor_type(self, x)
        tensor_type(self, w)
        e = same_dtype(self, x, w)
        if x.rank != 4 or w.rank != 4:
            raise self.error(f"expects 4-d data and weight, got {x} and {w}")
        a = self.attributes
        dl, kl, ol = self.layouts()
        ds, ks = dl.primal_shape(x.shape), kl.primal_shape(w.shape)
        groups = a["groups"]
        if groups < 1:
            raise self.error(f"groups must be positive, got {groups}")
        n, c, h, wd = ds["N"], ds["C"], ds["H"], ds["W"]
        o, i, kh, kw = ks["O"], ks["I"], ks["H"], ks["W"]
        if c is not None and i is not None and c != i * groups:
            raise self.error(f"data has {c} channels but the kernel takes {i} per group x {groups} group(s)")
        if o is not None and o % groups:
            raise self.error(f"{o} output channels do not divide into {groups} groups")
        if a.get("channels") is not None and o is not None and a["channels"] != o:
            raise self.error(f"channels = {a['channels']} but the kernel has {o} output channels")
        if a.get("kernel_size") is not None and (kh, kw) != tuple(a["kernel_size"]):
            raise self.error(f"kernel_size = {list(a['kernel_size'])} but the kernel is {kh}x{kw}")
        sh, sw = a["strides"]
        dh, dw = a["dilation"]
        pt, pl, pb, pr = a["padding"]
        if min(sh, sw, dh, dw) < 1 or min(pt, pl, pb, pr) < 0:
            raise self.error("strides and dilation must be positive and padding non-negative")

        def out(size, k, s, d, p0, p1):
            if size is None or k is None:
                return None
            v = (size + p0 + p1 - d * (k - 1) - 1) // s + 1
            if v < 1:
                raise self.error(f"output would be empty: input {size}, kernel {k}, dilation {d}, padding {p0}+{p1}")
            return v
        oh = out(h, kh, sh, dh, pt, pb)
        ow = out(wd, kw, sw, dw, pl, pr)
        return T.TensorType(ol.shape_from_primal({"N": n, "C": o, "H": oh, "W": ow}), out_dtype(self, e))

    def compute(self, x, w):
        a = self.attributes
        dl, kl, ol = self.layouts()
        xn = convert_array(x, dl.name, "NCHW")
        wn = convert_array(w, kl.name, "OIHW")
        dt = self.results[0].type.dtype
        y = conv2d_nchw(xn.astype(dt), wn.astype(dt), a["strides"], a["padding"], a["dilation"], a["groups"])
        return convert_array(y, "NCHW", ol.name)


def conv2d_nchw(x, w, strides, padding, dilation, groups):
    """Reference conv2d: one tensordot per kernel tap, in the input's precision."""
    n, c, h, wd = x.shape
    o, i, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilation
    pt, pl, pb, pr = padding
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    y = np.zeros((n, o, oh, ow), dtype=x.dtype)
    for g in range(groups):
        xg = xp[:, g * i:(g + 1) * i]
        wg = w[g * og:(g + 1) * og]
        acc = np.zeros((n, og, oh, ow), dtype=x.dtype)
        for ky in range(kh):
            for kx in range(kw):
                patch = xg[:, :, ky * dh: ky * dh + sh * (oh - 1) + 1: sh, kx * dw: kx * dw + sw * (ow - 1) + 1: sw]
                acc += np.einsum("nchw,oc->nohw", patch, wg[:, :, ky, kx])
        y[:, g * og:(g + 1) * og] = acc
    return y
