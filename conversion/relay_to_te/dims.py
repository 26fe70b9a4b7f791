"""Symbolic dimensions of relay values while a primitive function lowers.

A dimension is an ``int`` or, for a ``?`` of the relay type, the index
Value of a te.func parameter that carries its size at run time.  Each
``?`` of a parameter gets one such ``index`` parameter (lower_function
adds them); every other value's dims follow from its op's rule here,
TVM's shape function restricted to what a kernel needs: each ``?`` of a
result is the size of some ``?`` of an operand, or a sum of them.

    rule(op, dims of each operand) -> (dims of the result, equalities)

A size may also be a sum of such Values (concatenate along a ``?`` axis:
``arith.addi`` in the te.func body).  `equalities` are pairs (a size Value,
a Value or an int) the op requires equal (``add`` of two
``tensor<?x64xf32>``): the runtime checks them before the kernel runs,
since the kernel reads each operand with the sizes it was given.  A ``?``
that would broadcast at run time (a size 1 meeting a larger size) fails
that check, with a message, rather than being read out of bounds.

A result ``?`` that is a product or another expression of operand sizes
(``reshape`` of ``?x12x64`` to ``?x768`` works; ``?x64`` to ``?*2x32``
does not) has no rule yet: the op raises NotImplementedError, and
--lower-relay-to-te with fallback leaves the function to the interpreter
with that reason.
"""

from __future__ import annotations

from ...ir import types as T
from ...ir.core import Value


class NoRule(NotImplementedError):
    pass


def param_dims(t, make):
    """Dims of a parameter of tensor type `t`; ``make(axis)`` makes the
    index parameter of a '?' axis."""
    return tuple(make(a) if d is None else d for a, d in enumerate(t.shape))


def is_dynamic(dims):
    """Whether dims (a tensor's tuple, or a list of them for a tuple) has a
    run-time size."""
    return any(is_dynamic(d) if isinstance(d, tuple) else isinstance(d, Value) for d in dims)


def result_dims(op, operand_dims, e):
    """(dims of op's result -- a list of them for a tuple, as split makes
    --, [(size, size)] equalities); NoRule when op has no rule for its
    dynamic operands.  `e` emits the index arithmetic of a size that is a
    sum (concatenate along a '?' axis)."""
    t = op.results[0].type
    name = op.op_name if hasattr(op, "op_name") else op.name
    fn = _RULES.get(name) or (_broadcast if name in _broadcast_ops() else None)
    if fn is None:
        raise NoRule(f"'{name}' has no rule for the sizes of dynamic ('?') dimensions yet")
    eqs = []
    try:
        dims = fn(op, operand_dims, eqs, e)
    except (TypeError, ValueError, IndexError, KeyError) as err:   # attributes the rule cannot read
        raise NoRule(f"'{name}': no size for its dynamic dimensions ({err})") from None
    if isinstance(t, T.TupleType) and isinstance(dims, list) and len(dims) == len(t.types):
        return [_against_type(op, f, d) for f, d in zip(t.types, dims)], eqs
    if not isinstance(t, T.TensorType) or isinstance(dims, list):
        raise NoRule(f"'{name}' has a dynamic operand and a {t} result")
    return _against_type(op, t, dims), eqs


def _against_type(op, t, dims):
    """The rule's dims checked against the relay type: a static dimension
    is the type's int; a '?' must be a size Value."""
    if len(dims) != t.rank:
        raise NoRule(f"'{op.name}': the dynamic-shape rule gives rank {len(dims)}, the type {t}")
    out = []
    for d, x in zip(t.shape, dims):
        if d is not None:
            out.append(d)
        elif isinstance(x, Value):
            out.append(x)
        else:
            raise NoRule(f"'{op.name}': the size of a '?' dimension of {t} is not an operand's size")
    return tuple(out)


def _unify(a, b, eqs):
    """One dim from two that must be equal: a static size wins; a '?' is
    checked against it (or against the other '?') at run time."""
    return _merge([a, b], eqs)


def _merge(dims, eqs):
    """The one size of `dims` (ints and Values) that must all be equal."""
    static = [d for d in dims if isinstance(d, int)]
    dyn = [d for d in dims if isinstance(d, Value)]
    head = static[0] if static else dyn[0]
    eqs.extend((d, head) for d in dyn if d is not head)
    return head


def _broadcast(op, ins, eqs, e):
    """numpy broadcasting, right-aligned: a static 1 takes the other size;
    the sizes left must be equal (a '?' does not broadcast a run-time 1)."""
    rank = max(len(d) for d in ins)
    out = []
    for ax in range(rank):
        sizes = [d[ax - (rank - len(d))] for d in ins if ax - (rank - len(d)) >= 0]
        sizes = [x for x in sizes if not (isinstance(x, int) and x == 1)]
        out.append(_merge(sizes, eqs) if sizes else 1)
    return tuple(out)


def _first(op, ins, eqs, e):
    return ins[0]


