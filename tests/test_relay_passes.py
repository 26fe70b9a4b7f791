"""Relay graph passes: behaviour on small graphs, and semantics on random
programs (the reference interpreter before and after must agree)."""

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tvmd.dialects.relay.interpreter import run_function
from tvmd.testing.relay_programs import relay_programs
from tvmd.ir.diagnostics import DiagnosticError
from tvmd.ir.pass_manager import PassManager, PassOptionError, instantiate, parse_pipeline
from tvmd.ir.printer import print_module
from tvmd.ir.registry import get_pass_class
from tvmd.parser import parse_module

# ~30 examples a test by default; the "thorough" profile (TVMD_FUZZ=1) raises it
EXAMPLES = max(30, settings.default.max_examples) if settings.default.max_examples > 100 else 30
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


def run(text, pipeline):
    """Parse, run the pipeline (verifying after each pass), return (module, stats)."""
    m = parse_module(text, "t.relay")
    pm = PassManager(instantiate(parse_pipeline(pipeline), get_pass_class))
    pm.run(m)
    return m, pm.ctx.stats


def funcs(m):
    return {op.attributes["sym_name"]: op for op in m.body.ops}


def body_ops(func):
    return [op.name for op in func.body.ops]


def kernels(m):
    return {n: f for n, f in funcs(m).items() if "primitive" in f.attributes}


RESNET_BLOCK = """
relay.func @main(%x: tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %w1 = constant dense_resource<w1> : tensor<4x4x3x3xf32>
  %b1 = constant dense<[1.0, -1.0, 0.5, 2.0]> : tensor<4xf32>
  %w2 = constant dense_resource<w2> : tensor<4x4x3x3xf32>
  %b2 = constant dense<[0.0, 1.0, -2.0, 3.0]> : tensor<4xf32>
  %c1 = nn.conv2d(%x, %w1) {padding = [1, 1]}
  %a1 = nn.bias_add(%c1, %b1)
  %r1 = nn.relu(%a1)
  %c2 = nn.conv2d(%r1, %w2) {padding = [1, 1]}
  %a2 = nn.bias_add(%c2, %b2)
  %s = add(%a2, %x)
  %r2 = nn.relu(%s)
  return %r2
}
"""


def resnet_text():
    """RESNET_BLOCK with its two weights in the resource section."""
    rng = np.random.default_rng(1)
    blobs = []
    for key in ("w1", "w2"):
        w = rng.integers(-1, 2, size=(4, 4, 3, 3)).astype("<f4")
        blobs.append(f'      {key}: "0x04000000{w.tobytes().hex().upper()}"')
    return RESNET_BLOCK + "\n{-#\n  dialect_resources: {\n    builtin: {\n" + ",\n".join(blobs) + \
        "\n    }\n  }\n#-}\n"


def x_input(shape=(1, 4, 6, 6), seed=0):
    return np.random.default_rng(seed).integers(-3, 4, size=shape).astype(np.float32)


# -- infer-type ----------------------------------------------------------------------

LATER_CALLEE = """
relay.func @main(%x: tensor<2x3xf32>) {
  %a = call @f(%x)
  %b = nn.relu(%a)
  return %b
}
relay.func @f(%y: tensor<2x3xf32>) {
  %z = call @g(%y)
  return %z
}
relay.func @g(%y: tensor<2x3xf32>) {
  %z = add(%y, %y)
  return %z
}
"""


def test_infer_type_fills_calls_and_results_callees_first():
    m, stats = run(LATER_CALLEE, "infer-type")
    text = print_module(m)
    assert "relay.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32>" in text
    assert "%a = call @f(%x) : tensor<2x3xf32>" in text
    assert "%b = nn.relu(%a) : tensor<2x3xf32>" in text
    assert stats["infer-type"]["types-inferred"] == 5   # %a, %b, main's result, f's %z and result
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    assert np.array_equal(run_function(m, "main", x), np.maximum(2 * x, 0))


