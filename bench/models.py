"""Whole models, compiled by tvmd, against onnxruntime in the same run.

    .venv/bin/python bench/models.py [--repeat N] [--only resnet,bert,compile] [--small]
                                     [--threads 1,2] [--tir-passes P,...]

Three measurements, printed as tables (ratios, never pass/fail):

* ResNet-style CNN, batch 1: stem conv7x7/2 + max_pool to 56x56, two basic
  blocks at 56x56 (64 channels), a downsampling block to 28x28 (128) and a
  basic block there, global average pool, Gemm to 1000 classes.
* MobileNet-style CNN, batch 1: depthwise 3x3 + pointwise 1x1 blocks
  (grouped convs, small spatial 1x1 convs).
* One BERT-base encoder layer, sequence 128: hidden 768, 12 heads, FFN 3072,
  Q/K/V MatMul + bias, scaled dot-product attention with an additive mask,
  output projection + residual + LayerNormalization, GELU (erf form) FFN,
  residual + LayerNormalization.
* A tiny transformer layer (sequence 16, hidden 64, 2 heads, FFN 128):
  kernels of a few microseconds, so what happens between them shows.
* Compile time of a ResNet-50-sized model (the [3, 4, 6, 3] bottleneck
  stacks at 224x224), per phase: ONNX import, graph passes, lowering to TIR,
  LLVM codegen, executor setup.

The models are built in code with onnx.helper (random weights, seeded) by
tvmd/testing/onnx_zoo.py; bench/zoo.py measures its standard architectures.
Latency is measured at each of --threads (default 1 and 2): tvmd's pool
gets TVMD_NUM_THREADS=N (read at every call), onnxruntime a session with
intra_op_num_threads=N and sequential execution.  After one warm-up each,
the two run in alternating blocks (--repeat runs each in all), so that a
busy machine slows both alike; the table gives each one's median and their
ratio tvmd/ort (below 1: tvmd is faster).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tvmd.testing.onnx_zoo import bert_layer_onnx, mobilenet_onnx, resnet50_onnx, resnet_onnx  # noqa: E402,F401


# -- measuring -------------------------------------------------------------------------------

TIR_PASSES = None    # build()'s default (lower-tir); --tir-passes overrides


def compile_onnx(model):
    """(CompiledModel, import seconds)."""
    from tvmd.frontend.onnx import from_onnx
    from tvmd.runtime.build import build
    t0 = time.perf_counter()
    module, _ = from_onnx(model)
    t_import = time.perf_counter() - t0
    kw = {} if TIR_PASSES is None else {"tir_passes": TIR_PASSES}
    return build(module, progress=None, **kw), t_import


def ort_session(model, threads=2):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def paired_times(f, g, repeat, rounds=4):
    """(seconds of each timed run of f, of g), by `interleaved_times`."""
    tf, tg = interleaved_times([f, g], repeat, rounds)
    return tf, tg


def interleaved_times(fns, repeat, rounds=4):
    """The seconds of each timed run of each of fns, the functions timed in
    alternating blocks of repeat/rounds runs, each block after a warm-up
    run.  Alternating spreads the shared machine's drifts in load over all
    of them instead of charging one.  (Blocks, not single runs:
    onnxruntime's and OpenBLAS's threads spin on after a run and would
    steal the cores from the next function; a pause before each block lets
    them go back to sleep.)"""
    times = [[] for _ in fns]
    block = max(1, repeat // rounds)
    for _ in range(rounds):
        for fn, ts in zip(fns, times):
            time.sleep(0.2)
            fn()
            ts += time_runs(fn, block)
    return times


def spread_pct(seconds):
    """The interquartile range as a percentage of the median."""
    q1, q2, q3 = np.percentile(seconds, [25, 50, 75])
    return 100.0 * (q3 - q1) / q2


def time_runs(fn, n):
    """The seconds of each of `n` runs of fn()."""
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return ts


def median_ms(seconds):
    return float(np.median(seconds)) * 1e3


@contextlib.contextmanager
def tvmd_threads(n):
    """TVMD_NUM_THREADS=n inside the block (tvmd's pool reads it at every call)."""
    saved = os.environ.get("TVMD_NUM_THREADS")
    os.environ["TVMD_NUM_THREADS"] = str(n)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("TVMD_NUM_THREADS", None)
        else:
            os.environ["TVMD_NUM_THREADS"] = saved


def max_rel_err(got, want):
    """The largest max|got - want| / max|want| over the outputs (lists of arrays)."""
    return max(float(np.max(np.abs(g - w)) / max(1e-30, float(np.max(np.abs(w))))) for g, w in zip(got, want))


def compile_seconds(cm, t_import):
    return t_import + sum(cm.phase_times.values())


def measure_pair(cm, model, feeds, threads, repeat):
    """At `threads` threads: (tvmd's run seconds, onnxruntime's, the max
    relative error of tvmd's outputs against onnxruntime's)."""
    arrays = [feeds[n] for n in cm.input_names]
    with tvmd_threads(threads):
        sess = ort_session(model, threads)
        err = max_rel_err(cm.run_list(*arrays), sess.run(None, feeds))
        tf, tg = paired_times(lambda: cm.run_list(*arrays), lambda: sess.run(None, feeds), repeat)
    return tf, tg, err


def latency_rows(name, model, inputs, repeat, threads=(1, 2)):
    cm, t_import = compile_onnx(model)
    compile_s = compile_seconds(cm, t_import)
    rows = []
    for n in threads:
        tf, tg, err = measure_pair(cm, model, dict(inputs), n, repeat)
        t_tvmd, t_ort = median_ms(tf), median_ms(tg)
        rows.append((name, n, t_tvmd, t_ort, t_tvmd / t_ort, err, compile_s, len(cm.kernels), len(cm.interpreted)))
    return rows, cm


def print_latency(rows):
    print(f"{'model':<22} {'threads':>7} {'tvmd ms':>9} {'ort ms':>9} {'tvmd/ort':>9} {'max rel err':>12} "
          f"{'compile s':>10} {'kernels':>8} {'interp':>7}")
    for r in rows:
        print(f"{r[0]:<22} {r[1]:>7} {r[2]:>9.2f} {r[3]:>9.2f} {r[4]:>9.2f} {r[5]:>12.2e} {r[6]:>10.1f} "
              f"{r[7]:>8} {r[8]:>7}")


def compile_phases(model):
    cm, t_import = compile_onnx(model)
    phases = {"import": t_import, **cm.phase_times}
    print(f"{'phase':<10} {'seconds':>8}")
    for k, v in phases.items():
        print(f"{k:<10} {v:>8.2f}")
    print(f"{'total':<10} {sum(phases.values()):>8.2f}   ({len(cm.kernels)} kernels, "
          f"{len(cm.interpreted)} interpreted)")
    return cm


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--only", default="resnet,mobilenet,bert,tiny,compile")
    ap.add_argument("--threads", default="1,2", help="thread counts to compare at (comma-separated)")
    ap.add_argument("--small", action="store_true", help="smaller inputs (a quick smoke run)")
    ap.add_argument("--tir-passes", default=None,
                    help="tir passes per kernel, e.g. 'tir-simplify,tir-lower-intrin{erf=poly}' "
                         "(default: build()'s, the lower-tir pipeline)")
    a = ap.parse_args(argv)
    global TIR_PASSES
    if a.tir_passes:
        TIR_PASSES = tuple(p for p in a.tir_passes.split(",") if p)
    print("tir passes: " + (", ".join(TIR_PASSES) if TIR_PASSES else "build() default"))
    only = set(a.only.split(","))
    threads = tuple(int(t) for t in a.threads.split(","))
    rng = np.random.default_rng(0)
    rows = []
    if "resnet" in only:
        size = 64 if a.small else 224
        x = rng.standard_normal((1, 3, size, size)).astype(np.float32)
        got, cm = latency_rows(f"resnet-style {size}", resnet_onnx(size), {"x": x}, a.repeat, threads)
        rows += got
        for name, why in cm.interpreted:
            print(f"  interpreted @{name}: {why}")
    if "bert" in only:
        seq, hidden, heads, ffn = (32, 128, 2, 512) if a.small else (128, 768, 12, 3072)
        h = rng.standard_normal((1, seq, hidden)).astype(np.float32)
        mask = np.zeros((1, 1, 1, seq), np.float32)
        mask[..., seq - seq // 8:] = -10000.0
        got, cm = latency_rows(f"bert layer seq {seq}", bert_layer_onnx(seq, hidden, heads, ffn),
                               {"h": h, "mask": mask}, a.repeat, threads)
        rows += got
        for name, why in cm.interpreted:
            print(f"  interpreted @{name}: {why}")
    if "mobilenet" in only:
        size = 64 if a.small else 224
        x = rng.standard_normal((1, 3, size, size)).astype(np.float32)
        got, cm = latency_rows(f"mobilenet-style {size}", mobilenet_onnx(size), {"x": x}, a.repeat, threads)
        rows += got
    if "tiny" in only:
        # a small transformer layer: 15 kernels of microseconds each, where
        # the cost between kernels (one native entry vs Python) shows
        seq, hidden = 16, 64
        h = rng.standard_normal((1, seq, hidden)).astype(np.float32)
        mask = np.zeros((1, 1, 1, seq), np.float32)
        got, cm = latency_rows(f"tiny layer seq {seq} h {hidden}", bert_layer_onnx(seq, hidden, 2, 2 * hidden),
                               {"h": h, "mask": mask}, max(a.repeat, 200), threads)
        rows += got
    if rows:
        print_latency(rows)
    if "compile" in only:
        print("\nResNet-50-sized model compile time" + (" (64x64 input)" if a.small else " (224x224)"))
        compile_phases(resnet50_onnx(64 if a.small else 224))


if __name__ == "__main__":
    main()
