"""CUDA kernels on a GPU: numerics against numpy, then timings, in one run.

    bench/gpu.sh [--repeat N] [--small]         (a GPU and pycuda needed)
    .venv/bin/python bench/gpu_check.py --emulate   (no GPU: the tir interpreter
                                                 stands in for the device, tiny shapes)

Workloads, each lowered from relay (te for softmax) with the default CUDA
schedules (``--lower-relay-to-te{target=cuda}``), then ``--lower-te-to-tir
--tir-simplify``, split, synchronised, compiled (NVRTC or nvcc) and run
through :mod:`tvmd.backend.cuda.runner`:

* matmul      nn.dense, 1024 x 1024 x 1024
* add_relu    add + relu, 16M elements
* conv2d      nn.conv2d + bias + relu, 1x64x56x56, 64 3x3 filters
* softmax     rows of 1024 (three kernels: max, sum of exp, divide)
* model       a fused two-layer MLP (dense+bias+relu, dense+bias+tanh),
              its main's calls run in order

The reference is the relay ops' numpy ``compute()`` (numpy for softmax).
Prints a table: max |error|, pass/fail, GPU time per call (device-resident
buffers, CUDA events, median of --repeat), numpy's CPU time and the ratio.
Exit status: 0 all match, 1 a mismatch, 2 no GPU or no pycuda (with a
message saying which).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

SOFTMAX_TE = """
te.func @softmax(%A: tensor<{r}x{c}xf32>) -> tensor<{r}x{c}xf32> {{
  %M = te.compute [%i] reduce [%k: {c}] "max" : tensor<{r}xf32> {{
    %a = te.read %A[%i, %k] : f32
    yield %a
  }}
  %E = te.compute [%i, %j] : tensor<{r}x{c}xf32> {{
    %a = te.read %A[%i, %j] : f32
    %m = te.read %M[%i] : f32
    %d = arith.subf %a, %m : f32
    %x = te.intrin "exp"(%d) : f32
    yield %x
  }}
  %S = te.compute [%i] reduce [%k: {c}] "sum" : tensor<{r}xf32> {{
    %e = te.read %E[%i, %k] : f32
    yield %e
  }}
  %R = te.compute [%i, %j] : tensor<{r}x{c}xf32> {{
    %e = te.read %E[%i, %j] : f32
    %s = te.read %S[%i] : f32
    %q = arith.divf %e, %s : f32
    yield %q
  }}
  return %R
}}
"""


def workloads(small):
    """name -> (kind, text, description); kind "relay" or "te"."""
    if small:
        M, K, N, E, C, H, R, L = 16, 32, 16, 300, 4, 6, 3, 20
    else:
        M, K, N, E, C, H, R, L = 1024, 1024, 1024, 1 << 24, 64, 56, 1024, 1024
    return {
        "matmul": ("relay", f"""
relay.func @main(%a: tensor<{M}x{K}xf32>, %b: tensor<{N}x{K}xf32>) -> tensor<{M}x{N}xf32> {{
  %0 = nn.dense(%a, %b) : tensor<{M}x{N}xf32>
  return %0
}}""", f"{M}x{K} . {K}x{N}", 2.0 * M * N * K),
        "add_relu": ("relay", f"""
relay.func @main(%a: tensor<{E}xf32>, %b: tensor<{E}xf32>) -> tensor<{E}xf32> {{
  %0 = add(%a, %b) : tensor<{E}xf32>
  %1 = nn.relu(%0) : tensor<{E}xf32>
  return %1
}}""", f"{E}", None),
        "conv2d": ("relay", f"""
relay.func @main(%x: tensor<1x{C}x{H}x{H}xf32>, %w: tensor<{C}x{C}x3x3xf32>, %b: tensor<{C}xf32>) -> tensor<1x{C}x{H}x{H}xf32> {{
  %0 = nn.conv2d(%x, %w) {{padding = [1, 1, 1, 1]}} : tensor<1x{C}x{H}x{H}xf32>
  %1 = nn.bias_add(%0, %b) : tensor<1x{C}x{H}x{H}xf32>
  %2 = nn.relu(%1) : tensor<1x{C}x{H}x{H}xf32>
  return %2
}}""", f"1x{C}x{H}x{H} * {C}x{C}x3x3", 2.0 * C * H * H * C * 9),
        "softmax": ("te", SOFTMAX_TE.format(r=R, c=L), f"{R}x{L}", None),
        "model": ("relay", f"""