def test_infer_type_error_points_at_the_op():
    text = LATER_CALLEE.replace("%b = nn.relu(%a)", "%k = constant dense<1.0> : tensor<4xf32>\n  %b = add(%a, %k)")
    with pytest.raises(Exception) as e:
        run(text, "infer-type")
    d = e.value.exc if hasattr(e.value, "exc") else e.value
    assert isinstance(d, DiagnosticError)
    assert "cannot be broadcast" in str(d) and d.loc.line == 5


def test_infer_type_recursion_needs_a_declared_result():
    text = """relay.func @main(%x: tensor<2xf32>) {
  %y = call @main(%x)
  return %y
}"""
    with pytest.raises(Exception, match="recursively"):
        run(text, "infer-type")
    m, _ = run(text.replace("{\n", "-> tensor<2xf32> {\n", 1), "infer-type")
    assert "call @main(%x) : tensor<2xf32>" in print_module(m)


def test_infer_type_checks_declared_return_type():
    text = """relay.func @main(%x: tensor<2xf32>) -> tensor<3xf32> {
  %a = call @f(%x)
  return %a
}
relay.func @f(%y: tensor<2xf32>) { return %y }"""
    with pytest.raises(Exception, match="doesn't match function result type"):
        run(text, "infer-type")


def _strip_types(text):
    """Drop the result types the parser can infer (ops and calls, not constants)."""
    return re.sub(r"^(\s*%\S+ = (?!constant)[^\n]*?) : tensor<[^>\n]*>$", r"\1", text, flags=re.M)


@FUZZ
@given(relay_programs())
def test_infer_type_recovers_stripped_types(prog):
    text, inputs = prog
    want = print_module(parse_module(text))
    m, _ = run(_strip_types(text), "infer-type")
    assert print_module(m) == want
    assert np.array_equal(run_function(m, "main", *inputs), run_function(parse_module(text), "main", *inputs))


# -- fuse-ops -------------------------------------------------------------------------

def test_fuse_resnet_block_gives_tvm_kernel_count():
    m, stats = run(resnet_text(), "fuse-ops")
    ks = kernels(m)
    assert sorted(ks) == ["fused_nn_conv2d_nn_bias_add_add_nn_relu", "fused_nn_conv2d_nn_bias_add_nn_relu"]
    assert body_ops(ks["fused_nn_conv2d_nn_bias_add_nn_relu"]) == [
        "relay.nn.conv2d", "relay.nn.bias_add", "relay.nn.relu", "relay.return"]
    assert body_ops(ks["fused_nn_conv2d_nn_bias_add_add_nn_relu"]) == [
        "relay.nn.conv2d", "relay.nn.bias_add", "relay.add", "relay.nn.relu", "relay.return"]
    main = funcs(m)["main"]
    assert [n for n in body_ops(main) if n == "relay.call"] == ["relay.call"] * 2
    assert stats["fuse-ops"]["fused-groups"] == 2
    text = print_module(m)
    assert "attributes {primitive}" in text
    # kernels come before their caller; weights and biases stay in main as arguments
    assert text.index("@fused_nn_conv2d_nn_bias_add_nn_relu(") < text.index("relay.func @main")
    assert "%r2 = call @fused_nn_conv2d_nn_bias_add_add_nn_relu(%r1, %w2, %b2, %x)" in text
    x = x_input()
    assert np.array_equal(run_function(m, "main", x), run_function(parse_module(resnet_text()), "main", x))


