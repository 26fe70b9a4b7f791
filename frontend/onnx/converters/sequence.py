"""Sequences of tensors as relay tuples (TVM's frontend did the same), and
optionals, resolved at import time.

A sequence's length is static: positions, splits and insertions must be
known at import time, and the tuple type records each element's shape.
SequenceMap is unrolled over the elements.  A sequence graph input takes
its length and element shapes from the value the backend binds.  An
optional is the value it holds or EMPTY_OPTIONAL; OptionalHasElement is a
constant.
"""

from __future__ import annotations

from ....ir import types as T
from ..registry import converter
from .common import norm_axis


def fields(cx, seq):
    """The element values of a sequence (a relay tuple)."""
    t = seq.type
    if not isinstance(t, T.TupleType):
        raise cx.error(f"expects a sequence, got {t}")
    d = seq.defining_op()
    if d is not None and d.name == "relay.tuple":
        return list(d.operands)
    return [cx.get_item(seq, i) for i in range(len(t.types))]


def make_sequence(cx, values):
    return cx.op("tuple", *values)


def _position(cx, v, n, insert=False):
    """A static position in a sequence of n (negative from the end; an
    insertion may also go at n)."""
    p = int(cx.static_scalar(v, "position"))
    hi = n + 1 if insert else n
    if not -hi <= p < hi:
        raise cx.error(f"position {p} is out of range for a sequence of {n}")
    return p + n if p < 0 else p


@converter("SequenceConstruct", 11)
def sequence_construct(cx, node):
    return make_sequence(cx, [v for v in node.inputs if v is not None])


@converter("SequenceEmpty", 11)
def sequence_empty(cx, node):
    return make_sequence(cx, [])


@converter("SequenceLength", 11)
def sequence_length(cx, node):
    import numpy as np
    return cx.const(np.array(len(fields(cx, node.input(0))), np.int64))


@converter("SequenceAt", 11)
def sequence_at(cx, node):
    items = fields(cx, node.input(0))
    return items[_position(cx, node.input(1), len(items))]


@converter("SequenceInsert", 11)
def sequence_insert(cx, node):
    items = fields(cx, node.input(0))
    pos = len(items) if node.input(2) is None else _position(cx, node.input(2), len(items), insert=True)
    return make_sequence(cx, items[:pos] + [node.input(1)] + items[pos:])


@converter("SequenceErase", 11)
def sequence_erase(cx, node):
    items = fields(cx, node.input(0))
    pos = len(items) - 1 if node.input(1) is None else _position(cx, node.input(1), len(items))
    return make_sequence(cx, items[:pos] + items[pos + 1:])


@converter("SplitToSequence", 11)
def split_to_sequence(cx, node):
    """No split: pieces of one along the axis (squeezed unless keepdims);
    a scalar split: pieces of that size (the last one smaller); a 1-d
    split: those sizes."""
    x = node.input(0)
    axis = norm_axis(cx, node.attr("axis", 0), cx.rank(x))
    dim = cx.static_shape(x)[axis]
    split = node.input(1)
    squeeze = False
    if split is None:
        sizes = [1] * dim
        squeeze = not node.attr("keepdims", 1)
    else:
        s = cx.static_value(split, "split")
        if s.ndim > 1:
            raise cx.error(f"its split must be a scalar or 1-D, got {cx.ttype(split)}")
        if s.ndim == 0:
            n = int(cx.static_scalar(split, "split"))
            if n < 1:
                raise cx.error(f"its split must be positive, got {n}")
            sizes = [n] * (dim // n) + ([dim % n] if dim % n else [])
        else:
            sizes = list(cx.static_ints(split, "split"))
            if any(v < 0 for v in sizes) or sum(sizes) != dim:
                raise cx.error(f"its split sizes {sizes} must be non-negative and add up to {dim}")
    points, acc = [], 0
    for size in sizes[:-1]:
        acc += size
        points.append(acc)
    parts = cx.op("split", x, indices_or_sections=tuple(points) if points else 1, axis=axis)
    items = [cx.get_item(parts, i) for i in range(len(sizes))]
    if squeeze:
        items = [cx.op("squeeze", v, axis=(axis,)) for v in items]
    return make_sequence(cx, items)


@converter("ConcatFromSequence", 11)
def concat_from_sequence(cx, node):
    items = fields(cx, node.input(0))
    if not items:
        raise cx.error("cannot concatenate an empty sequence")
    rank = cx.rank(items[0])
    if node.attr("new_axis", 0):
        axis = norm_axis(cx, node.attr("axis"), rank + 1)
        return cx.op("stack", *items, axis=axis) if len(items) > 1 else cx.op("expand_dims", items[0], axis=axis)
    axis = norm_axis(cx, node.attr("axis"), rank)
    return cx.op("concatenate", *items, axis=axis) if len(items) > 1 else items[0]


@converter("SequenceMap", 17)
def sequence_map(cx, node):
    """The body once per element: sequence inputs give their i-th element,
    tensor inputs themselves; each output collects into a sequence."""
    body = node.attr("body")
    seqs = [fields(cx, v) if isinstance(v.type, T.TupleType) else None for v in node.inputs]
    if not seqs or seqs[0] is None:
        raise cx.error("its first input must be a sequence")
    n = len(seqs[0])
    if any(s is not None and len(s) != n for s in seqs):
        raise cx.error("the sequences have different lengths")
    outs = [[] for _ in body.output]
    for i in range(n):
        args = [s[i] if s is not None else v for s, v in zip(seqs, node.inputs)]
        for j, v in enumerate(cx.importer.convert_subgraph(body, inputs=args)):
            outs[j].append(v)
    return [make_sequence(cx, vals) for vals in outs]


# -- optionals: a value, or EMPTY_OPTIONAL, known at import time -------------------------

@converter("Optional", 15)
def optional(cx, node):
    from ..context import EMPTY_OPTIONAL
    return node.input(0) if node.input(0) is not None else EMPTY_OPTIONAL


@converter("OptionalHasElement", 15)
def optional_has_element(cx, node):
    import numpy as np

    from ..context import EMPTY_OPTIONAL
    x = node.input(0)
    return cx.const(np.array(x is not None and x is not EMPTY_OPTIONAL))


@converter("OptionalGetElement", 15)
def optional_get_element(cx, node):
    from ..context import EMPTY_OPTIONAL
    x = node.input(0)
    if x is None or x is EMPTY_OPTIONAL:
        raise cx.error("the optional holds no value")
    return x
