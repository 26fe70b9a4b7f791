"""The relay reference interpreter, checked against independent numpy code."""

import numpy as np
import pytest

from tvmd.dialects.relay.interpreter import evaluate_op, run_function
from tvmd.ir.diagnostics import DiagnosticError
from tvmd.parser import parse_module


def conv2d_loops(x, w, strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    """Direct-loop NCHW/OIHW convolution: the definition, written out."""
    n, c, h, wd = x.shape
    o, i, kh, kw = w.shape
    pt, pl, pb, pr = padding
    sh, sw = strides
    dh, dw = dilation
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    y = np.zeros((n, o, oh, ow), dtype=np.float64)
    for b in range(n):
        for oc in range(o):
            g = oc // og
            for yy in range(oh):
                for xx in range(ow):
                    acc = 0.0
                    for ic in range(i):
                        for ky in range(kh):
                            for kx in range(kw):
                                iy = yy * sh + ky * dh - pt
                                ix = xx * sw + kx * dw - pl
                                if 0 <= iy < h and 0 <= ix < wd:
                                    acc += x[b, g * i + ic, iy, ix] * w[oc, ic, ky, kx]
                    y[b, oc, yy, xx] = acc
    return y


def T(shape):
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("strides,padding,dilation,groups", [
    ((1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((2, 2), (1, 1, 1, 1), (1, 1), 1),
    ((1, 2), (1, 0, 2, 1), (1, 1), 1),
    ((1, 1), (2, 2, 2, 2), (2, 2), 1),
    ((1, 1), (1, 1, 1, 1), (1, 1), 2),
])
def test_conv2d_nchw_matches_loops(strides, padding, dilation, groups):
    x, w = rand(1, 4, 7, 6), rand(6, 4 // groups, 3, 3)
    want = conv2d_loops(x, w, strides, padding, dilation, groups)
    attrs = (f"{{strides = [{strides[0]}, {strides[1]}], padding = [{', '.join(map(str, padding))}], "
             f"dilation = [{dilation[0]}, {dilation[1]}], groups = {groups}}}")
    text = f"""
relay.func @main(%x: {T(x.shape)}, %w: {T(w.shape)}) {{
  %y = nn.conv2d(%x, %w) {attrs}
  return %y
}}"""
    got = run_function(parse_module(text), "main", x, w)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_conv2d_nhwc_hwio_matches_loops():
    x, w = rand(2, 5, 5, 3), rand(3, 3, 3, 4)   # NHWC data, HWIO kernel
    want = conv2d_loops(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), padding=(1, 1, 1, 1))
    text = f"""
relay.func @main(%x: {T(x.shape)}, %w: {T(w.shape)}) {{
  %y = nn.conv2d(%x, %w) {{padding = [1, 1], data_layout = "NHWC", kernel_layout = "HWIO"}}
  return %y
}}"""
    got = run_function(parse_module(text), "main", x, w)
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-4)


def test_dense_bias_relu_broadcast():
    x, w, b, s = rand(3, 5), rand(4, 5), rand(4), rand(1, 4)
    text = f"""
relay.func @main(%x: {T(x.shape)}, %w: {T(w.shape)}, %b: {T(b.shape)}, %s: {T(s.shape)}) {{
  %d = nn.dense(%x, %w)
  %e = nn.bias_add(%d, %b)
  %r = nn.relu(%e)
  %m = multiply(%r, %s)
  %n = subtract(%m, %s)
  %q = maximum(%n, %s)
  return %q
}}"""
    want = np.zeros((3, 4))
    for i in range(3):
        for j in range(4):
            want[i, j] = sum(float(x[i, k]) * float(w[j, k]) for k in range(5)) + b[j]
    want = np.where(want > 0, want, 0) * s
    want = np.maximum(want - s, s)
    got = run_function(parse_module(text), "main", x, w, b, s)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_constants_layout_transform_and_bias_axis():
    text = """
relay.func @main(%x: tensor<1x2x2x3xf32>) {
  %t = layout_transform(%x) {src_layout = "NCHW", dst_layout = "NHWC"}
  %b = constant dense<[10.0, 20.0]> : tensor<2xf32>
  %y = nn.bias_add(%t, %b) {axis = -1}
  return %y
}"""
    x = np.arange(12, dtype=np.float32).reshape(1, 2, 2, 3)
    got = run_function(parse_module(text), "main", x)
    want = np.transpose(x, (0, 2, 3, 1)) + np.array([10, 20], np.float32)
    assert np.array_equal(got, want)


def test_calls_recurse_into_functions_defined_later():
    text = """
relay.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = call @double(%x) : tensor<4xf32>
  %b = call @double(%a) : tensor<4xf32>
  return %b
}
relay.func @double(%y: tensor<4xf32>) -> tensor<4xf32> {
  %z = call @id(%y) : tensor<4xf32>
  %s = add(%z, %z)
  return %s
}
relay.func @id(%v: tensor<4xf32>) -> tensor<4xf32> {
  return %v
}"""
    x = np.array([1, -2, 3, 0.5], np.float32)
    assert np.array_equal(run_function(parse_module(text), "main", x), 4 * x)


def test_python_lists_take_the_parameter_dtype():
    text = "relay.func @main(%x: tensor<2xf32>) { %r = nn.relu(%x)\n return %r }"
    out = run_function(parse_module(text), "main", [-1, 2])
    assert out.dtype == np.float32 and list(out) == [0, 2]


def test_evaluate_op_checks_the_result():
    m = parse_module("relay.func @main(%x: tensor<2x3xf32>) { %r = nn.relu(%x)\n return %r }")
    relu = next(op for op in m.walk() if op.name == "relay.nn.relu")
    assert np.array_equal(evaluate_op(relu, [np.array([[-1, 2, -3], [4, -5, 6]], np.float32)]),
                          [[0, 2, 0], [4, 0, 6]])
    with pytest.raises(DiagnosticError, match="shape"):
        evaluate_op(relu, [np.zeros((3, 2), np.float32)])


# -- errors -----------------------------------------------------------------------

def err(text, *args, name="main", allow_unregistered=False):
    m = parse_module(text, "t.relay", allow_unregistered=allow_unregistered)
    with pytest.raises(DiagnosticError) as e:
        run_function(m, name, *args)
    return e.value


def test_error_missing_function():
    e = err("relay.func @main(%x: tensor<2xf32>) { return %x }", name="nope")
    assert "no function named '@nope'" in str(e)


def test_error_argument_shape_and_count():
    text = "relay.func @main(%x: tensor<2xf32>) { return %x }"
    e = err(text, np.zeros(3, np.float32))
    assert "argument 0" in str(e) and "tensor<2xf32>" in str(e)
    assert e.loc.line == 1
    assert "takes 1 argument" in str(err(text))
    assert "dtype" in str(err(text, np.zeros(2, np.int32)))


def test_error_op_without_compute_points_at_the_op():
    text = """relay.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = "foo.mystery"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %y
}"""
    e = err(text, np.zeros(2, np.float32), allow_unregistered=True)
    assert "no reference implementation" in str(e)
    assert e.loc.line == 2


def test_error_call_to_a_non_relay_function():
    text = """relay.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = call @k(%x) : tensor<2xf32>
  return %y
}
"foo.kernel"() {sym_name = "k", function_type = (tensor<2xf32>) -> tensor<2xf32>} : () -> ()
"""
    e = err(text, np.zeros(2, np.float32), allow_unregistered=True)
    assert "foo.kernel" in str(e) and e.loc.line == 2


def test_error_unbounded_recursion():
    text = """relay.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = call @main(%x) : tensor<2xf32>
  return %y
}"""
    assert "call depth" in str(err(text, np.zeros(2, np.float32)))


def test_error_uninferred_types_ask_for_infer_type():
    text = """relay.func @main(%x: tensor<2xf32>) {
  %a = call @f(%x)
  %b = nn.relu(%a)
  return %b
}
relay.func @f(%y: tensor<2xf32>) { return %y }"""
    e = err(text, np.zeros(2, np.float32))
    assert "--infer-type" in str(e) and e.loc.line == 3
