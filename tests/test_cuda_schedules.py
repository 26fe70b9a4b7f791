"""Default CUDA schedules (conversion/relay_to_te/schedules_cuda.py): every
kernel they produce is bound to blocks and threads, computes what the relay
op's numpy compute() computes (run through the CUDA launcher with the tir
interpreter as the device), and compiles with nvcc."""

import os
import sys

import numpy as np
import pytest

from tvmd.conversion.relay_to_te.pass_ import default_schedule_for, lower_function
from tvmd.conversion.te_to_tir.lower import LowerTEToTIR
from tvmd.dialects.te.builder import Emitter
from tvmd.dialects.tir.passes.simplify import Simplify
from tvmd.ir.pass_manager import PassManager
from tvmd.ir.verifier import verify
from tvmd.parser import parse_module
from tvmd.backend.cuda.compile import compile_cuda, have_compiler
from tvmd.backend.cuda.emulator import emulate

sys.path.insert(0, os.path.dirname(__file__))
from topi_check import prim, random_input, reference, same  # noqa: E402

needs_compiler = pytest.mark.skipif(not have_compiler(), reason="no CUDA compiler (nvcc or NVRTC) on this machine")


def lower_to_tir(m):
    PassManager([(None, LowerTEToTIR()), (None, Simplify())]).run(m)
    verify(m)
    return m


def relay_kernel(text, seed=0):
    """(tir module, inputs, expected outputs) for a primitive relay function."""
    m = parse_module(text)
    rf = m.body.first
    rng = np.random.default_rng(seed)
    args = [random_input(a.type, rng) for a in rf.body.args]
    want = reference(rf, args)
    lower_function(m, rf, target="cuda")
    return lower_to_tir(m), args, want


def te_kernel(text):
    """A te.func without a schedule, given the default CUDA one, lowered."""
    m = parse_module(text)
    tf = m.body.first
    ret = tf.return_op
    ret.detach()
    default_schedule_for("cuda")(Emitter(tf.body, tf.loc), list(ret.operands))
    tf.body.append(ret)
    return lower_to_tir(m)


def run(m, name, args, out_types):
    lib = emulate(m)
    outs = [np.empty(s, d) for s, d in out_types]
    lib[name](*args, *outs)
    return lib, outs


def thread_tags(m):
    return {op.attributes["thread"] for op in m.walk()
            if op.name == "tir.for" and op.attributes.get("kind") == "thread"}


RELAY_CASES = {
    # elementwise: one fused axis, 256 threads a block, a guarded tail (1000 = 3*256 + 232)
    "add_relu": prim([("a", "tensor<10x100xf32>"), ("b", "tensor<10x100xf32>")],
                     ["%s = add(%a, %b) : tensor<10x100xf32>", "%r = nn.relu(%s) : tensor<10x100xf32>"]),
    "tanh_small": prim([("a", "tensor<7xf32>")], ["%r = tanh(%a) : tensor<7xf32>"]),
    # reductions: 16x16 output tiles, one output per thread
    "dense": prim([("a", "tensor<20x30xf32>"), ("w", "tensor<12x30xf32>")],
                  ["%r = nn.dense(%a, %w) : tensor<20x12xf32>"]),
    # multiples of 16: shared-memory tiles
    "dense_shared": prim([("a", "tensor<32x48xf32>"), ("w", "tensor<16x48xf32>")],
                         ["%r = nn.dense(%a, %w) : tensor<32x16xf32>"]),
    "dense_bias_relu": prim([("a", "tensor<33x17xf32>"), ("w", "tensor<40x17xf32>"), ("b", "tensor<40xf32>")],
                            ["%d = nn.dense(%a, %w) : tensor<33x40xf32>",
                             "%e = nn.bias_add(%d, %b) : tensor<33x40xf32>",
                             "%r = nn.relu(%e) : tensor<33x40xf32>"]),
    "conv2d": prim([("x", "tensor<1x3x10x10xf32>"), ("w", "tensor<8x3x3x3xf32>")],
                   ["%r = nn.conv2d(%x, %w) {padding = [1, 1, 1, 1]} : tensor<1x8x10x10xf32>"]),
    "conv2d_bias_relu": prim([("x", "tensor<2x4x9x9xf32>"), ("w", "tensor<6x4x3x3xf32>"), ("b", "tensor<6xf32>")],
                             ["%c = nn.conv2d(%x, %w) {strides = [2, 2], padding = [1, 1, 1, 1]} : tensor<2x6x5x5xf32>",
                              "%e = nn.bias_add(%c, %b) : tensor<2x6x5x5xf32>",
                              "%r = nn.relu(%e) : tensor<2x6x5x5xf32>"]),
}


