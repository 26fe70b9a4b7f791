"""Hand-written tir kernels, JIT-compiled, against numpy in the same run.

    .venv/bin/python bench/kernels.py [--repeat N] [--threads N]

* fused add+relu over 4M float32 (a parallel outer loop, a vectorized inner
  loop of 64) vs numpy ``add(out=)`` + ``maximum(out=)``, in GB/s counting
  12 bytes per element (two reads, one write);
* fp32 matmul 1024³: B packed into 16-column panels (parallel), then a 4x16
  register tile per (row block, panel): a parallel loop over row blocks, the
  k loop, the 4 rows unrolled, the 16 columns vectorized, explicit ``fma``
  (exact: no fast-math needed), vs numpy ``A @ B`` (its BLAS), in GFLOP/s.

Prints medians and ratios (tvmd / numpy).  A measurement, never pass/fail.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

N_ADD = 4 * 1024 * 1024
N_MM = 1024


def add_relu_tir(n=N_ADD, lanes=64):
    assert n % lanes == 0
    return f"""
tir.func @add_relu(%A: memref<{n}xf32>, %B: memref<{n}xf32>, %C: memref<{n}xf32>) {{
  tir.for %o = 0 to {n // lanes} parallel {{
    tir.for %v = 0 to {lanes} vectorized {{
      %cl = arith.constant {lanes} : index
      %base = arith.muli %o, %cl : index
      %i = arith.addi %base, %v : index
      %a = tir.load %A[%i] : f32
      %b = tir.load %B[%i] : f32
      %s = arith.addf %a, %b : f32
      %z = arith.constant 0.0 : f32
      %r = arith.maximumf %s, %z : f32
      tir.store %r, %C[%i] : f32
    }}
  }}
}}
"""


def matmul_tir(n=N_MM, mr=4, nr=16):
    assert n % mr == 0 and n % nr == 0
    nj = n // nr
    return f"""
tir.func @matmul(%A: memref<{n}x{n}xf32>, %B: memref<{n}x{n}xf32>, %C: memref<{n}x{n}xf32>) {{
  %Bp = tir.alloc : memref<{nj}x{n}x{nr}xf32>
  tir.for %jo = 0 to {nj} parallel {{
    tir.for %k = 0 to {n} {{
      tir.for %ji = 0 to {nr} vectorized {{
        %cnr = arith.constant {nr} : index
        %j0 = arith.muli %jo, %cnr : index
        %j = arith.addi %j0, %ji : index
        %v = tir.load %B[%k, %j] : f32
        tir.store %v, %Bp[%jo, %k, %ji] : f32
      }}
    }}
  }}
  tir.for %io = 0 to {n // mr} parallel {{
    tir.for %jo = 0 to {nj} {{
      %cmr = arith.constant {mr} : index
      %cnr = arith.constant {nr} : index
      %i0 = arith.muli %io, %cmr : index
      %j0 = arith.muli %jo, %cnr : index
      %Cl = tir.alloc : memref<{mr}x{nr}xf32, "local">
      tir.for %ii = 0 to {mr} unrolled {{
        tir.for %ji = 0 to {nr} vectorized {{
          %z = arith.constant 0.0 : f32
          tir.store %z, %Cl[%ii, %ji] : f32
        }}
      }}
      tir.for %k = 0 to {n} {{
        tir.for %ii = 0 to {mr} unrolled {{
          %i = arith.addi %i0, %ii : index
          %a = tir.load %A[%i, %k] : f32
          tir.for %ji = 0 to {nr} vectorized {{
            %b = tir.load %Bp[%jo, %k, %ji] : f32
            %acc = tir.load %Cl[%ii, %ji] : f32
            %acc2 = tir.intrin "fma"(%a, %b, %acc) : f32
            tir.store %acc2, %Cl[%ii, %ji] : f32
          }}
        }}
      }}
      tir.for %ii = 0 to {mr} unrolled {{
        tir.for %ji = 0 to {nr} vectorized {{
          %i = arith.addi %i0, %ii : index
          %j = arith.addi %j0, %ji : index
          %v = tir.load %Cl[%ii, %ji] : f32
          tir.store %v, %C[%i, %j] : f32
        }}
      }}
    }}
  }}
}}
"""


def median_time(fn, repeat):
    fn()   # warm up (page faults, thread start-up paths)
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    ts.sort()
    return ts[len(ts) // 2]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--threads", type=int, default=None, help="TVMD_NUM_THREADS for the compiled kernels")
    args = ap.parse_args(argv)
    if args.threads:
        os.environ["TVMD_NUM_THREADS"] = str(args.threads)

    import llvmlite.binding as llvm
    import numpy as np

    from tvmd.parser import parse_module
    from tvmd.runtime.ndarray import empty_aligned
    from tvmd.target.llvm import jit

    rng = np.random.default_rng(0)
    print(f"host: {llvm.get_host_cpu_name()}, {os.cpu_count()} CPUs, "
          f"TVMD_NUM_THREADS={os.environ.get('TVMD_NUM_THREADS', '(all)')}, numpy {np.__version__}")
    rows = []

    # -- add + relu -------------------------------------------------------------------
    t0 = time.perf_counter()
    lib = jit.compile(parse_module(add_relu_tir()))
    compile_s = time.perf_counter() - t0
    a, b, c, d = (empty_aligned((N_ADD,), np.float32) for _ in range(4))
    a[:] = rng.standard_normal(N_ADD)
    b[:] = rng.standard_normal(N_ADD)
    k = lib.add_relu
    k(a, b, c)
    assert np.array_equal(c, np.maximum(a + b, 0)), "add_relu is wrong"
    pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data
    t_tvmd = median_time(lambda: k.cfunc(pa, pb, pc), args.repeat)
    t_np = median_time(lambda: (np.add(a, b, out=d), np.maximum(d, 0, out=d)), args.repeat)
    gb = 12 * N_ADD / 1e9
    rows.append(("add+relu 4M f32", "GB/s", gb / t_tvmd, gb / t_np, compile_s))

    # -- matmul -------------------------------------------------------------------------
    t0 = time.perf_counter()
    lib = jit.compile(parse_module(matmul_tir()))
    compile_s = time.perf_counter() - t0
    A, B, C = (empty_aligned((N_MM, N_MM), np.float32) for _ in range(3))
    A[:] = rng.standard_normal((N_MM, N_MM))
    B[:] = rng.standard_normal((N_MM, N_MM))
    k = lib.matmul
    k(A, B, C)
    ref = A @ B
    err = float(np.abs(C - ref).max() / np.abs(ref).max())
    assert err < 1e-5, f"matmul is wrong (relative error {err:.2g})"
    pa, pb, pc = A.ctypes.data, B.ctypes.data, C.ctypes.data
    t_tvmd = median_time(lambda: k.cfunc(pa, pb, pc), max(args.repeat // 3, 3))
    t_np = median_time(lambda: A @ B, max(args.repeat // 3, 3))
    gf = 2 * N_MM ** 3 / 1e9
    rows.append(("matmul 1024^3 f32", "GFLOP/s", gf / t_tvmd, gf / t_np, compile_s))

    print(f"{'kernel':<20} {'unit':<8} {'tvmd':>9} {'numpy':>9} {'tvmd/numpy':>11} {'compile s':>10}")
    for name, unit, x, y, cs in rows:
        print(f"{name:<20} {unit:<8} {x:9.1f} {y:9.1f} {x / y:10.2f}x {cs:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
