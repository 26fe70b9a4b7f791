"""Neural-network operators other than convolution, pooling and normalisation.

    %d = nn.dense(%x, %w) : tensor<1x1000xf32>        x: (..., K), w: (N, K)
        units (optional, checked against w), out_dtype ("" = the operands')
    %m = nn.matmul(%a, %b) {transpose_b = true}       a: (..., K) or (..., K, M) with transpose_a;
        units, out_dtype, transpose_a = false, transpose_b = false     b: (K, N) or (N, K) with transpose_b
    %m = nn.contrib_dense_pack(%x, %wp) {weight_layout = "NC32n"}   x: (..., K), wp: (N / n, K, n), the
        units, out_dtype, weight_layout ("NC{n}n")      weight packed in panels of n output columns
    %m = nn.contrib_dense_pack(%x, %wp) {weight_layout = "NC32n4c", out_dtype = "int32"}
                                                      x: (..., K) ui8, wp: (N / n, K / 4, n) i32, each
                                                      word four i8 weights of consecutive k (VNNI)
    %m = nn.contrib_dense_pack(%x, %wp) {weight_layout = "NC32n"}   x: (..., K) float, wp: (N / n, K, n) i8
                                                      (weight-only int8: --quantize-weights)
    %m = nn.batch_matmul(%x, %y)                      x: (B, M, K), y: (B, N, K); a batch of 1 broadcasts
        out_dtype, transpose_a = false, transpose_b = true (TVM's defaults)
    %b = nn.bias_add(%d, %bias) {axis = 1}            bias: 1-d, the size of data's axis
    %s = nn.softmax(%x) {axis = -1}                   also nn.log_softmax
    %t = nn.dropout(%x) {rate = 0.5}                  tuple<out, mask> as TVM; the interpreter is
                                                      inference: out = x, mask = ones
    %p = nn.pad(%x) {pad_width = [[0, 0], [1, 1]]}    pad_mode = "constant" | "edge" | "reflect" | "wrap";
    %p = nn.pad(%x, %v) {pad_width = ...}             the value: operand %v (as TVM) or attribute
                                                      pad_value = 0.0
    %l = nn.lrn(%x) {size = 5, axis = 1, bias = 2.0, alpha = 1e-05, beta = 0.75}
    %n = nn.l2_normalize(%x) {eps = 1e-12, axis = [1]}
    %f = nn.batch_flatten(%x)                         (N, ...) -> (N, product of the rest)
    %d = nn.depth_to_space(%x) {block_size = 2, layout = "NCHW", mode = "DCR"}   mode "DCR" | "CRD"
    %s = nn.space_to_depth(%x) {block_size = 2, layout = "NCHW"}

Convolutions live in conv.py (Conv2DOp is re-exported here), pools in
pool.py, normalisations in norm.py.
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import BOOL, FLOAT, INT, STR, enum, optional
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from .base import OpPattern, RelayOp, out_dtype, same_dtype, tensor_type
from .conv import PADDING, Conv2DOp, conv2d_nchw, normalize_padding  # noqa: F401  (old home)
from .util import (AXES, PAIRS, accumulation_dtype, bf16_values, dims_match, norm_axes, norm_axis, prod, scalar_like,
                   shape_text, word_bytes, word_halves)

np = lazy_module("numpy")   # parsing and printing never need numpy


# -- matrix products ---------------------------------------------------------------

class DenseOp(RelayOp):
    __slots__ = ()
    name = "relay.nn.dense"
    OPERANDS = ("data", "weight")
    ATTRS = {"units": Attr(optional(INT), None), "out_dtype": Attr(STR, "")}
    PATTERN = OpPattern.OUT_ELEMWISE_FUSABLE

    def type_relation(self, x, w):
        tensor_type(self, x)
        tensor_type(self, w)
        e = same_dtype(self, x, w)
        if w.rank != 2 or x.rank < 1:
            raise self.error(f"expects data of rank >= 1 and a 2-d weight, got {x} and {w}")
        k, wk = x.shape[-1], w.shape[1]
        if k is not None and wk is not None and k != wk:
            raise self.error(f"reduction dimensions differ: data has {k}, weight has {wk}")
        units = self.attributes.get("units")
        if units is not None and w.shape[0] is not None and units != w.shape[0]:
            raise self.error(f"units = {units} but the weight has {w.shape[0]} rows")
        n = w.shape[0] if w.shape[0] is not None else units
        return T.TensorType(x.shape[:-1] + (n,), out_dtype(self, e))

    def compute(self, x, w):
        dt = self.results[0].type.dtype
        acc = accumulation_dtype(dt)
        return np.matmul(x.astype(acc), w.T.astype(acc)).astype(dt)


class MatmulOp(RelayOp):
    """TVM's nn.matmul: `tensor_a` of rank >= 2 (its last two axes are
    swapped when transpose_a), `tensor_b` 2-d.  dense is matmul with
    transpose_b = true."""
    __slots__ = ()
    name = "relay.nn.matmul"
    OPERANDS = ("tensor_a", "tensor_b")
    ATTRS = {"units": Attr(optional(INT), None), "out_dtype": Attr(STR, ""),
             "transpose_a": Attr(BOOL, False), "transpose_b": Attr(BOOL, False)}
    PATTERN = OpPattern.OUT_ELEMWISE_FUSABLE

    def type_relation(self, a, b):
        tensor_type(self, a)
        tensor_type(self, b)
        e = same_dtype(self, a, b)
        ta, tb = self.attributes["transpose_a"], self.attributes["transpose_b"]
        if b.rank != 2 or a.rank < (2 if ta else 1):
            raise self.error(f"expects tensor_a of rank >= {2 if ta else 1} and a 2-d tensor_b, got {a} and {b}")
        if ta:
            k, lead = a.shape[-2], a.shape[:-2] + (a.shape[-1],)
        else:
            k, lead = a.shape[-1], a.shape[:-1]
        kb, n = (b.shape[1], b.shape[0]) if tb else (b.shape[0], b.shape[1])
        if not dims_match(k, kb):
            raise self.error(f"reduction dimensions differ: tensor_a has {k}, tensor_b has {kb}")
        units = self.attributes.get("units")
        if units is not None and n is not None and units != n:
            raise self.error(f"units = {units} but tensor_b gives {n} output columns")
        return T.TensorType(lead + (n if n is not None else units,), out_dtype(self, e))

    def compute(self, a, b):
        dt = self.results[0].type.dtype
        if self.attributes["transpose_a"]:
            a = np.swapaxes(a, -1, -2)
        if self.attributes["transpose_b"]:
            b = b.T
        acc = accumulation_dtype(dt)
        return np.matmul(a.astype(acc), b.astype(acc)).astype(dt)


def packed_width(layout):
    """n of a packed dense weight layout "NC{n}n", "NC{n}n4c" or "NC{n}n2c" (None: not one)."""
    import re
    m = re.fullmatch(r"NC([1-9][0-9]*)n([42]c)?", layout)
    return int(m.group(1)) if m else None


def packs_words(layout):
    """Weights per i32 word of packed layout `layout`: 4 (i8, "NC{n}n4c"),
    2 (bf16, "NC{n}n2c"), or 0 (one weight per element)."""
    return {"n4c": 4, "n2c": 2}.get(layout[-3:], 0)


# the data, weight and out_dtype each word layout takes (its instruction's operands)
_WORD_OPERANDS = {4: (T.u8, T.i32, "ui8 data and i32 words of i8 weights, out_dtype int32 (vpdpbusd's operands)"),
                  2: (T.bf16, T.f32, "bf16 data and i32 words of bf16 weight pairs, out_dtype float32 "
                      "(vdpbf16ps's operands)")}


def unpack_words(wp, per_word=4):
    """The N x K weight of words packed "NC{n}n4c" (int8) or "NC{n}n2c"
    (bf16 bits, uint16) (wp: N / n, K / per_word, n)."""
    nb, kw, n = wp.shape
    halves = word_bytes(wp) if per_word == 4 else word_halves(wp)
    return halves.transpose(0, 2, 1, 3).reshape(nb * n, kw * per_word)


class DensePackOp(RelayOp):
    """TVM's nn.contrib_dense_pack: dense over a weight packed in panels of
    n output columns, ``wp[j / n, k, j % n] = w[j, k]`` (layout "NC{n}n"), so
    that a GEMM reads n contiguous columns per k.  --alter-op-layout makes
    it from a constant weight, packed at compile time.  `units` below the
    panels' columns leaves off the last panel's zero padding (N no panel
    width divides: the output has N columns, the kernel writes them).

    Layout "NC{n}n4c" is the int8 form for vpdpbusd (x86 VNNI, which
    multiplies unsigned bytes by signed ones): uint8 data, the weight
    int8 packed four consecutive k to an int32 word (little-endian),
    ``wp[j / n, k / 4, j % n]`` holding w[j, k .. k + 3]; out_dtype int32.
    Layout "NC{n}n2c" is the bf16 form for vdpbf16ps (AVX512-BF16): bf16
    data, the weight's bf16 bits two consecutive k to a word (k even in
    the low half), out_dtype float32.  Layout "NC{n}n" also takes an int8
    weight under float data (weight-only int8, --quantize-weights): each
    weight converted to the data's type in the kernel, a quarter of the
    bytes read."""
    __slots__ = ()
    name = "relay.nn.contrib_dense_pack"
    OPERANDS = ("data", "weight")
    ATTRS = {"units": Attr(optional(INT), None), "out_dtype": Attr(STR, ""), "weight_layout": Attr(STR, "NC")}
    PATTERN = OpPattern.OUT_ELEMWISE_FUSABLE

    def type_relation(self, x, w):
        tensor_type(self, x)
        tensor_type(self, w)
        layout = self.attributes["weight_layout"]
        n = packed_width(layout)
        if n is None:
            raise self.error(f"weight_layout must be NC<n>n or NC<n>n4c (panels of n output columns), "
                             f"got '{layout}'")
        words = packs_words(layout)
        if words:
            dt, e, what = _WORD_OPERANDS[words]
            if x.element_type is not dt or w.element_type is not T.i32 or out_dtype(self, e) is not e:
                raise self.error(f"weight_layout {layout} takes {what}, got {x.element_type} data, a "
                                 f"{w.element_type} weight, out_dtype {out_dtype(self, e)}")
        elif T.is_float(x.element_type) and w.element_type is T.i8:
            e = x.element_type   # weight-only int8 (--quantize-weights): the weight cast in the kernel
        else:
            e = same_dtype(self, x, w)
        if w.rank != 3 or x.rank < 1:
            raise self.error(f"expects data of rank >= 1 and a 3-d packed weight (N / n, K{f' / {words}' if words else ''}, n), "
                             f"got {x} and {w}")
        if w.shape[2] is not None and w.shape[2] != n:
            raise self.error(f"weight_layout {layout} packs {n} columns, but the weight's last axis is {w.shape[2]}")
        if words and (x.shape[-1] is None or w.shape[1] is None):
            raise self.error(f"weight_layout {layout} needs a static reduction, not a dynamic one")
        if words and x.shape[-1] != words * w.shape[1]:
            raise self.error(f"reduction dimensions differ: data has {x.shape[-1]}, the weight's words "
                             f"hold {words * w.shape[1]}")
        if not words and not dims_match(x.shape[-1], w.shape[1]):
            raise self.error(f"reduction dimensions differ: data has {x.shape[-1]}, weight has {w.shape[1]}")
        cols = w.shape[0] * n if w.shape[0] is not None else None
        units = self.attributes.get("units")
        if units is not None and cols is not None and not cols - n < units <= cols:
            raise self.error(f"units = {units} but the packed weight has {cols} columns (units may leave "
                             f"off only the zero padding of the last panel, fewer than {n})")
        return T.TensorType(x.shape[:-1] + (units if units is not None else cols,), out_dtype(self, e))

    def compute(self, x, wp):
        dt = self.results[0].type.dtype
        acc = accumulation_dtype(dt)
        units = self.results[0].type.shape[-1]
        per_word = packs_words(self.attributes["weight_layout"])
        if per_word == 4:
            w = unpack_words(wp)[:units]
            return np.matmul(x.astype(np.int64), w.T.astype(np.int64)).astype(dt)
        if per_word == 2:   # bf16 bits (uint16): the products exact in f64, the sums rounded once
            w = bf16_values(unpack_words(wp, 2)[:units])
            return np.matmul(bf16_values(x), w.T).astype(dt)
        w = wp.transpose(1, 0, 2).reshape(wp.shape[1], -1)[:, :units]    # K x N
        return np.matmul(x.astype(acc), w.astype(acc)).astype(dt)


class BatchMatmulOp(RelayOp):
    """TVM's nn.batch_matmul on 3-d operands; a batch of 1 broadcasts."""
    __slots__ = ()
    name = "relay.nn.batch_matmul"
    OPERANDS = ("x", "y")
    ATTRS = {"out_dtype": Attr(STR, ""), "transpose_a": Attr(BOOL, False), "transpose_b": Attr(BOOL, True)}
    PATTERN = OpPattern.OUT_ELEMWISE_FUSABLE

    def type_relation(self, x, y):
        tensor_type(self, x)
        tensor_type(self, y)
        e = same_dtype(self, x, y)
        if x.rank != 3 or y.rank != 3:
            raise self.error(f"expects 3-d operands (batch, rows, columns), got {x} and {y}")
        ta, tb = self.attributes["transpose_a"], self.attributes["transpose_b"]
        bx, by = x.shape[0], y.shape[0]
        if bx == 1:
            batch = by
        elif by == 1:
            batch = bx
        elif dims_match(bx, by):
            batch = bx if bx is not None else by
        else:
            raise self.error(f"batch dimensions {bx} and {by} differ (and neither is 1)")
        m, k = (x.shape[2], x.shape[1]) if ta else (x.shape[1], x.shape[2])
        ky, n = (y.shape[2], y.shape[1]) if tb else (y.shape[1], y.shape[2])
        if not dims_match(k, ky):
            raise self.error(f"reduction dimensions differ: x has {k}, y has {ky}")
        return T.TensorType((batch, m, n), out_dtype(self, e))

    def compute(self, x, y):
        dt = self.results[0].type.dtype
        if self.attributes["transpose_a"]:
            x = x.transpose(0, 2, 1)
        if self.attributes["transpose_b"]:
            y = y.transpose(0, 2, 1)
        acc = accumulation_dtype(dt)
        return np.matmul(x.astype(acc), y.astype(acc)).astype(dt)


