"""The LLVM IR tvmd generates: it parses and verifies, and says what it should."""

import os
import re

import llvmlite.binding as llvm
import numpy as np
import pytest

from tvmd.ir.diagnostics import DiagnosticError
from tvmd.parser import parse_module
from tvmd.backend.llvm import jit
from tvmd.backend.spec import TargetError, parse_target

KERNELS = os.path.join(os.path.dirname(__file__), "tir_kernels")
ALL = sorted(f for f in os.listdir(KERNELS) if f.endswith(".tir") and f != "shared_reverse.tir")


def module(file):
    with open(os.path.join(KERNELS, file)) as f:
        return parse_module(f.read(), file)


@pytest.mark.parametrize("file", ALL)
@pytest.mark.parametrize("opt", [0, 3])
def test_ir_parses_and_verifies(file, opt):
    text = jit.emit_llvm(module(file), opt_level=opt)
    m = llvm.parse_assembly(text)
    m.verify()


def test_signature_noalias_and_hidden_dims():
    """Buffers are noalias and claim no alignment (a caller's array at any
    element offset goes in as it is)."""
    text = jit.emit_llvm(module("dynamic.tir"))
    assert re.search(r"define void @scale\(ptr noalias %A, i64 %n, float %off, "
                     r"ptr noalias %B, i64 %A_dim0, i64 %B_dim0\)", text), text
    assert "define void @iota2d(i64 %rows, i64 %cols, ptr noalias %C, i64 %C_dim0, i64 %C_dim1)" in text


def test_loop_metadata():
    text = jit.emit_llvm(module("matmul_tiled.tir"))
    assert '!"llvm.loop.vectorize.enable", i1 true' in text
    assert '!"llvm.loop.vectorize.width", i32 16' in text
    assert '!"llvm.loop.unroll.full"' in text
    assert re.search(r"!\d+ = distinct !\{!\d+, ", text)


def test_parallel_loop_is_outlined_to_a_worker():
    text = jit.emit_llvm(module("add_relu_1d.tir"))
    assert "call void @__tvmd_parallel_for(ptr @add_relu_1d.parallel.1" in text
    assert "define internal void @add_relu_1d.parallel.1(ptr %closure, i64 %lo, i64 %hi)" in text
    assert "define internal void @add_relu_1d.parallel.1.body(ptr noalias %A, ptr noalias %B, ptr noalias %C" in text
    # text and objects carry the thread-pool runtime, internal to the module
    assert "define internal void @__tvmd_parallel_for(" in text
    assert "define internal ptr @__tvmd_pool_worker(" in text
    assert "@pthread_create" in text and "@pthread_detach" in text and "@pthread_join" not in text
    assert 'c"TVMD_NUM_THREADS\\00"' in text


def test_large_alloc_on_heap_small_on_stack():
    text = jit.emit_llvm(module("alloc_intermediate.tir"))
    assert "call ptr @aligned_alloc(i64 64, i64 80000)" in text
    assert "call void @free(ptr" in text
    assert "alloca [32 x float], align 64" in text


def test_vector_code_and_libm():
    text = jit.emit_llvm(module("vector.tir"))
    assert "load <8 x float>" in text and "store <8 x float>" in text
    assert re.search(r"fmul (contract )?<8 x float>", text)
    assert text.count("call float @erff(float") == 8   # erf has no LLVM intrinsic: lane by lane


def test_no_fast_math_but_contraction():
    """Only ``contract`` (a multiply-add may become one fma, one rounding):
    no reassociation, no finite-math assumptions."""
    text = jit.emit_llvm(module("matmul_tiled.tir"), opt_level=3)
    assert not re.search(r"\bfast\b|\breassoc\b|\bnnan\b|\bninf\b|\barcp\b|\bafn\b", text)
    assert re.search(r"fmul contract", jit.emit_llvm(module("matmul_tiled.tir")))
    asm = jit.emit_assembly(module("matmul_tiled.tir"), "llvm -mcpu=x86-64-v3")
    assert "vfmadd" in asm


