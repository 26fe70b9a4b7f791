"""--lower-relay-to-te, --apply-schedule and --lower-te-to-tir as passes:
the tir they produce, its numbers (tir interpreter) against the relay
ops' compute(), and the shape of the default schedules."""

import numpy as np
import pytest

from tvmd.dialects.te.interpreter import run
from tvmd.dialects.tir.interpreter import run as run_tir
from tvmd.ir.pass_manager import PassManager
from tvmd.ir.printer import print_module
from tvmd.ir.registry import get_pass_class
from tvmd.parser import parse_module


def passes(*names):
    return PassManager([(None, get_pass_class(n)()) for n in names])


def evaluate(module, name, args):
    """Run @name: relay ops by compute(), calls into te/tir/relay functions."""
    f = module.lookup(name)
    env = dict(zip(f.body.args, args))
    for op in f.body.ops:
        if op.name == "relay.return":
            return [env[v] for v in op.operands]
        a = [env[v] for v in op.operands]
        if op.name != "relay.call":
            env[op.results[0]] = op.compute(*a)
            continue
        callee = module.lookup(op.callee)
        if callee.name == "te.func":
            env[op.results[0]] = run(callee, *a)[0]
        elif callee.name == "tir.func":
            outs = [np.full(o.type.shape, np.nan, o.type.dtype) for o in callee.outputs]
            run_tir(callee, *a, *outs)
            env[op.results[0]] = outs[0]
        else:
            env[op.results[0]] = evaluate(module, op.callee, a)[0]


PIPELINE = """relay.func @fused_conv(%x: tensor<1x3x6x6xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x6x6xf32> attributes {primitive} {
  %c = nn.conv2d(%x, %w) {padding = [1, 1]}
  %b = constant dense<[0.5, -1.0, 2.0, 0.0, 1.0, 3.0, -2.0, 0.25]> : tensor<8xf32>
  %a = nn.bias_add(%c, %b)
  %r = nn.relu(%a)
  return %r
}
relay.func @main(%x: tensor<1x3x6x6xf32>, %w: tensor<8x3x3x3xf32>, %w2: tensor<16x8xf32>) -> tensor<1x6x6x16xf32> {
  %y = call @fused_conv(%x, %w) : tensor<1x8x6x6xf32>
  %t = layout_transform(%y) {src_layout = "NCHW", dst_layout = "NHWC"}
  %z = multiply(%t, %t)
  %d = nn.dense(%z, %w2)
  %s = sigmoid(%d)
  return %s
}
"""


def test_relay_to_tir_pipeline_numbers():
    m = parse_module(PIPELINE)
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(a.type.shape).astype(np.float32) for a in m.lookup("main").body.args]
    (want,) = evaluate(m, "main", args)
    for name in ("lower-relay-to-te", "apply-schedule", "lower-te-to-tir"):
        passes(name).run(m)
        printed = print_module(m)
        assert print_module(parse_module(printed)) == printed
        (got,) = evaluate(m, "main", args)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    kinds = sorted({op.name for op in m.body.ops})
    assert kinds == ["relay.func", "tir.func"]
    # every relay op outside the primitive function was outlined into a kernel
    main = m.lookup("main")
    assert [op.name for op in main.body.ops].count("relay.call") == 5
    assert {op.name for op in main.body.ops} == {"relay.call", "relay.constant", "relay.return"}


def test_lower_alone_applies_the_schedule():
    m = parse_module(PIPELINE)
    passes("lower-relay-to-te", "lower-te-to-tir").run(m)
    f = m.lookup("fused_conv")
    assert f.name == "tir.func" and f.attributes["num_outputs"] == 1
    assert [a.type.shape for a in f.body.args] == [(1, 3, 6, 6), (8, 3, 3, 3), (8,), (1, 8, 6, 6)]
    assert not any(op.name.startswith("te.") for op in f.walk())


