"""TE computes for relay's pools.

    nn.max_pool{1,2,3}d    out[n, c, *y] = max_{*r} x[n, c, *(y*s + r*d - pad_before)],
                           a read outside the input gives the lowest value (guarded read)
    nn.avg_pool{1,2,3}d    a "pool_sum" stage (the same window, reads outside give 0),
                           then out = sum / count, count the window's positions inside
                           the input (count_include_pad: inside the padded input):
                           per axis max(0, min(K-1, (hi-1-a) // d) - max(0, ceil(-a / d)) + 1)
                           for a window starting at a = y*s - pad over [0, hi)
    nn.global_{max,avg}_pool2d, nn.adaptive_{max,avg}_pool{1,2,3}d
                           bin i of n over L covers [start, end) = [i*L // n, ceil((i+1)*L / n));
                           the reduction runs over the widest bin, reads guarded by r < end - start

ceil_mode needs nothing special: the relay op's output size already drops
windows that start in the trailing padding, and reads past the input are
guarded.  Integer averages sum in int64 and truncate toward zero, as the
reference's trunc of the float64 mean.  Layouts (blocked ones too) go
through topi_nn.primal_index / read_primal.
"""

from __future__ import annotations

from ...dialects.te.builder import compute
from ...ir import types as T
from .registry import as_tensor, in_range, layout_names, out_type, primal_index, read_primal, stage_name, strategy


def _lowest(et):
    if T.is_float(et):
        return float("-inf")
    import numpy as np
    return float(np.iinfo(T.to_numpy_dtype(et)).min)


def _sum_type(et):
    return et if T.is_float(et) else T.i64


def _divide(e, total, count, et):
    """total / count in the output type: float division, or (integers,
    count > 0) division toward zero."""
    if T.is_float(et):
        return e.binary("div", total, e.cast(e.cast(e.val(count), T.i64), et))
    c = e.cast(e.val(count), T.i64)
    return e.cast(e.op("arith.divsi", [total, c], [T.i64]), et)


def _window_count(e, a, k, d, hi):
    """How many of the taps a + r*d (r < k) lie in [0, hi)."""
    if isinstance(a, int):
        return sum(1 for r in range(k) if 0 <= a + r * d < hi)
    last = e.index("min", k - 1, e.floordiv(e.sub(hi - 1, a), d))
    first = e.index("max", 0, e.sub(0, e.floordiv(a, d)))
    return e.index("max", 0, e.add(e.sub(last, first), 1))


WINDOW = [f"nn.{k}_pool{n}d" for k in ("max", "avg") for n in (1, 2, 3)]


@strategy(*WINDOW)
def window_pool(e, op, args):
    t = out_type(op)
    x = as_tensor(e, args[0], "data")
    a = op.attributes
    dl, ol = op.layouts()
    sp = op.spatial
    nd = len(sp)
    ins = dl.primal_shape(x.type.shape)
    ks, st, dil, pad = a["pool_size"], a["strides"], a["dilation"], a["padding"]
    avg = op.AVG
    et = t.element_type
    acc = _sum_type(et) if avg else et

    def starts(e, o):
        return [e.sub(e.mul(o[s], st[j]), pad[j]) for j, s in enumerate(sp)]

    def body(e, *idx):
        o = primal_index(e, ol, idx)
        r = idx[len(ol.axes):]
        pos = {"N": o["N"], "C": o["C"]}
        conds = []
        for j, (s, a0) in enumerate(zip(sp, starts(e, o))):
            p = e.add(a0, e.mul(r[j], dil[j]))
            conds += in_range(e, p, 0, ins[s])
            pos[s] = p
        v = read_primal(e, x, dl, pos, guard=e.all_of(conds), else_value=0.0 if avg else _lowest(et))
        return e.cast(v, acc)
    red = [(f"r{s.lower()}", ks[j]) for j, s in enumerate(sp)]
    name = stage_name(op, op.op_name.split(".")[-1])
    if not avg:
        return compute(e, t, body, reduce=red, reducer="max", names=layout_names(ol), name=name)
    total = compute(e, T.TensorType(t.shape, acc), body, reduce=red, reducer="sum", names=layout_names(ol),
                    name="pool_sum")

    def avg_body(e, *idx):
        o = primal_index(e, ol, idx)
        count = 1
        for j, (s, a0) in enumerate(zip(sp, starts(e, o))):
            if a["count_include_pad"]:
                # positions inside the padded input (ceil_mode's overhang never counts)
                n = _window_count(e, e.add(a0, pad[j]), ks[j], dil[j], ins[s] + pad[j] + pad[nd + j])
            else:
                n = _window_count(e, a0, ks[j], dil[j], ins[s])
            count = e.mul(count, n)
        count = e.index("max", count, 1)
        return _divide(e, e.read(total, list(idx)), count, et)
    return compute(e, t, avg_body, names=layout_names(ol), name=name)


ADAPTIVE = ["nn.global_max_pool2d", "nn.global_avg_pool2d"] + \
    [f"nn.adaptive_{k}_pool{n}d" for k in ("max", "avg") for n in (1, 2, 3)]


@strategy(*ADAPTIVE)
def adaptive_pool(e, op, args):
    t = out_type(op)
    x = as_tensor(e, args[0], "data")
    dl, ol = op.layouts()
    sp = op.spatial
    ins = dl.primal_shape(x.type.shape)
    outs = ol.primal_shape(t.shape)
    avg = op.AVG
    et = t.element_type
    acc = _sum_type(et) if avg else et

    def bounds(e, o):
        """(start, end) of each spatial axis' bin."""
        out = []
        for s in sp:
            L, n = ins[s], outs[s]
            out.append((e.floordiv(e.mul(o[s], L), n), e.floordiv(e.add(e.mul(o[s], L), L + n - 1), n)))
        return out
    widest = {s: max(-(-(i + 1) * ins[s] // outs[s]) - i * ins[s] // outs[s] for i in range(outs[s])) for s in sp}

    def body(e, *idx):
        o = primal_index(e, ol, idx)
        r = idx[len(ol.axes):]
        pos = {"N": o["N"], "C": o["C"]}
        conds = []
        for j, (s, (lo, hi)) in enumerate(zip(sp, bounds(e, o))):
            pos[s] = e.add(lo, r[j])
            if ins[s] % outs[s]:   # bins of one width need no guard
                conds.append(e.cmp("lt", pos[s], hi))
        v = read_primal(e, x, dl, pos, guard=e.all_of(conds), else_value=0.0 if avg else _lowest(et))
        return e.cast(v, acc)
    red = [(f"r{s.lower()}", widest[s]) for s in sp]
    name = stage_name(op, op.op_name.split(".")[-1])
    if not avg:
        return compute(e, t, body, reduce=red, reducer="max", names=layout_names(ol), name=name)
    total = compute(e, T.TensorType(t.shape, acc), body, reduce=red, reducer="sum", names=layout_names(ol),
                    name="pool_sum")

    def avg_body(e, *idx):
        count = 1
        for lo, hi in bounds(e, primal_index(e, ol, idx)):
            count = e.mul(count, e.sub(hi, lo))
        return _divide(e, e.read(total, list(idx)), count, et)
    return compute(e, t, avg_body, names=layout_names(ol), name=name)
