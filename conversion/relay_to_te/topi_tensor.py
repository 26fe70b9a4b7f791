"""TE computes for relay's tensor creation, indexing, sorting and scan operators
(registered with registry.strategy).

    zeros, ones, full       a constant (full: the fill value read at [0, ..], cast)
    arange                  start + cast(i) * step, in the result's dtype (as TVM)
    shape_of                the input's dims: constants, and the run-time sizes of its '?'
    ndarray_size            a constant: the input's static shape is known here
    take                    x[.., fix(i[..]), ..] with fix per mode: clip min(max(v, 0), n - 1),
                            wrap v mod n, fast v < 0 ? v + n : v; unset axis reads flattened x
    gather, gather_nd       x at the (wrapped) data-dependent coordinates
    one_hot                 i[.. ..] == idx[axis] ? on : off
    scatter_elements        r = reduce over the indices' `axis` of the updates whose index
    scatter_nd              matches the output position (update: the last match, as a
                            "max" of its position), then combined with the data
    sort, argsort, topk     rank formulation, stable (equal elements keep their index order,
                            ascending or descending):
                              rank[.., i, ..] = #{j : x[j] before x[i], or x[j] == x[i] and j < i}
                              order[.., r, ..] = sum_j (rank[.., j, ..] == r ? j : 0)
                              values = x[.., order[.., r, ..], ..]
    cumsum, cumprod         out[.., i, ..] = reduce_k (k <= i ? x[.., k, ..] : identity)
                            (k < i when exclusive); unset axis scans flattened x

argwhere's row count depends on the data, and the dyn.* ops' output shapes
on their operands' values, so they have no TE compute: lowering one is an
error at the op (its function runs on numpy).
"""

from __future__ import annotations

from ...dialects.relay.ops.tensor import ArgsortOp, CumprodOp, OnesOp
from ...dialects.te.builder import compute, reducer_identity
from ...ir import types as T
from .registry import (Scalar, as_index, as_tensor, axis_names, operand_dims, out_type, ravel, stage_name, strategy,
                       unravel)


def _const_fill(e, op, value_of, name):
    t = out_type(op)
    return compute(e, t, lambda e, *idx: value_of(e, t.element_type), names=axis_names(t.rank),
                   name=stage_name(op, name))


def _scalar(e, arg, et):
    """A one-element operand (a splat Scalar or a tensor of any rank) as a value of type `et`."""
    if isinstance(arg, Scalar):
        return e.const(arg.value, et)
    return convert(e, e.read(arg, [0] * arg.type.rank), et)


def convert(e, v, et):
    """A cast as numpy's astype does it (i1 is 0 or 1, not -1)."""
    if v.type is T.i1 and et is not T.i1:
        v = e.op("arith.extui", [v], [T.i32])
    if et is T.i1 and v.type is not T.i1:
        return e.cmp("ne", v, e.const(0, v.type))
    return e.cast(v, et)


# -- creation -------------------------------------------------------------------------------

@strategy("zeros", "ones")
def zeros_ones(e, op, args):
    value = 1 if isinstance(op, OnesOp) else 0
    return _const_fill(e, op, lambda e, et: e.const(value, et), "T_" + op.op_name)


@strategy("full")
def full(e, op, args):
    return _const_fill(e, op, lambda e, et: _scalar(e, args[0], et), "T_full")


@strategy("arange", "arange_like")
def arange(e, op, args):
    """start + i * step (arange_like: as many as its operand's axis holds,
    a '?' one sized by the emitter's result_dims)."""
    t = out_type(op)
    et = t.element_type
    a = op.attributes
    start, step = (x if T.is_float(et) else int(x) for x in (a["start"], a["step"]))

    def body(e, i):
        k = e.cast(e.cast(i, T.i64), et) if T.is_float(et) else e.cast(i, et)
        return e.binary("add", e.const(start, et), e.binary("mul", k, e.const(step, et)))
    return compute(e, t, body, names=["i"], name=stage_name(op, "T_arange"))


