"""vision.roi_align: ONNX RoiAlign (torchvision's roi_align for "avg").

    %y = vision.roi_align(%x, %rois, %batch) {pooled_size = [7, 7], spatial_scale = 1.0,
                                               sample_ratio = 0, mode = "avg", half_pixel = true}

x (N, C, H, W), rois (R, 4) as [x1, y1, x2, y2] in input coordinates
(times spatial_scale), batch (R) the image of each; y (R, C, ph, pw).  Each
bin of a box is sampled on a grid of sample_ratio points per axis (0: ceil
of the bin's size), each sample bilinear (a sample more than a pixel
outside reads 0; one at the edge is clamped); "avg" averages the samples,
"max" takes the largest weighted corner of any sample (ONNX's rule).
half_pixel shifts boxes by half a pixel; without it a box is at least
1 x 1.  It runs on numpy (no TE compute yet).  Pattern: opaque.
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import BOOL, FLOAT, INT, enum, ints
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from .base import OpPattern, RelayOp, tensor_type

np = lazy_module("numpy")


class RoiAlignOp(RelayOp):
    __slots__ = ()
    name = "relay.vision.roi_align"
    OPERANDS = ("data", "rois", "batch_indices")
    ATTRS = {"pooled_size": Attr(ints(2)), "spatial_scale": Attr(FLOAT, 1.0), "sample_ratio": Attr(INT, 0),
             "mode": Attr(enum("avg", "max"), "avg"), "half_pixel": Attr(BOOL, True)}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x, rois, batch):
        tensor_type(self, x)
        tensor_type(self, rois, "rois")
        tensor_type(self, batch, "batch_indices")
        if x.rank != 4 or rois.rank != 2 or rois.shape[1] not in (None, 4) or batch.rank != 1:
            raise self.error(f"expects data (N, C, H, W), rois (R, 4) and batch_indices (R), got {x}, {rois}, {batch}")
        ph, pw = self.attributes["pooled_size"]
        if ph < 1 or pw < 1:
            raise self.error(f"pooled_size must be positive, got {[ph, pw]}")
        return x.with_shape((rois.shape[0], x.shape[1], ph, pw))

    def compute(self, x, rois, batch):
        a = self.attributes
        ph, pw = a["pooled_size"]
        scale, ratio, half, mode = a["spatial_scale"], a["sample_ratio"], a["half_pixel"], a["mode"]
        _, C, H, W = x.shape
        out = np.zeros((rois.shape[0], C, ph, pw))
        off = 0.5 if half else 0.0
        for r in range(rois.shape[0]):
            img = x[int(batch[r])].astype(np.float64).reshape(C, H * W)
            x1, y1, x2, y2 = (float(v) * scale - off for v in rois[r])
            rw, rh = x2 - x1, y2 - y1
            if not half:
                rw, rh = max(rw, 1.0), max(rh, 1.0)
            bh, bw = rh / ph, rw / pw
            gh = ratio if ratio > 0 else int(np.ceil(rh / ph))
            gw = ratio if ratio > 0 else int(np.ceil(rw / pw))
            count = max(gh * gw, 1)
            for i in range(ph):
                for j in range(pw):
                    acc = np.zeros(C) if mode == "avg" else None
                    for iy in range(gh):
                        y = y1 + i * bh + (iy + 0.5) * bh / gh
                        for ix in range(gw):
                            xx = x1 + j * bw + (ix + 0.5) * bw / gw
                            taps = _bilinear(y, xx, H, W)
                            if mode == "avg":
                                for pos, w in taps:
                                    acc = acc + w * img[:, pos]
                            else:
                                v = np.max([w * img[:, pos] for pos, w in taps], axis=0) if taps else np.zeros(C)
                                acc = v if acc is None else np.maximum(acc, v)
                    if mode == "avg":
                        out[r, :, i, j] = acc / count
                    else:
                        out[r, :, i, j] = acc if acc is not None else 0.0
        return out.astype(x.dtype)


def _bilinear(y, x, H, W):
    """[(flat position, weight)] of the four corners around (y, x), the
    Caffe2 / torchvision rule; [] for a sample more than a pixel outside."""
    if y < -1.0 or y > H or x < -1.0 or x > W:
        return [(0, 0.0)] * 4
    y, x = max(y, 0.0), max(x, 0.0)
    yl, xl = int(y), int(x)
    if yl >= H - 1:
        yh = yl = H - 1
        y = float(yl)
    else:
        yh = yl + 1
    if xl >= W - 1:
        xh = xl = W - 1
        x = float(xl)
    else:
        xh = xl + 1
    ly, lx = y - yl, x - xl
    hy, hx = 1.0 - ly, 1.0 - lx
    return [(yl * W + xl, hy * hx), (yl * W + xh, hy * lx), (yh * W + xl, ly * hx), (yh * W + xh, ly * lx)]
