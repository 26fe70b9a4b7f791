"""Tensor creation, shape queries and indexing.

    %z = zeros() {shape = [2, 3], dtype = "float32"}          also ones
    %f = full(%v) {shape = [2, 3]}                           %v: a one-element tensor; dtype = "" (%v's)
    %a = arange() {start = 0.0, stop = 10.0, step = 1.0, dtype = "float32"}
    %a = arange_like(%x) {axis = 1, start = 0.0, step = 1.0, dtype = "int64"}   as many as x's axis has
    %s = shape_of(%x) {dtype = "int32"} : tensor<4xi32>
    %n = ndarray_size(%x) {dtype = "int32"} : tensor<i32>
    %t = take(%x, %i) {axis = 0, batch_dims = 0, mode = "clip"}      mode "clip" | "wrap" | "fast"
    %g = gather(%x, %i) {axis = 1}                           out[..i..] = x[.., i[..i..], ..] along axis
    %g = gather_nd(%x, %i) {batch_dims = 0}                  i: (M, Y...) indexes x's first M axes
    %s = scatter_elements(%x, %i, %u) {axis = 0, reduction = "update"}   update | add | mul | min | max
    %h = one_hot(%i, %on, %off) {depth = 10, axis = -1, dtype = "float32"}
    %s = scatter_nd(%x, %i, %u) {mode = "update"}         i: (M, Y...), u: (Y..., x.shape[M:])
    %w = argwhere(%c) : tensor<?x2xi32>                   one row of coordinates per non-zero
    %t = topk(%x) {k = 1, axis = -1, ret_type = "both", is_ascend = false, dtype = "int32"}
    %s = sort(%x) {axis = -1, is_ascend = true}           also argsort (+ dtype = "int32")
    %c = cumsum(%x) {axis, dtype = "", exclusive = false} also cumprod; unset axis: flattened

take: unset axis indexes the flattened data; "clip" clamps indices into
range (so -1 reads element 0, as TVM), "wrap" takes them modulo the size,
"fast" assumes them in range (negative ones count from the end; the
interpreter reports any other).  gather, gather_nd and scatter_elements
accept negative indices (from the end, as ONNX) and report out-of-range
ones.  one_hot: an index outside [0, depth) gives an all-off row (TVM).
arange takes start/stop/step as attributes, so its shape is static;
arange_like counts what a dimension of its operand holds (a '?' one too:
torch.arange(x.size(1)) over a dynamic sequence), never reading its values.

Sorting is stable: equal elements keep their index order (ONNX TopK's
rule), also when descending.  topk with k < 1 keeps the whole axis.

Patterns (TVM's): zeros/ones/full elemwise, arange and shape_of opaque,
ndarray_size/take/gather/gather_nd injective, one_hot out-elemwise-fusable,
scatter_elements, scatter_nd, argwhere, topk, sort, argsort, cumsum and
cumprod opaque.  Layout rule opaque for all.
"""

from __future__ import annotations

import math

from ....ir import types as T
from ....ir.attrkinds import BOOL, FLOAT, INT, STR, enum, ints, optional
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from .base import MAX_DIM, OpPattern, RelayOp, finite, same_dtype, tensor_type
from .util import dims_match, dtype_attr, int_tensor, norm_axis, scalar_like, shape_text, unify_dim

np = lazy_module("numpy")   # parsing and printing never need numpy


# -- creation -------------------------------------------------------------------------------

class ConstantFillOp(RelayOp):
    __slots__ = ()
    OPERANDS = ()
    ATTRS = {"shape": Attr(ints()), "dtype": Attr(STR, "float32")}
    PATTERN = OpPattern.ELEMWISE
    VALUE = 0

    def type_relation(self):
        shape = self.attributes["shape"]
        if any(d < 0 for d in shape):
            raise self.error(f"shape {list(shape)} has a negative dimension")
        return T.TensorType(shape, dtype_attr(self))

    def compute(self):
        t = self.results[0].type
        return np.full(t.shape, self.VALUE, dtype=t.dtype)