class BiasAddOp(RelayOp):
    __slots__ = ()
    name = "relay.nn.bias_add"
    OPERANDS = ("data", "bias")
    ATTRS = {"axis": Attr(INT, 1)}
    PATTERN = OpPattern.BROADCAST
    LAYOUT = "axis"
    AXIS_ATTRS = ("axis",)

    def norm_axis(self, rank):
        return norm_axis(self, self.attributes["axis"], rank)

    def type_relation(self, x, b):
        tensor_type(self, x)
        tensor_type(self, b)
        same_dtype(self, x, b)
        axis = self.norm_axis(x.rank)
        if b.rank != 1 or not dims_match(b.shape[0], x.shape[axis]):
            raise self.error(f"bias must be 1-d of size {shape_text([x.shape[axis]])[1:-1]} "
                             f"(axis {axis} of the data), got {b}")
        return x

    def compute(self, x, b):
        axis = self.norm_axis(x.ndim)
        shape = [1] * x.ndim
        shape[axis] = b.shape[0]
        return (x + b.reshape(shape)).astype(x.dtype, copy=False)


# -- softmax -------------------------------------------------------------------------

class SoftmaxOp(RelayOp):
    __slots__ = ()
    name = "relay.nn.softmax"
    OPERANDS = ("data",)
    ATTRS = {"axis": Attr(INT, -1)}
    PATTERN = OpPattern.OPAQUE
    LAYOUT = "axis"
    AXIS_ATTRS = ("axis",)
    LOG = False

    def type_relation(self, x):
        tensor_type(self, x)
        if not T.is_float(x.element_type):
            raise self.error(f"expects a floating-point tensor, got {x}")
        norm_axis(self, self.attributes["axis"], x.rank)
        return x

    def compute(self, x):
        axis = self.attributes["axis"] % x.ndim
        z = x.astype(np.float64)
        with np.errstate(all="ignore"):   # a row of -inf (fully masked) gives NaN, as compiled code would
            z = z - z.max(axis=axis, keepdims=True)
            if self.LOG:
                out = z - np.log(np.exp(z).sum(axis=axis, keepdims=True))
            else:
                ez = np.exp(z)
                out = ez / ez.sum(axis=axis, keepdims=True)
        return out.astype(x.dtype)