def _matmul(op, ins, eqs, e):
    a, b = ins
    attrs = op.attributes
    ta, tb = attrs.get("transpose_a", False), attrs.get("transpose_b", op.op_name == "nn.dense")
    if ta:
        k, lead = a[-2], a[:-2] + (a[-1],)
    else:
        k, lead = a[-1], a[:-1]
    kb, n = (b[1], b[0]) if tb else (b[0], b[1])
    _unify(k, kb, eqs)
    return lead + (n,)


def _dense_pack(op, ins, eqs, e):
    """x [.., K] by a weight packed [N / n, K, n] (or K / 4 or K / 2 words, static):
    the rows, then N (static)."""
    from ...dialects.relay.ops.nn import packs_words
    x, w = ins
    if not packs_words(op.attributes["weight_layout"]):
        _unify(x[-1], w[1], eqs)
    return x[:-1] + (op.results[0].type.shape[-1],)


def _batch_matmul(op, ins, eqs, e):
    x, y = ins
    ta, tb = op.attributes["transpose_a"], op.attributes["transpose_b"]
    batch = _broadcast(op, [x[:1], y[:1]], eqs, e)[0]
    m, k = (x[2], x[1]) if ta else (x[1], x[2])
    ky, n = (y[2], y[1]) if tb else (y[1], y[2])
    _unify(k, ky, eqs)
    return (batch, m, n)


def _attention(op, ins, eqs, e):
    """The query's dims with the value's head_dim last; the keys' and
    values' lengths, batches and heads agree (the query's heads too, but
    for grouped-query attention's static multiple)."""
    from ...dialects.relay.ops.attention import bhsd, from_bhsd
    layout = op.attributes["layout"]
    (b, h, m, d), (kb, kh, n, kd), (vb, vh, vn, dv) = (bhsd(lay, x) for lay, x in zip(op.layouts(), ins[:3]))
    _merge([d, kd], eqs)
    grouped = isinstance(h, int) and isinstance(kh, int) and h != kh   # grouped-query: fewer K/V heads
    if grouped:
        _merge([kh, vh], eqs)
    heads = h if grouped else _merge([h, kh, vh], eqs)
    full = (_merge([b, kb, vb], eqs), heads, m, _merge([n, vn], eqs))
    if len(ins) > 3:   # the bias: each '?' is the full size it stands for (never a broadcast 1)
        bias = ins[3]
        for x, y in zip(bias, full[4 - len(bias):]):
            if isinstance(x, Value):
                _unify(x, y, eqs)
    return from_bhsd(layout, full[0], full[1], m, dv)


def _arange_like(op, ins, eqs, e):
    x = ins[0]
    return (x[op.attributes["axis"] % len(x)],)


def _transpose(op, ins, eqs, e):
    x = ins[0]
    axes = op.attributes.get("axes")
    if not axes:
        return tuple(reversed(x))
    return tuple(x[a % len(x)] for a in axes)


def _reduce(op, ins, eqs, e):
    x = ins[0]
    axes = set(op.reduce_axes(len(x)))
    keep = op.attributes.get("keepdims")
    return tuple(1 if a in axes else d for a, d in enumerate(x) if keep or a not in axes)


def _reshape(op, ins, eqs, e):
    """TVM's reshape codes over sizes: 0 copies the input's dimension
    (a '?' keeps its size), a positive code is static, -2 copies the rest,
    -3 merges and -4 splits static sizes (a '?' beside them stays one);
    -1 is what is left: the input's sizes not copied, divided by the
    static ones, which must come out as one '?' (or an int)."""
    x = ins[0]
    if op.op_name != "reshape":
        raise NoRule(f"'{op.op_name}' of a dynamic tensor")
    out, src, infer = [], 0, None
    codes = list(op.attributes["newshape"])
    i = -1
    while i + 1 < len(codes):
        i += 1
        c = codes[i]
        if c == -3 and isinstance(x[src], int) and isinstance(x[src + 1], int):
            out.append(x[src] * x[src + 1])   # merging two static sizes (batch and heads)
            src += 2
            continue
        if c == -4 and isinstance(x[src], int):
            d1, d2 = codes[i + 1], codes[i + 2]
            d1 = x[src] // d2 if d1 == -1 else d1
            d2 = x[src] // d1 if d2 == -1 else d2
            out += [d1, d2]   # splitting a static size
            src += 1
            i += 2
            continue
        if c > 0:
            out.append(c)
            src += 1
        elif c == 0:
            out.append(x[src])
            src += 1
        elif c == -1:
            infer = len(out)
            out.append(None)
            src += 1
        elif c == -2:
            out.extend(x[src:])
            src = len(x)
        else:
            raise NoRule(f"reshape code {c} with dynamic dimensions")
    if infer is not None:
        left = [d for d in x if isinstance(d, Value)]
        for d in out:
            if isinstance(d, Value):
                if d not in left:
                    raise NoRule("reshape: a '?' size appears on the output side only")
                left.remove(d)
        num = _static_product(x)
        den = _static_product(d for i, d in enumerate(out) if i != infer)
        if len(left) > 1 or (left and num != den) or num % den:
            raise NoRule("reshape: the inferred (-1) size is not one input size")
        out[infer] = left[0] if left else num // den
    return tuple(out)