class ZerosOp(ConstantFillOp):
    __slots__ = ()
    name = "relay.zeros"


class OnesOp(ConstantFillOp):
    __slots__ = ()
    name = "relay.ones"
    VALUE = 1


class FullOp(RelayOp):
    __slots__ = ()
    name = "relay.full"
    OPERANDS = ("fill_value",)
    ATTRS = {"shape": Attr(ints()), "dtype": Attr(STR, "")}
    PATTERN = OpPattern.ELEMWISE

    def type_relation(self, v):
        scalar_like(self, v, "fill_value")
        shape = self.attributes["shape"]
        if any(d < 0 for d in shape):
            raise self.error(f"shape {list(shape)} has a negative dimension")
        return T.TensorType(shape, dtype_attr(self, default=v.element_type))

    def compute(self, v):
        t = self.results[0].type
        return np.full(t.shape, v.reshape(()), dtype=t.dtype)


class ArangeOp(RelayOp):
    __slots__ = ()
    name = "relay.arange"
    OPERANDS = ()
    ATTRS = {"start": Attr(FLOAT, 0.0), "stop": Attr(FLOAT), "step": Attr(FLOAT, 1.0),
             "dtype": Attr(STR, "float32")}
    PATTERN = OpPattern.OPAQUE

    def length(self):
        a = self.attributes
        for k in ("start", "stop", "step"):
            finite(self, k)
        if a["step"] == 0:
            raise self.error("step must be non-zero")
        n = (a["stop"] - a["start"]) / a["step"]
        if not (math.isfinite(n) and n < MAX_DIM):
            raise self.error(f"arange from {a['start']} to {a['stop']} by {a['step']} has too many elements")
        return max(0, math.ceil(n))

    def type_relation(self):
        return T.TensorType((self.length(),), dtype_attr(self))

    def compute(self):
        a = self.attributes
        dt = self.results[0].type.dtype
        # start + i * step in the result's dtype, as TVM computes each element
        start, step = np.asarray(a["start"]).astype(dt), np.asarray(a["step"]).astype(dt)
        return (start + np.arange(self.length()).astype(dt) * step).astype(dt)


class ArangeLikeOp(RelayOp):
    """start + i * step for i below x.shape[axis]: an arange whose length is
    a dimension of `x` (its values are not read)."""
    __slots__ = ()
    name = "relay.arange_like"
    OPERANDS = ("data",)
    ATTRS = {"axis": Attr(INT, 0), "start": Attr(FLOAT, 0.0), "step": Attr(FLOAT, 1.0),
             "dtype": Attr(STR, "float32")}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x):
        tensor_type(self, x)
        axis = norm_axis(self, self.attributes["axis"], x.rank)
        for k in ("start", "step"):
            finite(self, k)
        return T.TensorType((x.shape[axis],), dtype_attr(self))

    def compute(self, x):
        a = self.attributes
        dt = self.results[0].type.dtype
        n = x.shape[a["axis"] % x.ndim]
        start, step = np.asarray(a["start"]).astype(dt), np.asarray(a["step"]).astype(dt)
        return (start + np.arange(n).astype(dt) * step).astype(dt)


# -- shape queries ---------------------------------------------------------------------------

class ShapeOfOp(RelayOp):
    __slots__ = ()
    name = "relay.shape_of"
    OPERANDS = ("data",)
    ATTRS = {"dtype": Attr(STR, "int32")}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x):
        tensor_type(self, x)
        return T.TensorType((x.rank,), dtype_attr(self))

    def compute(self, x):
        return np.asarray(x.shape, dtype=self.results[0].type.dtype).reshape(x.ndim)


class NdarraySizeOp(RelayOp):
    __slots__ = ()
    name = "relay.ndarray_size"
    OPERANDS = ("data",)
    ATTRS = {"dtype": Attr(STR, "int32")}
    PATTERN = OpPattern.INJECTIVE

    def type_relation(self, x):
        tensor_type(self, x)
        return T.TensorType((), dtype_attr(self))

    def compute(self, x):
        return np.asarray(x.size, dtype=self.results[0].type.dtype)


