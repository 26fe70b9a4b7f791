"""int8 dense on x86's u8 x s8 dot product (vpdpbusd, AVX512-VNNI): bit
exact against numpy's int64 product, on this CPU and with VNNI disabled
(``-mattr=-avx512vnni``: the dense stays plain int8, and a packed
"NC{n}n4c" product computes dot4_u8s8 in plain integer arithmetic).  The
packed words are checked against a packer written here from the layout's
definition, not against the library's own."""

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tvmd.backend.spec import parse_target
from tvmd.ir.attributes import DenseAttr
from tvmd.parser import parse_module
from tvmd.runtime.build import build

HOST_VNNI = bool(parse_target("llvm").vector_unit().vnni_lanes)
NO_VNNI = "llvm -mattr=-avx512vnni,-avxvnni"


def dense_module(m, k, n, w):
    """nn.dense of i8 data [m, k] (m may be '?') by the i8 constant w [n, k]."""
    rows = "?" if m is None else m
    m = parse_module(f"""relay.func @main(%x: tensor<{rows}x{k}xi8>) -> tensor<{rows}x{n}xi32> {{
  %w = constant dense<0> : tensor<{n}x{k}xi8>
  %d = nn.dense(%x, %w) {{out_dtype = "int32"}} : tensor<{rows}x{n}xi32>
  return %d
}}""")
    c = next(op for op in m.lookup("main").body.ops if op.name == "relay.constant")
    c.attributes["value"] = DenseAttr(w, c.results[0].type)
    return m


def reference(x, w):
    return (x.astype(np.int64) @ w.astype(np.int64).T).astype(np.int32)


def int8(rng, *shape):
    a = rng.integers(-128, 128, shape).astype(np.int8)
    a.flat[:2] = [-128, 127]   # the extremes, which the +128 shift to unsigned must carry
    return a


@pytest.mark.parametrize("target", ["llvm", NO_VNNI])
@pytest.mark.parametrize("m,k,n", [(1, 768, 96), (3, 64, 40), (16, 128, 64), (37, 96, 200)])
def test_int8_dense_is_exact(target, m, k, n):
    rng = np.random.default_rng(m * n)
    x, w = int8(rng, m, k), int8(rng, n, k)
    cm = build(dense_module(m, k, n, w), target=target, fallback=False)
    np.testing.assert_array_equal(cm.run(x), reference(x, w))
    packed = cm.stats["alter-op-layout"].get("int8-dense-pack", 0)
    assert packed == (1 if HOST_VNNI and target == "llvm" else 0)


def test_one_build_over_a_dynamic_row_count():
    rng = np.random.default_rng(5)
    w = int8(rng, 96, 64)
    cm = build(dense_module(None, 64, 96, w), fallback=False)
    for m in (1, 7, 64, 300):
        x = int8(rng, m, 64)
        np.testing.assert_array_equal(cm.run(x), reference(x, w))


