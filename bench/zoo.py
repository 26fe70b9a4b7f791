"""The model zoo (tvmd/testing/onnx_zoo.py) compiled by tvmd, against onnxruntime.

    .venv/bin/python bench/zoo.py [--only resnet18,gpt2] [--small] [--repeat N] [--threads 1,2]

For each zoo model (standard architectures at their published sizes, batch
1, seeded random weights; --small: the zoo's small variants): import with
tvmd.frontend.onnx.from_onnx, compile with tvmd.runtime.build.build, then
at each thread count time tvmd and onnxruntime in alternating blocks
(bench/models.py's paired_times: --repeat runs each, after warm-ups).  The
table gives each one's median ms and spread (the interquartile range as a
% of the median), the ratio tvmd/ort (below 1: tvmd is faster), the
largest relative error of any output against onnxruntime (max|d| /
max|ort|), compile seconds (import included), compiled kernels and
functions left to the interpreter; then the geometric mean of the ratios
per thread count.

Last, the per-inference overhead, on a chain of 50 kernel calls on a
16-element tensor (25 Softmax kernels, each followed by a fused group of
unary elementwise ops, different in each): the median of ``cm.run`` (the
native entry) against the median, over profiled runs
(``cm.run_list(..., profile=Profile())``), of the sum of the kernel
times.  A profiled run steps through the kernels from Python and each
kernel's time includes that call, so the same is also estimated without
the profiler: the intercept of cm.run's time between this chain and one
of 2 calls.  Ratios and times only: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

import models as M  # noqa: E402  (bench/models.py)

from tvmd.testing.onnx_zoo import ZOO, GraphBuilder, tensor_info  # noqa: E402


def zoo_rows(name, model, feeds, repeat, threads):
    """One row per thread count: (model, threads, tvmd ms, tvmd spread %,
    ort ms, ort spread %, ratio, max rel err, compile s, kernels, interpreted)."""
    cm, t_import = M.compile_onnx(model)
    compile_s = M.compile_seconds(cm, t_import)
    rows = []
    for n in threads:
        tf, tg, err = M.measure_pair(cm, model, feeds, n, repeat)
        t_tvmd, t_ort = M.median_ms(tf), M.median_ms(tg)
        rows.append((name, n, t_tvmd, M.spread_pct(tf), t_ort, M.spread_pct(tg), t_tvmd / t_ort, err, compile_s,
                     len(cm.kernels), len(cm.interpreted)))
    return rows


def print_rows(rows):
    print(f"{'model':<16} {'thr':>3} {'tvmd ms':>9} {'iqr %':>6} {'ort ms':>9} {'iqr %':>6} {'tvmd/ort':>8} "
          f"{'max rel err':>11} {'compile s':>9} {'kernels':>7} {'interp':>6}")
    for r in rows:
        print(f"{r[0]:<16} {r[1]:>3} {r[2]:>9.3f} {r[3]:>6.1f} {r[4]:>9.3f} {r[5]:>6.1f} {r[6]:>8.2f} "
              f"{r[7]:>11.2e} {r[8]:>9.1f} {r[9]:>7} {r[10]:>6}")


def print_geomeans(rows, threads):
    for n in threads:
        ratios = [r[6] for r in rows if r[1] == n]
        if ratios:
            gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
            print(f"geometric mean tvmd/ort at {n} thread(s): {gm:.2f} over {len(ratios)} models")


UNARY = ("Neg", "Abs", "Tanh", "Sigmoid", "Exp", "Sin")


def chain_model(pairs=25, n=16):
    """`pairs` x (Softmax, then the unary ops of UNARY picked by the bits of
    the pair's number) on a 1 x `n` input 'x': Softmax is a kernel of its
    own (it takes in no elementwise epilogue), the unary ops between two
    Softmaxes fuse into one kernel, different in each pair; so 2 x `pairs`
    kernel calls."""
    g = GraphBuilder(0)
    y = "x"
    for i in range(pairs):
        y = g.node("Softmax", [y], axis=-1)
        for bit, op in enumerate(UNARY):
            if (i + 1) >> bit & 1:
                y = g.node(op, [y])
    return g.model([tensor_info("x", [1, n])], [tensor_info(y, [1, n])])


def median_us(f, runs):
    return M.median_ms(M.time_runs(f, runs)) * 1e3


def profiled_kernel_us(cm, x, runs):
    """(median over profiled runs of the sum of the kernel times in us, kernel calls per run)."""
    from tvmd.runtime.program import Profile
    sums, calls = [], 0
    for _ in range(runs):
        prof = Profile()
        cm.run_list(x, profile=prof)
        sums.append(sum(r[1] for r in prof.rows.values()))
        calls = sum(r[0] for r in prof.rows.values())
    return float(np.median(sums)) * 1e6, calls


def overhead(repeat, pairs=25):
    """Print what one inference costs beyond its kernels, at 1 thread: cm.run
    of the chain of 2 x `pairs` kernel calls against the profiled sum of
    its kernel times, and against a chain of 2 calls (the intercept of the
    time per call)."""
    x = np.random.default_rng(0).standard_normal((1, 16)).astype(np.float32)
    runs = max(repeat, 500)
    cm, _ = M.compile_onnx(chain_model(pairs))
    one, _ = M.compile_onnx(chain_model(1))
    with M.tvmd_threads(1):
        cm.run(x)
        one.run(x)
        t_run, t_one = median_us(lambda: cm.run(x), runs), median_us(lambda: one.run(x), runs)
        t_kernels, calls = profiled_kernel_us(cm, x, runs)
    native = cm.executor.program.entry is not None
    per_call = (t_run - t_one) / (2 * pairs - 2)
    print(f"\nper-inference overhead, 1 thread: a chain of {calls} kernel calls ({len(cm.kernels)} distinct "
          f"kernels) on 16 floats, {'one native entry' if native else 'kernel by kernel from Python'}")
    print(f"  cm.run median {t_run:.1f} us; profiled, the kernel times sum to {t_kernels:.1f} us: "
          f"overhead {t_run - t_kernels:.1f} us per inference")
    print("  (a profiled run steps through the kernels from Python: each kernel's time includes its "
          "Python/ctypes call)")
    print(f"  2-call chain: cm.run median {t_one:.1f} us; {per_call:.2f} us per kernel call (kernel + native "
          f"call), so about {t_one - 2 * per_call:.1f} us per inference beyond the kernels")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(ZOO), help="zoo models, comma-separated")
    ap.add_argument("--small", action="store_true", help="the zoo's small variants (a quick smoke run)")
    ap.add_argument("--repeat", type=int, default=20, help="timed runs of each side per thread count")
    ap.add_argument("--threads", default="1,2", help="thread counts to compare at (comma-separated)")
    a = ap.parse_args(argv)
    names = [n for n in a.only.split(",") if n]
    unknown = [n for n in names if n not in ZOO]
    if unknown:
        ap.error(f"unknown zoo model(s) {', '.join(unknown)}; the zoo has {', '.join(ZOO)}")
    threads = tuple(int(t) for t in a.threads.split(","))
    rows = []
    for name in names:
        model, feeds = ZOO[name](small=a.small)
        rows += zoo_rows(name, model, feeds, a.repeat, threads)
    print_rows(rows)
    print_geomeans(rows, threads)
    overhead(a.repeat)


if __name__ == "__main__":
    main()