def loop_kinds(f):
    """Loops outermost first: (name, extent, kind, depth)."""
    out = []

    def walk(block, depth):
        for op in block.ops:
            if op.name == "tir.for":
                out.append((op.body.args[0].name, op.attributes["upper"], op.attributes["kind"], depth))
                walk(op.body, depth + 1)
            else:
                for r in op.regions:
                    for b in r.blocks:
                        walk(b, depth)
    walk(f.body, 0)
    return out


@pytest.mark.parametrize("text,reduce_names,blocked", [
    ("""relay.func @d(%x: tensor<4x64xf32>, %w: tensor<48x64xf32>) -> tensor<4x48xf32> attributes {primitive} {
  %r = nn.dense(%x, %w)
  return %r
}""", {"k"}, "row"),
    ("""relay.func @c(%x: tensor<1x8x10x10xf32>, %w: tensor<16x8x3x3xf32>, %b: tensor<16xf32>) -> tensor<1x16x8x8xf32> attributes {primitive} {
  %c = nn.conv2d(%x, %w)
  %a = nn.bias_add(%c, %b)
  %r = nn.relu(%a)
  return %r
}""", {"rc", "ry", "rx"}, True),
    ("""relay.func @c(%x: tensor<1x10x10x8xf32>, %w: tensor<3x3x8x16xf32>) -> tensor<1x8x8x16xf32> attributes {primitive} {
  %r = nn.conv2d(%x, %w) {data_layout = "NHWC", kernel_layout = "HWIO"}
  return %r
}""", {"rc", "ry", "rx"}, True),
    # enough rows for a GEMM: the N x K weight packed into 16-column panels,
    # an 8 x 16 register tile
    ("""relay.func @d(%x: tensor<32x64xf32>, %w: tensor<48x64xf32>) -> tensor<32x48xf32> attributes {primitive} {
  %r = nn.dense(%x, %w)
  return %r
}""", {"k"}, "gemm"),
    # y read along j: no packing, an 8 x 32 register tile
    ("""relay.func @b(%x: tensor<2x16x8xf32>, %y: tensor<2x8x64xf32>) -> tensor<2x16x64xf32> attributes {primitive} {
  %r = nn.batch_matmul(%x, %y) {transpose_b = false}
  return %r
}""", {"k"}, "gemm"),
])
def test_default_schedule_is_tiled(text, reduce_names, blocked):
    """Not the naive nest: a parallel outer loop, the reduction inside it,
    and a vector loop of 16 or 8 inside the reduction (after a loop of 4
    unrolled, for register blocking)."""
    m = parse_module(text)
    passes("lower-relay-to-te", "lower-te-to-tir").run(m)
    ls = loop_kinds(m.body.first)
    par = [l for l in ls if l[2] == "parallel"]
    assert par and par[0][3] == 0
    red = [l for l in ls if l[0] in reduce_names]
    assert red and all(l[3] > 0 for l in red)
    if blocked == "row":   # reduction along memory: the reduce loop itself is vectorized
        assert "pragma_llvm_vectorize = 16" in print_module(m)
        return
    deepest = max(l[3] for l in red)
    if blocked == "gemm":
        assert "pragma_llvm_vectorize" not in print_module(m)
        assert any(l[2] == "vectorized" and l[1] in (16, 32) and l[3] == deepest + 2 for l in ls)
        assert any(l[2] == "unrolled" and l[1] in (4, 6, 8) and l[3] == deepest + 1 for l in ls)
        return
    assert any(l[2] == "vectorized" and l[1] in (8, 16) and l[3] > deepest for l in ls)
    if blocked:   # register blocking: 16, 8 or 4 accumulators per vector load
        assert any(l[2] == "unrolled" and l[1] in (4, 8, 16) and l[3] == deepest + 1 for l in ls)


def test_elementwise_default_schedule():
    m = parse_module("""relay.func @e(%x: tensor<2x3x32xf32>, %y: tensor<32xf32>) -> tensor<2x3x32xf32> attributes {primitive} {
  %a = add(%x, %y)
  %r = exp(%a)
  return %r
}""")
    passes("lower-relay-to-te", "lower-te-to-tir").run(m)
    f = m.body.first
    assert loop_kinds(f) == [("ax0.ax1.ax2.outer.fused", 12, "parallel", 0), ("ax2.inner", 16, "vectorized", 1)]
    assert sum(op.name == "tir.intrin" for op in f.walk()) == 1


