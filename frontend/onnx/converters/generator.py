"""Tensors made from nothing or from a shape: Constant, ConstantOfShape,
Range, EyeLike.

Constant becomes a relay.constant whose resource key is the output's name.
EyeLike depends on its input's static shape only, so it is a constant
too; ConstantOfShape and Range build relay's full / arange from values
known at import time.
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
    shape = cx.static_ints(node.input(0), "shape")
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
    return cx.op("full", fill_value=cx.const(value.reshape(())), shape=shape, dtype=dtype)


@converter("Range", 11)
def range_node(cx, node):
    """arange; where the limit is a dimension only known at run time
    (Shape -> Gather of a '?' axis) and the range starts at 0 by 1,
    arange_like of that tensor: one build serves every length; other
    bounds known only at run time: dyn.arange."""
    from ..symbolic import Dim, elements
    start, limit, delta = node.input(0), node.input(1), node.input(2)
    if cx.static(limit, bound=False) is None:
        s, d = cx.static(start, bound=False), cx.static(delta, bound=False)
        lim = elements(cx, limit)
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
