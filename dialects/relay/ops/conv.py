"""Convolutions: conv1d, conv2d, conv3d and their transposes.

    %c = nn.conv2d(%x, %w) {strides = [2, 2], padding = [3, 3, 3, 3]} : tensor<1x64x112x112xf32>
    %t = nn.conv2d_transpose(%x, %w) {strides = [2, 2], output_padding = [1, 1]}

Attributes (TVM's names and defaults):

    strides = [1, ...]        one per spatial axis
    padding = [0, ...]        1, ndim or 2*ndim values, printed as 2*ndim: all the
                              befores then all the afters ([top, left, bottom, right])
    dilation = [1, ...]
    groups = 1                depthwise: groups = channels
    channels, kernel_size     optional; checked against the weight when given
    data_layout               NCW | NWC, NCHW | NHWC | blocked NCHW16c, NCDHW | NDHWC
    kernel_layout             any arrangement of OIW / OIHW / OIDHW (HWIO, OHWI, HWOI,
                              blocked OIHW16i16o); for the transposes of IOW / IOHW / IODHW
    out_layout = ""           "" = data_layout
    out_dtype = ""            "" = the operands' dtype (int8 in, int32 out for qnn)
    output_padding = [0, ...] transposes only: extra rows at the end, < strides

Pattern out-elemwise-fusable; layout rule "layout" (the layouts are
attributes, so ConvertLayout rewrites the op itself).  The reference
computes in the primal layout (NC + spatial, OI + spatial) and converts.

    %c = nn.contrib_conv2d_pack(%u, %wp) {kernel_layout = "OHWI32o4i", strides = [1, 1]}

the int8 conv2d that x86's vpdpbusd computes (--alter-op-layout makes it):
NHWC ui8 data (padded before, by nn.pad), the weight i32 words
(O / n, KH, KW, I / 4, n), ``wp[o / n, ry, rx, i / 4, o % n]`` holding the
i8 ``w[o, i .. i + 3, ry, rx]`` (byte 0 the lowest), out NHWC int32; no
padding, one group; strides, dilation.
"""

from __future__ import annotations

import itertools

from ....ir import types as T
from ....ir.attrkinds import INT, STR, optional
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from ..layouts import Layout, LayoutError, convert_array
from .base import OpPattern, RelayOp, ints_at_least, out_dtype, same_dtype, tensor_type
from .util import accumulation_dtype, padding_kind, spatial_kind, word_bytes

np = lazy_module("numpy")   # parsing and printing never need numpy

SPATIAL = {1: "W", 2: "HW", 3: "DHW"}


def normalize_padding(p):
    """conv2d padding as four values (top, left, bottom, right)."""
    return padding_kind(2).coerce(p)


PADDING = padding_kind(2)


def conv_attrs(ndim, transpose=False):
    sp = SPATIAL[ndim]
    attrs = {
        "strides": Attr(spatial_kind(ndim), (1,) * ndim),
        "padding": Attr(padding_kind(ndim), (0,) * (2 * ndim)),
        "dilation": Attr(spatial_kind(ndim), (1,) * ndim),
        "groups": Attr(INT, 1),
        "channels": Attr(optional(INT), None),
        "kernel_size": Attr(optional(spatial_kind(ndim)), None),
        "data_layout": Attr(STR, "NC" + sp),
        "kernel_layout": Attr(STR, ("IO" if transpose else "OI") + sp),
        "out_layout": Attr(STR, ""),
    }
    if transpose:
        attrs["output_padding"] = Attr(spatial_kind(ndim), (0,) * ndim)
    attrs["out_dtype"] = Attr(STR, "")
    return attrs


