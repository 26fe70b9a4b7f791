"""qnn operators: types and their errors, text round trip, and the numbers
(against the float formula within 1 LSB, and against TVM's fixed-point
definition written out with Python integers)."""

import math
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, os.path.dirname(__file__))
from qnn_util import f32, i32, rand_q, rand_scales, run_text, single_op  # noqa: E402

from tvmd.dialects.relay.ops import qnn_math as Q  # noqa: E402
from tvmd.ir.diagnostics import DiagnosticError  # noqa: E402
from tvmd.ir.printer import print_module  # noqa: E402
from tvmd.parser import parse_module  # noqa: E402

FAST = settings(max_examples=40, deadline=None)


# -- TVM's fixed point, written out with Python integers --------------------------------------

def tvm_multiplier_shift(multiplier):
    """GetFixedPointMultiplierShift as src/relay/qnn/utils.cc states it."""
    if multiplier == 0:
        return 0, 0
    sig, exp = math.frexp(multiplier)
    q = int(math.floor(sig * 2 ** 31 + 0.5))     # std::round on a positive value
    if q == 2 ** 31:
        q //= 2
        exp += 1
    return q, exp


def tvm_fixed_point_multiply(x: int, multiplier: float, rounding: str) -> int:
    """FixedPointMultiply / FixedPointMultiplyToNearest on one int."""
    m, shift = tvm_multiplier_shift(multiplier)
    left, right = max(shift, 0), max(-shift, 0)
    total = right + 31
    p = (x << left) * m
    p += 1 << (total - 1)
    if rounding == "TONEAREST" and p - (1 << (total - 1)) < 0:
        p -= 1
    return p >> total


@given(st.floats(1e-6, 1e4))
@FAST
def test_multiplier_shift_represents_the_multiplier(mult):
    m, shift = Q.multiplier_shift(mult)
    assert 2 ** 30 <= m < 2 ** 31
    assert abs(m * 2.0 ** (shift - 31) - mult) <= mult * 2.0 ** -30


@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(["UPWARD", "TONEAREST"]))
@FAST
def test_requantize_is_tvms_fixed_point_multiply(seed, rounding):
    rng = np.random.default_rng(seed)
    x = rand_q(rng, (64,), np.int32) // rng.integers(1, 1 << 16)
    s_in, s_out = rand_scales(rng, lo=1e-4, hi=10.0), rand_scales(rng, lo=1e-4, hi=10.0)
    mult = float(np.float64(s_in) / np.float64(s_out))
    x = x[np.abs(x.astype(np.float64) * mult) < 2 ** 30]     # int64 intermediates wrap beyond, as in TVM
    got = Q.requantize(x, s_in, 0, s_out, 0, 0, rounding, "int64", np.int32)
    want = [tvm_fixed_point_multiply(int(v), mult, rounding) for v in x]
    assert got.tolist() == want


def test_rounding_modes_at_ties():
    # -3 * 0.5 = -1.5: UPWARD rounds toward +inf, TONEAREST away from zero
    x = np.array([-3, 3, -1, 1, -5], np.int32)
    up = Q.requantize(x, f32(0.5), 0, f32(1.0), 0, 0, "UPWARD", "int64", np.int32)
    near = Q.requantize(x, f32(0.5), 0, f32(1.0), 0, 0, "TONEAREST", "int64", np.int32)
    assert up.tolist() == [-1, 2, 0, 1, -2]
    assert near.tolist() == [-2, 2, -1, 1, -3]
    for cd in ("float32", "float64"):
        assert Q.requantize(x, f32(0.5), 0, f32(1.0), 0, 0, "UPWARD", cd, np.int32).tolist() == up.tolist()
        assert Q.requantize(x, f32(0.5), 0, f32(1.0), 0, 0, "TONEAREST", cd, np.int32).tolist() == near.tolist()


# -- requantize through the op, per-tensor and per-channel ---------------------------------------

REQUANT = st.tuples(st.integers(0, 2 ** 32 - 1), st.sampled_from(["int8", "uint8", "int32"]),
                    st.sampled_from(["int8", "uint8", "int32"]), st.sampled_from(["None", "UPWARD", "TONEAREST"]),
                    st.sampled_from(["None", "int64", "float32", "float64"]), st.booleans())


