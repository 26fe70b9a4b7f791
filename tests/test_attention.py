"""nn.attention and --fuse-attention: the compiled op against a numpy
reference at odd shapes (hypothesis), static and '?' sizes, both layouts,
with and without causal and padding masks; the pass on the graph forms the
ONNX importer makes, with the fused and unfused builds checked against
numpy; what it must leave alone; type errors."""

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tvmd.ir.pass_manager import PassContext
from tvmd.ir.registry import get_pass_class
from tvmd.parser import parse_module
from tvmd.runtime.build import build

PERM = {"BSNH": (0, 2, 1, 3), "BNSH": (0, 1, 2, 3), "BNHS": (0, 1, 3, 2)}


def reference(q, k, v, bias=None, scale=None, causal="none", layout="BSNH"):
    """softmax(scale q k^T + bias, masked) v in float64, per batch and head."""
    p = PERM[layout]
    qh, kh, vh = (x.astype(np.float64).transpose(p) for x in (q, k, v))
    m, n, d = qh.shape[2], kh.shape[2], qh.shape[3]
    s = qh @ kh.transpose(0, 1, 3, 2) * (d ** -0.5 if scale is None else scale)
    if bias is not None:
        s = s + bias
    i, j = np.arange(m)[:, None], np.arange(n)[None, :]
    if causal != "none":
        s = np.where(j <= (i if causal == "top_left" else i + n - m), s, -np.inf)
    with np.errstate(invalid="ignore"):   # a row with no key: NaN, as the softmax gives
        s = np.exp(s - s.max(-1, keepdims=True))
    return ((s / s.sum(-1, keepdims=True)) @ vh).transpose(np.argsort(p))


def shape_text(shape):
    return "x".join("?" if d is None else str(d) for d in shape)


def attention_module(shapes, bias_shape, attrs, dynamic):
    """One nn.attention over parameters of `shapes` (q, k, v), '?' for the
    sequence axes when dynamic."""
    layout = attrs.get("layout", "BSNH")
    seq = PERM[layout][2]
    kseq = PERM[attrs.get("key_layout", layout)][2]

    def ty(shape, axes):
        return f"tensor<{shape_text([None if dynamic and a in axes else x for a, x in enumerate(shape)])}xf32>"
    q, k, v = (ty(s, {a}) for s, a in zip(shapes, (seq, kseq, seq)))
    out = list(shapes[0])
    out[3] = shapes[2][3]
    params = f"%q: {q}, %k: {k}, %v: {v}"
    operands = "%q, %k, %v"
    if bias_shape is not None:
        r = len(bias_shape)
        # '?' where the bias spans the query and key axes (a size-1 axis broadcasts, so stays static)
        params += f", %bias: {ty(bias_shape, {a for a in (r - 2, r - 1) if a >= 0 and bias_shape[a] > 1})}"
        operands += ", %bias"
    a = ", ".join(f'{key} = "{val}"' if isinstance(val, str) else f"{key} = {val}" for key, val in attrs.items())
    ot = ty(out, {seq})
    return (f"relay.func @main({params}) -> {ot} {{\n"
            f"  %0 = nn.attention({operands}) {{{a}}} : {ot}\n  return %0\n}}\n")