@strategy("shape_of")
def shape_of(e, op, args):
    """Its operand's dims: constants, and the sizes of its '?' dims (the
    kernel's index parameters) cast to the result's integer type."""
    t = out_type(op)
    shape = operand_dims(e, 0, args[0])

    def dim(d):
        return e.const(d, t.element_type) if type(d) is int else e.cast(d, t.element_type)

    def body(e, i):
        v = dim(shape[-1])
        for d in reversed(range(len(shape) - 1)):
            v = e.select(e.cmp("eq", i, d), dim(shape[d]), v)
        return v
    return compute(e, t, body, names=["i"], name=stage_name(op, "T_shape"))


@strategy("ndarray_size")
def ndarray_size(e, op, args):
    n = 1
    for d in args[0].type.shape:
        n *= d
    return _const_fill(e, op, lambda e, et: e.const(n, et), "T_ndarray_size")


# -- indexing ---------------------------------------------------------------------------------

def wrap(e, v, n):
    """A negative index counts from the end."""
    return e.select(e.cmp("lt", v, 0), e.add(v, n), v)


def _index(e, arg, at):
    """Element `at` of an integer operand, as an index."""
    if isinstance(arg, Scalar):
        return int(arg.value)
    return as_index(e, e.read(arg, at))


@strategy("take")
def take(e, op, args):
    t = out_type(op)
    x, ind = as_tensor(e, args[0], "data"), args[1]
    irank = ind.type.rank
    axis = op.attributes.get("axis")
    mode = op.attributes["mode"]
    shape = x.type.shape

    def fix(v, n):
        if isinstance(v, int) and isinstance(n, int):
            return min(max(v, 0), n - 1) if mode == "clip" else v % n
        if mode == "clip":
            return e.index("min", e.index("max", v, 0), e.sub(n, 1))
        if mode == "wrap":
            return e.floormod(v, n)
        return wrap(e, v, n)

    if axis is None:
        def body(e, *idx):
            return e.read(x, unravel(e, fix(_index(e, ind, list(idx)), x.type.num_elements()), shape))
    else:
        axis %= x.type.rank
        b = op.attributes["batch_dims"]
        b = b + irank if b < 0 else b

        def body(e, *idx):
            idx = list(idx)
            i = _index(e, ind, idx[:b] + idx[axis:axis + irank - b])
            return e.read(x, idx[:axis] + [fix(i, n)] + idx[axis + irank - b:])
        n = operand_dims(e, 0, args[0])[axis]   # a '?' axis: its run-time size
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_take"))


@strategy("gather")
def gather(e, op, args):
    t = out_type(op)
    x, ind = as_tensor(e, args[0], "data"), args[1]
    axis = op.attributes["axis"] % t.rank
    n = operand_dims(e, 0, args[0])[axis]   # a '?' axis: its run-time size

    def body(e, *idx):
        src = list(idx)
        src[axis] = wrap(e, _index(e, ind, list(idx)), n)
        return e.read(x, src)
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_gather"))


@strategy("gather_nd")
def gather_nd(e, op, args):
    t = out_type(op)
    x, ind = as_tensor(e, args[0], "data"), as_tensor(e, args[1], "indices")
    b = op.attributes["batch_dims"]
    m, ipos = ind.type.shape[0], ind.type.rank - 1

    def body(e, *idx):
        idx = list(idx)
        rows = [wrap(e, _index(e, ind, [k] + idx[:ipos]), x.type.shape[b + k]) for k in range(m)]
        return e.read(x, idx[:b] + rows + idx[ipos:])
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_gather_nd"))


@strategy("one_hot")
def one_hot(e, op, args):
    t = out_type(op)
    ind = args[0]
    pos = op.position(t.rank - 1)
    et = t.element_type

    def body(e, *idx):
        idx = list(idx)
        i = _index(e, ind, idx[:pos] + idx[pos + 1:])
        return e.select(e.cmp("eq", e.val(i), idx[pos]), _scalar(e, args[1], et), _scalar(e, args[2], et))
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_one_hot"))


# -- scatter ----------------------------------------------------------------------------------

_COMBINE = {"add": ("sum", "add"), "mul": ("prod", "mul"), "min": ("min", "min"), "max": ("max", "max")}


