"""TE computes for relay's qnn operators and annotation.simulated_quantize,
bit for bit the ops' compute() (dialects/relay/ops/qnn_math.py):

    qnn.quantize       clip(round_half_even(x / s) + z) in x's float type, then convert
    qnn.dequantize     float(int32(q) - z) * s
    qnn.requantize     compute_dtype int64: fixed point in int64,
                         p = (v << left) * m,  v = q - z_in
                         UPWARD (p + 2^(total-1)) >> total, TONEAREST adds p >> 63 first,
                       then + z_out and saturate; float32 / float64: v * (s_in / s_out)
                       rounded (UPWARD floor(v + 0.5), TONEAREST half away from zero)
    qnn.conv2d / dense / batch_matmul
                       sum of (q - z) * (w - z_w[o]) in out_dtype (int32 wraps exactly
                       as the reference's int64 sum truncated); conv2d pads q - z with 0
    qnn.add / subtract each side requantized (int64, UPWARD) to int32 at the output's
                       scale and zero point, then l + r - z_out (l - r + z_out), saturated
    qnn.mul            (l - z_l) * (r - z_r) wrapped to int32, requantized from the
                       float32 scale s_l * s_r
    qnn.concatenate    each input requantized to the output; the part an output index
                       falls in is picked by guarded reads
    annotation.simulated_quantize
                       round(clip(x / s, lo, hi)) * s; kind "identity" copies x

The fixed-point multipliers are compile-time constants: requantizing
scales must be relay constants (zero points and the scales of quantize,
dequantize and simulated_quantize may be any tensor).  Per-axis constants
become a balanced select tree over the channel index.
"""

from __future__ import annotations

from ...dialects.relay.ops.function import ConstantOp
from ...dialects.relay.ops.qnn import QnnSubtractOp
from ...dialects.te.builder import compute
from ...ir import types as T
from ...ir.lazy import lazy_module
from .registry import Scalar, as_tensor, axis_names, load, out_type, stage_name, strategy
from .topi_nn import batch_matmul_body, conv_compute

np = lazy_module("numpy")


def _Q():
    from ...dialects.relay.ops import qnn_math
    return qnn_math


# -- parameters -----------------------------------------------------------------------------

def param(e, arg, et, channel):
    """A scale or zero point as an `et` scalar: a constant, a one-element
    tensor, or a vector read at `channel`."""
    if isinstance(arg, Scalar):
        return e.const(arg.value, et)
    t = arg.type
    n = 1
    for d in t.shape:
        n *= d
    v = e.read(arg, [0] * t.rank) if n == 1 else e.read(arg, [channel])
    return e.cast(v, et)


def static(op, i, args):
    """The value of operand i (a relay constant) as a numpy array; an error
    at the op when it is computed at run time."""
    arg = args[i]
    if isinstance(arg, Scalar):
        return np.asarray(arg.value)
    d = op.operands[i].defining_op()
    if not isinstance(d, ConstantOp):
        raise op.error(f"te lowering needs the scales of '{op.op_name}' as constants "
                       f"(operand {i} is computed at run time)")
    return d.value.array


def table(e, values, channel, et):
    """values[channel] as an `et` scalar: a constant when all are equal,
    else a balanced select tree."""
    values = [v.item() if hasattr(v, "item") else v for v in np.atleast_1d(values).reshape(-1)]

    def pick(lo, hi):
        if all(v == values[lo] for v in values[lo:hi]):
            return e.const(values[lo], et)
        mid = (lo + hi) // 2
        return e.select(e.cmp("lt", channel, mid), pick(lo, mid), pick(mid, hi))
    return pick(0, len(values))


def _shift(e, kind, v, n):
    if isinstance(n, int) and n == 0:
        return v
    return e.op("arith.shli" if kind == "left" else "arith.shrsi", [v, e.const(n, T.i64) if isinstance(n, int)
                                                                    else n], [T.i64])


def _clip_int(e, v, lo, hi):
    return e.binary("min", e.binary("max", v, e.const(lo, T.i64)), e.const(hi, T.i64))