# -- indexing ---------------------------------------------------------------------------------

def wrap_indices(op, idx, n, what="index"):
    """Negative indices count from the end; anything outside [-n, n) is an error."""
    idx = idx.astype(np.int64)
    bad = (idx < -n) | (idx >= n)
    if bad.any():
        raise op.error(f"{what} {int(idx[bad].flat[0])} is out of range for a dimension of size {n}")
    return np.where(idx < 0, idx + n, idx)


class TakeOp(RelayOp):
    __slots__ = ()
    name = "relay.take"
    OPERANDS = ("data", "indices")
    ATTRS = {"axis": Attr(optional(INT), None), "batch_dims": Attr(INT, 0),
             "mode": Attr(enum("clip", "wrap", "fast"), "clip")}
    PATTERN = OpPattern.INJECTIVE
    # with 1-d indices along an axis (a permutation or selection of its
    # entries) the op follows its data into any layout, its axis renumbered
    LAYOUT = "axis"
    AXIS_ATTRS = ("axis",)

    def relayout(self, perm):
        i = self.operands[1].type
        if self.attributes.get("axis") is None or self.attributes["batch_dims"] or getattr(i, "rank", None) != 1:
            return None
        return super().relayout(perm)

    def type_relation(self, x, i):
        tensor_type(self, x)
        int_tensor(self, i, "indices")
        axis = self.attributes.get("axis")
        b = self.attributes["batch_dims"]
        if axis is None:
            if b:
                raise self.error("batch_dims needs an axis")
            return x.with_shape(i.shape)
        axis = norm_axis(self, axis, x.rank)
        b = b + i.rank if b < 0 else b
        if not 0 <= b <= min(axis, i.rank):
            raise self.error(f"batch_dims {self.attributes['batch_dims']} must be in [0, {min(axis, i.rank)}]")
        for k in range(b):
            unify_dim(self, x.shape[k], i.shape[k], f"batch dimension {k} of data and indices differs")
        return x.with_shape(x.shape[:axis] + i.shape[b:] + x.shape[axis + 1:])

    def fix(self, idx, n):
        mode = self.attributes["mode"]
        idx = idx.astype(np.int64)
        if mode == "clip":
            return np.clip(idx, 0, n - 1)
        if mode == "wrap":
            return np.mod(idx, n)
        return wrap_indices(self, idx, n)

    def compute(self, x, i):
        axis = self.attributes.get("axis")
        if axis is None:
            return x.reshape(-1)[self.fix(i, x.size)]
        axis = axis % x.ndim
        b = self.attributes["batch_dims"]
        b = b + i.ndim if b < 0 else b
        idx = self.fix(i, x.shape[axis])
        if b == 0:
            return np.take(x, idx, axis=axis)
        out = np.empty(self.results[0].type.shape if None not in self.results[0].type.shape
                       else x.shape[:axis] + i.shape[b:] + x.shape[axis + 1:], dtype=x.dtype)
        for bi in np.ndindex(*x.shape[:b]):
            out[bi] = np.take(x[bi], idx[bi], axis=axis - b)
        return out


class GatherOp(RelayOp):
    __slots__ = ()
    name = "relay.gather"
    OPERANDS = ("data", "indices")
    ATTRS = {"axis": Attr(INT)}
    PATTERN = OpPattern.INJECTIVE

    def type_relation(self, x, i):
        tensor_type(self, x)
        int_tensor(self, i, "indices")
        if x.rank != i.rank:
            raise self.error(f"data and indices must have the same rank, got {x} and {i}")
        axis = norm_axis(self, self.attributes["axis"], x.rank)
        for k, (di, dx) in enumerate(zip(i.shape, x.shape)):
            # off the axis, index positions are data positions: they must exist
            if k != axis and di is not None and dx is not None and di > dx:
                raise self.error(f"indices dimension {k} ({di}) exceeds the data's ({dx})")
        return x.with_shape(i.shape)

    def compute(self, x, i):
        axis = self.attributes["axis"] % x.ndim
        idx = wrap_indices(self, i, x.shape[axis])
        sub = x[tuple(slice(0, d) if k != axis else slice(None) for k, d in enumerate(i.shape))]
        return np.take_along_axis(sub, idx, axis=axis)