def test_fuse_tvm_conv2d_case():
    """TVM's test_conv2d_fuse: four kernels; of the two convs that meet in an
    add, only the first one visited fuses with it."""
    text = """
relay.func @main(%x: tensor<1x2x5x5xf32>, %w1: tensor<2x2x3x3xf32>, %w2: tensor<2x2x1x1xf32>,
                 %w3: tensor<2x2x3x3xf32>) {
  %one = constant dense<1.0> : tensor<f32>
  %x1 = add(%x, %one)
  %y = nn.conv2d(%x1, %w1) {padding = [1, 1]}
  %y1 = add(%one, %y)
  %y2 = add(%y, %y1)
  %z2 = nn.conv2d(%y2, %w2)
  %z3 = nn.conv2d(%y2, %w3) {padding = [1, 1]}
  %z = add(%z2, %z3)
  return %z
}"""
    m, _ = run(text, "fuse-ops")
    got = sorted(tuple(n[len("relay."):] for n in body_ops(f)[:-1]) for f in kernels(m).values())
    # the scalar constant is cloned into each kernel that uses it, before its first use
    assert got == sorted([("constant", "add"), ("nn.conv2d", "constant", "add", "add"), ("nn.conv2d",),
                          ("nn.conv2d", "add")])
    one_by_one = [f for f in kernels(m).values() if body_ops(f)[:2] == ["relay.nn.conv2d", "relay.add"]]
    assert one_by_one[0].body.args[1].type.shape == (2, 2, 1, 1)
    args = [x_input((1, 2, 5, 5)), *(x_input(s, i) for i, s in enumerate([(2, 2, 3, 3), (2, 2, 1, 1), (2, 2, 3, 3)]))]
    assert np.array_equal(run_function(m, "main", *args), run_function(parse_module(text), "main", *args))


DIAMOND = """
relay.func @main(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) {
  %d = nn.dense(%x, %w)
  %a = nn.relu(%d)
  %b = multiply(%d, %d)
  %c = add(%a, %b)
  %e = layout_transform(%c) {src_layout = "NC", dst_layout = "CN"}
  %f = nn.relu(%e)
  return %f
}"""


def test_fuse_diamond_into_anchor_and_injective_chain_separately():
    m, _ = run(DIAMOND, "fuse-ops")
    got = sorted(tuple(body_ops(f)[:-1]) for f in kernels(m).values())
    assert got == [("relay.layout_transform", "relay.nn.relu"),
                   ("relay.nn.dense", "relay.nn.relu", "relay.multiply", "relay.add")]


def _partition(patterns, edges, extern):
    """Partition a synthetic graph (the dialect has no reduction op yet)."""
    from tvmd.dialects.relay.passes import fuse_ops as F
    g = object.__new__(F.Graph)
    g.ops = list(range(len(patterns)))
    g.pattern = list(patterns)
    g.outputs = [[] for _ in patterns]
    for src, dst, pat in edges:
        g.outputs[src].append((dst, pat))
    g.extern_ref = [i in extern for i in range(len(patterns))]
    groups = F.partition(g)
    return [groups[i].find().root for i in range(len(patterns))]


def test_fuse_partition_rules_for_reductions_and_anchors():
    from tvmd.dialects.relay.passes.fuse_ops import (BROADCAST, COMM_REDUCE, ELEMWISE, INJECTIVE,
                                                     OPAQUE, OUT_EWISE)
    # elemwise -> reduce -> elemwise: the first joins the reduction, nothing leaves it
    assert _partition([ELEMWISE, COMM_REDUCE, ELEMWISE], [(0, 1, COMM_REDUCE), (1, 2, ELEMWISE)], {2}) == [1, 1, 2]
    # anchor -> elemwise -> injective: the anchor's group does not take the injective op
    assert _partition([OUT_EWISE, ELEMWISE, INJECTIVE], [(0, 1, ELEMWISE), (1, 2, INJECTIVE)], {2}) == [1, 1, 2]
    # anchor -> broadcast (edge not elemwise) is not fused
    assert _partition([OUT_EWISE, BROADCAST], [(0, 1, BROADCAST)], {1}) == [0, 1]
    # injective -> injective -> elemwise: an injective chain (phase 1)
    assert _partition([INJECTIVE, INJECTIVE, ELEMWISE], [(0, 1, INJECTIVE), (1, 2, ELEMWISE)], {2}) == [2, 2, 2]
    # an opaque node on the path blocks fusion around it
    assert _partition([ELEMWISE, OPAQUE, ELEMWISE, ELEMWISE],
                      [(0, 1, OPAQUE), (0, 2, ELEMWISE), (1, 3, ELEMWISE), (2, 3, ELEMWISE)], {3}) == [0, 1, 3, 3]


