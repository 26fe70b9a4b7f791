"""TE computes of relay's nn and conv operators (conversion/relay_to_te/topi_nn.py)
against the ops' numpy compute(): unscheduled, default-scheduled, and
compiled by LLVM (tests/topi_check.py)."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from topi_check import check, prim  # noqa: E402


def one(x, body, extra=()):
    return prim([("x", x), *extra], body if isinstance(body, list) else [body])


CONV = [
    # conv1d: groups, asymmetric padding, strides, dilation, NWC
    (["x", "tensor<1x4x7xf32>"], ["w", "tensor<6x2x3xf32>"],
     "nn.conv1d(%x, %w) {groups = 2, padding = [1, 2], strides = [2]} : tensor<1x6x4xf32>"),
    (["x", "tensor<2x9x3xf32>"], ["w", "tensor<3x3x4xf32>"],
     "nn.conv1d(%x, %w) {data_layout = \"NWC\", kernel_layout = \"WIO\", dilation = [2], padding = [1]} "
     ": tensor<2x7x4xf32>"),
    # conv3d: NDHWC / DHWIO, padding; NCDHW strides + dilation
    (["x", "tensor<1x5x5x5x2xf32>"], ["w", "tensor<2x2x2x2x3xf32>"],
     "nn.conv3d(%x, %w) {data_layout = \"NDHWC\", kernel_layout = \"DHWIO\", padding = [1]} : tensor<1x6x6x6x3xf32>"),
    (["x", "tensor<1x4x6x5x5xf32>"], ["w", "tensor<4x2x2x3x2xf32>"],
     "nn.conv3d(%x, %w) {groups = 2, strides = [2, 1, 2], dilation = [1, 2, 1], padding = [0, 1, 1, 1, 0, 0]} "
     ": tensor<1x4x3x2x3xf32>"),
    # the transposes: strides, padding, output_padding, dilation, groups, layouts
    (["x", "tensor<1x4x5xf32>"], ["w", "tensor<4x3x3xf32>"],
     "nn.conv1d_transpose(%x, %w) {strides = [2], padding = [1, 0], output_padding = [1]} : tensor<1x3x11xf32>"),
    (["x", "tensor<1x4x3x4xf32>"], ["w", "tensor<4x2x3x2xf32>"],
     "nn.conv2d_transpose(%x, %w) {strides = [2, 3], padding = [1, 0, 0, 1], groups = 2, dilation = [1, 2]} "
     ": tensor<1x4x6x11xf32>"),
    (["x", "tensor<1x3x4x2xf32>"], ["w", "tensor<3x3x2x3xf32>"],
     "nn.conv2d_transpose(%x, %w) {data_layout = \"NHWC\", kernel_layout = \"HWIO\", strides = [2, 2], "
     "output_padding = [1, 0]} : tensor<1x8x9x3xf32>"),
    (["x", "tensor<1x2x2x3x2xf32>"], ["w", "tensor<2x2x2x2x2xf32>"],
     "nn.conv3d_transpose(%x, %w) {strides = [2, 1, 2], padding = [1]} : tensor<1x2x2x2x2xf32>"),
    # int8 in, int32 out
    (["x", "tensor<1x3x6xi8>"], ["w", "tensor<2x3x3xi8>"],
     "nn.conv1d(%x, %w) {out_dtype = \"int32\", padding = [1]} : tensor<1x2x6xi32>"),
]


@pytest.mark.parametrize("x,w,expr", CONV, ids=[c[2].split("(")[0] + str(i) for i, c in enumerate(CONV)])
def test_conv(x, w, expr):
    check(prim([tuple(x), tuple(w)], ["%r = " + expr]))


def test_conv2d_transpose_blocked_output():
    check(prim([("x", "tensor<1x2x3x3xf32>"), ("w", "tensor<2x8x2x2xf32>")],
               ["%r = nn.conv2d_transpose(%x, %w) {out_layout = \"NCHW4c\", strides = [2, 2]} : tensor<1x2x6x6x4xf32>"]))


MATMUL = [
    ("tensor<3x5xf32>", "tensor<5x4xf32>", "{}", "tensor<3x4xf32>"),
    ("tensor<2x5x3xf32>", "tensor<4x5xf32>", "{transpose_a = true, transpose_b = true}", "tensor<2x3x4xf32>"),
    ("tensor<5xf32>", "tensor<4x5xf32>", "{transpose_b = true}", "tensor<4xf32>"),
]


@pytest.mark.parametrize("a,b,attrs,t", MATMUL,
                         ids=["plain", "transposed", "vector"])
def test_matmul(a, b, attrs, t):
    check(prim([("a", a), ("b", b)], [f"%r = nn.matmul(%a, %b) {attrs} : {t}"]))


@pytest.mark.parametrize("x,y,attrs,t", [
    ("tensor<2x3x5xf32>", "tensor<2x4x5xf32>", "{}", "tensor<2x3x4xf32>"),
    ("tensor<1x5x3xf32>", "tensor<2x5x4xf32>", "{transpose_a = true, transpose_b = false}", "tensor<2x3x4xf32>"),
    ("tensor<2x3x5xi8>", "tensor<1x4x5xi8>", "{out_dtype = \"int32\"}", "tensor<2x3x4xi32>"),
], ids=["plain", "transposed-broadcast", "int8"])
def test_batch_matmul(x, y, attrs, t):
    check(prim([("x", x), ("y", y)], [f"%r = nn.batch_matmul(%x, %y) {attrs} : {t}"]))


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,axis", [("4x7", -1), ("2x5x3", 1), ("6", 0)])
def test_softmax(op, shape, axis):
    t = f"tensor<{shape}xf32>"
    check(one(t, f"%r = nn.{op}(%x) {{axis = {axis}}} : {t}"))


def test_softmax_large_values_stable():
    """exp(x - max): inputs near 1e3 would overflow exp(x) itself."""
    t = "tensor<2x8xf32>"
    x = (np.arange(16, dtype=np.float32).reshape(2, 8) + 1000.0)
    check(one(t, f"%r = nn.softmax(%x) : {t}"), inputs=[x])


NORM_PARAMS = [("g", "tensor<{c}xf32>"), ("b", "tensor<{c}xf32>")]


def norm_params(c):
    return [(n, t.format(c=c)) for n, t in NORM_PARAMS]


@pytest.mark.parametrize("idx", [0, 1, 2])
def test_batch_norm(idx):
    t = "tensor<2x3x4x2xf32>"
    params = norm_params(3) + [("m", "tensor<3xf32>"), ("v", "tensor<3xf32>")]
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 2)).astype(np.float32)
    g, b, m = (np.random.default_rng(i).standard_normal(3).astype(np.float32) for i in (2, 3, 4))
    v = np.abs(np.random.default_rng(5).standard_normal(3)).astype(np.float32)
    out_t = [t, "tensor<3xf32>", "tensor<3xf32>"][idx]
    check(prim([("x", t)] + params,
               [f"%t = nn.batch_norm(%x, %g, %b, %m, %v) {{epsilon = 0.001}} : "
                f"tuple<{t}, tensor<3xf32>, tensor<3xf32>>",
                f"%r = get_item(%t) {{index = {idx}}} : {out_t}"]), inputs=[x, g, b, m, v])


def test_batch_norm_nhwc_no_scale_center():
    t = "tensor<2x2x3x4xf32>"
    params = norm_params(4) + [("m", "tensor<4xf32>"), ("v", "tensor<4xf32>")]
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((2, 2, 3, 4), 4, 4, 4)] + \
        [rng.uniform(0.5, 2, 4).astype(np.float32)]
    check(prim([("x", t)] + params,
               [f"%t = nn.batch_norm(%x, %g, %b, %m, %v) {{axis = 3, scale = false, center = false}} : "
                f"tuple<{t}, tensor<4xf32>, tensor<4xf32>>",
                f"%r = get_item(%t) {{index = 0}} : {t}"]), inputs=args)


@pytest.mark.parametrize("shape,axis,c", [("3x8", -1, 8), ("2x5x3", 1, 5)])
def test_layer_norm(shape, axis, c):
    t = f"tensor<{shape}xf32>"
    check(prim([("x", t)] + norm_params(c), [f"%r = nn.layer_norm(%x, %g, %b) {{axis = {axis}}} : {t}"]))


@pytest.mark.parametrize("shape,axis,c", [("2x3x4x5", 1, 3), ("2x4x5x3", 3, 3)])
def test_instance_norm(shape, axis, c):
    t = f"tensor<{shape}xf32>"
    check(prim([("x", t)] + norm_params(c),
               [f"%r = nn.instance_norm(%x, %g, %b) {{axis = {axis}, epsilon = 0.01}} : {t}"]))


@pytest.mark.parametrize("shape,axis,c,g", [("2x6x3x2", 1, 6, 3), ("2x3x2x4", 3, 4, 2)])
def test_group_norm(shape, axis, c, g):
    t = f"tensor<{shape}xf32>"
    check(prim([("x", t)] + norm_params(c),
               [f"%r = nn.group_norm(%x, %g, %b) {{num_groups = {g}, axis = {axis}, center = false}} : {t}"]))


@pytest.mark.parametrize("axis", ["[1]", "[0, 2]"], ids=["one", "two"])
def test_l2_normalize(axis):
    t = "tensor<2x3x4xf32>"
    check(one(t, f"%r = nn.l2_normalize(%x) {{eps = 0.001, axis = {axis}}} : {t}"))


@pytest.mark.parametrize("size,axis", [(3, 1), (4, -1), (5, 1)])
def test_lrn(size, axis):
    t = "tensor<2x6x3x4xf32>"
    check(one(t, f"%r = nn.lrn(%x) {{size = {size}, axis = {axis}, alpha = 0.1, beta = 0.75, bias = 1.0}} : {t}"))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pad(mode):
    check(one("tensor<2x3x4xf32>",
              f"%r = nn.pad(%x) {{pad_width = [[0, 1], [2, 1], [3, 0]], pad_mode = \"{mode}\", pad_value = 1.5}} "
              ": tensor<3x6x7xf32>"))


def test_pad_value_operand():
    check(prim([("x", "tensor<2x3xi32>"), ("v", "tensor<i32>")],
               ["%r = nn.pad(%x, %v) {pad_width = [[1, 1], [0, 2]]} : tensor<4x5xi32>"]))


def test_pad_value_constant():
    check(prim([("x", "tensor<2x3xf32>")],
               ["%v = constant dense<-2.5> : tensor<f32>",
                "%r = nn.pad(%x, %v) {pad_width = [[1, 1], [0, 2]]} : tensor<4x5xf32>"]))


@pytest.mark.parametrize("idx", [0, 1])
def test_dropout(idx):
    t = "tensor<3x4xf32>"
    check(one(t, [f"%t = nn.dropout(%x) {{rate = 0.25}} : tuple<{t}, {t}>",
                  f"%r = get_item(%t) {{index = {idx}}} : {t}"]))


def test_batch_flatten():
    check(one("tensor<2x3x4x2xf32>", "%r = nn.batch_flatten(%x) : tensor<2x24xf32>"))


@pytest.mark.parametrize("layout,mode,x,t", [
    ("NCHW", "DCR", "2x8x2x3", "2x2x4x6"), ("NCHW", "CRD", "1x8x3x2", "1x2x6x4"),
    ("NHWC", "DCR", "1x2x3x8", "1x4x6x2"), ("NHWC", "CRD", "1x3x2x8", "1x6x4x2")])
def test_depth_to_space(layout, mode, x, t):
    check(one(f"tensor<{x}xf32>", f"%r = nn.depth_to_space(%x) {{block_size = 2, layout = \"{layout}\", "
                                  f"mode = \"{mode}\"}} : tensor<{t}xf32>"))


@pytest.mark.parametrize("layout,x,t", [("NCHW", "2x3x4x6", "2x12x2x3"), ("NHWC", "1x4x6x3", "1x2x3x12")])
def test_space_to_depth(layout, x, t):
    check(one(f"tensor<{x}xf32>", f"%r = nn.space_to_depth(%x) {{block_size = 2, layout = \"{layout}\"}} "
                                  f": tensor<{t}xf32>"))


def test_every_op_of_the_families_has_a_strategy():
    from tvmd.conversion.relay_to_te.strategies import STRATEGIES
    from tvmd.ir.core import OP_CLASSES
    from tvmd.ir.registry import load_all_dialects
    load_all_dialects()
    mods = ("ops.nn", "ops.conv", "ops.pool", "ops.norm", "ops.image", "ops.qnn", "ops.qnn_math")
    names = sorted(n[len("relay."):] for n, c in OP_CLASSES.items() if c.__module__.endswith(mods))
    assert len(names) > 50
    missing = [n for n in names if n not in STRATEGIES]
    assert not missing, missing


@pytest.mark.parametrize("dl,kl,ol,x,w,t", [
    ("NCHW4c", "OIHW", "", "1x2x5x5x4", "8x8x3x3", "1x2x5x5x4"),
    ("NCHW", "OIHW2i4o", "NCHW4c", "1x4x5x5", "2x2x3x3x2x4", "1x2x5x5x4"),
])
def test_conv2d_blocked_layouts(dl, kl, ol, x, w, t):
    check(prim([("x", f"tensor<{x}xf32>"), ("w", f"tensor<{w}xf32>")],
               [f'%r = nn.conv2d(%x, %w) {{padding = [1, 1, 1, 1], data_layout = "{dl}", kernel_layout = "{kl}", '
                f'out_layout = "{ol}"}} : tensor<{t}xf32>']))


def test_batch_norm_tuple_through_the_pipeline():
    """A tuple-returning op in a graph: fuse-ops, lower to te and tir, run
    compiled; get_item stays in @main (the executor takes the tuple apart)."""
    from tvmd.conversion.relay_to_te.pass_ import LowerRelayToTE
    from tvmd.conversion.te_to_tir.lower import LowerTEToTIR
    from tvmd.dialects.relay.passes.fuse_ops import FuseOps
    from tvmd.dialects.tir.passes.simplify import Simplify
    from tvmd.ir.pass_manager import PassManager
    from tvmd.parser import parse_module
    from tvmd.runtime.executor import Executor, reference_run
    text = """relay.func @main(%x: tensor<1x4x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %m: tensor<4xf32>,
                         %v: tensor<4xf32>) -> tensor<1x4x3x3xf32> {
  %t = nn.batch_norm(%x, %g, %b, %m, %v) : tuple<tensor<1x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>>
  %r = get_item(%t) {index = 0} : tensor<1x4x3x3xf32>
  %s = nn.softmax(%r) {axis = 1} : tensor<1x4x3x3xf32>
  return %s
}
"""
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((1, 4, 3, 3)).astype(np.float32)] + \
        [rng.standard_normal(4).astype(np.float32) for _ in range(3)] + [rng.uniform(0.5, 2, 4).astype(np.float32)]
    want = reference_run(parse_module(text), "main", *args)[0]
    for fuse in (True, False):
        m = parse_module(text)
        PassManager(([(None, FuseOps())] if fuse else []) +
                    [(None, LowerRelayToTE()), (None, LowerTEToTIR()), (None, Simplify())]).run(m)
        assert not [op for op in m.body.ops if op.name == "relay.func" and "primitive" in op.attributes]
        np.testing.assert_allclose(Executor(m).run(*args), want, rtol=1e-5, atol=1e-6)