@pytest.mark.parametrize("case", sorted(RELAY_CASES))
def test_relay_kernels_match_numpy(case):
    m, args, want = relay_kernel(RELAY_CASES[case])
    assert {"blockIdx.x", "threadIdx.x"} <= thread_tags(m)
    lib, outs = run(m, "k", args, [(w.shape, w.dtype) for w in want])
    same(outs, want)
    assert lib.launches, "nothing was launched"
    for _, grid, block in lib.launches:
        assert np.prod(block) <= 1024


def test_elementwise_tail_is_guarded():
    m, args, want = relay_kernel(RELAY_CASES["add_relu"])
    f = m.lookup("k")
    loops = {op.attributes["thread"]: op.static_extent for op in f.walk() if op.name == "tir.for"}
    assert loops["blockIdx.x"] == 4 and loops["threadIdx.x"] == 256
    assert any(op.name == "tir.if" for op in f.walk())   # 4*256 > 1000


def test_dense_uses_2d_thread_blocks_and_a_register_accumulator():
    m, args, want = relay_kernel(RELAY_CASES["dense_bias_relu"])
    assert thread_tags(m) == {"blockIdx.x", "blockIdx.y", "threadIdx.x", "threadIdx.y"}
    lib, outs = run(m, "k", args, [(w.shape, w.dtype) for w in want])
    assert lib.launches == [("k", (3, 3, 1), (16, 16, 1))]   # 33 rows, 40 columns: 3x3 tiles of 16x16
    assert "float d[1];" in lib.source                       # the accumulator: per thread, not global


def test_dense_with_multiples_of_16_stages_tiles_in_shared_memory():
    m, args, want = relay_kernel(RELAY_CASES["dense_shared"])
    f = m.lookup("k")
    shared = [op for op in f.walk() if op.name == "tir.alloc" and op.results[0].type.scope == "shared"]
    assert [op.results[0].type.shape for op in shared] == [(16, 17), (16, 17)]   # padded rows
    lib, outs = run(m, "k", args, [(w.shape, w.dtype) for w in want])
    same(outs, want)
    assert lib.launches == [("k", (1, 2, 1), (16, 16, 1))]
    src = lib.source
    assert src.count("__shared__ float") == 2
    # after each tile load, and before the next K step overwrites the tiles
    assert src.count("__syncthreads();") == 2
    body = src[src.index("for (long long k_outer"):]
    assert body.index("__syncthreads();") < body.index("for (long long k_inner")


SOFTMAX = """
te.func @softmax(%A: tensor<5x37xf32>) -> tensor<5x37xf32> {
  %M = te.compute [%i] reduce [%k: 37] "max" : tensor<5xf32> {
    %a = te.read %A[%i, %k] : f32
    yield %a
  }
  %E = te.compute [%i, %j] : tensor<5x37xf32> {
    %a = te.read %A[%i, %j] : f32
    %m = te.read %M[%i] : f32
    %d = arith.subf %a, %m : f32
    %x = te.intrin "exp"(%d) : f32
    yield %x
  }
  %S = te.compute [%i] reduce [%k: 37] "sum" : tensor<5xf32> {
    %e = te.read %E[%i, %k] : f32
    yield %e
  }
  %R = te.compute [%i, %j] : tensor<5x37xf32> {
    %e = te.read %E[%i, %j] : f32
    %s = te.read %S[%i] : f32
    %q = arith.divf %e, %s : f32
    yield %q
  }
  return %R
}
"""

