"""nn.attention: on llvm, the FlashAttention kernel of flash_attention.py
as a te.extern; for CUDA (and as the op's plain TE form), a compute whose
scores are never stored whole.

Indices are (b, h, i, j) for batch, head, query and key; q, k, v and the
output are read and written through the op's layouts (the key's may be
its own: "BNHS", Kᵀ per head).  Per row (b, h, i):

    T_attn_qk[b,h,i,j]   = sum_d q[b,h,i,d] * k[b,h,j,d]
    T_attn_score[b,h,i,j]= T_attn_qk * scale + bias[b,h,i,j], or -inf where the causal mask hides j
    T_attn_max[b,h,i]    = max_j T_attn_score[b,h,i,j]
    T_attn_p[b,h,i,j]    = exp(score again, from T_attn_qk2, a second Q·Kᵀ - T_attn_max[b,h,i])
    T_attn_acc[b,h,i,c]  = sum_j T_attn_p[b,h,i,j] * (v[b,h,j,c] if c < Dv else 1)
                                                                      (c < Dv + pad)
    out[b,h,i,c]         = T_attn_acc[b,h,i,c] * (1 / T_attn_acc[b,h,i,Dv])

The accumulator's extra columns hold the softmax's denominator (the
products with a column of ones), so one pass over the keys gives both the
weighted sum of v and the sum of the weights; the pad rounds Dv + 1 up to
a multiple of 8 columns (accumulator_columns).  That is a two-pass softmax
(Q·Kᵀ computed twice, a stage per pass), not FlashAttention's online one:
a TE reduction cannot carry a running maximum that rescales the
accumulator (its state would be the maximum, the sum and a Dv-vector,
updated together), which is why the llvm lowering is a hand-written TIR
kernel instead.  The CUDA schedule (schedules_cuda_attention.py) holds no
rows of scores: they would not fit a block's shared memory.
"""

from __future__ import annotations

from ...dialects.relay.ops.attention import bhsd, bias_index, from_bhsd
from ...dialects.te.builder import compute
from ...ir import types as T
from .registry import Scalar, as_tensor, operand_dims, out_type, stage_name, static_first, strategy

STAGES = ("T_attn_qk", "T_attn_score", "T_attn_max", "T_attn_qk2", "T_attn_p", "T_attn_acc")


def _type(dims, et):
    return T.TensorType(tuple(d if type(d) is int else None for d in dims), et)


def _sizes(dims):
    return [d for d in dims if type(d) is not int]


