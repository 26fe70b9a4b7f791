"""TE computes of relay's qnn operators and annotation.simulated_quantize
(conversion/relay_to_te/topi_qnn.py) against the ops' numpy compute(), bit
for bit: unscheduled, default-scheduled, and compiled by LLVM
(tests/topi_check.py)."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from qnn_util import attr_text, const_line, f32, i32, rand_q, rand_scales, single_op, ttype  # noqa: E402
from topi_check import check, prim  # noqa: E402

from tvmd.ir.diagnostics import DiagnosticError  # noqa: E402
from tvmd.parser import parse_module  # noqa: E402


def qcheck(op, inputs, params, attrs=None):
    """check() of one qnn op: `inputs` (name -> array) become parameters,
    `params` (name -> array) relay constants; the result type is inferred."""
    m = parse_module(single_op(op, inputs, params, attrs))
    rtype = list(m.body.first.body.ops)[-2].results[0].type
    operands = ", ".join(f"%{n}" for n in list(inputs) + list(params))
    body = [const_line(n, a).strip() for n, a in params.items()]
    body.append(f"%r = {op}({operands}){attr_text(attrs)} : {rtype}")
    return check(prim([(n, ttype(a.shape, a.dtype)) for n, a in inputs.items()], body),
                 inputs=list(inputs.values()), rtol=1e-6, atol=1e-6)


rng = np.random.default_rng(7)


@pytest.mark.parametrize("out", ["int8", "uint8", "int32"])
@pytest.mark.parametrize("per_axis", [False, True], ids=["tensor", "axis"])
def test_quantize(out, per_axis):
    x = (rng.standard_normal((2, 3, 4)) * 40).astype(np.float32)
    x[0, 0, :2] = [0.5, 1.5]   # ties: half to even
    s = rand_scales(rng, 3, 0.1, 1.0) if per_axis else f32(1.0)
    z = i32([1, -3, 2]) if per_axis else i32(3 if out == "uint8" else -2)
    qcheck("qnn.quantize", {"x": x}, {"s": s, "z": z}, {"axis": 1, "out_dtype": out})


@pytest.mark.parametrize("dt", ["int8", "uint8", "int32"])
def test_dequantize(dt):
    q = rand_q(rng, (3, 5), dt)
    qcheck("qnn.dequantize", {"q": q}, {"s": rand_scales(rng, 5), "z": i32(rng.integers(-5, 5, 5))}, {"axis": -1})


def test_dequantize_runtime_params():
    """Scale and zero point as function parameters, read at run time."""
    inputs = {"q": rand_q(rng, (2, 4), "int8"), "s": rand_scales(rng, 4), "z": i32(rng.integers(-3, 3, 4))}
    qcheck("qnn.dequantize", inputs, {}, {"axis": 1})


@pytest.mark.parametrize("compute_dtype", ["None", "float32", "float64"])
@pytest.mark.parametrize("rounding", ["UPWARD", "TONEAREST"])
@pytest.mark.parametrize("per_axis", [False, True], ids=["tensor", "axis"])
def test_requantize(rounding, compute_dtype, per_axis):
    q = rand_q(rng, (2, 5, 3), "int32") // 1024
    s_in = rand_scales(rng, 5, 1e-3, 1e-1) if per_axis else f32(0.037)
    params = {"s_in": s_in, "z_in": i32(3), "s_out": f32(0.25), "z_out": i32(-4)}
    qcheck("qnn.requantize", {"q": q}, params,
           {"axis": 1, "rounding": rounding, "compute_dtype": compute_dtype, "out_dtype": "int8"})


def test_requantize_ties_and_left_shift():
    """Multiplier > 1 (a left shift) and values landing on x.5."""
    q = i32(np.arange(-12, 12).reshape(4, 6))
    for rounding in ("UPWARD", "TONEAREST"):
        qcheck("qnn.requantize", {"q": q}, {"s_in": f32(3.0), "z_in": i32(0), "s_out": f32(2.0), "z_out": i32(0)},
               {"rounding": rounding, "out_dtype": "int16"})


def test_requantize_runtime_scale_is_a_diagnostic():
    text = prim([("q", "tensor<4xi32>"), ("s", "tensor<f32>")],
                ["%z = constant dense<0> : tensor<i32>",
                 "%r = qnn.requantize(%q, %s, %z, %s, %z) {out_dtype = \"int8\"} : tensor<4xi8>"])
    with pytest.raises(DiagnosticError, match="scales of 'qnn.requantize' as constants"):
        check(text)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("per_axis", [False, True], ids=["tensor", "axis"])
def test_qnn_conv2d(layout, per_axis):
    nhwc = layout == "NHWC"
    x = rand_q(rng, (1, 5, 5, 4) if nhwc else (1, 4, 5, 5), "int8")
    w = rand_q(rng, (3, 3, 2, 6) if nhwc else (6, 2, 3, 3), "int8")
    zw = i32(rng.integers(-4, 4, 6)) if per_axis else i32(2)
    sw = rand_scales(rng, 6) if per_axis else f32(0.1)
    attrs = {"padding": [1, 0, 2, 1], "strides": [2, 1], "groups": 2}
    if nhwc:
        attrs.update(data_layout="NHWC", kernel_layout="HWIO")
    qcheck("qnn.conv2d", {"x": x, "w": w}, {"zx": i32(-3), "zw": zw, "sx": f32(0.5), "sw": sw}, attrs)


@pytest.mark.parametrize("dt", ["int8", "uint8"])
def test_qnn_dense(dt):
    x, w = rand_q(rng, (3, 7), dt), rand_q(rng, (4, 7), dt)
    qcheck("qnn.dense", {"x": x, "w": w},
           {"zx": i32(5), "zw": i32(rng.integers(0, 9, 4)), "sx": f32(0.5), "sw": rand_scales(rng, 4)})


@pytest.mark.parametrize("ta,tb", [(False, True), (True, False)])
def test_qnn_batch_matmul(ta, tb):
    x = rand_q(rng, (2, 6, 3) if ta else (2, 3, 6), "int8")
    y = rand_q(rng, (1, 4, 6) if tb else (1, 6, 4), "int8")
    qcheck("qnn.batch_matmul", {"x": x, "y": y}, {"zx": i32(-1), "zy": i32(4), "sx": f32(0.5), "sy": f32(0.25)},
           {"transpose_a": ta, "transpose_b": tb})


BIN = {"ls": f32(0.05), "lz": i32(3), "rs": f32(0.11), "rz": i32(-7), "os": f32(0.09), "oz": i32(2)}


@pytest.mark.parametrize("op", ["qnn.add", "qnn.subtract", "qnn.mul"])
@pytest.mark.parametrize("dt", ["int8", "uint8"])
def test_qnn_binary(op, dt):
    params = dict(BIN)
    if dt == "uint8":
        params.update(lz=i32(120), rz=i32(130), oz=i32(128))
    qcheck(op, {"a": rand_q(rng, (2, 3, 4), dt), "b": rand_q(rng, (3, 1), dt)}, params)


@pytest.mark.parametrize("op", ["qnn.add", "qnn.mul"])
def test_qnn_binary_per_axis(op):
    params = dict(BIN, ls=rand_scales(rng, 3, 0.01, 0.2), lz=i32([1, -2, 3]))
    qcheck(op, {"a": rand_q(rng, (2, 3, 4), "int8"), "b": rand_q(rng, (4,), "int8")}, params, {"lhs_axis": 1})


def test_qnn_concatenate():
    a, b, c = rand_q(rng, (2, 3), "int8"), rand_q(rng, (2, 1), "int8"), rand_q(rng, (2, 4), "int8")
    params = {"sa": f32(0.1), "sb": f32(0.7), "sc": f32(0.05), "za": i32(1), "zb": i32(-3), "zc": i32(0),
              "so": f32(0.2), "zo": i32(5)}
    qcheck("qnn.concatenate", {"a": a, "b": b, "c": c}, params, {"axis": 1})


@pytest.mark.parametrize("kind", ["input", "identity"])
@pytest.mark.parametrize("per_axis", [False, True], ids=["tensor", "axis"])
def test_simulated_quantize(kind, per_axis):
    x = (rng.standard_normal((2, 3, 4)) * 3).astype(np.float32)
    s = rand_scales(rng, 3, 0.05, 0.3) if per_axis else f32(0.125)
    qcheck("annotation.simulated_quantize", {"x": x}, {"s": s, "lo": f32(-20.0), "hi": f32(15.0)},
           {"kind": kind, "axis": 1})