def test_fuse_opt_level_zero_keeps_each_op_alone():
    m, stats = run(DIAMOND, "fuse-ops{opt-level=0}")
    assert stats["fuse-ops"]["fused-groups"] == 6
    assert all(len(body_ops(f)) == 2 for f in kernels(m).values())


def test_fuse_max_depth_caps_group_size():
    chain = "\n".join(f"  %r{i + 1} = nn.relu(%r{i})" for i in range(10))
    text = f"relay.func @main(%r0: tensor<4xf32>) {{\n{chain}\n  return %r10\n}}"
    m, stats = run(text, "fuse-ops{max-depth=3}")
    sizes = sorted(len(body_ops(f)) - 1 for f in kernels(m).values())
    calls = [op for op in funcs(m)["main"].body.ops if op.name == "relay.call"]
    assert max(sizes) <= 3 and stats["fuse-ops"]["ops-fused"] == 10 and len(calls) == 4
    # identical groups share one kernel
    assert len(kernels(m)) < len(calls)
    x = np.array([-1, 2, -3, 4], np.float32)
    assert np.array_equal(run_function(m, "main", x), np.maximum(x, 0))


@pytest.mark.parametrize("n,opts,sizes", [(300, "", [256, 44]), (50, "{max-depth=20}", [20, 20, 10])])
def test_fuse_max_matches_tvm(n, opts, sizes):
    """TVM's test_fuse_max: a chain of exp splits into groups of max-depth, in order."""
    chain = "\n".join(f"  %e{i + 1} = exp(%e{i})" for i in range(n))
    m, _ = run(f"relay.func @main(%e0: tensor<10x20xf32>) {{\n{chain}\n  return %e{n}\n}}", "fuse-ops" + opts)
    calls = [op for op in funcs(m)["main"].body.ops if op.name == "relay.call"]
    assert [len(body_ops(funcs(m)[c.callee])) - 1 for c in calls] == sizes


def test_fuse_constants_scalar_cloned_tensor_passed_and_names_deduplicated():
    text = """
relay.func @main(%x: tensor<2x2xf32>) {
  %s = constant dense<2.0> : tensor<f32>
  %t = constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %a = multiply(%x, %s)
  %b = add(%a, %t)
  %c = nn.dense(%b, %b)
  %d = multiply(%c, %s)
  %e = add(%d, %t)
  %f = nn.dense(%e, %b)
  return %f
}
relay.func @fused_nn_dense(%y: tensor<2x2xf32>) { return %y }"""
    m, _ = run(text, "fuse-ops")
    ks = kernels(m)
    first = ks["fused_multiply_add"]
    assert body_ops(first) == ["relay.constant", "relay.multiply", "relay.add", "relay.return"]
    assert [a.type.shape for a in first.body.args] == [(2, 2), (2, 2)]   # %x and the tensor constant
    assert "fused_nn_dense_multiply_add" in ks and "fused_nn_dense_1" in ks   # clash with the user's name
    main = funcs(m)["main"]
    assert "%s" not in print_module(m).split("relay.func @main")[1].split("return")[0].replace("%s =", "")
    assert [op.name for op in main.body.ops].count("relay.constant") == 1   # only the tensor constant stays


def test_fuse_leaves_calls_and_primitive_functions():
    text = """
relay.func @k(%p: tensor<3xf32>) -> tensor<3xf32> attributes {primitive} {
  %r = nn.relu(%p)
  %n = negative(%r)
  return %n
}
relay.func @main(%x: tensor<3xf32>) {
  %a = nn.relu(%x)
  %b = call @k(%a)
  %c = nn.relu(%b)
  return %c
}"""
    m, stats = run(text, "fuse-ops")
    assert body_ops(funcs(m)["k"]) == ["relay.nn.relu", "relay.negative", "relay.return"]
    assert stats["fuse-ops"]["fused-groups"] == 2   # the relus on either side of the call
    assert body_ops(funcs(m)["main"]) == ["relay.call"] * 3 + ["relay.return"]


@pytest.mark.parametrize("bad", ["max-depth=0", "opt-level=-1", "depth=3"])
def test_fuse_bad_options(bad):
    with pytest.raises(PassOptionError):
        get_pass_class("fuse-ops").from_options(bad)


