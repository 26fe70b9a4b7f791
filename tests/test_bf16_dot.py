"""bf16 products on x86's bf16 pair dot product (vdpbf16ps, AVX512-BF16):
the dot2_bf16 intrinsic, the packed "NC{n}n2c" dense, and
--alter-op-layout's rewrite of what --to-mixed-precision leaves of a
dense with a constant weight; on this CPU and with AVX512-BF16 disabled
(``-mattr=-avx512bf16``: the same words multiplied in plain f32
arithmetic, or the dense left as it was).  References are numpy's float64
products of the bf16-rounded operands (tvmd/testing/bfloat16.py); the
packed words come from a packer written here from the layout's
definition, not from the library's own."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tvmd.backend.llvm import jit
from tvmd.backend.spec import parse_target
from tvmd.ir.attributes import DenseAttr
from tvmd.ir.pass_manager import PassContext
from tvmd.ir.registry import get_pass_class
from tvmd.parser import parse_module
from tvmd.runtime.build import build
from tvmd.testing import bfloat16

HOST_BF16 = bool(parse_target("llvm").vector_unit().bf16_lanes)
NO_BF16 = "llvm -mattr=-avx512bf16"


def f64(bits):
    return bfloat16.value(bits).astype(np.float64)


def pack_pairs(bits, nb):
    """bf16 bits [N, K] as "NC{nb}n2c": word [j / nb, kw, j % nb] holds
    w[j, 2kw] in its low 16 bits and w[j, 2kw + 1] in its high."""
    n, k = bits.shape
    out = np.zeros((n // nb, k // 2, nb), np.uint32)
    for j in range(n):
        for kw in range(k // 2):
            out[j // nb, kw, j % nb] = int(bits[j, 2 * kw]) | int(bits[j, 2 * kw + 1]) << 16
    return out.view(np.int32)


# -- the intrinsic --------------------------------------------------------------

# the add of a vector dot is what becomes vdpbf16ps (a 32-lane vector: two
# instructions); the scalar tail computes in f32 arithmetic everywhere
DOT_LOOP = '''
tir.func @dot(%A: memref<64xi32>, %B: memref<64xi32>, %C: memref<64xf32>) {
  tir.for %i = 0 to 2 {
    %w = arith.constant 32 : index
    %j = arith.muli %i, %w : index
    %a = tir.load %A[%j] : vector<32xi32>
    %b = tir.load %B[%j] : vector<32xi32>
    %c = tir.load %C[%j] : vector<32xf32>
    %d = tir.intrin "dot2_bf16"(%a, %b) : vector<32xf32>
    %s = arith.addf %c, %d : vector<32xf32>
    tir.store %s, %C[%j] : vector<32xf32>
  }
}
'''


@pytest.mark.parametrize("target", ["llvm", NO_BF16])
def test_dot2_bf16_adds_the_products_of_both_halves(target):
    rng = np.random.default_rng(3)
    lo, hi = (bfloat16.bits(rng.standard_normal(64) * 4) for _ in range(2))
    blo, bhi = (bfloat16.bits(rng.standard_normal(64) * 4) for _ in range(2))
    a = (lo.astype(np.uint32) | hi.astype(np.uint32) << 16).view(np.int32)
    b = (blo.astype(np.uint32) | bhi.astype(np.uint32) << 16).view(np.int32)
    c = rng.standard_normal(64).astype(np.float32)
    want = c + f64(hi) * f64(bhi) + f64(lo) * f64(blo)
    out = c.copy()
    jit.compile(parse_module(DOT_LOOP), target).dot(a, b, out)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


def test_the_tir_interpreter_agrees_on_dot2_bf16():
    from tvmd.dialects.tir.interpreter import dot2_bf16
    w = np.array([0x3F80_4000, 0xC000_3F00], np.uint32).view(np.int32)    # (hi, lo) = (1, 2) and (-2, 0.5)
    v = np.array([0x4040_3F80, 0x3F80_4080], np.uint32).view(np.int32)    # (3, 1) and (1, 4)
    np.testing.assert_array_equal(dot2_bf16(w, v), [1 * 3 + 2 * 1, -2 * 1 + 0.5 * 4])


def test_vdpbf16ps_in_the_code_for_a_bf16_cpu_and_not_without():
    for target, want in (("llvm -mcpu=znver4", True), ("llvm -mcpu=sapphirerapids", True),
                         ("llvm -mcpu=znver4 -mattr=-avx512bf16", False), ("llvm -mcpu=haswell", False)):
        asm = jit.emit_assembly(parse_module(DOT_LOOP), target)
        assert ("vdpbf16ps" in asm) == want, target


# -- the packed dense -------------------------------------------------------------

def packed_text(m, k, n, nb):
    return f"""relay.func @main(%x: tensor<{m}x{k}xbf16>, %w: tensor<{n // nb}x{k // 2}x{nb}xi32>) -> tensor<{m}x{n}xf32> {{
  %d = nn.contrib_dense_pack(%x, %w) {{weight_layout = "NC{nb}n2c", out_dtype = "float32"}} : tensor<{m}x{n}xf32>
  return %d
}}"""


@settings(max_examples=10, deadline=None)
@given(m=st.integers(1, 40), kw=st.integers(1, 40), panels=st.integers(1, 3), nb=st.sampled_from([16, 32]),
       native=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_packed_product_of_bf16_pairs(m, kw, panels, nb, native, seed):
    rng = np.random.default_rng(seed)
    k, n = 2 * kw, panels * nb
    x, w = bfloat16.bits(rng.standard_normal((m, k))), bfloat16.bits(rng.standard_normal((n, k)))
    cm = build(packed_text(m, k, n, nb), target="llvm" if native and HOST_BF16 else NO_BF16, fallback=False)
    np.testing.assert_allclose(cm.run(x, pack_pairs(w, nb)), f64(x) @ f64(w).T, rtol=1e-5, atol=1e-5)


def test_the_relay_interpreter_agrees_on_the_packed_product():
    from tvmd.dialects.relay.interpreter import run_function
    rng = np.random.default_rng(2)
    x, w = bfloat16.bits(rng.standard_normal((3, 8))), bfloat16.bits(rng.standard_normal((32, 8)))
    got = run_function(parse_module(packed_text(3, 8, 32, 16)), "main", x, pack_pairs(w, 16))
    np.testing.assert_allclose(np.asarray(got), f64(x) @ f64(w).T, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("x_dtype,w_dtype,out,msg", [
    ("f32", "i32", "float32", "takes bf16 data"),
    ("bf16", "bf16", "float32", "takes bf16 data"),
    ("bf16", "i32", "bfloat16", "out_dtype float32"),
])
def test_packed_pairs_type_errors(x_dtype, w_dtype, out, msg):
    from tvmd.ir.diagnostics import DiagnosticError
    text = f"""relay.func @main(%x: tensor<2x8x{x_dtype}>, %w: tensor<1x4x16x{w_dtype}>) -> tensor<2x16xf32> {{
  %d = nn.contrib_dense_pack(%x, %w) {{weight_layout = "NC16n2c", out_dtype = "{out}"}} : tensor<2x16xf32>
  return %d
}}"""
    with pytest.raises(DiagnosticError, match=msg):
        parse_module(text).verify()


# -- what --to-mixed-precision leaves, through build ---------------------------------

def mixed_dense(m, k, n, w):
    """nn.dense of f32 data [m, k] (m may be '?') by the f32 constant w
    [n, k], then --to-mixed-precision to bfloat16."""
    rows = "?" if m is None else m
    mod = parse_module(f"""relay.func @main(%x: tensor<{rows}x{k}xf32>) -> tensor<{rows}x{n}xf32> {{
  %w = constant dense<0.0> : tensor<{n}x{k}xf32>
  %d = nn.dense(%x, %w) : tensor<{rows}x{n}xf32>
  return %d
}}""")
    c = next(op for op in mod.lookup("main").body.ops if op.name == "relay.constant")
    c.attributes["value"] = DenseAttr(w, c.results[0].type)
    get_pass_class("to-mixed-precision")(dtype="bfloat16").run(mod, PassContext())
    return mod


def mixed_reference(x, w):
    """bf16(x) @ bf16(w).T summed exactly, then rounded to bf16 (the pass
    casts the float32 sums down and back up)."""
    return bfloat16.rounded(f64(bfloat16.bits(x)) @ f64(bfloat16.bits(w)).T)


@pytest.mark.parametrize("target", ["llvm", NO_BF16])
@pytest.mark.parametrize("m,k,n", [(1, 768, 96), (3, 64, 40), (16, 128, 64), (37, 96, 200)])
def test_mixed_precision_dense_on_bf16_pairs(target, m, k, n):
    rng = np.random.default_rng(m * n)
    x, w = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((n, k)).astype(np.float32)
    cm = build(mixed_dense(m, k, n, w), target=target, fallback=False)
    want = mixed_reference(x, w)
    # one bf16 step of the result: the f32 sums differ in order, which may round the other way
    np.testing.assert_allclose(cm.run(x), want, rtol=2 ** -7, atol=1e-5)
    packed = cm.stats["alter-op-layout"].get("bf16-dense-pack", 0)
    assert packed == (1 if HOST_BF16 and target == "llvm" else 0)


def test_one_build_over_a_dynamic_row_count():
    rng = np.random.default_rng(5)
    w = rng.standard_normal((96, 64)).astype(np.float32)
    cm = build(mixed_dense(None, 64, 96, w), fallback=False)
    for m in (1, 7, 64, 300):
        x = rng.standard_normal((m, 64)).astype(np.float32)
        np.testing.assert_allclose(cm.run(x), mixed_reference(x, w), rtol=2 ** -7, atol=1e-5)
    assert cm.stats["alter-op-layout"].get("bf16-dense-pack", 0) == (1 if HOST_BF16 else 0)


def test_the_weight_is_rounded_to_nearest_even():
    """The pass rounds the f32 weight at compile time as the cast would at
    run time: ties to even, NaN kept."""
    from tvmd.dialects.relay.passes.alter_op_layout_bf16 import bf16_bits
    x = np.array([1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8 + 2 ** -20), 3e38, np.inf, -0.0, 1e-40,
                  np.nan], np.float32)
    np.testing.assert_array_equal(bf16_bits(x), bfloat16.bits(x))
