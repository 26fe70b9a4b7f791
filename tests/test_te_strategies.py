"""Each relay op's TE compute (conversion/relay_to_te/strategies.py) equals
the relay op's own compute() on random inputs, unscheduled (the vectorized
te interpreter) and with the default schedule applied (the loop executor)."""

import numpy as np
import pytest

from tvmd.conversion.relay_to_te.pass_ import lower_function
from tvmd.conversion.te_to_tir.apply_schedule import apply_to_func
from tvmd.dialects.te.interpreter import run
from tvmd.ir.printer import print_module
from tvmd.ir.verifier import verify
from tvmd.parser import parse_module


def prim(params, body, ret="%r"):
    ps = ", ".join(f"%{n}: {t}" for n, t in params)
    lines = "\n".join("  " + b for b in body)
    return f"relay.func @k({ps}) attributes {{primitive}} {{\n{lines}\n  return {ret}\n}}\n"


def random_input(t, rng):
    dt = t.dtype
    if dt.kind == "f":
        return rng.standard_normal(t.shape).astype(dt)
    return rng.integers(-6, 7, size=t.shape).astype(dt)


def reference(rf, args):
    env = dict(zip(rf.body.args, args))
    for op in rf.body.ops:
        if op.name == "relay.return":
            return [env[v] for v in op.operands]
        env[op.results[0]] = op.compute(*[env[v] for v in op.operands])


def check(text, schedule=True, seed=0):
    rng = np.random.default_rng(seed)
    m = parse_module(text)
    rf = m.body.first
    args = [random_input(a.type, rng) for a in rf.body.args]
    want = reference(rf, args)
    consts = [op.value.array for op in rf.body.ops if op.name == "relay.constant" and not op.value.is_splat()]
    tf = lower_function(m, rf, schedule=schedule)
    verify(m)
    assert print_module(parse_module(print_module(m))) == print_module(m)
    got = run(tf, *args, *consts)
    _same(got, want)
    if schedule:
        apply_to_func(tf)
        verify(m)
        _same(run(tf, *args, *consts), want)
    return tf


def _same(got, want):
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)
        else:
            np.testing.assert_array_equal(g, w)


BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum"]


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("shapes", [("2x3x4", "3x1"), ("4", "2x4"), ("1x4", "3x1"), ("", "3")])
def test_binary_broadcast(op, shapes):
    a, b = shapes
    ta = f"tensor<{a}xf32>" if a else "tensor<f32>"
    check(prim([("a", ta), ("b", f"tensor<{b}xf32>")], [f"%r = {op}(%a, %b)"]))


@pytest.mark.parametrize("op", BINARY)
def test_binary_int(op):
    # relay divides integers toward zero: a constant divisor with both signs
    check(prim([("a", "tensor<3x4xi32>")],
               ["%b = constant dense<[3, -2, 5, 7]> : tensor<4xi32>", f"%r = {op}(%a, %b)"]))


@pytest.mark.parametrize("op,dtype", [("nn.relu", "f32"), ("nn.relu", "i32"), ("negative", "f32"),
                                      ("negative", "i32"), ("exp", "f32"), ("sigmoid", "f32"),
                                      ("tanh", "f32")])
def test_unary(op, dtype):
    check(prim([("a", f"tensor<2x3x16x{dtype}>")], [f"%r = {op}(%a)"]))


@pytest.mark.parametrize("x,w", [("2x5", "3x5"), ("2x3x5", "4x5"), ("5", "16x5")])
def test_dense(x, w):
    check(prim([("x", f"tensor<{x}xf32>"), ("w", f"tensor<{w}xf32>")], ["%r = nn.dense(%x, %w)"]))


def test_dense_out_dtype():
    check(prim([("x", "tensor<2x5xi8>"), ("w", "tensor<3x5xi8>")],
               ['%r = nn.dense(%x, %w) {out_dtype = "int32"}']))


@pytest.mark.parametrize("axis,shape,bias", [(1, "2x3x4x5", "3"), (-1, "2x3x4x5", "5"), (0, "6x2", "6")])
def test_bias_add(axis, shape, bias):
    check(prim([("x", f"tensor<{shape}xf32>"), ("b", f"tensor<{bias}xf32>")],
               [f"%r = nn.bias_add(%x, %b) {{axis = {axis}}}"]))


