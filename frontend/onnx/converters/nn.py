"""Convolutions, dense layers and matrix products, pooling, dropout, LRN.

Conv and pooling nodes pick ``nn.conv{1,2,3}d`` / ``nn.max_pool{1,2,3}d`` by
the number of spatial axes, in TVM's default layouts (NCW, NCHW, NCDHW and
OIW, OIHW, OIDHW; IO.. for the transposes, which is ONNX's weight order).
Padding is ONNX's order already: all the befores, then all the afters.
"""

from __future__ import annotations

from ..registry import converter
from .common import layout_for, spatial_attrs

_DIMS = {1: "1d", 2: "2d", 3: "3d"}


def _nd(cx, x):
    nsp = cx.rank(x) - 2
    if nsp not in _DIMS:
        raise cx.unsupported(f"{nsp} spatial dimensions (1 to 3 are supported)")
    return nsp


def _bias(cx, y, b):
    return y if b is None else cx.op("nn.bias_add", y, b, axis=1)


@converter("Conv", 1)
def conv(cx, node):
    x, w, b = node.input(0), node.input(1), node.input(2)
    nsp = _nd(cx, x)
    ws = cx.shape(w)
    kernel, strides, dilations, pads = spatial_attrs(cx, node, x, ws)
    if tuple(ws[2:]) != kernel and None not in ws[2:]:
        raise cx.error(f"kernel_shape {list(kernel)} does not match the weight {cx.ttype(w)}")
    y = cx.op(f"nn.conv{_DIMS[nsp]}", x, w, strides=strides, padding=pads, dilation=dilations,
              groups=node.attr("group", 1), channels=ws[0], kernel_size=kernel)
    return _bias(cx, y, b)


@converter("DeformConv", 19)
def deform_conv(cx, node):
    """nn.deformable_conv2d (2-d only), then the bias."""
    x, w, offset, b, mask = (node.input(i) for i in range(5))
    if _nd(cx, x) != 2:
        raise cx.unsupported(f"{_nd(cx, x)}-d deformable convolution (2-d only)")
    kernel, strides, dilations, pads = spatial_attrs(cx, node, x, cx.shape(w))
    if tuple(cx.shape(w)[2:]) != kernel:
        raise cx.error(f"kernel_shape {list(kernel)} does not match the weight {cx.ttype(w)}")
    operands = [x, offset, w] + ([mask] if mask is not None else [])
    y = cx.op("nn.deformable_conv2d", *operands, strides=strides, padding=pads, dilation=dilations,
              deformable_groups=node.attr("offset_group", 1), groups=node.attr("group", 1))
    return _bias(cx, y, b)


