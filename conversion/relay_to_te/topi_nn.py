"""TE computes for relay's nn operators: convolutions, matrix products,
softmax, normalisations, nn.pad and the reshaping nn ops.

    nn.dense                   out[.., j] = sum_k x[.., k] * w[j, k]
    nn.conv2d                  plain layouts: a "pad" stage (guarded reads, zero outside) when
                               padded, then sum over (rc, ry, rx) of pad[n, g*I + rc, y*sh + ry*dh,
                               x*sw + rx*dw] * w[o, rc, ry, rx]; blocked layouts: as nn.conv1d
    nn.conv1d / nn.conv3d      out[n, o, *y] = sum_{rc, *r} pad[n, g*I + rc, *(y*s + r*d)] * w[o, rc, *r]
                               (g = o // (O / groups)); a zero "pad" stage when padded
    nn.conv*_transpose         a "dilate" stage D[n, c, j] = x[n, c, (j + off) / s] where
                               (j + off) is a multiple of s inside the input, 0 elsewhere
                               (off = pad_before - d*(K-1)), then
                               out[n, o, *y] = sum_{rc, *r} D[n, g*I + rc, *(y + r*d)] * w[g*I + rc, o % Og, *(K-1-r)]
    nn.matmul / batch_matmul   sum over k, transposes by index order; a batch of 1 broadcasts
    nn.softmax                 max over the axis, e = exp(x - max) (a stage), its sum s, e * (1 / s)
    nn.log_softmax             x - max - log(sum of exp(x - max))
    nn.batch_norm              (x - mean[c]) / sqrt(var[c] + eps) * gamma[c] + beta[c];
                               returns the tuple (out, mean, var) (copies)
    nn.layer_norm / instance_norm / group_norm
                               a mean stage and a variance stage (two passes: the
                               squares of x - mean) over the normalised axes, then
                               (x - mean) / sqrt(var + eps) * gamma + beta
    nn.l2_normalize            x / sqrt(max(sum of x^2, eps))
    nn.lrn                     a windowed sum of squares (guarded reads), then
                               x / (bias + alpha / size * sum) ^ beta
    nn.pad                     constant (guarded read), edge (clamp), reflect, wrap
    nn.dropout                 inference: (x, ones)
    nn.batch_flatten, depth_to_space, space_to_depth   index arithmetic

Every data, kernel and output layout the relay ops accept, blocked ones
included (``NCHW16c``): reads and writes go through the primal index
(:func:`primal_index`, :func:`read_primal`).
"""

from __future__ import annotations

from ...dialects.relay.ops.nn import LogSoftmaxOp
from ...dialects.relay.ops.norm import LayerNormOp
from ...dialects.te.builder import compute
from ...ir import types as T
from .registry import (Scalar, as_tensor, axis_names, in_range, layout_names, load, operand_dims, out_type,
                       primal_index, read_primal, sizes_without, stage_name, static_first, strategy)


# -- nn.dense ------------------------------------------------------------------------------

@strategy("nn.dense")
def dense(e, op, args):
    t = out_type(op)
    x, w = as_tensor(e, args[0], "data"), as_tensor(e, args[1], "weight")
    k = static_first(operand_dims(e, 0, x)[-1], operand_dims(e, 1, w)[-1])
    ot = t.element_type

    def body(e, *idx):
        *i, j, r = idx
        a = e.cast(e.read(x, list(i) + [r]), ot)
        b = e.cast(e.read(w, [j, r]), ot)
        return e.binary("mul", a, b)
    names = (["i"] if t.rank == 2 else [f"i{d}" for d in range(t.rank - 1)]) + ["j"]
    return compute(e, t, body, reduce=[("k", k)], reducer="sum", names=names,
                   name=stage_name(op, "T_dense"))