@strategy("nn.attention")
def attention(e, op, args):
    t = out_type(op)
    et = t.element_type
    layout, klayout, _ = op.layouts()
    q, k, v = (as_tensor(e, a, n) for a, n in zip(args[:3], ("query", "key", "value")))
    bias = args[3] if len(args) > 3 else None
    flash = _flash_applies(e, et, bias)
    if bias is not None and not (flash and isinstance(bias, Scalar)):   # flash: a splat bias is a number
        bias = as_tensor(e, bias, "bias")
    (qb, qh, m, qd), (kb, kh, n, kd), (_, _, vn, dv) = (bhsd(lay, operand_dims(e, i, a))
                                                         for i, (lay, a) in enumerate(zip(op.layouts(), (q, k, v))))
    b, h, d, n = static_first(qb, kb), static_first(qh, kh), static_first(qd, kd), static_first(n, vn)
    # grouped-query attention: query head h reads key / value head h // group
    group = qh // kh if type(qh) is int and type(kh) is int and qh != kh else 1   # (h is then qh)
    if type(dv) is not int:
        raise NotImplementedError("the value's head_dim must be static")
    scale = op.attributes["scale"]
    scale = float(scale) if scale is not None else float(d) ** -0.5 if type(d) is int else None
    if scale is None:
        raise NotImplementedError("a '?' head_dim needs the scale attribute")
    causal = op.attributes["causal_mask"]
    if flash:
        return _flash(e, op, t, (q, k, v, bias), (b, h, m, n, d, dv), scale, causal, group)

    def at(x, lay, bi, hi, si, di):
        return e.read(x, list(from_bhsd(lay, bi, hi, si, di)))

    def qk(name):
        return compute(e, _type((b, h, m, n), et),
                       lambda e, bi, hi, i, j, r: e.binary("mul", at(q, layout, bi, hi, i, r),
                                                           at(k, klayout, bi, e.floordiv(hi, group), j, r)),
                       reduce=[("d", d)], reducer="sum", names=["b", "h", "i", "j"], name=name,
                       sizes=_sizes((b, h, m, n)))
    s1 = qk("T_attn_qk")

    def score(e, s, bi, hi, i, j):
        x = e.binary("mul", e.read(s, [bi, hi, i, j]), e.const(scale, et))
        if bias is not None:
            x = e.binary("add", x, e.read(bias, bias_index(bias.type.shape, (bi, hi, i, j))))
        if causal != "none":
            lim = i if causal == "top_left" else e.add(i, e.sub(n, m))
            x = e.select(e.cmp("le", j, lim), x, e.const(float("-inf"), et))
        return x
    sc = compute(e, _type((b, h, m, n), et), lambda e, bi, hi, i, j: score(e, s1, bi, hi, i, j),
                 names=["b", "h", "i", "j"], name="T_attn_score", sizes=_sizes((b, h, m, n)))
    mx = compute(e, _type((b, h, m), et), lambda e, bi, hi, i, j: e.read(sc, [bi, hi, i, j]),
                 reduce=[("j", n)], reducer="max", names=["b", "h", "i"], name="T_attn_max",
                 sizes=_sizes((b, h, m)))
    s2 = qk("T_attn_qk2")   # the scores again: a block's rows of them would not fit shared memory

    def again(e, bi, hi, i, j):
        return score(e, s2, bi, hi, i, j)
    p = compute(e, _type((b, h, m, n), et),
                lambda e, bi, hi, i, j: e.intrin("exp", e.binary("sub", again(e, bi, hi, i, j),
                                                                 e.read(mx, [bi, hi, i]))),
                names=["b", "h", "i", "j"], name="T_attn_p", sizes=_sizes((b, h, m, n)))

    def weighted(e, bi, hi, i, c, j):
        inside = e.cmp("lt", c, dv)
        vv = e.read(v, list(from_bhsd(layout, bi, e.floordiv(hi, group), j, c)), guard=inside,
                    else_value=1.0)
        return e.binary("mul", e.read(p, [bi, hi, i, j]), vv)
    acc = compute(e, _type((b, h, m, accumulator_columns(dv)), et), weighted, reduce=[("j", n)], reducer="sum",
                  names=["b", "h", "i", "c"], name="T_attn_acc", sizes=_sizes((b, h, m)))

    zero_empty = op.attributes["empty_rows"] == "zero"

    def body(e, *idx):
        bi, hi, i, c = bhsd(layout, idx)
        rcp = e.binary("div", e.const(1.0, et), e.read(acc, [bi, hi, i, accumulator_columns(dv) - 1]))
        out = e.binary("mul", e.read(acc, [bi, hi, i, c]), rcp)
        if zero_empty:   # a row that saw no key: 0 (its weights are exp(-inf - -inf), NaN)
            out = e.select(e.cmp("eq", e.read(mx, [bi, hi, i]), e.const(float("-inf"), et)), e.const(0.0, et), out)
        return out
    # the output's axes are named b, h, i, c in the layout's order: the schedule reads them
    return compute(e, t, body, names=list(from_bhsd(layout, "b", "h", "i", "c")), name=stage_name(op, "T_attention"))


def _flash_applies(e, et, bias):
    """The llvm kernel of flash_attention.py (arithmetic in f32, or f64 for
    f64; narrower floats widened as read), lowered by --lower-relay-to-te
    (whose emitter takes the kernel's tir.func)."""
    return getattr(e, "target", "llvm") == "llvm" and getattr(e, "kernels", None) is not None \
        and T.is_float(et) and (bias is None or bias.type.element_type is et)   # (a Scalar's type is its tensor's)


def _flash(e, op, t, tensors, dims, scale, causal, group):
    """``te.extern`` of the FlashAttention kernel, whose tir.func goes to
    e.kernels: the inputs, then the index sizes it needs."""
    from ...ir.attributes import SymbolRef
    from .flash_attention import flash_kernel, register_tile
    from .schedules import vector_unit
    q, k, v, bias = tensors
    layout, klayout, _ = op.layouts()
    vu = vector_unit(getattr(e, "target_spec", "llvm"))
    block, tile = register_tile(vu.lanes, vu.accumulators)
    bias_dims = None
    if isinstance(bias, Scalar):
        bias_dims, bias = float(bias.value), None
    elif bias is not None:
        bias_dims = tuple(operand_dims(e, 3, bias))
    types = {"q": q.type, "k": k.type, "v": v.type, "out": t}
    if bias is not None:
        types["bias"] = bias.type
    types = {n: T.MemRefType(x.shape, x.element_type) for n, x in types.items()}
    name = f"{e.func_name}_flash"
    f, sizes = flash_kernel(name, dims, types, layout, klayout, bias_dims, scale, causal, block, vu.lanes, tile,
                            empty_rows=op.attributes["empty_rows"], kv_group=group)
    e.kernels.append(f)
    ins = [q, k, v] + ([bias] if bias is not None else [])
    return e.op("te.extern", ins + sizes, [t], {"callee": SymbolRef(name)}, name=stage_name(op, "T_attention"))


def accumulator_columns(dv):
    """Dv and the denominator's columns: Dv + 1 rounded up to a multiple of
    8, an AVX2 vector (every column past Dv holds the denominator)."""
    return (dv + 8) // 8 * 8
