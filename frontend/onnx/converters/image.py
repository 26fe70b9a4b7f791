"""Resize and Upsample -> image.resize1d / resize2d / resize3d.

Only the spatial axes may change size (batch and channel scales are 1).
With ``antialias = 1`` a linear or cubic downscale is one dense per axis by
a constant matrix (image.antialias_weights), not a resize op.
The output size is `sizes`, or floor(input * scale) per axis.  ONNX's
coordinate modes, nearest rounding and cubic coefficients have the names
TVM's resize attributes take.
"""

from __future__ import annotations

from ..registry import converter
from .common import layout_for, norm_axes

_METHODS = {"nearest": "nearest_neighbor", "linear": "linear", "bilinear": "linear", "cubic": "cubic"}
_COORD_MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_crop_and_resize",
                "tf_half_pixel_for_nn", "half_pixel_symmetric")
_ROUNDING = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _resize(cx, x, out_spatial, method, coord, rounding, cubic_a=-0.75, exclude=0, extrapolation=0.0,
            roi=None):
    nsp = cx.rank(x) - 2
    layout = layout_for(cx, nsp)
    out_spatial, scales = out_spatial
    if coord == "tf_crop_and_resize":
        scales = None   # ONNX maps it by the roi and the sizes alone
    attrs = dict(size=tuple(out_spatial), layout=layout, method=method, scales=scales,
                 coordinate_transformation_mode=coord, rounding_method=rounding if method == "nearest_neighbor" else "",
                 cubic_alpha=cubic_a, cubic_exclude=exclude, extrapolation_value=extrapolation)
    if roi is not None:
        attrs["roi"] = tuple(roi)
    return cx.op(f"image.resize{nsp}d", x, **attrs)


def _spatial_sizes(cx, node, x, scales):
    """floor(size * scale) per spatial axis."""
    xs = cx.static_shape(x)
    if len(scales) != len(xs):
        raise cx.error(f"scales has {len(scales)} values for a rank-{len(xs)} input")
    if not all(0 < s < float("inf") for s in scales):   # also false for nan
        raise cx.error(f"scales must be positive and finite, got {list(scales)}")
    out = [int(d * s) for d, s in zip(xs, scales)]
    return _spatial(cx, xs, out, scales)


def _spatial(cx, xs, out, scales):
    """(the spatial output size, the scales its coordinates use or None).
    ONNX maps coordinates with the scale it was given, relay's resize by
    default with output / input; where they differ (a scale that does not
    divide the size evenly: 0.8 of 4 gives 3) the op gets the given scales."""
    if tuple(out[:2]) != tuple(xs[:2]):
        raise cx.unsupported("resizing the batch or channel axis")
    uneven = any(s is not None and d and abs(o / d - s) > 1e-6 * s
                 for d, s, o in zip(xs[2:], scales[2:], out[2:]))
    given = tuple(float(s) if s is not None else o / d for d, s, o in zip(xs[2:], scales[2:], out[2:]))
    return list(out[2:]), (given if uneven else None)


def _antialiased(cx, x, xs, out, mode, coord, cubic_a, exclude):
    """Resize with ``antialias = 1``: separable, one dense per spatial axis
    that changes size, by the constant matrix of image.antialias_weights
    (the axis moved last and back)."""
    import numpy as np

    from ....dialects.relay.ops.image import antialias_weights
    from ....ir import types as T
    sizes, given = out
    rank = len(xs)
    dtype = cx.dtype(x)
    x = cx.cast(x, T.f32)     # weighed in f32 (ONNX's reference: in floats, then cast back)
    for k, (a, m) in enumerate(zip(range(2, rank), sizes)):
        scale = given[k] if given is not None else m / xs[a]
        if m == xs[a] and scale == 1.0:
            continue
        w = antialias_weights(mode, xs[a], m, coord, scale, cubic_a, exclude)
        perm = [i for i in range(rank) if i != a] + [a]
        back = [perm.index(i) for i in range(rank)]
        y = cx.op("transpose", x, axes=tuple(perm)) if a != rank - 1 else x
        y = cx.op("nn.dense", y, cx.const(w.astype(np.float32)), units=m)
        x = cx.op("transpose", y, axes=tuple(back)) if a != rank - 1 else y
    return cx.cast(x, dtype)


@converter("Upsample", 7)
def upsample(cx, node):
    """Asymmetric coordinates; nearest takes floor(i / scale)."""
    x = node.input(0)
    scales = node.attr("scales") if node.version < 9 else cx.static_floats(node.input(1), "scales")
    mode = node.attr("mode", "nearest")
    if mode not in _METHODS:
        raise cx.unsupported(f"mode '{mode}'")
    out = _spatial_sizes(cx, node, x, scales)
    return _resize(cx, x, out, _METHODS[mode], "asymmetric", "floor")


