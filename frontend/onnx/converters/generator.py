"""Tensors made from nothing or from a shape: Constant, ConstantOfShape,
Range, EyeLike.

Constant becomes a relay.constant whose resource key is the output's name.
EyeLike depends on its input's static shape only, so it is a constant
too; ConstantOfShape and Range build relay's full / arange from values
known at import time, and from shapes followed symbolically (Shape ->
Gather -> Concat of '?' dimensions) full_like / arange_like of a value
of that shape: one build serves every size.
"""

from __future__ import annotations

from ..registry import converter
from ....ir import types as T
from .common import onnx_dtype


@converter("Constant", 1)
def constant(cx, node):
    import numpy as np

    from ..dtypes import elem_type_problem, tensor_to_numpy, to_tvmd
    a = node.attrs
    if "value" in a:
        t = a["value"]
        if to_tvmd(t.data_type) is None and elem_type_problem(t.data_type) is None:
            from ..dtypes import onnx_type_name
            raise cx.unsupported(f"{onnx_type_name(t.data_type)} constants")
        arr = tensor_to_numpy(t, lambda m: cx.error(f"its 'value' tensor {m}"))
    elif "value_float" in a:
        arr = np.array(a["value_float"], dtype=np.float32)
    elif "value_floats" in a:
        arr = np.array(a["value_floats"], dtype=np.float32)
    elif "value_int" in a:
        arr = np.array(a["value_int"], dtype=np.int64)
    elif "value_ints" in a:
        arr = np.array(a["value_ints"], dtype=np.int64)
    elif "value_string" in a or "value_strings" in a:
        raise cx.unsupported("string constants")
    elif "sparse_value" in a:
        raise cx.unsupported("sparse constants")
    else:
        raise cx.error("has no value attribute")
    return cx.const(np.asarray(arr), key=node.outputs[0] or None)


@converter("ConstantOfShape", 9)
def constant_of_shape(cx, node):
    """full(value) of the given shape; the value defaults to float 0."""
    import numpy as np

    from ..dtypes import elem_type_problem, tensor_to_numpy, to_tvmd
    like = None
    if cx.static(node.input(0)) is None:   # a shape followed symbolically: full_like of a value that has it
        from ..symbolic import elements, shaped_like
        entries = elements(cx, node.input(0))
        like = shaped_like(cx, entries) if entries is not None else None
    shape = cx.static_ints(node.input(0), "shape") if like is None else None
    t = node.attr("value")
    if t is not None and to_tvmd(t.data_type) is None and elem_type_problem(t.data_type) is None:
        from ..dtypes import onnx_type_name
        raise cx.unsupported(f"{onnx_type_name(t.data_type)} values")
    value = (tensor_to_numpy(t, lambda m: cx.error(f"its 'value' tensor {m}")).reshape(-1) if t is not None
             else np.zeros(1, np.float32))
    if value.size != 1:
        raise cx.error("value must hold one element")
    from ....ir import types as T
    dtype = T.from_numpy_dtype(value.dtype)
    if like is not None:
        return cx.op("full_like", cx.cast(like, dtype), cx.const(value.reshape(())))
    return cx.op("full", fill_value=cx.const(value.reshape(())), shape=shape, dtype=dtype)


