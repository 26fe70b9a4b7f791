"""Operators whose output shape depends on input values (TVM's relay.dyn.*).

    %y = dyn.reshape(%x, %shape) {allowzero = false}
                               shape: a 1-d integer tensor of static length r; y has rank r,
                               every dimension '?' (0 copies x's dimension unless allowzero,
                               -1 is inferred: ONNX Reshape's rules)
    %t = dyn.topk(%x, %k) {axis = -1, ret_type = "both", is_ascend = false, dtype = "int32"}
                               k: a one-element integer tensor; the axis becomes '?'
    %s = dyn.slice(%x, %starts, %ends) {axes = [1], steps = [1]}
                               starts, ends: 1-d integer tensors, one value per axis (ONNX
                               Slice's bounds: negative from the end, clamped); each sliced
                               axis becomes '?'
    %a = dyn.arange(%start, %stop, %step) {dtype = "float32"}
                               one-element tensors; a 1-d '?' result,
                               ceil((stop - start) / step) elements (none if that is negative)
    %u = dyn.unique(%x) {sorted = true, axis = none}
                               tuple<values, indices, inverse_indices, counts> (ONNX Unique):
                               the distinct elements (slices along `axis`), in ascending
                               order or in the order they first occur
    %s = dyn.non_max_suppression(%boxes, %scores, %max, %iou, %score) {center_point_box = 0}
                               ONNX NonMaxSuppression: boxes (B, N, 4), scores (B, C, N),
                               three optional one-element bounds; (?, 3) i64 rows
                               [batch, class, box] of the boxes kept, class by class

A te.compute takes its output's extents from its inputs' shapes, and
these take theirs from the values, so they have no TE compute: they run
as numpy ops (the build says so once) and everything around them
compiles, sized per call.  The ONNX importer makes them where a Reshape's
shape, a TopK's k, a Range's or a Slice's bounds are run-time values
(BERT's position_ids[:, :seq] of a buffer), so one build
serves every value where it used to build per value.  Values that do not
fit (a shape whose size differs, k past the axis) are errors at the op
when it runs.  Patterns: opaque.
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import BOOL, INT, STR, enum, ints, optional
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from .base import MAX_RANK, OpPattern, RelayOp, tensor_type
from .util import dtype_attr, int_tensor, norm_axes, norm_axis, onnx_reshape, scalar_like

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
        if s.shape[0] > MAX_RANK:
            raise self.error(f"newshape has {s.shape[0]} values: the result's rank would be above {MAX_RANK}")
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


class DynSliceOp(RelayOp):
    """``dyn.slice(%x, %starts, %ends) {axes, steps}``: ONNX Slice with
    run-time bounds (numpy's slicing: negative counts from the end, out of
    range clamps)."""
    __slots__ = ()
    name = "relay.dyn.slice"
    OPERANDS = ("data", "starts", "ends")
    ATTRS = {"axes": Attr(ints()), "steps": Attr(ints())}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x, starts, ends):
        tensor_type(self, x)
        axes, steps = self.attributes["axes"], self.attributes["steps"]
        if len(axes) != len(steps) or 0 in steps:
            raise self.error(f"needs one non-zero step per axis, got axes {list(axes)} and steps {list(steps)}")
        axes = norm_axes(self, axes, x.rank)
        for t, what in ((starts, "starts"), (ends, "ends")):
            int_tensor(self, t, what)
            if t.shape != (len(axes),):
                raise self.error(f"expects {what} of {len(axes)} values (one per axis), got {t}")
        return x.with_shape(tuple(None if a in axes else d for a, d in enumerate(x.shape)))

    def compute(self, x, starts, ends):
        at = [slice(None)] * x.ndim
        for a, b, e, s in zip(norm_axes(self, self.attributes["axes"], x.ndim), np.asarray(starts).reshape(-1),
                              np.asarray(ends).reshape(-1), self.attributes["steps"]):
            at[a] = slice(int(b), int(e), s)
        return np.ascontiguousarray(x[tuple(at)])


class DynUniqueOp(RelayOp):
    """``dyn.unique(%x) {sorted, axis}``: ONNX's Unique (its four outputs)."""
    __slots__ = ()
    name = "relay.dyn.unique"
    OPERANDS = ("data",)
    ATTRS = {"sorted": Attr(BOOL, True), "axis": Attr(optional(INT), None)}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x):
        tensor_type(self, x)
        axis = self.attributes["axis"]
        if axis is None:
            values = T.TensorType((None,), x.element_type)
        else:
            a = norm_axis(self, axis, x.rank)
            values = x.with_shape(tuple(None if i == a else d for i, d in enumerate(x.shape)))
        q = T.TensorType((None,), T.i64)
        return T.TupleType((values, q, q, q))

    def compute(self, x):
        axis = self.attributes["axis"]
        if axis is not None:
            axis %= x.ndim
            flat = np.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)
            # np.unique over rows, keeping the slices whole
            _, idx, inv, cnt = np.unique(flat, axis=0, return_index=True, return_inverse=True, return_counts=True)
        else:
            _, idx, inv, cnt = np.unique(x.reshape(-1), return_index=True, return_inverse=True, return_counts=True)
        inv = inv.reshape(-1)
        if not self.attributes["sorted"]:
            order = np.argsort(idx, kind="stable")        # by first occurrence
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            idx, cnt, inv = idx[order], cnt[order], rank[inv]
        values = np.take(x, idx, axis=axis if axis is not None else None) if axis is not None \
            else x.reshape(-1)[idx]
        i64 = np.int64
        return (np.ascontiguousarray(values), idx.astype(i64), inv.astype(i64), cnt.astype(i64))