CONVS = [
    ("1x3x6x6", "4x3x3x3", ""),
    ("1x3x7x7", "4x3x3x3", "{padding = [1, 1], strides = [2, 2]}"),
    ("2x4x6x6", "4x2x3x3", "{padding = [1, 0, 2, 1], groups = 2}"),
    ("1x4x6x6", "4x1x3x3", "{padding = [1, 1], groups = 4}"),
    ("1x2x8x8", "4x2x3x3", "{padding = [2, 2], dilation = [2, 2]}"),
    ("1x6x6x3", "3x3x3x4", '{padding = [1, 1], data_layout = "NHWC", kernel_layout = "HWIO"}'),
    ("1x3x6x6", "4x3x3x3", '{padding = [1, 1], kernel_layout = "OHWI"}'),
    ("1x3x5x5", "4x3x1x1", '{out_layout = "NHWC"}'),
]


@pytest.mark.parametrize("x,w,attrs", CONVS)
def test_conv2d(x, w, attrs):
    check(prim([("x", f"tensor<{x}xf32>"), ("w", f"tensor<{w}xf32>")], [f"%r = nn.conv2d(%x, %w) {attrs}"]))


@pytest.mark.parametrize("shape,src,dst", [("1x8x2x3", "NCHW", "NHWC"), ("1x8x2x3", "NCHW", "NCHW4c"),
                                           ("1x2x2x3x4", "NCHW4c", "NCHW"), ("1x2x2x3x4", "NCHW4c", "NHWC"),
                                           ("1x2x2x3x4", "NCHW4c", "NCHW2c")])
def test_layout_transform(shape, src, dst):
    check(prim([("x", f"tensor<{shape}xf32>")],
               [f'%r = layout_transform(%x) {{src_layout = "{src}", dst_layout = "{dst}"}}']))


def test_constants_splat_and_lifted():
    tf = check(prim([("x", "tensor<2x4xf32>")],
                    ["%s = constant dense<2.5> : tensor<f32>",
                     "%c = constant dense<[1.0, -2.0, 3.0, 0.5]> : tensor<4xf32>",
                     "%m = multiply(%x, %s)", "%r = add(%m, %c)"]))
    # the splat is an arith.constant in the body; the other constant became a parameter
    assert len(tf.body.args) == 2


def test_fused_group_conv_bias_relu():
    check(prim([("x", "tensor<1x3x6x6xf32>"), ("w", "tensor<8x3x3x3xf32>"), ("b", "tensor<8xf32>")],
               ["%c = nn.conv2d(%x, %w) {padding = [1, 1]}", "%a = nn.bias_add(%c, %b)", "%r = nn.relu(%a)"]))


def test_fused_group_dense_add_sigmoid():
    check(prim([("x", "tensor<3x8xf32>"), ("w", "tensor<16x8xf32>"), ("y", "tensor<16xf32>")],
               ["%d = nn.dense(%x, %w)", "%a = add(%d, %y)", "%r = sigmoid(%a)"]))


def test_returns_parameter_and_constant():
    check(prim([("x", "tensor<4xf32>")], [], ret="%x"))
    check(prim([("x", "tensor<4xf32>")], ["%c = constant dense<1.5> : tensor<4xf32>"], ret="%c"))


def test_fused_group_nhwc_conv_blocked_by_width():
    check(prim([("x", "tensor<1x6x8x3xf32>"), ("w", "tensor<3x3x3x8xf32>"), ("b", "tensor<8xf32>")],
               ['%c = nn.conv2d(%x, %w) {padding = [1, 1], data_layout = "NHWC", kernel_layout = "HWIO"}',
                "%a = nn.bias_add(%c, %b) {axis = 3}", "%r = nn.relu(%a)"]))


def test_fused_group_dense_blocked_by_rows():
    check(prim([("x", "tensor<8x6xf32>"), ("w", "tensor<16x6xf32>"), ("y", "tensor<8x16xf32>")],
               ["%d = nn.dense(%x, %w)", "%a = add(%d, %y)", "%r = nn.relu(%a)"]))