class LogSoftmaxOp(SoftmaxOp):
    __slots__ = ()
    name = "relay.nn.log_softmax"
    LOG = True


# -- dropout -----------------------------------------------------------------------------

class DropoutOp(RelayOp):
    """TVM's nn.dropout returns (out, mask).  Relay graphs are inference
    graphs here, so the interpreter passes the data through (SimplifyInference
    removes the op)."""
    __slots__ = ()
    name = "relay.nn.dropout"
    OPERANDS = ("data",)
    ATTRS = {"rate": Attr(FLOAT, 0.5)}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x):
        tensor_type(self, x)
        r = self.attributes["rate"]
        if not 0.0 <= r < 1.0:
            raise self.error(f"rate must be in [0, 1), got {r}")
        return T.TupleType((x, x))

    def compute(self, x):
        return (x.copy(), np.ones_like(x))


# -- pad -------------------------------------------------------------------------------------

class PadOp(RelayOp):
    __slots__ = ()
    name = "relay.nn.pad"
    OPERANDS = ("data", "*pad_value")
    ATTRS = {"pad_width": Attr(PAIRS), "pad_mode": Attr(enum("constant", "edge", "reflect", "wrap"), "constant"),
             "pad_value": Attr(FLOAT, 0.0)}
    PATTERN = OpPattern.INJECTIVE
    LAYOUT = "axis"

    def relayout(self, perm):
        pw = self.attributes["pad_width"]
        if len(pw) != len(perm):
            return None
        return {"pad_width": tuple(pw[p] for p in perm)}

    def type_relation(self, x, *value):
        tensor_type(self, x)
        if len(value) > 1:
            raise self.error(f"expects at most one pad value operand, got {len(value)}")
        if value:
            scalar_like(self, value[0], "pad value")
            same_dtype(self, x, value[0])
        pw = self.attributes["pad_width"]
        if len(pw) != x.rank:
            raise self.error(f"pad_width has {len(pw)} pairs but the data has rank {x.rank}")
        mode = self.attributes["pad_mode"]
        out = []
        for i, ((b, a), d) in enumerate(zip(pw, x.shape)):
            if b < 0 or a < 0:
                raise self.error(f"pad_width of axis {i} is negative: [{b}, {a}]")
            if mode == "reflect" and d is not None and (b >= d or a >= d) and (b or a):
                raise self.error(f"reflect padding of axis {i} must be smaller than its size {d}, got [{b}, {a}]")
            if mode in ("edge", "wrap") and d == 0 and (b or a):
                raise self.error(f"{mode} padding cannot extend the empty axis {i}")
            out.append(None if d is None else d + b + a)
        return x.with_shape(out)

    def compute(self, x, *value):
        pw = self.attributes["pad_width"]
        mode = self.attributes["pad_mode"]
        if mode == "constant":
            v = value[0].reshape(()) if value else self.attributes["pad_value"]
            return np.pad(x, pw, mode="constant", constant_values=np.asarray(v).astype(x.dtype))
        return np.pad(x, pw, mode=mode)


