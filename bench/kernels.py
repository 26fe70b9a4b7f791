"""CPU kernel speed: tvmd against numpy (OpenBLAS) in the same run.

    .venv/bin/python bench/kernels.py [--repeat N] [--threads N] [--only NAME,...]

Rows (issue 4's table):

* ``add+relu``: fused add + relu over 4M float32, hand-written tir (a
  parallel outer loop, a vectorized inner loop) vs numpy ``add(out=)`` +
  ``maximum(out=)``, in GB/s counting 12 bytes per element; next to it the
  memory roofline of this machine, numpy ``copyto`` of 4M floats (8 bytes
  per element), so the GB/s can be read against what the memory allows;
* ``matmul``: fp32 1024³ from ``bench/schedules/matmul.te`` (a TE compute
  with packed A and B stages and a hand schedule: 8x32 register tile,
  lowered by --lower-te-to-tir, no hand tir) vs numpy ``A @ B``, GFLOP/s;
* ``conv2d``: 1x64x56x56, 64 filters 3x3, pad 1, the DEFAULT schedule
  (relay --fuse-ops --lower-relay-to-te --lower-te-to-tir), NCHW/OIHW and
  NHWC/HWIO, vs numpy ``np.pad`` + im2col copy + BLAS matmul, GFLOP/s;
* ``dense`` 1x2048 -> 1000, ``softmax`` and ``layer_norm`` over 128x768
  rows, default schedules, vs the numpy formula, in GB/s of input read;
* ``gemm``: the BERT-base layer's products (128 rows; 768->768, 768->3072,
  3072->768), default schedules, as nn.matmul (K x N weight: the GEMM
  micro-kernel reads it directly) and nn.dense (N x K: packed on every
  call), vs numpy ``x @ w.T``, GFLOP/s.

Every tvmd result is checked against numpy (rtol 1e-4) before it is timed.
Timings are medians of --repeat runs, kernels called through ctypes with
aligned buffers (no executor overhead).  apache-tvm is timed as a third
column when ``import tvm`` works (it is not installed here: the column then
says so).  ``--threads N`` sets TVMD_NUM_THREADS and OPENBLAS_NUM_THREADS
(before numpy loads), to compare one core with one core on a busy machine.
A measurement, never pass/fail.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
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


CONV = """relay.func @main(%x: tensor<1x64x56x56xf32>, %w: tensor<64x64x3x3xf32>) -> tensor<1x64x56x56xf32> {
  %0 = nn.conv2d(%x, %w) {padding = [1, 1, 1, 1]} : tensor<1x64x56x56xf32>
  return %0
}"""
CONV_NHWC = """relay.func @main(%x: tensor<1x56x56x64xf32>, %w: tensor<3x3x64x64xf32>) -> tensor<1x56x56x64xf32> {
  %0 = nn.conv2d(%x, %w) {padding = [1, 1, 1, 1], data_layout = "NHWC", kernel_layout = "HWIO"} : tensor<1x56x56x64xf32>
  return %0
}"""
DENSE = """relay.func @main(%x: tensor<1x2048xf32>, %w: tensor<1000x2048xf32>) -> tensor<1x1000xf32> {
  %0 = nn.dense(%x, %w) : tensor<1x1000xf32>
  return %0
}"""
SOFTMAX = """relay.func @main(%x: tensor<128x768xf32>) -> tensor<128x768xf32> {
  %0 = nn.softmax(%x) {axis = -1} : tensor<128x768xf32>
  return %0
}"""
LAYER_NORM = """relay.func @main(%x: tensor<128x768xf32>, %g: tensor<768xf32>, %b: tensor<768xf32>) -> tensor<128x768xf32> {
  %0 = nn.layer_norm(%x, %g, %b) {axis = -1, epsilon = 1e-5} : tensor<128x768xf32>
  return %0
}"""


def median_time(fn, repeat):
    fn()   # warm up (page faults, first-call paths)
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    ts.sort()
    return ts[len(ts) // 2]


def lower(module, pipeline):
    from tvmd.ir.pass_manager import PassManager, instantiate, parse_pipeline
    from tvmd.ir.registry import get_pass_class
    PassManager(instantiate(parse_pipeline(pipeline), get_pass_class)).run(module)
    return module


def one_kernel(module):
    """(library, kernel, tir.func) of a module lowered to a single kernel."""
    from tvmd.backend.llvm import jit
    funcs = [op for op in module.body.ops if op.name == "tir.func"]
    if len(funcs) != 1:
        raise SystemExit(f"expected one kernel, got {len(funcs)}")
    lib = jit.compile(module)
    return lib, lib[funcs[0].sym_name], funcs[0]


def time_kernel(kernel, func, inputs, want, repeat):
    """Run once and check against `want`, then time the raw ctypes call."""
    import numpy as np

    from tvmd.runtime.executor import allocate_outputs
    from tvmd.runtime.ndarray import as_aligned
    ins = [as_aligned(np.ascontiguousarray(a)) for a in inputs]
    outs = allocate_outputs(func)
    kernel(*ins, *outs)
    np.testing.assert_allclose(outs[0], want, rtol=1e-4, atol=1e-4)
    ptrs = [a.ctypes.data for a in ins + outs]
    return median_time(lambda: kernel.cfunc(*ptrs), repeat)


def relay_kernel(text):
    from tvmd.parser import parse_module
    t0 = time.perf_counter()
    m = lower(parse_module(text), "fuse-ops,lower-relay-to-te,lower-te-to-tir,tir-simplify")
    lib, k, f = one_kernel(m)
    return k, f, time.perf_counter() - t0


def try_tvm():
    try:
        import tvm  # noqa: F401
    except Exception:   # noqa: BLE001 - any failure means: no apache-tvm column
        return None
    return tvm


def bench_add_relu(rng, repeat):
    import numpy as np

    from tvmd.parser import parse_module
    from tvmd.runtime.ndarray import empty_aligned
    t0 = time.perf_counter()
    lib, k, f = one_kernel(parse_module(add_relu_tir()))
    cs = time.perf_counter() - t0
    a, b, d = (empty_aligned((N_ADD,), np.float32) for _ in range(3))
    a[:] = rng.standard_normal(N_ADD)
    b[:] = rng.standard_normal(N_ADD)
    t_tvmd = time_kernel(k, f, [a, b], np.maximum(a + b, 0), repeat)
    t_np = median_time(lambda: (np.add(a, b, out=d), np.maximum(d, 0, out=d)), repeat)
    t_copy = median_time(lambda: np.copyto(d, a), repeat)
    gb = 12 * N_ADD / 1e9
    return [("add+relu 4M f32", "GB/s", gb / t_tvmd, gb / t_np, cs),
            ("  memcpy roofline", "GB/s", None, 8 * N_ADD / 1e9 / t_copy, None)]


def bench_matmul(rng, repeat):
    import numpy as np

    from tvmd.parser import parse_module
    t0 = time.perf_counter()
    with open(os.path.join(HERE, "schedules", "matmul.te")) as fh:
        m = lower(parse_module(fh.read(), "matmul.te"), "lower-te-to-tir,tir-simplify")
    lib, k, f = one_kernel(m)
    cs = time.perf_counter() - t0
    A = rng.standard_normal((N_MM, N_MM)).astype(np.float32)
    B = rng.standard_normal((N_MM, N_MM)).astype(np.float32)
    r = max(repeat // 3, 3)
    t_tvmd = time_kernel(k, f, [A, B], A @ B, r)
    t_np = median_time(lambda: A @ B, r)
    gf = 2 * N_MM ** 3 / 1e9
    return [("matmul 1024^3 (.te)", "GFLOP/s", gf / t_tvmd, gf / t_np, cs)]


def im2col_blas(x, w):
    """NCHW conv2d 3x3, pad 1, stride 1 as numpy would: pad, im2col copy,
    one BLAS matmul."""
    import numpy as np
    from numpy.lib.stride_tricks import sliding_window_view
    c, h, wd = x.shape[1:]
    w2 = w.reshape(w.shape[0], -1)
    xp = np.pad(x[0], ((0, 0), (1, 1), (1, 1)))
    cols = sliding_window_view(xp, (3, 3), axis=(1, 2))                 # C x H x W x 3 x 3
    cols = np.ascontiguousarray(cols.transpose(0, 3, 4, 1, 2)).reshape(c * 9, h * wd)
    return (w2 @ cols).reshape(1, w.shape[0], h, wd)


def bench_conv2d(rng, repeat):
    import numpy as np
    rows = []
    x = rng.standard_normal((1, 64, 56, 56)).astype(np.float32)
    w = rng.standard_normal((64, 64, 3, 3)).astype(np.float32)
    want = im2col_blas(x, w)
    t_np = median_time(lambda: im2col_blas(x, w), repeat)
    gf = 2 * 64 * 64 * 9 * 56 * 56 / 1e9
    k, f, cs = relay_kernel(CONV)
    t_tvmd = time_kernel(k, f, [x, w], want, repeat)
    rows.append(("conv2d NCHW (default)", "GFLOP/s", gf / t_tvmd, gf / t_np, cs))
    k, f, cs = relay_kernel(CONV_NHWC)
    t_tvmd = time_kernel(k, f, [x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0)], want.transpose(0, 2, 3, 1),
                         repeat)
    rows.append(("conv2d NHWC (default)", "GFLOP/s", gf / t_tvmd, gf / t_np, cs))
    return rows


def bench_dense(rng, repeat):
    import numpy as np
    k, f, cs = relay_kernel(DENSE)
    x = rng.standard_normal((1, 2048)).astype(np.float32)
    w = rng.standard_normal((1000, 2048)).astype(np.float32)
    t_tvmd = time_kernel(k, f, [x, w], x @ w.T, repeat)
    t_np = median_time(lambda: x @ w.T, repeat)
    gb = 4 * (1000 * 2048 + 2048) / 1e9
    return [("dense 1x2048->1000", "GB/s", gb / t_tvmd, gb / t_np, cs)]


GEMM_SHAPES = ((128, 768, 768), (128, 3072, 768), (128, 768, 3072))   # BERT-base, seq 128: M, N, K


def bench_gemm(rng, repeat):
    """The BERT layer's products through the DEFAULT schedule: nn.matmul
    with a K x N weight (what --alter-op-layout makes of a dense with a
    constant weight) and nn.dense with an N x K weight (packed per call)."""
    import numpy as np
    rows = []
    for m, n, k in GEMM_SHAPES:
        # unit-variance outputs, so that the check's absolute tolerance fits
        x = (rng.standard_normal((m, k)) / k ** 0.5).astype(np.float32)
        w = rng.standard_normal((n, k)).astype(np.float32)
        want = x @ w.T
        t_np = median_time(lambda: x @ w.T, repeat)
        gf = 2 * m * n * k / 1e9
        for form, op, wshape, wv in (("matmul", "nn.matmul", (k, n), np.ascontiguousarray(w.T)),
                                     ("dense", "nn.dense", (n, k), w)):
            text = f"""relay.func @main(%x: tensor<{m}x{k}xf32>, %w: tensor<{wshape[0]}x{wshape[1]}xf32>) -> tensor<{m}x{n}xf32> {{
  %0 = {op}(%x, %w) : tensor<{m}x{n}xf32>
  return %0
}}"""
            kern, f, cs = relay_kernel(text)
            t = time_kernel(kern, f, [x, wv], want, repeat)
            rows.append((f"{form} {m}x{k} . {k}->{n}", "GFLOP/s", gf / t, gf / t_np, cs))
    return rows


def bench_softmax(rng, repeat):
    import numpy as np
    k, f, cs = relay_kernel(SOFTMAX)
    x = rng.standard_normal((128, 768)).astype(np.float32)

    def ref():
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    t_tvmd = time_kernel(k, f, [x], ref(), repeat)
    t_np = median_time(ref, repeat)
    gb = 4 * x.size / 1e9
    return [("softmax 128x768", "GB/s", gb / t_tvmd, gb / t_np, cs)]


def bench_layer_norm(rng, repeat):
    import numpy as np
    k, f, cs = relay_kernel(LAYER_NORM)
    x = rng.standard_normal((128, 768)).astype(np.float32)
    g = rng.standard_normal(768).astype(np.float32)
    b = rng.standard_normal(768).astype(np.float32)

    def ref():
        mean = x.mean(axis=1, keepdims=True)
        var = x.var(axis=1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-5) * g + b
    t_tvmd = time_kernel(k, f, [x, g, b], ref(), repeat)
    t_np = median_time(ref, repeat)
    gb = 4 * x.size / 1e9
    return [("layer_norm 128x768", "GB/s", gb / t_tvmd, gb / t_np, cs)]


BENCHES = {"add_relu": bench_add_relu, "matmul": bench_matmul, "conv2d": bench_conv2d,
           "dense": bench_dense, "gemm": bench_gemm, "softmax": bench_softmax, "layer_norm": bench_layer_norm}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=21)
    ap.add_argument("--threads", type=int, default=None,
                    help="TVMD_NUM_THREADS and OPENBLAS_NUM_THREADS (default: all cores)")
    ap.add_argument("--only", default="", help="comma-separated: " + ",".join(BENCHES))
    args = ap.parse_args(argv)
    if args.threads:
        # before numpy is imported: OpenBLAS reads its variable at load time
        os.environ["TVMD_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    sys.path.insert(0, os.path.dirname(HERE))   # run from a checkout without installing

    import llvmlite.binding as llvm
    import numpy as np

    names = [n for n in args.only.split(",") if n] or list(BENCHES)
    for n in names:
        if n not in BENCHES:
            ap.error(f"unknown kernel '{n}' (have: {', '.join(BENCHES)})")
    rng = np.random.default_rng(0)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"host: {llvm.get_host_cpu_name()}, {os.cpu_count()} CPUs, load {load:.2f}, "
          f"TVMD_NUM_THREADS={os.environ.get('TVMD_NUM_THREADS', '(all)')}, numpy {np.__version__}")
    if try_tvm() is None:
        print("apache-tvm: not importable here, its column is skipped")
    rows = []
    for n in names:
        rows += BENCHES[n](rng, args.repeat)

    print(f"{'kernel':<22} {'unit':<8} {'tvmd':>8} {'numpy':>8} {'tvmd/numpy':>11} {'compile s':>10}")
    for name, unit, x, y, cs in rows:
        if x is None:
            print(f"{name:<22} {unit:<8} {'':>8} {y:8.1f}")
            continue
        print(f"{name:<22} {unit:<8} {x:8.1f} {y:8.1f} {x / y:10.2f}x {cs:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
