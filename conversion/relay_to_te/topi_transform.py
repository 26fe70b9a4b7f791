"""TE computes for relay's data-movement operators (registered with registry.strategy).

Every op here is one or more injective te.computes ``out[idx] = x[src(idx)]``;
only einsum reduces.

    reshape, reshape_like   src = unravel(ravel(idx, out shape), in shape)
    squeeze, expand_dims    src = idx without the dropped / inserted unit axes
    transpose               src[axes[d]] = idx[d]
    concatenate             nested selects over guarded reads, one per input:
                            x_k[.., idx[a] - off_k, ..] where off_k <= idx[a] < off_k + n_k
    stack                   the same with idx[a] == k
    split                   one compute per piece: x[.., idx[a] + off_k, ..]
    strided_slice           src[a] = begin[a] + idx[a] * stride[a] (python slice, normalised)
    broadcast_to(_like)     size-1 input dims read index 0
    tile                    src[d] = idx[d] mod in_shape[d]
    repeat                  src[a] = idx[a] floordiv repeats
    reverse                 src[a] = n - 1 - idx[a]
    reverse_sequence        L = clamp(len[idx[b]], 0, n); src[s] = idx[s] < L ? L - 1 - idx[s] : idx[s]
    einsum                  spatial axes = output labels, reduce axes = the summed
                            labels, body = product of the operands' reads
    layout_transform        out[dst index] = x[src index], blocked layouts by
                            floordiv / floormod of the primal index
"""

from __future__ import annotations

from ...dialects.te.builder import compute
from ...ir import types as T
from .registry import (Scalar, as_index, as_tensor, axis_names, load, operand_dims, out_type, ravel, stage_name,
                       strategy, unravel)


def _copy(e, op, x, src_of, name):
    """``out[idx] = x[src_of(e, idx)]`` over the result type of `op`."""
    t = out_type(op)
    x = as_tensor(e, x, "data")
    return compute(e, t, lambda e, *idx: e.read(x, src_of(e, list(idx))),
                   names=axis_names(t.rank), name=stage_name(op, name))


# -- reshapes -----------------------------------------------------------------------------

@strategy("reshape", "reshape_like")
def reshape(e, op, args):
    shape = args[0].type.shape
    t = out_type(op)
    if tuple(shape) == tuple(t.shape):
        return _copy(e, op, args[0], lambda e, idx: idx, "T_reshape")
    # '?' dimensions: their sizes (index Values) from the lowering
    src = e.operand_dims[0] if e.operand_dims else shape
    dst = e.result_dims or t.shape
    return _copy(e, op, args[0], lambda e, idx: reshape_index(e, idx, dst, src), "T_reshape")


def reshape_index(e, idx, dst, src):
    """The index into `src` dims of element `idx` of the `dst` dims, row
    major.  Unit axes read 0, the leading dims the two share are read
    through; only what is left is linearised and split again (a '?' kept
    in front is never a divisor, which bound inference could not follow)."""
    def same(a, b):
        return a is b or (type(a) is int and type(b) is int and a == b)
    ins = [a for a, d in enumerate(src) if not same(d, 1)]
    outs = [a for a, d in enumerate(dst) if not same(d, 1)]
    k = 0
    while k < min(len(ins), len(outs)) and same(src[ins[k]], dst[outs[k]]):
        k += 1
    rest_in, rest_out = [src[a] for a in ins[k:]], [dst[a] for a in outs[k:]]
    if not all(type(d) is int for d in rest_in + rest_out):
        return unravel(e, ravel(e, idx, dst), src)
    out = [0] * len(src)
    for a, b in zip(ins[:k], outs[:k]):
        out[a] = idx[b]
    for a, v in zip(ins[k:], unravel(e, ravel(e, [idx[b] for b in outs[k:]], rest_out), rest_in)):
        out[a] = v
    return out


@strategy("squeeze")
def squeeze(e, op, args):
    shape = args[0].type.shape
    drop = set(op.dropped(shape))

    def src(e, idx):
        it = iter(idx)
        return [0 if d in drop else next(it) for d in range(len(shape))]
    return _copy(e, op, args[0], src, "T_squeeze")


