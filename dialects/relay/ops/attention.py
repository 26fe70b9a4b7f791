"""Scaled dot-product attention as one operator (Relax's nn.attention).

    %o = nn.attention(%q, %k, %v) {scale = 0.125} : tensor<1x7x12x64xf32>
    %o = nn.attention(%q, %k, %v, %bias) {causal_mask = "bottom_right", layout = "BNSH"} : ...
    %o = nn.attention(%q, %kt, %v) {key_layout = "BNHS"} : ...

        layout = "BSNH" (default)  q: (B, M, H, D)  k: (B, N, H, D)  v: (B, N, H, Dv)  out: (B, M, H, Dv)
                 "BNSH"            q: (B, H, M, D)  k: (B, H, N, D)  v: (B, H, N, Dv)  out: (B, H, M, Dv)
        key_layout (optional)      the key's own layout, one of the above or
                                   "BNHS": k as (B, H, D, N), Kᵀ per head (what exporters
                                   feed Q·Kᵀ, and what the llvm kernel reads along the keys)
        scale (optional)           the factor on q . k; absent: 1 / sqrt(D)
        causal_mask = "none" | "top_left" | "bottom_right"
                                   query i sees key j iff j <= i ("top_left") or
                                   j <= i + N - M ("bottom_right": the last M of N
                                   positions, as when decoding after a KV cache)
        bias (optional operand)    added to the scaled scores; broadcasts (numpy's
                                   rules) to (B, H, M, N) whatever the layout; a
                                   key it hides (MASK_FILL or below) from rows that
                                   have seen a key weighs 0, and the llvm kernel may
                                   skip it unread (so a NaN or inf score there need
                                   not reach those rows, as with causal_mask)
        empty_rows = "nan" | "zero"
                                   the output of a query that sees no key (every
                                   score -inf): NaN, as softmax then gives (the
                                   graph form, PyTorch), or 0 (ONNX's Attention)
        k and v may have fewer heads than q, a static divisor (grouped-query
        attention): query head h reads key / value head h // (H / Hkv)

Per batch and head, out = softmax(scale * q k^T + bias, masked) v over the
keys.  A masked score is -inf: a row with every key masked is NaN, as the
softmax it replaces gives (0 with empty_rows = "zero").  --fuse-attention
makes the op from the graphs exporters produce (batch_matmul, softmax, the mask's add); the llvm
lowering never stores the M x N scores (conversion/relay_to_te/
topi_attention.py).
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import FLOAT, STR, enum, optional
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from .base import OpPattern, RelayOp, broadcast_shapes, same_dtype, tensor_type
from .util import dims_match

np = lazy_module("numpy")

LAYOUTS = {"BSNH": (0, 2, 1, 3), "BNSH": (0, 1, 2, 3)}   # layout -> the axes (B, H, S, D) sit at
KEY_LAYOUTS = dict(LAYOUTS, BNHS=(0, 1, 3, 2))
CAUSAL = ("none", "top_left", "bottom_right")
# A mask value at or below this hides its key as -inf would, to within f32
# rounding: a score s plus it rounds to it for any |s| below ~1e22, so its
# weight exp(. - max) underflows to exactly 0 once the row has a score
# above MASK_FILL / 10 (the where-masks --fuse-attention takes, the bias
# tiles the llvm kernel skips).
MASK_FILL = -1e30
EMPTY_ROWS = ("nan", "zero")


def bhsd(layout, shape):
    """(B, H, S, D) of a 4-d shape in `layout` (a key layout too)."""
    return tuple(shape[a] for a in KEY_LAYOUTS[layout])


def from_bhsd(layout, b, h, s, d):
    """The 4-d shape in `layout` (a key layout too) of (B, H, S, D)."""
    out = [None] * 4
    for v, a in zip((b, h, s, d), KEY_LAYOUTS[layout]):
        out[a] = v
    return tuple(out)


def bias_index(shape, idx):
    """The index into a bias of `shape` at (b, h, i, j): numpy broadcasting
    from the right, 0 along a static axis of size 1."""
    tail = idx[len(idx) - len(shape):] if shape else ()
    return [0 if s == 1 else x for s, x in zip(shape, tail)]


def causal_visible(kind, i, j, m, n):
    """Whether query i (of m) sees key j (of n); numpy arrays broadcast."""
    if kind == "top_left":
        return j <= i
    if kind == "bottom_right":
        return j <= i + (n - m)
    return np.ones(np.broadcast(i, j).shape, bool)


class AttentionOp(RelayOp):
    __slots__ = ()
    name = "relay.nn.attention"
    OPERANDS = ("query", "key", "value", "*bias")
    ATTRS = {"scale": Attr(optional(FLOAT), None), "causal_mask": Attr(enum(*CAUSAL), "none"),
             "layout": Attr(STR, "BSNH"), "key_layout": Attr(optional(STR), None),
             "empty_rows": Attr(enum(*EMPTY_ROWS), "nan")}
    PATTERN = OpPattern.OPAQUE

    def head_dims(self, q):
        """(B, H, M, D) of the query type `q`."""
        return bhsd(self.attributes["layout"], q.shape)

    def layouts(self):
        """The layouts of q, k and v."""
        layout = self.attributes["layout"]
        return layout, self.attributes.get("key_layout") or layout, layout

    def scale_value(self, d):
        s = self.attributes.get("scale")
        return float(s) if s is not None else float(d) ** -0.5

    def type_relation(self, q, k, v, *bias):
        for t in (q, k, v) + bias:
            tensor_type(self, t)
        et = same_dtype(self, q, k, v, *bias)
        if not T.is_float(et):
            raise self.error(f"expects floating-point tensors, got {q}")
        layout = self.attributes["layout"]
        if layout not in LAYOUTS:
            raise self.error(f"layout must be one of {', '.join(LAYOUTS)}, got \"{layout}\"")
        klayout = self.layouts()[1]
        if klayout not in KEY_LAYOUTS:
            raise self.error(f"key_layout must be one of {', '.join(KEY_LAYOUTS)}, got \"{klayout}\"")
        if len(bias) > 1:
            raise self.error(f"expects at most one bias operand, got {len(bias)}")
        if q.rank != 4 or k.rank != 4 or v.rank != 4:
            raise self.error(f"expects 4-d query, key and value ({layout}), got {q}, {k} and {v}")
        (b, h, m, d), (bk, hk, n, dk), (bv, hv, nv, dv) = (bhsd(lay, t.shape)
                                                           for lay, t in zip(self.layouts(), (q, k, v)))
        for what, x, y in (("batch", b, bk), ("batch", b, bv), ("heads", hk, hv),
                           ("head_dim", d, dk), ("key length", n, nv)):
            if not dims_match(x, y):
                raise self.error(f"{what} differs between query, key and value: {x} and {y}")
        if not dims_match(h, hk) and not (isinstance(h, int) and isinstance(hk, int) and hk and h % hk == 0):
            raise self.error(f"the query's {h} heads are neither the key's and value's {hk} nor a multiple "
                             f"of them (grouped-query attention)")
        b = b if b is not None else bk
        h = h if h is not None else hk
        if bias:
            if bias[0].rank > 4:
                raise self.error(f"the bias has rank {bias[0].rank}; it broadcasts to (B, H, M, N), rank 4")
            full = broadcast_shapes(self, bias[0].shape, (b, h, m, n if n is not None else nv))
            if not all(dims_match(x, y) for x, y in zip(full, (b, h, m, n))):
                raise self.error(f"the bias {bias[0]} does not broadcast to (B, H, M, N) = "
                                 f"{tuple('?' if x is None else x for x in (b, h, m, n))}")
        s = self.attributes.get("scale")
        if s is not None and not np.isfinite(s):
            raise self.error(f"scale must be finite, got {s}")
        return T.TensorType(from_bhsd(layout, b, h, m, dv), et)

    def compute(self, q, k, v, *bias):
        """The reference: float64 scores, the softmax over the keys, the product."""
        perm = LAYOUTS[self.attributes["layout"]]
        qh, kh, vh = (x.astype(np.float64).transpose(KEY_LAYOUTS[lay])
                      for lay, x in zip(self.layouts(), (q, k, v)))
        if kh.shape[1] != qh.shape[1]:   # grouped-query: each key / value head serves consecutive query heads
            kh, vh = (np.repeat(x, qh.shape[1] // x.shape[1], axis=1) for x in (kh, vh))
        m, n = qh.shape[2], kh.shape[2]
        s = np.matmul(qh, kh.transpose(0, 1, 3, 2)) * self.scale_value(qh.shape[3])
        if bias:
            s = s + bias[0].astype(np.float64)
        kind = self.attributes["causal_mask"]
        if kind != "none":
            s = np.where(causal_visible(kind, np.arange(m)[:, None], np.arange(n)[None, :], m, n), s, -np.inf)
        empty = np.nan if self.attributes["empty_rows"] == "nan" else 0.0
        if n == 0:   # no keys: 0 / 0, as the softmax and product it replaces give
            return np.full(np.matmul(s, vh).transpose(np.argsort(perm)).shape, empty, q.dtype)
        with np.errstate(all="ignore"):   # a row with every key masked is NaN, as softmax gives
            top = s.max(axis=-1, keepdims=True)
            s = np.exp(s - top)
            p = s / s.sum(axis=-1, keepdims=True)
            out = np.matmul(p, vh)
        if empty == 0.0:
            out = np.where(np.isneginf(top), 0.0, out)
        return out.transpose(np.argsort(perm)).astype(q.dtype)
