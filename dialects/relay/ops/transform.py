"""Data movement: shapes, axes, joining and slicing.

    %r = reshape(%x) {newshape = [0, -1]}            TVM's codes: 0 copy, -1 infer, -2 copy the rest,
                                                     -3 merge two, -4 split one into the next two
    %r = reshape_like(%x, %like)
    %t = transpose(%x) {axes = [0, 2, 1]}            axes unset: reversed
    %s = squeeze(%x) {axis = [1]}                    axis unset: every static 1
    %e = expand_dims(%x) {axis = 1, num_newaxis = 1}
    %c = concatenate(%a, %b, ...) {axis = 0}
    %p = split(%x) {indices_or_sections = 3, axis = 0}       : tuple<...>; an int splits evenly,
                                                     a list gives the split points
    %k = stack(%a, %b, ...) {axis = 0}
    %v = strided_slice(%x) {begin = [0, 1], end = [2, 3], strides = [1], axes = [1, 2], slice_mode = "end"}
    %b = broadcast_to(%x) {shape = [4, 3]}           also broadcast_to_like(%x, %like)
    %t = tile(%x) {reps = [2, 1]}
    %r = repeat(%x) {repeats = 2, axis = 0}
    %r = reverse(%x) {axis = 0}
    %t = layout_transform(%x) {src_layout = "NCHW", dst_layout = "NHWC"}
    %s = reverse_sequence(%x, %lengths) {seq_axis = 1, batch_axis = 0}
    %e = einsum(%a, %b) {equation = "ij,jk->ik"}     numpy's einsum; TVM's tuple is the operands here

strided_slice: python slicing per axis (negative indices count from the
end, out-of-range ends clamp); unset axes means the first len(begin) axes;
missing ends run to the end, missing strides are 1; slice_mode "size"
reads `end` as sizes (-1: to the end) with stride 1.

Pattern injective (einsum too: TVM's choice), except expand_dims,
broadcast_to(_like), tile and repeat (broadcast), as TVM.  Layout rule "axis" for transpose,
concatenate, split, strided_slice, tile, repeat and reverse (their axis
attributes are renumbered for a permuted input); the others are opaque.
Indexing (take, gather, gather_nd, scatter_elements, one_hot) is in
tensor.py.
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import INT, STR, enum, ints, optional
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from ..layouts import Layout, LayoutError, convert_array
from .base import MAX_RANK, OpPattern, RelayOp, broadcast_shapes, same_dtype, tensor_type
from .util import (AXES, INT_OR_INTS, dims_match, inverse_perm, norm_axes, norm_axis, prod, shape_text,
                   unify_dim)

np = lazy_module("numpy")   # parsing and printing never need numpy


class LayoutTransformOp(RelayOp):
    __slots__ = ()
    name = "relay.layout_transform"
    OPERANDS = ("data",)
    ATTRS = {"src_layout": Attr(STR), "dst_layout": Attr(STR)}
    PATTERN = OpPattern.INJECTIVE

    def layouts(self):
        try:
            s, d = Layout(self.attributes["src_layout"]), Layout(self.attributes["dst_layout"])
        except LayoutError as e:
            raise self.error(str(e)) from None
        if not s.same_axes(d):
            raise self.error(f"layouts {s.name} and {d.name} do not have the same axes")
        return s, d

    def type_relation(self, x):
        tensor_type(self, x)
        s, d = self.layouts()
        try:
            return T.TensorType(s.convert_shape(x.shape, d), x.element_type)
        except LayoutError as e:
            raise self.error(str(e)) from None

    def compute(self, x):
        s, d = self.layouts()
        return convert_array(x, s.name, d.name)


# -- reshape ------------------------------------------------------------------------------

def reshape_dims(op, shape, newshape):
    """TVM's reshape codes over `shape` (dims may be None); the result shape."""
    out, copied_none = [], 0
    infer_at = None
    src, i = 0, 0
    n = len(shape)

    def src_dim(k):
        if k >= n:
            raise op.error(f"newshape {list(newshape)} reads past the {n} input dimensions")
        return shape[k]

    while i < len(newshape):
        c = newshape[i]
        if c > 0:
            out.append(c)
            src += 1
        elif c == 0:
            d = src_dim(src)
            out.append(d)
            copied_none += d is None
            src += 1
        elif c == -1:
            if infer_at is not None:
                raise op.error(f"newshape {list(newshape)} has more than one -1")
            infer_at = len(out)
            out.append(-1)
            src += 1
        elif c == -2:
            rest = shape[src:] if src < n else ()
            out.extend(rest)
            copied_none += sum(d is None for d in rest)
            src = n
        elif c == -3:
            a, b = src_dim(src), src_dim(src + 1)
            out.append(None if a is None or b is None else a * b)
            src += 2
        elif c == -4:
            if i + 2 >= len(newshape):
                raise op.error(f"newshape {list(newshape)}: -4 must be followed by two dimensions")
            d = src_dim(src)
            d1, d2 = newshape[i + 1], newshape[i + 2]
            if d1 == -1 and d2 == -1 or d1 < -1 or d2 < -1 or d1 == 0 or d2 == 0:
                raise op.error(f"newshape {list(newshape)}: -4 splits into two positive sizes, at most one -1")
            if d1 == -1:
                d1 = None if d is None else d // d2
            if d2 == -1:
                d2 = None if d is None else d // d1
            if d is not None and d1 is not None and d2 is not None and d1 * d2 != d:
                raise op.error(f"newshape {list(newshape)}: cannot split dimension {d} into {d1} x {d2}")
            out += [d1, d2]
            src += 1
            i += 2
        else:
            raise op.error(f"newshape {list(newshape)} has the invalid code {c}")
        i += 1
    total_in = prod(shape)
    if infer_at is not None:
        rest = [d for k, d in enumerate(out) if k != infer_at]
        known_in = prod(d for d in shape if d is not None)
        known_out = prod(d for d in rest if d is not None)
        # -1 stays computable when every dynamic input dim passes straight
        # through to the output (by 0 or -2): those factors cancel out
        if copied_none == sum(d is None for d in shape) == sum(d is None for d in rest):
            if known_out == 0 or known_in % known_out:
                raise op.error(f"cannot reshape {shape_text(shape)} to {list(newshape)}: "
                               f"{known_in} elements do not divide by {known_out}")
            out[infer_at] = known_in // known_out
        else:
            out[infer_at] = None
    elif total_in is not None and None not in out and prod(out) != total_in:
        raise op.error(f"cannot reshape {shape_text(shape)} ({total_in} elements) to {shape_text(out)} "
                       f"({prod(out)} elements)")
    return tuple(out)


