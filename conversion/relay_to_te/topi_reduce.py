"""TE computes for relay's reductions.

Each reduction is a te.compute over the output shape (``op.out_shape``:
keepdims leaves size-1 axes) with one reduce axis per reduced input axis
(``op.reduce_axes``: axis / exclude, sorted); the body reads the input at
the index made of both:

    %s = te.compute [%ax0] reduce [%k0: 4, %k1: 5] "sum" : tensor<3xf32> {
      %a = te.read %x[%k0, %ax0, %k1] : f32
      yield %a
    }

Stages per op (an elementwise stage after a reduction is inlined by the
default schedule):

    sum prod max min   one stage, in the input dtype (integers wrap)
    all any            over i1 zero-extended to i8: min / max, then != 0
    mean               sum (integers in i64), then / n (integers toward zero)
    logsumexp          m = max; s = sum exp(x - m'), m' = m where finite else 0;
                       log(s) + m'
    variance std       mean (or the given mean, broadcast), then
                       sum (x - mean)^2 / (n - unbiased), sqrt for std
    argmax argmin      m = max (min); then the least (select_last_index: the
                       greatest) flat index over the reduced axes, row-major,
                       where x == m or x is NaN (np.argmax's first NaN wins)

Unsigned and i1 inputs to max / min / argmax / argmin are zero-extended
to a wider signed type first: arith's max, min and compares on integers
are signed.  On i1, numpy's sum / max / mean are ``any`` and prod / min
``all``.
"""

from __future__ import annotations

import math

from ...dialects.relay.ops.reduce import ArgmaxOp, StdOp
from ...dialects.te.builder import compute, reducer_identity
from ...ir import types as T
from . import topi_elemwise as ew
from .registry import Scalar, axis_names, operand_dims, out_type, stage_name, strategy


def read_input(e, x, full):
    if isinstance(x, Scalar):
        return e.const(x.value, x.type.element_type)
    return e.read(x, full)


def reduce_stage(e, op, x, reducer, value, t, name):
    """A stage of the output's shape and element type `t`: reducer over the
    reduced axes of ``value(e, x_element, full_index, out_index)``.  Without
    reduced axes it is elementwise (reducer dropped)."""
    shape = tuple(x.type.shape)
    rank = len(shape)
    axes = op.reduce_axes(rank)
    keep = op.attributes["keepdims"]
    oshape = op.out_shape(shape)
    dims = operand_dims(e, 0, x) if not isinstance(x, Scalar) else shape   # '?' extents: index Values

    def body(e, *idx):
        sp, red = idx[:len(oshape)], idx[len(oshape):]
        full, s, r = [], 0, 0
        for d in range(rank):
            if d in axes:
                full.append(red[r] if red else 0)
                r += 1
                s += keep
            else:
                full.append(sp[s])
                s += 1
        return value(e, read_input(e, x, full), full, list(sp))
    extents = [(f"k{j}", dims[d]) for j, d in enumerate(axes)]
    if not extents or all(n == 1 for _, n in extents):
        # nothing (or one element) to combine: every reduced axis reads index 0
        return compute(e, T.TensorType(oshape, t), body, names=axis_names(len(oshape)), name=name)
    return compute(e, T.TensorType(oshape, t), body, reduce=extents, reducer=reducer,
                   names=axis_names(len(oshape)), name=name)


def pointwise(e, op, stages, fn, t, name):
    """out[i] = fn(e, *[stage[i] for stage in stages]), all of the output's shape."""
    oshape = stages[0].type.shape
    return compute(e, T.TensorType(oshape, t), lambda e, *idx: fn(e, *[e.read(s, list(idx)) for s in stages]),
                   names=axis_names(len(oshape)), name=name)


def count(op, x):
    return math.prod(x.type.shape[d] for d in op.reduce_axes(x.type.rank))


# -- sum prod max min all any --------------------------------------------------------------

# numpy on booleans: sum, max and mean are any; prod and min are all
_BOOL = {"sum": "max", "max": "max", "mean": "max", "any": "max", "prod": "min", "min": "min", "all": "min"}


def bool_reduce(e, op, x, kind):
    """any (max) / all (min) over i1: in i8, then != 0."""
    name = stage_name(op, "T_" + op.op_name)
    s = reduce_stage(e, op, x, kind, lambda e, v, *_: e.op("arith.extui", [v], [T.i8]), T.i8, name + "_i8")
    return pointwise(e, op, [s], lambda e, v: ew.truth(e, v), T.i1, name)


@strategy("sum", "prod", "max", "min", "all", "any")
def simple(e, op, args):
    t = out_type(op)
    x = args[0]
    et = t.element_type
    kind = op.op_name
    name = stage_name(op, "T_" + kind)
    if et is T.i1:
        return bool_reduce(e, op, x, _BOOL[kind])
    return reduce_stage(e, op, x, kind, lambda e, v, *_: v, et, name)