# -- local normalisations ---------------------------------------------------------------------

class LRNOp(RelayOp):
    """Local response normalisation across `axis`:
    out = x / (bias + alpha / size * sum(x^2 over the window)) ^ beta,
    the window being [c - size // 2, c - size // 2 + size - 1] (TVM's;
    ONNX's is the same for the odd sizes models use)."""
    __slots__ = ()
    name = "relay.nn.lrn"
    OPERANDS = ("data",)
    ATTRS = {"size": Attr(INT, 5), "axis": Attr(INT, 1), "bias": Attr(FLOAT, 2.0),
             "alpha": Attr(FLOAT, 0.00001), "beta": Attr(FLOAT, 0.75)}
    PATTERN = OpPattern.OPAQUE
    LAYOUT = "axis"
    AXIS_ATTRS = ("axis",)

    def type_relation(self, x):
        tensor_type(self, x)
        if not T.is_float(x.element_type):
            raise self.error(f"expects a floating-point tensor, got {x}")
        norm_axis(self, self.attributes["axis"], x.rank)
        if self.attributes["size"] < 1:
            raise self.error(f"size must be positive, got {self.attributes['size']}")
        return x

    def compute(self, x):
        a = self.attributes
        axis, size = a["axis"] % x.ndim, a["size"]
        sq = np.moveaxis(x.astype(np.float64) ** 2, axis, -1)
        c = sq.shape[-1]
        lo = size // 2
        padded = np.pad(sq, [(0, 0)] * (sq.ndim - 1) + [(lo, size - 1 - lo)])
        csum = np.concatenate([np.zeros(sq.shape[:-1] + (1,)), np.cumsum(padded, axis=-1)], axis=-1)
        win = csum[..., size:size + c] - csum[..., :c]
        with np.errstate(all="ignore"):
            div = (a["bias"] + a["alpha"] / size * np.moveaxis(win, -1, axis)) ** a["beta"]
            return (x / div).astype(x.dtype)