class ConvOp(RelayOp):
    """Shared type relation and reference of the convolutions."""
    __slots__ = ()
    OPERANDS = ("data", "weight")
    PATTERN = OpPattern.OUT_ELEMWISE_FUSABLE
    LAYOUT = "layout"
    LAYOUT_ATTRS = ("data_layout", "kernel_layout", "out_layout")
    NDIM = 2
    TRANSPOSE = False

    @property
    def spatial(self):
        return SPATIAL[self.NDIM]

    def layouts(self):
        a = self.attributes
        sp = self.spatial
        try:
            d, k = Layout(a["data_layout"]), Layout(a["kernel_layout"])
            o = Layout(a["out_layout"] or a["data_layout"])
        except LayoutError as e:
            raise self.error(str(e)) from None
        if sorted(d.primal) != sorted("NC" + sp):
            raise self.error(f"data_layout {d.name} is not a layout of N, C and {', '.join(sp)}")
        if sorted(k.primal) != sorted("OI" + sp):
            raise self.error(f"kernel_layout {k.name} is not a layout of O, I and {', '.join(sp)}")
        if sorted(o.primal) != sorted("NC" + sp):
            raise self.error(f"out_layout {o.name} is not a layout of N, C and {', '.join(sp)}")
        return d, k, o

    def check_attrs(self):
        ints_at_least(self, "strides", 1)
        ints_at_least(self, "dilation", 1)
        ints_at_least(self, "padding", 0)
        ints_at_least(self, "output_padding", 0)
        ints_at_least(self, "kernel_size", 1)
        ints_at_least(self, "channels", 1)

    def type_relation(self, x, w):
        tensor_type(self, x)
        tensor_type(self, w, "weight")
        e = same_dtype(self, x, w)
        a = self.attributes
        dl, kl, ol = self.layouts()
        if x.rank != len(dl.axes) or w.rank != len(kl.axes):
            raise self.error(f"expects {len(dl.axes)}-d data ({dl.name}) and a {len(kl.axes)}-d weight "
                             f"({kl.name}), got {x} and {w}")
        try:
            ds, ks = dl.primal_shape(x.shape), kl.primal_shape(w.shape)
        except LayoutError as err:
            raise self.error(str(err)) from None
        groups = a["groups"]
        if groups < 1:
            raise self.error(f"groups must be positive, got {groups}")
        c, o, i = ds["C"], ks["O"], ks["I"]
        sp = self.spatial
        kdims = tuple(ks[s] for s in sp)
        if self.TRANSPOSE:
            # weight (I, O / groups, k...): I is the data's channels
            if c is not None and i is not None and c != i:
                raise self.error(f"data has {c} channels but the kernel takes {i}")
            if i is not None and i % groups:
                raise self.error(f"{i} input channels do not divide into {groups} groups")
            oc = None if o is None else o * groups
        else:
            if c is not None and i is not None and c != i * groups:
                raise self.error(f"data has {c} channels but the kernel takes {i} per group x {groups} group(s)")
            if o is not None and o % groups:
                raise self.error(f"{o} output channels do not divide into {groups} groups")
            oc = o
        if a.get("channels") is not None and oc is not None and a["channels"] != oc:
            raise self.error(f"channels = {a['channels']} but the kernel gives {oc} output channels")
        if a.get("kernel_size") is not None and None not in kdims and kdims != tuple(a["kernel_size"]):
            raise self.error(f"kernel_size = {list(a['kernel_size'])} but the kernel is {'x'.join(map(str, kdims))}")
        strides, dilation, pad = a["strides"], a["dilation"], a["padding"]
        nd = self.NDIM
        if min(strides + dilation) < 1 or min(pad) < 0:
            raise self.error("strides and dilation must be positive and padding non-negative")
        opad = a.get("output_padding", (0,) * nd)
        for j in range(nd):
            if not 0 <= opad[j] < max(strides[j], dilation[j]):
                raise self.error(f"output_padding {list(opad)} must be non-negative and smaller than the strides "
                                 f"{list(strides)}")
        out = {"N": ds["N"], "C": oc}
        for j, s in enumerate(sp):
            size, k = ds[s], ks[s]
            if size is None or k is None:
                out[s] = None
                continue
            if self.TRANSPOSE:
                v = (size - 1) * strides[j] - pad[j] - pad[nd + j] + dilation[j] * (k - 1) + opad[j] + 1
            else:
                v = (size + pad[j] + pad[nd + j] - dilation[j] * (k - 1) - 1) // strides[j] + 1
            if v < 1:
                raise self.error(f"output would be empty along {s}: input {size}, kernel {k}, "
                                 f"dilation {dilation[j]}, padding {pad[j]}+{pad[nd + j]}")
            out[s] = v
        try:
            shape = ol.shape_from_primal(out)
        except LayoutError as err:
            raise self.error(str(err)) from None
        return T.TensorType(shape, out_dtype(self, e))

    def compute(self, x, w):
        a = self.attributes
        dl, kl, ol = self.layouts()
        sp = self.spatial
        xn = convert_array(x, dl.name, "NC" + sp)
        wn = convert_array(w, kl.name, ("IO" if self.TRANSPOSE else "OI") + sp)
        dt = self.results[0].type.dtype
        acc = accumulation_dtype(dt)
        if self.TRANSPOSE:
            y = conv_transpose_nd(xn.astype(acc), wn.astype(acc), a["strides"], a["padding"], a["dilation"],
                                  a["groups"], a["output_padding"])
        else:
            y = conv_nd(xn.astype(acc), wn.astype(acc), a["strides"], a["padding"], a["dilation"], a["groups"])
        return convert_array(y.astype(dt, copy=False), "NC" + sp, ol.name)