@settings(max_examples=16, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(b=st.integers(1, 2), h=st.integers(1, 3), m=st.integers(1, 19), n=st.integers(1, 11),
       d=st.sampled_from([4, 16, 24]), dv=st.sampled_from([8, 16]), layout=st.sampled_from(["BSNH", "BNSH"]),
       causal=st.sampled_from(["none", "top_left", "bottom_right"]),
       bias=st.sampled_from([None, "padding", "full"]), dynamic=st.booleans(), key_t=st.booleans(),
       seed=st.integers(0, 99), target=st.sampled_from(["llvm", "llvm -mcpu=haswell"]))
def test_attention_equals_numpy(b, h, m, n, d, dv, layout, causal, bias, dynamic, key_t, seed, target):
    """(haswell: AVX2's blocks of 4 queries; the host here: AVX-512's 8)"""
    if causal == "bottom_right":
        n = max(n, m)   # every query sees a key (a row with none is NaN on both sides)
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal(_in_layout(layout, b, h, s, x)).astype(np.float32)
               for s, x in ((m, d), (n, d), (n, dv)))
    bias_arr = None
    if bias == "padding":   # a key padding mask: the last keys hidden, one per batch
        bias_arr = np.zeros((b, 1, 1, n), np.float32)
        bias_arr[:, :, :, n - 1:] = -1e9 if n > 1 else 0
    elif bias == "full":
        bias_arr = rng.standard_normal((b, h, m, n)).astype(np.float32)
    attrs = {"causal_mask": causal, "layout": layout}
    if seed % 2:
        attrs["scale"] = 0.3
    kin = k
    if key_t:   # the key given as Kᵀ per head: (B, H, D, N)
        attrs["key_layout"] = "BNHS"
        kin = np.ascontiguousarray(k.transpose(PERM[layout]).transpose(0, 1, 3, 2))
    text = attention_module([q.shape, kin.shape, v.shape], None if bias_arr is None else bias_arr.shape, attrs,
                            dynamic)
    model = build(text, target=target, fallback=False)
    args = [q, kin, v] + ([bias_arr] if bias_arr is not None else [])
    got = model.run(*args)
    want = reference(q, k, v, bias_arr, attrs.get("scale"), causal, layout)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def _in_layout(layout, b, h, s, dim):
    out = [0] * 4
    for val, ax in zip((b, h, s, dim), PERM[layout]):
        out[ax] = val
    return tuple(out)


