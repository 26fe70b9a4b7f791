"""Default llvm schedules (conversion/relay_to_te/schedules.py) and the
hand schedule bench/schedules/matmul.te: never the naive loop nest, and
numpy's answer once compiled.  (Speed is measured in bench/kernels.py,
never asserted here.)"""

import os

import numpy as np
import pytest

from tvmd.ir.pass_manager import PassManager, instantiate, parse_pipeline
from tvmd.ir.printer import print_module
from tvmd.ir.registry import get_pass_class
from tvmd.parser import parse_module
from tvmd.runtime.executor import allocate_outputs
from tvmd.backend.llvm import jit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RNG = np.random.default_rng(5)


def lower(text, pipeline):
    m = parse_module(text)
    PassManager(instantiate(parse_pipeline(pipeline), get_pass_class)).run(m)
    return m


# Tile sizes follow the target's vector registers: the tests pin an AVX2
# CPU (16 registers of 8 floats), whose code runs on any AVX2 host.
AVX2 = "llvm -mcpu=haswell"
AVX512 = "llvm -mcpu=skylake-avx512"


def te_and_kernel(relay_text, target=AVX2):
    """(te text after --lower-relay-to-te for `target` with the template's
    knobs at their defaults, the compiled kernel, its tir.func)."""
    from tvmd.autotvm.dispatch import apply_best
    m = lower(relay_text, f'fuse-ops,lower-relay-to-te{{target="{target}"}}')
    apply_best(m, None)
    te = print_module(m)
    m = lower(te, "lower-te-to-tir,tir-simplify")
    f = next(op for op in m.body.ops if op.name == "tir.func")
    return te, jit.compile(m)[f.sym_name], f


def run(kernel, f, *inputs):
    outs = allocate_outputs(f)
    kernel(*inputs, *outs)
    return outs[0]


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def conv_nchw_ref(x, w, pad):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))).astype(np.float64)
    out = np.zeros((n, o, h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1))
    for ry in range(kh):
        for rx in range(kw):
            patch = xp[:, :, ry:ry + out.shape[2], rx:rx + out.shape[3]]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, ry, rx].astype(np.float64))
    return out.astype(np.float32)


def test_conv2d_nchw_register_tile_and_padding_stage():
    text = """relay.func @main(%x: tensor<1x16x10x12xf32>, %w: tensor<32x16x3x3xf32>) -> tensor<1x32x10x12xf32> {
  %0 = nn.conv2d(%x, %w) {padding = [1, 1, 1, 1]} : tensor<1x32x10x12xf32>
  return %0
}"""
    te, k, f = te_and_kernel(text)
    assert "te.cache_write %conv2d" in te               # accumulators in a local tile
    assert "te.compute_inline %pad" not in te           # padding gets its own loop nest
    # 8 output channels per tile: 8 rows of a vector of 4 (w = 12) in 8 of
    # the 12 accumulators AVX2 leaves
    assert "te.split %c_1 {factor = 8}" in te
    assert te.count("te.parallel") >= 2 and "te.unroll" in te and "te.vectorize" in te
    x, w = randn(1, 16, 10, 12), randn(32, 16, 3, 3)
    np.testing.assert_allclose(run(k, f, x, w), conv_nchw_ref(x, w, 1), rtol=1e-4, atol=1e-4)