class L2NormalizeOp(RelayOp):
    """out = x / sqrt(max(sum(x^2 over axis), eps))."""
    __slots__ = ()
    name = "relay.nn.l2_normalize"
    OPERANDS = ("data",)
    ATTRS = {"eps": Attr(FLOAT), "axis": Attr(AXES, None)}
    PATTERN = OpPattern.OUT_ELEMWISE_FUSABLE
    LAYOUT = "axis"
    AXIS_ATTRS = ("axis",)

    def axes(self, rank):
        ax = self.attributes.get("axis")
        return list(range(rank)) if ax is None else norm_axes(self, ax, rank)

    def type_relation(self, x):
        tensor_type(self, x)
        if not T.is_float(x.element_type):
            raise self.error(f"expects a floating-point tensor, got {x}")
        self.axes(x.rank)
        return x

    def compute(self, x):
        ax = tuple(self.axes(x.ndim))
        s = (x.astype(np.float64) ** 2).sum(axis=ax, keepdims=True)
        return (x / np.sqrt(np.maximum(s, self.attributes["eps"]))).astype(x.dtype)


# -- reshaping nn ops ---------------------------------------------------------------------------

class BatchFlattenOp(RelayOp):
    __slots__ = ()
    name = "relay.nn.batch_flatten"
    OPERANDS = ("data",)
    PATTERN = OpPattern.INJECTIVE

    def type_relation(self, x):
        tensor_type(self, x)
        if x.rank < 1:
            raise self.error(f"expects a tensor of rank >= 1, got {x}")
        return x.with_shape((x.shape[0], prod(x.shape[1:])))

    def compute(self, x):
        return x.reshape(x.shape[0], -1)