@strategy("expand_dims")
def expand_dims(e, op, args):
    rank = args[0].type.rank
    axis = op.attributes["axis"] % (rank + 1)
    k = op.attributes["num_newaxis"]
    return _copy(e, op, args[0], lambda e, idx: idx[:axis] + idx[axis + k:], "T_expand_dims")


@strategy("transpose")
def transpose(e, op, args):
    perm = op.perm(args[0].type.rank)

    def src(e, idx):
        s = [0] * len(perm)
        for d, p in enumerate(perm):
            s[p] = idx[d]
        return s
    return _copy(e, op, args[0], src, "T_transpose")


# -- joining and splitting -------------------------------------------------------------------

def _select_inputs(e, xs, a, idx, ranges, src_of):
    """Nested selects: input k where ranges[k] = (lo, hi) holds idx[a];
    each read is guarded so that no input is read outside its bounds."""
    v = None
    for k in reversed(range(len(xs))):
        lo, hi = ranges[k]
        below = e.cmp("lt", idx[a], hi) if k < len(xs) - 1 else True
        inside = e.and_(e.cmp("ge", idx[a], lo) if not (type(lo) is int and lo == 0) else True, below)
        r = e.read(xs[k], src_of(k), guard=inside)
        v = r if v is None else e.select(below, r, v)
    return v


@strategy("concatenate")
def concatenate(e, op, args):
    t = out_type(op)
    xs = [as_tensor(e, x, "data") for x in args]
    a = op.attributes["axis"] % t.rank
    ranges, off = [], 0
    for k, x in enumerate(xs):
        n = operand_dims(e, k, x)[a]   # an index Value along a '?' axis
        ranges.append((off, e.add(off, n)))
        off = e.add(off, n)

    def body(e, *idx):
        idx = list(idx)

        def src(k):
            s = list(idx)
            s[a] = e.sub(idx[a], ranges[k][0])
            return s
        return _select_inputs(e, xs, a, idx, ranges, src)
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_concat"))


@strategy("stack")
def stack(e, op, args):
    t = out_type(op)
    xs = [as_tensor(e, x, "data") for x in args]
    a = op.attributes["axis"] % t.rank

    def body(e, *idx):
        idx = list(idx)
        src = idx[:a] + idx[a + 1:]
        return _select_inputs(e, xs, a, idx, [(k, k + 1) for k in range(len(xs))], lambda k: src)
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_stack"))


@strategy("split")
def split(e, op, args):
    """One compute per piece; the strategy returns them as a tuple."""
    x = as_tensor(e, args[0], "data")
    rank = x.type.rank
    a = op.attributes["axis"] % rank
    outs, off = [], 0
    for k, n in enumerate(op.pieces(x.type.shape[a])):
        shape = list(x.type.shape)
        shape[a] = n

        def body(e, *idx, off=off):
            s = list(idx)
            s[a] = e.add(idx[a], off)
            return e.read(x, s)
        outs.append(compute(e, T.TensorType(shape, x.type.element_type), body, names=axis_names(rank),
                            name=f"T_split{k}"))
        off += n
    return tuple(outs)


@strategy("strided_slice")
def strided_slice(e, op, args):
    shape = args[0].type.shape
    # a '?' axis is left whole (dims.py's rule): read straight through
    ranges = [(0, None, 1) if n is None else sl.indices(n) for sl, n in zip(op.slices(shape), shape)]
    return _copy(e, op, args[0], lambda e, idx: [e.add(b, e.mul(i, s)) for i, (b, _, s) in zip(idx, ranges)],
                 "T_strided_slice")


# -- broadcasting and repetition ---------------------------------------------------------------

@strategy("broadcast_to", "broadcast_to_like")
def broadcast_to(e, op, args):
    t = out_type(op)
    x = args[0]
    return compute(e, t, lambda e, *idx: load(e, x, idx), names=axis_names(t.rank),
                   name=stage_name(op, "T_broadcast_to"))


@strategy("tile")
def tile(e, op, args):
    shape = args[0].type.shape
    off = out_type(op).rank - len(shape)
    return _copy(e, op, args[0], lambda e, idx: [e.floormod(idx[off + d], n) for d, n in enumerate(shape)],
                 "T_tile")


@strategy("repeat")
def repeat(e, op, args):
    a = op.attributes["axis"] % args[0].type.rank
    r = op.attributes["repeats"]

    def src(e, idx):
        idx[a] = e.floordiv(idx[a], r)
        return idx
    return _copy(e, op, args[0], src, "T_repeat")