class GatherNDOp(RelayOp):
    __slots__ = ()
    name = "relay.gather_nd"
    OPERANDS = ("data", "indices")
    ATTRS = {"batch_dims": Attr(INT, 0), "index_rank": Attr(optional(INT), None)}
    PATTERN = OpPattern.INJECTIVE

    def type_relation(self, x, i):
        tensor_type(self, x)
        int_tensor(self, i, "indices")
        b = self.attributes["batch_dims"]
        if i.rank < 1:
            raise self.error(f"indices must have rank >= 1 (the first axis indexes the data), got {i}")
        m = i.shape[0]
        if m is None:
            m = self.attributes.get("index_rank")
            if m is None:
                raise self.error("indices has a dynamic first axis: give index_rank")
        elif self.attributes.get("index_rank") not in (None, m):
            raise self.error(f"index_rank = {self.attributes['index_rank']} but indices has {m} rows")
        if b < 0 or b + m > x.rank or b > i.rank - 1:
            raise self.error(f"{m} index rows after batch_dims {b} do not fit data of rank {x.rank}")
        for k in range(b):
            unify_dim(self, x.shape[k], i.shape[1 + k], f"batch dimension {k} of data and indices differs")
        return x.with_shape(x.shape[:b] + i.shape[1 + b:] + x.shape[b + m:])

    def compute(self, x, i):
        b = self.attributes["batch_dims"]
        m = i.shape[0]
        rows = tuple(wrap_indices(self, i[k], x.shape[b + k]) for k in range(m))
        batch = []
        ishape = i.shape[1:]
        for k in range(b):
            shape = [1] * len(ishape)
            shape[k] = ishape[k]
            batch.append(np.arange(ishape[k]).reshape(shape))
        return x[tuple(batch) + rows]


class ScatterElementsOp(RelayOp):
    __slots__ = ()
    name = "relay.scatter_elements"
    OPERANDS = ("data", "indices", "updates")
    ATTRS = {"axis": Attr(INT, 0), "reduction": Attr(enum("update", "add", "mul", "min", "max"), "update")}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x, i, u):
        tensor_type(self, x)
        int_tensor(self, i, "indices")
        tensor_type(self, u, "updates")
        same_dtype(self, x, u)
        if not (x.rank == i.rank == u.rank):
            raise self.error(f"data, indices and updates must have the same rank, got {x}, {i} and {u}")
        norm_axis(self, self.attributes["axis"], x.rank)
        for k, (a, c) in enumerate(zip(i.shape, u.shape)):
            if not dims_match(a, c):
                raise self.error(f"indices {shape_text(i.shape)} and updates {shape_text(u.shape)} differ in "
                                 f"dimension {k}")
        return x

    def compute(self, x, i, u):
        axis = self.attributes["axis"] % x.ndim
        grid = list(np.indices(i.shape, sparse=True))
        grid[axis] = wrap_indices(self, i, x.shape[axis])
        where = tuple(grid)
        out = x.copy()
        red = self.attributes["reduction"]
        if red == "update":
            out[where] = u
        else:
            fn = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[red]
            fn.at(out, where, u)
        return out


