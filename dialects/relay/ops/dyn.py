"""Operators whose output shape depends on input values (TVM's relay.dyn.*).

    %y = dyn.reshape(%x, %shape) {allowzero = false}
                               shape: a 1-d integer tensor of static length r; y has rank r,
                               every dimension '?' (0 copies x's dimension unless allowzero,
                               -1 is inferred: ONNX Reshape's rules)
    %t = dyn.topk(%x, %k) {axis = -1, ret_type = "both", is_ascend = false, dtype = "int32"}
                               k: a one-element integer tensor; the axis becomes '?'
    %a = dyn.arange(%start, %stop, %step) {dtype = "float32"}
                               one-element tensors; a 1-d '?' result,
                               ceil((stop - start) / step) elements (none if that is negative)

A te.compute takes its output's extents from its inputs' shapes, and
these take theirs from the values, so they have no TE compute: they run
as numpy ops (the build says so once) and everything around them
compiles, sized per call.  The ONNX importer makes them where a Reshape's
shape, a TopK's k or a Range's bounds are run-time values, so one build
serves every value where it used to build per value.  Values that do not
fit (a shape whose size differs, k past the axis) are errors at the op
when it runs.  Patterns: opaque.
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import BOOL, INT, STR, enum
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from .base import OpPattern, RelayOp, tensor_type
from .util import dtype_attr, int_tensor, norm_axis, onnx_reshape, scalar_like

np = lazy_module("numpy")


class DynReshapeOp(RelayOp):
    """``dyn.reshape(%x, %shape)``: x with the shape the values of `shape` say."""
    __slots__ = ()
    name = "relay.dyn.reshape"
    OPERANDS = ("data", "newshape")
    ATTRS = {"allowzero": Attr(BOOL, False)}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x, s):
        tensor_type(self, x)
        int_tensor(self, s, "newshape")
        if s.rank != 1 or s.shape[0] is None:
            raise self.error(f"expects a 1-d newshape of static length (the result's rank), got {s}")
        return T.TensorType((None,) * s.shape[0], x.element_type)

    def compute(self, x, s):
        codes = [int(v) for v in np.asarray(s).reshape(-1)]
        try:
            shape = onnx_reshape(x.shape, codes, self.attributes["allowzero"])
        except ValueError as e:
            raise self.error(f"{e} (the data is {list(x.shape)})") from None
        return np.ascontiguousarray(x.reshape(shape))


class DynTopKOp(RelayOp):
    """``dyn.topk(%x, %k)``: topk with k a run-time value."""
    __slots__ = ()
    name = "relay.dyn.topk"
    OPERANDS = ("data", "k")
    ATTRS = {"axis": Attr(INT, -1), "ret_type": Attr(enum("both", "values", "indices"), "both"),
             "is_ascend": Attr(BOOL, False), "dtype": Attr(STR, "int32")}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x, k):
        tensor_type(self, x)
        int_tensor(self, k, "k")
        scalar_like(self, k, "k")
        axis = norm_axis(self, self.attributes["axis"], x.rank)
        shape = list(x.shape)
        shape[axis] = None
        values = x.with_shape(shape)
        indices = T.TensorType(shape, dtype_attr(self, default=T.i32))
        rt = self.attributes["ret_type"]
        return T.TupleType((values, indices)) if rt == "both" else values if rt == "values" else indices

    def compute(self, x, k):
        from .tensor import top_k
        axis = self.attributes["axis"] % x.ndim
        k = int(np.asarray(k).reshape(-1)[0])
        if not 0 <= k <= x.shape[axis]:
            raise self.error(f"k = {k} is outside [0, {x.shape[axis]}] (the axis' size)")
        return top_k(x, k, axis, self.attributes["is_ascend"], self.attributes["ret_type"],
                     dtype_attr(self, default=T.i32))


class DynArangeOp(RelayOp):
    """``dyn.arange(%start, %stop, %step)``: numpy's arange of run-time bounds."""
    __slots__ = ()
    name = "relay.dyn.arange"
    OPERANDS = ("start", "stop", "step")
    ATTRS = {"dtype": Attr(STR, "float32")}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, start, stop, step):
        for t, what in ((start, "start"), (stop, "stop"), (step, "step")):
            scalar_like(self, t, what)
        return T.TensorType((None,), dtype_attr(self, default=T.f32))

    def compute(self, start, stop, step):
        a, b, d = (np.asarray(v).reshape(-1)[0] for v in (start, stop, step))
        if d == 0:
            raise self.error("step is 0")
        n = max(int(np.ceil((b - a) / d)), 0)
        dt = T.to_numpy_dtype(dtype_attr(self, default=T.f32))
        return (a + d * np.arange(n)).astype(dt)