def _scatter(e, op, x, u, reduce, match, update_at, mode):
    """Shared by scatter_elements and scatter_nd.  `reduce` = [(name, extent)]
    over the updates; ``match(e, idx, r) -> (i1, update indices)``.
    update: a "max" stage finds the last matching update position (-1: none),
    then the output reads that update, or the data.  add/mul/min/max: the
    matching updates reduced, combined with the data."""
    t = out_type(op)
    et = t.element_type
    names = axis_names(t.rank)
    if mode == "update":
        extents = [n for _, n in reduce]
        it = T.i64

        def last(e, *axes):
            idx, r = list(axes[:t.rank]), list(axes[t.rank:])
            ok, _ = match(e, idx, r)
            return e.select(ok, convert(e, e.val(ravel(e, r, extents)), it), e.const(-1, it))
        pos = compute(e, T.TensorType(t.shape, it), last, reduce=reduce, reducer="max", names=names,
                      name="scatter_last")

        def body(e, *idx):
            idx = list(idx)
            p = e.read(pos, idx)
            has = e.cmp("ge", p, e.const(0, it))
            upd = e.read(u, update_at(e, idx, unravel(e, e.index("max", as_index(e, p), 0), extents)), guard=has)
            return e.select(has, upd, e.read(x, idx))
        return compute(e, t, body, names=names, name=stage_name(op, "T_scatter"))
    reducer, kind = _COMBINE[mode]
    ident = e.const(reducer_identity(reducer, et), et)

    def gather_updates(e, *axes):
        idx, r = list(axes[:t.rank]), list(axes[t.rank:])
        ok, at = match(e, idx, r)
        return e.select(ok, e.read(u, at, guard=ok), ident)
    acc = compute(e, t, gather_updates, reduce=reduce, reducer=reducer, names=names, name="scatter_acc")
    return compute(e, t, lambda e, *idx: e.binary(kind, e.read(x, list(idx)), e.read(acc, list(idx))),
                   names=names, name=stage_name(op, "T_scatter"))


@strategy("scatter_elements")
def scatter_elements(e, op, args):
    x, ind, u = (as_tensor(e, a, w) for a, w in zip(args, ("data", "indices", "updates")))
    rank = x.type.rank
    a = op.attributes["axis"] % rank
    ishape = ind.type.shape

    def match(e, idx, r):
        q = list(idx)
        q[a] = r[0]
        inside = e.all_of([e.cmp("lt", idx[d], ishape[d]) for d in range(rank)
                           if d != a and ishape[d] < x.type.shape[d]])
        i = wrap(e, as_index(e, e.read(ind, q, guard=inside)), x.type.shape[a])
        return e.and_(inside, e.cmp("eq", i, idx[a])), q
    return _scatter(e, op, x, u, [("r", ishape[a])], match, lambda e, idx, r: [*idx[:a], r[0], *idx[a + 1:]],
                    op.attributes["reduction"])


@strategy("scatter_nd")
def scatter_nd(e, op, args):
    x, ind, u = (as_tensor(e, a, w) for a, w in zip(args, ("data", "indices", "updates")))
    m, ys = ind.type.shape[0], list(ind.type.shape[1:])
    # no update axes (indices of shape (M,)): one update, a reduce axis of extent 1
    reduce = [(f"y{k}", n) for k, n in enumerate(ys)] or [("y", 1)]

    def at(e, idx, y):
        return list(y[:len(ys)]) + idx[m:]

    def match(e, idx, y):
        y = y[:len(ys)]
        ok = e.all_of([e.cmp("eq", wrap(e, as_index(e, e.read(ind, [k] + list(y))), x.type.shape[k]), idx[k])
                       for k in range(m)])
        return ok, at(e, idx, y)
    return _scatter(e, op, x, u, reduce, match, at, op.attributes["mode"])


@strategy("argwhere")
def argwhere(e, op, args):
    raise op.error("has no TE compute: its output row count (the number of non-zero elements) depends "
                   "on the data, and a te.compute needs a static shape")


@strategy("dyn.reshape", "dyn.topk", "dyn.arange", "dyn.slice")
def value_shaped(e, op, args):
    raise op.error("has no TE compute: its output shape depends on the values of its operands, and a "
                   "te.compute takes its extents from shapes (it runs on numpy)")


# -- sorting ------------------------------------------------------------------------------------

def _comparable(e, v):
    """Compare booleans and unsigned integers as wider signed ones (the
    comparisons are signed)."""
    if v.type is T.i1:
        return e.op("arith.extui", [v], [T.i32])
    if isinstance(v.type, T.IntegerType) and v.type.unsigned and v.type.width < 64:
        return e.cast(v, T.i64)
    return v