def _conv(name, ndim, transpose=False):
    cls = type(name, (ConvOp,), {
        "__slots__": (), "name": "relay.nn." + name, "NDIM": ndim, "TRANSPOSE": transpose,
        "ATTRS": conv_attrs(ndim, transpose), "__doc__": f"``nn.{name}(%data, %weight)``"})
    return cls


Conv1DOp = _conv("conv1d", 1)
Conv2DOp = _conv("conv2d", 2)
Conv3DOp = _conv("conv3d", 3)
Conv1DTransposeOp = _conv("conv1d_transpose", 1, True)
Conv2DTransposeOp = _conv("conv2d_transpose", 2, True)
Conv3DTransposeOp = _conv("conv3d_transpose", 3, True)


class Conv2DPackOp(RelayOp):
    """``nn.contrib_conv2d_pack(%data, %weight)``: module docstring."""
    __slots__ = ()
    name = "relay.nn.contrib_conv2d_pack"
    OPERANDS = ("data", "weight")
    ATTRS = {"strides": Attr(spatial_kind(2), (1, 1)), "dilation": Attr(spatial_kind(2), (1, 1)),
             "kernel_layout": Attr(STR, "OHWI16o4i")}
    PATTERN = OpPattern.OUT_ELEMWISE_FUSABLE

    def check_attrs(self):
        ints_at_least(self, "strides", 1)
        ints_at_least(self, "dilation", 1)

    def panel(self):
        """n of kernel_layout "OHWI{n}o4i"."""
        import re
        layout = self.attributes["kernel_layout"]
        m = re.fullmatch(r"OHWI([1-9][0-9]*)o4i", layout)
        if m is None:
            raise self.error(f"kernel_layout must be OHWI<n>o4i (i32 words of four input channels), got '{layout}'")
        return int(m.group(1))

    def type_relation(self, x, w):
        tensor_type(self, x)
        tensor_type(self, w, "weight")
        n = self.panel()
        if x.element_type is not T.u8 or w.element_type is not T.i32:
            raise self.error(f"takes NHWC ui8 data and i32 words of i8 weights, got {x.element_type} data and a "
                             f"{w.element_type} weight")
        if x.rank != 4 or w.rank != 5:
            raise self.error(f"expects 4-d NHWC data and a 5-d weight (O / {n}, KH, KW, I / 4, {n}), "
                             f"got {x} and {w}")
        if not x.is_static or not w.is_static:
            raise self.error(f"needs static shapes, not dynamic ones, got {x} and {w}")
        if w.shape[4] != n:
            raise self.error(f"kernel_layout packs {n} output channels, but the weight's last axis is {w.shape[4]}")
        if x.shape[3] != 4 * w.shape[3]:
            raise self.error(f"data has {x.shape[3]} channels but the weight's words hold {4 * w.shape[3]}")
        (sh, sw), (dh, dw) = self.attributes["strides"], self.attributes["dilation"]
        oh = (x.shape[1] - dh * (w.shape[1] - 1) - 1) // sh + 1
        ow = (x.shape[2] - dw * (w.shape[2] - 1) - 1) // sw + 1
        if oh < 1 or ow < 1:
            raise self.error(f"output would be empty: input {x.shape[1]}x{x.shape[2]}, kernel "
                             f"{w.shape[1]}x{w.shape[2]}")
        return T.TensorType((x.shape[0], oh, ow, w.shape[0] * n), T.i32)

    def compute(self, x, wp):
        a = self.attributes
        nb, kh, kw, iw, n = wp.shape
        w = word_bytes(wp).transpose(0, 4, 3, 5, 1, 2).reshape(nb * n, iw * 4, kh, kw)   # OIHW
        y = conv_nd(x.transpose(0, 3, 1, 2).astype(np.int64), w.astype(np.int64), a["strides"], (0, 0, 0, 0),
                    a["dilation"], 1)
        return y.transpose(0, 2, 3, 1).astype(np.int32)