@converter("Resize", 10)
def resize_v10(cx, node):
    """Opset 10's Resize is Upsample: asymmetric coordinates, floor."""
    x = node.input(0)
    mode = node.attr("mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise cx.unsupported(f"mode '{mode}'")
    out = _spatial_sizes(cx, node, x, cx.static_floats(node.input(1), "scales"))
    return _resize(cx, x, out, _METHODS[mode], "asymmetric", "floor")


@converter("Resize", 11)
def resize(cx, node):
    x = node.input(0)
    roi_v, scales_v, sizes_v = node.input(1), node.input(2), node.input(3)
    mode = node.attr("mode", "nearest")
    coord = node.attr("coordinate_transformation_mode", "half_pixel")
    rounding = node.attr("nearest_mode", "round_prefer_floor")
    if mode not in ("nearest", "linear", "cubic"):
        raise cx.error(f"unknown mode '{mode}'")
    if coord not in _COORD_MODES:
        raise cx.error(f"unknown coordinate_transformation_mode '{coord}'")
    if rounding not in _ROUNDING:
        raise cx.error(f"unknown nearest_mode '{rounding}'")
    xs = cx.static_shape(x)
    rank = len(xs)
    axes = norm_axes(cx, node.attr("axes") or range(rank), rank)
    sizes = cx.static_ints(sizes_v, "sizes") if sizes_v is not None else ()
    scales = cx.static_floats(scales_v, "scales") if scales_v is not None else ()
    if sizes:
        if len(sizes) != len(axes):
            raise cx.error(f"sizes has {len(sizes)} values for {len(axes)} axes")
        out, factors = list(xs), [None] * rank
        policy = node.attr("keep_aspect_ratio_policy", "stretch")
        if policy == "stretch":
            for a, s in zip(axes, sizes):
                out[a] = s
        elif policy in ("not_larger", "not_smaller"):
            ratios = [s / xs[a] for a, s in zip(axes, sizes)]
            f = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:     # round half up, as ONNX's reference
                out[a], factors[a] = int(f * xs[a] + 0.5), f
        else:
            raise cx.error(f"unknown keep_aspect_ratio_policy '{policy}'")
        out = _spatial(cx, xs, out, factors)
    elif scales:
        if len(scales) != len(axes):
            raise cx.error(f"scales has {len(scales)} values for {len(axes)} axes")
        full = [1.0] * rank
        for a, s in zip(axes, scales):
            full[a] = s
        out = _spatial_sizes(cx, node, x, full)
    else:
        raise cx.error("needs scales or sizes")
    if node.attr("antialias", 0) and mode != "nearest":
        if coord == "tf_crop_and_resize":
            raise cx.unsupported("antialias with tf_crop_and_resize")
        return _antialiased(cx, x, xs, out, mode, coord, node.attr("cubic_coeff_a", -0.75),
                            node.attr("exclude_outside", 0))
    roi = None
    if coord == "tf_crop_and_resize":
        r = cx.static_floats(roi_v, "roi")      # starts then ends, over `axes`
        starts, ends = [0.0] * rank, [1.0] * rank
        for i, a in enumerate(axes):
            starts[a], ends[a] = r[i], r[len(axes) + i]
        roi = tuple(starts[2:]) + tuple(ends[2:])
    return _resize(cx, x, out, _METHODS[mode], coord, rounding, node.attr("cubic_coeff_a", -0.75),
                   node.attr("exclude_outside", 0), node.attr("extrapolation_value", 0.0), roi)


@converter("GridSample", 16)
def grid_sample(cx, node):
    """image.grid_sample; opset 20 renamed bilinear / bicubic to linear / cubic."""
    mode = node.attr("mode", "linear" if node.version >= 20 else "bilinear")
    method = {"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode)
    if method not in ("bilinear", "nearest", "bicubic"):
        raise cx.error(f"unknown mode '{mode}'")
    pad = node.attr("padding_mode", "zeros")
    if pad not in ("zeros", "border", "reflection"):
        raise cx.error(f"unknown padding_mode '{pad}'")
    return cx.op("image.grid_sample", node.input(0), node.input(1), method=method, padding_mode=pad,
                 align_corners=bool(node.attr("align_corners", 0)))


@converter("RoiAlign", 10)
def roi_align(cx, node):
    """vision.roi_align; opset 16 added coordinate_transformation_mode
    (half_pixel by default; opset 10's behaviour is output_half_pixel)."""
    default = "half_pixel" if node.version >= 16 else "output_half_pixel"
    coord = node.attr("coordinate_transformation_mode", default)
    if coord not in ("half_pixel", "output_half_pixel"):
        raise cx.error(f"unknown coordinate_transformation_mode '{coord}'")
    mode = node.attr("mode", "avg")
    if mode not in ("avg", "max"):
        raise cx.error(f"unknown mode '{mode}'")
    return cx.op("vision.roi_align", node.input(0), node.input(1), node.input(2),
                 pooled_size=[node.attr("output_height", 1), node.attr("output_width", 1)],
                 spatial_scale=float(node.attr("spatial_scale", 1.0)), sample_ratio=node.attr("sampling_ratio", 0),
                 mode=mode, half_pixel=coord == "half_pixel")


@converter("ImageDecoder", 20)
def image_decoder(cx, node):
    """image.decode (Pillow decodes the file)."""
    return cx.op("image.decode", node.input(0), pixel_format=node.attr("pixel_format", "RGB"))
