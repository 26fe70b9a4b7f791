"""Helpers several converter families share: axes, padding, legacy broadcast."""

from __future__ import annotations


def norm_axis(cx, axis, rank, what="axis"):
    """An ONNX axis (negative counts from the end) as an index in [0, rank)."""
    if not -rank <= axis < rank:
        raise cx.error(f"{what} {axis} is out of range for a rank-{rank} tensor")
    return axis % rank


def norm_axes(cx, axes, rank, what="axes"):
    return [norm_axis(cx, a, rank, what) for a in axes]


def spatial_attrs(cx, node, x, w_shape=None):
    """(kernel, strides, dilations, pads) of a conv or pool node, pads as
    TVM orders them (all befores, then all afters, which is ONNX's order
    too), with ``auto_pad`` SAME_UPPER / SAME_LOWER / VALID resolved against
    the input's static spatial shape."""
    nsp = cx.rank(x) - 2
    kernel = node.attr("kernel_shape")
    if kernel is None:
        if w_shape is None:
            raise cx.error("has no kernel_shape")
        kernel = tuple(w_shape[2:])
    kernel = tuple(kernel)
    strides = tuple(node.attr("strides", (1,) * nsp))
    dilations = tuple(node.attr("dilations", (1,) * nsp))
    pads = tuple(node.attr("pads", (0,) * (2 * nsp)))
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        spatial = cx.static_shape(x)[2:]
        before, after = [], []
        for size, k, s, d in zip(spatial, kernel, strides, dilations):
            out = -(-size // s)
            total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
            small, big = total // 2, total - total // 2
            before.append(small if auto_pad == "SAME_UPPER" else big)
            after.append(big if auto_pad == "SAME_UPPER" else small)
        pads = tuple(before + after)
    elif auto_pad == "VALID":
        pads = (0,) * (2 * nsp)
    elif auto_pad not in ("NOTSET", ""):
        raise cx.error(f"unknown auto_pad '{auto_pad}'")
    if len(kernel) != nsp or len(strides) != nsp or len(dilations) != nsp or len(pads) != 2 * nsp:
        raise cx.error(f"kernel_shape, strides, dilations and pads do not match {nsp} spatial axes")
    return kernel, strides, dilations, pads


def layout_for(cx, nsp):
    """TVM's default data layout for `nsp` spatial axes."""
    try:
        return {1: "NCW", 2: "NCHW", 3: "NCDHW"}[nsp]
    except KeyError:
        raise cx.unsupported(f"{nsp} spatial dimensions (1 to 3 are supported)") from None


def legacy_broadcast(cx, node, a, b):
    """Opsets before 7: with ``broadcast = 1`` and an ``axis``, `b`'s shape
    lines up with `a`'s from `axis` on, not from the right as numpy's does;
    reshape `b` so that numpy broadcasting does the same."""
    if node.version >= 7 or not node.attr("broadcast", 0):
        return b
    axis = node.attr("axis")
    if axis is None:
        return b
    ra, rb = cx.rank(a), cx.rank(b)
    axis = norm_axis(cx, axis, ra)
    trailing = ra - axis - rb
    if trailing <= 0:
        return b
    return reshape(cx, b, tuple(cx.shape(b)) + (1,) * trailing)


def reshape(cx, x, shape):
    """reshape to a static `shape` (no op when it already has it).  An
    empty result is an empty constant: relay's reshape reads a 0 in the
    new shape as "copy that dimension", so it cannot spell one."""
    shape = tuple(int(d) for d in shape)
    if cx.shape(x) == shape:
        return x
    if 0 in shape:
        import numpy as np
        cx.check_size(shape, cx.dtype(x), "an empty result")
        return cx.const(np.zeros(shape, dtype=cx.ttype(x).dtype))
    return cx.op("reshape", x, newshape=shape)


def onnx_dtype(cx, elem_type, what="dtype"):
    """The tvmd type of an ONNX element type attribute; an invalid code
    is an error, a valid one tvmd does not hold unsupported."""
    from ..dtypes import elem_type_problem, onnx_type_name, to_tvmd
    t = to_tvmd(int(elem_type))
    p = elem_type_problem(int(elem_type))
    if p is not None:
        raise cx.error(f"{what}: {p}")
    if t is None:
        raise cx.unsupported(f"{what} {onnx_type_name(int(elem_type))}")
    return t