def test_conv2d_nhwc_with_bias_relu_epilogue():
    text = """relay.func @main(%x: tensor<1x9x8x32xf32>, %w: tensor<3x3x32x16xf32>, %b: tensor<16xf32>) -> tensor<1x9x8x16xf32> {
  %0 = nn.conv2d(%x, %w) {padding = [1, 1, 1, 1], data_layout = "NHWC", kernel_layout = "HWIO"} : tensor<1x9x8x16xf32>
  %1 = add(%0, %b) : tensor<1x9x8x16xf32>
  %2 = nn.relu(%1) : tensor<1x9x8x16xf32>
  return %2
}"""
    te, k, f = te_and_kernel(text)
    assert "te.compute_at %conv2d" in te and "te.vectorize" in te and "te.parallel" in te
    x, w, b = randn(1, 9, 8, 32), randn(3, 3, 32, 16), randn(16)
    want = conv_nchw_ref(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), 1).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(run(k, f, x, w, b), np.maximum(want + b, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("k_extent", [2048, 100, 3])
def test_dense_one_row_vectorizes_the_reduction(k_extent):
    text = f"""relay.func @main(%x: tensor<1x{k_extent}xf32>, %w: tensor<40x{k_extent}xf32>) -> tensor<1x40xf32> {{
  %0 = nn.dense(%x, %w) : tensor<1x40xf32>
  return %0
}}"""
    te, k, f = te_and_kernel(text)
    assert "te.parallel" in te
    if k_extent >= 4:
        assert "llvm_vectorize" in te
    # 4 rows of w reduced together, x's element loaded once for the 4
    assert "%j.outer, %j.inner = te.split %j {factor = 4}" in te and "te.unroll %j.inner" in te
    x, w = randn(1, k_extent), randn(40, k_extent)
    want = (x.astype(np.float64) @ w.T.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(run(k, f, x, w), want, rtol=1e-4, atol=1e-4)


def test_dense_many_rows_packs_the_weight_with_gelu_epilogue():
    """A 3-d dense with 2 x 32 rows: the N x K weight packed into 16-column
    panels, a 6 x 16 register tile (6 rows do not divide 32: the batch and
    the 6 column blocks are the parallel loop, the row blocks a serial loop
    inside whose last, partial tile is split off), bias + GELU applied at
    copy-out."""
    text = """relay.func @main(%x: tensor<2x32x48xf32>, %w: tensor<96x48xf32>, %b: tensor<96xf32>) -> tensor<2x32x96xf32> {
  %0 = nn.dense(%x, %w) : tensor<2x32x96xf32>
  %1 = add(%0, %b) : tensor<2x32x96xf32>
  %2 = erf(%1) : tensor<2x32x96xf32>
  %3 = multiply(%1, %2) : tensor<2x32x96xf32>
  return %3
}"""
    te, k, f = te_and_kernel(text)
    assert "_packed = te.compute [%jo, %k, %ji] : tensor<6x48x16xf32>" in te
    assert "llvm_vectorize" not in te and "{factor = 16}" in te and "{factor = 6}" in te
    x, w, b = randn(2, 32, 48), randn(96, 48), randn(96)
    y = (x.astype(np.float64) @ w.T.astype(np.float64) + b)
    from math import erf
    want = y * np.vectorize(erf)(y)
    np.testing.assert_allclose(run(k, f, x, w, b), want.astype(np.float32), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("tb", [False, True])
def test_batch_matmul_gemm_tile(tb):
    """y read along j (no packing) or, transposed, packed per batch."""
    ys = "3x24x64" if not tb else "3x64x24"
    text = f"""relay.func @main(%x: tensor<3x20x24xf32>, %y: tensor<{ys}xf32>) -> tensor<3x20x64xf32> {{
  %0 = nn.batch_matmul(%x, %y) {{transpose_b = {str(tb).lower()}}} : tensor<3x20x64xf32>
  return %0
}}"""
    te, k, f = te_and_kernel(text)
    assert "llvm_vectorize" not in te and "te.unroll" in te
    assert ("_packed" in te) == tb
    x, y = randn(3, 20, 24), randn(*map(int, ys.split("x")))
    yy = y.transpose(0, 2, 1) if tb else y
    want = np.matmul(x.astype(np.float64), yy.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(run(k, f, x, y), want, rtol=1e-4, atol=1e-4)


def test_gemm_with_a_non_pointwise_consumer_accumulates_at_root():
    """A dense whose consumer is a transpose (no epilogue to compute it at):
    tiled at root, accumulating in memory, still numpy's answer."""
    text = """relay.func @f(%x: tensor<32x16xf32>, %w: tensor<64x16xf32>) -> tensor<64x32xf32> attributes {primitive} {
  %0 = nn.dense(%x, %w) : tensor<32x64xf32>
  %1 = transpose(%0) {axes = [1, 0]} : tensor<64x32xf32>
  return %1
}"""
    te, k, f = te_and_kernel(text)
    assert "te.reorder %j.outer, %i.outer, %k_1, %i.inner, %j.inner" in te
    x, w = randn(32, 16), randn(64, 16)
    want = (x.astype(np.float64) @ w.T.astype(np.float64)).T.astype(np.float32)
    np.testing.assert_allclose(run(k, f, x, w), want, rtol=1e-4, atol=1e-4)


def _dense_text(rows, k, n, w, lead=()):
    wtext = ", ".join(repr(float(v)) for v in w.ravel())
    xs = "x".join(str(d) for d in (*lead, rows, k))
    ys = "x".join(str(d) for d in (*lead, rows, n))
    return f"""relay.func @main(%x: tensor<{xs}xf32>, %v: tensor<1x{k}xf32>) -> (tensor<{ys}xf32>, tensor<1x{n}xf32>) {{
  %w = constant dense<[{wtext}]> : tensor<{n}x{k}xf32>
  %0 = nn.dense(%x, %w) : tensor<{ys}xf32>
  %1 = nn.dense(%v, %w) : tensor<1x{n}xf32>
  return %0, %1
}}"""


def test_alter_op_layout_transposes_constant_dense_weights():
    """build(): a dense with a constant weight and 4 to 15 rows becomes a
    matmul reading the weight transposed at compile time; one row stays."""
    from tvmd.runtime.build import build
    w = randn(64, 32)
    cm = build(_dense_text(8, 32, 64, w), progress=False)
    assert cm.stats["alter-op-layout"]["dense-to-matmul"] == 1
    assert sorted(cm.kernels) == ["fused_nn_dense", "fused_nn_matmul"]
    x, v = randn(8, 32), randn(1, 32)
    a, b = cm.run(x, v)
    np.testing.assert_allclose(a, (x.astype(np.float64) @ w.T).astype(np.float32), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(b, (v.astype(np.float64) @ w.T).astype(np.float32), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("lead, rows, k, n", [((), 37, 45, 96), ((2,), 19, 33, 48), ((), 16, 768, 64), ((), 20, 33, 97),
                                              ((), 24, 16, 29)])
def test_alter_op_layout_packs_constant_weights_for_the_gemm(lead, rows, k, n):
    """build(): with 16 rows or more the weight is packed at compile time
    (nn.contrib_dense_pack), the kernel is the GEMM tile reading the panels
    with no packing stage of its own, and the result is numpy's at odd
    sizes (rows not a multiple of the tile, k odd, n one vector wide; n =
    97 and 29, which no panel divides: the weight padded to whole panels,
    the kernel writing only the n columns, no slice after)."""
    from tvmd.runtime.build import build
    w = randn(n, k)
    cm = build(_dense_text(rows, k, n, w, lead), progress=False)
    assert cm.stats["alter-op-layout"]["dense-pack"] == 1
    assert "fused_nn_contrib_dense_pack" in cm.kernels
    assert not any("strided_slice" in name for name in cm.kernels), cm.kernels
    x, v = randn(*lead, rows, k), randn(1, k)
    a, b = cm.run(x, v)
    np.testing.assert_allclose(a, (x.astype(np.float64) @ w.T).astype(np.float32), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(b, (v.astype(np.float64) @ w.T).astype(np.float32), rtol=1e-4, atol=1e-4)


def test_a_padded_weight_panel_over_rows_known_at_run_time():
    """'?' rows and 97 columns (no panel divides them): one build, the
    GEMM over whole zero-padded panels writing the 97 columns, at row
    counts under, at and over a tile."""
    from tvmd.runtime.build import build
    w = randn(97, 40)
    text = _dense_text("?", 40, 97, w)
    cm = build(text, progress=False, fallback=False)
    assert not any("strided_slice" in name for name in cm.kernels), cm.kernels
    for rows in (1, 4, 7, 33):
        x, v = randn(rows, 40), randn(1, 40)
        a, b = cm.run(x, v)
        np.testing.assert_allclose(a, (x.astype(np.float64) @ w.T).astype(np.float32), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(b, (v.astype(np.float64) @ w.T).astype(np.float32), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("cin, cout, h, w", [(24, 64, 7, 9), (3, 96, 13, 5), (16, 40, 6, 6)])
def test_pointwise_convs_become_packed_dense_and_match_numpy(cin, cout, h, w):
    """build(): an NCHW 1x1 conv (converted to NHWC) with a constant weight
    is a packed dense over the NHWC data, with its bias and relu (40
    channels are not whole panels with AVX-512: padded to 48, which the
    kernel leaves off); the result is numpy's at odd spatial sizes."""
    from tvmd.runtime.build import build
    wt = randn(cout, cin, 1, 1)
    bias = randn(cout)
    wtext = ", ".join(repr(float(v)) for v in wt.ravel())
    btext = ", ".join(repr(float(v)) for v in bias)
    text = f"""relay.func @main(%x: tensor<1x{cin}x{h}x{w}xf32>) -> tensor<1x{cout}x{h}x{w}xf32> {{
  %w = constant dense<[{wtext}]> : tensor<{cout}x{cin}x1x1xf32>
  %b = constant dense<[{btext}]> : tensor<{cout}xf32>
  %0 = nn.conv2d(%x, %w) : tensor<1x{cout}x{h}x{w}xf32>
  %1 = nn.bias_add(%0, %b) : tensor<1x{cout}x{h}x{w}xf32>
  %2 = nn.relu(%1) : tensor<1x{cout}x{h}x{w}xf32>
  return %2
}}"""
    cm = build(text, progress=False)
    assert cm.stats["alter-op-layout"]["conv1x1-pack"] == 1
    x = randn(1, cin, h, w)
    want = np.einsum("nchw,oc->nohw", x.astype(np.float64), wt[:, :, 0, 0].astype(np.float64))
    want = np.maximum(want + bias[None, :, None, None], 0)
    np.testing.assert_allclose(cm.run(x), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("cin, cout, h, w, k, stride", [(13, 64, 9, 11, 3, 1), (8, 48, 10, 7, 3, 2),
                                                      (3, 32, 12, 12, 7, 2),
                                                      # maps narrower than any ragged block: the
                                                      # whole width is the tile (4, 3, 2 pixels)
                                                      (40, 64, 4, 4, 3, 1), (16, 32, 3, 3, 3, 1),
                                                      (24, 96, 4, 4, 3, 2)])
def test_nhwc_convs_with_constant_weights_read_them_in_output_channel_panels(cin, cout, h, w, k, stride):
    """build(): an NCHW conv converted to NHWC with a constant weight has
    it packed at compile time as OHWI{n}o (conv-pack), with its bias and
    relu; numpy's answer at odd sizes, strides and a 7x7 stem."""
    from tvmd.runtime.build import build
    wt, bias = randn(cout, cin, k, k), randn(cout)
    p = k // 2
    wtext = ", ".join(repr(float(v)) for v in wt.ravel())
    btext = ", ".join(repr(float(v)) for v in bias)
    oh, ow = (h + 2 * p - k) // stride + 1, (w + 2 * p - k) // stride + 1
    out = f"tensor<1x{cout}x{oh}x{ow}xf32>"
    text = f"""relay.func @main(%x: tensor<1x{cin}x{h}x{w}xf32>) -> {out} {{
  %w = constant dense<[{wtext}]> : tensor<{cout}x{cin}x{k}x{k}xf32>
  %b = constant dense<[{btext}]> : tensor<{cout}xf32>
  %0 = nn.conv2d(%x, %w) {{strides = [{stride}, {stride}], padding = [{p}, {p}, {p}, {p}]}} : {out}
  %1 = nn.bias_add(%0, %b) : {out}
  %2 = nn.relu(%1) : {out}
  return %2
}}"""
    cm = build(text, progress=False)
    assert cm.stats["alter-op-layout"]["conv-pack"] == 1
    x = randn(1, cin, h, w)
    want = conv_nchw_ref(x, wt, p)[:, :, ::stride, ::stride] + bias[None, :, None, None]
    np.testing.assert_allclose(cm.run(x), np.maximum(want, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", [AVX2, AVX512])
def test_dense_pack_is_the_gemm_tile_without_a_packing_stage(target):
    """The packed read wp[j / n, k, j % n] is recognised as a GEMM's B:
    register tile, parallel column blocks, no stage packing B again; a bias
    and GELU epilogue fuse into the tile's copy out."""
    w = randn(64, 24, 16)     # N = 1024 in panels of 16, K = 24
    wtext = ", ".join(repr(float(v)) for v in w.ravel())
    text = f"""relay.func @main(%x: tensor<50x24xf32>, %b: tensor<1024xf32>) -> tensor<50x1024xf32> {{
  %w = constant dense<[{wtext}]> : tensor<64x24x16xf32>
  %0 = nn.contrib_dense_pack(%x, %w) {{weight_layout = "NC16n"}} : tensor<50x1024xf32>
  %1 = nn.bias_add(%0, %b) {{axis = 1}} : tensor<50x1024xf32>
  %2 = tanh(%1) : tensor<50x1024xf32>
  return %2
}}"""
    te, k, f = te_and_kernel(text, target)
    te = te.split("{-#")[0]    # (not the weights)
    assert "_packed" not in te and "te.compute_at %T_dense_pack" in te and "te.parallel" in te, te
    x, b = randn(50, 24), randn(1024)
    wk = w.transpose(1, 0, 2).reshape(24, 1024).astype(np.float64)
    want = np.tanh(x.astype(np.float64) @ wk + b)
    np.testing.assert_allclose(run(k, f, x, w, b), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("h, w, panels, cols, stage", [(6, 8, 1, 12, "padded"), (6, 8, 2, 29, "padded"),
                                                     (6, 8, 4, 58, "padded"),
                                                     (6, 8, 65, 1030, None), (5, 5, 3, 40, "rows"),
                                                     (3, 14, 4, 58, "rows")])
def test_dense_pack_with_a_ragged_last_panel(h, w, panels, cols, stage):
    """An NHWC 1x1 conv's GEMM (rows h and w, batch axes fused with the
    column panels into the parallel loop) whose columns end inside the
    last panel of 16: with few panels it is computed over whole panels
    (the padding's zeros read) and copied out, so no tile's columns are
    guarded (with fewer columns than a panel, at the root rather than at
    the epilogue's tiles); with many (an LM head) the guarded last panel
    stays.  Where no tile height divides w (5, 14 on AVX2), the rows are
    flattened (h * w), and the flattened GEMM is padded to whole panels
    too (SqueezeNet's 13 x 13 x 1000 classifier: 64 -> 210 GFLOP/s;
    ShuffleNet's 14 x 14 x 116: 38 -> 139, where the conv tile of 14 rows
    of 4-lane vectors had been taken over it).  With a bias and ReLU epilogue; numpy's answer."""
    wt = randn(panels, 24, 16)
    wt[-1, :, cols - 16 * (panels - 1):] = 0.0    # the packing's zero padding
    wtext = ", ".join(repr(float(v)) for v in wt.ravel())
    out = f"1x{h}x{w}x{cols}xf32"
    text = f"""relay.func @main(%x: tensor<1x{h}x{w}x24xf32>, %b: tensor<{cols}xf32>) -> tensor<{out}> {{
  %w = constant dense<[{wtext}]> : tensor<{panels}x24x16xf32>
  %0 = nn.contrib_dense_pack(%x, %w) {{weight_layout = "NC16n", units = {cols}}} : tensor<{out}>
  %1 = nn.bias_add(%0, %b) {{axis = 3}} : tensor<{out}>
  %2 = nn.relu(%1) : tensor<{out}>
  return %2
}}"""
    te, k, f = te_and_kernel(text)
    te = te.split("{-#")[0]
    assert ("T_dense_pack_padded" in te and f"tensor<1x{h}x{w}x{16 * panels}xf32>" in te) == (stage == "padded"), te
    assert ("T_dense_pack_rows" in te and f"tensor<{h * w}x{16 * panels}xf32>" in te) == (stage == "rows"), te
    # narrower than its panel: computed whole at the root (at the epilogue's
    # tiles it would take their 12 columns, vectors of 12 lanes)
    assert ("te.compute_at %T_dense_pack_padded" in te) == (stage == "padded" and cols >= 16), te
    x, b = randn(1, h, w, 24), randn(cols)
    wk = wt.transpose(1, 0, 2).reshape(24, 16 * panels)[:, :cols].astype(np.float64)
    want = np.maximum(x.reshape(h * w, 24).astype(np.float64) @ wk + b, 0).reshape(1, h, w, cols)
    np.testing.assert_allclose(run(k, f, x, wt, b), want, rtol=1e-4, atol=1e-4)


def test_a_narrow_conv_tile_does_not_win_over_the_flattened_gemm():
    """ShuffleNet's 14 x 14 x 116 1x1 conv on AVX-512: no GEMM tile height
    divides 14, and the conv's own tile (14 rows of 4-lane vectors: 116 =
    29 x 4) holds 14 registers against the flattened GEMM's 8 x 32 in 16,
    but computes 56 elements against 256 (38 against 139 GFLOP/s): the
    rows are flattened, by the elements a tile computes."""
    text = """relay.func @main(%x: tensor<1x14x14x116xf32>, %w: tensor<4x116x32xf32>) -> tensor<1x14x14x116xf32> {
  %0 = nn.contrib_dense_pack(%x, %w) {units = 116, weight_layout = "NC32n"} : tensor<1x14x14x116xf32>
  return %0
}"""
    te = print_module(lower(text, f'fuse-ops,lower-relay-to-te{{target="{AVX512}"}}'))
    assert "%T_dense_pack_rows_padded = te.compute" in te and "tensor<196x128xf32>" in te, te


def test_dense_pack_tile_is_its_panel_width_with_ragged_rows():
    """Panels of 16 columns (two AVX2 vectors), 48 columns: three column
    blocks, too few to leave the rows serial by choice, and no tile height
    divides 37 rows.  The tile is still the panel's width (a narrower one
    would read B through j % 16) with a serial row loop whose last tile is
    partial; numpy's answer."""
    w = randn(3, 40, 16)      # N = 48 in panels of 16, K = 40
    wtext = ", ".join(repr(float(v)) for v in w.ravel())
    text = f"""relay.func @main(%x: tensor<37x40xf32>) -> tensor<37x48xf32> {{
  %w = constant dense<[{wtext}]> : tensor<3x40x16xf32>
  %0 = nn.contrib_dense_pack(%x, %w) {{weight_layout = "NC16n"}} : tensor<37x48xf32>
  return %0
}}"""
    te, k, f = te_and_kernel(text)
    te = te.split("{-#")[0]
    assert '"T_dense_pack.cols", [' not in te and "factor = 16}" in te, te   # one choice: the panel
    assert "te.compute_at" in te and "te.unroll" in te, te
    x = randn(37, 40)
    wk = w.transpose(1, 0, 2).reshape(40, 48).astype(np.float64)
    np.testing.assert_allclose(run(k, f, x, w), x.astype(np.float64) @ wk, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("b, m, k, n, tb, scale", [(3, 37, 20, 53, False, False), (2, 19, 33, 21, True, False),
                                                   (1, 197, 64, 197, False, True)])
def test_ragged_gemm_is_padded_to_whole_tiles(b, m, k, n, tb, scale):
    """Columns no vector divides (a ViT's 197 x 197 attention scores): the
    GEMM runs over rows and columns padded to whole register tiles (B
    packed in zero-filled panels, A's row index clamped) and is copied
    out; with a scale the copy-out is its epilogue.  numpy's answer."""
    ys = f"{b}x{n}x{k}" if tb else f"{b}x{k}x{n}"
    out = f"tensor<{b}x{m}x{n}xf32>"
    body = f"  %0 = nn.batch_matmul(%x, %y) {{transpose_b = {str(tb).lower()}}} : {out}\n"
    if scale:
        body += f"  %1 = multiply(%0, %s) : {out}\n  return %1\n"
    else:
        body += "  return %0\n"
    text = (f"relay.func @main(%x: tensor<{b}x{m}x{k}xf32>, %y: tensor<{ys}xf32>, %s: tensor<f32>) -> {out} {{\n"
            + body + "}")
    te, kern, f = te_and_kernel(text)
    assert "_padded" in te and "_packed" in te and "te.unroll" in te and "te.parallel" in te, te
    x, y, sc = randn(b, m, k), randn(*map(int, ys.split("x"))), np.array(0.5 if scale else 1.0, np.float32)
    yy = y.transpose(0, 2, 1) if tb else y
    want = np.matmul(x.astype(np.float64), yy.astype(np.float64)) * float(sc)
    args = (x, y, sc) if scale else (x, y)
    np.testing.assert_allclose(run(kern, f, *args), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("layout, wshape, message", [
    ("NC", (4, 3, 8), "weight_layout must be NC<n>n"),
    ("NC4n", (4, 3, 8), "packs 4 columns, but the weight's last axis is 8"),
    ("NC8n", (4, 5, 8), "reduction dimensions differ: data has 3, weight has 5"),
])
def test_dense_pack_type_errors(layout, wshape, message):
    from tvmd.ir.diagnostics import DiagnosticError
    ws = "x".join(map(str, wshape))
    text = f"""relay.func @main(%x: tensor<2x3xf32>, %w: tensor<{ws}xf32>) {{
  %0 = nn.contrib_dense_pack(%x, %w) {{weight_layout = "{layout}"}}
  return %0
}}"""
    with pytest.raises(DiagnosticError, match=message.replace("(", r"\(")):
        lower(text, "infer-type")


def test_softmax_and_layer_norm_rows():
    sm = """relay.func @main(%x: tensor<6x50xf32>) -> tensor<6x50xf32> {
  %0 = nn.softmax(%x) {axis = -1} : tensor<6x50xf32>
  return %0
}"""
    te, k, f = te_and_kernel(sm)
    assert te.count("llvm_vectorize") >= 2 and "te.parallel" in te
    # exp(x - max) is a stage computed once, read by the sum and the output
    assert te.count('te.intrin "exp"') == 1 and "%T_softmax_exp = te.compute" in te
    assert "te.compute_inline %T_softmax_exp" not in te and "te.axes %T_softmax_exp" in te
    x = randn(6, 50) * 10
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(run(k, f, x), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    # along an axis that is not the last
    sm = sm.replace("6x50", "4x7x9").replace("axis = -1", "axis = 1")
    te, k, f = te_and_kernel(sm)
    x = randn(4, 7, 9) * 10
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(run(k, f, x), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)

    ln = """relay.func @main(%x: tensor<5x40xf32>, %g: tensor<40xf32>, %b: tensor<40xf32>) -> tensor<5x40xf32> {
  %0 = nn.layer_norm(%x, %g, %b) {axis = -1, epsilon = 1e-5} : tensor<5x40xf32>
  return %0
}"""
    te, k, f = te_and_kernel(ln)
    assert "llvm_vectorize" in te and "te.parallel" in te
    x, g, b = randn(5, 40), randn(40), randn(40)
    x64 = x.astype(np.float64)
    want = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5) * g + b
    np.testing.assert_allclose(run(k, f, x, g, b), want, rtol=1e-4, atol=1e-4)


def test_pragma_vectorizes_a_float_reduction():
    """te.pragma {llvm_vectorize = 16} on a reduce axis: vector partial sums
    in the LLVM IR (no fast-math flag needed), and numpy's sum."""
    text = """te.func @rowsum(%A: tensor<8x1000xf32>) -> tensor<8xf32> {
  %S = te.compute [%i] reduce [%k: 1000] "sum" : tensor<8xf32> {
    %a = te.read %A[%i, %k] : f32
    yield %a
  }
  %i, %k = te.axes %S
  te.parallel %i
  te.pragma %k {llvm_vectorize = 16}
  return %S
}"""
    m = lower(text, "lower-te-to-tir,tir-simplify")
    assert "pragma_llvm_vectorize = 16" in print_module(m)
    assert "fadd contract <16 x float>" in jit.emit_llvm(m, "llvm -mcpu=x86-64-v4", opt_level=3)
    f = m.body.first
    a = randn(8, 1000)
    # (atol: a row sum near 0 has f32 rounding far above 1e-5 of itself)
    np.testing.assert_allclose(run(jit.compile(m).rowsum, f, a), a.astype(np.float64).sum(1), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("target,m,n,tile", [
    (AVX2, 96, 64, (6, 16)),      # 6 rows of two 8-lane vectors: 12 of 16 registers
    (AVX2, 64, 64, (4, 16)),      # 6 does not divide 64, and 4 column blocks are too few to leave rows serial
    (AVX2, 64, 256, (6, 16)),     # 16 column blocks: the rows stay serial, a partial last tile is fine
    (AVX2, 96, 24, (8, 8)),       # 16 does not divide 24: one vector per row, 8 rows
    (AVX512, 96, 64, (8, 32)),    # 8 rows of two 16-lane vectors: 16 of 32 registers, no taller (ROWS)
    (AVX512, 60, 512, (8, 32)),   # 16 column blocks: the rows stay serial, 8 rows and a partial last tile
    (AVX512, 96, 16, (8, 16)),    # one vector per row: no taller than 8 (a broadcast per FMA)
    (AVX2, 37, 32, (6, 16)),      # two column blocks, and no tile height divides 37: rows serial, partial last tile
])
def test_gemm_register_tile_fits_the_target(target, m, n, tile):
    """The GEMM tile's accumulators fit the target's vector registers; the
    kernel (AVX2 ones run here) is numpy's answer."""
    text = f"""relay.func @main(%x: tensor<{m}x32xf32>, %y: tensor<32x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %0 = nn.matmul(%x, %y) : tensor<{m}x{n}xf32>
  return %0
}}"""
    m_ = lower(text, f'fuse-ops,lower-relay-to-te{{target="{target}"}}')
    te = print_module(m_)
    assert '"T_matmul.rows", ' in te and f'{tile[0]}>}}' in te.split('"T_matmul.rows"')[1].split("\n")[0]
    assert f'{tile[1]}>}}' in te.split('"T_matmul.cols"')[1].split("\n")[0]
    if target == AVX2:
        _, k, f = te_and_kernel(text, target)
        x, y = randn(m, 32), randn(32, n)
        np.testing.assert_allclose(run(k, f, x, y), x @ y, rtol=1e-4, atol=1e-4)


def test_matmul_hand_schedule():
    with open(os.path.join(ROOT, "bench", "schedules", "matmul.te")) as fh:
        m = lower(fh.read(), "lower-te-to-tir,tir-simplify")
    f = m.body.first
    asm = jit.emit_assembly(m, "llvm -mcpu=skylake-avx512")
    assert asm.count("vfmadd231ps") >= 16 and "zmm" in asm
    a, b = randn(1024, 1024), randn(1024, 1024)
    got = run(jit.compile(m).matmul, f, a, b)
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-3)


def test_unrecognised_computes_still_get_parallel_loops():
    """A reduction over the first axis (a column sum) and a rank-3
    elementwise op whose last axis no vector width divides."""
    text = """relay.func @main(%x: tensor<30x64xf32>, %y: tensor<3x5x7xf32>) -> (tensor<64xf32>, tensor<3x5x7xf32>) {
  %0 = sum(%x) {axis = [0]} : tensor<64xf32>
  %1 = nn.relu(%y) : tensor<3x5x7xf32>
  return %0, %1
}"""
    te = print_module(lower(text, "fuse-ops,lower-relay-to-te"))
    assert te.count("te.parallel") >= 2
    m = lower(te, "lower-te-to-tir,tir-simplify")
    lib = jit.compile(m)
    x, y = randn(30, 64), randn(3, 5, 7)
    funcs = [op for op in m.body.ops if op.name == "tir.func"]
    results = {}
    for fn in funcs:
        ins = [x] if fn.args[0].type.shape == (30, 64) or list(fn.args[0].type.shape) == [30, 64] else [y]
        results[fn.sym_name] = run(lib[fn.sym_name], fn, *ins)
    got = sorted(results.values(), key=lambda r: r.ndim)
    np.testing.assert_allclose(got[0], x.astype(np.float64).sum(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[1], np.maximum(y, 0))


def test_depthwise_conv_rows_are_one_vector():
    """A depthwise conv has no read that is one broadcast per output row
    (input and weight both follow the channel), so two vectors per row
    would save no load: the tile is rows of one AVX2 vector, 12 of them
    (the 12 accumulators AVX2 has).  (A dense conv of this shape takes rows
    of two: 6 x 16.)"""
    text = """relay.func @main(%x: tensor<1x13x12x32xf32>, %w: tensor<3x3x32x1xf32>) -> tensor<1x13x12x32xf32> {
  %0 = nn.conv2d(%x, %w) {padding = [1, 1, 1, 1], groups = 32, channels = 32, kernel_size = [3, 3], data_layout = "NHWC", kernel_layout = "HWOI"} : tensor<1x13x12x32xf32>
  %1 = nn.relu(%0) : tensor<1x13x12x32xf32>
  return %1
}"""
    te, k, f = te_and_kernel(text)
    assert "%ax3.outer, %ax3.inner = te.split %ax3 {factor = 8}" in te
    assert "%ax2.outer, %ax2.inner = te.split %ax2 {factor = 12}" in te
    # each tile reads only its own channels: the padding is computed at the
    # tile (in cache), not in a pass of its own over the input
    assert "te.compute_at %pad, " in te
    x, w = randn(1, 13, 12, 32), randn(3, 3, 32, 1)
    want = np.zeros((1, 13, 12, 32), np.float64)
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0))).astype(np.float64)
    for ry in range(3):
        for rx in range(3):
            want += xp[:, ry:ry + 13, rx:rx + 12, :] * w[ry, rx, :, 0]
    np.testing.assert_allclose(run(k, f, x, w), np.maximum(want, 0), rtol=1e-4, atol=1e-4)
    dense = text.replace("groups = 32, ", "").replace("3x3x32x1", "3x3x32x32").replace('"HWOI"', '"HWIO"')
    te, _, _ = te_and_kernel(dense)
    assert "%ax3.outer, %ax3.inner = te.split %ax3 {factor = 16}" in te
    assert "te.compute_at %pad, " not in te   # every tile reads every channel: one pass


@pytest.mark.parametrize("shape, op, perm", [
    ((1, 12, 20, 48), 'layout_transform(%x) {src_layout = "NHWC", dst_layout = "NCHW"}', (0, 3, 1, 2)),
    ((24, 40), "transpose(%x)", (1, 0)),
    ((2, 16, 3, 8), "transpose(%x) {axes = [0, 3, 2, 1]}", (0, 3, 2, 1))])
def test_transposes_are_tiled_in_squares(shape, op, perm):
    """A stage whose read's contiguous axis is not the output's last one
    is tiled in squares (both axes split by a vector, the square's rows
    unrolled), not vectorized along the output alone (a gather from rows
    a whole input row apart); numpy's answer."""
    out = tuple(shape[i] for i in perm)
    ts = "x".join(map(str, shape))
    os_ = "x".join(map(str, out))
    text = f"""relay.func @main(%x: tensor<{ts}xf32>) -> tensor<{os_}xf32> {{
  %0 = {op} : tensor<{os_}xf32>
  return %0
}}"""
    te, k, f = te_and_kernel(text)
    assert te.count("te.split") == 2 and "te.unroll" in te and "te.vectorize" in te, te
    x = randn(*shape)
    np.testing.assert_array_equal(run(k, f, x), x.transpose(perm))


@pytest.mark.parametrize("c", [3, 1])
def test_short_last_axis_is_unrolled_not_fused(c):
    """NCHW to NHWC of an image with c channels: the short last axis is
    unrolled inside a vectorized width loop, the rows are the parallel loop
    (fusing all four axes into it costs a division per element)."""
    text = f"""relay.func @main(%x: tensor<2x{c}x5x11xf32>) -> tensor<2x5x11x{c}xf32> {{
  %0 = layout_transform(%x) {{src_layout = "NCHW", dst_layout = "NHWC"}} : tensor<2x5x11x{c}xf32>
  return %0
}}"""
    te, k, f = te_and_kernel(text)
    assert "%n.h.fused = te.fuse %n, %h" in te
    assert "te.vectorize %w" in te and "te.unroll %c" in te
    x = randn(2, c, 5, 11)
    np.testing.assert_array_equal(run(k, f, x), x.transpose(0, 2, 3, 1))


@pytest.mark.parametrize("n,h,w,c,o,epilogue,flat", [
    (1, 7, 7, 24, 128, True, True), (2, 5, 9, 16, 144, False, True), (1, 14, 14, 8, 256, True, True),
    # 49 rows: 6-row tiles, ragged, serial in each of two column blocks
    (1, 7, 7, 24, 32, True, True),
    # 64 rows: two column blocks, so the tile height must divide them (4):
    # no more accumulators than tiles along w
    (1, 8, 8, 24, 32, True, False)])
def test_small_spatial_1x1_conv_is_a_gemm_over_the_flattened_rows(n, h, w, c, o, epilogue, flat):
    """A 1x1 NHWC conv at a short width: the GEMM tile runs over h*w (and
    the batch) flattened, not along w, whose 7 or 9 pixels make short and
    ragged tiles; a copy stage (inlined into the epilogue) reads it back."""
    tail = (f"""  %1 = add(%0, %b) : tensor<{n}x{h}x{w}x{o}xf32>
  %2 = nn.relu(%1) : tensor<{n}x{h}x{w}x{o}xf32>
  return %2""" if epilogue else "  return %0")
    text = f"""relay.func @main(%x: tensor<{n}x{h}x{w}x{c}xf32>, %wt: tensor<1x1x{c}x{o}xf32>, %b: tensor<{o}xf32>) -> tensor<{n}x{h}x{w}x{o}xf32> {{
  %0 = nn.conv2d(%x, %wt) {{kernel_size = [1, 1], data_layout = "NHWC", kernel_layout = "HWIO"}} : tensor<{n}x{h}x{w}x{o}xf32>
{tail}
}}"""
    te, k, f = te_and_kernel(text)
    # the GEMM over the flattened rows, in 6 x 16 tiles
    assert (f"tensor<{n * h * w}x{o}xf32>" in te) == flat
    assert ("te.split %i {factor = 6}" in te and "te.split %j {factor = 16}" in te) == flat
    x, wt, b = randn(n, h, w, c), randn(1, 1, c, o), randn(o)
    want = np.einsum("nhwc,co->nhwo", x.astype(np.float64), wt[0, 0].astype(np.float64))
    if epilogue:
        want = np.maximum(want + b, 0)
    got = run(k, f, x, wt, b) if epilogue else run(k, f, x, wt)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("widths,vectorized", [
    ((64, 64), True),        # 8 channel blocks of 16: each from one input
    ((16, 48, 8), True),     # three inputs, every boundary a multiple of the vector (8)
    ((60, 68), False),       # a block straddles channel 60: left to LLVM
    ((5, 3), False),         # narrower than a vector
])
def test_concat_along_the_vector_axis(widths, vectorized):
    """A concatenation along NHWC's channels: where every input's width is
    a multiple of the vector, each vector comes from one input and the
    kernel reads both with vector loads (tir-vectorize's lane-uniform
    comparison); the parallel loop fuses the pixels only, the channel
    blocks a loop inside (no division per vector).  Numpy's answer either
    way."""
    h = 9    # 81 pixels: parallel work enough without the channel blocks
    total = sum(widths)
    params = ", ".join(f"%x{i}: tensor<1x{h}x{h}x{w}xf32>" for i, w in enumerate(widths))
    args = ", ".join(f"%x{i}" for i in range(len(widths)))
    text = f"""relay.func @main({params}) -> tensor<1x{h}x{h}x{total}xf32> {{
  %0 = concatenate({args}) {{axis = 3}} : tensor<1x{h}x{h}x{total}xf32>
  return %0
}}"""
    te, k, f = te_and_kernel(text)
    xs = [randn(1, h, h, w) for w in widths]
    np.testing.assert_array_equal(run(k, f, *xs), np.concatenate(xs, -1))
    if vectorized:
        assert "te.fuse %ax0, %ax1, %ax2\n" in te and "te.vectorize %ax3.inner" in te
        m = lower(te, "lower-te-to-tir,tir-vectorize")
        tir = print_module(m)
        assert "vectorized" not in tir
        for i in range(len(widths)):
            assert f"tir.load %p{i}[" in tir and ": vector<" in tir.split(f"tir.load %p{i}[")[1].split("\n")[0]


def test_streamed_weight_prefetches_its_next_panel():
    """A dense whose packed weight is large (2 MB) prefetches the next
    panel from its k loop (te.prefetch with offset K); a small one does not.
    Both are numpy's answer."""
    from tvmd.conversion.relay_to_te.schedules_gemm import MIN_STREAMED_BYTES
    for n, k, big in ((1024, 512, True), (64, 64, False)):
        assert (n * k * 4 >= MIN_STREAMED_BYTES) == big
        w = randn(n, k)
        text = f"""relay.func @main(%x: tensor<32x{k}xf32>) -> tensor<32x{n}xf32> {{
  %w = constant dense<0.0> : tensor<{n}x{k}xf32>
  %0 = nn.dense(%x, %w) : tensor<32x{n}xf32>
  return %0
}}"""
        from tvmd.ir.attributes import DenseAttr
        m = parse_module(text)
        c = next(op for op in m.lookup("main").body.ops if op.name == "relay.constant")
        c.attributes["value"] = DenseAttr(w, c.results[0].type)
        from tvmd.runtime.build import build
        cm = build(m, progress=False)
        te_text = print_module(cm.module)
        assert ("tir.prefetch" in te_text) == big
        x = randn(32, k)
        np.testing.assert_allclose(cm.run(x), x @ w.T, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("cin, cout, k, big", [(128, 256, 3, True), (16, 64, 3, False), (1024, 256, 1, True)])
def test_conv_streams_its_packed_weight_one_panel_ahead(cin, cout, k, big):
    """An NHWC conv whose packed weight is large (1 MB or more) prefetches
    the next output-channel panel from its input-channel loop: te.prefetch
    with offset KH * KW * I, the rows of one panel; a small weight does
    not.  The 3x3 conv's weight is OHWI32o; the 1x1 conv at 6x5 pixels is
    a GEMM over the 30 flattened rows, tiled at the root.  All are numpy's
    answer, with the bias and relu of the epilogue."""
    from tvmd.autotvm.dispatch import apply_best
    from tvmd.conversion.relay_to_te.schedules_gemm import MIN_STREAMED_BYTES
    from tvmd.ir.attributes import DenseAttr
    from tvmd.runtime.build import build
    assert (cout * cin * k * k * 4 >= MIN_STREAMED_BYTES) == big
    wt, bias = randn(cout, cin, k, k), randn(cout)
    p = k // 2
    out = f"tensor<1x{cout}x6x5xf32>"
    text = f"""relay.func @main(%x: tensor<1x{cin}x6x5xf32>) -> {out} {{
  %w = constant dense<0.0> : tensor<{cout}x{cin}x{k}x{k}xf32>
  %b = constant dense<0.0> : tensor<{cout}xf32>
  %0 = nn.conv2d(%x, %w) {{padding = [{p}, {p}, {p}, {p}]}} : {out}
  %1 = nn.bias_add(%0, %b) : {out}
  %2 = nn.relu(%1) : {out}
  return %2
}}"""

    def module():
        m = parse_module(text)
        for c, v in zip((op for op in m.lookup("main").body.ops if op.name == "relay.constant"), (wt, bias)):
            c.attributes["value"] = DenseAttr(v, c.results[0].type)
        return m

    m = module()
    PassManager(instantiate(parse_pipeline(
        f'convert-layout{{nn.conv2d=NHWC}},fold-constant,alter-op-layout{{pack-width=32}},fuse-ops,'
        f'lower-relay-to-te{{target="{AVX512}"}}'), get_pass_class)).run(m)
    apply_best(m, None)
    te = print_module(m)
    assert (f"x{cin}x32xf32>" in te) and (f"x{k}x{k}x{cin}x32xf32>" in te) == (k > 1)   # OHWI32o / NC32n
    prefetches = [line.strip() for line in te.splitlines() if "te.prefetch" in line]
    assert prefetches == ([f"te.prefetch %p1, %{'rc' if k > 1 else 'k'}_1 {{offset = {k * k * cin}}}"] if big else []), te
    x = randn(1, cin, 6, 5)
    want = conv_nchw_ref(x, wt, p) + bias[None, :, None, None]
    np.testing.assert_allclose(build(module(), progress=False).run(x), np.maximum(want, 0), rtol=1e-4, atol=1e-4)


def test_operand_packed_in_the_kernel_is_not_prefetched():
    """A matmul of two inputs packs B in the kernel itself, just before the
    GEMM reads it: a large B (2 MB) is in cache already and is not
    prefetched, and the kernel compiles (fallback=False) to numpy's answer."""
    from tvmd.runtime.build import build
    text = """relay.func @main(%a: tensor<32x512xf32>, %b: tensor<512x1024xf32>) -> tensor<32x1024xf32> {
  %0 = nn.matmul(%a, %b) : tensor<32x1024xf32>
  return %0
}"""
    cm = build(text, progress=False, fallback=False)
    assert "_packed" in print_module(cm.module) and "tir.prefetch" not in print_module(cm.module)
    a, b = randn(32, 512), randn(512, 1024)
    np.testing.assert_allclose(cm.run(a, b), a @ b, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("h, c, stride", [(112, 64, 2), (13, 40, 1), (9, 96, 2)])
def test_pool_parallel_loop_fuses_only_outer_axes(h, c, stride):
    """A max pool (no register block) fuses the outer axes into its parallel
    loop only until there are 64 iterations; the channel blocks stay a
    serial loop inside where the pixels are enough, so no vector of the
    output recovers its channel block by division (112x112x64 3x3/2 at one
    thread: 0.32 -> 0.27 ms).  numpy's answer, padding and strides
    included."""
    o = (h + 2 - 3) // stride + 1
    text = f"""relay.func @main(%x: tensor<1x{h}x{h}x{c}xf32>) -> tensor<1x{o}x{o}x{c}xf32> {{
  %0 = nn.max_pool2d(%x) {{pool_size = [3, 3], strides = [{stride}, {stride}], padding = [1, 1, 1, 1], layout = "NHWC"}} : tensor<1x{o}x{o}x{c}xf32>
  return %0
}}"""
    te, k, f = te_and_kernel(text, AVX512)
    fused = next(line for line in te.splitlines() if "te.parallel" in line)
    # n, h then w until 64 iterations; the channel blocks too only when the pixels are fewer
    assert ("c.outer" in fused) == (o * o < 64) and ("w" in fused) == (o < 64), te
    x = randn(1, h, h, c)
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)), constant_values=-np.inf)
    want = np.full((1, o, o, c), -np.inf, np.float32)
    for ry in range(3):
        for rx in range(3):
            want = np.maximum(want, xp[:, ry:ry + stride * o:stride, rx:rx + stride * o:stride])
    np.testing.assert_array_equal(run(k, f, x), want)