relay.func @main(%x: tensor<{M}x{K}xf32>, %w1: tensor<{N}x{K}xf32>, %b1: tensor<{N}xf32>, %w2: tensor<{K}x{N}xf32>, %b2: tensor<{K}xf32>) -> tensor<{M}x{K}xf32> {{
  %0 = nn.dense(%x, %w1) : tensor<{M}x{N}xf32>
  %1 = nn.bias_add(%0, %b1) : tensor<{M}x{N}xf32>
  %2 = nn.relu(%1) : tensor<{M}x{N}xf32>
  %3 = nn.dense(%2, %w2) : tensor<{M}x{K}xf32>
  %4 = nn.bias_add(%3, %b2) : tensor<{M}x{K}xf32>
  %5 = tanh(%4) : tensor<{M}x{K}xf32>
  return %5
}}""", f"MLP {M}x{K}-{N}-{K}", 4.0 * M * N * K),
    }


# -- lowering -------------------------------------------------------------------

def lower(kind, text):
    """The tir module (with a relay @main calling it, for relay input)."""
    from tvmd.conversion.relay_to_te.pass_ import LowerRelayToTE, default_schedule_for
    from tvmd.conversion.te_to_tir.lower import LowerTEToTIR
    from tvmd.dialects.te.builder import Emitter
    from tvmd.dialects.tir.passes.simplify import Simplify
    from tvmd.ir.pass_manager import PassManager
    from tvmd.ir.registry import get_pass_class
    from tvmd.parser import parse_module
    m = parse_module(text)
    if kind == "relay":
        PassManager([(None, get_pass_class("fuse-ops")()), (None, LowerRelayToTE(target="cuda"))]).run(m)
    else:
        for tf in [op for op in m.body.ops if op.name == "te.func"]:
            ret = tf.return_op
            ret.detach()
            default_schedule_for("cuda")(Emitter(tf.body, tf.loc), list(ret.operands))
            tf.body.append(ret)
    PassManager([(None, LowerTEToTIR()), (None, Simplify())]).run(m)
    return m


def reference(kind, text, args):
    """numpy outputs: the relay ops' compute(), or numpy softmax."""
    if kind == "te":
        a = args[0]
        e = np.exp(a - a.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)
    from tvmd.parser import parse_module
    f = parse_module(text).lookup("main")
    env = dict(zip(f.body.args, args))
    for op in f.body.ops:
        if op.name == "relay.return":
            return env[op.operands[0]]
        env[op.results[0]] = op.compute(*[env[v] for v in op.operands])


def calls(m, kind, args):
    """[(function name, [arrays])] the program runs, in order, with fresh
    output arrays; the last output is the program's result."""
    from tvmd.ir import types as T
    if kind == "te":
        f = next(op for op in m.body.ops if op.name == "tir.func" and not op.sym_name.rsplit("_", 1)[-1]
                 .startswith("kernel"))
        out = np.empty(f.outputs[0].type.shape, "float32")
        return [(f.sym_name, list(args) + [out])], out
    main = m.lookup("main")
    env = dict(zip(main.body.args, args))
    seq = []
    for op in main.body.ops:
        if op.name == "relay.return":
            return seq, env[op.operands[0]]
        if op.name != "relay.call":
            raise SystemExit(f"gpu_check: @main holds {op.name}; expected calls only")
        t = op.results[0].type
        out = np.empty(t.shape, T.to_numpy_dtype(t.element_type))
        seq.append((op.attributes["callee"].name, [env[v] for v in op.operands] + [out]))
        env[op.results[0]] = out


def inputs(kind, text, rng):
    from tvmd.parser import parse_module
    m = parse_module(text)
    f = m.body.first
    if kind == "te":
        return [rng.standard_normal(f.body.args[0].type.shape).astype("float32")]
    return [(rng.standard_normal(a.type.shape) * 0.5).astype("float32") for a in f.body.args]


# -- running --------------------------------------------------------------------