@converter("Range", 11)
def range_node(cx, node):
    """arange; where the limit is a dimension only known at run time
    (Shape -> Gather of a '?' axis) and the range starts at 0 by 1,
    arange_like of that tensor: one build serves every length; a static
    dimension of such a tensor is a constant; other bounds known only at
    run time: dyn.arange."""
    from ..symbolic import Dim, elements
    start, limit, delta = node.input(0), node.input(1), node.input(2)
    if cx.static(limit, bound=False) is None:
        s, d = cx.static(start, bound=False), cx.static(delta, bound=False)
        lim = elements(cx, limit)
        if s is not None and d is not None and lim is not None and len(lim) == 1 and type(lim[0]) is int:
            # a static dimension of a tensor with '?' ones (a batch of 1)
            import numpy as np
            limit = cx.const(np.array(lim[0], dtype=s.dtype))
        if s is not None and d is not None and s.size == 1 and d.size == 1 and s.item() == 0 and d.item() == 1 \
                and lim is not None and len(lim) == 1 and isinstance(lim[0], Dim):
            return cx.op("arange_like", lim[0].value, axis=lim[0].axis, dtype=cx.dtype(start))
    if any(cx.static(v) is None for v in (start, limit, delta)):
        return cx.op("dyn.arange", start, limit, delta, dtype=cx.dtype(start))
    return cx.op("arange", start=start, stop=limit, step=delta, dtype=cx.dtype(start))


@converter("EyeLike", 9)
def eye_like(cx, node):
    import numpy as np
    x = node.input(0)
    shape = cx.static_shape(x)
    if len(shape) != 2:
        raise cx.error(f"expects a 2-d input, got {cx.ttype(x)}")
    dt = node.attr("dtype")
    t = onnx_dtype(cx, dt) if dt is not None else cx.dtype(x)
    cx.check_size(shape, t, "the identity matrix")
    return cx.const(np.eye(shape[0], shape[1], node.attr("k", 0), dtype=T.to_numpy_dtype(t)))


@converter("MelWeightMatrix", 17)
def mel_weight_matrix(cx, node):
    """The [dft_length / 2 + 1, num_mel_bins] matrix of triangular mel
    filters, peak 1, computed at import (its inputs must be known then).
    Edges: num_mel_bins + 2 points from mel(lower) in equal mel steps of
    (mel(upper) - mel(lower)) / (num_mel_bins + 2), mel(f) = 2595 log10(1 +
    f / 700), each mapped back to hertz and to the spectrogram bin
    floor((dft_length + 1) * f / sample_rate).  Filter i rises over bins
    [edge_i, edge_i+1] and falls over [edge_i+1, edge_i+2) (onnx's
    reference; a filter whose rise is empty is 1 at its centre)."""
    import numpy as np

    from ..dtypes import onnx_type_name, to_tvmd
    n_mel, dft, rate = (int(cx.static_scalar(node.input(i), w))
                        for i, w in enumerate(("num_mel_bins", "dft_length", "sample_rate")))
    lo, hi = (float(cx.static_scalar(node.input(i), w)) for i, w in ((3, "lower_edge_hertz"),
                                                                      (4, "upper_edge_hertz")))
    if n_mel < 1 or dft < 1 or rate <= 0 or not 0 <= lo < hi <= rate / 2:
        raise cx.error(f"needs num_mel_bins, dft_length, sample_rate > 0 and 0 <= lower < upper edge <= "
                       f"sample_rate / 2, got {n_mel}, {dft}, {rate}, {lo}, {hi}")
    out_t = to_tvmd(node.attr("output_datatype", 1))
    if out_t is None:
        raise cx.unsupported(f"output_datatype {onnx_type_name(node.attr('output_datatype', 1))}")
    mel_lo, mel_hi = (2595 * np.log10(1 + f / 700) for f in (lo, hi))
    step = (mel_hi - mel_lo) / (n_mel + 2)
    hz = 700 * (10 ** ((np.arange(n_mel + 2) * step + mel_lo) / 2595) - 1)
    edges = ((dft + 1) * hz // rate).astype(np.int64)
    w = np.zeros((dft // 2 + 1, n_mel))
    for i in range(n_mel):
        a, c, b = edges[i], edges[i + 1], edges[i + 2]
        if c == a:
            w[c, i] = 1
        else:
            w[a:c + 1, i] = (np.arange(a, c + 1) - a) / (c - a)
        if b > c:
            w[c:b, i] = (b - np.arange(c, b)) / (b - c)
    return cx.const(w.astype(T.to_numpy_dtype(out_t)))