class ReshapeOp(RelayOp):
    __slots__ = ()
    name = "relay.reshape"
    OPERANDS = ("data",)
    ATTRS = {"newshape": Attr(ints())}
    PATTERN = OpPattern.INJECTIVE

    def type_relation(self, x):
        tensor_type(self, x)
        return x.with_shape(reshape_dims(self, x.shape, self.attributes["newshape"]))

    def compute(self, x):
        return x.reshape(reshape_dims(self, x.shape, self.attributes["newshape"]))


class ReshapeLikeOp(RelayOp):
    """``reshape_like(%x, %like)``: %x in the shape of %like."""
    __slots__ = ()
    name = "relay.reshape_like"
    OPERANDS = ("data", "shape_like")
    PATTERN = OpPattern.INJECTIVE

    def type_relation(self, x, like):
        tensor_type(self, x)
        tensor_type(self, like, "shape_like operand")
        a, b = prod(x.shape), prod(like.shape)
        if a is not None and b is not None and a != b:
            raise self.error(f"cannot reshape {x} ({a} elements) like {like} ({b} elements)")
        return x.with_shape(like.shape)

    def compute(self, x, like):
        return x.reshape(like.shape)


# -- axes ---------------------------------------------------------------------------------

class TransposeOp(RelayOp):
    __slots__ = ()
    name = "relay.transpose"
    OPERANDS = ("data",)
    ATTRS = {"axes": Attr(optional(ints()), None)}
    PATTERN = OpPattern.INJECTIVE
    LAYOUT = "axis"

    def perm(self, rank):
        axes = self.attributes.get("axes")
        if axes is None:
            return list(range(rank))[::-1]
        if len(axes) != rank:
            raise self.error(f"axes {list(axes)} must list all {rank} axes")
        return norm_axes(self, axes, rank, "axes entry")

    def relayout(self, perm):
        # input and output both permuted by perm: out'[i] = out[perm[i]] = in[axes[perm[i]]]
        axes = self.perm(len(perm))
        inv = inverse_perm(perm)
        return {"axes": tuple(inv[axes[p]] for p in perm)}

    def type_relation(self, x):
        tensor_type(self, x)
        return x.with_shape([x.shape[a] for a in self.perm(x.rank)])

    def compute(self, x):
        return x.transpose(self.perm(x.ndim))


