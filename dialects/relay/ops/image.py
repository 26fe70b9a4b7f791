"""Resizing: image.resize1d/2d/3d and nn.upsampling/upsampling3d.

    %r = image.resize2d(%x) {size = [64, 64], method = "linear",
                             coordinate_transformation_mode = "half_pixel"}
    %u = nn.upsampling(%x) {scale_h = 2.0, scale_w = 2.0, method = "nearest_neighbor"}

image.resize{1,2,3}d (TVM's attributes and defaults):

    size                          required: the output size of each spatial axis
    roi = [0.0, ...]              tf_crop_and_resize's box: the starts, then the ends
    layout                        NCW | NWC, NCHW | NHWC | blocked NCHW16c, NCDHW | NDHWC
    method = "linear"             nearest_neighbor | linear | cubic
    coordinate_transformation_mode = "half_pixel"
                                  half_pixel | align_corners | asymmetric |
                                  pytorch_half_pixel | tf_half_pixel_for_nn | half_pixel_symmetric |
                                  tf_crop_and_resize
    rounding_method = ""          nearest only: round | round_prefer_floor | round_prefer_ceil |
                                  floor | ceil; "" = round for align_corners, else floor (TVM)
    cubic_alpha = -0.5            the cubic kernel's A (ONNX's default is -0.75)
    cubic_exclude = 0             1: drop taps outside the input and renormalise
    extrapolation_value = 0.0     tf_crop_and_resize: the value outside the input
    out_dtype = ""
    scales                        unset = size / input size; set (tvmd's, for ONNX Resize
                                  given scales): the scale each axis' coordinates use

The numerics are ONNX Resize's (its frontend maps to these ops): the
coordinate of output index i along an axis of input size L and output size
M (scale M / L) under each mode, neighbours clamped to the edge; linear and
cubic interpolate separably, one axis at a time.

nn.upsampling: scale_h = 1.0, scale_w = 1.0, layout = "NCHW", method =
"nearest_neighbor" (| "bilinear" | "bicubic"), align_corners = false; the
output size is round(size * scale), coordinates asymmetric (align_corners
when set).  nn.upsampling3d: scale_d/h/w, layout "NCDHW", method,
coordinate_transformation_mode = "half_pixel".

Pattern injective; layout rule "layout".
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import BOOL, FLOAT, FLOATS, INT, STR, enum, ints, optional
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from ..layouts import Layout, LayoutError, convert_array
from .base import MAX_DIM, OpPattern, RelayOp, finite, tensor_type
from .util import dtype_attr

np = lazy_module("numpy")   # parsing and printing never need numpy

SPATIAL = {1: "W", 2: "HW", 3: "DHW"}
COORD_MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn",
               "half_pixel_symmetric", "tf_crop_and_resize")
ROUNDING = ("", "round", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


class ResizeBase(RelayOp):
    __slots__ = ()
    OPERANDS = ("data",)
    PATTERN = OpPattern.INJECTIVE
    LAYOUT = "layout"
    LAYOUT_ATTRS = ("layout",)
    NDIM = 2

    @property
    def spatial(self):
        return SPATIAL[self.NDIM]

    def data_layout(self):
        try:
            lay = Layout(self.attributes["layout"])
        except LayoutError as e:
            raise self.error(str(e)) from None
        if sorted(lay.primal) != sorted("NC" + self.spatial):
            raise self.error(f"layout {lay.name} is not a layout of N, C and {', '.join(self.spatial)}")
        return lay

    def type_relation(self, x):
        tensor_type(self, x)
        lay = self.data_layout()
        if x.rank != len(lay.axes):
            raise self.error(f"expects {len(lay.axes)}-d data in layout {lay.name}, got {x}")
        try:
            sizes = lay.primal_shape(x.shape)
            for s, v in zip(self.spatial, self.out_sizes([sizes[s] for s in self.spatial])):
                if v is not None and v < 1:
                    raise self.error(f"the output size along {s} must be positive, got {v}")
                sizes[s] = v
            shape = lay.shape_from_primal(sizes)
        except LayoutError as e:
            raise self.error(str(e)) from None
        return T.TensorType(shape, self.result_element(x))

    def result_element(self, x):
        return x.element_type

    def compute(self, x):
        lay = self.data_layout()
        sp = self.spatial
        y = convert_array(x, lay.name, "NC" + sp).astype(np.float64)
        ins = y.shape[2:]
        outs = self.out_sizes(list(ins))
        method, mode, rounding, alpha, exclude, extrap, roi = self.params()
        scales = self.attributes.get("scales")
        for j in range(self.NDIM):
            rs = (roi[j], roi[self.NDIM + j]) if roi else (0.0, 1.0)
            y = resize_axis(y, 2 + j, outs[j], method, mode, rounding, alpha, exclude, extrap, rs,
                            scales[j] if scales else None)
        dt = self.results[0].type.dtype
        if np.issubdtype(dt, np.integer):
            y = np.round(y)   # integer images round to the nearest value
        return convert_array(y, "NC" + sp, lay.name).astype(dt)


def resize_attrs(ndim):
    return {
        "size": Attr(ints(ndim)),
        "roi": Attr(FLOATS, (0.0,) * (2 * ndim)),
        "layout": Attr(STR, "NC" + SPATIAL[ndim]),
        "method": Attr(enum("nearest_neighbor", "linear", "cubic"), "linear"),
        "coordinate_transformation_mode": Attr(enum(*COORD_MODES), "half_pixel"),
        "rounding_method": Attr(enum(*ROUNDING), ""),
        "cubic_alpha": Attr(FLOAT, -0.5),
        "cubic_exclude": Attr(INT, 0),
        "extrapolation_value": Attr(FLOAT, 0.0),
        "out_dtype": Attr(STR, ""),
        "scales": Attr(optional(FLOATS), None),
    }


class ResizeOp(ResizeBase):
    __slots__ = ()

    def out_sizes(self, ins):
        return list(self.attributes["size"])

    def result_element(self, x):
        return dtype_attr(self, "out_dtype", x.element_type)

    def type_relation(self, x):
        roi = self.attributes["roi"]
        if len(roi) != 2 * self.NDIM:
            raise self.error(f"roi must have {2 * self.NDIM} values (the starts, then the ends), got {len(roi)}")
        scales = self.attributes.get("scales")
        if scales is not None and (len(scales) != self.NDIM or not all(0 < s < float("inf") for s in scales)):
            raise self.error(f"scales must be {self.NDIM} positive numbers, got {list(scales)}")
        return super().type_relation(x)

    def params(self):
        a = self.attributes
        return (a["method"], a["coordinate_transformation_mode"], a["rounding_method"], a["cubic_alpha"],
                a["cubic_exclude"], a["extrapolation_value"], a["roi"])


def _resize(name, ndim):
    return type(name, (ResizeOp,), {"__slots__": (), "name": "relay.image." + name, "NDIM": ndim,
                                    "ATTRS": resize_attrs(ndim), "__doc__": f"``image.{name}(%data)``"})


Resize1DOp = _resize("resize1d", 1)
Resize2DOp = _resize("resize2d", 2)
Resize3DOp = _resize("resize3d", 3)


class UpSamplingOp(ResizeBase):
    __slots__ = ()
    name = "relay.nn.upsampling"
    ATTRS = {"scale_h": Attr(FLOAT, 1.0), "scale_w": Attr(FLOAT, 1.0), "layout": Attr(STR, "NCHW"),
             "method": Attr(enum("nearest_neighbor", "bilinear", "bicubic"), "nearest_neighbor"),
             "align_corners": Attr(BOOL, False)}
    SCALES = ("scale_h", "scale_w")

    def check_attrs(self):
        for s in self.SCALES:
            finite(self, s, positive=True)

    def out_sizes(self, ins):
        out = []
        for d, s in zip(ins, self.SCALES):
            v = None if d is None else d * self.attributes[s]
            if v is not None and not v < MAX_DIM:
                raise self.error(f"attribute '{s}' = {self.attributes[s]} makes an output size too large")
            out.append(None if v is None else int(round(v)))
        return out

    def params(self):
        a = self.attributes
        method = {"nearest_neighbor": "nearest_neighbor", "bilinear": "linear", "bicubic": "cubic"}[a["method"]]
        mode = "align_corners" if a["align_corners"] else "asymmetric"
        return method, mode, "", -0.5, 0, 0.0, None


class UpSampling3DOp(UpSamplingOp):
    __slots__ = ()
    name = "relay.nn.upsampling3d"
    ATTRS = {"scale_d": Attr(FLOAT, 1.0), "scale_h": Attr(FLOAT, 1.0), "scale_w": Attr(FLOAT, 1.0),
             "layout": Attr(STR, "NCDHW"),
             "method": Attr(enum("nearest_neighbor", "trilinear"), "nearest_neighbor"),
             "coordinate_transformation_mode": Attr(enum(*COORD_MODES[:-1]), "half_pixel")}
    SCALES = ("scale_d", "scale_h", "scale_w")
    NDIM = 3

    def params(self):
        a = self.attributes
        method = "linear" if a["method"] == "trilinear" else "nearest_neighbor"
        return method, a["coordinate_transformation_mode"], "", -0.5, 0, 0.0, None


# -- the 1-d resampling every mode reduces to ------------------------------------------------------

def source_coords(mode, L, M, roi, scale=None):
    """Where output index i (0..M-1) falls in the input, ONNX's formulas;
    `scale` defaults to M / L."""
    i = np.arange(M, dtype=np.float64)
    # align_corners maps by the unrounded output length scale * L when a scale is given (ONNX's reference)
    span = (M - 1) if scale is None else scale * L - 1
    scale = M / L if scale is None else scale
    if mode == "half_pixel":
        return (i + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        # centred: the part of the scaled length L * scale that the whole M
        # leaves out is split between both ends
        adjustment = M / (scale * L)
        return L / 2 * (1 - adjustment) + (i + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (i + 0.5) / scale - 0.5 if M > 1 else np.zeros(M)
    if mode == "align_corners":
        return i * (L - 1) / span if M > 1 and span > 0 else np.zeros(M)
    if mode == "asymmetric":
        return i / scale
    if mode == "tf_half_pixel_for_nn":
        return (i + 0.5) / scale
    start, end = roi   # tf_crop_and_resize
    if M > 1:
        return start * (L - 1) + i * (end - start) * (L - 1) / (M - 1)
    return np.full(M, 0.5 * (start + end) * (L - 1))


def antialias_weights(method, L, M, coord, scale, cubic_a=-0.75, exclude=False):
    """The (M, L) matrix of ONNX Resize's antialiased linear or cubic
    resampling along one axis (``antialias = 1``): output i is the sum of
    the inputs j weighted by the kernel at s * (j - x_i), s = min(scale, 1)
    (a downscale stretches the kernel by 1 / scale), x_i = source_coords(i),
    over every j the stretched kernel reaches, normalised to sum 1.  An
    index outside the input reads the edge (its weight moves there), or
    with `exclude` is dropped and the rest renormalised."""
    s = min(scale, 1.0)
    x = source_coords(coord, L, M, None, scale)
    reach = (1.0 if method == "linear" else 2.0) / s
    lo = np.floor(x - reach).astype(np.int64) + 1
    taps = lo[:, None] + np.arange(int(np.ceil(2 * reach)) + 1)[None, :]
    d = np.abs((taps - x[:, None]) * s)
    if method == "linear":
        w = np.clip(1 - d, 0, None)
    else:
        a = cubic_a
        w = np.where(d <= 1, (a + 2) * d ** 3 - (a + 3) * d ** 2 + 1,
                     np.where(d < 2, a * d ** 3 - 5 * a * d ** 2 + 8 * a * d - 4 * a, 0.0))
    w = w / w.sum(axis=1, keepdims=True)
    inside = (taps >= 0) & (taps < L)
    if exclude:
        w = np.where(inside, w, 0.0)
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    W = np.zeros((M, L))
    np.add.at(W, (np.repeat(np.arange(M), taps.shape[1]), np.clip(taps, 0, L - 1).reshape(-1)), w.reshape(-1))
    return W


def _round(x, how):
    if how == "round_prefer_floor":
        return np.ceil(x - 0.5)
    if how == "round_prefer_ceil":
        return np.floor(x + 0.5)
    if how == "floor":
        return np.floor(x)
    if how == "ceil":
        return np.ceil(x)
    return np.round(x)   # "round": half to even, as nearbyint


def cubic_weights(t, alpha):
    """Weights of the taps at offsets -1, 0, 1, 2 from floor(x), t = x - floor(x)."""
    def w(d):
        d = np.abs(d)
        near = ((alpha + 2) * d - (alpha + 3)) * d * d + 1
        far = ((alpha * d - 5 * alpha) * d + 8 * alpha) * d - 4 * alpha
        return np.where(d <= 1, near, np.where(d < 2, far, 0.0))
    return np.stack([w(1 + t), w(t), w(1 - t), w(2 - t)], axis=-1)


def resize_axis(y, axis, M, method, mode, rounding, alpha, exclude, extrapolation, roi, scale=None):
    L = y.shape[axis]
    x = source_coords(mode, L, M, roi, scale)
    y = np.moveaxis(y, axis, -1)
    if method == "nearest_neighbor":
        if not rounding:
            rounding = "round" if mode == "align_corners" else "floor"
        idx = np.clip(_round(x, rounding), 0, L - 1).astype(np.int64)
        out = y[..., idx]
    else:
        x0 = np.floor(x)
        t = x - x0
        if method == "linear":
            taps, w = [0, 1], np.stack([1 - t, t], axis=-1)
        else:
            taps, w = [-1, 0, 1, 2], cubic_weights(t, alpha)
        pos = x0[:, None].astype(np.int64) + np.array(taps)[None, :]
        if method == "cubic" and exclude:
            w = np.where((pos >= 0) & (pos < L), w, 0.0)
            w = w / w.sum(axis=-1, keepdims=True)
        pos = np.clip(pos, 0, L - 1)
        out = (y[..., pos] * w).sum(axis=-1)
    if mode == "tf_crop_and_resize":
        outside = (x < 0) | (x > L - 1)
        out = np.where(outside, extrapolation, out)
    return np.moveaxis(out, -1, axis)