@converter("ConvTranspose", 1)
def conv_transpose(cx, node):
    """Output size stride*(in-1) + output_padding + (k-1)*dilation + 1
    - pads; with ``output_shape`` (or SAME auto_pad) the pads follow from
    the shape wanted, SAME_UPPER putting the odd one at the end."""
    x, w, b = node.input(0), node.input(1), node.input(2)
    nsp = _nd(cx, x)
    ws = cx.shape(w)
    groups = node.attr("group", 1)
    kernel = tuple(node.attr("kernel_shape") or ws[2:])
    strides = tuple(node.attr("strides", (1,) * nsp))
    dilations = tuple(node.attr("dilations", (1,) * nsp))
    out_pad = list(node.attr("output_padding", (0,) * nsp))
    pads = list(node.attr("pads", (0,) * (2 * nsp)))
    auto_pad = node.attr("auto_pad", "NOTSET")
    out_shape = node.attr("output_shape")
    if len(kernel) != nsp or len(strides) != nsp or len(dilations) != nsp or len(out_pad) != nsp \
            or len(pads) != 2 * nsp:
        raise cx.error(f"kernel_shape, strides, dilations, output_padding and pads do not match "
                       f"{nsp} spatial axes")
    if out_shape is not None and len(out_shape) < nsp:
        raise cx.error(f"output_shape {list(out_shape)} gives fewer than {nsp} spatial sizes")
    if out_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        spatial = cx.static_shape(x)[2:]
        if out_shape is None:
            out_shape = [s * st for s, st in zip(spatial, strides)]
        out_shape = list(out_shape)[-nsp:]
        for i in range(nsp):
            total = strides[i] * (spatial[i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1 - out_shape[i]
            if total < 0:          # more output than the kernel covers: extra rows at the end
                out_pad[i] -= total
                total = 0
            half = total // 2
            if auto_pad == "SAME_UPPER":
                pads[i], pads[nsp + i] = half, total - half
            else:
                pads[i], pads[nsp + i] = total - half, half
    elif auto_pad == "VALID":
        pads = [0] * (2 * nsp)
    channels = ws[1] * groups if ws[1] is not None else None
    y = cx.op(f"nn.conv{_DIMS[nsp]}_transpose", x, w, strides=strides, padding=tuple(pads),
              dilation=dilations, groups=groups, channels=channels, kernel_size=kernel,
              output_padding=tuple(out_pad))
    return _bias(cx, y, b)


# -- matrix products -----------------------------------------------------------------

@converter("Gemm", 1)
def gemm(cx, node):
    """alpha * A' B' + beta * C as nn.dense (B' transposed to (N, K)), then
    scaling, then nn.bias_add for a vector C or add for any other."""
    a, b, c = node.input(0), node.input(1), node.input(2)
    alpha, beta = node.attr("alpha", 1.0), node.attr("beta", 1.0)
    if node.attr("transA", 0):
        a = cx.op("transpose", a, axes=(1, 0))
    if not node.attr("transB", 0):
        b = cx.op("transpose", b, axes=(1, 0))
    if cx.rank(a) != 2:
        a = cx.op("nn.batch_flatten", a)
    y = cx.op("nn.dense", a, b, units=cx.shape(b)[0])
    if alpha != 1.0:
        y = cx.op("multiply", y, cx.scalar(alpha, y))
    if c is None or beta == 0.0:
        return y
    if beta != 1.0:
        c = cx.op("multiply", c, cx.scalar(beta, c))
    n = cx.shape(y)[1]
    if cx.shape(c) == (n,) and n is not None:
        return cx.op("nn.bias_add", y, c, axis=1)
    return cx.op("add", y, c)


@converter("MatMul", 1)
def matmul(cx, node):
    return matmul_values(cx, node.input(0), node.input(1))


def matmul_values(cx, a, b, out_dtype=None):
    """numpy's matmul: 1-d operands get a unit axis (dropped again), 2-d by
    2-d is nn.dense against the transposed right side (TVM's choice,
    FoldConstant folds a weight's transpose), N-d by 2-d flattens the left
    side into rows, and batches broadcast into nn.batch_matmul (with
    transpose_b where the right side is a transpose ending in K^T's swap:
    _fold_transpose_b)."""
    ra, rb = cx.rank(a), cx.rank(b)
    if ra == 0 or rb == 0:
        raise cx.error("MatMul operands must have rank 1 or more")
    if ra == 1:
        out = matmul_values(cx, cx.op("expand_dims", a, axis=0), b, out_dtype)
        return cx.op("squeeze", out, axis=(cx.rank(out) - 2,))
    if rb == 1:
        out = matmul_values(cx, a, cx.op("expand_dims", b, axis=1), out_dtype)
        return cx.op("squeeze", out, axis=(cx.rank(out) - 1,))
    sa, sb = cx.shape(a), cx.shape(b)
    if rb == 2:
        if ra == 2:
            return cx.op("nn.dense", a, cx.op("transpose", b, axes=(1, 0)), out_dtype=out_dtype)
        lead = sa[:-1]
        if lead.count(None) > 1:   # rows no reshape can name: dense reads (..., K) as they are
            return cx.op("nn.dense", a, cx.op("transpose", b, axes=(1, 0)), out_dtype=out_dtype)
        flat = cx.op("reshape", a, newshape=(-1, sa[-1]))
        y = cx.op("nn.dense", flat, cx.op("transpose", b, axes=(1, 0)), out_dtype=out_dtype)
        # the one dynamic row dimension (a sequence) is what is left: -1
        return cx.op("reshape", y, newshape=tuple(-1 if d is None else d for d in lead) + (sb[1],))
    # batched: broadcast the batch dimensions, flatten them to one
    import numpy as np
    ba, bb = sa[:-2], sb[:-2]
    if None in ba or None in bb:
        raise cx.unsupported("batched MatMul with dynamic batch dimensions")
    batch = cx.broadcast(ba, bb, "batch dimensions")
    a = _broadcast_batch(cx, a, batch)
    b = _broadcast_batch(cx, b, batch)
    ones = len(batch) - 1
    if ones > 0 and all(d == 1 for d in batch[:-1]) and None in sa[-2:] + sb[-2:]:
        # (1, heads, seq, dh): unit batch axes dropped and put back, which keeps
        # the '?' sizes where a reshape could not name two of them.  Only here
        # K^T folds into transpose_b: the dynamic schedule reads operands as
        # stored, where the static GEMM schedule packs them itself (folding on
        # the static path measured 0.93-1.05x on the BERT layer: no gain)
        axes = tuple(range(ones))
        b, tb = _fold_transpose_b(cx, b)
        y = cx.op("nn.batch_matmul", cx.op("squeeze", a, axis=axes), cx.op("squeeze", b, axis=axes),
                  transpose_b=tb, out_dtype=out_dtype)
        return cx.op("expand_dims", y, axis=0, num_newaxis=ones)
    nb = int(np.prod(batch)) if batch else 1
    a3 = a if len(batch) == 1 else cx.op("reshape", a, newshape=(nb,) + tuple(sa[-2:]))
    b3 = b if len(batch) == 1 else cx.op("reshape", b, newshape=(nb,) + tuple(sb[-2:]))
    y = cx.op("nn.batch_matmul", a3, b3, transpose_b=False, out_dtype=out_dtype)
    out = batch + (sa[-2], sb[-1])
    return y if cx.shape(y) == out else cx.op("reshape", y, newshape=tuple(0 if d is None else d for d in out))


def _fold_transpose_b(cx, b):
    """(b', transpose_b): where the right operand is a transpose whose
    second-last axis is the input's last (attention's K^T, from
    Transpose(k, perm=[0, 2, 3, 1])), the same transpose with its last two
    axes swapped back and batch_matmul's transpose_b: each output is then
    a dot product along rows both operands store contiguously (head_dim),
    not a walk down a column of K^T whose stride is the sequence length.
    Otherwise (b, False)."""
    d = b.defining_op()
    if d is None or d.name != "relay.transpose":
        return b, False
    perm = d.attributes.get("axes")
    x = d.operands[0]
    if perm is None or len(perm) != cx.rank(x) or len(perm) < 3:
        return b, False
    perm = [int(p) % len(perm) for p in perm]
    if perm[-2] != len(perm) - 1:   # only where the swap makes x's own rows the operand's rows
        return b, False
    swapped = perm[:-2] + [perm[-1], perm[-2]]
    if swapped == list(range(len(perm))):
        return x, True
    return cx.op("transpose", x, axes=tuple(swapped)), True


def _broadcast_batch(cx, x, batch):
    s = cx.shape(x)
    want = tuple(batch) + tuple(s[-2:])
    if s == want:
        return x
    if len(s) < len(want):
        x = cx.op("reshape", x, newshape=(1,) * (len(want) - len(s)) + tuple(s))
    if cx.shape(x) == want:
        return x
    return cx.op("broadcast_to", x, shape=want)


# -- pooling ---------------------------------------------------------------------

def _pool_common(cx, node, x):
    nsp = _nd(cx, x)
    kernel, strides, dilations, pads = spatial_attrs(cx, node, x)
    attrs = dict(pool_size=kernel, strides=strides, padding=pads, layout=layout_for(cx, nsp),
                 ceil_mode=bool(node.attr("ceil_mode", 0)))
    if any(d != 1 for d in dilations):
        attrs["dilation"] = dilations
    return nsp, attrs


@converter("MaxPool", 1)
def max_pool(cx, node):
    x = node.input(0)
    order = node.attr("storage_order", 0)
    nsp, attrs = _pool_common(cx, node, x)
    y = _ceil_crop(cx, x, cx.op(f"nn.max_pool{_DIMS[nsp]}", x, **attrs), attrs)
    if not node.wants_output(1):
        return y
    if attrs["ceil_mode"]:
        raise cx.unsupported("the Indices output of MaxPool with ceil_mode")
    idx = cx.op("nn.max_pool_argmax", x, pool_size=attrs["pool_size"], strides=attrs["strides"],
                padding=attrs["padding"], dilation=attrs.get("dilation"), storage_order=order)
    return [y, idx]


@converter("AveragePool", 1)
def avg_pool(cx, node):
    x = node.input(0)
    nsp, attrs = _pool_common(cx, node, x)
    attrs["count_include_pad"] = bool(node.attr("count_include_pad", 0))
    return _ceil_crop(cx, x, cx.op(f"nn.avg_pool{_DIMS[nsp]}", x, **attrs), attrs)


def _ceil_crop(cx, x, y, attrs):
    """With ceil_mode ONNX drops a last window that would start in the
    right padding; relay's plain ceil keeps it: slice it off."""
    from .shape import strided_slice
    if not attrs["ceil_mode"]:
        return y
    xs, ys = cx.shape(x), cx.shape(y)
    nsp = len(xs) - 2
    pads, strides = attrs["padding"], attrs["strides"]
    axes, ends = [], []
    for i in range(nsp):
        size, out = xs[2 + i], ys[2 + i]
        if size is None or out is None:
            continue
        if (out - 1) * strides[i] >= size + pads[i]:
            axes.append(2 + i)
            ends.append(out - 1)
    if not axes:
        return y
    return strided_slice(cx, y, [0] * len(axes), ends, [1] * len(axes), axes)


@converter("LpPool", 1)
def lp_pool(cx, node):
    """(sum over the window of |x|^p)^(1/p): an average pool of |x|^p that
    counts the padding, times the window size."""
    x = node.input(0)
    p = float(node.attr("p", 2))
    nsp, attrs = _pool_common(cx, node, x)
    attrs["count_include_pad"] = True
    xp = cx.op("power", cx.op("abs", x), cx.scalar(p, x))
    avg = cx.op(f"nn.avg_pool{_DIMS[nsp]}", xp, **attrs)
    window = 1
    for k in attrs["pool_size"]:
        window *= k
    s = cx.op("multiply", avg, cx.scalar(window, x))
    return cx.op("power", s, cx.scalar(1.0 / p, x))


def _spatial_axes(cx, x):
    return tuple(range(2, cx.rank(x)))


@converter("GlobalAveragePool", 1)
def global_avg_pool(cx, node):
    x = node.input(0)
    if cx.rank(x) == 4:
        return cx.op("nn.global_avg_pool2d", x)
    return cx.op("mean", x, axis=_spatial_axes(cx, x), keepdims=True)


@converter("GlobalMaxPool", 1)
def global_max_pool(cx, node):
    x = node.input(0)
    if cx.rank(x) == 4:
        return cx.op("nn.global_max_pool2d", x)
    return cx.op("max", x, axis=_spatial_axes(cx, x), keepdims=True)


@converter("GlobalLpPool", 2)
def global_lp_pool(cx, node):
    x = node.input(0)
    p = float(node.attr("p", 2))
    s = cx.op("sum", cx.op("power", cx.op("abs", x), cx.scalar(p, x)), axis=_spatial_axes(cx, x), keepdims=True)
    return cx.op("power", s, cx.scalar(1.0 / p, x))


# -- dropout, LRN ---------------------------------------------------------------------

@converter("Dropout", 1)
def dropout(cx, node):
    """Inference: the data unchanged (nn.dropout, which SimplifyInference
    removes) and an all-true mask; training mode is unsupported."""
    import numpy as np
    x = node.input(0)
    rate = node.attr("ratio", 0.5)
    if node.version >= 12 and node.input(1) is not None:
        rate = float(cx.static_scalar(node.input(1), "ratio"))
    if node.version >= 12 and node.input(2) is not None:
        training = cx.static_scalar(node.input(2), "training_mode")
        if bool(training) and rate != 0:
            raise cx.unsupported("training_mode = true (random masks)")
    y = cx.get_item(cx.op("nn.dropout", x, rate=min(float(rate), 0.999)), 0)
    if not node.wants_output(1):
        return y
    mask_dtype = "bool" if node.version >= 10 else cx.ttype(x).dtype
    cx.check_size(cx.static_shape(x), mask_dtype, "the mask")
    mask = cx.const(np.ones(cx.static_shape(x), dtype=mask_dtype))
    return [y, mask]


@converter("LRN", 1)
def lrn(cx, node):
    return cx.op("nn.lrn", node.input(0), size=node.attr("size"), axis=1, alpha=node.attr("alpha", 1e-4),
                 beta=node.attr("beta", 0.75), bias=node.attr("bias", 1.0))


@converter("MaxUnpool", 9)
def max_unpool(cx, node):
    """Zeros of the output's size with X scattered to the flat indices I
    (MaxPool's Indices: positions in the whole input tensor, row-major)."""
    import numpy as np
    x, ind = node.input(0), node.input(1)
    xs = cx.static_shape(x)
    nsp = len(xs) - 2
    kernel = list(node.attr("kernel_shape", []))
    if len(kernel) != nsp:
        raise cx.error(f"kernel_shape needs {nsp} values, got {kernel}")
    strides = list(node.attr("strides", [])) or [1] * nsp
    pads = list(node.attr("pads", [])) or [0] * (2 * nsp)
    default = list(xs[:2]) + [(xs[2 + i] - 1) * strides[i] + kernel[i] - pads[i] - pads[i + nsp]
                              for i in range(nsp)]
    out = [int(v) for v in cx.static_ints(node.input(2), "output_shape")] if node.input(2) is not None else default
    if len(out) != len(xs) or out[:2] != list(xs[:2]) or any(o < d for o, d in zip(out, default)):
        raise cx.error(f"output_shape {out} does not fit an input of shape {list(xs)} (at least {default})")
    from ....ir import types as T
    flat = cx.op("zeros", shape=[int(np.prod(default))], dtype=cx.dtype(x))
    y = cx.op("scatter_elements", flat, cx.cast(cx.op("reshape", ind, newshape=[-1]), T.i64),
              cx.op("reshape", x, newshape=[-1]), axis=0)
    y = cx.op("reshape", y, newshape=default)
    if out != default:   # the indices count in the default shape; a larger output is padded at the ends
        y = cx.op("nn.pad", y, pad_width=[[0, o - d] for o, d in zip(out, default)], pad_value=0.0)
    return y