def requant_case(seed, din, dout, rounding, compute, per_channel):
    rng = np.random.default_rng(seed)
    shape = (2, 5, 3)
    x = rand_q(rng, shape, din)
    if din == "int32":
        x = (x // 65536).astype(np.int32)
    n = 5 if per_channel else None
    info_in, info_out = np.iinfo(din), np.iinfo(dout)
    zp_range = (max(info_in.min, -100), min(info_in.max, 100))
    params = {
        "s_in": rand_scales(rng, n), "z_in": i32(rng.integers(*zp_range, size=n if n else ())),
        "s_out": rand_scales(rng, n), "z_out": i32(rng.integers(max(info_out.min, -100), min(info_out.max, 100),
                                                                  size=n if n else ())),
    }
    attrs = {"axis": 1, "rounding": rounding, "compute_dtype": compute, "out_dtype": dout}
    return x, params, attrs


@given(REQUANT)
@FAST
def test_requantize_within_one_lsb_of_the_float_formula(case):
    x, params, attrs = requant_case(*case)
    text = single_op("qnn.requantize", {"x": x}, params, attrs)
    got = run_text(text, x)
    assert got.dtype == np.dtype(attrs["out_dtype"])
    ax = lambda a: a.reshape(1, -1, 1) if a.ndim else a  # noqa: E731
    real = ax(params["z_out"]) + (ax(params["s_in"]).astype(np.float64) / ax(params["s_out"])) * \
        (x.astype(np.float64) - ax(params["z_in"]))
    lo, hi = Q.qrange(attrs["out_dtype"])
    want = np.clip(np.round(real), lo, hi)
    # float32 compute rounds three times (multiplier, product, zero-point add), each
    # within half an ulp of the value: at |real| ~ 1e7 that alone is a unit or more.
    tol = 1 + (np.abs(real) * 4 * 2.0 ** -24 if attrs["compute_dtype"] == "float32" else 0)
    assert np.all(np.abs(got.astype(np.float64) - want) <= tol)


def test_requantize_text_round_trip_and_defaults():
    text = """relay.func @main(%x: tensor<4x3xi32>) -> tensor<4x3xi8> {
  %s = constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %z = constant dense<0> : tensor<i32>
  %so = constant dense<0.1> : tensor<f32>
  %r = qnn.requantize(%x, %s, %z, %so, %z) {axis = 1, rounding = "TONEAREST"} : tensor<4x3xi8>
  return %r
}
"""
    m = parse_module(text, "t.relay")
    assert print_module(m) == text
    op = [o for o in m.body.first.body.ops if o.name == "relay.qnn.requantize"][0]
    assert op.effective_rounding == "TONEAREST" and op.effective_compute_dtype == "int64"


# -- quantize / dequantize ------------------------------------------------------------------------

@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(["int8", "uint8", "int16", "int32"]), st.booleans())
@FAST
def test_quantize_dequantize(seed, dtype, per_channel):
    rng = np.random.default_rng(seed)
    x = f32(rng.standard_normal((3, 4)) * 3)
    n = 4 if per_channel else None
    s = rand_scales(rng, n, 1e-2, 1.0)
    lo, hi = Q.qrange(dtype)
    z = i32(rng.integers(max(lo, -20), min(hi, 20) + 1, size=n if n else ()))
    q = run_text(single_op("qnn.quantize", {"x": x}, {"s": s, "z": z}, {"axis": 1, "out_dtype": dtype}), x)
    assert q.dtype == np.dtype(dtype)
    want = np.clip(np.round(x.astype(np.float64) / s) + z, lo, hi)     # half to even, as ONNX
    assert np.max(np.abs(q - want)) <= 1 and np.mean(q == want) > 0.99
    d = run_text(single_op("qnn.dequantize", {"q": q}, {"s": s, "z": z}, {"axis": 1}), q)
    assert d.dtype == np.float32
    np.testing.assert_allclose(d, (q.astype(np.float64) - z) * s, rtol=1e-6, atol=1e-6)
    inside = (want > lo) & (want < hi)
    assert np.all(np.abs(d - x)[inside] <= np.broadcast_to(s, x.shape)[inside] / 2 + 1e-6)


def test_quantize_rounds_half_to_even():
    x = f32([0.5, 1.5, 2.5, -0.5, -1.5, 300.0, -300.0])
    q = run_text(single_op("qnn.quantize", {"x": x}, {"s": f32(1.0), "z": i32(0)}), x)
    assert q.tolist() == [0, 2, 2, 0, -2, 127, -128]


# -- products -----------------------------------------------------------------------------------------

