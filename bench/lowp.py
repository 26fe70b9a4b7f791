"""Low precision GEMMs: bf16 and f16 operands (f32 accumulation) against
f32, through build(...).run, with numpy (OpenBLAS, f32) beside them.

    .venv/bin/python bench/lowp.py [--shapes 1x768x3072,32x768x3072,512x768x3072]
                                   [--threads 2] [--repeat 12]

Two tables.  The first has both operands as inputs (the kernel converts
or packs them on every call).  The second is a model's layer: the weight a
constant, f32 against the same dense through --to-mixed-precision
(bfloat16), built for this CPU (on AVX512-BF16, --alter-op-layout packs
the weight in bf16 pairs for vdpbf16ps) and with ``-mattr=-avx512bf16``
(the weight packed as bf16, converted to f32 in the kernel).

Each shape MxKxN is nn.dense(x [M, K], w [N, K]) with both operands
inputs of the dtype (bf16 as uint16 bits), out_dtype float32; the f32
build is the same dense in f32.  Checked against numpy on the rounded
operands first.  The engines are timed interleaved (bench/models.py),
medians and IQR spread; GFLOP/s beside the machine's limit, GB/s of the
operands read (what a one-row product is bound by).  Numbers only.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from models import interleaved_times, spread_pct  # noqa: E402

DTYPES = {"f32": ("float32", 4), "bf16": ("bfloat16", 2), "f16": ("float16", 2)}


def dense_text(m, k, n, dt):
    name, _ = DTYPES[dt]
    cast = dt != "f32"
    body = (f'  %d = nn.dense(%x, %w) {{out_dtype = "float32"}} : tensor<{m}x{n}xf32>\n' if cast else
            f"  %d = nn.dense(%x, %w) : tensor<{m}x{n}xf32>\n")
    return (f"relay.func @main(%x: tensor<{m}x{k}x{dt}>, %w: tensor<{n}x{k}x{dt}>) -> tensor<{m}x{n}xf32> {{\n"
            f"{body}  return %d\n}}\n")


def as_dtype(a, dt):
    """(the array to feed, its value in f64)."""
    if dt == "bf16":
        from tvmd.testing import bfloat16
        b = bfloat16.bits(a)
        return b, bfloat16.value(b).astype(np.float64)
    if dt == "f16":
        h = a.astype(np.float16)
        return h, h.astype(np.float64)
    return a, a.astype(np.float64)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="1x768x3072,32x768x3072,512x768x3072")
    ap.add_argument("--threads", type=int, default=int(os.environ.get("TVMD_NUM_THREADS", "2")))
    ap.add_argument("--repeat", type=int, default=12)
    a = ap.parse_args(argv)
    os.environ["TVMD_NUM_THREADS"] = str(a.threads)
    import machine

    from tvmd.runtime.build import build
    print(f"dense, f32 accumulation; {machine.describe(a.threads)}")
    print(f"{'M x K x N':>16} " + " ".join(f"{d + ' ms':>10}" for d in DTYPES) + f" {'numpy ms':>9}"
          f" {'bf16/f32':>8} {'f16/f32':>8}  GFLOP/s (f32/bf16/f16)  GB/s read (f32/bf16/f16)  spread")
    rng = np.random.default_rng(0)
    for shape in a.shapes.split(","):
        m, k, n = (int(v) for v in shape.split("x"))
        x, w = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((n, k)).astype(np.float32)
        runs = []
        for dt in DTYPES:
            model = build(dense_text(m, k, n, dt), fallback=False)
            (xf, xv), (wf, wv) = as_dtype(x, dt), as_dtype(w, dt)
            np.testing.assert_allclose(model.run(xf, wf), xv @ wv.T, rtol=1e-4, atol=1e-3)
            runs.append(lambda model=model, xf=xf, wf=wf: model.run(xf, wf))
        times = interleaved_times(runs + [lambda: x @ w.T], a.repeat)
        med = [float(np.median(t)) for t in times]
        flop = 2.0 * m * k * n
        gbs = [(m * k + n * k) * DTYPES[dt][1] / t / 1e9 for dt, t in zip(DTYPES, med)]
        print(f"{shape:>16} " + " ".join(f"{t * 1e3:10.3f}" for t in med[:3]) + f" {med[3] * 1e3:9.3f}"
              f" {med[1] / med[0]:8.2f} {med[2] / med[0]:8.2f}  "
              + "/".join(f"{flop / t / 1e9:.0f}" for t in med[:3]) + "  "
              + "/".join(f"{g:.1f}" for g in gbs) + "  "
              + "/".join(f"{spread_pct(t):.0f}%" for t in times), flush=True)
    bench_constant_weight(a.shapes.split(","), a.repeat)


def constant_weight_models(m, k, n, w):
    """{name: (module, target)}: the f32 layer (bench/tune.py's dense of a
    constant weight), and its --to-mixed-precision bf16 form for this CPU
    and for one without AVX512-BF16."""
    from tune import dense_text as constant_dense, with_weight
    from tvmd.ir.pass_manager import PassContext
    from tvmd.ir.registry import get_pass_class

    def module(mixed):
        mod = with_weight(constant_dense(m, k, n)[0], w)
        if mixed:
            get_pass_class("to-mixed-precision")(dtype="bfloat16").run(mod, PassContext())
        return mod
    return {"f32": (module(False), "llvm"), "bf16": (module(True), "llvm"),
            "bf16 -avx512bf16": (module(True), "llvm -mattr=-avx512bf16")}


def bench_constant_weight(shapes, repeat):
    from tvmd.runtime.build import build
    from tvmd.testing import bfloat16
    print("\nconstant weight (a model's layer), the bf16 forms through --to-mixed-precision:")
    print(f"{'M x K x N':>16} {'f32 ms':>9} {'bf16 ms':>9} {'-avx512bf16':>12} {'numpy ms':>9} {'bf16/f32':>8} "
          f"{'-bf16/f32':>9}  GFLOP/s (f32/bf16/-avx512bf16)  bf16 packs  spread")
    rng = np.random.default_rng(1)
    for shape in shapes:
        m, k, n = (int(v) for v in shape.split("x"))
        x, w = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((n, k)).astype(np.float32)
        runs, packs = [], ""
        for name, (mod, target) in constant_weight_models(m, k, n, w).items():
            model = build(mod, target=target, fallback=False)
            want = x @ w.T if name == "f32" else \
                bfloat16.rounded(bfloat16.value(bfloat16.bits(x)).astype(np.float64)
                                 @ bfloat16.rounded(w).astype(np.float64).T)
            np.testing.assert_allclose(model.run(x), want, rtol=1e-2 if name != "f32" else 1e-4, atol=1e-2)
            if name == "bf16":
                packs = str(model.stats["alter-op-layout"].get("bf16-dense-pack", 0))
            runs.append(lambda model=model: model.run(x))
        times = interleaved_times(runs + [lambda: x @ w.T], repeat)
        med = [float(np.median(t)) for t in times]
        flop = 2.0 * m * k * n
        print(f"{shape:>16} " + " ".join(f"{t * 1e3:9.3f}" for t in med[:2]) + f" {med[2] * 1e3:12.3f}"
              f" {med[3] * 1e3:9.3f} {med[1] / med[0]:8.2f} {med[2] / med[0]:9.2f}  "
              + "/".join(f"{flop / t / 1e9:.0f}" for t in med[:3]) + f"  {packs:>10}  "
              + "/".join(f"{spread_pct(t):.0f}%" for t in times), flush=True)


if __name__ == "__main__":
    main()
