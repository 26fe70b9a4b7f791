"""CUDA C from tir: the text, the launch configuration, and nvcc accepting it."""

import os
import re

import pytest

from tvmd.ir.diagnostics import DiagnosticError
from tvmd.parser import parse_module
from tvmd.backend.cuda.codegen import float_literal, generate
from tvmd.backend.cuda.compile import CudaCompileError, compile_cuda, find_nvcc, have_compiler
from tvmd.backend.cuda.target import CUDATarget

KERNELS = os.path.join(os.path.dirname(__file__), "tir_kernels")
needs_compiler = pytest.mark.skipif(not have_compiler(), reason="no CUDA compiler (nvcc or NVRTC) on this machine")


def module(*files):
    text = ""
    for f in files:
        with open(os.path.join(KERNELS, f)) as fh:
            text += fh.read() + "\n"
    return parse_module(text)


def test_thread_bound_kernel_text_and_launch():
    src, (k,) = generate(module("thread_elemwise.tir"))
    assert k.grid == (8, 1, 1) and k.block == (128, 1, 1)
    assert 'extern "C" __global__ void __launch_bounds__(128) gpu_add(float* __restrict__ A, ' \
           'float* __restrict__ B, float* __restrict__ C)' in src
    assert "// launch @gpu_add: grid=(8, 1, 1) block=(128, 1, 1)" in src
    assert "const long long bx = ((long long)blockIdx.x);" in src
    assert "const long long tx = ((long long)threadIdx.x);" in src
    assert "tanhf(" in src and "for (" not in src.split("gpu_add")[1]


def test_shared_memory_kernel_text():
    src, (k,) = generate(module("shared_reverse.tir"))
    assert "__shared__ float S[32];" in src and "__syncthreads();" in src
    assert k.shared_bytes == 128 and k.grid == (4, 1, 1) and k.block == (32, 1, 1)


def test_dynamic_grid_and_hidden_dims():
    m = parse_module("""
tir.func @dyn(%A: memref<?x8xf32>, %n: index) {
  tir.for %i = 0 to %n thread("blockIdx.x") {
    tir.for %j = 0 to 8 thread("threadIdx.x") {
      %v = tir.load %A[%i, %j] : f32
      %s = tir.intrin "sigmoid"(%v) : f32
      tir.store %s, %A[%i, %j] : f32
    }
  }
}""")
    src, (k,) = generate(m)
    assert k.grid == ("n", 1, 1)
    assert k.resolve({"n": 5}) == ((5, 1, 1), (8, 1, 1))
    assert "long long n, long long A_dim0)" in src
    assert "(1.0f / (1.0f + expf(-v)))" in src


def test_mismatched_thread_extents_are_guarded():
    m = parse_module("""
tir.func @two(%A: memref<64xf32>) {
  tir.for %t = 0 to 64 thread("threadIdx.x") {
    %z = arith.constant 0.0 : f32
    tir.store %z, %A[%t] : f32
  }
  tir.for %t = 0 to 16 thread("threadIdx.x") {
    %o = arith.constant 1.0 : f32
    tir.store %o, %A[%t] : f32
  }
}""")
    src, (k,) = generate(m)
    assert k.block == (64, 1, 1)
    assert src.count("if (threadIdx.x < 16)") == 1


def test_vector_code_uses_float4_where_aligned():
    src, (k,) = generate(module("vector.tir"))
    # rows of 16 floats, starts at multiples of 8: two float4 per vector<8>
    assert src.count("*reinterpret_cast<const float4*>(&A[") == 2
    assert "*reinterpret_cast<float4*>(&C[((i * 16LL) + j) + 4]) = make_float4(s_4, s_5, s_6, s_7);" in src
    assert "const float e_7 = erff(r_7);" in src
    # the same kernel at an odd offset: lane by lane
    text = open(os.path.join(KERNELS, "vector.tir")).read().replace(
        "%j = arith.muli %h, %c8 : index", "%j0 = arith.muli %h, %c8 : index\n      %c1 = arith.constant 1 : index\n"
        "      %j = arith.addi %j0, %c1 : index").replace("0 to 2 {", "0 to 1 {")
    src, _ = generate(parse_module(text))
    assert "float4" not in src and "C[((i * 16LL) + j) + 7] = s_7;" in src


def test_unsupported_code_is_a_diagnostic_with_a_location():
    m = parse_module("""
tir.func @bad(%A: memref<8xf32>, %lo: index) {
  tir.for %t = %lo to 8 thread("threadIdx.x") {
    %z = arith.constant 0.0 : f32
    tir.store %z, %A[%t] : f32
  }
}""")
    with pytest.raises(DiagnosticError, match="static lower bound") as e:
        generate(m)
    assert e.value.loc.file_line_col() is not None