def test_one_dynamic_build_serves_every_length():
    text = attention_module([(1, 1, 2, 16)] * 3, (1, 1, 1, 1), {"causal_mask": "bottom_right"}, True)
    text = text.replace("tensor<1x1x1x1xf32>", "tensor<1x1x?x?xf32>")
    model = build(text, fallback=False)
    rng = np.random.default_rng(1)
    for past, new in ((0, 1), (0, 7), (5, 1), (64, 3), (0, 300)):
        q = rng.standard_normal((1, new, 2, 16)).astype(np.float32)
        k, v = (rng.standard_normal((1, past + new, 2, 16)).astype(np.float32) for _ in range(2))
        mask = rng.standard_normal((1, 1, new, past + new)).astype(np.float32)
        np.testing.assert_allclose(model.run(q, k, v, mask), reference(q, k, v, mask, causal="bottom_right"),
                                   rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("m,n", [(70, 70), (33, 97), (1, 97), (97, 40), (64, 64)])
@pytest.mark.parametrize("causal", ["none", "top_left", "bottom_right"])
def test_many_key_tiles_and_query_blocks(m, n, causal):
    """The llvm kernel past one key tile (32) and one block of queries
    (32): whole tiles, the tiles the causal diagonal cuts, the ones past it
    (skipped), the last partial tile and block; bottom_right with fewer
    keys than queries leaves the first rows no key (NaN on both sides)."""
    rng = np.random.default_rng(m * 1000 + n)
    q, k, v = (rng.standard_normal((2, s, 3, 16)).astype(np.float32) for s in (m, n, n))
    kt = np.ascontiguousarray(k.transpose(0, 2, 3, 1))
    attrs = {"causal_mask": causal, "key_layout": "BNHS"}
    text = attention_module([q.shape, kt.shape, v.shape], None, attrs, True)
    got = build(text, fallback=False).run(q, kt, v)
    want = reference(q, k, v, None, None, causal)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    assert np.isnan(want).any() == (causal == "bottom_right" and n < m)


LOWEST = float(np.finfo(np.float32).min)


def _hiding_bias(kind, fill, b, m, n):
    """A bias of 0 and `fill`: a causal mask (top_left / bottom_right, as
    GPT's code passes it), key padding at the end or the start per batch
    (rows broadcast), or the first rows' keys all hidden."""
    i, j = np.arange(m)[:, None], np.arange(n)[None, :]
    if kind in ("top_left", "bottom_right"):
        seen = j <= (i if kind == "top_left" else i + n - m)
        return np.where(seen, 0, fill).astype(np.float32)[None, None]
    if kind in ("pad_end", "pad_start"):
        keep = np.array([[n - 37 * x for x in range(b)]]).T   # keys each batch keeps
        seen = j < keep if kind == "pad_end" else j >= n - keep
        return np.where(seen, 0, fill).astype(np.float32)[:, None, None, :]
    bias = np.zeros((1, 1, m, n), np.float32)
    bias[..., :m // 3, :] = fill   # whole rows hidden: a finite fill is the softmax of equal scores
    return bias


@pytest.mark.parametrize("kind", ["top_left", "bottom_right", "pad_end", "pad_start", "rows"])
@pytest.mark.parametrize("fill", [LOWEST, -np.inf, -1e30, -1e20])
@pytest.mark.parametrize("m,n", [(97, 130), (1, 200), (70, 70)])
def test_a_bias_that_hides_whole_tiles(kind, fill, m, n):
    """A mask given as a bias (GPT's additive causal mask, key padding):
    the kernel skips the tiles it hides from a whole group of rows once
    each row has seen a key, with the result of computing them; a fill
    above MASK_FILL (-1e20) hides nothing, rows whose every key is hidden
    by a finite fill weigh their keys equally, as the softmax does (by
    -inf: NaN on both sides)."""
    rng = np.random.default_rng(m + n)
    q, k, v = (rng.standard_normal((2, s, 3, 16)).astype(np.float32) for s in (m, n, n))
    bias = _hiding_bias(kind, fill, 2, m, n)
    kt = np.ascontiguousarray(k.transpose(0, 2, 3, 1))
    got = _dynamic_build(bias.shape[0] > 1).run(q, kt, v, bias)
    np.testing.assert_allclose(got, reference(q, k, v, bias), rtol=2e-5, atol=2e-5)


def test_a_bias_that_hides_whole_tiles_on_avx2():
    """The same on AVX2's tiles (4 rows x 24 keys, 8 lanes)."""
    rng = np.random.default_rng(0)
    for kind in ("top_left", "pad_end", "pad_start"):
        m, n = (45, 100) if kind != "top_left" else (100, 100)
        q, k, v = (rng.standard_normal((2, s, 3, 16)).astype(np.float32) for s in (m, n, n))
        bias = _hiding_bias(kind, LOWEST, 2, m, n)
        got = _dynamic_build(bias.shape[0] > 1, "llvm -mcpu=haswell").run(
            q, np.ascontiguousarray(k.transpose(0, 2, 3, 1)), v, bias)
        np.testing.assert_allclose(got, reference(q, k, v, bias), rtol=2e-5, atol=2e-5)


@functools.lru_cache(maxsize=None)
def _dynamic_build(bias_per_batch, target="llvm"):
    """One '?' build serves every length: a (2, 1, 1, ?) key padding bias or a (1, 1, ?, ?) one."""
    shape = (2, 1, 1, 9) if bias_per_batch else (1, 1, 9, 9)
    return build(attention_module([(2, 9, 3, 16), (2, 3, 16, 9), (2, 9, 3, 16)], shape, {"key_layout": "BNHS"},
                                  True), target=target, fallback=False)


def test_keys_a_bias_hides_from_whole_groups_are_never_read():
    """The skip itself: keys past a block of queries' diagonal hold NaN;
    the rows whose every tile from there on is hidden by the bias never
    read them (their output is finite and right), while a row that does
    compute a tile holding one is NaN, as the sum with the bias gives."""
    m = n = 192
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((1, s, 2, 16)).astype(np.float32) for s in (m, n, n))
    k[:, 128:] = np.nan   # tiles of 64 keys: the third tile, which rows 0 .. 127 cannot see
    bias = _hiding_bias("top_left", LOWEST, 1, m, n)
    kt = np.ascontiguousarray(k.transpose(0, 2, 3, 1))
    text = attention_module([q.shape, kt.shape, v.shape], bias.shape, {"key_layout": "BNHS"}, False)
    got = build(text, fallback=False).run(q, kt, v, bias)
    clean = k.copy()
    clean[:, 128:] = 0
    want = reference(q, clean, v, bias)
    np.testing.assert_allclose(got[:, :128], want[:, :128], rtol=2e-5, atol=2e-5)
    assert np.isnan(got[:, 128:]).all()


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_precision_operands_sum_in_float32(dtype):
    """f16 and bf16 q, k, v (and bias) are widened as the kernel reads them:
    the output is the float32 attention of the same values, correctly
    rounded (within half an ulp, plus the float32 sums' own error)."""
    import ml_dtypes
    np_t = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}[dtype]
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, s, 2, 16)).astype(np_t) for s in (45, 45, 45))
    bias = rng.standard_normal((1, 1, 45, 45)).astype(np_t)
    text = attention_module([q.shape, k.shape, v.shape], bias.shape, {"causal_mask": "top_left"}, True)
    model = build(text.replace("f32>", f"{dtype}>"), fallback=False)
    bits = (lambda x: x) if dtype == "f16" else (lambda x: x.view(np.uint16))
    got = model.run(*[bits(x) for x in (q, k, v, bias)])
    got = (got if dtype == "f16" else got.view(np_t)).astype(np.float64)
    want = reference(*[x.astype(np.float32) for x in (q, k, v, bias)], causal="top_left")
    half_ulp = np.abs(want.astype(np_t).astype(np.float64) - want)
    assert np.all(np.abs(got - want) <= half_ulp + 1e-5 * np.abs(want) + 1e-6)