class SqueezeOp(RelayOp):
    __slots__ = ()
    name = "relay.squeeze"
    OPERANDS = ("data",)
    ATTRS = {"axis": Attr(AXES, None)}
    PATTERN = OpPattern.INJECTIVE

    def dropped(self, shape):
        axis = self.attributes.get("axis")
        if axis is None:
            # a dynamic dimension might not be 1: keep it (TVM does the same)
            return [i for i, d in enumerate(shape) if d == 1]
        axes = norm_axes(self, axis, len(shape))
        for a in axes:
            if shape[a] is not None and shape[a] != 1:
                raise self.error(f"cannot squeeze axis {a} of size {shape[a]}")
        return axes

    def type_relation(self, x):
        tensor_type(self, x)
        drop = self.dropped(x.shape)
        return x.with_shape([d for i, d in enumerate(x.shape) if i not in drop])

    def compute(self, x):
        return x.reshape([d for i, d in enumerate(x.shape) if i not in self.dropped(x.shape)])


class ExpandDimsOp(RelayOp):
    __slots__ = ()
    name = "relay.expand_dims"
    OPERANDS = ("data",)
    ATTRS = {"axis": Attr(INT), "num_newaxis": Attr(INT, 1)}
    PATTERN = OpPattern.BROADCAST

    def new_shape(self, shape):
        rank = len(shape)
        axis, k = self.attributes["axis"], self.attributes["num_newaxis"]
        if k < 0:
            raise self.error(f"num_newaxis must be non-negative, got {k}")
        if rank + k > MAX_RANK:
            raise self.error(f"num_newaxis {k} would give a rank above {MAX_RANK}")
        if not -rank - 1 <= axis <= rank:
            raise self.error(f"axis {axis} is out of range for inserting into rank {rank}")
        axis = axis % (rank + 1)
        return tuple(shape[:axis]) + (1,) * k + tuple(shape[axis:])

    def type_relation(self, x):
        tensor_type(self, x)
        return x.with_shape(self.new_shape(x.shape))

    def compute(self, x):
        return x.reshape(self.new_shape(x.shape))


# -- joining and splitting -------------------------------------------------------------------