def conv_ref(x, w, strides, padding):
    """float64 NCHW/OIHW convolution through im2col, independent of the ops."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh = (h + 2 * padding - kh) // strides + 1
    ow = (wd + 2 * padding - kw) // strides + 1
    cols = np.stack([xp[:, :, i:i + strides * oh:strides, j:j + strides * ow:strides]
                     for i in range(kh) for j in range(kw)], axis=2)          # n c k oh ow
    return np.einsum("nckhw,ock->nohw", cols, w.reshape(o, c, kh * kw))


@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(["int8", "uint8"]), st.sampled_from(["int8", "uint8"]),
       st.booleans(), st.sampled_from(["NCHW", "NHWC"]))
@FAST
def test_qnn_conv2d_is_exact(seed, dx, dw, per_channel, layout):
    rng = np.random.default_rng(seed)
    x = rand_q(rng, (1, 3, 6, 6), dx)
    w = rand_q(rng, (4, 3, 3, 3), dw)
    zx = i32(rng.integers(-5, 6))
    zw = i32(rng.integers(-5, 6, size=4)) if per_channel else i32(rng.integers(-5, 6))
    sw = rand_scales(rng, 4 if per_channel else None)
    attrs = {"strides": [2, 2], "padding": [1, 1, 1, 1]}
    xi, wi = x, w
    if layout == "NHWC":
        xi, wi = x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0)
        attrs.update(data_layout="NHWC", kernel_layout="HWIO")
    text = single_op("qnn.conv2d", {"x": xi}, {"w": wi, "zx": zx, "zw": zw, "sx": f32(0.5), "sw": sw}, attrs)
    got = run_text(text, xi)
    assert got.dtype == np.int32
    want = conv_ref(x.astype(np.float64) - zx, w.astype(np.float64) - zw.reshape(-1, 1, 1, 1), 2, 1)
    if layout == "NHWC":
        want = want.transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(got, want)


def test_qnn_dense_and_batch_matmul_are_exact():
    rng = np.random.default_rng(0)
    x, w = rand_q(rng, (3, 7), "uint8"), rand_q(rng, (5, 7), "int8")
    zw = i32(rng.integers(-3, 4, size=5))
    got = run_text(single_op("qnn.dense", {"x": x}, {"w": w, "zx": i32(128), "zw": zw, "sx": f32(0.1),
                                                      "sw": f32(0.2)}), x)
    np.testing.assert_array_equal(got, (x.astype(np.int64) - 128) @ (w.astype(np.int64) - zw[:, None]).T)
    a, b = rand_q(rng, (2, 3, 4), "int8"), rand_q(rng, (2, 5, 4), "int8")
    got = run_text(single_op("qnn.batch_matmul", {"a": a}, {"b": b, "za": i32(1), "zb": i32(-2), "sa": f32(0.1),
                                                            "sb": f32(0.2)}), a)
    np.testing.assert_array_equal(got, (a.astype(np.int64) - 1) @ (b.astype(np.int64) + 2).transpose(0, 2, 1))


# -- add, subtract, mul, concatenate ---------------------------------------------------------------------

@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(["qnn.add", "qnn.subtract", "qnn.mul"]),
       st.sampled_from(["int8", "uint8"]))
@FAST
def test_binary_ops_within_two_lsb_of_the_float_formula(seed, op, dtype):
    rng = np.random.default_rng(seed)
    a, b = rand_q(rng, (3, 4), dtype), rand_q(rng, (4,), dtype)
    lo, hi = Q.qrange(dtype)
    mid = (lo + hi) // 2
    p = {"sa": rand_scales(rng, None, 0.01, 0.1), "za": i32(mid + rng.integers(-10, 10)),
         "sb": rand_scales(rng, None, 0.01, 0.1), "zb": i32(mid + rng.integers(-10, 10)),
         "so": rand_scales(rng, None, 0.02, 0.2), "zo": i32(mid + rng.integers(-10, 10))}
    got = run_text(single_op(op, {"a": a}, {"b": b, **p}), a)
    ra = (a.astype(np.float64) - p["za"]) * p["sa"]
    rb = (b.astype(np.float64) - p["zb"]) * p["sb"]
    real = {"qnn.add": ra + rb, "qnn.subtract": ra - rb, "qnn.mul": ra * rb}[op]
    want = np.clip(np.round(real / p["so"]) + p["zo"], lo, hi)
    # add and subtract round each side once and the sum again: 2 LSB at most
    assert np.max(np.abs(got.astype(np.float64) - want)) <= 2


def test_concatenate_requantizes_each_input():
    a = np.array([[10, -20]], np.int8)
    b = np.array([[7, 100]], np.int8)
    text = single_op("qnn.concatenate", {"a": a}, {"b": b, "sa": f32(0.5), "sb": f32(0.25), "za": i32(0),
                                                   "zb": i32(2), "so": f32(0.5), "zo": i32(1)}, {"axis": 1})
    got = run_text(text, a)
    # a: same scale, zero point 0 -> 1: a + 1; b: (b - 2) * 0.5 + 1, rounded upward
    assert got.tolist() == [[11, -19, 4, 50]]


def test_simulated_quantize():
    x = f32([0.26, -3.0, 100.0, 0.1])
    p = {"s": f32(0.5), "lo": f32(-127.0), "hi": f32(127.0)}
    got = run_text(single_op("annotation.simulated_quantize", {"x": x}, p, {"kind": "input"}), x)
    assert got.tolist() == [0.5, -3.0, 63.5, 0.0]
    same = run_text(single_op("annotation.simulated_quantize", {"x": x}, p, {"kind": "identity"}), x)
    np.testing.assert_array_equal(same, x)


# -- type errors -----------------------------------------------------------------------------------------

ERRORS = [
    ("qnn.quantize", {"x": np.zeros((2, 3), np.int8)}, {"s": f32(1), "z": i32(0)}, {},
     "data must be a floating-point tensor"),
    ("qnn.quantize", {"x": f32(np.zeros((2, 3)))}, {"s": f32(1), "z": np.int8(0)}, {},
     "output_zero_point must be a tensor of i32"),
    ("qnn.quantize", {"x": f32(np.zeros((2, 3)))}, {"s": f32([1, 2]), "z": i32(0)}, {"axis": 1},
     "output_scale has 2 values but the data has 3 along axis 1"),
    ("qnn.quantize", {"x": f32(np.zeros((2, 3)))}, {"s": f32([1, 2, 3]), "z": i32(0)}, {"axis": 2},
     "axis 2 is out of range for rank 2"),
    ("qnn.quantize", {"x": f32(np.zeros((2, 3)))}, {"s": f32(1), "z": i32(0)}, {"out_dtype": "float32"},
     'out_dtype "float32" must be one of int8, uint8, int16, uint16, int32'),
    ("qnn.requantize", {"x": f32(np.zeros(3))}, {"s": f32(1), "z": i32(0), "s2": f32(1), "z2": i32(0)}, {},
     "data must be one of int8, uint8, int16, int32, int64"),
    ("qnn.requantize", {"x": np.zeros(3, np.int8)}, {"s": f32(1), "z": i32(0), "s2": f32(1), "z2": i32(0)},
     {"rounding": "DOWN"}, "attribute 'rounding' must be one of"),
    ("qnn.conv2d", {"x": np.zeros((1, 3, 4, 4), np.int8)},
     {"w": np.zeros((2, 3, 3, 3), np.int8), "zx": i32(0), "zw": i32([0, 0, 0]), "sx": f32(1), "sw": f32(1)}, {},
     "kernel_zero_point has 3 values but the data has 2 along output channels"),
    ("qnn.conv2d", {"x": np.zeros((1, 3, 4, 4), np.int8)},
     {"w": np.zeros((2, 4, 3, 3), np.int8), "zx": i32(0), "zw": i32(0), "sx": f32(1), "sw": f32(1)}, {},
     "data has 3 channels but the kernel takes 4"),
    ("qnn.dense", {"x": np.zeros((1, 3), np.int8)},
     {"w": np.zeros((2, 3), np.int8), "zx": i32([0, 0]), "zw": i32(0), "sx": f32(1), "sw": f32(1)}, {},
     "input_zero_point must be a scalar"),
    ("qnn.add", {"a": np.zeros(3, np.int8)},
     {"b": np.zeros(3, np.uint8), "s": f32(1), "z": i32(0), "s2": f32(1), "z2": i32(0), "so": f32(1),
      "zo": i32(0)}, {}, "lhs and rhs must have one dtype"),
    ("qnn.concatenate", {"a": np.zeros((1, 2), np.int8)}, {"s": f32(1), "z": i32(0), "s2": f32(1)}, {},
     "expects 3n + 2 operands"),
]


@pytest.mark.parametrize("op,inputs,params,attrs,message", ERRORS, ids=[e[4][:30] for e in ERRORS])
def test_type_errors_are_diagnostics(op, inputs, params, attrs, message):
    with pytest.raises(DiagnosticError) as e:
        parse_module(single_op(op, inputs, params, attrs), "t.relay")
    assert message in str(e.value)


def test_non_positive_scale_is_reported_at_the_op():
    x = f32([1.0])
    with pytest.raises(DiagnosticError, match="scales must be positive"):
        run_text(single_op("qnn.quantize", {"x": x}, {"s": f32(0.0), "z": i32(0)}), x)