def requantize_value(e, q, z_in, in_scale, out_scale, z_out, channel, rounding, compute_dtype, out_et):
    """One element of the reference requantize: q an integer scalar, z_in
    and z_out i32 scalars, the scales numpy arrays (per-axis along
    `channel`); the result in `out_et`, saturated."""
    Q = _Q()
    lo, hi = Q.qrange(T.to_numpy_dtype(out_et))
    if compute_dtype == "int64":
        fp = Q.FixedPoint(in_scale, out_scale)
        v = e.binary("sub", e.cast(q, T.i64), e.cast(z_in, T.i64))
        m, left, total, rnd = (table(e, a, channel, T.i64) for a in (fp.m, fp.left, fp.total, fp.round))
        if not fp.needs_left_shift:
            left = 0
        p = e.binary("mul", _shift(e, "left", v, left), m)
        bias = e.binary("add", rnd, _shift(e, "right", p, 63)) if rounding == "TONEAREST" else rnd
        v = _shift(e, "right", e.binary("add", p, bias), total)
        v = e.binary("add", v, e.cast(z_out, T.i64))
        return e.cast(_clip_int(e, v, lo, hi), out_et)
    ft = T.f32 if compute_dtype == "float32" else T.f64
    v = e.binary("sub", e.cast(q, ft), e.cast(z_in, ft))
    mult = Q.float_multipliers(in_scale, out_scale).astype(T.to_numpy_dtype(ft))
    v = e.binary("add", e.binary("mul", v, table(e, mult, channel, ft)), e.cast(z_out, ft))
    half = e.const(0.5, ft)
    if rounding == "UPWARD":
        v = e.intrin("floor", e.binary("add", v, half))
    else:   # half away from zero
        up = e.intrin("floor", e.binary("add", v, half))
        down = e.op("arith.negf", [e.intrin("floor", e.binary("add", e.op("arith.negf", [v], [ft]), half))], [ft])
        v = e.select(e.cmp("lt", v, e.const(0.0, ft)), down, up)
    flo, fhi = Q.float_bounds(lo, hi, T.to_numpy_dtype(ft))
    v = e.binary("min", e.binary("max", v, e.const(flo, ft)), e.const(fhi, ft))
    return e.cast(v, out_et)


def _channel(idx, axis, rank, out_rank):
    """The output index along the data's `axis` (data of rank `rank`
    broadcast to `out_rank`)."""
    return idx[out_rank - rank + axis] if rank else 0


# -- quantize, dequantize, requantize ----------------------------------------------------------

@strategy("qnn.quantize")
def quantize(e, op, args):
    t = out_type(op)
    x, s, z = args
    axis = op.attributes["axis"] % t.rank if t.rank else 0
    ft = x.type.element_type
    Q = _Q()
    flo, fhi = Q.float_bounds(*Q.qrange(T.to_numpy_dtype(t.element_type)), T.to_numpy_dtype(ft))

    def body(e, *idx):
        c = idx[axis] if idx else 0
        v = e.intrin("round", e.binary("div", load(e, x, idx), param(e, s, ft, c)))
        v = e.binary("add", v, param(e, z, ft, c))
        v = e.binary("min", e.binary("max", v, e.const(flo, ft)), e.const(fhi, ft))
        return e.cast(v, t.element_type)
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_quantize"))


@strategy("qnn.dequantize")
def dequantize(e, op, args):
    t = out_type(op)
    x, s, z = args
    axis = op.attributes["axis"] % t.rank if t.rank else 0
    ft = t.element_type

    def body(e, *idx):
        c = idx[axis] if idx else 0
        v = e.binary("sub", e.cast(load(e, x, idx), T.i32), param(e, z, T.i32, c))
        return e.binary("mul", e.cast(v, ft), e.cast(param(e, s, T.f32, c), ft))
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_dequantize"))


@strategy("qnn.requantize")
def requantize(e, op, args):
    t = out_type(op)
    x, _, z_in, _, z_out = args
    s_in, s_out = static(op, 1, args), static(op, 3, args)
    axis = op.attributes["axis"] % t.rank if t.rank else 0

    def body(e, *idx):
        c = idx[axis] if idx else 0
        return requantize_value(e, load(e, x, idx), param(e, z_in, T.i32, c), s_in, s_out,
                                param(e, z_out, T.i32, c), c, op.effective_rounding, op.effective_compute_dtype,
                                t.element_type)
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_requantize"))


# -- products ----------------------------------------------------------------------------------

@strategy("qnn.conv2d")
def qnn_conv2d(e, op, args):
    t = out_type(op)
    x, w, z_in, z_w = as_tensor(e, args[0], "data"), as_tensor(e, args[1], "kernel"), args[2], args[3]
    ot = t.element_type
    # q - z_in first: the padding is zero in that space, as the reference's
    xs = compute(e, T.TensorType(x.type.shape, ot),
                 lambda e, *idx: e.binary("sub", e.cast(e.read(x, list(idx)), ot), param(e, z_in, ot, 0)),
                 names=axis_names(x.type.rank), name="shifted")
    return conv_compute(e, op, xs, w, lambda e, v, o: e.binary("sub", v, param(e, z_w, ot, o)))


@strategy("qnn.dense")
def qnn_dense(e, op, args):
    t = out_type(op)
    x, w, z_in, z_w = as_tensor(e, args[0], "data"), as_tensor(e, args[1], "weight"), args[2], args[3]
    ot = t.element_type

    def body(e, *idx):
        *i, j, r = idx
        a = e.binary("sub", e.cast(e.read(x, list(i) + [r]), ot), param(e, z_in, ot, 0))
        b = e.binary("sub", e.cast(e.read(w, [j, r]), ot), param(e, z_w, ot, j))
        return e.binary("mul", a, b)
    names = [f"i{d}" for d in range(t.rank - 1)] + ["j"]
    return compute(e, t, body, reduce=[("k", x.type.shape[-1])], reducer="sum", names=names,
                   name=stage_name(op, "T_qnn_dense"))


