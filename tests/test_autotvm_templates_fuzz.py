"""Any config of any default-schedule template computes what numpy
computes: hypothesis draws an op (GEMMs, convs NCHW and NHWC, depthwise,
pools, softmax, layer-norm moments, elementwise epilogues) and a config of
its template, and the compiled kernel is checked against the ops' numpy
compute()."""

import os
import sys

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tvmd.autotvm.space import config_space, instantiate
from tvmd.conversion.relay_to_te.pass_ import lower_function
from tvmd.parser import parse_module

sys.path.insert(0, os.path.dirname(__file__))
from topi_check import compile_and_run, prim, random_input, reference, same  # noqa: E402

OPS = [
    prim([("a", "tensor<24x40xf32>"), ("b", "tensor<40x48xf32>")],
         ["%m = nn.matmul(%a, %b) : tensor<24x48xf32>", "%r = nn.relu(%m) : tensor<24x48xf32>"]),
    prim([("a", "tensor<32x40xf32>"), ("w", "tensor<64x40xf32>"), ("c", "tensor<64xf32>")],
         ["%d = nn.dense(%a, %w) : tensor<32x64xf32>", "%r = nn.bias_add(%d, %c) {axis = 1} : tensor<32x64xf32>"]),
    prim([("a", "tensor<2x16x24xf32>"), ("b", "tensor<2x24x32xf32>")],
         ["%r = nn.batch_matmul(%a, %b) {transpose_b = false} : tensor<2x16x32xf32>"]),
    prim([("x", "tensor<1x8x14x14xf32>"), ("w", "tensor<16x8x3x3xf32>")],
         ["%c = nn.conv2d(%x, %w) {padding = [1, 1, 1, 1]} : tensor<1x16x14x14xf32>",
          "%r = nn.relu(%c) : tensor<1x16x14x14xf32>"]),
    prim([("x", "tensor<1x14x14x16xf32>"), ("w", "tensor<3x3x16x32xf32>")],
         ["%r = nn.conv2d(%x, %w) {padding = [1, 1, 1, 1], data_layout = \"NHWC\", kernel_layout = \"HWIO\"}"
          " : tensor<1x14x14x32xf32>"]),
    prim([("x", "tensor<1x16x12x12xf32>"), ("w", "tensor<16x1x3x3xf32>")],
         ["%r = nn.conv2d(%x, %w) {padding = [1, 1, 1, 1], groups = 16} : tensor<1x16x12x12xf32>"]),
    prim([("x", "tensor<1x16x12x12xf32>")],
         ["%r = nn.max_pool2d(%x) {pool_size = [2, 2], strides = [2, 2]} : tensor<1x16x6x6xf32>"]),
    prim([("x", "tensor<8x64xf32>")], ["%r = nn.softmax(%x) : tensor<8x64xf32>"]),
    prim([("x", "tensor<6x96xf32>")], ["%r = mean(%x) {axis = [1], keepdims = true} : tensor<6x1xf32>"]),
    prim([("x", "tensor<4x8x32xf32>"), ("y", "tensor<4x8x32xf32>")],
         ["%s = add(%x, %y) : tensor<4x8x32xf32>", "%r = tanh(%s) : tensor<4x8x32xf32>"]),
]


def template(k):
    m = parse_module(OPS[k])
    rf = m.body.first
    tf = lower_function(m, rf)
    return m, tf, config_space(tf)


def test_the_tiled_ops_are_templates():
    # GEMMs, the NHWC conv, softmax, a row reduction, elementwise; the NCHW
    # conv at width 14, the depthwise conv and the pool at widths 12 and 6
    # have no vector width with a choice (one size divides, or none)
    tunable = [k for k in range(len(OPS)) if template(k)[2].knobs]
    assert tunable == [0, 1, 2, 3, 4, 7, 8, 9]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(OPS) - 1), st.integers(0, 1 << 30), st.integers(0, 3))
def test_any_config_of_a_default_template_matches_numpy(k, pick, seed):
    m0 = parse_module(OPS[k])
    rf0 = m0.body.first
    rng = np.random.default_rng(seed)
    args = [random_input(a.type, rng) for a in rf0.body.args]
    want = reference(rf0, args)
    m, tf, space = template(k)
    entity = space.get(pick % len(space))
    instantiate(space, entity)
    assert not config_space(tf).knobs
    got = compile_and_run(m, tf.sym_name, args)
    same(got, want, rtol=1e-4, atol=1e-4)