@strategy("nn.contrib_dense_pack")
def dense_pack(e, op, args):
    """C[.., j] = sum_k x[.., k] * wp[j / n, k, j % n]: the read a GEMM's
    packed B is (schedules_gemm.packed_width).  Packed "NC{n}n4c" (i32
    words of four i8 weights), a stage makes words of the data's bytes
    and C[.., j] = sum_kw dot4_u8s8(words[.., kw], wp[j / n, kw, j % n]):
    the same GEMM over K / 4, whose multiply-add is vpdpbusd.  Packed
    "NC{n}n2c" (i32 words of two bf16 weights), the same with words of
    the bf16 data's pairs and dot2_bf16: vdpbf16ps, over K / 2."""
    from ...dialects.relay.ops.nn import packed_width, packs_words
    t = out_type(op)
    x, w = as_tensor(e, args[0], "data"), as_tensor(e, args[1], "weight")
    k, n = x.type.shape[-1], packed_width(op.attributes["weight_layout"])
    ot = t.element_type
    names = (["i"] if t.rank == 2 else [f"i{d}" for d in range(t.rank - 1)]) + ["j"]
    per_word = packs_words(op.attributes["weight_layout"])
    if per_word:
        words = data_words(e, x, per_word)
        intrin = "dot4_u8s8" if per_word == 4 else "dot2_bf16"

        def dot(e, *idx):
            *i, j, r = idx
            b = e.read(w, [e.floordiv(j, n), r, e.floormod(j, n)])
            return e.intrin(intrin, e.read(words, list(i) + [r]), b)
        return compute(e, t, dot, reduce=[("k", k // per_word)], reducer="sum", names=names,
                       name=stage_name(op, "T_dense_pack"))

    def body(e, *idx):
        *i, j, r = idx
        a = e.cast(e.read(x, list(i) + [r]), ot)
        b = e.cast(e.read(w, [e.floordiv(j, n), r, e.floormod(j, n)]), ot)
        return e.binary("mul", a, b)
    return compute(e, t, body, reduce=[("k", k)], reducer="sum", names=names,
                   name=stage_name(op, "T_dense_pack"))


@strategy("nn.contrib_conv2d_pack")
def conv2d_pack(e, op, args):
    """out[b, y, x, o] = sum_{rc, rh, rw} dot4_u8s8(words[b, y*sh + rh*dh,
    x*sw + rw*dw, rc], wp[o / n, rh, rw, rc, o % n]): the NHWC conv over
    words of four input channels, the convolution's loop nest whose
    multiply-add is vpdpbusd."""
    t = out_type(op)
    x, w = as_tensor(e, args[0], "data"), as_tensor(e, args[1], "weight")
    n = op.panel()
    _, kh, kw, iw, _ = w.type.shape
    (sh, sw), (dh, dw) = op.attributes["strides"], op.attributes["dilation"]
    words = data_words(e, x)

    def body(e, b, y, xx, o, rc, rh, rw):
        row = e.add(e.mul(y, sh), e.mul(rh, dh))
        col = e.add(e.mul(xx, sw), e.mul(rw, dw))
        wv = e.read(w, [e.floordiv(o, n), rh, rw, rc, e.floormod(o, n)])
        return e.intrin("dot4_u8s8", e.read(words, [b, row, col, rc]), wv)
    return compute(e, t, body, reduce=[("rc", iw), ("rh", kh), ("rw", kw)], reducer="sum",
                   names=["n", "h", "w", "c"], name=stage_name(op, "conv2d"))


def data_words(e, x, per_word=4):
    """words[.., kw] = x[.., 4kw] | x[.., 4kw + 1] << 8 | .. << 24 (i32): the
    uint8 data as the little-endian words it is in memory, which the
    schedule inlines and LLVM loads as one (a stage of its own only to
    give the product two reads, a GEMM's).  With per_word 2, the bf16
    data's bits in pairs: x[.., 2kw] | x[.., 2kw + 1] << 16."""
    *lead, k = x.type.shape
    i32 = T.i32
    width = 32 // per_word

    def body(e, *idx):
        *i, kw = idx
        word = None
        for b in range(per_word):
            v = e.read(x, list(i) + [e.add(e.mul(kw, per_word), b)])
            if per_word == 2:   # bf16: its bits, zero-extended
                v = e.op("arith.extui", [e.op("arith.bitcast", [v], [T.i16])], [i32])
            else:
                v = e.cast(v, i32)
            if b:
                v = e.op("arith.shli", [v, e.const(width * b, i32)], [i32])
            word = v if word is None else e.op("arith.ori", [word, v], [i32])
        return word
    names = [f"i{d}" for d in range(len(lead))] + ["kw"]
    return compute(e, T.TensorType(tuple(lead) + (k // per_word,), i32), body, names=names, name="T_dense_words")


# -- convolutions ----------------------------------------------------------------------------

def pad_spatial(e, x, layout, sp, pads, value=0.0):
    """x zero-padded (before, after) along the spatial axes `sp`."""
    nd = len(sp)
    if not any(pads):
        return x
    sizes = layout.primal_shape(x.type.shape)
    grow = {s: sizes[s] + pads[j] + pads[nd + j] for j, s in enumerate(sp)}
    shape = [grow.get(ax, n) for ax, n in zip(layout.axes, x.type.shape)]
    t = T.TensorType(shape, x.type.element_type)

    def body(e, *idx):
        conds = []
        src = list(idx)
        for j, s in enumerate(sp):
            i = layout.index(s)
            conds += in_range(e, idx[i], pads[j], sizes[s] + pads[j])
            src[i] = e.sub(idx[i], pads[j])
        return e.read(x, src, guard=e.all_of(conds), else_value=value)
    return compute(e, t, body, names=layout_names(layout), name="pad")


@strategy("nn.conv1d", "nn.conv3d")
def conv_nd(e, op, args):
    x, w = as_tensor(e, args[0], "data"), as_tensor(e, args[1], "weight")
    return conv_compute(e, op, x, w)


def conv_compute(e, op, x, w, weight_value=None):
    """The (grouped, dilated, strided, padded) convolution of `op`'s
    attributes and layouts over x and w; `weight_value(e, v, o_channel)`
    adjusts each weight read (qnn subtracts the kernel zero point)."""
    t = out_type(op)
    a = op.attributes
    dl, kl, ol = op.layouts()
    sp = op.spatial
    ks = kl.primal_shape(w.type.shape)
    groups = a["groups"]
    cin, og = ks["I"], ks["O"] // groups
    ot = t.element_type
    x = pad_spatial(e, x, dl, sp, a["padding"])
    strides, dil = a["strides"], a["dilation"]

    def body(e, *idx):
        o = primal_index(e, ol, idx)
        rc, *r = idx[len(ol.axes):]
        ic = e.add(e.mul(e.floordiv(o["C"], og), cin), rc) if groups > 1 else rc
        pos = {"N": o["N"], "C": ic}
        kpos = {"O": o["C"], "I": rc}
        for j, s in enumerate(sp):
            pos[s] = e.add(e.mul(o[s], strides[j]), e.mul(r[j], dil[j]))
            kpos[s] = r[j]
        xv = e.cast(read_primal(e, x, dl, pos), ot)
        wv = e.cast(read_primal(e, w, kl, kpos), ot)
        if weight_value is not None:
            wv = weight_value(e, wv, o["C"])
        return e.binary("mul", xv, wv)
    red = [("rc", cin)] + [(f"r{s.lower()}", ks[s]) for s in sp]
    return compute(e, t, body, reduce=red, reducer="sum", names=layout_names(ol),
                   name=stage_name(op, op.op_name.split(".")[-1]))


@strategy("nn.conv1d_transpose", "nn.conv2d_transpose", "nn.conv3d_transpose")
def conv_transpose(e, op, args):
    t = out_type(op)
    x, w = as_tensor(e, args[0], "data"), as_tensor(e, args[1], "weight")
    a = op.attributes
    dl, kl, ol = op.layouts()
    sp = op.spatial
    ds, ks = dl.primal_shape(x.type.shape), kl.primal_shape(w.type.shape)
    os_ = ol.primal_shape(t.shape)
    groups = a["groups"]
    cg, og = ks["I"] // groups, ks["O"]
    strides, dil, pad = a["strides"], a["dilation"], a["padding"]
    ot = t.element_type
    offs = [pad[j] - dil[j] * (ks[s] - 1) for j, s in enumerate(sp)]
    # the dilated, padded input in the primal layout NC + spatial
    dshape = [ds["N"], ds["C"]] + [os_[s] + dil[j] * (ks[s] - 1) for j, s in enumerate(sp)]
    dt = T.TensorType(dshape, x.type.element_type)

    def dbody(e, n, c, *js):
        pos = {"N": n, "C": c}
        conds = []
        for j, s in enumerate(sp):
            v = e.add(js[j], offs[j])
            conds.append(e.cmp("ge", v, 0))
            conds.append(e.cmp("lt", v, (ds[s] - 1) * strides[j] + 1))
            if strides[j] > 1:
                conds.append(e.cmp("eq", e.floormod(v, strides[j]), 0))
            pos[s] = e.floordiv(v, strides[j])
        return read_primal(e, x, dl, pos, guard=e.all_of(conds))
    xd = compute(e, dt, dbody, names=["n", "c"] + [s.lower() for s in sp], name="dilate")

    def body(e, *idx):
        o = primal_index(e, ol, idx)
        rc, *r = idx[len(ol.axes):]
        ic = e.add(e.mul(e.floordiv(o["C"], og), cg), rc) if groups > 1 else rc
        src = [o["N"], ic] + [e.add(o[s], e.mul(r[j], dil[j])) for j, s in enumerate(sp)]
        kpos = {"I": ic, "O": e.floormod(o["C"], og) if groups > 1 else o["C"]}
        for j, s in enumerate(sp):
            kpos[s] = e.sub(ks[s] - 1, r[j])
        xv = e.cast(e.read(xd, src), ot)
        wv = e.cast(read_primal(e, w, kl, kpos), ot)
        return e.binary("mul", xv, wv)
    red = [("rc", cg)] + [(f"r{s.lower()}", ks[s]) for s in sp]
    return compute(e, t, body, reduce=red, reducer="sum", names=layout_names(ol),
                   name=stage_name(op, op.op_name.split(".")[-1]))


# -- matrix products -----------------------------------------------------------------------

@strategy("nn.matmul")
def matmul(e, op, args):
    t = out_type(op)
    a_, b_ = as_tensor(e, args[0], "tensor_a"), as_tensor(e, args[1], "tensor_b")
    ta, tb = op.attributes["transpose_a"], op.attributes["transpose_b"]
    ad, bd = operand_dims(e, 0, a_), operand_dims(e, 1, b_)
    k = static_first(ad[-2] if ta else ad[-1], bd[1] if tb else bd[0])
    ot = t.element_type

    def body(e, *idx):
        *lead, j, r = idx
        if ta:
            ai = list(lead[:-1]) + [r, lead[-1]]
        else:
            ai = list(lead) + [r]
        av = e.cast(e.read(a_, ai), ot)
        bv = e.cast(e.read(b_, [j, r] if tb else [r, j]), ot)
        return e.binary("mul", av, bv)
    names = [f"i{d}" for d in range(t.rank - 1)] + ["j"]
    return compute(e, t, body, reduce=[("k", k)], reducer="sum", names=names, name=stage_name(op, "T_matmul"))


def batch_matmul_body(x, y, ta, tb, ot, xz=None, yz=None):
    """The product body of batch_matmul (and qnn.batch_matmul with zero
    points `xz`, `yz` subtracted in `ot`)."""
    bx, by = x.type.shape[0], y.type.shape[0]

    def body(e, b, i, j, r):
        xv = e.cast(e.read(x, [0 if bx == 1 else b] + ([r, i] if ta else [i, r])), ot)
        yv = e.cast(e.read(y, [0 if by == 1 else b] + ([j, r] if tb else [r, j])), ot)
        if xz is not None:
            xv = e.binary("sub", xv, xz(e))
            yv = e.binary("sub", yv, yz(e))
        return e.binary("mul", xv, yv)
    return body


@strategy("nn.batch_matmul")
def batch_matmul(e, op, args):
    t = out_type(op)
    x, y = as_tensor(e, args[0], "x"), as_tensor(e, args[1], "y")
    ta, tb = op.attributes["transpose_a"], op.attributes["transpose_b"]
    xd, yd = operand_dims(e, 0, x), operand_dims(e, 1, y)
    k = static_first(xd[1] if ta else xd[2], yd[2] if tb else yd[1])
    return compute(e, t, batch_matmul_body(x, y, ta, tb, t.element_type), reduce=[("k", k)], reducer="sum",
                   names=["b", "i", "j"], name=stage_name(op, "T_batch_matmul"))


# -- softmax ---------------------------------------------------------------------------------

def _drop(shape, axes):
    return [n for d, n in enumerate(shape) if d not in axes]


def _insert(idx, axis, v):
    idx = list(idx)
    idx.insert(axis, v)
    return idx


@strategy("nn.softmax", "nn.log_softmax")
def softmax(e, op, args):
    t = out_type(op)
    x = as_tensor(e, args[0], "data")
    axis = op.attributes["axis"] % t.rank
    et = t.element_type
    n = (e.result_dims or t.shape)[axis]   # an index Value when the axis is '?'
    rt = T.TensorType(_drop(t.shape, {axis}), et)
    names = [nm for d, nm in enumerate(axis_names(t.rank)) if d != axis]
    rs = sizes_without(e, {axis})
    mx = compute(e, rt, lambda e, *idx: e.read(x, _insert(idx[:-1], axis, idx[-1])), reduce=[("k", n)],
                 reducer="max", names=names, name="T_softmax_maxelem", sizes=rs)

    def shifted(e, idx, k):
        return e.binary("sub", e.read(x, _insert(idx, axis, k)), e.read(mx, idx))
    if isinstance(op, LogSoftmaxOp):
        sm = compute(e, rt, lambda e, *idx: e.intrin("exp", shifted(e, idx[:-1], idx[-1])), reduce=[("k", n)],
                     reducer="sum", names=names, name="T_softmax_expsum", sizes=rs)

        def log_body(e, *idx):
            rest = idx[:axis] + idx[axis + 1:]
            return e.binary("sub", shifted(e, rest, idx[axis]), e.intrin("log", e.read(sm, rest)))
        return compute(e, t, log_body, names=axis_names(t.rank), name=stage_name(op, "T_log_softmax"))
    # exp once, as a stage of its own (TVM's T_softmax_exp), read by the sum and the output
    ex = compute(e, t, lambda e, *idx: e.intrin("exp", shifted(e, idx[:axis] + idx[axis + 1:], idx[axis])),
                 names=axis_names(t.rank), name="T_softmax_exp")
    sm = compute(e, rt, lambda e, *idx: e.read(ex, _insert(idx[:-1], axis, idx[-1])), reduce=[("k", n)],
                 reducer="sum", names=names, name="T_softmax_expsum", sizes=rs)

    def body(e, *idx):
        # times the reciprocal, one division a row (as onnxruntime does), not one an element
        rcp = e.binary("div", e.const(1.0, et), e.read(sm, idx[:axis] + idx[axis + 1:]))
        return e.binary("mul", e.read(ex, idx), rcp)
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_softmax"))


# -- normalisations --------------------------------------------------------------------------

def _param(e, p, c, et):
    if isinstance(p, Scalar):
        return e.const(p.value, et)
    return e.cast(e.read(p, [c]), et)


@strategy("nn.batch_norm")
def batch_norm(e, op, args):
    tt = op.results[0].type
    t = tt.types[0]
    x, gamma, beta, mean, var = args
    axis = op.channel_axis(t.rank)
    et = t.element_type
    a = op.attributes

    def body(e, *idx):
        c = idx[axis]
        v = e.binary("sub", load(e, x, idx), _param(e, mean, c, et))
        std = e.intrin("sqrt", e.binary("add", _param(e, var, c, et), e.const(a["epsilon"], et)))
        v = e.binary("div", v, std)
        if a["scale"]:
            v = e.binary("mul", v, _param(e, gamma, c, et))
        if a["center"]:
            v = e.binary("add", v, _param(e, beta, c, et))
        return v
    out = compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_batch_norm"))
    copies = [compute(e, tt.types[i], lambda e, i_, p=p: load(e, p, [i_]), names=["c"], name=nm)
              for i, p, nm in ((1, mean, "T_moving_mean"), (2, var, "T_moving_var"))]
    return (out, *copies)


def normalize(e, x, t, key_of, red, xindex, gamma, beta, caxis, attrs, name):
    """(x - mean) / sqrt(var + eps) (* gamma + beta), the statistics reduced
    over `red` [(name, extent)] per key: `key_of(e, idx)` maps an output
    index to its key index, `xindex(e, key, ridx)` a key and reduce index
    to the index of x it reads."""
    et = t.element_type
    count = 1
    for _, n in red:
        count *= n
    kshape = key_of(None, None)
    kt = T.TensorType(kshape, et)
    knames = [f"k{d}" for d in range(len(kshape))]
    nr = len(red)

    def sum_body(e, *idx):
        return e.read(x, xindex(e, idx[:-nr], idx[-nr:]))
    total = compute(e, kt, sum_body, reduce=red, reducer="sum", names=knames, name="T_norm_sum")
    inv = e.const(1.0 / count, et)

    def mean(e, key):
        return e.binary("mul", e.read(total, key), inv)

    def sq_body(e, *idx):
        key = idx[:-nr]
        d = e.binary("sub", e.read(x, xindex(e, key, idx[-nr:])), mean(e, key))
        return e.binary("mul", d, d)
    sq = compute(e, kt, sq_body, reduce=red, reducer="sum", names=knames, name="T_norm_sqsum")

    def body(e, *idx):
        key = key_of(e, idx)
        var = e.binary("mul", e.read(sq, key), inv)
        v = e.binary("sub", e.read(x, list(idx)), mean(e, key))
        v = e.binary("div", v, e.intrin("sqrt", e.binary("add", var, e.const(attrs["epsilon"], et))))
        c = idx[caxis]
        if attrs["scale"]:
            v = e.binary("mul", v, _param(e, gamma, c, et))
        if attrs["center"]:
            v = e.binary("add", v, _param(e, beta, c, et))
        return v
    return compute(e, t, body, names=axis_names(t.rank), name=name)


@strategy("nn.layer_norm", "nn.instance_norm")
def layer_norm(e, op, args):
    t = out_type(op)
    x = as_tensor(e, args[0], "data")
    axis = op.channel_axis(t.rank)
    if isinstance(op, LayerNormOp):
        raxes = [axis]
    else:
        raxes = [d for d in range(1, t.rank) if d != axis]
    keep = [d for d in range(t.rank) if d not in raxes]

    def key_of(e, idx):
        if idx is None:
            return [t.shape[d] for d in keep]
        return [idx[d] for d in keep]

    def xindex(e, key, ridx):
        full = [None] * t.rank
        for d, k in zip(keep, key):
            full[d] = k
        for d, r in zip(raxes, ridx):
            full[d] = r
        return full
    red = [(f"r{d}", t.shape[d]) for d in raxes]
    return normalize(e, x, t, key_of, red, xindex, args[1], args[2], axis, op.attributes,
                     stage_name(op, "T_" + op.op_name[3:]))


@strategy("nn.group_norm")
def group_norm(e, op, args):
    t = out_type(op)
    x = as_tensor(e, args[0], "data")
    axis = op.channel_axis(t.rank)
    g = op.attributes["num_groups"]
    cg = t.shape[axis] // g
    spatial = [d for d in range(1, t.rank) if d != axis]

    def key_of(e, idx):
        if idx is None:
            return [t.shape[0], g]
        return [idx[0], e.floordiv(idx[axis], cg)]

    def xindex(e, key, ridx):
        full = [None] * t.rank
        full[0] = key[0]
        full[axis] = e.add(e.mul(key[1], cg), ridx[0])
        for d, r in zip(spatial, ridx[1:]):
            full[d] = r
        return full
    red = [("rc", cg)] + [(f"r{d}", t.shape[d]) for d in spatial]
    return normalize(e, x, t, key_of, red, xindex, args[1], args[2], axis, op.attributes,
                     stage_name(op, "T_group_norm"))


@strategy("nn.l2_normalize")
def l2_normalize(e, op, args):
    t = out_type(op)
    x = as_tensor(e, args[0], "data")
    axes = sorted(op.axes(t.rank))
    keep = [d for d in range(t.rank) if d not in axes]
    et = t.element_type
    kt = T.TensorType([t.shape[d] for d in keep], et)

    def full(key, ridx):
        out = [None] * t.rank
        for d, k in zip(keep, key):
            out[d] = k
        for d, r in zip(axes, ridx):
            out[d] = r
        return out

    def sq(e, *idx):
        v = e.read(x, full(idx[:len(keep)], idx[len(keep):]))
        return e.binary("mul", v, v)
    s = compute(e, kt, sq, reduce=[(f"r{d}", t.shape[d]) for d in axes], reducer="sum",
                names=[f"k{d}" for d in keep], name="T_l2_sqsum")

    def body(e, *idx):
        n = e.binary("max", e.read(s, [idx[d] for d in keep]), e.const(op.attributes["eps"], et))
        return e.binary("div", e.read(x, list(idx)), e.intrin("sqrt", n))
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_l2_normalize"))


@strategy("nn.lrn")
def lrn(e, op, args):
    t = out_type(op)
    x = as_tensor(e, args[0], "data")
    a = op.attributes
    axis, size = a["axis"] % t.rank, a["size"]
    et = t.element_type
    c = t.shape[axis]
    lo = size // 2

    def sq(e, *idx):
        i = list(idx[:-1])
        p = e.sub(e.add(i[axis], idx[-1]), lo)
        i[axis] = p
        v = e.read(x, i, guard=e.all_of(in_range(e, p, 0, c)))
        return e.binary("mul", v, v)
    s = compute(e, t, sq, reduce=[("r", size)], reducer="sum", names=axis_names(t.rank), name="T_lrn_sqsum")

    def body(e, *idx):
        d = e.binary("add", e.const(a["bias"], et),
                     e.binary("mul", e.const(a["alpha"] / size, et), e.read(s, list(idx))))
        return e.binary("div", e.read(x, list(idx)), e.intrin("pow", d, e.const(a["beta"], et)))
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_lrn"))


# -- pad, dropout, reshaping -----------------------------------------------------------------

def _abs(e, v):
    return e.index("max", v, e.sub(0, v))


@strategy("nn.pad")
def pad(e, op, args):
    t = out_type(op)
    x = as_tensor(e, args[0], "data")
    pw = op.attributes["pad_width"]
    mode = op.attributes["pad_mode"]
    shape = x.type.shape

    def body(e, *idx):
        src, conds = [], []
        for d, (b, _) in enumerate(pw):
            j, n = e.sub(idx[d], b), shape[d]
            if mode == "constant":
                if pw[d][0] or pw[d][1]:
                    conds += in_range(e, j, 0, n)
            elif mode == "edge":
                j = e.index("min", e.index("max", j, 0), n - 1)
            elif mode == "reflect":
                j = e.sub(n - 1, _abs(e, e.sub(n - 1, _abs(e, j)))) if n > 1 else 0
            else:
                j = e.floormod(j, n)
            src.append(j)
        if mode != "constant":
            return e.read(x, src)
        guard = e.all_of(conds)
        if len(args) == 1:
            return e.read(x, src, guard=guard, else_value=op.attributes["pad_value"])
        v = args[1]
        if isinstance(v, Scalar):
            return e.read(x, src, guard=guard, else_value=v.value)
        fill = e.read(v, [0] * v.type.rank)
        if guard is True:
            return e.read(x, src)
        return e.select(guard, e.read(x, src, guard=guard), fill)
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_pad"))


@strategy("nn.dropout")
def dropout(e, op, args):
    t = op.results[0].type.types[0]
    x = args[0]
    names = axis_names(t.rank)
    out = compute(e, t, lambda e, *idx: load(e, x, idx), names=names, name="T_dropout")
    mask = compute(e, t, lambda e, *idx: e.const(1, t.element_type), names=names, name="T_dropout_mask")
    return (out, mask)


def unravel_flat(e, flat, shape):
    """The index into `shape` of row-major offset `flat`."""
    out = []
    for n in reversed(shape):
        out.append(e.floormod(flat, n))
        flat = e.floordiv(flat, n)
    return out[::-1]


@strategy("nn.batch_flatten")
def batch_flatten(e, op, args):
    t = out_type(op)
    x = as_tensor(e, args[0], "data")
    rest = x.type.shape[1:]
    return compute(e, t, lambda e, n, j: e.read(x, [n] + unravel_flat(e, j, rest)), names=["n", "j"],
                   name=stage_name(op, "T_batch_flatten"))


def _nchw(op, idx):
    """(n, c, h, w) of an index in the op's layout."""
    if op.attributes["layout"] == "NHWC":
        n, h, w, c = idx
        return n, c, h, w
    return idx


def _at(op, n, c, h, w):
    return [n, h, w, c] if op.attributes["layout"] == "NHWC" else [n, c, h, w]


@strategy("nn.depth_to_space")
def depth_to_space(e, op, args):
    t = out_type(op)
    x = as_tensor(e, args[0], "data")
    b = op.attributes["block_size"]
    c_out = t.shape[3] if op.attributes["layout"] == "NHWC" else t.shape[1]
    dcr = op.attributes["mode"] == "DCR"

    def body(e, *idx):
        n, c, h, w = _nchw(op, idx)
        bh, bw = e.floormod(h, b), e.floormod(w, b)
        blk = e.add(e.mul(bh, b), bw)
        ic = e.add(e.mul(blk, c_out), c) if dcr else e.add(e.mul(c, b * b), blk)
        return e.read(x, _at(op, n, ic, e.floordiv(h, b), e.floordiv(w, b)))
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_depth_to_space"))


@strategy("nn.space_to_depth")
def space_to_depth(e, op, args):
    t = out_type(op)
    x = as_tensor(e, args[0], "data")
    b = op.attributes["block_size"]
    c_in = x.type.shape[3] if op.attributes["layout"] == "NHWC" else x.type.shape[1]

    def body(e, *idx):
        n, c, h, w = _nchw(op, idx)
        blk, ic = e.floordiv(c, c_in), e.floormod(c, c_in)
        bh, bw = e.floordiv(blk, b), e.floormod(blk, b)
        return e.read(x, _at(op, n, ic, e.add(e.mul(h, b), bh), e.add(e.mul(w, b), bw)))
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_space_to_depth"))


# -- nn.conv2d ------------------------------------------------------------------------------------

@strategy("nn.conv2d")
def conv2d(e, op, args):
    """Plain layouts (NCHW, NHWC, OIHW, HWIO, ...): :func:`conv2d_plain`,
    whose stages are what the schedules and tests know; blocked ones
    (NCHW16c, OIHW16i16o) go through :func:`conv_compute`."""
    if any(lay.is_blocked() for lay in op.layouts()):
        return conv_compute(e, op, as_tensor(e, args[0], "data"), as_tensor(e, args[1], "weight"))
    return conv2d_plain(e, op, args)


def conv2d_plain(e, op, args):
    t = out_type(op)
    x, w = as_tensor(e, args[0], "data"), as_tensor(e, args[1], "weight")
    a = op.attributes
    dl, kl, ol = op.layouts()
    ds, ks = dl.primal_shape(x.type.shape), kl.primal_shape(w.type.shape)
    sh, sw = a["strides"]
    dh, dw = a["dilation"]
    pt, pl, pb, pr = a["padding"]
    groups = a["groups"]
    cin, kh, kw = ks["I"], ks["H"], ks["W"]
    og = ks["O"] // groups
    ot = t.element_type
    if pt or pl or pb or pr:
        x = _pad2d(e, x, dl, ds, pt, pl, pb, pr)

    def body(e, *idx):
        o = {ax: idx[ol.index(ax)] for ax in "NCHW"}
        rc, ry, rx = idx[4:]
        ic = e.add(e.mul(e.floordiv(o["C"], og), cin), rc) if groups > 1 else rc
        pos = {"N": o["N"], "C": ic,
               "H": e.add(e.mul(o["H"], sh), e.mul(ry, dh)), "W": e.add(e.mul(o["W"], sw), e.mul(rx, dw))}
        kpos = {"O": o["C"], "I": rc, "H": ry, "W": rx}
        xv = e.cast(e.read(x, [pos[ax] for ax in dl.axes]), ot)
        wv = e.cast(e.read(w, [kpos[ax] for ax in kl.axes]), ot)
        return e.binary("mul", xv, wv)
    names = [ax.lower() for ax in ol.axes]
    return compute(e, t, body, reduce=[("rc", cin), ("ry", kh), ("rx", kw)], reducer="sum",
                   names=names, name=stage_name(op, "conv2d"))


def _pad2d(e, x, layout, sizes, pt, pl, pb, pr):
    """The zero-padded input of conv2d_plain: reads x only inside it (guarded read)."""
    h, w = sizes["H"], sizes["W"]
    shape = [{"H": h + pt + pb, "W": w + pl + pr}.get(ax, n) for ax, n in zip(layout.axes, x.type.shape)]
    t = T.TensorType(shape, x.type.element_type)
    hi, wi = layout.index("H"), layout.index("W")

    def body(e, *idx):
        y, xx = idx[hi], idx[wi]
        conds = []
        if pt:
            conds.append(e.cmp("ge", y, pt))
        if pb:
            conds.append(e.cmp("lt", y, h + pt))
        if pl:
            conds.append(e.cmp("ge", xx, pl))
        if pr:
            conds.append(e.cmp("lt", xx, w + pl))
        src = list(idx)
        src[hi], src[wi] = e.sub(y, pt), e.sub(xx, pl)
        return e.read(x, src, guard=e.all_of(conds), else_value=0.0)
    return compute(e, t, body, names=[ax.lower() for ax in layout.axes], name="pad")