def test_the_kernel_holds_no_buffer_as_long_as_the_keys():
    """A '?' sequence: every buffer the lowered kernel allocates has a
    static size (scores a tile at a time, never a row of them), and the
    extern's tir.func is gone once inlined."""
    text = attention_module([(1, 7, 2, 64), (1, 2, 64, 7), (1, 7, 2, 64)], None,
                            {"causal_mask": "bottom_right", "key_layout": "BNHS"}, True)
    mod = parse_module(text, "t.relay")
    ctx = PassContext()
    for name in ("fuse-ops", "lower-relay-to-te", "lower-te-to-tir"):
        get_pass_class(name)().run(mod, ctx)
    allocs = [op for op in mod.walk() if op.name == "tir.alloc"]
    assert allocs and all(not op.operands and op.results[0].type.is_static for op in allocs)
    assert sum(a.results[0].type.num_elements() for a in allocs) < 8192   # floats per thread, whatever the length
    funcs = [op.attributes["sym_name"] for op in mod.body.ops if op.name == "tir.func"]
    assert not [f for f in funcs if f.endswith("_flash")] and "fused_nn_attention" in funcs


# -- --fuse-attention ------------------------------------------------------------------------

def fused(text):
    mod = parse_module(text, "t.relay")
    ctx = PassContext()
    for name in ("fuse-attention", "dce"):
        get_pass_class(name)().run(mod, ctx)
    return str(mod)