@strategy("mean")
def mean(e, op, args):
    t = out_type(op)
    x = args[0]
    et = t.element_type
    name = stage_name(op, "T_mean")
    if et is T.i1:
        return bool_reduce(e, op, x, "max")
    n = count(op, x)
    if T.is_float(et):
        s = reduce_stage(e, op, x, "sum", lambda e, v, *_: v, et, name + "_sum")
        return pointwise(e, op, [s], lambda e, v: e.binary("div", v, e.const(n, et)), et, name)
    # integers: exact sum in i64, then toward zero (numpy: trunc of the float mean)
    s = reduce_stage(e, op, x, "sum", lambda e, v, *_: ew.convert(e, v, T.i64), T.i64, name + "_sum")
    return pointwise(e, op, [s], lambda e, v: ew.convert(e, e.op("arith.divsi", [v, e.const(n, T.i64)], [T.i64]), et),
                     et, name)


# -- logsumexp ---------------------------------------------------------------------------------

@strategy("logsumexp")
def logsumexp(e, op, args):
    t = out_type(op)
    x = args[0]
    et = t.element_type
    name = stage_name(op, "T_logsumexp")
    m = reduce_stage(e, op, x, "max", lambda e, v, *_: v, et, name + "_max")

    def shift(e, mv):
        """m where it is finite, else 0 (all -inf, or an inf or NaN in the group)."""
        finite = ew.compare(e, "lt", e.intrin("fabs", mv), e.const(math.inf, et))
        return e.select(finite, mv, e.const(0.0, et))

    def term(e, v, full, out):
        return e.intrin("exp", e.binary("sub", v, shift(e, e.read(m, out))))
    s = reduce_stage(e, op, x, "sum", term, et, name + "_sum")
    return pointwise(e, op, [s, m], lambda e, sv, mv: e.binary("add", e.intrin("log", sv), shift(e, mv)), et, name)


# -- variance std ---------------------------------------------------------------------------------

@strategy("variance", "std")
def variance(e, op, args):
    t = out_type(op)
    x = args[0]
    et = t.element_type
    name = stage_name(op, "T_" + op.op_name)
    n = count(op, x)
    if len(args) > 1:
        given = args[1]

        def mean_at(e, full, out):
            if isinstance(given, Scalar):
                return e.const(given.value, et)
            off = len(full) - given.type.rank
            return e.read(given, [0 if size == 1 else full[off + j] for j, size in enumerate(given.type.shape)])
    else:
        s = reduce_stage(e, op, x, "sum", lambda e, v, *_: v, et, name + "_sum")
        m = pointwise(e, op, [s], lambda e, v: e.binary("div", v, e.const(n, et)), et, name + "_mean")

        def mean_at(e, full, out):
            return e.read(m, out)

    def sq(e, v, full, out):
        d = e.binary("sub", v, mean_at(e, full, out))
        return e.binary("mul", d, d)
    ss = reduce_stage(e, op, x, "sum", sq, et, name + "_sqsum")
    div = n - (1 if op.attributes["unbiased"] else 0)

    def finish(e, v):
        v = e.binary("div", v, e.const(div, et))
        return e.intrin("sqrt", v) if isinstance(op, StdOp) else v
    return pointwise(e, op, [ss], finish, et, name)


# -- argmax argmin ---------------------------------------------------------------------------------

@strategy("argmax", "argmin")
def argreduce(e, op, args):
    x = args[0]
    xt = x.type.element_type
    kind = "max" if isinstance(op, ArgmaxOp) else "min"
    name = stage_name(op, "T_" + op.op_name)
    shape = tuple(x.type.shape)
    axes = op.reduce_axes(len(shape))
    m = reduce_stage(e, op, x, kind, lambda e, v, *_: v, xt, name + "_" + kind)
    strides, acc = {}, 1
    for d in reversed(axes):
        strides[d] = acc
        acc *= shape[d]
    last = op.attributes["select_last_index"]
    pick = "max" if last else "min"
    none = reducer_identity(pick, T.i32)

    def index(e, v, full, out):
        flat = 0
        for d in axes:
            flat = e.add(flat, e.mul(full[d], strides[d]))
        hit = ew.compare(e, "eq", v, e.read(m, out))
        if T.is_float(xt):
            hit = e.op("arith.ori", [hit, ew.compare(e, "ne", v, v)], [T.i1])
        fi = e.const(flat, T.i32) if isinstance(flat, int) else e.cast(flat, T.i32)
        return e.select(hit, fi, e.const(none, T.i32))
    return reduce_stage(e, op, x, pick, index, T.i32, name)