def _check_fused_structure(m):
    for f in funcs(m).values():
        if f.name != "relay.func":
            continue
        if "primitive" in f.attributes:
            for op in f.body.ops:
                assert op.name != "relay.call"
                if op.name == "relay.constant":
                    assert op.attributes["value"].size == 1
        else:
            for op in f.body.ops:
                assert op.name in ("relay.call", "relay.constant", "relay.return")


@FUZZ
@given(relay_programs())
def test_fuse_ops_preserves_semantics(prog):
    text, inputs = prog
    want = run_function(parse_module(text), "main", *inputs)
    for opts in ("", "{max-depth=2}", "{opt-level=0}"):
        m, _ = run(text, "fuse-ops" + opts)
        _check_fused_structure(m)
        assert np.array_equal(run_function(m, "main", *inputs), want)


# -- convert-layout --------------------------------------------------------------------

def count(m, name):
    return sum(1 for op in m.walk() if op.name == name)


def test_convert_layout_resnet_block_to_nhwc():
    m, stats = run(resnet_text(), "convert-layout{nn.conv2d=NHWC}")
    main = funcs(m)["main"]
    convs = [op for op in main.body.ops if op.name == "relay.nn.conv2d"]
    assert [(c.attributes["data_layout"], c.attributes["kernel_layout"]) for c in convs] == [("NHWC", "HWIO")] * 2
    assert [op.attributes["axis"] for op in main.body.ops if op.name == "relay.nn.bias_add"] == [3, 3]
    ts = [(op.operands[0].name, op.attributes["src_layout"], op.attributes["dst_layout"])
          for op in main.body.ops if op.name == "relay.layout_transform"]
    # the input once (shared by conv1 and the residual add), two weights, the result once
    assert ts == [("x", "NCHW", "NHWC"), ("w1", "OIHW", "HWIO"), ("w2", "OIHW", "HWIO"), ("r2", "NHWC", "NCHW")]
    cl = stats["convert-layout"]
    assert (cl["convs-converted"], cl["layout-transforms"]) == (2, 4)
    x = x_input()
    assert np.array_equal(run_function(m, "main", x), run_function(parse_module(resnet_text()), "main", x))
    # the weight transforms fold away: one transform in, one out
    m2, _ = run(resnet_text(), "convert-layout{nn.conv2d=NHWC},fold-constant")
    assert count(m2, "relay.layout_transform") == 2
    assert 'dense_resource<w1_hwio>' in print_module(m2)


def test_convert_layout_kernel_option_and_back_to_nchw():
    nhwc = """
relay.func @main(%x: tensor<1x5x5x2xf32>, %w: tensor<3x3x2x4xf32>) {
  %c = nn.conv2d(%x, %w) {data_layout = "NHWC", kernel_layout = "HWIO"}
  %r = nn.relu(%c)
  return %r
}"""
    x, w = x_input((1, 5, 5, 2)), x_input((3, 3, 2, 4), 1)
    want = run_function(parse_module(nhwc), "main", x, w)
    m, _ = run(nhwc, "convert-layout{nn.conv2d=NCHW}")
    conv = next(op for op in m.walk() if op.name == "relay.nn.conv2d")
    assert (conv.attributes["data_layout"], conv.attributes["kernel_layout"]) == ("NCHW", "OIHW")
    assert np.array_equal(run_function(m, "main", x, w), want)
    m, _ = run(nhwc, "convert-layout{nn.conv2d=NCHW:OHWI}")
    conv = next(op for op in m.walk() if op.name == "relay.nn.conv2d")
    assert conv.attributes["kernel_layout"] == "OHWI"
    assert np.array_equal(run_function(m, "main", x, w), want)


