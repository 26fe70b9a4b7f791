"""Helpers for the relay operator tests: build one op on typed block
arguments (its type relation runs), evaluate its compute, check the arrays
against the inferred type, and run text through the parser and interpreter."""

import numpy as np
import pytest

import tvmd.dialects.relay.ops  # noqa: F401  (registers the ops)
from tvmd.dialects.relay.interpreter import run_function
from tvmd.ir import types as T
from tvmd.ir.core import OP_CLASSES, Block
from tvmd.ir.diagnostics import DiagnosticError
from tvmd.parser import parse_module

RNG = np.random.default_rng(0)


def tt(shape, dtype="f32"):
    """A tensor type; `shape` entries may be None (dynamic)."""
    return T.TensorType(shape, T.parse_type(dtype))


def build(name, types, **attrs):
    """Relay op `name` on block arguments of `types`, its result type inferred."""
    b = Block(types)
    return OP_CLASSES["relay." + name].build(*b.args, **attrs)


def infer(name, types, **attrs):
    return build(name, types, **attrs).results[0].type


def type_error(name, types, match, **attrs):
    """The op must be rejected with a DiagnosticError matching `match`."""
    with pytest.raises(DiagnosticError, match=match):
        op = build(name, types, **attrs)
        op.verify()


def array_type(a):
    return T.TensorType(a.shape, T.from_numpy_dtype(a.dtype))


def check(out, t):
    """`out` has exactly the shape and dtype of type `t` (or each field of a tuple)."""
    if isinstance(t, T.TupleType):
        assert isinstance(out, tuple) and len(out) == len(t.types)
        for o, ft in zip(out, t.types):
            check(o, ft)
        return
    out = np.asarray(out)
    assert out.dtype == t.dtype, (out.dtype, t)
    assert len(out.shape) == t.rank and all(w is None or w == g for g, w in zip(out.shape, t.shape)), (out.shape, t)


def run(name, *arrays, **attrs):
    """Compute op `name` on `arrays`; the result matches the inferred type."""
    arrays = [np.asarray(a) for a in arrays]
    op = build(name, [array_type(a) for a in arrays], **attrs)
    out = op.compute(*arrays)
    check(out, op.results[0].type)
    return out


def rand(*shape, dtype=np.float32, low=-2.0, high=2.0):
    if np.issubdtype(np.dtype(dtype), np.integer):
        return RNG.integers(int(low), int(high), size=shape).astype(dtype)
    return RNG.uniform(low, high, size=shape).astype(dtype)


def run_text(src, *arrays):
    """Parse a module and run its @main in the interpreter."""
    return run_function(parse_module(src), "main", *arrays)


def close(a, b, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=rtol, atol=atol)


def ort_run(op_type, inputs, opset=18, n_out=1, out_dtype=np.float32, **attrs):
    """One ONNX node run by onnxruntime: the reference where numerics are
    subtle (resize, pools with ceil_mode, ...).  `inputs` is a list of
    arrays (None for an omitted optional input)."""
    import onnxruntime as ort
    from onnx import helper

    names, feeds, vinfo = [], {}, []
    for k, a in enumerate(inputs):
        if a is None:
            names.append("")
            continue
        name = f"in{k}"
        names.append(name)
        feeds[name] = a
        vinfo.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape))
    outs = [f"out{k}" for k in range(n_out)]
    node = helper.make_node(op_type, names, outs, **attrs)
    dts = out_dtype if isinstance(out_dtype, (list, tuple)) else [out_dtype] * n_out
    graph = helper.make_graph([node], "g", vinfo,
                              [helper.make_tensor_value_info(o, helper.np_dtype_to_tensor_dtype(np.dtype(d)), None)
                               for o, d in zip(outs, dts)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    res = sess.run(None, feeds)
    return res[0] if n_out == 1 else res