def _order(e, op, x, axis, k, ascend):
    """Stage `order`: for each output position r < k along axis, the index
    of the element of rank r (see the module docstring)."""
    shape = list(x.type.shape)
    n = shape[axis]
    rank = len(shape)
    it = T.i64 if n >= 2 ** 31 else T.i32
    before = "lt" if ascend else "gt"

    def rank_of(e, *axes):
        idx, j = list(axes[:rank]), axes[rank]
        other = list(idx)
        other[axis] = j
        xi, xj = _comparable(e, e.read(x, idx)), _comparable(e, e.read(x, other))
        tie = e.and_(e.cmp("eq", xj, xi), e.cmp("lt", j, idx[axis]))
        first = e.op("arith.ori", [e.cmp(before, xj, xi), tie], [T.i1])
        return e.select(first, e.const(1, it), e.const(0, it))
    ranks = compute(e, T.TensorType(shape, it), rank_of, reduce=[("j", n)], reducer="sum",
                    names=axis_names(rank), name="sort_rank")
    oshape = list(shape)
    oshape[axis] = k

    def pick(e, *axes):
        idx, j = list(axes[:rank]), axes[rank]
        src = list(idx)
        src[axis] = j
        hit = e.cmp("eq", as_index(e, e.read(ranks, src)), idx[axis])
        return e.select(hit, e.cast(j, it), e.const(0, it))
    return compute(e, T.TensorType(oshape, it), pick, reduce=[("j", n)], reducer="sum",
                   names=axis_names(rank), name="sort_order")


def _values(e, x, order, axis, name):
    t = order.type.with_element(x.type.element_type)

    def body(e, *idx):
        src = list(idx)
        src[axis] = as_index(e, e.read(order, list(idx)))
        return e.read(x, src)
    return compute(e, t, body, names=axis_names(t.rank), name=name)


def _indices(e, order, et, name):
    t = order.type.with_element(et)
    return compute(e, t, lambda e, *idx: convert(e, e.read(order, list(idx)), et), names=axis_names(t.rank),
                   name=name)


@strategy("sort", "argsort")
def sort(e, op, args):
    x = as_tensor(e, args[0], "data")
    axis = op.attributes["axis"] % x.type.rank
    order = _order(e, op, x, axis, x.type.shape[axis], op.attributes["is_ascend"])
    if not isinstance(op, ArgsortOp):
        return _values(e, x, order, axis, stage_name(op, "T_sort"))
    return _indices(e, order, out_type(op).element_type, stage_name(op, "T_argsort"))


@strategy("topk")
def topk(e, op, args):
    x = as_tensor(e, args[0], "data")
    a = op.attributes
    axis = a["axis"] % x.type.rank
    n = x.type.shape[axis]
    k = a["k"] if a["k"] >= 1 else n
    order = _order(e, op, x, axis, k, a["is_ascend"])
    rt = a["ret_type"]
    t = op.results[0].type
    it = t.types[1] if rt == "both" else t
    values = _values(e, x, order, axis, "T_topk_values") if rt != "indices" else None
    indices = _indices(e, order, it.element_type, "T_topk_indices") if rt != "values" else None
    return (values, indices) if rt == "both" else values if rt == "values" else indices


# -- scans --------------------------------------------------------------------------------------

@strategy("cumsum", "cumprod")
def cumulative(e, op, args):
    t = out_type(op)
    et = t.element_type
    x = as_tensor(e, args[0], "data")
    reducer = "prod" if isinstance(op, CumprodOp) else "sum"
    upto = "lt" if op.attributes["exclusive"] else "le"
    axis = op.attributes.get("axis")
    flat = axis is None
    axis = 0 if flat else axis % t.rank
    ident = e.const(reducer_identity(reducer, et), et)

    def body(e, *axes):
        idx, k = list(axes[:t.rank]), axes[t.rank]
        if flat:
            src = unravel(e, k, x.type.shape)
        else:
            src = list(idx)
            src[axis] = k
        v = convert(e, e.read(x, src), et)
        return e.select(e.cmp(upto, k, idx[axis]), v, ident)
    return compute(e, t, body, reduce=[("k", t.shape[axis])], reducer=reducer, names=axis_names(t.rank),
                   name=stage_name(op, "T_" + op.op_name))