@strategy("reverse")
def reverse(e, op, args):
    a = op.attributes["axis"] % args[0].type.rank
    n = args[0].type.shape[a]

    def src(e, idx):
        idx[a] = e.sub(n - 1, idx[a])
        return idx
    return _copy(e, op, args[0], src, "T_reverse")


@strategy("reverse_sequence")
def reverse_sequence(e, op, args):
    t = out_type(op)
    x = as_tensor(e, args[0], "data")
    lengths = args[1]
    s, b = op.axes(t.rank)
    n = t.shape[s]

    def body(e, *idx):
        idx = list(idx)
        if isinstance(lengths, Scalar):
            L = max(0, min(int(lengths.value), n))
        else:
            L = e.index("min", e.index("max", as_index(e, e.read(lengths, [idx[b]])), 0), n)
        rev = e.sub(e.sub(L, 1), idx[s])
        src = list(idx)
        src[s] = e.select(e.cmp("lt", idx[s], L), rev, idx[s])
        return e.read(x, src)
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_reverse_sequence"))


# -- einsum -----------------------------------------------------------------------------------

def einsum_labels(op, shapes):
    """(per-operand label lists, output labels, label sizes) with each '...'
    spelled out as labels "0", "1", ... (no letter, so no clash with the
    equation's), right-aligned as numpy broadcasts them."""
    eq = op.attributes["equation"].replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    n_ell = max((len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes) if "..." in t), default=0)
    ell = [str(k) for k in range(n_ell)]
    labels, sizes, counts = [], {}, {}
    for term, shape in zip(terms, shapes):
        pre, dots, post = term.partition("...")
        k = len(shape) - len(pre) - len(post) if dots else 0
        ls = list(pre) + ell[n_ell - k:] + list(post)
        labels.append(ls)
        for c, d in zip(ls, shape):
            if sizes.get(c, 1) == 1:   # a broadcast size-1 dimension yields to the real one
                sizes[c] = d
            if c not in ell:
                counts[c] = counts.get(c, 0) + 1
    if arrow:
        pre, dots, post = rhs.partition("...")
        out = list(pre) + (ell if dots else []) + list(post)
    else:
        out = ell + sorted(c for c, n in counts.items() if n == 1)
    return labels, out, sizes


@strategy("einsum")
def einsum(e, op, args):
    t = out_type(op)
    xs = [as_tensor(e, x, "data") for x in args]
    labels, out, sizes = einsum_labels(op, [x.type.shape for x in xs])
    summed = []
    for ls in labels:
        summed += [c for c in ls if c not in out and c not in summed]
    def body(e, *axes):
        at = dict(zip(out + summed, axes))
        v = None
        for x, ls in zip(xs, labels):
            r = e.read(x, [0 if n == 1 and sizes[c] != 1 else at[c] for c, n in zip(ls, x.type.shape)])
            v = r if v is None else e.binary("mul", v, r)
        return v
    def name(c):   # an ellipsis label is a digit: not a name by itself
        return "e" + c if c.isdigit() else c
    names = [name(c) for c in out]
    reduce = [(name(c) + "r", sizes[c]) for c in summed]
    return compute(e, t, body, reduce=reduce, reducer="sum" if reduce else None, names=names,
                   name=stage_name(op, "T_einsum"))


@strategy("layout_transform")
def layout_transform(e, op, args):
    t = out_type(op)
    x = as_tensor(e, args[0], "data")
    src, dst = op.layouts()

    def body(e, *idx):
        primal = {}
        for ax in dst.primal:
            v = idx[dst.index(ax)]
            f = dst.factors.get(ax.lower())
            primal[ax] = e.add(e.mul(v, f), idx[dst.index(ax.lower())]) if f else v
        sidx = []
        for ax in src.axes:
            if ax.isupper():
                f = src.factors.get(ax.lower())
                sidx.append(e.floordiv(primal[ax], f) if f else primal[ax])
            else:
                sidx.append(e.floormod(primal[ax.upper()], src.factors[ax]))
        return e.read(x, sidx)
    names = [ax.lower() if ax.isupper() else f"{ax}{dst.factors[ax]}" for ax in dst.axes]
    return compute(e, t, body, names=names,
                   name=stage_name(op, "T_layout_trans"))