def test_convert_layout_cancels_inverse_transforms():
    text = """
relay.func @main(%x: tensor<1x5x5x2xf32>, %w: tensor<4x2x3x3xf32>) {
  %t = layout_transform(%x) {src_layout = "NHWC", dst_layout = "NCHW"}
  %c = nn.conv2d(%t, %w)
  %b = layout_transform(%c) {src_layout = "NCHW", dst_layout = "NHWC"}
  return %b
}"""
    m, stats = run(text, "convert-layout{nn.conv2d=NHWC}")
    main = funcs(m)["main"]
    conv = next(op for op in main.body.ops if op.name == "relay.nn.conv2d")
    assert conv.operands[0].name == "x"             # reads the NHWC input directly
    assert main.body.last.operands[0] is conv.results[0]
    assert stats["convert-layout"]["layout-transforms"] == 1   # only the weight's
    x, w = x_input((1, 5, 5, 2)), x_input((4, 2, 3, 3), 1)
    assert np.array_equal(run_function(m, "main", x, w), run_function(parse_module(text), "main", x, w))


def test_convert_layout_broadcast_constants_and_blocked_consumers():
    text = """
relay.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x1x1xf32>, %v: tensor<3x4x4xf32>) {
  %c = nn.conv2d(%x, %w)
  %k = constant dense<[[[1.0]], [[2.0]], [[3.0]]]> : tensor<3x1x1xf32>
  %m = multiply(%c, %k)
  %s = constant dense<0.5> : tensor<1x1x1x1xf32>
  %a = add(%m, %s)
  %u = subtract(%a, %v)
  return %u
}"""
    m, _ = run(text, "convert-layout{nn.conv2d=NHWC}")
    names = body_ops(funcs(m)["main"])
    # multiply and add adapt (the 3x1x1 constant is re-laid out); subtract with a
    # lower-rank non-constant cannot, so the value goes back to NCHW before it
    assert names.index("relay.multiply") < names.index("relay.add") < names.index("relay.subtract")
    sub = next(op for op in m.walk() if op.name == "relay.subtract")
    assert sub.operands[0].defining_op().name == "relay.layout_transform"
    args = [x_input((1, 2, 4, 4)), x_input((3, 2, 1, 1), 1), x_input((3, 4, 4), 2)]
    assert np.array_equal(run_function(m, "main", *args), run_function(parse_module(text), "main", *args))


@pytest.mark.parametrize("bad,msg", [("target=rocm", "unknown target"), ("nn.dense=NHWC", "cannot convert"),
                                     ("nn.conv2d=NCWH", "not supported"), ("nn.conv2d=NHWC:OIHX", "permutation")])
def test_convert_layout_bad_options(bad, msg):
    with pytest.raises(PassOptionError, match=msg):
        get_pass_class("convert-layout").from_options(bad)


@FUZZ
@given(relay_programs())
def test_convert_layout_preserves_semantics(prog):
    text, inputs = prog
    want = run_function(parse_module(text), "main", *inputs)
    for layout in ("NHWC", "NCHW"):
        m, _ = run(text, f"convert-layout{{nn.conv2d={layout}}}")
        for op in m.walk():
            if op.name == "relay.nn.conv2d":
                assert op.attributes["data_layout"] == layout
        np.testing.assert_allclose(run_function(m, "main", *inputs), want, rtol=1e-5)


# -- fold-constant ------------------------------------------------------------------------

def test_fold_constant_chain_keys_and_dead_constants():
    text = """
relay.func @main(%x: tensor<2xf32>) {
  %a = constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = constant dense<3.0> : tensor<2xf32>
  %sum = add(%a, %b)
  %0 = multiply(%sum, %sum)
  %y = add(%x, %0)
  %k = call @f(%a)
  %z = add(%y, %k)
  return %z
}
relay.func @f(%p: tensor<2xf32>) { return %p }"""
    m, stats = run(text, "fold-constant")
    main = funcs(m)["main"]
    assert stats["fold-constant"] == {"ops-folded": 2, "constants-removed": 2}
    consts = [op for op in main.body.ops if op.name == "relay.constant"]
    assert [c.results[0].name for c in consts] == ["a", None]   # %a still feeds the call
    assert consts[1].attributes["value"].key == "sum_multiply"
    assert consts[1].attributes["value"].array.tolist() == [16.0, 25.0]
    assert count(m, "relay.call") == 1   # calls are not folded