class ConcatenateOp(RelayOp):
    __slots__ = ()
    name = "relay.concatenate"
    OPERANDS = ("*inputs",)
    ATTRS = {"axis": Attr(INT, 0)}
    PATTERN = OpPattern.INJECTIVE
    LAYOUT = "axis"
    AXIS_ATTRS = ("axis",)

    def type_relation(self, *ts):
        if not ts:
            raise self.error("expects at least one input")
        for t in ts:
            tensor_type(self, t, "input")
        e = same_dtype(self, *ts)
        rank = ts[0].rank
        if any(t.rank != rank for t in ts):
            raise self.error(f"inputs have different ranks: {', '.join(str(t) for t in ts)}")
        if rank == 0:
            raise self.error("cannot concatenate scalars")
        axis = norm_axis(self, self.attributes["axis"], rank)
        out = list(ts[0].shape)
        for k, t in enumerate(ts[1:], 1):
            for i, d in enumerate(t.shape):
                if i != axis:
                    out[i] = unify_dim(self, out[i], d, f"input {k} differs in dimension {i}")
        sizes = [t.shape[axis] for t in ts]
        out[axis] = None if None in sizes else sum(sizes)
        return T.TensorType(out, e)

    def compute(self, *arrays):
        return np.concatenate(arrays, axis=self.attributes["axis"])


class StackOp(RelayOp):
    __slots__ = ()
    name = "relay.stack"
    OPERANDS = ("*inputs",)
    ATTRS = {"axis": Attr(INT, 0)}
    PATTERN = OpPattern.INJECTIVE

    def type_relation(self, *ts):
        if not ts:
            raise self.error("expects at least one input")
        for t in ts:
            tensor_type(self, t, "input")
        e = same_dtype(self, *ts)
        rank = ts[0].rank
        if any(t.rank != rank for t in ts):
            raise self.error(f"inputs have different ranks: {', '.join(str(t) for t in ts)}")
        out = list(ts[0].shape)
        for k, t in enumerate(ts[1:], 1):
            for i, d in enumerate(t.shape):
                out[i] = unify_dim(self, out[i], d, f"input {k} differs in dimension {i}")
        axis = self.attributes["axis"]
        if not -rank - 1 <= axis <= rank:
            raise self.error(f"axis {axis} is out of range for stacking rank-{rank} inputs")
        out.insert(axis % (rank + 1), len(ts))
        return T.TensorType(out, e)

    def compute(self, *arrays):
        return np.stack(arrays, axis=self.attributes["axis"])