# The dynamic form the ONNX importer makes of GPT-2's attention: squeeze /
# batch_matmul / expand_dims, K^T folded into transpose_b, a scale, an
# additive mask, the heads' transposes around the BSNH cache.
GPT = """relay.func @main(%q: tensor<1x?x2x8xf32>, %k: tensor<1x?x2x8xf32>, %v: tensor<1x?x2x8xf32>, %mask: tensor<1x1x?x?xf32>) -> tensor<1x?x2x8xf32> {
  %qt = transpose(%q) {axes = [0, 2, 1, 3]} : tensor<1x2x?x8xf32>
  %kt = transpose(%k) {axes = [0, 2, 1, 3]} : tensor<1x2x?x8xf32>
  %q3 = squeeze(%qt) {axis = [0]} : tensor<2x?x8xf32>
  %k3 = squeeze(%kt) {axis = [0]} : tensor<2x?x8xf32>
  %s3 = nn.batch_matmul(%q3, %k3) : tensor<2x?x?xf32>
  %s = expand_dims(%s3) {axis = 0} : tensor<1x2x?x?xf32>
  %c = constant dense<0.35355339> : tensor<f32>
  %ss = multiply(%s, %c) : tensor<1x2x?x?xf32>
  %sm = add(%ss, %mask) : tensor<1x2x?x?xf32>
  %p = nn.softmax(%sm) {axis = 3} : tensor<1x2x?x?xf32>
  %vt = transpose(%v) {axes = [0, 2, 1, 3]} : tensor<1x2x?x8xf32>
  %p3 = squeeze(%p) {axis = [0]} : tensor<2x?x?xf32>
  %v3 = squeeze(%vt) {axis = [0]} : tensor<2x?x8xf32>
  %o3 = nn.batch_matmul(%p3, %v3) {transpose_b = false} : tensor<2x?x8xf32>
  %o = expand_dims(%o3) {axis = 0} : tensor<1x2x?x8xf32>
  %out = transpose(%o) {axes = [0, 2, 1, 3]} : tensor<1x?x2x8xf32>
  return %out
}
"""

# The static form: heads folded into the batch by reshape, K^T as a
# transpose of K (no transpose_b), the scale on Q, a where mask.
STATIC = """relay.func @main(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x4xf32>, %keep: tensor<1x1x5x6xi1>) -> tensor<1x2x5x4xf32> {
  %c = constant dense<0.5> : tensor<f32>
  %qs = multiply(%q, %c) : tensor<1x2x5x8xf32>
  %kt = transpose(%k) {axes = [0, 1, 3, 2]} : tensor<1x2x8x6xf32>
  %q3 = reshape(%qs) {newshape = [2, 5, 8]} : tensor<2x5x8xf32>
  %k3 = reshape(%kt) {newshape = [2, 8, 6]} : tensor<2x8x6xf32>
  %s3 = nn.batch_matmul(%q3, %k3) {transpose_b = false} : tensor<2x5x6xf32>
  %s = reshape(%s3) {newshape = [1, 2, 5, 6]} : tensor<1x2x5x6xf32>
  %inf = constant dense<-inf> : tensor<f32>
  %sm = where(%keep, %s, %inf) : tensor<1x2x5x6xf32>
  %p = nn.softmax(%sm) {axis = -1} : tensor<1x2x5x6xf32>
  %p3 = reshape(%p) {newshape = [2, 5, 6]} : tensor<2x5x6xf32>
  %v3 = reshape(%v) {newshape = [2, 6, 4]} : tensor<2x6x4xf32>
  %o3 = nn.batch_matmul(%p3, %v3) {transpose_b = false} : tensor<2x5x4xf32>
  %o = reshape(%o3) {newshape = [1, 2, 5, 4]} : tensor<1x2x5x4xf32>
  return %o
}
"""

# Heads folded into the batch from the start: 3-d operands throughout.
THREE_D = """relay.func @main(%q: tensor<6x5x8xf32>, %k: tensor<6x7x8xf32>, %v: tensor<6x7x8xf32>) -> tensor<6x5x8xf32> {
  %s = nn.batch_matmul(%q, %k) : tensor<6x5x7xf32>
  %c = constant dense<4.0> : tensor<f32>
  %d = divide(%s, %c) : tensor<6x5x7xf32>
  %p = nn.softmax(%d) {axis = 2} : tensor<6x5x7xf32>
  %o = nn.batch_matmul(%p, %v) {transpose_b = false} : tensor<6x5x7xf32>
  return %o
}
""".replace("%o = nn.batch_matmul(%p, %v) {transpose_b = false} : tensor<6x5x7xf32>",
            "%o = nn.batch_matmul(%p, %v) {transpose_b = false} : tensor<6x5x8xf32>")


