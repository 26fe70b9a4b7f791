"""Shape manipulation: Reshape, Flatten, Squeeze, Unsqueeze, Transpose,
Concat, Split, Slice, Expand, Tile, Pad, Shape, Size, DepthToSpace,
SpaceToDepth.

Shapes, axes, pads and slice bounds are attributes in relay, tensors in
newer ONNX: they must be known at import time (cx.static_ints), which they
are in models with static shapes.  Shape and Size of a statically shaped
tensor are constants, so the shape arithmetic after them folds away.
"""

from __future__ import annotations

from ....ir import types as T
from ..registry import converter
from .common import norm_axes, norm_axis, reshape

# int64 bounds ONNX uses for "to the end"; relay takes Python ints
INT64_MAX = 2 ** 63 - 1


@converter("Reshape", 1)
def reshape_node(cx, node):
    """0 copies the input's dimension (unless allowzero), -1 is inferred:
    with a static input the shape is resolved here, else it goes to relay's
    reshape, whose 0 and -1 mean the same (a dimension of another tensor
    known to equal one of the input's is copied); a shape known only at run
    time otherwise is dyn.reshape."""
    x = node.input(0)
    allowzero = node.attr("allowzero", 0)
    if node.version < 5:
        shape = tuple(node.attr("shape", ()))
    elif cx.static(node.input(1)) is None:
        # a target computed from a dynamic shape: followed symbolically;
        # else read when it runs (dyn.reshape), if its length is known
        from ..symbolic import elements, reshape_codes
        target = elements(cx, node.input(1)) if not allowzero else None
        codes = reshape_codes(cx, x, target) if target is not None else None
        if codes is not None:
            return cx.op("reshape", x, newshape=codes)
        if cx.shape(node.input(1)) in ((None,), ()) or len(cx.shape(node.input(1))) != 1:
            cx.static_ints(node.input(1), "shape")     # raises StaticValueRequired
        return cx.op("dyn.reshape", x, node.input(1), allowzero=bool(allowzero))
    else:
        shape = cx.static_ints(node.input(1), "shape")
    xs = cx.shape(x)
    if None in xs:
        if allowzero and 0 in shape:
            raise cx.unsupported("allowzero with a dynamic input shape")
        return cx.op("reshape", x, newshape=shape)
    return reshape(cx, x, resolve_shape(cx, xs, shape, allowzero))


def resolve_shape(cx, xs, shape, allowzero=False):
    from ....dialects.relay.ops.util import onnx_reshape
    try:
        return onnx_reshape(xs, shape, allowzero)
    except ValueError as e:
        raise cx.error(str(e)) from None


@converter("Flatten", 1)
def flatten(cx, node):
    x = node.input(0)
    rank = cx.rank(x)
    axis = node.attr("axis", 1)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis <= rank:
        raise cx.error(f"axis {node.attr('axis', 1)} is out of range for rank {rank}")
    xs = cx.shape(x)
    left, right = xs[:axis], xs[axis:]
    if None not in left:
        rows = 1
        for d in left:
            rows *= d
        if None not in right:
            cols = 1
            for d in right:
                cols *= d
            return reshape(cx, x, (rows, cols))
        return cx.op("reshape", x, newshape=(rows, -1))
    if None not in right:
        cols = 1
        for d in right:
            cols *= d
        return cx.op("reshape", x, newshape=(-1, cols))
    raise cx.unsupported("Flatten with dynamic dimensions on both sides of the axis")


@converter("Squeeze", 1)
def squeeze(cx, node):
    x = node.input(0)
    if node.version >= 13:
        axes = cx.static_ints(node.input(1), "axes") if node.input(1) is not None else None
    else:
        axes = node.attr("axes")
    xs = cx.shape(x)
    if axes is None:
        if None in xs:
            cx.static_shape(x)
        axes = tuple(i for i, d in enumerate(xs) if d == 1)
    axes = tuple(norm_axes(cx, axes, len(xs)))
    if not axes:
        return x
    return cx.op("squeeze", x, axis=axes)


@converter("Unsqueeze", 1)
def unsqueeze(cx, node):
    """Axes count in the output's rank; inserting them in increasing order
    puts each where it belongs."""
    x = node.input(0)
    if node.version >= 13:
        axes = cx.static_ints(node.input(1), "axes")
    else:
        axes = tuple(node.attr("axes", ()))
    out_rank = cx.rank(x) + len(axes)
    axes = sorted(norm_axes(cx, axes, out_rank))
    xs = cx.shape(x)
    if None not in xs:
        shape = list(xs)
        for a in axes:
            shape.insert(a, 1)
        return reshape(cx, x, shape)
    for a in axes:
        x = cx.op("expand_dims", x, axis=a)
    return x


