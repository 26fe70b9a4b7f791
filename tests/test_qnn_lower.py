"""Lowering qnn ops to relay integer arithmetic keeps every result bit for
bit: the qnn graph and the lowered graph run through the interpreter on
random operands, parameters, dtypes and attributes."""

import os
import sys

import numpy as np
from hypothesis import given, settings, strategies as st

sys.path.insert(0, os.path.dirname(__file__))
from qnn_util import f32, i32, rand_q, rand_scales, single_op  # noqa: E402

from tvmd.dialects.relay.interpreter import run_function  # noqa: E402
from tvmd.dialects.relay.passes.quantize.qnn_lower import QnnCanonicalize  # noqa: E402
from tvmd.ir.pass_manager import PassContext  # noqa: E402
from tvmd.ir.printer import print_module  # noqa: E402
from tvmd.ir.verifier import verify  # noqa: E402
from tvmd.parser import parse_module  # noqa: E402

FAST = settings(max_examples=30, deadline=None)
SEED = st.integers(0, 2 ** 32 - 1)


def lowered_equals(text, *args):
    """Run `text` before and after lowering; the results must be identical
    and no qnn op may remain."""
    m = parse_module(text, "t.relay")
    want = run_function(m, "main", *args)
    QnnCanonicalize().run(m, PassContext())
    verify(m)
    out = print_module(m)
    assert "qnn." not in out, out
    got = run_function(m, "main", *args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want, err_msg=out)
    return out


def zp(rng, dtype, n=None):
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    return i32(rng.integers(max(lo, -60), min(hi, 60) + 1, size=n if n else ()))


@given(SEED, st.sampled_from(["int8", "uint8", "int16", "int32"]), st.booleans(), st.booleans())
@FAST
def test_quantize_and_dequantize(seed, dtype, per_channel, zero_zp):
    rng = np.random.default_rng(seed)
    x = f32(rng.standard_normal((2, 4, 3)) * rng.uniform(0.1, 100))
    n = 4 if per_channel else None
    p = {"s": rand_scales(rng, n, 1e-3, 1.0), "z": i32(np.zeros(n or ())) if zero_zp else zp(rng, dtype, n)}
    lowered_equals(single_op("qnn.quantize", {"x": x}, p, {"axis": 1, "out_dtype": dtype}), x)
    q = rand_q(rng, x.shape, dtype)
    lowered_equals(single_op("qnn.dequantize", {"q": q}, p, {"axis": -2}), q)


@given(SEED, st.sampled_from(["int8", "uint8", "int16", "int32", "int64"]),
       st.sampled_from(["int8", "uint8", "int16", "int32"]), st.sampled_from(["None", "UPWARD", "TONEAREST"]),
       st.sampled_from(["None", "int64", "float32", "float64"]), st.sampled_from([None, "in", "out", "both"]))
@FAST
def test_requantize(seed, din, dout, rounding, compute, per_channel):
    rng = np.random.default_rng(seed)
    x = rand_q(rng, (3, 5), din)
    if din in ("int32", "int64"):
        x = (x // (1 << (8 * np.dtype(din).itemsize - 20))).astype(din)   # keep int64 products in range
    vec = lambda side: 5 if per_channel in (side, "both") else None  # noqa: E731
    p = {"si": rand_scales(rng, vec("in"), 1e-4, 10.0), "zi": zp(rng, din, vec("in")),
         "so": rand_scales(rng, vec("out"), 1e-4, 10.0), "zo": zp(rng, dout, vec("out"))}
    if rng.random() < 0.2:
        p["so"] = p["si"]                      # equal scales: the multiply is left out
    attrs = {"axis": -1, "rounding": rounding, "compute_dtype": compute, "out_dtype": dout}
    lowered_equals(single_op("qnn.requantize", {"x": x}, p, attrs), x)


@given(SEED, st.sampled_from(["int8", "uint8"]), st.sampled_from(["int8", "uint8"]), st.booleans(),
       st.booleans(), st.sampled_from(["NCHW", "NHWC"]))
@FAST
def test_conv2d(seed, dx, dw, zero_zps, per_channel, layout):
    rng = np.random.default_rng(seed)
    x = rand_q(rng, (1, 4, 5, 5), dx)
    w = rand_q(rng, (6, 2, 3, 3), dw)
    n = 6 if per_channel else None
    zx = i32(0) if zero_zps else zp(rng, dx)
    zw = i32(np.zeros(n or (), np.int32)) if zero_zps else zp(rng, dw, n)
    attrs = {"groups": 2, "strides": [1, 2], "padding": [1, 0, 1, 2]}
    if layout == "NHWC":
        x, w = x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0)
        attrs.update(data_layout="NHWC", kernel_layout="HWIO")
    p = {"w": w, "zx": zx, "zw": zw, "sx": f32(0.05), "sw": rand_scales(rng, n)}
    out = lowered_equals(single_op("qnn.conv2d", {"x": x}, p, attrs), x)
    if zero_zps and dx == dw:
        assert "subtract" not in out and 'out_dtype = "int32"' in out     # int8 straight into nn.conv2d


