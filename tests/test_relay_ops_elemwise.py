"""Elementwise and broadcasting relay ops: compute against numpy formulas
written out independently, type relations (broadcasting, dynamic dims,
dtypes), and the errors."""

import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from relay_ops_helpers import close, infer, rand, run, run_text, tt, type_error  # noqa: E402

# -- binary ------------------------------------------------------------------------------

FLOAT_BINARY = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b,
    "power": lambda a, b: np.abs(a) ** b,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "floor_divide": lambda a, b: np.floor(a / b),
    "floor_mod": lambda a, b: a - np.floor(a / b) * b,
    "mod": lambda a, b: a - np.trunc(a / b) * b,
}


@pytest.mark.parametrize("name", sorted(FLOAT_BINARY))
def test_float_binary_broadcasts(name):
    a, b = rand(2, 1, 4, low=0.5), rand(3, 1, low=0.5)
    if name == "power":
        a = np.abs(a)
    b = np.where(np.abs(b) < 0.1, 0.5, b).astype(np.float32)
    close(run(name, a, b), FLOAT_BINARY[name](a.astype(np.float64), b.astype(np.float64)), rtol=1e-4, atol=1e-4)


def c_div(a, b):
    """C's truncating division, one element at a time."""
    return np.array([int(x / y) for x, y in zip(a.ravel(), b.ravel())]).reshape(a.shape)


def test_integer_division_truncates_and_floors():
    a = np.array([7, -7, 7, -7, 0, 5], np.int32)
    b = np.array([2, 2, -2, -2, 3, -5], np.int32)
    assert run("divide", a, b).tolist() == c_div(a, b).tolist()
    assert run("mod", a, b).tolist() == (a - c_div(a, b) * b).tolist()
    assert run("floor_divide", a, b).tolist() == [math.floor(x / y) for x, y in zip(a, b)]
    assert run("floor_mod", a, b).tolist() == [x - math.floor(x / y) * y for x, y in zip(a, b)]
    assert run("power", np.array([2, 3, 2], np.int32), np.array([3, 2, -1], np.int32)).tolist() == [8, 9, 0]


def test_shifts_and_bitwise():
    a = np.array([1, -8, 255, 6], np.int32)
    s = np.array([3, 1, 4, 0], np.int32)
    assert run("left_shift", a, s).tolist() == [x * 2 ** k for x, k in zip(a.tolist(), s.tolist())]
    assert run("right_shift", a, s).tolist() == [x // 2 ** k for x, k in zip(a.tolist(), s.tolist())]
    assert run("bitwise_and", a, s).tolist() == [x & y for x, y in zip(a.tolist(), s.tolist())]
    assert run("bitwise_or", a, s).tolist() == [x | y for x, y in zip(a.tolist(), s.tolist())]
    assert run("bitwise_xor", a, s).tolist() == [x ^ y for x, y in zip(a.tolist(), s.tolist())]
    assert run("bitwise_not", a).tolist() == [~x for x in a.tolist()]
    type_error("left_shift", [tt((2,)), tt((2,))], "expects integer operands")


@pytest.mark.parametrize("name,fn", [("equal", lambda a, b: a == b), ("not_equal", lambda a, b: a != b),
                                     ("less", lambda a, b: a < b), ("less_equal", lambda a, b: a <= b),
                                     ("greater", lambda a, b: a > b), ("greater_equal", lambda a, b: a >= b)])
def test_comparisons_give_booleans(name, fn):
    a = rand(3, 4, dtype=np.int32, low=-2, high=3)
    b = rand(4, dtype=np.int32, low=-2, high=3)
    out = run(name, a, b)
    assert out.dtype == np.bool_ and (out == fn(a, b)).all()
    assert str(infer(name, [tt((None, 4)), tt((4,))])) == "tensor<?x4xi1>"


def test_logical_ops():
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    assert run("logical_and", a, b).tolist() == [True, False, False, False]
    assert run("logical_or", a, b).tolist() == [True, True, True, False]
    assert run("logical_xor", a, b).tolist() == [False, True, True, False]
    assert run("logical_not", a).tolist() == [False, False, True, True]


def test_broadcast_type_relation():
    assert str(infer("add", [tt((2, None, 4)), tt((3, 1))])) == "tensor<2x3x4xf32>"
    assert str(infer("add", [tt((None, 1)), tt((1, None))])) == "tensor<?x?xf32>"
    assert str(infer("multiply", [tt(()), tt((5, 2))])) == "tensor<5x2xf32>"
    type_error("add", [tt((2, 3)), tt((4,))], r"shapes \[2, 3\] and \[4\] cannot be broadcast")
    type_error("add", [tt((2,)), tt((2,), "i32")], "operand element types differ: f32 and i32")


# -- unary ------------------------------------------------------------------------------------

def _erf(a):
    return np.array([math.erf(v) for v in a.ravel()]).reshape(a.shape)


FLOAT_UNARY = {
    "exp": math.exp, "log": math.log, "log2": math.log2, "log10": math.log10, "sqrt": math.sqrt,
    "rsqrt": lambda v: 1 / math.sqrt(v), "tanh": math.tanh, "sigmoid": lambda v: 1 / (1 + math.exp(-v)),
    "erf": math.erf, "sin": math.sin, "cos": math.cos, "tan": math.tan, "atan": math.atan,
    "sinh": math.sinh, "cosh": math.cosh, "asinh": math.asinh,
    "floor": math.floor, "ceil": math.ceil, "trunc": math.trunc, "abs": abs, "negative": lambda v: -v,
    "sign": lambda v: (v > 0) - (v < 0), "copy": lambda v: v, "zeros_like": lambda v: 0.0,
    "ones_like": lambda v: 1.0, "nn.relu": lambda v: max(v, 0.0),
}
POSITIVE = {"log", "log2", "log10", "sqrt", "rsqrt"}


@pytest.mark.parametrize("name", sorted(FLOAT_UNARY))
def test_float_unary(name):
    x = rand(3, 5, low=0.1 if name in POSITIVE else -2.0)
    want = np.vectorize(FLOAT_UNARY[name], otypes=[np.float64])(x.astype(np.float64))
    close(run(name, x), want, rtol=2e-6, atol=2e-6)


def test_inverse_trig_domains():
    x = rand(7, low=-0.99, high=0.99)
    close(run("asin", x), np.vectorize(math.asin)(x), rtol=1e-6)
    close(run("acos", x), np.vectorize(math.acos)(x), rtol=1e-6)
    close(run("atanh", x), np.vectorize(math.atanh)(x), rtol=1e-5)
    y = rand(7, low=1.01, high=4)
    close(run("acosh", y), np.vectorize(math.acosh)(y), rtol=1e-6)


def test_round_is_half_to_even_and_sigmoid_is_stable():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.4], np.float32)
    assert run("round", x).tolist() == [0.0, 2.0, 2.0, -0.0, -2.0, 0.0]
    s = run("sigmoid", np.array([-1000.0, 0.0, 1000.0], np.float32))
    assert s.tolist() == [0.0, 0.5, 1.0]