def test_gpt_form_fuses_in_place_of_the_transposes():
    out = fused(GPT)
    assert "nn.softmax" not in out and "batch_matmul" not in out and out.count("transpose") == 1, out
    # q and v read in place; the key as Kᵀ per head, the form the graph gave Q·Kᵀ
    assert "%0 = transpose(%k) {axes = [0, 2, 3, 1]}" in out, out
    assert "%out = nn.attention(%q, %0, %v, %mask) {scale = 0.353553" in out and 'key_layout = "BNHS"' in out, out
    rng = np.random.default_rng(2)
    models = [build(text, fallback=False) for text in (GPT, out)]   # '?' lengths: one build each
    for m, past in ((1, 4), (5, 0), (3, 9)):
        q = rng.standard_normal((1, m, 2, 8)).astype(np.float32)
        k, v = (rng.standard_normal((1, past + m, 2, 8)).astype(np.float32) for _ in range(2))
        mask = np.where(np.arange(past + m)[None, :] <= np.arange(m)[:, None] + past, 0, -1e9)
        mask = mask.astype(np.float32)[None, None]
        want = reference(q, k, v, mask, scale=0.35355339)
        for model in models:   # the unfused graph and the fused one, each against numpy
            np.testing.assert_allclose(model.run(q, k, v, mask), want, rtol=2e-5, atol=2e-5)


def test_static_form_with_scaled_q_and_where_mask():
    out = fused(STATIC)
    assert "nn.softmax" not in out and "nn.attention" in out and 'layout = "BNSH"' in out, out
    assert "scale = 0.5" in out and "where(%keep" in out, out
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((1, 2, 5, 8)).astype(np.float32), rng.standard_normal((1, 2, 6, 8)).astype(np.float32)
    v = rng.standard_normal((1, 2, 6, 4)).astype(np.float32)
    keep = rng.random((1, 1, 5, 6)) < 0.7
    keep[..., 0] = True
    want = reference(q, k, v, np.where(keep, 0.0, -np.inf), scale=0.5, layout="BNSH")
    for text in (STATIC, out):
        np.testing.assert_allclose(build(text, fallback=False).run(q, k, v, keep), want, rtol=2e-5, atol=2e-5)


def test_three_d_form():
    out = fused(THREE_D)
    assert "nn.softmax" not in out and "nn.attention" in out and "scale = 0.25" in out, out
    rng = np.random.default_rng(4)
    q = rng.standard_normal((6, 5, 8)).astype(np.float32)
    k, v = (rng.standard_normal((6, 7, 8)).astype(np.float32) for _ in range(2))
    want = reference(q[None], k[None], v[None], scale=0.25, layout="BNSH")[0]
    for text in (THREE_D, out):
        np.testing.assert_allclose(build(text, fallback=False).run(q, k, v), want, rtol=2e-5, atol=2e-5)


