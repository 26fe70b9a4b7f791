"""TE compute for nn.attention: the scores are never stored.

Indices are (b, h, i, j) for batch, head, query and key; q, k, v and the
output are read and written through the op's layout.  Per row (b, h, i):

    T_attn_qk[b,h,i,j]   = sum_d q[b,h,i,d] * k[b,h,j,d]                        (twice: a stage
    T_attn_qk2[b,h,i,j]    a copy of the same, for the second pass               per pass)
    s(i, j)              = T_attn_qk * scale + bias[b,h,i,j], or -inf where the causal mask hides j
    T_attn_max[b,h,i]    = max_j s(i, j)
    T_attn_acc[b,h,i,c]  = sum_j exp(s(i, j) - T_attn_max[b,h,i]) * (v[b,h,j,c] if c < Dv else 1)
                                                                                   (c < Dv + PAD)
    out[b,h,i,c]         = T_attn_acc[b,h,i,c] * (1 / T_attn_acc[b,h,i,Dv])

The accumulator's extra columns hold the softmax's denominator (the
products with a column of ones), so one pass over the keys gives both the
weighted sum of v and the sum of the weights; PAD columns (a vector's
width) keep its row a whole number of vectors.  The schedule
(schedules_attention.py) computes the max and the accumulator at each row,
and each score at the key loop of its pass, so the M x N scores exist one
at a time: the workspace is a row of Dv + PAD floats per thread.  That is
a two-pass softmax rather than FlashAttention's online one (a running
maximum that rescales the accumulator), which a TE reduction cannot carry:
its state would be the maximum, the sum and a Dv-vector, updated together.
The price is q . k computed twice per score.
"""

from __future__ import annotations

from ...dialects.relay.ops.attention import bhsd, from_bhsd
from ...dialects.te.builder import compute
from ...ir import types as T
from .registry import as_tensor, operand_dims, out_type, stage_name, static_first, strategy

PAD = 16   # extra accumulator columns: the denominator, a vector wide
STAGES = ("T_attn_qk", "T_attn_qk2", "T_attn_max", "T_attn_acc")


def _type(dims, et):
    return T.TensorType(tuple(d if type(d) is int else None for d in dims), et)


def _sizes(dims):
    return [d for d in dims if type(d) is not int]


@strategy("nn.attention")
def attention(e, op, args):
    t = out_type(op)
    et = t.element_type
    layout = op.attributes["layout"]
    q, k, v = (as_tensor(e, a, n) for a, n in zip(args[:3], ("query", "key", "value")))
    bias = as_tensor(e, args[3], "bias") if len(args) > 3 else None
    (qb, qh, m, qd), (kb, kh, n, kd), (_, _, vn, dv) = (bhsd(layout, operand_dims(e, i, a))
                                                         for i, a in enumerate((q, k, v)))
    b, h, d, n = static_first(qb, kb), static_first(qh, kh), static_first(qd, kd), static_first(n, vn)
    if type(dv) is not int:
        raise NotImplementedError("the value's head_dim must be static")
    scale = op.attributes["scale"]
    scale = float(scale) if scale is not None else float(d) ** -0.5 if type(d) is int else None
    if scale is None:
        raise NotImplementedError("a '?' head_dim needs the scale attribute")
    causal = op.attributes["causal_mask"]

    def at(x, bi, hi, si, di):
        return e.read(x, list(from_bhsd(layout, bi, hi, si, di)))

    def qk(name):
        return compute(e, _type((b, h, m, n), et),
                       lambda e, bi, hi, i, j, r: e.binary("mul", at(q, bi, hi, i, r), at(k, bi, hi, j, r)),
                       reduce=[("d", d)], reducer="sum", names=["b", "h", "i", "j"], name=name,
                       sizes=_sizes((b, h, m, n)))
    s1, s2 = qk("T_attn_qk"), qk("T_attn_qk2")

    def score(e, s, bi, hi, i, j):
        x = e.binary("mul", e.read(s, [bi, hi, i, j]), e.const(scale, et))
        if bias is not None:
            x = e.binary("add", x, e.read(bias, _bias_index(e, bias, (bi, hi, i, j))))
        if causal != "none":
            lim = i if causal == "top_left" else e.add(i, e.sub(n, m))
            x = e.select(e.cmp("le", j, lim), x, e.const(float("-inf"), et))
        return x
    mx = compute(e, _type((b, h, m), et), lambda e, bi, hi, i, j: score(e, s1, bi, hi, i, j),
                 reduce=[("j", n)], reducer="max", names=["b", "h", "i"], name="T_attn_max",
                 sizes=_sizes((b, h, m)))

    def weighted(e, bi, hi, i, c, j):
        # exp(s - max) does not depend on c: hoisted out of the column loop
        p = e.intrin("exp", e.binary("sub", score(e, s2, bi, hi, i, j), e.read(mx, [bi, hi, i])))
        inside = e.cmp("lt", c, dv)
        vv = e.read(v, list(from_bhsd(layout, bi, hi, j, e.select(inside, c, e.const(0)))), guard=inside,
                    else_value=1.0)
        return e.binary("mul", p, vv)
    acc = compute(e, _type((b, h, m, dv + PAD), et), weighted, reduce=[("j", n)], reducer="sum",
                  names=["b", "h", "i", "c"], name="T_attn_acc", sizes=_sizes((b, h, m)))

    def body(e, *idx):
        bi, hi, i, c = bhsd(layout, idx)
        rcp = e.binary("div", e.const(1.0, et), e.read(acc, [bi, hi, i, dv]))
        return e.binary("mul", e.read(acc, [bi, hi, i, c]), rcp)
    # the output's axes are named b, h, i, c in the layout's order: the schedule reads them
    return compute(e, t, body, names=list(from_bhsd(layout, "b", "h", "i", "c")), name=stage_name(op, "T_attention"))


def _bias_index(e, bias, idx):
    """The bias's index at (b, h, i, j): numpy broadcasting from the right,
    0 along a static axis of size 1."""
    shape = bias.type.shape
    tail = idx[len(idx) - len(shape):] if shape else ()
    return [e.const(0) if s == 1 else x for s, x in zip(shape, tail)]

