"""How far int8 --quantize lands from fp32 on a small ResNet-style CNN.

    .venv/bin/python bench/quantize_accuracy.py [--inputs 100] [--calib 100] [--width 16] [--seed 0]

The model is tvmd.testing.quantize_models.resnet_like: seven
3x3 conv2d (two residual blocks, two stride-2 convs), global_avg_pool2d and
a dense head, 32x32 inputs, seeded weights.  It is calibrated on `--calib`
image-like random inputs (rounded up to whole batches) and evaluated on
`--inputs` others, as one batch, so each model runs once in the reference
interpreter.  Each row
quantizes a fresh copy with TVM's defaults (skip_conv_layers = [0],
skip_dense_layer, weight_scale power2, int8 inputs and weights, int32
activations, realized down to integer arithmetic) except for what the row
names, and prints

    rel error   ||q - f|| / ||f|| over all logits (q int8, f fp32)
    top-1       the fraction of inputs whose argmax agrees

Not a test: it prints, it never fails (tests/test_quantize.py asserts a
modest bound for one row on a narrower model).
"""

from __future__ import annotations

import argparse
import time

ROWS = [
    ("global_scale", False, {}),
    ("global_scale", True, {}),
    ("global_scale", True, {"global_scale": 32.0}),
    ("kl_divergence", False, {}),
    ("kl_divergence", True, {}),
    ("percentile", False, {}),
    ("percentile", True, {}),
    ("kl_divergence", True, {"weight_scale": "max"}),
    ("kl_divergence", True, {"skip_conv_layers": []}),
    ("kl_divergence", True, {"rounding": "TONEAREST"}),
]


def main():
    import numpy as np

    from tvmd.dialects.relay.interpreter import run_function
    from tvmd.dialects.relay.passes.quantize import quantize
    from tvmd.testing.quantize_models import random_inputs, resnet_like
    from tvmd.ir.printer import print_module
    from tvmd.parser import parse_module

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inputs", type=int, default=100)
    ap.add_argument("--calib", type=int, default=100)
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()

    t0 = time.perf_counter()
    text = print_module(resnet_like(batch=a.inputs, width=a.width, seed=a.seed))
    # calibration batches of the model's batch size (whole batches)
    n_calib = -(-a.calib // a.inputs) * a.inputs
    calib = random_inputs(1, n_calib, a.seed + 10)[0]
    inputs = random_inputs(1, a.inputs, a.seed + 20)[0]
    f = run_function(parse_module(text, "cnn.relay"), "main", inputs)
    print(f"resnet_like(width={a.width}, seed={a.seed}): {a.inputs} inputs, {n_calib} calibration inputs; "
          f"fp32 classes {np.bincount(f.argmax(1), minlength=f.shape[1]).tolist()} "
          f"({time.perf_counter() - t0:.1f} s to build and run fp32)")
    print()
    print(f"{'calibrate_mode':15} {'weights':12} {'other':22} {'rel error':>10} {'top-1':>7} "
          f"{'quantize':>9} {'run':>6}")
    print(f"{'(fp32)':15} {'':12} {'':22} {0.0:10.4f} {1.0:7.2f}")
    for mode, per_channel, extra in ROWS:
        m = parse_module(text, "cnn.relay")
        t1 = time.perf_counter()
        quantize(m, dataset=[{"x": calib}], calibrate_mode=mode, per_channel=per_channel, **extra)
        tq = time.perf_counter() - t1
        t2 = time.perf_counter()
        q = run_function(m, "main", inputs)
        tr = time.perf_counter() - t2
        rel = float(np.linalg.norm(q - f) / np.linalg.norm(f))
        top1 = float(np.mean(q.argmax(1) == f.argmax(1)))
        weights = ("per-channel" if per_channel else "per-tensor")
        other = " ".join(f"{k}={v}" for k, v in extra.items())
        print(f"{mode:15} {weights:12} {other:22} {rel:10.4f} {top1:7.2f} {tq:8.1f}s {tr:5.1f}s")


if __name__ == "__main__":
    main()