class OneHotOp(RelayOp):
    __slots__ = ()
    name = "relay.one_hot"
    OPERANDS = ("indices", "on_value", "off_value")
    ATTRS = {"depth": Attr(INT), "axis": Attr(INT, -1), "dtype": Attr(STR, "")}
    PATTERN = OpPattern.OUT_ELEMWISE_FUSABLE

    def position(self, rank):
        axis = self.attributes["axis"]
        if not -rank - 1 <= axis <= rank:
            raise self.error(f"axis {axis} is out of range for inserting into rank {rank}")
        return axis % (rank + 1)

    def type_relation(self, i, on, off):
        int_tensor(self, i, "indices")
        scalar_like(self, on, "on_value")
        scalar_like(self, off, "off_value")
        same_dtype(self, on, off)
        depth = self.attributes["depth"]
        if depth < 0:
            raise self.error(f"depth must be non-negative, got {depth}")
        shape = list(i.shape)
        shape.insert(self.position(i.rank), depth)
        return T.TensorType(shape, dtype_attr(self, default=on.element_type))

    def compute(self, i, on, off):
        depth = self.attributes["depth"]
        hot = i[..., None] == np.arange(depth)
        hot = np.moveaxis(hot, -1, self.position(i.ndim))
        dt = self.results[0].type.dtype
        return np.where(hot, on.reshape(()).astype(dt), off.reshape(()).astype(dt))


class ScatterNDOp(RelayOp):
    """``scatter_nd(%x, %i, %u) {mode}``: out[i[:, y...]] (mode)= u[y...];
    indices (M, Y...) as gather_nd's, updates (Y..., x.shape[M:])."""
    __slots__ = ()
    name = "relay.scatter_nd"
    OPERANDS = ("data", "indices", "updates")
    ATTRS = {"mode": Attr(enum("update", "add", "mul", "min", "max"), "update")}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x, i, u):
        tensor_type(self, x)
        int_tensor(self, i, "indices")
        tensor_type(self, u, "updates")
        same_dtype(self, x, u)
        if i.rank < 1:
            raise self.error(f"indices must have rank >= 1 (the first axis holds the coordinates), got {i}")
        if i.shape[0] is None:
            raise self.error(f"indices has a dynamic first axis, but the number of coordinates must be static: {i}")
        m = i.shape[0]
        if m > x.rank:
            raise self.error(f"{m} index rows do not fit data of rank {x.rank}")
        want = i.shape[1:] + x.shape[m:]
        if u.rank != len(want) or not all(dims_match(a, b) for a, b in zip(u.shape, want)):
            raise self.error(f"updates must have the shape {shape_text(want)}, got {u}")
        return x

    def compute(self, x, i, u):
        where = tuple(wrap_indices(self, i[k], x.shape[k]) for k in range(i.shape[0]))
        out = x.copy()
        mode = self.attributes["mode"]
        if mode == "update":
            out[where] = u
        else:
            {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[mode].at(out, where, u)
        return out


class ArgWhereOp(RelayOp):
    """``argwhere(%cond)``: the coordinates of the non-zero elements, one row
    each, in row-major order; the row count is known only when run."""
    __slots__ = ()
    name = "relay.argwhere"
    OPERANDS = ("condition",)
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, c):
        tensor_type(self, c, "condition")
        return T.TensorType((None, c.rank), T.i32)

    def compute(self, c):
        return np.argwhere(c).astype(np.int32).reshape(-1, c.ndim)


# -- sorting and scans --------------------------------------------------------------------------

def _order(x, axis, ascend):
    """Indices that sort x along axis; equal elements keep their index order
    either way (ONNX TopK's rule).  Descending: sort the reversed axis
    ascending (stable), then read it backwards -- no negation, so unsigned
    and boolean data sort right too."""
    if ascend:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    return n - 1 - np.flip(np.argsort(np.flip(x, axis=axis), axis=axis, kind="stable"), axis=axis)


