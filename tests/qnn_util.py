"""Helpers for the qnn and quantize tests: relay text for single qnn ops
with numpy-chosen parameters, run through the reference interpreter."""

import numpy as np

from tvmd.dialects.relay.interpreter import run_function
from tvmd.parser import parse_module

MLIR = {"int8": "i8", "uint8": "ui8", "int16": "i16", "uint16": "ui16", "int32": "i32", "int64": "i64",
        "float32": "f32", "float64": "f64", "float16": "f16"}


def ttype(shape, dtype):
    return "tensor<" + "".join(f"{d}x" for d in shape) + MLIR[np.dtype(dtype).name] + ">"


def literal(a):
    a = np.asarray(a)
    if a.ndim == 0:
        v = a.item()
        return repr(float(v)) if isinstance(v, float) else str(int(v))
    return "[" + ", ".join(literal(x) for x in a) + "]"


def const_line(name, arr):
    arr = np.asarray(arr)
    return f"  %{name} = constant dense<{literal(arr)}> : {ttype(arr.shape, arr.dtype)}"


def attr_text(attrs):
    if not attrs:
        return ""
    parts = []
    for k, v in attrs.items():
        if isinstance(v, str):
            parts.append(f'{k} = "{v}"')
        elif isinstance(v, bool):
            parts.append(f"{k} = {'true' if v else 'false'}")
        elif isinstance(v, (list, tuple)):
            parts.append(f"{k} = [{', '.join(map(str, v))}]")
        else:
            parts.append(f"{k} = {v}")
    return " {" + ", ".join(parts) + "}"


def single_op(op, inputs, params, attrs=None):
    """Relay text of @main applying `op` to the parameters `inputs` (name ->
    array, become function arguments) and the constants `params` (name ->
    array), operands in the order inputs then params."""
    args = ", ".join(f"%{n}: {ttype(a.shape, a.dtype)}" for n, a in inputs.items())
    lines = [f"relay.func @main({args}) {{"]
    lines += [const_line(n, a) for n, a in params.items()]
    operands = ", ".join(f"%{n}" for n in list(inputs) + list(params))
    lines.append(f"  %r = {op}({operands}){attr_text(attrs)}")
    lines.append("  return %r")
    lines.append("}")
    return "\n".join(lines)


def run_text(text, *args):
    return run_function(parse_module(text, "t.relay"), "main", *args)


def f32(x):
    return np.asarray(x, np.float32)


def i32(x):
    return np.asarray(x, np.int32)


def rand_q(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, size=shape).astype(dtype)


def rand_scales(rng, n=None, lo=1e-3, hi=1.0):
    """Log-uniform float32 scales: one (a scalar) or n."""
    v = np.exp(rng.uniform(np.log(lo), np.log(hi), size=n if n else ()))
    return f32(v)