class DepthToSpaceOp(RelayOp):
    __slots__ = ()
    name = "relay.nn.depth_to_space"
    OPERANDS = ("data",)
    ATTRS = {"block_size": Attr(INT), "layout": Attr(enum("NCHW", "NHWC"), "NCHW"),
             "mode": Attr(enum("DCR", "CRD"), "DCR")}
    PATTERN = OpPattern.INJECTIVE
    LAYOUT = "layout"
    LAYOUT_ATTRS = ("layout",)

    def type_relation(self, x):
        tensor_type(self, x)
        if x.rank != 4:
            raise self.error(f"expects 4-d data, got {x}")
        b = self.attributes["block_size"]
        if b < 1:
            raise self.error(f"block_size must be positive, got {b}")
        nhwc = self.attributes["layout"] == "NHWC"
        n, c, h, w = (x.shape[0], x.shape[3], x.shape[1], x.shape[2]) if nhwc else x.shape
        if c is not None and c % (b * b):
            raise self.error(f"{c} channels do not divide by block_size^2 = {b * b}")
        c2 = None if c is None else c // (b * b)
        h2 = None if h is None else h * b
        w2 = None if w is None else w * b
        return x.with_shape((n, h2, w2, c2) if nhwc else (n, c2, h2, w2))

    def compute(self, x):
        b = self.attributes["block_size"]
        nhwc = self.attributes["layout"] == "NHWC"
        if nhwc:
            x = x.transpose(0, 3, 1, 2)
        n, c, h, w = x.shape
        if self.attributes["mode"] == "DCR":
            y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
        else:
            y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
        y = y.reshape(n, c // (b * b), h * b, w * b)
        return y.transpose(0, 2, 3, 1) if nhwc else y


class SpaceToDepthOp(RelayOp):
    __slots__ = ()
    name = "relay.nn.space_to_depth"
    OPERANDS = ("data",)
    ATTRS = {"block_size": Attr(INT), "layout": Attr(enum("NCHW", "NHWC"), "NCHW")}
    PATTERN = OpPattern.INJECTIVE
    LAYOUT = "layout"
    LAYOUT_ATTRS = ("layout",)

    def type_relation(self, x):
        tensor_type(self, x)
        if x.rank != 4:
            raise self.error(f"expects 4-d data, got {x}")
        b = self.attributes["block_size"]
        if b < 1:
            raise self.error(f"block_size must be positive, got {b}")
        nhwc = self.attributes["layout"] == "NHWC"
        n, c, h, w = (x.shape[0], x.shape[3], x.shape[1], x.shape[2]) if nhwc else x.shape
        for what, d in (("height", h), ("width", w)):
            if d is not None and d % b:
                raise self.error(f"{what} {d} does not divide by block_size {b}")
        c2 = None if c is None else c * b * b
        h2 = None if h is None else h // b
        w2 = None if w is None else w // b
        return x.with_shape((n, h2, w2, c2) if nhwc else (n, c2, h2, w2))

    def compute(self, x):
        b = self.attributes["block_size"]
        nhwc = self.attributes["layout"] == "NHWC"
        if nhwc:
            x = x.transpose(0, 3, 1, 2)
        n, c, h, w = x.shape
        y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4).reshape(n, c * b * b, h // b, w // b)
        return y.transpose(0, 2, 3, 1) if nhwc else y