def test_float_literals_are_exact():
    assert float_literal(0.1, "f32") == "0.1f"
    assert float_literal(1.0, "f32") == "1.0f"
    assert float_literal(float("inf"), "f32") == "__int_as_float(0x7f800000)"
    assert float_literal(-float("inf"), "f32") == "-__int_as_float(0x7f800000)"
    assert float_literal(0.1, "f64") == "0.1"


@needs_compiler
def test_nvcc_compiles_thread_and_shared_memory_kernels():
    src, kernels = generate(module("thread_elemwise.tir", "shared_reverse.tir", "add_relu_2d.tir",
                                   "intrinsics.tir", "dynamic.tir", "reduce_sum.tir", "vector.tir"),
                            CUDATarget("sm_90"))
    cubin = compile_cuda(src, "sm_90", "cubin")
    assert cubin[:4] == b"\x7fELF"
    for k in kernels:
        assert k.symbol.encode() in cubin, k.name


@needs_compiler
def test_ptx_and_compile_errors():
    src, _ = generate(module("shared_reverse.tir"))
    ptx = compile_cuda(src, "sm_90", "ptx").decode()
    assert ".entry shared_reverse" in ptx and "bar.sync" in ptx
    with pytest.raises(CudaCompileError) as e:
        compile_cuda("this is not cuda", "sm_90")
    assert e.value.log


@pytest.mark.skipif(find_nvcc() is None, reason="no nvcc")
def test_tvm_translate_emits_cubin(tmp_path):
    from tvmd.tools.translate_main import main
    out = tmp_path / "k.cubin"
    rc = main([os.path.join(KERNELS, "thread_elemwise.tir"), "--emit=cubin", "--target=cuda -arch=sm_90",
               "-o", str(out)])
    assert rc == 0 and out.read_bytes()[:4] == b"\x7fELF"
    assert re.search(rb"gpu_add", out.read_bytes())


def test_shifts_follow_numpy_beyond_the_bit_width(tmp_path):
    """C's << and >> are undefined for amounts >= the width or negative; the
    prelude's tvmd_shl / tvmd_shr are not.  Their source is compiled as host
    C++ (g++, with the CUDA qualifiers defined away) and checked against numpy."""
    import shutil
    import subprocess

    import numpy as np

    from tvmd.backend.cuda.codegen import PRELUDE
    src, _ = generate(parse_module("""
tir.func @sh(%A: memref<64xi32>, %B: memref<64xi32>, %C: memref<64xi32>) {
  tir.for %t = 0 to 64 thread("threadIdx.x") {
    %a = tir.load %A[%t] : i32
    %n = tir.load %B[%t] : i32
    %l = arith.shli %a, %n : i32
    %r = arith.shrsi %l, %n : i32
    tir.store %r, %C[%t] : i32
  }
}"""))
    assert "tvmd_shl(" in src and "tvmd_shr(" in src and "<<" not in src.split("void")[-1]
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("no g++ to run the prelude on the host")
    a = np.array([1, -1, 5, -7, 123456, -2**31, 2**31 - 1], dtype=np.int32)
    n = np.array([-33, -1, 0, 1, 31, 32, 40], dtype=np.int32)
    host = ["#define __device__", "#define __forceinline__ inline", "#include <cstdio>", PRELUDE,
            "int main() {",
            f"  int a[] = {{{', '.join(map(str, a.tolist()))}}}; int n[] = {{{', '.join(map(str, n.tolist()))}}};",
            f"  for (int i = 0; i < {a.size}; i++) for (int j = 0; j < {n.size}; j++)",
            "    printf(\"%d %d\\n\", tvmd_shl(a[i], n[j]), tvmd_shr(a[i], n[j]));",
            "}"]
    (tmp_path / "t.cpp").write_text("\n".join(host))
    subprocess.run([gxx, "-O1", "-o", str(tmp_path / "t"), str(tmp_path / "t.cpp")], check=True)
    out = subprocess.run([str(tmp_path / "t")], check=True, capture_output=True, text=True).stdout.split()
    got = np.array(out, dtype=np.int64).reshape(a.size, n.size, 2)
    with np.errstate(all="ignore"):
        aa, nn = a[:, None], n[None, :]
        want_l = np.left_shift(aa, nn.astype(np.uint32).astype(np.int64).clip(0, 64)).astype(np.int32)
        want_l = np.where(nn.astype(np.uint32) >= 32, 0, want_l)
        want_r = np.where(nn.astype(np.uint32) >= 32, np.where(aa < 0, -1, 0), aa >> np.clip(nn, 0, 31))
    np.testing.assert_array_equal(got[..., 0], want_l)
    np.testing.assert_array_equal(got[..., 1], want_r)