def test_isnan_isinf_isfinite():
    x = np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)
    assert run("isnan", x).tolist() == [True, False, False, False]
    assert run("isinf", x).tolist() == [False, True, True, False]
    assert run("isfinite", x).tolist() == [False, False, False, True]


def test_float_only_unary_rejects_integers():
    type_error("exp", [tt((2,), "i32")], "expects a floating-point tensor")
    assert infer("abs", [tt((None, 2), "i8")]) is tt((None, 2), "i8")


# -- with attributes -------------------------------------------------------------------------

def test_clip():
    x = rand(4, 5, low=-3, high=3)
    close(run("clip", x, a_min=-1.0, a_max=0.5), np.minimum(np.maximum(x, -1.0), 0.5))
    i = np.array([-200, -5, 0, 5, 200], np.int32).astype(np.int8)
    assert run("clip", i, a_min=-3.5, a_max=float("inf")).tolist() == [max(v, -3) for v in i.tolist()]
    # a_min above a_max gives a_max everywhere, as ONNX Clip
    assert (run("clip", x, a_min=2.0, a_max=1.0) == 1.0).all()


def test_cast():
    x = np.array([-1.7, -0.2, 0.0, 2.9, 300.0], np.float32)
    assert run("cast", x, dtype="int32").tolist() == [-1, 0, 0, 2, 300]
    assert run("cast", x, dtype="bool").tolist() == [True, True, False, True, True]
    assert str(infer("cast", [tt((None, 3))], dtype="float16")) == "tensor<?x3xf16>"
    assert str(infer("cast", [tt((3,))], dtype="i64")) == "tensor<3xi64>"
    assert str(infer("cast_like", [tt((3,)), tt((1,), "i8")])) == "tensor<3xi8>"
    type_error("cast", [tt((3,))], 'dtype "float33" is not a scalar data type', dtype="float33")


def test_activations():
    x = rand(2, 3, 4)
    close(run("nn.leaky_relu", x, alpha=0.2), np.where(x > 0, x, 0.2 * x))
    alpha = rand(3)
    close(run("nn.prelu", x, alpha, axis=1), np.where(x > 0, x, x * alpha[None, :, None]))
    erf_gelu = 0.5 * x * (1 + _erf(x / math.sqrt(2)))
    close(run("nn.gelu", x), erf_gelu, rtol=1e-6)
    tanh_gelu = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    close(run("nn.gelu", x, approximate="tanh"), tanh_gelu, rtol=1e-6)
    type_error("nn.prelu", [tt((2, 3, 4)), tt((4,))], r"alpha must be 1-d of size 3 \(axis 1 of the data\)")
    assert infer("nn.prelu", [tt((None, None, 4)), tt((5,))], axis=1) is tt((None, None, 4))


def test_where_broadcasts_all_three():
    c = rand(3, 1) > 0
    x, y = rand(1, 4), rand(3, 4)
    assert (run("where", c, x, y) == np.where(c, x, y)).all()
    assert str(infer("where", [tt((None, 1), "i1"), tt((4,)), tt((1, 4))])) == "tensor<?x4xf32>"
    type_error("where", [tt((3,)), tt((3,)), tt((3,))], r"condition must be a boolean \(i1\) tensor")


def test_full_like():
    x = rand(2, 3)
    assert (run("full_like", x, np.float32(7)) == 7).all()
    type_error("full_like", [tt((2,)), tt((2,))], "expects a single-element fill_value")


def test_text_form_and_interpreter():
    src = """
relay.func @main(%x: tensor<2x3xf32>, %y: tensor<3xf32>) {
  %a = power(%x, %y)
  %c = greater(%a, %y)
  %r = where(%c, %a, %y)
  %g = nn.gelu(%r) {approximate = "tanh"}
  %k = clip(%g) {a_min = 0, a_max = 1}
  return %k
}"""
    x, y = rand(2, 3, low=0.1), rand(3, low=0.1)
    a = np.abs(x.astype(np.float64)) ** y
    r = np.where(a > y, a, y)
    g = 0.5 * r * (1 + np.tanh(math.sqrt(2 / math.pi) * (r + 0.044715 * r ** 3)))
    close(run_text(src, x, y), np.clip(g, 0, 1), rtol=1e-5)