class DynNonMaxSuppressionOp(RelayOp):
    """``dyn.non_max_suppression(...)``: ONNX's NonMaxSuppression.  Per batch
    and class: boxes with a score above `score` (strictly), highest first
    (ties: lower index first), each kept unless its IoU with a kept box is
    above `iou`, at most `max` of them (0 or none: nothing kept)."""
    __slots__ = ()
    name = "relay.dyn.non_max_suppression"
    OPERANDS = ("boxes", "scores", "*bounds")
    ATTRS = {"center_point_box": Attr(INT, 0)}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, boxes, scores, *bounds):
        tensor_type(self, boxes, "boxes")
        tensor_type(self, scores, "scores")
        if boxes.rank != 3 or scores.rank != 3 or (boxes.shape[2] not in (None, 4)):
            raise self.error(f"expects boxes (batch, n, 4) and scores (batch, classes, n), got {boxes} and {scores}")
        if len(bounds) > 3:
            raise self.error(f"takes at most 3 bounds (max boxes, iou threshold, score threshold), got {len(bounds)}")
        for b, what in zip(bounds, ("max_output_boxes_per_class", "iou_threshold", "score_threshold")):
            scalar_like(self, b, what)
        if self.attributes["center_point_box"] not in (0, 1):
            raise self.error(f"center_point_box is 0 or 1, got {self.attributes['center_point_box']}")
        return T.TensorType((None, 3), T.i64)

    def compute(self, boxes, scores, *bounds):
        vals = [np.asarray(b).reshape(-1)[0] for b in bounds] + [None] * (3 - len(bounds))
        limit = int(vals[0]) if vals[0] is not None else 0
        iou_t = float(vals[1]) if vals[1] is not None else 0.0
        score_t = float(vals[2]) if vals[2] is not None else None
        b = boxes.astype(np.float64)
        if self.attributes["center_point_box"]:
            cx, cy, w, h = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
            y1, x1, y2, x2 = cy - h / 2, cx - w / 2, cy + h / 2, cx + w / 2
        else:   # corners in either order
            y1, y2 = np.minimum(b[..., 0], b[..., 2]), np.maximum(b[..., 0], b[..., 2])
            x1, x2 = np.minimum(b[..., 1], b[..., 3]), np.maximum(b[..., 1], b[..., 3])
        area = (y2 - y1) * (x2 - x1)
        out = []
        for n in range(scores.shape[0]):
            for c in range(scores.shape[1]):
                s = scores[n, c]
                cand = [i for i in np.argsort(-s, kind="stable") if score_t is None or s[i] > score_t]
                kept = []
                for i in cand:
                    if len(kept) >= limit:
                        break
                    ok = True
                    for j in kept:
                        ih = max(0.0, min(y2[n, i], y2[n, j]) - max(y1[n, i], y1[n, j]))
                        iw = max(0.0, min(x2[n, i], x2[n, j]) - max(x1[n, i], x1[n, j]))
                        inter = ih * iw
                        union = area[n, i] + area[n, j] - inter
                        if union > 0 and inter / union > iou_t:
                            ok = False
                            break
                    if ok:
                        kept.append(i)
                out += [(n, c, i) for i in kept]
        return np.asarray(out, dtype=np.int64).reshape(-1, 3)