def pack_words(w, nb):
    """w [N, K] int8 as "NC{nb}n4c": word [j / nb, kw, j % nb] holds
    w[j, 4kw .. 4kw + 3], byte 0 the lowest."""
    n, k = w.shape
    u = w.astype(np.int64) & 0xFF
    out = np.zeros((n // nb, k // 4, nb), np.int64)
    for j in range(n):
        for kw in range(k // 4):
            out[j // nb, kw, j % nb] = sum(int(u[j, 4 * kw + b]) << (8 * b) for b in range(4))
    return out.astype(np.uint32).view(np.int32)


def packed_text(m, k, n, nb):
    return f"""relay.func @main(%x: tensor<{m}x{k}xui8>, %w: tensor<{n // nb}x{k // 4}x{nb}xi32>) -> tensor<{m}x{n}xi32> {{
  %d = nn.contrib_dense_pack(%x, %w) {{weight_layout = "NC{nb}n4c", out_dtype = "int32"}} : tensor<{m}x{n}xi32>
  return %d
}}"""


@settings(max_examples=12, deadline=None)
@given(m=st.integers(1, 20), kw=st.integers(1, 24), panels=st.integers(1, 3), nb=st.sampled_from([16, 32]),
       vnni=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_packed_product_of_unsigned_by_signed_bytes(m, kw, panels, nb, vnni, seed):
    if vnni and not HOST_VNNI:
        vnni = False
    rng = np.random.default_rng(seed)
    k, n = 4 * kw, panels * nb
    x = rng.integers(0, 256, (m, k)).astype(np.uint8)
    w = int8(rng, n, k)
    cm = build(packed_text(m, k, n, nb), target="llvm" if vnni else NO_VNNI, fallback=False)
    want = reference(x, w)
    np.testing.assert_array_equal(cm.run(x, pack_words(w, nb)), want)


def test_the_interpreter_agrees_on_the_packed_product():
    from tvmd.dialects.relay.interpreter import run_function
    rng = np.random.default_rng(2)
    x = rng.integers(0, 256, (3, 8)).astype(np.uint8)
    w = int8(rng, 32, 8)
    got = run_function(parse_module(packed_text(3, 8, 32, 16)), "main", x, pack_words(w, 16))
    np.testing.assert_array_equal(np.asarray(got), reference(x, w))


def test_vpdpbusd_in_the_code_for_a_vnni_cpu_and_not_without(tmp_path):
    """Emitted (not run), so it holds on any host: the same relay for a
    VNNI CPU has vpdpbusd with its accumulator, for one without none."""
    src = tmp_path / "p.relay"
    src.write_text(packed_text(64, 256, 128, 32))
    lower = [sys.executable, "-m", "tvmd.tools.opt_main", str(src), "--fuse-ops", "--lower-relay-to-te",
             "--apply-schedule", "--lower-te-to-tir", "--lower-tir"]
    tir = subprocess.run(lower, capture_output=True, text=True, check=True).stdout
    for target, want in (("llvm -mcpu=znver4", True), ("llvm -mcpu=haswell", False)):
        asm = subprocess.run([sys.executable, "-m", "tvmd.tools.translate_main", "--emit=asm", f"--target={target}",
                              "-", "-o", "-"], input=tir, capture_output=True, text=True, check=True).stdout
        assert ("vpdpbusd" in asm) == want, target


@pytest.mark.parametrize("x_dtype,w_dtype,out,msg", [
    ("i8", "i32", "int32", "takes ui8 data"),
    ("ui8", "i8", "int32", "takes ui8 data"),
    ("ui8", "i32", "float32", "out_dtype int32"),
])
def test_packed_words_type_errors(x_dtype, w_dtype, out, msg):
    from tvmd.ir.diagnostics import DiagnosticError
    text = f"""relay.func @main(%x: tensor<2x8x{x_dtype}>, %w: tensor<1x2x16x{w_dtype}>) -> tensor<2x16xi32> {{
  %d = nn.contrib_dense_pack(%x, %w) {{weight_layout = "NC16n4c", out_dtype = "{out}"}} : tensor<2x16xi32>
  return %d
}}"""
    with pytest.raises(DiagnosticError, match=msg):
        parse_module(text).verify()


def conv_module(x_shape, w_hwio, strides, padding, dilation):
    """nn.conv2d of i8 NHWC data by the i8 constant HWIO weight, int32 out."""
    n, h, w, c = x_shape
    kh, kw, _, o = w_hwio.shape
    oh = (h + padding[0] + padding[2] - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (w + padding[1] + padding[3] - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    attrs = f"strides = {list(strides)}, padding = {list(padding)}, dilation = {list(dilation)}"
    m = parse_module(f"""relay.func @main(%x: tensor<{n}x{h}x{w}x{c}xi8>) -> tensor<{n}x{oh}x{ow}x{o}xi32> {{
  %w = constant dense<0> : tensor<{kh}x{kw}x{c}x{o}xi8>
  %y = nn.conv2d(%x, %w) {{{attrs}, data_layout = "NHWC", kernel_layout = "HWIO", out_dtype = "int32"}} : tensor<{n}x{oh}x{ow}x{o}xi32>
  return %y
}}""")
    cst = next(op for op in m.lookup("main").body.ops if op.name == "relay.constant")
    cst.attributes["value"] = DenseAttr(w_hwio, cst.results[0].type)
    return m


def conv_reference(x, w_hwio, strides, padding, dilation):
    """NHWC x HWIO in int64, tap by tap."""
    sh, sw = strides
    dh, dw = dilation
    top, left, bottom, right = padding
    xp = np.pad(x.astype(np.int64), [(0, 0), (top, bottom), (left, right), (0, 0)])
    kh, kw = w_hwio.shape[:2]
    oh = (xp.shape[1] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[2] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((x.shape[0], oh, ow, w_hwio.shape[3]), np.int64)
    for ry in range(kh):
        for rx in range(kw):
            patch = xp[:, ry * dh:ry * dh + sh * (oh - 1) + 1:sh, rx * dw:rx * dw + sw * (ow - 1) + 1:sw]
            out += np.einsum("byxc,co->byxo", patch, w_hwio[ry, rx].astype(np.int64))
    return out.astype(np.int32)


@pytest.mark.parametrize("target", ["llvm", NO_VNNI])
@pytest.mark.parametrize("c,o,k,strides,padding,dilation", [
    (16, 32, 3, (1, 1), (1, 1, 1, 1), (1, 1)),      # the padding shifted to 128, not 0
    (8, 64, 3, (2, 2), (1, 0, 2, 1), (1, 1)),       # strided, uneven padding
    (12, 16, 3, (1, 1), (2, 2, 2, 2), (2, 2)),      # dilated
    (32, 32, 1, (1, 1), (0, 0, 0, 0), (1, 1)),      # a pixel dense
    (3, 32, 7, (2, 2), (3, 3, 3, 3), (1, 1)),       # an image's 3 channels: padded to 4, zero weights
    (6, 16, 1, (1, 1), (0, 0, 0, 0), (1, 1)),       # padded channels and no spatial padding
])
def test_int8_conv2d_is_exact(target, c, o, k, strides, padding, dilation):
    rng = np.random.default_rng(c * o + k)
    x, w = int8(rng, 2, 9, 11, c), int8(rng, k, k, c, o)
    cm = build(conv_module(x.shape, w, strides, padding, dilation), target=target, fallback=False)
    np.testing.assert_array_equal(cm.run(x), conv_reference(x, w, strides, padding, dilation))
    packed = cm.stats["alter-op-layout"].get("int8-conv-pack", 0)
    assert packed == (1 if HOST_VNNI and target == "llvm" else 0)


def test_a_quantized_cnn_gives_the_same_integers_with_and_without_vnni():
    """The int8 model of --quantize (convs and their requantization in
    integers): compiled for VNNI, its output equals the build without VNNI
    bit for bit, and the relay interpreter's to float rounding."""
    from tvmd.dialects.relay.interpreter import run_function
    from tvmd.dialects.relay.passes.quantize import quantize
    from tvmd.ir.printer import print_module
    from tvmd.testing.quantize_models import random_inputs, resnet_like
    m = resnet_like(batch=2, width=16)
    quantize(m, dataset=[{"x": random_inputs(1, 2, 10)[0]}], calibrate_mode="kl_divergence", per_channel=True)
    text = print_module(m)
    x = random_inputs(1, 2, 20)[0]
    fast = build(parse_module(text), fallback=False)
    plain = build(parse_module(text), target=NO_VNNI, fallback=False)
    assert fast.stats["alter-op-layout"].get("int8-conv-pack", 0) == (6 if HOST_VNNI else 0)   # the first stays f32
    got = fast.run(x)
    np.testing.assert_array_equal(got, plain.run(x))
    np.testing.assert_allclose(got, run_function(parse_module(text), "main", x), rtol=1e-5, atol=1e-5)
