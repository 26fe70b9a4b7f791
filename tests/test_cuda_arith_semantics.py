"""The CUDA codegen's arith ops mean what tvmd.dialects.arith.semantics
says, op by op, without a GPU: every case of test_arith_semantics is a
thread-bound tir.func, the generated CUDA C is compiled as host C++ (g++,
with the CUDA qualifiers defined away and threadIdx.x a loop counter) and
run through ctypes on the same operands, compared bit for bit with the
semantics table.  What this checks is the C the codegen writes (types,
casts, operators, the prelude's helpers), which is what differs between
targets; the device's libm (powf) is not the host's, so powf is left to
the GPU benchmark script (bench/gpu.sh)."""

import ctypes
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(__file__))
from test_arith_semantics import CASE, CASES, FEW, N, as_arrays, dtype, pairs, reference, same, sanitize  # noqa: E402
from tvmd.backend.cuda.codegen import generate  # noqa: E402
from tvmd.parser import parse_module  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ to run the generated C on the host")

# host stand-ins for what CUDA C uses
HOST = """\
#include <cmath>
#include <cstdint>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
struct tvmd_dim3 { unsigned x, y, z; };
static tvmd_dim3 threadIdx, blockIdx, blockDim, gridDim;
using std::signbit;
"""
HOST_CASES = [c for c in CASES if not c[0].startswith("powf")]


def thread_text(name, body, t, rt):
    return f"""tir.func @{name}(%A: memref<{N}x{t}>, %B: memref<{N}x{t}>, %O: memref<{N}x{rt}>)
    attributes {{num_outputs = 1}} {{
  tir.for %i = 0 to {N} thread("threadIdx.x") {{
    %a = tir.load %A[%i] : {t}
    %b = tir.load %B[%i] : {t}
    %r = {body}
    tir.store %r, %O[%i] : {rt}
  }}
}}
"""


RUNNER = """
template <typename A, typename B, typename O>
static void tvmd_run(void (*kernel)(A, B, O), void* a, void* b, void* o) {
  for (threadIdx.x = 0; threadIdx.x < %d; threadIdx.x++) kernel((A)a, (B)b, (O)o);
}
""" % N


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """All the cases' generated CUDA C in one host shared library:
    ``run_NAME(a, b, o)`` runs kernel NAME over every thread."""
    tmp = tmp_path_factory.mktemp("cuda_arith")
    src, kernels = generate(parse_module("".join(thread_text(*c) for c in HOST_CASES), "cuda_arith.tir"))
    assert sorted(k.name for k in kernels) == sorted(c[0] for c in HOST_CASES)
    runners = "".join(f'extern "C" void run_{k.name}(void* a, void* b, void* o) {{ tvmd_run({k.name}, a, b, o); }}\n'
                      for k in kernels)
    cpp = tmp / "cuda_arith.cpp"
    cpp.write_text(HOST + src + RUNNER + runners)
    so = tmp / "cuda_arith.so"
    r = subprocess.run(["g++", "-O1", "-shared", "-fPIC", "-o", str(so), str(cpp)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    return ctypes.CDLL(str(so))


def check_host(library, name, ps):
    t, rt = CASE[name][2], CASE[name][3]
    a, b = as_arrays(ps, t)
    a, b, ok = sanitize(name, a, b)
    want, _ = reference(name, a, b)
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    o = np.zeros(N, dtype(rt))
    getattr(library, f"run_{name}")(a.ctypes.data_as(ctypes.c_void_p), b.ctypes.data_as(ctypes.c_void_p),
                                    o.ctypes.data_as(ctypes.c_void_p))
    eq = same(o, want) | ~ok
    if not eq.all():
        k = int(np.flatnonzero(~eq)[0])
        raise AssertionError(f"{name} in CUDA C: on ({a[k]!r}, {b[k]!r}) gives {o[k]!r}, "
                             f"the semantics say {want[k]!r}")


@pytest.mark.parametrize("name", [c[0] for c in HOST_CASES])
@FEW
@given(data=st.data())
def test_cuda_c_ops_agree(library, name, data):
    check_host(library, name, data.draw(pairs(CASE[name][2])))


@pytest.mark.parametrize("name,values", [("fptoui_f32_i32", (3.4970934e9, 2147483648.0, 4294967040.0)),
                                         ("fptoui_f64_i64", (1.5e19, 9223372036854775808.0))])
def test_fptoui_above_the_signed_range(library, name, values):
    """fptoui into a signless integer: a value past the signed maximum is
    the unsigned conversion's bits (hypothesis found 3.497e9 -> i32 giving
    INT_MIN: the C cast went straight to the signed type)."""
    check_host(library, name, ([(v, 0.0) for v in values], 2307))


def test_nvcc_accepts_the_same_kernels():
    """The C that ran on the host is CUDA that nvcc compiles, half precision
    max/min included (whose prelude helpers compare with T(0))."""
    from tvmd.backend.cuda.compile import compile_cuda, have_compiler
    if not have_compiler():
        pytest.skip("no CUDA compiler (nvcc or NVRTC) on this machine")
    cases = HOST_CASES + [(f"{op}_f16", f"arith.{op} %a, %b : f16", "f16", "f16") for op in ("maximumf", "minimumf")]
    src, kernels = generate(parse_module("".join(thread_text(*c) for c in cases), "cuda_arith.tir"))
    cubin = compile_cuda(src, "sm_90", "cubin")
    for k in kernels:
        assert k.symbol.encode() in cubin, k.name