# -- references ------------------------------------------------------------------------

def conv_nd(x, w, strides, padding, dilation, groups):
    """x (N, C, *S), w (O, C / groups, *K): one einsum per kernel tap over all
    groups at once, in x's dtype."""
    nd = x.ndim - 2
    n, c = x.shape[:2]
    o, ig = w.shape[:2]
    ks = w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(padding[j], padding[nd + j]) for j in range(nd)])
    outs = [(xp.shape[2 + j] - dilation[j] * (ks[j] - 1) - 1) // strides[j] + 1 for j in range(nd)]
    xg = xp.reshape((n, groups, ig) + xp.shape[2:])
    wg = w.reshape((groups, o // groups, ig) + tuple(ks))
    acc = np.zeros((n, groups, o // groups) + tuple(outs), dtype=x.dtype)
    for tap in itertools.product(*[range(k) for k in ks]):
        idx = tuple(slice(t * d, t * d + s * (m - 1) + 1, s) for t, d, s, m in zip(tap, dilation, strides, outs))
        patch = xg[(slice(None),) * 3 + idx]
        acc += np.einsum("ngc...,goc->ngo...", patch, wg[(Ellipsis,) + tap])
    return acc.reshape((n, o) + tuple(outs))


def conv2d_nchw(x, w, strides, padding, dilation, groups):
    """Reference conv2d in NCHW / OIHW; padding is (top, left, bottom, right)."""
    return conv_nd(x, w, strides, padding, dilation, groups)


def conv_transpose_nd(x, w, strides, padding, dilation, groups, output_padding):
    """x (N, C, *S), w (C, O / groups, *K): every input pixel scatters its
    kernel-weighted value to the output (the adjoint of conv_nd); then the
    padding is cropped off."""
    nd = x.ndim - 2
    n, c = x.shape[:2]
    og = w.shape[1]
    ks = w.shape[2:]
    ins = x.shape[2:]
    full = [(ins[j] - 1) * strides[j] + dilation[j] * (ks[j] - 1) + 1 + output_padding[j] for j in range(nd)]
    y = np.zeros((n, groups, og) + tuple(full), dtype=x.dtype)
    xg = x.reshape((n, groups, c // groups) + tuple(ins))
    wg = w.reshape((groups, c // groups, og) + tuple(ks))
    for tap in itertools.product(*[range(k) for k in ks]):
        idx = tuple(slice(t * d, t * d + s * (m - 1) + 1, s) for t, d, s, m in zip(tap, dilation, strides, ins))
        y[(slice(None),) * 3 + idx] += np.einsum("ngc...,gco->ngo...", xg, wg[(Ellipsis,) + tap])
    crop = tuple(slice(padding[j], full[j] - padding[nd + j]) for j in range(nd))
    return y[(slice(None),) * 3 + crop].reshape((n, groups * og) + tuple(f - padding[j] - padding[nd + j]
                                                                          for j, f in enumerate(full)))


__all__ = ["Conv1DOp", "Conv2DOp", "Conv3DOp", "Conv1DTransposeOp", "Conv2DTransposeOp", "Conv3DTransposeOp",
           "conv_nd", "conv_transpose_nd", "conv2d_nchw", "normalize_padding", "PADDING"]
