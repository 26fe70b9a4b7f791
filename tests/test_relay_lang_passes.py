"""The graph passes on functions with control flow: fuse-ops, fold-constant,
convert-layout, canonicalize and simplify-inference must treat ``if``,
``match`` and ``fn`` as opaque (never fuse or move anything across a region
boundary), keep the IR valid and printable, and keep its meaning (the
interpreter before and after agrees, on every branch)."""

import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

sys.path.insert(0, os.path.dirname(__file__))
from relay_lang_programs import programs  # noqa: E402
from tvmd.dialects.relay.interpreter import make_list, run_function  # noqa: E402
from tvmd.ir.pass_manager import PassManager, instantiate, parse_pipeline  # noqa: E402
from tvmd.ir.printer import print_module  # noqa: E402
from tvmd.ir.registry import get_pass_class  # noqa: E402
from tvmd.parser import parse_module  # noqa: E402

FUZZ = settings(max_examples=max(25, settings.default.max_examples // 4), deadline=None,
                suppress_health_check=list(HealthCheck))

PASSES = ["fuse-ops", "fold-constant", "convert-layout{nn.conv2d=NHWC}", "canonicalize",
          "simplify-inference", "fold-constant,fuse-ops", "infer-type,canonicalize,cse,dce,fuse-ops"]

PROGRAM = """relay.adt @List<A> {
  Cons(!A, !relay.adt<@List<!A>>),
  Nil
}

relay.func @main(%c: tensor<i1>, %x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %l: !relay.adt<@List<tensor<1x4x8x8xf32>>>) -> tensor<1x4x8x8xf32> {
  %a = nn.relu(%x)
  %b = add(%a, %x)
  %k = constant dense<2.0> : tensor<4xf32>
  %k2 = multiply(%k, %k)
  %r = if %c {
    %conv = nn.conv2d(%b, %w) {padding = [1, 1]}
    %bias = nn.bias_add(%conv, %k2)
    %q = nn.relu(%bias)
    %kk = add(%k, %k)
    yield %q
  } else {
    %n = negative(%b)
    %e = exp(%n)
    yield %e
  }
  %f = fn (%y: tensor<1x4x8x8xf32>) {
    %z = nn.relu(%y)
    %z2 = add(%z, %b)
    return %z2
  }
  %m = match %l {
    Cons(%h, _) => {
      %s = call %f(%h)
      %t = multiply(%s, %r)
      yield %t
    }
    Nil => { yield %r }
  }
  %o = nn.relu(%m)
  %o2 = add(%o, %a)
  return %o2
}
"""


def run(m, pipeline):
    PassManager(instantiate(parse_pipeline(pipeline), get_pass_class)).run(m)   # verifies after each pass
    return m


def inputs():
    rng = np.random.default_rng(0)
    x = rng.integers(-2, 3, (1, 4, 8, 8)).astype(np.float32)
    w = rng.integers(-1, 2, (4, 4, 3, 3)).astype(np.float32)
    h = rng.integers(-2, 3, (1, 4, 8, 8)).astype(np.float32) / 4
    for c in (True, False):
        for lst in ([h], []):
            yield np.array(c), x, w, make_list(lst)


def regions_intact(m):
    """The language ops are still in @main, nothing of theirs was outlined,
    and each region's yield/return uses a value of that region or outside."""
    main = next(op for op in m.body.ops if op.attributes.get("sym_name") == "main")
    kinds = [op.name for op in main.walk() if op.regions and op is not main]
    assert sorted(kinds) == ["relay.fn", "relay.if", "relay.match"], kinds
    for f in m.body.ops:
        if "primitive" in f.attributes:
            assert not any(op.regions for op in f.walk(include_self=False)), print_module(m)


@pytest.mark.parametrize("pipeline", PASSES)
def test_passes_keep_control_flow_opaque_and_meaning(pipeline):
    before = parse_module(PROGRAM)
    run(before, "infer-type")
    m = run(parse_module(PROGRAM), pipeline)
    text = print_module(m)
    assert print_module(parse_module(text)) == text
    regions_intact(m)
    for args in inputs():
        np.testing.assert_allclose(run_function(m, "main", *args), run_function(before, "main", *args),
                                   rtol=1e-5, atol=1e-5)


def test_fuse_ops_fuses_inside_each_region_separately():
    m = run(parse_module(PROGRAM), "fuse-ops")
    text = print_module(m)
    # the conv group lives in the then-branch, the negative+exp group in the else-branch
    main = text[text.index("relay.func @main"):]
    then_part = main[main.index("%r = if"):main.index("} else {")]
    else_part = main[main.index("} else {"):main.index("%f = fn")]
    assert "call @fused_nn_conv2d_nn_bias_add_nn_relu(" in then_part
    assert "call @fused_negative_exp(" in else_part


@FUZZ
@given(programs())
def test_random_control_flow_through_the_graph_passes(prog):
    text, args = prog
    ref = parse_module(text)
    run(ref, "infer-type")
    want = run_function(ref, "main", *args)
    for pipeline in ("fuse-ops", "fold-constant", "canonicalize", "fold-constant,canonicalize,cse,dce,fuse-ops"):
        m = run(parse_module(text), pipeline)
        out = print_module(m)
        assert print_module(parse_module(out)) == out
        assert np.array_equal(run_function(m, "main", *args), want), pipeline


CONV_USED_IN_REGIONS = """relay.func @main(%c: tensor<i1>, %x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %conv = nn.conv2d(%x, %w) {padding = [1, 1]}
  %q = nn.relu(%conv)
  %r = if %c {
    %e = exp(%q)
    %conv2 = nn.conv2d(%e, %w) {padding = [1, 1]}
    yield %conv2
  } else {
    yield %q
  }
  return %r
}
"""


def _convert(text):
    m = run(parse_module(text), "convert-layout{nn.conv2d=NHWC}")
    before = run(parse_module(text), "infer-type")
    rng = np.random.default_rng(1)
    x = rng.integers(-2, 3, (1, 4, 8, 8)).astype(np.float32)
    w = rng.integers(-1, 2, (4, 4, 3, 3)).astype(np.float32)
    for c in (True, False):
        np.testing.assert_allclose(run_function(m, "main", np.array(c), x, w),
                                   run_function(before, "main", np.array(c), x, w), rtol=1e-5)
    return m


def test_convert_layout_value_used_inside_a_region_is_transformed_back_once():
    """A converted value used inside a branch reaches it through its twin:
    the conv runs once and nothing dead is left."""
    m = _convert(CONV_USED_IN_REGIONS)
    main = m.body.first
    top = [op.name for op in main.body.ops]
    assert top.count("relay.nn.conv2d") == 1, print_module(m)
    assert all(op.results[0].uses for op in main.body.ops if op.results), print_module(m)


def test_convert_layout_converts_a_conv_inside_a_branch():
    """As TVM's ConvertLayout, convs inside branches convert too."""
    m = _convert(CONV_USED_IN_REGIONS)
    convs = [op for op in m.walk() if op.name == "relay.nn.conv2d"]
    assert all(op.attributes.get("data_layout") == "NHWC" for op in convs), print_module(m)


def test_fuse_ops_kernels_take_only_tensors():
    """A get_item of a tuple holding a closure or an ADT value stays outside
    kernels: a kernel takes and gives tensors (and tuples of them) only."""
    m = run(parse_module("""relay.adt @Opt<A> { Some(!A), None }
relay.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %f = fn (%y: tensor<4xf32>) { return %y }
  %a = nn.relu(%x)
  %s = Some(%a)
  %t = tuple(%f, %a, %s)
  %b = get_item(%t) {index = 1}
  %r = exp(%b)
  return %r
}"""), "fuse-ops")
    for f in m.body.ops:
        if "primitive" in f.attributes:
            assert all(str(a.type).startswith("tensor<") for a in f.body.args), print_module(m)