@FUZZ
@given(relay_programs())
def test_fold_constant_preserves_semantics(prog):
    text, inputs = prog
    m, _ = run(text, "fold-constant")
    for op in funcs(m)["main"].body.ops:
        if op.operands and op.name not in ("relay.call", "relay.return"):
            assert any(v.defining_op() is None or v.defining_op().name != "relay.constant" for v in op.operands)
    assert np.array_equal(run_function(m, "main", *inputs), run_function(parse_module(text), "main", *inputs))


# -- dce ----------------------------------------------------------------------------------

def test_dce_removes_dead_ops_and_unused_kernels_only():
    text = """
relay.func @dead_kernel(%p: tensor<2xf32>) -> tensor<2xf32> attributes {primitive} {
  %r = call @inner(%p) : tensor<2xf32>
  return %r
}
relay.func @inner(%p: tensor<2xf32>) -> tensor<2xf32> attributes {primitive} { return %p }
relay.func @live_kernel(%p: tensor<2xf32>) -> tensor<2xf32> attributes {primitive} { return %p }
relay.func @helper(%p: tensor<2xf32>) -> tensor<2xf32> { return %p }
relay.func @main(%x: tensor<2xf32>) {
  %a = nn.relu(%x)
  %b = negative(%a)
  %c = call @helper(%b)
  %d = call @live_kernel(%x)
  return %d
}"""
    m, stats = run(text, "dce")
    assert sorted(funcs(m)) == ["helper", "live_kernel", "main"]
    assert body_ops(funcs(m)["main"]) == ["relay.call", "relay.return"]
    assert stats["dce"] == {"ops-erased": 3, "functions-erased": 2}


@FUZZ
@given(relay_programs())
def test_dce_preserves_semantics(prog):
    text, inputs = prog
    m, _ = run(text, "dce")
    for op in funcs(m)["main"].body.ops:
        assert op.name == "relay.return" or op.results[0].uses
    assert np.array_equal(run_function(m, "main", *inputs), run_function(parse_module(text), "main", *inputs))


# -- cse ----------------------------------------------------------------------------------

def test_cse_merges_identical_and_commuted_ops_and_equal_constants():
    text = """
relay.func @main(%x: tensor<2xf32>, %y: tensor<2xf32>) {
  %a = add(%x, %y)
  %b = add(%y, %x)
  %c = subtract(%x, %y)
  %d = subtract(%y, %x)
  %k1 = constant dense<[1.0, 0.0]> : tensor<2xf32>
  %k2 = constant dense<[1.0, 0.0]> : tensor<2xf32>
  %k3 = constant dense<[1.0, -0.0]> : tensor<2xf32>
  %e = multiply(%a, %k1)
  %f = multiply(%b, %k2)
  %g = multiply(%a, %k3)
  %h = add(%e, %f)
  %i = add(%h, %g)
  %j = add(%c, %d)
  %z = add(%i, %j)
  return %z
}"""
    m, stats = run(text, "cse")
    assert stats["cse"]["ops-merged"] == 3   # %b, %k2, %f
    main = funcs(m)["main"]
    assert [op.results[0].name for op in main.body.ops if op.name == "relay.constant"] == ["k1", "k3"]
    assert len([op for op in main.body.ops if op.name == "relay.subtract"]) == 2
    x, y = np.array([1, 2], np.float32), np.array([-3, 5], np.float32)
    assert np.array_equal(run_function(m, "main", x, y), run_function(parse_module(text), "main", x, y))


def test_cse_merges_calls_to_relay_functions_but_not_different_attrs():
    text = """
relay.func @f(%p: tensor<1x2x2x2xf32>) { %r = nn.relu(%p)
 return %r }
relay.func @main(%x: tensor<1x2x2x2xf32>) {
  %a = call @f(%x)
  %b = call @f(%x)
  %c = layout_transform(%x) {src_layout = "NCHW", dst_layout = "NHWC"}
  %d = layout_transform(%x) {src_layout = "NCHW", dst_layout = "NWHC"}
  %s = add(%a, %b)
  return %s
}"""
    m, stats = run(text, "cse")
    assert stats["cse"]["ops-merged"] == 1
    assert count(m, "relay.layout_transform") == 2


