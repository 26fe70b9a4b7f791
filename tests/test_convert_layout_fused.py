"""--convert-layout after --fuse-ops (dialects/relay/passes/convert_layout_fused.py):
the convs convert inside the fused primitive functions, the signatures and
calls are retyped, and the transforms move to the kernel boundaries.
Semantics are checked against the relay interpreter on the original
program and, for the zoo CNNs, against onnxruntime."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tvmd.dialects.relay.interpreter import run_function
from tvmd.ir.pass_manager import PassManager, instantiate, parse_pipeline
from tvmd.ir.printer import print_module
from tvmd.ir.registry import get_pass_class
from tvmd.parser import parse_module
from tvmd.testing.relay_programs import relay_programs

EXAMPLES = max(30, settings.default.max_examples) if settings.default.max_examples > 100 else 30
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


def run(module, pipeline):
    pm = PassManager(instantiate(parse_pipeline(pipeline), get_pass_class))
    pm.run(module)
    return module, pm.ctx.stats


def primitives(m):
    return [op for op in m.body.ops if "primitive" in op.attributes]


def transforms(func):
    return [op for op in func.walk() if op.name == "relay.layout_transform"]


CNN = """
relay.func @main(%x: tensor<1x4x8x8xf32>, %w1: tensor<8x4x3x3xf32>, %w2: tensor<8x8x3x3xf32>,
                 %b: tensor<8xf32>, %k: tensor<8x1x1xf32>) {
  %c1 = nn.conv2d(%x, %w1) {padding = [1, 1, 1, 1]}
  %a1 = nn.bias_add(%c1, %b)
  %r1 = nn.relu(%a1)
  %p1 = nn.max_pool2d(%r1) {pool_size = [2, 2], strides = [2, 2]}
  %c2 = nn.conv2d(%p1, %w2) {padding = [1, 1, 1, 1]}
  %m = multiply(%c2, %k)
  %s = add(%m, %p1)
  %r2 = nn.relu(%s)
  %g = nn.global_avg_pool2d(%r2)
  %f = nn.batch_flatten(%g)
  return %f
}"""


def cnn_inputs():
    rng = np.random.default_rng(3)
    shapes = [(1, 4, 8, 8), (8, 4, 3, 3), (8, 8, 3, 3), (8,), (8, 1, 1)]
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def test_convs_convert_inside_fused_functions_and_transforms_move_to_calls():
    want = run_function(parse_module(CNN), "main", *cnn_inputs())
    m, stats = run(parse_module(CNN), "fuse-ops,convert-layout")
    convs = [op for op in m.walk() if op.name == "relay.nn.conv2d"]
    assert [(c.attributes["data_layout"], c.attributes["kernel_layout"]) for c in convs] == [("NHWC", "HWIO")] * 2
    # the pools follow the layout across kernels; no primitive function transforms anything
    pools = [op for op in m.walk() if op.name in ("relay.nn.max_pool2d", "relay.nn.global_avg_pool2d")]
    assert [p.attributes["layout"] for p in pools] == ["NHWC", "NHWC"]
    assert all(not transforms(f) for f in primitives(m))
    main = next(op for op in m.body.ops if op.attributes["sym_name"] == "main")
    # in: the input and the two weights; the scale %k re-laid out (reshape, then
    # transform) at its call; out: once, before batch_flatten
    got = [(op.operands[0].name, op.attributes["src_layout"], op.attributes["dst_layout"]) for op in transforms(main)]
    assert got == [("x", "NCHW", "NHWC"), ("w1", "OIHW", "HWIO"), ("w2", "OIHW", "HWIO"), (None, "NCHW", "NHWC"),
                   ("g_nhwc", "NHWC", "NCHW")]
    assert stats["convert-layout"]["functions-retyped"] == 4
    np.testing.assert_allclose(run_function(m, "main", *cnn_inputs()), want, rtol=1e-5, atol=1e-5)


def test_no_option_means_the_targets_preferred_layouts():
    nhwc = """
relay.func @main(%x: tensor<1x5x5x2xf32>, %w: tensor<3x3x2x4xf32>) {
  %c = nn.conv2d(%x, %w) {data_layout = "NHWC", kernel_layout = "HWIO"}
  %r = nn.relu(%c)
  return %r
}"""
    m, _ = run(parse_module(nhwc), "fuse-ops,convert-layout{target=cuda}")
    (conv,) = [op for op in m.walk() if op.name == "relay.nn.conv2d"]
    assert (conv.attributes["data_layout"], conv.attributes["kernel_layout"]) == ("NCHW", "OIHW")
    m, _ = run(parse_module(nhwc), "fuse-ops,convert-layout")
    assert not any(transforms(f) for f in m.body.ops)   # llvm prefers NHWC: nothing to do


def test_a_callee_called_with_two_layouts_is_not_seeded():
    """One fused relu called on a converted value and on an NCHW input: it
    keeps NCHW (each call site passes its own layout)."""
    text = """
relay.func @main(%x: tensor<1x2x4x4xf32>, %y: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>) {
  %c = nn.conv2d(%x, %w)
  %r = call @relu(%c)
  %s = call @relu(%y)
  %t = add(%r, %s)
  return %t
}
relay.func @relu(%p: tensor<1x2x4x4xf32>) attributes {primitive} {
  %q = nn.relu(%p)
  return %q
}"""
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in [(1, 2, 4, 4), (1, 2, 4, 4), (2, 2, 1, 1)]]
    want = run_function(run(parse_module(text), "infer-type")[0], "main", *args)
    m, _ = run(parse_module(text), "convert-layout{nn.conv2d=NHWC}")
    relu = next(op for op in m.body.ops if op.attributes["sym_name"] == "relu")
    assert str(relu.regions[0].blocks[0].args[0].type) == "tensor<1x2x4x4xf32>"
    np.testing.assert_allclose(run_function(m, "main", *args), want, rtol=1e-6)


@FUZZ
@given(relay_programs())
def test_fuse_then_convert_preserves_semantics(prog):
    text, inputs = prog
    want = run_function(parse_module(text), "main", *inputs)
    for layout in ("NHWC", "NCHW"):
        m, _ = run(parse_module(text), f"fuse-ops,convert-layout{{nn.conv2d={layout}}},fold-constant,fuse-ops")
        for op in m.walk():
            if op.name == "relay.nn.conv2d":
                assert op.attributes["data_layout"] == layout
        np.testing.assert_allclose(run_function(m, "main", *inputs), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["resnet18", "squeezenet1_1", "mobilenet_v2"])
def test_zoo_cnns_fused_then_converted_match_onnxruntime(name):
    """The used-by pipeline on real CNNs (BN folded first), compiled: equal to
    onnxruntime, and only the transforms the unfused flow also leaves
    (squeezenet's fire modules call one fused concatenate from several
    sites: it follows NHWC once all its producers are converted)."""
    import onnxruntime as ort

    from tvmd.frontend.onnx import from_onnx
    from tvmd.runtime.build import build
    from tvmd.testing.onnx_zoo import ZOO
    model, feeds = ZOO[name](small=True)
    want = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    counts = {}
    for flow in ("fuse-ops,convert-layout,fold-constant", "convert-layout,fold-constant,fuse-ops"):
        m, _ = run(from_onnx(model)[0], "simplify-inference,fold-constant," + flow)
        counts[flow] = sum(len(transforms(f)) for f in m.body.ops)
        if flow.startswith("fuse-ops"):
            assert all(not transforms(f) for f in primitives(m))
            got = build(print_module(m), fallback=False).run(*feeds.values())
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)
    assert len(set(counts.values())) == 1, counts
