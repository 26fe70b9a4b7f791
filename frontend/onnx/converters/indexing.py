"""Indexing: Gather, GatherElements, GatherND, Scatter*, OneHot, Compress,
NonZero, TopK, CumSum, ReverseSequence, Trilu, Einsum, Unique, NonMaxSuppression
(the last two: dyn ops, whose output sizes come from the values).

ONNX indices may be negative (counting from the end).  Relay's take clamps
them (TVM's default), so Gather's indices are made non-negative first: a
constant index tensor here, a run-time one with a where.  GatherND and
ScatterND put the index tuple last, relay (TVM) first: the indices are
transposed.
"""

from __future__ import annotations

from ....ir import types as T
from ..registry import converter
from .common import norm_axis


def non_negative(cx, idx, dim, x=None, axis=None):
    """`idx` with dim added to its negative entries; a '?' dim (None) is
    x's size along `axis` when the kernel runs (shape_of)."""
    import numpy as np
    arr = cx.static(idx, bound=False)
    if arr is not None:
        if not (arr < 0).any():
            return idx
        if dim is not None:
            return cx.const(np.where(arr < 0, arr + dim, arr).astype(arr.dtype))
    if dim is None:
        if x is None:
            raise cx.unsupported("negative indices into a dynamic dimension")
        size = cx.op("take", cx.op("shape_of", x, dtype=cx.dtype(idx)), cx.const(np.array(axis, np.int64)),
                     axis=0)
    else:
        size = cx.scalar(dim, idx)
    neg = cx.op("less", idx, cx.scalar(0, idx))
    return cx.op("where", neg, cx.op("add", idx, size), idx)


def _index_dtype(cx, idx):
    dt = cx.dtype(idx)
    if not isinstance(dt, T.IntegerType) or dt.width == 1:
        raise cx.error(f"indices must be integers, got {cx.ttype(idx)}")
    return idx


@converter("Gather", 1)
def gather(cx, node):
    x, idx = node.input(0), _index_dtype(cx, node.input(1))
    axis = norm_axis(cx, node.attr("axis", 0), cx.rank(x))
    idx = non_negative(cx, idx, cx.shape(x)[axis], x, axis)
    return cx.op("take", x, idx, axis=axis)


@converter("GatherElements", 11)
def gather_elements(cx, node):
    x, idx = node.input(0), _index_dtype(cx, node.input(1))
    return cx.op("gather", x, idx, axis=norm_axis(cx, node.attr("axis", 0), cx.rank(x)))


def _index_tuple_first(cx, idx):
    """(..., M) -> (M, ...): relay's gather_nd / scatter_nd order."""
    r = cx.rank(idx)
    return cx.op("transpose", idx, axes=(r - 1,) + tuple(range(r - 1)))


@converter("GatherND", 11)
def gather_nd(cx, node):
    x, idx = node.input(0), _index_dtype(cx, node.input(1))
    m = cx.shape(idx)[-1]
    return cx.op("gather_nd", x, _index_tuple_first(cx, idx), batch_dims=node.attr("batch_dims", 0),
                 index_rank=m)


_REDUCTIONS = {"none": "update", "add": "add", "mul": "mul", "min": "min", "max": "max"}


@converter(("ScatterElements", "Scatter"), 9)
def scatter_elements(cx, node):
    x, idx, upd = node.input(0), _index_dtype(cx, node.input(1)), node.input(2)
    red = node.attr("reduction", "none")
    if red not in _REDUCTIONS:
        raise cx.unsupported(f"reduction '{red}'")
    return cx.op("scatter_elements", x, idx, upd, axis=norm_axis(cx, node.attr("axis", 0), cx.rank(x)),
                 reduction=_REDUCTIONS[red])


@converter("ScatterND", 11)
def scatter_nd(cx, node):
    x, idx, upd = node.input(0), _index_dtype(cx, node.input(1)), node.input(2)
    red = node.attr("reduction", "none")
    if red not in _REDUCTIONS:
        raise cx.unsupported(f"reduction '{red}'")
    return cx.op("scatter_nd", x, _index_tuple_first(cx, idx), upd, mode=_REDUCTIONS[red])


@converter("OneHot", 9)
def one_hot(cx, node):
    """values = [off, on]; an index may be negative (from the end of
    depth) and of any numeric type."""
    idx, depth_v, values = node.input(0), node.input(1), node.input(2)
    depth = int(cx.static_scalar(depth_v, "depth"))
    if not T.is_int(cx.dtype(idx)) or cx.dtype(idx) is T.i1:
        idx = cx.cast(idx, T.i64)
    idx = non_negative(cx, idx, depth)
    axis = node.attr("axis", -1)
    off = cx.op("take", values, cx.const(0, T.i64), axis=0)
    on = cx.op("take", values, cx.const(1, T.i64), axis=0)
    return cx.op("one_hot", idx, on, off, depth=depth, axis=axis, dtype=cx.dtype(values))


@converter("Compress", 9)
def compress(cx, node):
    """The kept positions are the condition's true entries, which must be
    known at import time (the output's size depends on them)."""
    import numpy as np
    x = node.input(0)
    cond = cx.static_value(node.input(1), "condition").astype(bool).reshape(-1)
    axis = node.attr("axis")
    if axis is None:
        x = cx.op("reshape", x, newshape=(-1,))
        axis = 0
    axis = norm_axis(cx, axis, cx.rank(x))
    keep = np.nonzero(cond[:cx.static_shape(x)[axis]])[0].astype(np.int64)
    return cx.op("take", x, cx.const(keep), axis=axis)