@strategy("qnn.batch_matmul")
def qnn_batch_matmul(e, op, args):
    t = out_type(op)
    x, y = as_tensor(e, args[0], "x"), as_tensor(e, args[1], "y")
    ta, tb = op.attributes["transpose_a"], op.attributes["transpose_b"]
    ot = t.element_type
    k = x.type.shape[1] if ta else x.type.shape[2]
    body = batch_matmul_body(x, y, ta, tb, ot, lambda e: param(e, args[2], ot, 0), lambda e: param(e, args[3], ot, 0))
    return compute(e, t, body, reduce=[("k", k)], reducer="sum", names=["b", "i", "j"],
                   name=stage_name(op, "T_qnn_batch_matmul"))


# -- binary ------------------------------------------------------------------------------------

def _side(op, args, which, t):
    """(tensor, scale array, zero-point arg, axis) of one side of a qnn binary op."""
    i = 0 if which == "lhs" else 1
    x = args[i]
    rank = 0 if isinstance(x, Scalar) else x.type.rank
    axis = op.attributes[f"{which}_axis"] % rank if rank else 0
    return x, static(op, 2 + 2 * i, args), args[3 + 2 * i], axis, rank


@strategy("qnn.add", "qnn.subtract")
def qnn_add(e, op, args):
    t = out_type(op)
    s_o = static(op, 6, args)
    z_o = args[7]
    lo, hi = _Q().qrange(T.to_numpy_dtype(t.element_type))
    sub = isinstance(op, QnnSubtractOp)

    def body(e, *idx):
        zo = param(e, z_o, T.i32, 0)
        sides = []
        for which in ("lhs", "rhs"):
            x, s, z, axis, rank = _side(op, args, which, t)
            c = _channel(idx, axis, rank, t.rank)
            v = requantize_value(e, load(e, x, idx), param(e, z, T.i32, c), s, s_o, zo, c, "UPWARD", "int64", T.i32)
            sides.append(e.cast(v, T.i64))
        l, r = sides
        zo64 = e.cast(zo, T.i64)
        v = e.binary("add", e.binary("sub", l, r), zo64) if sub else e.binary("sub", e.binary("add", l, r), zo64)
        return e.cast(_clip_int(e, v, lo, hi), t.element_type)
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_" + op.op_name.replace(".", "_")))


@strategy("qnn.mul")
def qnn_mul(e, op, args):
    t = out_type(op)
    s_o, z_o = static(op, 6, args), args[7]
    lx, sl, zl, la, lr = _side(op, args, "lhs", t)
    rx, sr, zr, ra, rr = _side(op, args, "rhs", t)
    scale, axis = op.product_scale(lr, rr, sl, sr)

    def body(e, *idx):
        a = e.binary("sub", e.cast(load(e, lx, idx), T.i64), param(e, zl, T.i64, _channel(idx, la, lr, t.rank)))
        b = e.binary("sub", e.cast(load(e, rx, idx), T.i64), param(e, zr, T.i64, _channel(idx, ra, rr, t.rank)))
        prod = e.cast(e.binary("mul", a, b), T.i32)   # wraps to int32, as the reference
        c = idx[axis] if idx else 0
        return requantize_value(e, prod, e.const(0, T.i32), scale, s_o, param(e, z_o, T.i32, 0), c, "UPWARD",
                                "int64", t.element_type)
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_qnn_mul"))


@strategy("qnn.concatenate")
def qnn_concatenate(e, op, args):
    t = out_type(op)
    n = op.num_inputs
    data = [as_tensor(e, a, f"data{i}") for i, a in enumerate(args[:n])]
    axis = op.attributes["axis"] % t.rank
    s_o, z_o = static(op, 3 * n, args), args[3 * n + 1]
    scales = [static(op, n + i, args) for i in range(n)]

    def body(e, *idx):
        out = None
        off = 0
        zo = param(e, z_o, T.i32, 0)
        for i, x in enumerate(data):
            size = x.type.shape[axis]
            j = e.sub(idx[axis], off)
            src = list(idx)
            src[axis] = j
            inside = e.all_of([e.cmp("ge", idx[axis], off), e.cmp("lt", idx[axis], off + size)])
            v = requantize_value(e, e.read(x, src, guard=inside), param(e, args[2 * n + i], T.i32, 0),
                                 scales[i], s_o, zo, 0, "UPWARD", "int64", t.element_type)
            out = v if out is None else e.select(inside, v, out)
            off += size
        return out
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_qnn_concatenate"))


# -- the quantize pass's annotation ------------------------------------------------------------

@strategy("annotation.simulated_quantize")
def simulated_quantize(e, op, args):
    t = out_type(op)
    x, s, lo, hi = args
    et = t.element_type
    if op.attributes["kind"] == "identity":
        return compute(e, t, lambda e, *idx: load(e, x, idx), names=axis_names(t.rank),
                       name=stage_name(op, "T_simulated_quantize"))
    axis = op.attributes["axis"] % t.rank if t.rank else 0

    def body(e, *idx):
        sf = param(e, s, et, idx[axis] if idx else 0)
        v = e.binary("div", load(e, x, idx), sf)
        v = e.binary("min", e.binary("max", v, param(e, lo, et, 0)), param(e, hi, et, 0))
        return e.binary("mul", e.intrin("round", v), sf)
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_simulated_quantize"))
