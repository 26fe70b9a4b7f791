"""Deformable convolution (v1, and v2 with a mask): ONNX DeformConv,
torchvision's deform_conv2d, TVM's nn.deformable_conv2d.

    %y = nn.deformable_conv2d(%x, %offset, %w[, %mask]) {strides = [1, 1], padding = [0, 0, 0, 0],
                                  dilation = [1, 1], deformable_groups = 1, groups = 1}
        x (N, C, H, W), w (O, C / groups, kH, kW), offset (N, G * kH * kW * 2, oH, oW),
        mask (N, G * kH * kW, oH, oW) with G = deformable_groups; y (N, O, oH, oW), oH and oW
        as a plain convolution's

Tap (i, j) of output (oh, ow) reads channel c (of offset group g = c / (C / G))
at y = oh * sh - pt + i * dh + offset[n, g*2K + 2k], x = ow * sw - pl + j * dw
+ offset[n, g*2K + 2k + 1] (k = i * kW + j, K = kH * kW), bilinearly between
the four pixels around it, a pixel outside the input counting 0; times
mask[n, g*K + k]; then the grouped convolution's sum with w.  Numpy, no TE
compute (the function runs in the interpreter; the build says so).
Pattern: opaque.
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import INT, INTS
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from .base import OpPattern, RelayOp, tensor_type

np = lazy_module("numpy")


class DeformableConv2DOp(RelayOp):
    __slots__ = ()
    name = "relay.nn.deformable_conv2d"
    OPERANDS = ("data", "offset", "weight", "*mask")
    ATTRS = {"strides": Attr(INTS, (1, 1)), "padding": Attr(INTS, (0, 0, 0, 0)), "dilation": Attr(INTS, (1, 1)),
             "deformable_groups": Attr(INT, 1), "groups": Attr(INT, 1)}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x, off, w, *mask):
        for t, what in ((x, "data"), (off, "offset"), (w, "weight"), *((m, "mask") for m in mask)):
            tensor_type(self, t, what)
            if t.rank != 4:
                raise self.error(f"expects a 4-d {what}, got {t}")
        if len(mask) > 1:
            raise self.error(f"takes at most one mask, got {len(mask)}")
        a = self.attributes
        (sh, sw), (dh, dw), pad = a["strides"], a["dilation"], a["padding"]
        g, dg = a["groups"], a["deformable_groups"]
        if len(a["strides"]) != 2 or len(a["dilation"]) != 2 or len(pad) != 4 or min(sh, sw, dh, dw) < 1 \
                or min(pad) < 0 or g < 1 or dg < 1:
            raise self.error("needs 2 positive strides and dilations, 4 padding values >= 0, groups >= 1")
        n, c, h, wd = x.shape
        o, cg, kh, kw = w.shape
        if None in (c, h, wd, o, cg, kh, kw):
            raise self.error("needs static channels, spatial sizes and kernel")
        if c % g or o % g or cg != c // g or c % dg:
            raise self.error(f"data has {c} channels, weight {o} x {cg}: groups {g} and deformable_groups "
                             f"{dg} must divide them (weight's second dimension C / groups)")
        oh = (h + pad[0] + pad[2] - dh * (kh - 1) - 1) // sh + 1
        ow = (wd + pad[1] + pad[3] - dw * (kw - 1) - 1) // sw + 1
        if oh < 1 or ow < 1:
            raise self.error(f"the kernel ({kh}x{kw}, dilated) does not fit the padded input {h}x{wd}")
        want = (n, dg * kh * kw * 2, oh, ow)
        if tuple(off.shape) != want:
            raise self.error(f"offset must be {list(want)}, got {off}")
        if mask and tuple(mask[0].shape) != (n, dg * kh * kw, oh, ow):
            raise self.error(f"mask must be {[n, dg * kh * kw, oh, ow]}, got {mask[0]}")
        if len({t.element_type for t in (x, off, w, *mask)}) != 1 or not T.is_float(x.element_type):
            raise self.error("takes float operands of one type")
        return T.TensorType((n, o, oh, ow), x.element_type)

    def compute(self, x, off, w, *mask):
        a = self.attributes
        (sh, sw), (dh, dw), (pt, pl) = a["strides"], a["dilation"], a["padding"][:2]
        g, dg = a["groups"], a["deformable_groups"]
        n, c, h, wd = x.shape
        o, cg, kh, kw = w.shape
        oh, ow = off.shape[2:]
        k = kh * kw
        xf = x.astype(np.float64).reshape(n, dg, c // dg, h, wd)
        off = off.astype(np.float64).reshape(n, dg, k, 2, oh, ow)
        msk = mask[0].astype(np.float64).reshape(n, dg, k, oh, ow) if mask else None
        ni = np.arange(n)[:, None, None, None]
        gi = np.arange(dg)[None, :, None, None]
        out = np.zeros((n, g, o // g, oh, ow))
        wg = w.astype(np.float64).reshape(g, o // g, cg, kh, kw)
        for t in range(k):
            i, j = divmod(t, kw)
            y = (np.arange(oh) * sh - pt + i * dh)[:, None] + off[:, :, t, 0]      # (n, dg, oh, ow)
            xx = (np.arange(ow) * sw - pl + j * dw)[None, :] + off[:, :, t, 1]
            y0, x0 = np.floor(y), np.floor(xx)
            col = 0
            for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
                for xc, wx in ((x0, 1 - (xx - x0)), (x0 + 1, xx - x0)):
                    inside = (yy >= 0) & (yy < h) & (xc >= 0) & (xc < wd)
                    yi = np.clip(yy, 0, h - 1).astype(np.int64)
                    xi = np.clip(xc, 0, wd - 1).astype(np.int64)
                    v = xf[ni, gi, :, yi, xi]                                          # (n, dg, oh, ow, C/dg)
                    col = col + v * (wy * wx * inside)[..., None]
            if msk is not None:
                col = col * msk[:, :, t][..., None]
            col = np.moveaxis(col, -1, 2).reshape(n, g, cg, oh, ow)                  # channels by conv group
            out += np.einsum("ngchw,goc->ngohw", col, wg[:, :, :, i, j])
        return out.reshape(n, o, oh, ow).astype(x.dtype)