def test_intrinsics_map_to_llvm():
    text = jit.emit_llvm(module("intrinsics.tir"))
    for name in ("log", "sqrt", "tanh", "fabs", "floor", "ceil", "roundeven", "trunc", "sin", "cos",
                 "pow", "fma"):
        assert f"@llvm.{name}.f32(" in text, name
    assert "@erff(" in text
    # float exp is expanded inline (so that it vectorizes): no libm call
    assert "@llvm.exp.f32(" not in text and "@expf(" not in text


def test_inline_exp_within_one_ulp_and_vectorized():
    """The inline exp against float64 numpy over the whole float range,
    specials included; in a vectorized loop it becomes vector code."""
    src = '''
tir.func @e(%A: memref<?xf32>, %C: memref<?xf32>, %n: index) {
  tir.for %i = 0 to %n vectorized {
    %a = tir.load %A[%i] : f32
    %s = tir.intrin "exp"(%a) : f32
    tir.store %s, %C[%i] : f32
  }
}
'''
    m = parse_module(src)
    assert "<16 x float>" in jit.emit_llvm(m, "llvm -mcpu=x86-64-v4", opt_level=3)
    lib = jit.compile(m)
    x = np.concatenate([np.linspace(-110, 95, 200_001, dtype=np.float32),
                        np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 88.72, 88.7228, 88.73, -87.3, -103.9],
                                 np.float32)])
    y = np.zeros_like(x)
    lib.e(x, y, x.size)
    ref = np.exp(x.astype(np.float64))
    with np.errstate(over="ignore"):
        ref32 = ref.astype(np.float32)
    normal = np.isfinite(ref32) & (ref32 > np.finfo(np.float32).tiny)
    ulps = np.abs(y[normal] - ref[normal]) / np.spacing(ref32[normal])
    assert ulps.max() <= 1.0
    np.testing.assert_array_equal(np.isnan(y), np.isnan(x))
    np.testing.assert_array_equal(np.isinf(y), np.isinf(ref32))
    tiny = ~normal & np.isfinite(ref32)           # gradual underflow: within one denormal step
    assert np.abs(y[tiny] - ref32[tiny]).max() <= np.float32(1.5e-45)


def test_barrier_in_thread_loop_needs_cuda():
    with pytest.raises(DiagnosticError, match="'tir.barrier' op synchronises GPU threads"):
        jit.emit_llvm(module("shared_reverse.tir"))


def test_assembly_and_object_for_a_cpu():
    m = module("add_relu_2d.tir")
    asm = jit.emit_assembly(m, "llvm -mcpu=x86-64-v3")
    assert "add_relu_2d" in asm and "ymm" in asm
    obj = jit.emit_object(m, "llvm -mcpu=x86-64")
    assert obj[:4] == b"\x7fELF"


def test_cross_target_object():
    m = module("add_relu_2d.tir")
    obj = jit.emit_object(m, "llvm -mtriple=aarch64-unknown-linux-gnu -mcpu=neoverse-n1")
    assert obj[:4] == b"\x7fELF" and obj[18] == 183   # e_machine EM_AARCH64


def test_target_strings():
    t = parse_target("llvm -mcpu=znver3 -mattr=+avx2,-avx512f")
    assert (t.mcpu, t.mattr) == ("znver3", "+avx2,-avx512f")
    assert str(t) == "llvm -mcpu=znver3 -mattr=+avx2,-avx512f"
    triple, cpu, feats = parse_target("llvm").resolved()
    assert cpu == llvm.get_host_cpu_name() and feats
    assert parse_target("cuda").arch == "sm_90"
    assert parse_target("cuda -arch=sm_80").arch == "sm_80"
    for bad, offset in (("gpu", 0), ("llvm -mcpu", 5), ("llvm -foo=1", 5), ("cuda -arch=90", 11),
                        ("llvm -mattr=avx2", 12), ("", 0)):
        with pytest.raises(TargetError) as e:
            parse_target(bad)
        assert e.value.offset == offset, bad