TOTAL = """
te.func @total(%A: tensor<6x7xf32>) -> tensor<f32> {
  %T = te.compute [] reduce [%i: 6, %j: 7] "sum" : tensor<f32> {
    %a = te.read %A[%i, %j] : f32
    yield %a
  }
  return %T
}
"""


def test_softmax_row_reductions_become_separate_kernels():
    m = te_kernel(SOFTMAX)
    A = np.random.default_rng(1).standard_normal((5, 37)).astype("float32")
    lib, (R,) = run(m, "softmax", [A], [((5, 37), "float32")])
    e = np.exp(A - A.max(1, keepdims=True))
    np.testing.assert_allclose(R, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    # max, sum and the division: three launches, the row reductions one thread per row
    assert [n for n, _, _ in lib.launches] == ["softmax_kernel0", "softmax_kernel1", "softmax_kernel2"]
    assert lib.launches[0][2] == (5, 1, 1) and lib.launches[2][2] == (185, 1, 1)


def test_long_rows_reduce_with_a_block_of_32_threads_per_row():
    m = te_kernel(SOFTMAX.replace("37", "100"))
    A = np.random.default_rng(4).standard_normal((5, 100)).astype("float32") * 4
    lib, (R,) = run(m, "softmax", [A], [((5, 100), "float32")])
    e = np.exp(A - A.max(1, keepdims=True))
    np.testing.assert_allclose(R, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    # max and sum: one block of 32 per row; the division: elementwise
    assert lib.launches[:2] == [("softmax_kernel0", (5, 1, 1), (32, 1, 1)),
                                ("softmax_kernel1", (5, 1, 1), (32, 1, 1))]
    k0 = lib.source[lib.source.index("// launch @softmax_kernel0"):lib.source.index("// launch @softmax_kernel1")]
    assert "__shared__ float M_rf[32];" in k0
    # partial maxima per thread need no barrier; one before thread 0 combines them
    assert k0.count("__syncthreads();") == 1 and "if (threadIdx.x < 1)" in k0


ROWSUM3 = """
te.func @rowsum(%A: tensor<3x4x80xf32>) -> tensor<3x4xf32> {
  %S = te.compute [%i, %j] reduce [%k: 80] "sum" : tensor<3x4xf32> {
    %a = te.read %A[%i, %j, %k] : f32
    yield %a
  }
  return %S
}
"""


def test_rank2_row_reduction_uses_a_2d_grid():
    m = te_kernel(ROWSUM3)
    A = np.random.default_rng(5).standard_normal((3, 4, 80)).astype("float32")
    lib, (S,) = run(m, "rowsum", [A], [((3, 4), "float32")])
    np.testing.assert_allclose(S, A.sum(-1), rtol=1e-5, atol=1e-5)
    assert lib.launches == [("rowsum", (4, 3, 1), (32, 1, 1))]


def test_rank0_reduction_runs_on_one_thread():
    m = te_kernel(TOTAL)
    A = np.random.default_rng(2).standard_normal((6, 7)).astype("float32")
    lib, (T,) = run(m, "total", [A], [((), "float32")])
    np.testing.assert_allclose(T, A.sum(), rtol=1e-5)
    assert lib.launches == [("total", (1, 1, 1), (1, 1, 1))]


@needs_compiler
def test_nvcc_compiles_every_default_schedule():
    from tvmd.backend.cuda.codegen import generate
    sources = []
    for case in sorted(RELAY_CASES):
        m, _, _ = relay_kernel(RELAY_CASES[case])
        src, kernels = generate(m)
        assert all("__launch_bounds__" in src for _ in kernels)
        sources.append((case, src))
    for text in (SOFTMAX, SOFTMAX.replace("37", "100"), ROWSUM3, TOTAL):
        sources.append(("te", generate(te_kernel(text))[0]))
    for case, src in sources:
        cubin = compile_cuda(src, "sm_90", "cubin")
        assert cubin[:4] == b"\x7fELF", case