def check_gpu():
    """pycuda.driver, or exit 2 saying what is missing."""
    try:
        import pycuda.driver as drv
    except ImportError as e:
        print(f"gpu_check: pycuda is not installed ({e}); it needs pycuda and an NVIDIA GPU "
              f"(pip install 'tvmd[cuda]'); without a GPU, try --emulate", file=sys.stderr)
        raise SystemExit(2)
    try:
        drv.init()
        n = drv.Device.count()
    except Exception as e:
        print(f"gpu_check: no usable CUDA driver or device: {e}", file=sys.stderr)
        raise SystemExit(2)
    if n == 0:
        print("gpu_check: no CUDA device found", file=sys.stderr)
        raise SystemExit(2)
    return drv


def time_gpu(drv, prepared, repeat):
    for p in prepared:
        p.run()
    drv.Context.synchronize()
    times = []
    for _ in range(repeat):
        start, end = drv.Event(), drv.Event()
        start.record()
        for p in prepared:
            p.run()
        end.record()
        end.synchronize()
        times.append(start.time_till(end))
    return float(np.median(times))


def time_cpu(fn, repeat):
    times = []
    for _ in range(max(1, min(repeat, 5))):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return float(np.median(times))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--small", action="store_true", help="tiny shapes (a quick check)")
    ap.add_argument("--emulate", action="store_true",
                    help="no GPU: run the launcher on the tir interpreter (implies --small, no timings)")
    ap.add_argument("--arch", default=None, help="sm_XX (default: the device's)")
    ap.add_argument("--only", default=None, help="comma-separated workload names")
    o = ap.parse_args(argv)
    small = o.small or o.emulate
    drv = None
    if not o.emulate:
        drv = check_gpu()
        import pycuda.autoinit  # noqa: F401
        if o.arch is None:
            major, minor = drv.Context.get_device().compute_capability()
            o.arch = f"sm_{major}{minor}"
    rng = np.random.default_rng(0)
    rows, failed = [], 0
    wl = workloads(small)
    names = o.only.split(",") if o.only else list(wl)
    for name in names:
        kind, text, desc, flops = wl[name]
        args = inputs(kind, text, rng)
        want = reference(kind, text, args)
        m = lower(kind, text)
        if o.emulate:
            from tvmd.backend.cuda.emulator import emulate
            lib = emulate(m)
        else:
            from tvmd.backend.cuda.runner import build
            lib = build(m, f"cuda -arch={o.arch}")
        seq, got = calls(m, kind, args)
        for fn, a in seq:
            lib[fn](*a)
        err = float(np.max(np.abs(got.astype("float64") - want))) if want.size else 0.0
        tol = 1e-3 * max(1.0, float(np.max(np.abs(want)))) if flops else 1e-5 * max(1.0, float(np.max(np.abs(want))))
        ok = bool(np.all(np.isfinite(got))) and err <= tol
        failed += not ok
        gpu_ms = cpu_ms = None
        if not o.emulate:
            prepared = [lib[fn].prepare(*a) for fn, a in seq]
            try:
                gpu_ms = time_gpu(drv, prepared, o.repeat)
            finally:
                for p in prepared:
                    p.free()
            cpu_ms = time_cpu(lambda: reference(kind, text, args), o.repeat)
        rows.append((name, desc, err, ok, gpu_ms, cpu_ms, flops))
    print(f"{'kernel':10} {'shape':28} {'max|err|':>10} {'ok':>4} {'gpu ms':>9} {'GFLOP/s':>9} "
          f"{'numpy ms':>9} {'numpy/gpu':>9}")
    for name, desc, err, ok, g, c, flops in rows:
        gs = f"{g:9.3f}" if g is not None else f"{'-':>9}"
        fs = f"{flops / g / 1e6:9.1f}" if g and flops else f"{'-':>9}"
        cs = f"{c:9.2f}" if c is not None else f"{'-':>9}"
        rs = f"{c / g:9.1f}" if g and c else f"{'-':>9}"
        print(f"{name:10} {desc:28} {err:10.2e} {'yes' if ok else 'NO':>4} {gs} {fs} {cs} {rs}")
    if failed:
        print(f"gpu_check: {failed} kernel(s) disagree with numpy", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