@converter("NonZero", 9)
def non_zero(cx, node):
    """argwhere gives (n, rank); ONNX wants (rank, n) in int64."""
    w = cx.op("argwhere", node.input(0))
    return cx.cast(cx.op("transpose", w, axes=(1, 0)), T.i64)


@converter("TopK", 1)
def top_k(cx, node):
    """k known at import: topk; a run-time k: dyn.topk (one build for every k)."""
    x = node.input(0)
    axis = norm_axis(cx, node.attr("axis", -1), cx.rank(x))
    # sorted = 0 leaves the order open: the sorted order is one valid answer
    ascend = not node.attr("largest", 1)
    if node.version >= 10 and cx.static(node.input(1)) is None:
        out = cx.op("dyn.topk", x, node.input(1), axis=axis, ret_type="both", is_ascend=ascend, dtype=T.i64)
        return [cx.get_item(out, 0), cx.get_item(out, 1)]
    k = node.attr("k") if node.version < 10 else int(cx.static_scalar(node.input(1), "k"))
    out = cx.op("topk", x, k=k, axis=axis, ret_type="both", is_ascend=ascend, dtype=T.i64)
    return [cx.get_item(out, 0), cx.get_item(out, 1)]


@converter(("CumSum", "CumProd"), 11)
def cumulative(cx, node):
    """cumsum / cumprod; `reverse` runs it over the reversed axis."""
    x = node.input(0)
    axis = norm_axis(cx, int(cx.static_scalar(node.input(1), "axis")), cx.rank(x))
    rev = node.attr("reverse", 0)
    if rev:
        x = cx.op("reverse", x, axis=axis)
    y = cx.op("cumsum" if node.op_type == "CumSum" else "cumprod", x, axis=axis,
              exclusive=bool(node.attr("exclusive", 0)))
    return cx.op("reverse", y, axis=axis) if rev else y


@converter("ReverseSequence", 10)
def reverse_sequence(cx, node):
    return cx.op("reverse_sequence", node.input(0), node.input(1), seq_axis=node.attr("time_axis", 0),
                 batch_axis=node.attr("batch_axis", 1))


@converter("Trilu", 14)
def trilu(cx, node):
    """x where the triangle's mask (from the static shape and k) is set,
    0 elsewhere."""
    import numpy as np
    x = node.input(0)
    k = int(cx.static_scalar(node.input(1), "k")) if node.input(1) is not None else 0
    if cx.rank(x) < 2:
        raise cx.error(f"expects an input of rank 2 or more, got {cx.ttype(x)}")
    rows, cols = cx.static_shape(x)[-2:]
    cx.check_size((rows, cols), "bool", "the triangle's mask")
    ones = np.ones((rows, cols), dtype=bool)
    mask = np.triu(ones, k) if node.attr("upper", 1) else np.tril(ones, k)
    return cx.op("where", cx.const(mask), x, cx.scalar(0, x))


@converter("Einsum", 12)
def einsum(cx, node):
    return cx.op("einsum", *node.inputs, equation=node.attr("equation").replace(" ", ""))


@converter("Unique", 11)
def unique(cx, node):
    """dyn.unique: Y, indices, inverse_indices, counts (all int64 but Y)."""
    x = node.input(0)
    axis = node.attr("axis")
    if axis is not None:
        axis = norm_axis(cx, axis, cx.rank(x))
    out = cx.op("dyn.unique", x, sorted=bool(node.attr("sorted", 1)), axis=axis)
    return [cx.get_item(out, i) for i in range(4)]


@converter("NonMaxSuppression", 10)
def non_max_suppression(cx, node):
    """dyn.non_max_suppression; an omitted bound before a given one takes
    ONNX's default (max boxes 0, IoU threshold 0)."""
    bounds = [node.input(i) for i in (2, 3, 4)]
    while bounds and bounds[-1] is None:
        bounds.pop()
    defaults = [cx.const(0, T.i64), cx.const(0.0, T.f32)]
    bounds = [b if b is not None else defaults[i] for i, b in enumerate(bounds)]
    return cx.op("dyn.non_max_suppression", node.input(0), node.input(1), *bounds,
                 center_point_box=node.attr("center_point_box", 0))


@converter("TensorScatter", 24)
def tensor_scatter(cx, node):
    """The update written into the cache at each sample's write index along
    `axis` (modulo the cache length in circular mode): one scatter_elements
    whose indices are write_index[b] + t, broadcast over the update."""
    import numpy as np
    cache, update, where = node.input(0), node.input(1), node.input(2)
    cs, us = cx.static_shape(cache, "past_cache"), cx.static_shape(update, "update")
    r = len(cs)
    axis = norm_axis(cx, node.attr("axis", -2), r)
    mode = node.attr("mode", "linear")
    if axis == 0 or mode not in ("linear", "circular"):
        raise cx.error(f"axis must not be the batch axis and mode is linear or circular, got {axis}, '{mode}'")
    if len(us) != r or any(u != c for i, (u, c) in enumerate(zip(us, cs)) if i != axis) or us[axis] > cs[axis]:
        raise cx.error(f"update {list(us)} does not fit the cache {list(cs)} along axis {axis}")
    steps = np.arange(us[axis], dtype=np.int64).reshape([-1 if i == axis else 1 for i in range(r)])
    idx = cx.const(steps)
    if where is not None:
        start = cx.op("reshape", cx.cast(where, T.i64), newshape=[cs[0]] + [1] * (r - 1))
        idx = cx.op("add", idx, start)
    if mode == "circular":
        idx = cx.op("floor_mod", idx, cx.const(np.int64(cs[axis])))
    idx = cx.op("broadcast_to", idx, shape=list(us))
    return cx.op("scatter_elements", cache, idx, update, axis=axis)