class TopKOp(RelayOp):
    """``topk(%x) {k = 1, axis = -1, ret_type = "both", is_ascend = false, dtype = "int32"}``:
    the k largest (smallest with is_ascend) along axis, in order; k < 1 keeps
    them all.  ret_type "both" gives tuple<values, indices>."""
    __slots__ = ()
    name = "relay.topk"
    OPERANDS = ("data",)
    ATTRS = {"k": Attr(INT, 1), "axis": Attr(INT, -1), "ret_type": Attr(enum("both", "values", "indices"), "both"),
             "is_ascend": Attr(BOOL, False), "dtype": Attr(STR, "int32")}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x):
        tensor_type(self, x)
        axis = norm_axis(self, self.attributes["axis"], x.rank)
        k, d = self.attributes["k"], x.shape[axis]
        if k >= 1 and d is not None and k > d:
            raise self.error(f"k = {k} is larger than the axis' size {d}")
        shape = list(x.shape)
        shape[axis] = k if k >= 1 else d
        values = x.with_shape(shape)
        indices = T.TensorType(shape, dtype_attr(self, default=T.i32))
        rt = self.attributes["ret_type"]
        return T.TupleType((values, indices)) if rt == "both" else values if rt == "values" else indices

    def compute(self, x):
        axis = self.attributes["axis"] % x.ndim
        k = self.attributes["k"]
        return top_k(x, x.shape[axis] if k < 1 else k, axis, self.attributes["is_ascend"],
                     self.attributes["ret_type"], dtype_attr(self, default=T.i32))


def top_k(x, k, axis, ascend, ret_type, index_type):
    """The k first of x along axis in sorted order (topk's and dyn.topk's
    compute): values, indices (of `index_type`) or both."""
    idx = np.take(_order(x, axis, ascend), np.arange(k), axis=axis)
    values = np.take_along_axis(x, idx, axis=axis)
    idx = idx.astype(T.to_numpy_dtype(index_type))
    return (values, idx) if ret_type == "both" else values if ret_type == "values" else idx


class SortOp(RelayOp):
    __slots__ = ()
    name = "relay.sort"
    OPERANDS = ("data",)
    ATTRS = {"axis": Attr(INT, -1), "is_ascend": Attr(BOOL, True)}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x):
        tensor_type(self, x)
        norm_axis(self, self.attributes["axis"], x.rank)
        return x

    def compute(self, x):
        axis = self.attributes["axis"] % x.ndim
        return np.take_along_axis(x, _order(x, axis, self.attributes["is_ascend"]), axis=axis)


class ArgsortOp(SortOp):
    __slots__ = ()
    name = "relay.argsort"
    ATTRS = {"axis": Attr(INT, -1), "is_ascend": Attr(BOOL, True), "dtype": Attr(STR, "int32")}

    def type_relation(self, x):
        return super().type_relation(x).with_element(dtype_attr(self, default=T.i32))

    def compute(self, x):
        axis = self.attributes["axis"] % x.ndim
        return _order(x, axis, self.attributes["is_ascend"]).astype(self.results[0].type.dtype)


class CumsumOp(RelayOp):
    """``cumsum(%x) {axis, dtype = "", exclusive = false}``: unset axis scans
    the flattened data; exclusive sums exclude the element itself."""
    __slots__ = ()
    name = "relay.cumsum"
    OPERANDS = ("data",)
    ATTRS = {"axis": Attr(optional(INT), None), "dtype": Attr(STR, ""), "exclusive": Attr(BOOL, False)}
    PATTERN = OpPattern.OPAQUE
    FN = "cumsum"
    IDENTITY = 0

    def type_relation(self, x):
        tensor_type(self, x)
        e = dtype_attr(self, default=x.element_type)
        axis = self.attributes.get("axis")
        if axis is None:
            return T.TensorType((x.num_elements(),), e)
        norm_axis(self, axis, x.rank)
        return x.with_element(e)

    def compute(self, x):
        dt = self.results[0].type.dtype
        axis = self.attributes.get("axis")
        if axis is None:
            x, axis = x.reshape(-1), 0
        y = getattr(np, self.FN)(x.astype(dt), axis=axis, dtype=dt)
        if self.attributes["exclusive"]:
            y = np.moveaxis(y, axis, -1)
            first = np.full(y.shape[:-1] + (1,), self.IDENTITY, dtype=dt)
            y = np.moveaxis(np.concatenate([first, y[..., :-1]], axis=-1), -1, axis)
        return y


class CumprodOp(CumsumOp):
    __slots__ = ()
    name = "relay.cumprod"
    FN = "cumprod"
    IDENTITY = 1