@converter("Transpose", 1)
def transpose(cx, node):
    x = node.input(0)
    rank = cx.rank(x)
    perm = node.attr("perm") or tuple(reversed(range(rank)))
    if tuple(perm) == tuple(range(rank)):
        return x
    return cx.op("transpose", x, axes=tuple(perm))


@converter("Concat", 1)
def concat(cx, node):
    xs = [v for v in node.inputs if v is not None]
    rank = cx.rank(xs[0])
    axis = norm_axis(cx, node.attr("axis", 1), rank)
    if len(xs) == 1:
        return xs[0]
    return cx.op("concatenate", *xs, axis=axis)


@converter("Split", 1)
def split(cx, node):
    """Sizes from the `split` attribute (input from opset 13), else equal
    parts; opset 18's num_outputs makes the last part the smaller one."""
    x = node.input(0)
    rank = cx.rank(x)
    axis = norm_axis(cx, node.attr("axis", 0), rank)
    n = node.num_outputs
    sizes = None
    if node.version >= 13 or node.version == 1:
        if node.input(1) is not None:
            sizes = cx.static_ints(node.input(1), "split")
    if sizes is None and node.version < 13:
        sizes = node.attr("split")
    dim = cx.shape(x)[axis]
    if sizes is None and node.version >= 18 and node.attr("num_outputs") is not None:
        n = node.attr("num_outputs")
        if dim is None:
            cx.static_shape(x)
        chunk = -(-dim // n)
        sizes = [chunk] * (n - 1) + [dim - chunk * (n - 1)]
    if sizes is None:
        if dim is not None and dim % n:
            raise cx.error(f"cannot split {dim} into {n} equal parts")
        sections = n
    else:
        sizes = list(sizes)
        if dim is not None and sum(sizes) != dim:
            raise cx.error(f"split sizes {sizes} do not add up to {dim}")
        if len(set(sizes)) == 1 and dim is not None:
            sections = len(sizes)
        else:
            sections, acc = [], 0
            for s in sizes[:-1]:
                acc += s
                sections.append(acc)
            sections = tuple(sections)
    parts = cx.op("split", x, indices_or_sections=sections, axis=axis)
    return [cx.get_item(parts, i) for i in range(len(parts.type.types))]


@converter("Slice", 1)
def slice_node(cx, node):
    """strided_slice, whose bounds read as numpy's (and ONNX's): negative
    counts from the end, out-of-range clamps, a negative step walks back;
    bounds known only at run time: dyn.slice, read when it runs."""
    x = node.input(0)
    rank = cx.rank(x)
    if node.version < 10:
        starts, ends = node.attr("starts"), node.attr("ends")
        axes, steps = node.attr("axes"), None
    else:
        bounds = [cx.static(node.input(k)) for k in (1, 2)]
        axes = cx.static_ints(node.input(3), "axes") if node.input(3) is not None else None
        steps = cx.static_ints(node.input(4), "steps") if node.input(4) is not None else None
        if any(b is None for b in bounds) and len(cx.shape(node.input(1))) == 1 and \
                None not in cx.shape(node.input(1)):
            # bounds known when it runs (BERT's position_ids[:, :seq]): dyn.slice
            n = cx.shape(node.input(1))[0]
            axes = list(range(n)) if axes is None else norm_axes(cx, axes, rank)
            return cx.op("dyn.slice", x, node.input(1), node.input(2), axes=tuple(axes),
                         steps=tuple(steps) if steps is not None else (1,) * n)
        starts = cx.static_ints(node.input(1), "starts")
        ends = cx.static_ints(node.input(2), "ends")
    axes = list(range(len(starts))) if axes is None else norm_axes(cx, axes, rank)
    steps = [1] * len(starts) if steps is None else list(steps)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise cx.error("starts, ends, axes and steps have different lengths")
    if any(s == 0 for s in steps):
        raise cx.error("slice steps must not be 0")
    clamp = lambda v: max(min(int(v), INT64_MAX), -INT64_MAX)   # noqa: E731
    return strided_slice(cx, x, [clamp(s) for s in starts], [clamp(e) for e in ends], steps, axes)


def strided_slice(cx, x, begin, end, strides, axes):
    """strided_slice over `axes` only: by its `axes` attribute, or spelled
    out over every axis where relay's op has none."""
    from ....ir.core import OP_CLASSES
    cls = OP_CLASSES.get("relay.strided_slice")
    if cls is not None and "axes" not in cls.ATTRS:
        rank = cx.rank(x)
        fb, fe, fs = [0] * rank, [INT64_MAX] * rank, [1] * rank
        for a, b, e, s in zip(axes, begin, end, strides):
            fb[a], fe[a], fs[a] = b, e, s
        return cx.op("strided_slice", x, begin=tuple(fb), end=tuple(fe), strides=tuple(fs))
    return cx.op("strided_slice", x, begin=tuple(begin), end=tuple(end), strides=tuple(strides),
                 axes=tuple(axes))


@converter("Expand", 8)
def expand(cx, node):
    """Broadcast both ways: the result has the larger of each pair of
    dimensions, so a 1 in the shape keeps the input's."""
    x = node.input(0)
    if cx.static(node.input(1)) is None:
        target = _symbolic_expand(cx, x, node.input(1))
        if target is not None:
            return target
    shape = cx.static_ints(node.input(1), "shape")
    xs = cx.shape(x)
    n = max(len(xs), len(shape))
    a = (1,) * (n - len(xs)) + tuple(xs)
    b = (1,) * (n - len(shape)) + tuple(shape)
    out = []
    for da, db in zip(a, b):
        if da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        elif da is None:
            out.append(db)
        else:
            raise cx.error(f"cannot expand {cx.ttype(x)} to {list(shape)}")
    out = tuple(out)
    if out == xs:
        return x
    if None in out:
        raise cx.unsupported("Expand with dynamic dimensions")
    return cx.op("broadcast_to", x, shape=out)


def _symbolic_expand(cx, x, target):
    """Expand to a shape followed symbolically (symbolic.elements): each
    result dimension is the input's where the target says 1, else the
    target's (a '?' meeting a static size > 1: the static one);
    broadcast_to_like of a value of that shape.  None when an entry is
    unknown."""
    from ..symbolic import UNKNOWN, Dim, elements, shaped_like
    entries = elements(cx, target)
    if entries is None or UNKNOWN in entries:
        return None
    xs = cx.shape(x)
    n = max(len(xs), len(entries))
    mine = [1] * (n - len(xs)) + [d if d is not None else Dim(x, a, cx) for a, d in enumerate(xs)]
    entries = [1] * (n - len(entries)) + list(entries)
    out = []
    for a, b in zip(mine, entries):
        if b == 1 or a == b:
            out.append(a)
        elif a == 1 or isinstance(a, Dim):
            out.append(b)
        elif isinstance(b, Dim):
            out.append(a)
        else:
            raise cx.error(f"cannot expand {cx.ttype(x)} to {[e if isinstance(e, int) else '?' for e in entries]}")
    if n == len(xs) and out == mine:
        return x
    like = shaped_like(cx, out)
    return None if like is None else cx.op("broadcast_to_like", x, like)


@converter("Tile", 1)
def tile_v1(cx, node):
    """Opset 1: `tiles` copies along one `axis`."""
    x = node.input(0)
    tiles = int(cx.static_scalar(node.input(1), "tiles"))
    axis = norm_axis(cx, int(cx.static_scalar(node.input(2), "axis")), cx.rank(x))
    reps = [1] * cx.rank(x)
    reps[axis] = tiles
    return cx.op("tile", x, reps=tuple(reps))


@converter("Tile", 6)
def tile(cx, node):
    x = node.input(0)
    reps = cx.static_ints(node.input(1), "repeats")
    if len(reps) != cx.rank(x):
        raise cx.error(f"repeats has {len(reps)} values for a rank-{cx.rank(x)} input")
    if all(r == 1 for r in reps):
        return x
    return cx.op("tile", x, reps=reps)


_PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect", "wrap": None}


@converter("Pad", 1)
def pad(cx, node):
    """nn.pad; negative pads crop first (a slice), as ONNX allows."""
    import numpy as np
    x = node.input(0)
    rank = cx.rank(x)
    mode = node.attr("mode", "constant")
    if node.version < 11:
        pads = tuple(node.attr("pads" if node.version >= 2 else "paddings", ()))
        value = node.attr("value", 0.0)
        axes = list(range(rank))
    else:
        pads = cx.static_ints(node.input(1), "pads")
        value = 0
        if node.input(2) is not None:
            value = cx.static_value(node.input(2), "constant_value").reshape(-1)
            value = value[0].item() if value.size else 0
        axes = (norm_axes(cx, cx.static_ints(node.input(3), "axes"), rank)
                if node.input(3) is not None else list(range(rank)))
    if mode not in _PAD_MODES:
        raise cx.unsupported(f"mode '{mode}'")
    n = len(axes)
    if len(pads) != 2 * n:
        raise cx.error(f"pads has {len(pads)} values for {n} axes")
    width = [[0, 0] for _ in range(rank)]
    for i, a in enumerate(axes):
        width[a] = [pads[i], pads[n + i]]
    if any(b < 0 or e < 0 for b, e in width):
        xs = cx.static_shape(x)
        crop = [(a, max(-b, 0), xs[a] - max(-e, 0)) for a, (b, e) in enumerate(width) if b < 0 or e < 0]
        x = strided_slice(cx, x, [c[1] for c in crop], [c[2] for c in crop], [1] * len(crop),
                          [c[0] for c in crop])
        width = [[max(b, 0), max(e, 0)] for b, e in width]
    if all(b == 0 and e == 0 for b, e in width):
        return x
    if mode == "wrap":
        return _pad_wrap(cx, x, width)
    if T.is_float(cx.dtype(x)):
        value = float(value)
    elif isinstance(value, float) and not np.isfinite(value):
        raise cx.error(f"pad value {value} does not fit {cx.ttype(x)}")
    return cx.op("nn.pad", x, pad_width=tuple(tuple(w) for w in width), pad_value=value,
                 pad_mode=_PAD_MODES[mode])


def _pad_wrap(cx, x, width):
    """Wrap padding, which nn.pad lacks: each padded axis is the input's
    tail, the input, and its head, concatenated."""
    xs = cx.static_shape(x)
    for a, (b, e) in enumerate(width):
        if not b and not e:
            continue
        if b > xs[a] or e > xs[a]:
            raise cx.unsupported("wrap padding wider than the axis")
        parts = []
        if b:
            parts.append(strided_slice(cx, x, [xs[a] - b], [xs[a]], [1], [a]))
        parts.append(x)
        if e:
            parts.append(strided_slice(cx, x, [0], [e], [1], [a]))
        x = cx.op("concatenate", *parts, axis=a)
        xs = cx.shape(x)
    return x


@converter("Shape", 1)
def shape_node(cx, node):
    """The shape as an int64 constant when it is static (opset 15 takes a
    start..end slice of it), else shape_of."""
    import numpy as np
    x = node.input(0)
    xs = cx.shape(x)
    rank = len(xs)
    start, end = node.attr("start", 0), node.attr("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    dims = xs[start:end]
    if None not in dims:
        return cx.const(np.array(dims, dtype=np.int64))
    s = cx.op("shape_of", x, dtype=T.i64)
    if (start, end) == (0, rank):
        return s
    return strided_slice(cx, s, [start], [end], [1], [0])


@converter("Size", 1)
def size(cx, node):
    import numpy as np
    x = node.input(0)
    xs = cx.shape(x)
    if None not in xs:
        return cx.const(np.array(int(np.prod(xs, dtype=np.int64)), dtype=np.int64))
    return cx.op("prod", cx.op("shape_of", x, dtype=T.i64))


@converter("DepthToSpace", 1)
def depth_to_space(cx, node):
    return cx.op("nn.depth_to_space", node.input(0), block_size=node.attr("blocksize"),
                 mode=node.attr("mode", "DCR"))


@converter("SpaceToDepth", 1)
def space_to_depth(cx, node):
    mode = node.attr("mode", "DCR")   # opset 28 adds CRD, which relay's op does not have
    x, bs = node.input(0), node.attr("blocksize")
    if mode == "DCR":
        return cx.op("nn.space_to_depth", x, block_size=bs)
    if mode != "CRD":
        raise cx.error(f"unknown mode '{mode}'")
    n, c, h, w = cx.static_shape(x)
    t = cx.op("reshape", x, newshape=(n, c, h // bs, bs, w // bs, bs))
    t = cx.op("transpose", t, axes=(0, 1, 3, 5, 2, 4))
    return cx.op("reshape", t, newshape=(n, c * bs * bs, h // bs, w // bs))