GUARDED = """te.func @pad(%A: tensor<4xf32>) {
  %P = te.compute [%i] : tensor<6xf32> {
    %c1 = arith.constant 1 : index
    %c5 = arith.constant 5 : index
    %lo = arith.cmpi sge, %i, %c1 : index
    %hi = arith.cmpi slt, %i, %c5 : index
    %in = arith.andi %lo, %hi : i1
    %j = arith.subi %i, %c1 : index
    %v = te.read %A[%j] if %in else 7.0 : f32
    yield %v
  }
  %Q = te.compute [%i] : tensor<6xf32> {
    %p = te.read %P[%i] : f32
    %s = arith.addf %p, %p : f32
    yield %s
  }
  return %Q, %A
}
"""


def test_lowering_details():
    m = parse_module(GUARDED)
    passes("lower-te-to-tir").run(m)
    f = m.body.first
    text = print_module(m)
    assert text.startswith("tir.func @pad(%A: memref<4xf32>, %Q: memref<6xf32>, %out1: memref<4xf32>) "
                           "attributes {num_outputs = 2}")
    assert "%P = tir.alloc : memref<6xf32>" in text
    # the guarded read loads at a selected, always valid index, then selects the value
    load = next(op for op in f.walk() if op.name == "tir.load" and op.operands[0].name == "A")
    assert load.operands[1].defining_op().name == "arith.select"
    a = np.arange(4, dtype=np.float32)
    q, out1 = np.zeros(6, np.float32), np.zeros(4, np.float32)
    run_tir(f, a, q, out1)
    np.testing.assert_array_equal(q, [14, 0, 2, 4, 6, 14])
    np.testing.assert_array_equal(out1, a)


def test_compute_at_storage_is_allocated_in_the_loop():
    m = parse_module(GUARDED.replace("  return %Q, %A", "  %i = te.axes %Q\n  te.compute_at %P, %i\n  return %Q"))
    passes("lower-te-to-tir").run(m)
    f = m.body.first
    loop = next(op for op in f.body.ops if op.name == "tir.for")
    assert any(op.name == "tir.alloc" and op.results[0].type.shape == (1,) for op in loop.body.ops)
    q = np.zeros(6, np.float32)
    run_tir(f, np.arange(4, dtype=np.float32), q)
    np.testing.assert_array_equal(q, [14, 0, 2, 4, 6, 14])


def test_outlining_keeps_constants_with_the_op():
    m = parse_module("""relay.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = constant dense<2.0> : tensor<4xf32>
  %y = multiply(%x, %c)
  %z = add(%y, %y)
  return %z
}""")
    passes("lower-relay-to-te").run(m)
    names = [op.attributes["sym_name"] for op in m.body.ops]
    assert names == ["fused_multiply", "fused_add", "main"]
    mul = m.lookup("fused_multiply")
    assert len(mul.body.args) == 1   # the splat constant went in with the op
    assert len(m.lookup("fused_add").body.args) == 1   # one parameter for %y used twice
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(evaluate(m, "main", [x])[0], 4 * x)


def test_a_dynamic_shape_without_a_rule_is_a_diagnostic():
    from tvmd.ir.diagnostics import DiagnosticError
    from tvmd.ir.pass_manager import PassContext
    m = parse_module("""relay.func @k(%x: tensor<?x4xf32>) -> tensor<?x2xf32> attributes {primitive} {
  %r = reshape(%x) {newshape = [-1, 2]}
  return %r
}""")
    with pytest.raises(DiagnosticError, match=r"reshape: the inferred \(-1\) size is not one input size") as ei:
        get_pass_class("lower-relay-to-te")().run(m, PassContext())
    assert ei.value.diagnostics[0].loc.file_line_col()[1] == 2