class SplitOp(RelayOp):
    __slots__ = ()
    name = "relay.split"
    OPERANDS = ("data",)
    ATTRS = {"indices_or_sections": Attr(INT_OR_INTS), "axis": Attr(INT, 0)}
    PATTERN = OpPattern.INJECTIVE
    LAYOUT = "axis"
    AXIS_ATTRS = ("axis",)

    def pieces(self, d):
        """Sizes of the pieces along the axis (None: dynamic)."""
        s = self.attributes["indices_or_sections"]
        if isinstance(s, int):
            if s < 1:
                raise self.error(f"sections must be positive, got {s}")
            if d is None:
                return [None] * s
            if d % s:
                raise self.error(f"dimension {d} does not split into {s} equal sections")
            return [d // s] * s
        prev, out = 0, []
        for i in s:
            if i < prev:
                raise self.error(f"split indices {list(s)} must be ascending and non-negative")
            if d is not None and i > d:
                raise self.error(f"split index {i} is past the dimension {d}")
            out.append(i - prev)
            prev = i
        out.append(None if d is None else d - prev)
        return out

    def type_relation(self, x):
        tensor_type(self, x)
        axis = norm_axis(self, self.attributes["axis"], x.rank)
        fields = []
        for size in self.pieces(x.shape[axis]):
            shape = list(x.shape)
            shape[axis] = size
            fields.append(x.with_shape(shape))
        return T.TupleType(fields)

    def compute(self, x):
        axis = self.attributes["axis"] % x.ndim
        s = self.attributes["indices_or_sections"]
        return tuple(np.split(x, s if isinstance(s, int) else list(s), axis=axis))


# -- slicing ---------------------------------------------------------------------------------

class StridedSliceOp(RelayOp):
    __slots__ = ()
    name = "relay.strided_slice"
    OPERANDS = ("data",)
    ATTRS = {"begin": Attr(ints()), "end": Attr(ints()), "strides": Attr(optional(ints()), None),
             "axes": Attr(optional(ints()), None), "slice_mode": Attr(enum("end", "size"), "end")}
    PATTERN = OpPattern.INJECTIVE
    LAYOUT = "axis"

    def relayout(self, perm):
        # the same slices on the axes' new positions
        a = self.attributes
        if len(a["end"]) != len(a["begin"]):
            return None   # the missing ends' defaults depend on the strides: keep the layout
        inv = inverse_perm(perm)
        axes = a.get("axes")
        axes = list(range(len(a["begin"]))) if axes is None else [x % len(perm) for x in axes]
        strides = a.get("strides") or (1,)
        if len(strides) == 1:
            strides = strides * len(axes)
        return {"axes": tuple(inv[x] for x in axes), "strides": tuple(strides)}

    def slices(self, shape):
        """A python slice per axis; the rest are whole."""
        a = self.attributes
        rank = len(shape)
        begin, end = list(a["begin"]), list(a["end"])
        strides = list(a.get("strides") or [1])
        axes = a.get("axes")
        if axes is None:
            if len(begin) > rank:
                raise self.error(f"begin has {len(begin)} entries but the data has rank {rank}")
            axes = list(range(len(begin)))
        else:
            axes = norm_axes(self, axes, rank)
            if len(begin) != len(axes) or len(end) != len(axes):
                raise self.error(f"begin, end and axes must have the same length, got {len(begin)}, {len(end)} "
                                 f"and {len(axes)}")
        if len(end) > len(axes):
            raise self.error(f"end has {len(end)} entries for {len(axes)} axes")
        if len(strides) == 1:
            strides = strides * len(axes)
        if len(strides) < len(axes):
            strides += [1] * (len(axes) - len(strides))
        if len(strides) != len(axes):
            raise self.error(f"strides has {len(strides)} entries for {len(axes)} axes")
        size_mode = a["slice_mode"] == "size"
        out = [slice(None)] * rank
        for k, ax in enumerate(axes):
            s = 1 if size_mode else strides[k]
            if s == 0:
                raise self.error("strides must be non-zero")
            b = begin[k]
            if k >= len(end):
                e = None
            elif size_mode:
                if end[k] < 0:
                    e = None
                else:
                    d = shape[ax]
                    bb = b + d if (b < 0 and d is not None) else b
                    if b < 0 and d is None:
                        out[ax] = None   # a dynamic axis: the size is unknown
                        continue
                    e = bb + end[k]
                    b = bb
            else:
                e = end[k]
            out[ax] = slice(b, e, s)
        return out

    def type_relation(self, x):
        tensor_type(self, x)
        out = []
        for d, sl in zip(x.shape, self.slices(x.shape)):
            if d is None or sl is None:
                out.append(None)
            else:
                out.append(len(range(*sl.indices(d))))
        return x.with_shape(out)

    def compute(self, x):
        return x[tuple(self.slices(x.shape))]


# -- broadcasting and repetition ---------------------------------------------------------------

class BroadcastToOp(RelayOp):
    __slots__ = ()
    name = "relay.broadcast_to"
    OPERANDS = ("data",)
    ATTRS = {"shape": Attr(ints())}
    PATTERN = OpPattern.BROADCAST

    def type_relation(self, x):
        tensor_type(self, x)
        shape = tuple(self.attributes["shape"])
        if any(d < 0 for d in shape):
            raise self.error(f"shape {list(shape)} has a negative dimension")
        fits = x.rank <= len(shape) and all(d in (1, None) or d == t for d, t in zip(x.shape[::-1], shape[::-1]))
        if not fits:
            raise self.error(f"cannot broadcast {x} to {shape_text(shape)}")
        return x.with_shape(shape)

    def compute(self, x):
        return np.broadcast_to(x, self.attributes["shape"]).copy()


class BroadcastToLikeOp(RelayOp):
    __slots__ = ()
    name = "relay.broadcast_to_like"
    OPERANDS = ("data", "broadcast_type")
    PATTERN = OpPattern.BROADCAST

    def type_relation(self, x, like):
        tensor_type(self, x)
        tensor_type(self, like, "broadcast_type operand")
        shape = broadcast_shapes(self, x.shape, like.shape)
        if len(shape) != like.rank or not all(dims_match(a, b) for a, b in zip(shape, like.shape)):
            raise self.error(f"cannot broadcast {x} like {like}")
        return x.with_shape(like.shape)

    def compute(self, x, like):
        return np.broadcast_to(x, like.shape).copy()


class TileOp(RelayOp):
    __slots__ = ()
    name = "relay.tile"
    OPERANDS = ("data",)
    ATTRS = {"reps": Attr(ints())}
    PATTERN = OpPattern.BROADCAST
    LAYOUT = "axis"

    def relayout(self, perm):
        reps = self.attributes["reps"]
        if len(reps) != len(perm):
            return None
        return {"reps": tuple(reps[p] for p in perm)}

    def type_relation(self, x):
        tensor_type(self, x)
        reps = list(self.attributes["reps"])
        if any(r < 0 for r in reps):
            raise self.error(f"reps {reps} has a negative entry")
        n = max(x.rank, len(reps))
        shape = [1] * (n - x.rank) + list(x.shape)
        reps = [1] * (n - len(reps)) + reps
        return x.with_shape([None if d is None else d * r for d, r in zip(shape, reps)])

    def compute(self, x):
        return np.tile(x, self.attributes["reps"])


class RepeatOp(RelayOp):
    __slots__ = ()
    name = "relay.repeat"
    OPERANDS = ("data",)
    ATTRS = {"repeats": Attr(INT), "axis": Attr(INT)}
    PATTERN = OpPattern.BROADCAST
    LAYOUT = "axis"
    AXIS_ATTRS = ("axis",)

    def type_relation(self, x):
        tensor_type(self, x)
        r = self.attributes["repeats"]
        if r < 1:
            raise self.error(f"repeats must be positive, got {r}")
        axis = norm_axis(self, self.attributes["axis"], x.rank)
        shape = list(x.shape)
        shape[axis] = None if shape[axis] is None else shape[axis] * r
        return x.with_shape(shape)

    def compute(self, x):
        return np.repeat(x, self.attributes["repeats"], axis=self.attributes["axis"])


class ReverseOp(RelayOp):
    __slots__ = ()
    name = "relay.reverse"
    OPERANDS = ("data",)
    ATTRS = {"axis": Attr(INT)}
    PATTERN = OpPattern.INJECTIVE
    LAYOUT = "axis"
    AXIS_ATTRS = ("axis",)

    def type_relation(self, x):
        tensor_type(self, x)
        norm_axis(self, self.attributes["axis"], x.rank)
        return x

    def compute(self, x):
        return np.flip(x, axis=self.attributes["axis"]).copy()



class ReverseSequenceOp(RelayOp):
    """``reverse_sequence(%x, %lengths) {seq_axis = 1, batch_axis = 0}``: in
    each batch entry b, the first lengths[b] elements along seq_axis are
    reversed (lengths past the axis clamp to it)."""
    __slots__ = ()
    name = "relay.reverse_sequence"
    OPERANDS = ("data", "seq_lengths")
    ATTRS = {"seq_axis": Attr(INT, 1), "batch_axis": Attr(INT, 0)}
    PATTERN = OpPattern.INJECTIVE

    def axes(self, rank):
        s = norm_axis(self, self.attributes["seq_axis"], rank, "seq_axis")
        b = norm_axis(self, self.attributes["batch_axis"], rank, "batch_axis")
        if s == b:
            raise self.error(f"seq_axis and batch_axis are both axis {s}")
        return s, b

    def type_relation(self, x, lengths):
        tensor_type(self, x)
        tensor_type(self, lengths, "seq_lengths")
        if not T.is_int(lengths.element_type) or lengths.element_type is T.i1:
            raise self.error(f"seq_lengths must be integers, got {lengths}")
        s, b = self.axes(x.rank)
        if lengths.rank != 1 or not dims_match(lengths.shape[0], x.shape[b]):
            raise self.error(f"seq_lengths must be 1-d of the batch size {shape_text([x.shape[b]])[1:-1]}, "
                             f"got {lengths}")
        return x

    def compute(self, x, lengths):
        s, b = self.axes(x.ndim)
        out = x.copy()
        n = x.shape[s]
        for k, L in enumerate(lengths.tolist()):
            L = max(0, min(int(L), n))
            src = [slice(None)] * x.ndim
            src[b] = k
            dst = list(src)
            src[s] = slice(L - 1, None, -1) if L else slice(0, 0)
            dst[s] = slice(0, L)
            out[tuple(dst)] = x[tuple(src)]
        return out


def einsum_shape(op, equation, shapes):
    """The output shape of an einsum over operands of `shapes` (None for a
    dynamic size), numpy's rules: explicit ``->`` or implicit (the labels
    used once, sorted), ``...`` broadcast."""
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise op.error(f"equation '{equation}' has {len(terms)} operand terms for {len(shapes)} operands")
    sizes, counts, ell = {}, {}, ()
    for k, (term, shape) in enumerate(zip(terms, shapes)):
        pre, dots, post = term.partition("...")
        if "." in pre + post or not (pre + post).isalpha() and (pre + post):
            raise op.error(f"equation '{equation}': term '{term}' may hold only letters and one '...'")
        n_ell = len(shape) - len(pre) - len(post)
        if (n_ell < 0) or (not dots and n_ell):
            raise op.error(f"equation '{equation}': term '{term}' does not fit operand {k} of rank {len(shape)}")
        if dots:
            ell = broadcast_shapes(op, ell, tuple(shape[len(pre):len(pre) + n_ell]))
        dims = list(shape[:len(pre)]) + list(shape[len(shape) - len(post):])
        for c, d in zip(pre + post, dims):
            counts[c] = counts.get(c, 0) + 1
            sizes[c] = unify_dim(op, sizes.get(c), d, f"equation '{equation}': label '{c}' has two sizes") \
                if c in sizes else d
    if not arrow:
        rhs = ("..." if ell else "") + "".join(sorted(c for c, n in counts.items() if n == 1))
    pre, dots, post = rhs.partition("...")
    out = []
    for c in pre:
        if c not in sizes:
            raise op.error(f"equation '{equation}': output label '{c}' is not in the inputs")
        out.append(sizes[c])
    out.extend(ell if dots else ())
    for c in post:
        if c not in sizes:
            raise op.error(f"equation '{equation}': output label '{c}' is not in the inputs")
        out.append(sizes[c])
    return tuple(out)


class EinsumOp(RelayOp):
    """``einsum(%a, %b, ...) {equation = "ij,jk->ik"}``, numpy's einsum
    (TVM takes the tensors as a tuple; here they are the operands).
    Injective, as TVM registers it."""
    __slots__ = ()
    name = "relay.einsum"
    OPERANDS = ("*inputs",)
    ATTRS = {"equation": Attr(STR)}
    PATTERN = OpPattern.INJECTIVE

    def type_relation(self, *ts):
        if not ts:
            raise self.error("expects at least one operand")
        for t in ts:
            tensor_type(self, t)
        e = same_dtype(self, *ts)
        return T.TensorType(einsum_shape(self, self.attributes["equation"], [t.shape for t in ts]), e)

    def compute(self, *arrays):
        dt = arrays[0].dtype
        if dt.kind == "V":   # ml_dtypes' bfloat16 / float8, which einsum does not take: in f32
            arrays = [a.astype(np.float32) for a in arrays]
        return np.asarray(np.einsum(self.attributes["equation"], *arrays)).astype(dt, copy=False)
