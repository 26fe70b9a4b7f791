"""Reductions.

    %s = sum(%x) {axis = [1, 2], keepdims = true} : tensor<2x1x1xf32>
    %m = mean(%x) {axis = -1}
    %i = argmax(%x) {axis = 1} : tensor<2xi32>
    %v = variance(%x) {axis = -1, keepdims = true, unbiased = false}
    %v = variance(%x, %m) {axis = -1, keepdims = true}     TVM's form: the mean given

    sum mean max min prod logsumexp all any variance std argmax argmin

Attributes (TVM's): axis = unset (every axis) | an int | a list; keepdims
= false; exclude = false (reduce every axis *but* the listed ones; an
empty list with exclude reduces everything, without exclude nothing).
argmax/argmin also select_last_index = false and give int32 indices;
variance/std also unbiased = false (divide by n - 1) and take an optional
second operand, the mean with keepdims' shape, as TVM's variance does.
all/any take and give booleans.

Pattern comm-reduce; layout rule "axis" (the axes are renumbered; a
reduction that drops axes cannot keep a permuted layout).
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import BOOL
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from .base import OpPattern, RelayOp, same_dtype, tensor_type
from .util import AXES, dims_match, norm_axes, prod, shape_text

np = lazy_module("numpy")   # parsing and printing never need numpy

REDUCE_ATTRS = {"axis": Attr(AXES, None), "keepdims": Attr(BOOL, False), "exclude": Attr(BOOL, False)}


class ReduceOp(RelayOp):
    __slots__ = ()
    OPERANDS = ("data",)
    ATTRS = REDUCE_ATTRS
    PATTERN = OpPattern.COMM_REDUCE
    LAYOUT = "axis"
    AXIS_ATTRS = ("axis",)
    FN = None
    KIND = "any"        # "any" | "float" | "bool"

    def relayout(self, perm):
        if not self.attributes["keepdims"]:
            return None   # the output loses axes, so it cannot stay in the permuted layout
        return super().relayout(perm)

    def reduce_axes(self, rank):
        """The reduced axes, sorted."""
        a = self.attributes
        ax = a.get("axis")
        if ax is None:
            return list(range(rank))
        listed = norm_axes(self, ax, rank)
        if a["exclude"]:
            return [i for i in range(rank) if i not in listed]
        return sorted(listed)

    def out_shape(self, shape):
        axes = self.reduce_axes(len(shape))
        if self.attributes["keepdims"]:
            return tuple(1 if i in axes else d for i, d in enumerate(shape))
        return tuple(d for i, d in enumerate(shape) if i not in axes)

    def check_kind(self, x):
        e = x.element_type
        if self.KIND == "float" and not T.is_float(e):
            raise self.error(f"expects a floating-point tensor, got {x}")
        if self.KIND == "bool" and e is not T.i1:
            raise self.error(f"expects a boolean (i1) tensor, got {x}")

    def type_relation(self, x):
        tensor_type(self, x)
        self.check_kind(x)
        return x.with_shape(self.out_shape(x.shape))

    def compute(self, x):
        axes = tuple(self.reduce_axes(x.ndim))
        out = self.FN(x, axes)
        return np.asarray(out).reshape(self.out_shape(x.shape)).astype(self.results[0].type.dtype, copy=False)


def _reduce(name, fn, kind="any"):
    cls_name = "".join(p.capitalize() for p in name.split("_")) + "Op"
    return type(cls_name, (ReduceOp,), {"__slots__": (), "name": "relay." + name, "FN": staticmethod(fn),
                                        "KIND": kind, "__doc__": f"``{name}(%x) {{axis, keepdims, exclude}}``"})


def _mean(x, axes):
    m = x.mean(axis=axes, dtype=np.float64)
    return np.trunc(m) if np.issubdtype(x.dtype, np.integer) else m


def _logsumexp(x, axes):
    z = x.astype(np.float64)
    if z.size == 0:
        return np.log(np.exp(z).sum(axis=axes))
    m = z.max(axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    return np.log(np.exp(z - m).sum(axis=axes, keepdims=True)) + m


SumOp = _reduce("sum", lambda x, ax: x.sum(axis=ax, dtype=x.dtype if x.dtype.kind == "f" else None))
MeanOp = _reduce("mean", _mean)
MaxOp = _reduce("max", lambda x, ax: x.max(axis=ax))
MinOp = _reduce("min", lambda x, ax: x.min(axis=ax))
ProdOp = _reduce("prod", lambda x, ax: x.prod(axis=ax, dtype=x.dtype if x.dtype.kind == "f" else None))
LogSumExpOp = _reduce("logsumexp", _logsumexp, "float")
AllOp = _reduce("all", lambda x, ax: x.all(axis=ax), "bool")
AnyOp = _reduce("any", lambda x, ax: x.any(axis=ax), "bool")


class ArgReduceOp(ReduceOp):
    __slots__ = ()
    ATTRS = dict(REDUCE_ATTRS, select_last_index=Attr(BOOL, False))
    LAST = None

    def type_relation(self, x):
        tensor_type(self, x)
        for d in self.reduce_axes(x.rank):
            if x.shape[d] == 0:
                raise self.error(f"cannot take {self.op_name} over the empty axis {d} of {x}")
        return T.TensorType(self.out_shape(x.shape), T.i32)

    def compute(self, x):
        axes = self.reduce_axes(x.ndim)
        keep = [i for i in range(x.ndim) if i not in axes]
        # one flat axis of the reduced ones, in row-major order (as TVM's argmax over several axes)
        z = x.transpose(keep + axes).reshape([x.shape[i] for i in keep] + [-1])
        if self.attributes["select_last_index"]:
            idx = z.shape[-1] - 1 - self.FN(z[..., ::-1], axis=-1)
        else:
            idx = self.FN(z, axis=-1)
        return idx.reshape(self.out_shape(x.shape)).astype(np.int32)


class ArgmaxOp(ArgReduceOp):
    __slots__ = ()
    name = "relay.argmax"
    FN = staticmethod(lambda z, axis: np.argmax(z, axis=axis))


class ArgminOp(ArgReduceOp):
    __slots__ = ()
    name = "relay.argmin"
    FN = staticmethod(lambda z, axis: np.argmin(z, axis=axis))


class VarianceOp(ReduceOp):
    __slots__ = ()
    name = "relay.variance"
    OPERANDS = ("data", "*mean")
    ATTRS = dict(REDUCE_ATTRS, unbiased=Attr(BOOL, False))
    KIND = "float"
    SQRT = False

    def type_relation(self, x, *mean):
        tensor_type(self, x)
        self.check_kind(x)
        if len(mean) > 1:
            raise self.error(f"expects at most one mean operand, got {len(mean)}")
        if mean:
            m = tensor_type(self, mean[0], "mean")
            same_dtype(self, x, m)
            kept = tuple(1 if i in self.reduce_axes(x.rank) else d for i, d in enumerate(x.shape))
            fits = m.rank <= len(kept) and all(
                dm in (1, None) or dims_match(dm, dk) for dm, dk in zip(m.shape[::-1], kept[::-1]))
            if not fits:
                raise self.error(f"the mean {m} does not broadcast to the reduced shape {shape_text(kept)}")
        n = prod(x.shape[i] for i in self.reduce_axes(x.rank))
        if self.attributes["unbiased"] and n is not None and n < 2:
            raise self.error(f"an unbiased variance needs at least 2 elements per group, got {n}")
        return x.with_shape(self.out_shape(x.shape))

    def compute(self, x, *mean):
        axes = tuple(self.reduce_axes(x.ndim))
        z = x.astype(np.float64)
        m = mean[0].astype(np.float64) if mean else z.mean(axis=axes, keepdims=True)
        n = prod(x.shape[i] for i in axes) - (1 if self.attributes["unbiased"] else 0)
        v = ((z - m) ** 2).sum(axis=axes) / n
        if self.SQRT:
            v = np.sqrt(v)
        return np.asarray(v).reshape(self.out_shape(x.shape)).astype(x.dtype)


class StdOp(VarianceOp):
    __slots__ = ()
    name = "relay.std"
    SQRT = True