@given(SEED, st.sampled_from(["int8", "uint8"]), st.booleans())
@FAST
def test_dense_and_batch_matmul(seed, dtype, per_channel):
    rng = np.random.default_rng(seed)
    x, w = rand_q(rng, (3, 8), dtype), rand_q(rng, (4, 8), "int8")
    n = 4 if per_channel else None
    p = {"w": w, "zx": zp(rng, dtype), "zw": zp(rng, "int8", n), "sx": f32(0.1), "sw": rand_scales(rng, n)}
    lowered_equals(single_op("qnn.dense", {"x": x}, p), x)
    a, b = rand_q(rng, (2, 3, 8), dtype), rand_q(rng, (2, 8, 5), dtype)
    p = {"b": b, "za": zp(rng, dtype), "zb": zp(rng, dtype), "sa": f32(0.1), "sb": f32(0.3)}
    lowered_equals(single_op("qnn.batch_matmul", {"a": a}, p, {"transpose_b": False}), a)


@given(SEED, st.sampled_from(["qnn.add", "qnn.subtract", "qnn.mul"]), st.sampled_from(["int8", "uint8", "int32"]),
       st.booleans())
@FAST
def test_binary(seed, op, dtype, per_axis):
    rng = np.random.default_rng(seed)
    a, b = rand_q(rng, (2, 3, 4), dtype), rand_q(rng, (3, 1), dtype)
    if dtype == "int32":
        a, b = a // 4096, b // 4096
    n = 3 if per_axis else None
    p = {"b": b, "sa": rand_scales(rng, n, 0.01, 1), "za": zp(rng, dtype, n), "sb": rand_scales(rng, None, 0.01, 1),
         "zb": zp(rng, dtype), "so": rand_scales(rng, None, 0.01, 1), "zo": zp(rng, dtype)}
    lowered_equals(single_op(op, {"a": a}, p, {"lhs_axis": 1}), a)


@given(SEED, st.sampled_from(["int8", "uint8", "int32"]))
@FAST
def test_concatenate(seed, dtype):
    rng = np.random.default_rng(seed)
    a, b, c = rand_q(rng, (2, 3), dtype), rand_q(rng, (2, 1), dtype), rand_q(rng, (2, 2), dtype)
    p = {"b": b, "c": c, "sa": rand_scales(rng), "sb": rand_scales(rng), "sc": rand_scales(rng),
         "za": zp(rng, dtype), "zb": zp(rng, dtype), "zc": zp(rng, dtype), "so": rand_scales(rng), "zo": zp(rng, dtype)}
    lowered_equals(single_op("qnn.concatenate", {"a": a}, p, {"axis": 1}), a)


def test_dynamic_scalar_scale_lowers():
    text = """relay.func @main(%x: tensor<4xf32>, %s: tensor<f32>, %z: tensor<i32>) {
  %q = qnn.quantize(%x, %s, %z) {out_dtype = "uint8"}
  %d = qnn.dequantize(%q, %s, %z)
  return %d
}"""
    x = f32([0.3, -1.0, 2.5, 100.0])
    lowered_equals(text, x, f32(0.02), i32(128))


def test_requantize_with_a_computed_scale_is_an_error():
    from tvmd.ir.diagnostics import DiagnosticError
    text = """relay.func @main(%x: tensor<4xi8>, %s: tensor<f32>) {
  %z = constant dense<0> : tensor<i32>
  %r = qnn.requantize(%x, %s, %z, %s, %z)
  return %r
}"""
    m = parse_module(text, "t.relay")
    try:
        QnnCanonicalize().run(m, PassContext())
    except DiagnosticError as e:
        assert "input_scale must be a constant to lower qnn.requantize" in str(e)
    else:
        raise AssertionError("expected a diagnostic")