def test_a_scale_on_v_stays_on_v():
    """A factor on V scales the output, not the scores: it stays V's."""
    text = STATIC.replace("%v3 = reshape(%v)", "%v2 = multiply(%v, %c) : tensor<1x2x6x4xf32>\n  %v3 = reshape(%v2)")
    out = fused(text)
    assert "transpose(%k) {axes = [0, 1, 3, 2]}" in out and "nn.attention(%q, %0, %v2" in out and "scale = 0.5" in out, out
    rng = np.random.default_rng(5)
    q, k = rng.standard_normal((1, 2, 5, 8)).astype(np.float32), rng.standard_normal((1, 2, 6, 8)).astype(np.float32)
    v = rng.standard_normal((1, 2, 6, 4)).astype(np.float32)
    keep = np.ones((1, 1, 5, 6), bool)
    want = reference(q, k, 0.5 * v, scale=0.5, layout="BNSH")
    for t in (text, out):
        np.testing.assert_allclose(build(t, fallback=False).run(q, k, v, keep), want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("change", [
    # the probabilities are an output too: the softmax must stay
    ("return %out", "%t = add(%p, %p) : tensor<1x2x?x?xf32>\n  return %out"),
    # a mask added after the scale but scaled by a tensor: not a constant scale
    ("%ss = multiply(%s, %c)", "%ss = multiply(%s, %mask)"),
    # a softmax over another axis
    ("{axis = 3}", "{axis = 2}"),
])
def test_left_alone(change):
    text = GPT.replace(*change)
    if "add(%p, %p)" in text:
        text = text.replace("-> tensor<1x?x2x8xf32> {", "-> (tensor<1x?x2x8xf32>, tensor<1x2x?x?xf32>) {") \
            .replace("return %out", "return %out, %t")
    out = fused(text)
    assert "nn.attention" not in out and "nn.softmax" in out, out


def test_type_errors():
    from tvmd.ir.diagnostics import DiagnosticError
    bad = [
        ("tensor<1x5x2x8xf32>", "tensor<1x6x2x4xf32>", "tensor<1x6x2x8xf32>", "head_dim differs"),
        ("tensor<1x5x2x8xf32>", "tensor<1x6x2x8xf32>", "tensor<1x7x2x8xf32>", "key length differs"),
        ("tensor<5x2x8xf32>", "tensor<1x6x2x8xf32>", "tensor<1x6x2x8xf32>", "expects 4-d"),
        # a key in BNSH that the op is told is Kᵀ (B, H, D, N): its D is 6, its N 8
        ("tensor<1x5x2x8xf32>", "tensor<1x2x6x8xf32>", "tensor<1x6x2x8xf32>", "head_dim differs", "BNHS"),
        ("tensor<1x5x2x8xf32>", "tensor<1x6x2x8xf32>", "tensor<1x6x2x8xf32>", "key_layout must be one of", "BSHN"),
    ]
    for q, k, v, msg, *key in bad:
        attrs = f' {{key_layout = "{key[0]}"}}' if key else ""
        text = (f"relay.func @main(%q: {q}, %k: {k}, %v: {v}) -> tensor<1x5x2x8xf32> {{\n"
                f"  %0 = nn.attention(%q, %k, %v){attrs} : tensor<1x5x2x8xf32>\n  return %0\n}}\n")
        with pytest.raises(DiagnosticError, match=msg):
            fused(text)


@pytest.mark.parametrize("kv_heads,layout", [(1, "BNSH"), (2, "BSNH"), (3, "BNSH")])
def test_grouped_query_heads_read_their_group_s_key_and_value(kv_heads, layout):
    """6 query heads over fewer key / value heads: query head h reads head
    h // (6 / kv_heads) of k and v, as ONNX's Attention and Llama-style
    models have it; no copy of k and v is made (no repeat in the graph)."""
    rng = np.random.default_rng(kv_heads)
    m, n = 37, 70
    q = rng.standard_normal(_in_layout(layout, 2, 6, m, 16)).astype(np.float32)
    k, v = (rng.standard_normal(_in_layout(layout, 2, kv_heads, n, 16)).astype(np.float32) for _ in range(2))
    attrs = {"causal_mask": "bottom_right", "layout": layout}
    text = attention_module([q.shape, k.shape, v.shape], None, attrs, True)
    got = build(text, fallback=False).run(q, k, v)
    p = PERM[layout]
    kr, vr = (np.repeat(x.transpose(p), 6 // kv_heads, axis=1).transpose(np.argsort(p)) for x in (k, v))
    np.testing.assert_allclose(got, reference(q, kr, vr, causal="bottom_right", layout=layout), rtol=2e-5, atol=2e-5)
    with pytest.raises(Exception, match="neither the key's and value's 4 nor a multiple"):
        parse_module(attention_module([q.shape, _in_layout(layout, 2, 4, n, 16), _in_layout(layout, 2, 4, n, 16)],
                                      None, attrs, True), "t.relay").verify()