@FUZZ
@given(relay_programs())
def test_cse_preserves_semantics(prog):
    text, inputs = prog
    m, _ = run(text, "cse")
    assert np.array_equal(run_function(m, "main", *inputs), run_function(parse_module(text), "main", *inputs))


# -- canonicalize -------------------------------------------------------------------------

def test_canonicalize_patterns():
    text = """
relay.func @main(%x: tensor<1x2x2x2xf32>) {
  %z = constant dense<0.0> : tensor<f32>
  %o = constant dense<1.0> : tensor<2x1x1xf32>
  %a = add(%z, %x)
  %b = multiply(%a, %o)
  %t1 = layout_transform(%b) {src_layout = "NCHW", dst_layout = "NHWC"}
  %t2 = layout_transform(%t1) {src_layout = "NHWC", dst_layout = "NCWH"}
  %r = nn.relu(%t2)
  %r2 = nn.relu(%r)
  %m = maximum(%r2, %r2)
  %k = constant dense<[1.0, 2.0]> : tensor<2xf32>
  %bb = nn.bias_add(%m, %k)
  %big = constant dense<0.0> : tensor<3x1x2x2x2xf32>
  %keep = add(%bb, %big)
  return %keep
}"""
    m, stats = run(text, "canonicalize")
    assert body_ops(funcs(m)["main"]) == [
        "relay.layout_transform", "relay.nn.relu", "relay.constant", "relay.nn.bias_add",
        "relay.constant", "relay.add", "relay.return"]
    t = next(op for op in m.walk() if op.name == "relay.layout_transform")
    assert (t.operands[0].name, t.attributes["src_layout"], t.attributes["dst_layout"]) == ("x", "NCHW", "NCWH")
    x = x_input((1, 2, 2, 2))
    assert np.array_equal(run_function(m, "main", x), run_function(parse_module(text), "main", x))
    assert stats["canonicalize"]["patterns-applied"] >= 5


def test_canonicalize_folds_constant_ops():
    text = """
relay.func @main(%x: tensor<2xf32>) {
  %a = constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = negative(%a)
  %c = add(%x, %b)
  return %c
}"""
    m, _ = run(text, "canonicalize")
    assert body_ops(funcs(m)["main"]) == ["relay.constant", "relay.add", "relay.return"]
    assert next(op for op in m.walk() if op.name == "relay.constant").attributes["value"].array.tolist() == [-1, -2]


@FUZZ
@given(relay_programs())
def test_canonicalize_preserves_semantics(prog):
    text, inputs = prog
    m, _ = run(text, "canonicalize")
    assert np.array_equal(run_function(m, "main", *inputs), run_function(parse_module(text), "main", *inputs))


# -- everything together, and the text round trip ----------------------------------------

@FUZZ
@given(relay_programs())
def test_pipeline_preserves_semantics_and_prints_round_trip(prog):
    text, inputs = prog
    want = run_function(parse_module(text), "main", *inputs)
    m, _ = run(text, "convert-layout{nn.conv2d=NHWC},fold-constant,canonicalize,cse,dce,fuse-ops,dce")
    np.testing.assert_allclose(run_function(m, "main", *inputs), want, rtol=1e-5)
    out = print_module(m)
    assert print_module(parse_module(out)) == out


@settings(max_examples=max(50, EXAMPLES), deadline=None, suppress_health_check=list(HealthCheck))
@given(relay_programs())
def test_random_programs_round_trip_exactly(prog):
    text, _ = prog
    once = print_module(parse_module(text))
    assert print_module(parse_module(once)) == once
    generic = print_module(parse_module(text), generic=True)
    assert print_module(parse_module(generic)) == once


def test_passes_run_nested_under_a_function_anchor():
    text = resnet_text()
    m, stats = run(text, "relay.func(fold-constant,cse,dce,canonicalize,convert-layout{nn.conv2d=NHWC})")
    assert stats["convert-layout"]["convs-converted"] == 2
