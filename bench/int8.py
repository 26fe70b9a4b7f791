"""int8 against fp32, same run, through build(...).run: the BERT layer's
GEMMs (an int8 dense of constant weights, i8 x i8 -> i32, as --quantize
leaves it, against the f32 dense; numpy's f32 GEMM beside), and a
ResNet-style CNN quantized with TVM's defaults (kl_divergence,
per-channel weights) against its fp32 build, with the int8 model's error.

    .venv/bin/python bench/int8.py [--shapes 128x768x768,128x768x3072,128x3072x768,1x768x3072]
                                   [--cnn-width 64] [--cnn-batch 8] [--threads 2] [--repeat 12]

On a CPU with VNNI (vpdpbusd) --alter-op-layout packs the int8 weights as
words of four (docs/passes.md); the line above the table says whether
this one has it, and the int8 limit is measured on vpdpbusd as the fp32
one is on FMAs (bench/machine.py).  The engines are timed interleaved,
medians and IQR spread.  Numbers only: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from models import interleaved_times, spread_pct  # noqa: E402
from tune import with_weight  # noqa: E402


def dense_text(m, k, n, dt):
    et, od = {"f32": ("f32", ""), "i8": ("i32", ' {out_dtype = "int32"}')}[dt]
    zero = "0.0" if dt == "f32" else "0"
    return (f"relay.func @main(%x: tensor<{m}x{k}x{dt}>) -> tensor<{m}x{n}x{et}> {{\n"
            f"  %w = constant dense<{zero}> : tensor<{n}x{k}x{dt}>\n"
            f"  %0 = nn.dense(%x, %w){od} : tensor<{m}x{n}x{et}>\n  return %0\n}}\n")


def bench_gemms(shapes, repeat):
    from tvmd.runtime.build import build
    print(f"{'M x K x N':>16} {'f32 ms':>9} {'int8 ms':>9} {'numpy ms':>9} {'f32/int8':>8}  "
          f"{'GFLOP/s f32':>11} {'GOP/s int8':>10}  spread (f32/int8/numpy)  int8 packed")
    rng = np.random.default_rng(0)
    for shape in shapes:
        m, k, n = (int(v) for v in shape.split("x"))
        xf, wf = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((n, k)).astype(np.float32)
        xi, wi = (rng.integers(-128, 128, s).astype(np.int8) for s in ((m, k), (n, k)))
        mf = build(with_weight(dense_text(m, k, n, "f32"), wf), fallback=False)
        mi = build(with_weight(dense_text(m, k, n, "i8"), wi), fallback=False)
        np.testing.assert_allclose(mf.run(xf), xf @ wf.T, rtol=1e-4, atol=1e-3)
        np.testing.assert_array_equal(mi.run(xi), (xi.astype(np.int64) @ wi.astype(np.int64).T).astype(np.int32))
        times = interleaved_times([lambda: mf.run(xf), lambda: mi.run(xi), lambda: xf @ wf.T], repeat)
        med = [float(np.median(t)) for t in times]
        ops = 2.0 * m * k * n
        packed = mi.stats.get("alter-op-layout", {}).get("int8-dense-pack", 0)
        print(f"{shape:>16} {med[0] * 1e3:9.3f} {med[1] * 1e3:9.3f} {med[2] * 1e3:9.3f} {med[0] / med[1]:8.2f}  "
              f"{ops / med[0] / 1e9:11.0f} {ops / med[1] / 1e9:10.0f}  "
              + "/".join(f"{spread_pct(t):.0f}%" for t in times) + f"  {'yes' if packed else 'no'}", flush=True)


def bench_cnn(width, batch, repeat):
    from tvmd.dialects.relay.passes.quantize import quantize
    from tvmd.ir.printer import print_module
    from tvmd.parser import parse_module
    from tvmd.runtime.build import build
    from tvmd.testing.quantize_models import random_inputs, resnet_like
    text = print_module(resnet_like(batch=batch, width=width))
    calib = random_inputs(1, batch, 10)[0]
    x = random_inputs(1, batch, 20)[0]
    mf = build(parse_module(text), fallback=False)
    q = parse_module(text)
    quantize(q, dataset=[{"x": calib}], calibrate_mode="kl_divergence", per_channel=True)
    mq = build(q, fallback=False)
    f, r = mf.run(x), mq.run(x)
    rel = float(np.linalg.norm(r - f) / np.linalg.norm(f))
    top1 = float(np.mean(r.argmax(1) == f.argmax(1)))
    times = interleaved_times([lambda: mf.run(x), lambda: mq.run(x)], repeat)
    med = [float(np.median(t)) for t in times]
    stats = {k: v for k, v in mq.stats.get("alter-op-layout", {}).items() if v}
    print(f"resnet_like(width={width}) batch {batch}, 32x32: fp32 {med[0] * 1e3:.2f} ms, int8 {med[1] * 1e3:.2f} ms, "
          f"fp32/int8 {med[0] / med[1]:.2f}; spread {spread_pct(times[0]):.0f}%/{spread_pct(times[1]):.0f}%; "
          f"int8 vs fp32: rel error {rel:.4f}, top-1 agreement {top1:.2f}; int8 alter-op-layout {stats}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="128x768x768,128x768x3072,128x3072x768,1x768x3072")
    ap.add_argument("--cnn-width", type=int, default=64)
    ap.add_argument("--cnn-batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=int(os.environ.get("TVMD_NUM_THREADS", "2")))
    ap.add_argument("--repeat", type=int, default=12)
    a = ap.parse_args(argv)
    os.environ["TVMD_NUM_THREADS"] = str(a.threads)
    import machine
    from tvmd.backend.spec import parse_target
    vnni = parse_target("llvm").vector_unit().vnni_lanes
    int8 = machine.peak_int8_gops(a.threads)
    print(f"{machine.describe(a.threads)}; int8 limit "
          + (f"{int8:.0f} GOP/s on vpdpbusd (VNNI, {vnni[0] * 32} bits)" if int8 else "none measured: no VNNI"))
    bench_gemms(a.shapes.split(","), a.repeat)
    bench_cnn(a.cnn_width, a.cnn_batch, a.repeat)


if __name__ == "__main__":
    main()