def _static_product(dims):
    n = 1
    for d in dims:
        n *= d if isinstance(d, int) else 1
    return n


def _squeeze(op, ins, eqs, e):
    x = ins[0]
    shape = op.operands[0].type.shape
    drop = set(op.dropped(shape))
    return tuple(d for a, d in enumerate(x) if a not in drop)


def _concatenate(op, ins, eqs, e):
    """Along the axis: the sum of the sizes; elsewhere they must agree."""
    a = op.attributes["axis"] % len(ins[0])
    out = []
    for ax in range(len(ins[0])):
        if ax == a:
            total = 0
            for d in ins:
                total = e.add(total, d[ax])
            out.append(total)
        else:
            out.append(_merge([d[ax] for d in ins], eqs))
    return tuple(out)


def _split(op, ins, eqs, e):
    """Pieces along a static axis keep the other sizes."""
    x = ins[0]
    a = op.attributes["axis"] % len(x)
    if not isinstance(x[a], int):
        raise NoRule("split along a dynamic axis")
    return [x[:a] + (n,) + x[a + 1:] for n in op.pieces(x[a])]


def _strided_slice(op, ins, eqs, e):
    """Slices of static axes; a '?' axis must be left whole."""
    x = ins[0]
    a = op.attributes
    rank = len(x)
    axes = a.get("axes")
    axes = set(range(len(a["begin"]))) if axes is None else {ax % rank for ax in axes}
    if any(not isinstance(x[ax], int) for ax in axes):
        raise NoRule("strided_slice of a dynamic ('?') axis")
    t = op.results[0].type
    return tuple(t.shape[ax] if ax in axes else d for ax, d in enumerate(x))


def _take(op, ins, eqs, e):
    data, idx = ins
    axis = op.attributes.get("axis")
    if axis is None:
        return idx
    axis %= len(data)
    return data[:axis] + idx + data[axis + 1:]


def _gather(op, ins, eqs, e):
    """The indices' dims; the data's other axes equal to them (ONNX allows
    the data larger there: such a call fails the check and builds apart)."""
    data, idx = ins
    axis = op.attributes["axis"] % len(data)
    for a, (d, i) in enumerate(zip(data, idx)):
        if a != axis and (isinstance(d, Value) or isinstance(i, Value)):
            _unify(d, i, eqs)
    return idx


def _shape_of(op, ins, eqs, e):
    """(rank,): static whatever the operand's sizes."""
    return (len(ins[0]),)


def _expand_dims(op, ins, eqs, e):
    x = ins[0]
    axis = op.attributes["axis"]
    n = op.attributes.get("num_newaxis", 1)
    axis = axis if axis >= 0 else axis + len(x) + 1
    return x[:axis] + (1,) * n + x[axis:]


def _repeat(op, ins, eqs, e):
    """Along the axis: the size times the repeats (GQA's K and V heads)."""
    x = ins[0]
    a = op.attributes["axis"] % len(x)
    return x[:a] + (e.mul(x[a], op.attributes["repeats"]),) + x[a + 1:]


_RULES = {
    "nn.dense": _matmul, "nn.matmul": _matmul, "nn.batch_matmul": _batch_matmul,
    "nn.contrib_dense_pack": _dense_pack, "nn.attention": _attention, "arange_like": _arange_like,
    "nn.bias_add": _first, "nn.softmax": _first, "nn.log_softmax": _first, "nn.fast_softmax": _first,
    "nn.layer_norm": _first, "nn.l2_normalize": _first, "nn.dropout": _first, "nn.relu": _first,
    "transpose": _transpose, "reshape": _reshape, "take": _take, "expand_dims": _expand_dims,
    "shape_of": _shape_of, "broadcast_to_like": _broadcast, "full_like": _first, "gather": _gather,
    "squeeze": _squeeze, "concatenate": _concatenate, "repeat": _repeat, "split": _split, "strided_slice": _strided_slice,
    "sum": _reduce, "mean": _reduce, "max": _reduce, "min": _reduce, "prod": _reduce,
    "variance": _reduce, "std": _reduce, "argmax": _reduce, "argmin": _reduce,
    "all": _reduce, "any": _reduce,
    # the data's sizes (scales and zero points are scalars or per-axis vectors)
    "qnn.quantize": _first, "qnn.dequantize": _first, "qnn.requantize": _first, "qnn.dense": _matmul,
}


def _broadcast_ops():
    """The elementwise and broadcasting ops (topi_elemwise's tables)."""
    from .topi_elemwise import BINARY, UNARY
    return set(BINARY) | set(UNARY) | {"where", "cast", "cast_like", "clip", "nn.prelu", "copy",
                                       "nn.leaky_relu", "sigmoid", "tanh", "erf"}
