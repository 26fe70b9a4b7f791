"""ONNX's Attention (opset 23) as one nn.attention.

    Y[, present_key, present_value] = Attention(Q, K, V[, attn_mask, past_key, past_value])

4-d operands are (B, heads, S, head_size): layout "BNSH".  3-d ones are
(B, S, heads x head_size) with q_num_heads / kv_num_heads: reshaped to
(B, S, heads, head_size), layout "BSNH", and Y reshaped back.  K goes in
transposed per head (key_layout "BNHS", what the kernel reads along the
keys).  The rest, per the operator's definition:

    past_key, past_value   present_key = concat(past_key, K) along S (likewise V);
                           the attention reads the presents
    attn_mask              bool (True attends: where(mask, 0, -inf)) or float
                           (added), broadcast to (B, heads, S_q, S_kv): the bias;
                           a static mask shorter than S_kv is padded with -inf
    is_causal              query i sees key j <= i + past (past: past_key's
                           length): causal_mask "top_left" without a past,
                           "bottom_right" with one (S_kv = past + S_q)
    scale                  the factor on Q·Kᵀ (default 1 / sqrt(head_size))
    kv_num_heads < q_num_heads
                           grouped-query attention, which nn.attention reads
                           as it is (query head h, K / V head h // (q / kv))
    a row that sees no key Y = 0 (empty_rows = "zero")

softcap, the qk_matmul_output output, softmax_precision other than the
inputs' type or float32, and opset 24's nonpad_kv_seqlen are left to the
op's ONNX function body (UseFunctionBody: said once).
"""

from __future__ import annotations

import numpy as np

from ....ir import types as T
from ..errors import UseFunctionBody
from ..registry import converter


@converter("Attention", 23)
def attention(cx, node):
    q, k, v = (cx.tensor(node.input(i), what) for i, what in enumerate(("Q", "K", "V")))
    mask, past_k, past_v = node.input(3), node.input(4), node.input(5)
    _check_form(cx, node, q)
    rank = cx.rank(q)
    if rank not in (3, 4) or cx.rank(k) != rank or cx.rank(v) != rank:
        raise cx.error(f"expects Q, K and V of one rank, 3 or 4; got {q.type}, {k.type} and {v.type}")
    if (past_k is None) != (past_v is None):
        raise cx.error("past_key and past_value must be given together")
    if rank == 3:
        qh, kh = node.attr("q_num_heads", 0), node.attr("kv_num_heads", 0)
        if qh <= 0 or kh <= 0:
            raise cx.error("3-d Q, K and V need the q_num_heads and kv_num_heads attributes")
        q, k, v = (_split_heads(cx, x, n, what) for x, n, what in ((q, qh, "Q"), (k, kh, "K"), (v, kh, "V")))
        seq_axis, layout = 1, "BSNH"
    else:
        qh, kh = cx.shape(q)[1], cx.shape(k)[1]
        seq_axis, layout = 2, "BNSH"
    if past_k is not None:   # the cache is (B, kv_heads, past, head_size) whatever the rank
        if rank == 3:
            past_k, past_v = (cx.op("transpose", x, axes=[0, 2, 1, 3]) for x in (past_k, past_v))
        k = cx.op("concatenate", past_k, k, axis=seq_axis)
        v = cx.op("concatenate", past_v, v, axis=seq_axis)
    presents = [k, v] if rank == 4 else [cx.op("transpose", x, axes=[0, 2, 1, 3]) for x in (k, v)]
    if qh is not None and kh is not None and qh % kh:
        raise cx.error(f"q_num_heads ({qh}) must be a multiple of kv_num_heads ({kh})")
    bias = None if mask is None else _bias(cx, cx.tensor(mask, "attn_mask"), q, k, seq_axis)
    causal = "none"
    if node.attr("is_causal", 0):
        causal = "bottom_right" if past_k is not None else "top_left"
    scale = node.attrs.get("scale")
    # Kᵀ per head (B, heads, head_size, S): the kernel reads a tile of keys as
    # rows of it; a copy once per call, where reading K's rows across would
    # cost 10x (attention alone, 512-4096 tokens)
    kt = cx.op("transpose", k, axes=[0, 2, 3, 1] if rank == 3 else [0, 1, 3, 2])
    y = cx.op("nn.attention", q, kt, v, *([bias] if bias is not None else []), layout=layout, key_layout="BNHS",
              scale=None if scale is None else float(scale), causal_mask=causal, empty_rows="zero")
    if rank == 3:
        y = cx.op("reshape", y, newshape=[0, 0, -1])
    return [y] + presents


def _check_form(cx, node, q):
    """The forms nn.attention does not take go to the function body."""
    if node.attr("softcap", 0.0):
        raise UseFunctionBody("softcap")
    if len(node.outputs) > 3 and node.outputs[3]:
        raise UseFunctionBody("the qk_matmul_output output")
    if node.input(6) is not None:
        raise UseFunctionBody("nonpad_kv_seqlen")
    if node.attr("left_window_size", -1) != -1 or node.attr("right_window_size", -1) != -1:
        raise UseFunctionBody("a sliding window")
    precision = node.attrs.get("softmax_precision")
    if precision is not None:
        from onnx import TensorProto
        if precision not in (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE) or \
                (precision == TensorProto.DOUBLE and cx.dtype(q) is not T.f64):
            raise UseFunctionBody("softmax_precision above the inputs' and float32")


def _split_heads(cx, x, heads, what):
    """(B, S, heads x size) -> (B, S, heads, size)."""
    hidden = cx.shape(x)[2]
    if hidden is None:
        raise cx.error(f"{what}'s hidden size (its last dimension) must be static, got {x.type}")
    if hidden % heads:
        raise cx.error(f"{what}'s hidden size {hidden} is not a multiple of its {heads} heads")
    return cx.op("reshape", x, newshape=[0, 0, heads, hidden // heads])


def _bias(cx, mask, q, k, seq_axis):
    """The additive bias of attn_mask: bool -> 0 / -inf; its key axis padded
    with -inf to the keys' length where it is shorter (static lengths)."""
    et = cx.dtype(q)
    if cx.dtype(mask) is T.i1:
        mask = cx.op("where", mask, cx.scalar(0.0, q), cx.scalar(float("-inf"), q))
    else:
        mask = cx.cast(mask, et)
    n, have = cx.shape(k)[seq_axis], cx.shape(mask)[-1]
    if n is not None and have is not None and have < n:
        pad = [[0, 0]] * (cx.rank(mask) - 1) + [[0, n - have]]
        mask = cx.op("nn.pad", mask, pad_width=tuple(tuple(w) for w in pad), pad_value=float("-inf"))
    return mask
