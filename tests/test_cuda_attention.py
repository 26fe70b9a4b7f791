"""nn.attention's CUDA schedule (schedules_cuda_attention.py): one kernel,
a block per (batch x head, block of queries), the key and value tiles in
shared memory loaded cooperatively (float4 where the head dim allows), no
M x N buffer; equal to the op's numpy compute through the CUDA launcher
with the tir interpreter as the device, after the whole cuda tir pipeline;
compiled by nvcc where there is one."""

import os
import sys

import numpy as np
import pytest

from tvmd.backend.cuda.codegen import generate
from tvmd.backend.cuda.compile import compile_cuda, have_compiler
from tvmd.backend.cuda.emulator import emulate
from tvmd.dialects.tir.passes.pipeline import LowerTIR
from tvmd.ir.pass_manager import PassManager
from tvmd.ir.verifier import verify
from tvmd.parser import parse_module

sys.path.insert(0, os.path.dirname(__file__))
from test_cuda_schedules import relay_kernel  # noqa: E402
from topi_check import prim  # noqa: E402


def attention(b, h, m, n, d, causal="none", bias=None, layout="BNSH", kv_heads=None, empty_rows="nan"):
    shape = (lambda s, h=h: f"tensor<{b}x{h}x{s}x{d}xf32>") if layout == "BNSH" else \
        (lambda s, h=h: f"tensor<{b}x{s}x{h}x{d}xf32>")
    kvh = kv_heads or h
    params = [("q", shape(m)), ("k", shape(n, kvh)), ("v", shape(n, kvh))]
    args = "%q, %k, %v"
    if bias:
        params.append(("mask", f"tensor<{bias}xf32>"))
        args += ", %mask"
    return prim(params, [f'%r = nn.attention({args}) {{layout = "{layout}", causal_mask = "{causal}", '
                         f'empty_rows = "{empty_rows}"}} : {shape(m)}'])


def lowered(text, seed=0):
    """(module after the cuda tir pipeline, inputs, the numpy compute's outputs)."""
    m, args, want = relay_kernel(text, seed)
    PassManager([(None, LowerTIR(target="cuda"))]).run(m)
    verify(m)
    return m, args, want


def allocs(m):
    return [op.results[0].type for op in m.walk() if op.name == "tir.alloc"]


CASES = [
    # (b, h, m, n, d, causal, bias): several query blocks and key tiles, each causal form,
    # an additive mask broadcast over the heads, a head dim no float4 divides
    (1, 2, 64, 64, 16, "top_left", None),
    (2, 1, 24, 40, 8, "bottom_right", None),
    (1, 3, 16, 48, 12, "none", "1x1x16x48"),
    (1, 2, 8, 8, 6, "none", None),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_attention_equals_the_numpy_compute_in_one_kernel(case):
    b, h, m_, n, d, causal, bias = case
    m, args, want = lowered(attention(b, h, m_, n, d, causal, bias))
    lib = emulate(m)
    out = np.empty(want[0].shape, np.float32)
    lib["k"](*args, out)
    np.testing.assert_allclose(out, want[0], rtol=1e-5, atol=1e-6)
    assert len(lib.launches) == 1, lib.launches         # one kernel: nothing materialised between
    (_, grid, block), = lib.launches
    qb = block[0]
    assert grid == (m_ // qb, b * h, 1) and block == (qb, 1, 1)
    # per block: the maxima, the accumulator rows and the tiles; never M x N
    # (a bound that does not grow with the sequence: 64 is the largest block or tile)
    assert any(t.scope == "shared" for t in allocs(m))
    assert max(int(np.prod(t.shape)) for t in allocs(m)) <= 64 * (d + 8)
    src = generate(m)[0]
    assert src.count("__syncthreads();") >= 4
    assert ("float4" in src) == (d % 4 == 0)


def test_bsnh_layout_reads_the_heads_in_place():
    m, args, want = lowered(attention(1, 2, 16, 32, 8, "bottom_right", layout="BSNH"), seed=4)
    out = np.empty(want[0].shape, np.float32)
    emulate(m)["k"](*args, out)
    np.testing.assert_allclose(out, want[0], rtol=1e-5, atol=1e-6)


def test_the_block_and_tile_sizes_are_knobs():
    from tvmd.conversion.relay_to_te.pass_ import lower_function as lf
    m = parse_module(attention(1, 2, 64, 128, 16))
    lf(m, m.body.first, target="cuda")
    text = str(m)
    assert '#tune.knob<"r.queries", [32, 64], 32>' in text
    assert '#tune.knob<"r.keys", [16, 32, 64], 32>' in text


@pytest.mark.skipif(not have_compiler(), reason="no CUDA compiler (nvcc or NVRTC) on this machine")
def test_nvcc_compiles_the_attention_kernel():
    for case in CASES[:2]:
        m, _, _ = lowered(attention(*case))
        cubin = compile_cuda(generate(m)[0], "sm_90", "cubin")
        assert cubin[:4] == b"\x7fELF"


def test_grouped_query_heads_and_rows_with_no_key():
    """4 query heads over 2 key / value heads (head h reads h // 2), and
    bottom_right with fewer keys than queries: the first rows see no key,
    0 with empty_rows = "zero"; equal to the numpy compute."""
    m, args, want = lowered(attention(1, 4, 32, 16, 8, "bottom_right", kv_heads=2, empty_rows="zero"))
    out = np.empty(want[0].shape, np.float32)
    emulate(m)["k"](*args, out)
    assert np.all(want[0][:, :, :16] == 0) and not np.isnan(want[0]).any()
    np.testing.assert_allclose(out, want[0], rtol=1e-5, atol=1e-6)
