"""Time the relay graph passes on generated chain graphs of 1k, 10k and 100k ops.

    .venv/bin/python bench/relay_passes.py [--sizes 1000,10000,100000]

The graph is a chain of residual layers, each
``conv2d(NCHW, 1x1, its own constant weight) -> bias_add -> relu -> add(layer input)``
on 1x4x4x4 tensors: four ops per layer, plus two constants that are not
counted.  Printed per size: build time, and the time of --fuse-ops,
--convert-layout='nn.conv2d=NHWC', and --fold-constant run after
convert-layout (which then folds one weight transform per layer), each on a
fresh module, with microseconds per op so that linear scaling shows as a
flat column.  Then the reference graphs of bench/relay_models.py: op and
kernel counts of a BERT-base encoder layer (TVM's rules, and with
reduce-epilogue) and of a ResNet-style CNN after -O3, and the layout
transforms --convert-layout='nn.conv2d=NHWC' --fold-constant leaves in the
CNN.  Not a test: it prints, it never fails.
"""

from __future__ import annotations

import argparse
import time


def build_chain(n_ops: int):
    """A module whose @main is a chain of n_ops ops (n_ops // 4 residual layers)."""
    import numpy as np

    from tvmd.dialects.builtin.ops import ModuleOp
    from tvmd.dialects.relay.ops.elemwise import AddOp, ReluOp
    from tvmd.dialects.relay.ops.function import ConstantOp, FuncOp, ReturnOp
    from tvmd.dialects.relay.ops.nn import BiasAddOp, Conv2DOp
    from tvmd.ir.builder import Builder
    from tvmd.ir.core import Block, Region
    from tvmd.ir.types import FunctionType, TensorType, f32

    t = TensorType((1, 4, 4, 4), f32)
    block = Block([t], ["x"])
    b = Builder.at_end(block)
    rng = np.random.default_rng(0)
    v = block.args[0]
    for i in range(max(n_ops // 4, 1)):
        w = b.insert(ConstantOp.get(rng.standard_normal((4, 4, 1, 1)).astype(np.float32) * 0.5,
                                    key=f"w{i}")).results[0]
        bias = b.insert(ConstantOp.get(rng.standard_normal(4).astype(np.float32))).results[0]
        c = b.create(Conv2DOp, v, w)
        a = b.create(BiasAddOp, c, bias)
        r = b.create(ReluOp, a)
        v = b.create(AddOp, r, v)
    b.insert(ReturnOp([v]))
    func = FuncOp((), (), {"sym_name": "main", "function_type": FunctionType([t], [t])}, [Region([block])])
    module = ModuleOp.create_empty()
    module.body.append(func)
    return module


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main(argv=None):
    from tvmd.ir.pass_manager import PassContext
    from tvmd.ir.registry import get_pass_class

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--no-models", action="store_true", help="skip the reference graphs")
    args = ap.parse_args(argv)
    fuse = get_pass_class("fuse-ops")()
    convert = get_pass_class("convert-layout").from_options("nn.conv2d=NHWC")
    fold = get_pass_class("fold-constant")()

    print(f"{'ops':>8} {'build s':>8} {'fuse-ops s':>11} {'us/op':>6} {'convert s':>10} {'us/op':>6} "
          f"{'fold s':>8} {'us/op':>6}")
    for n in (int(s) for s in args.sizes.split(",")):
        t_build = timed(lambda: build_chain(n))
        m = build_chain(n)
        t_fuse = timed(lambda: fuse.run(m, PassContext()))
        m = build_chain(n)
        t_conv = timed(lambda: convert.run(m, PassContext()))
        ctx = PassContext()
        t_fold = timed(lambda: fold.run(m, ctx))
        assert ctx.stats["fold-constant"]["ops-folded"] == n // 4   # one weight transform per layer
        print(f"{n:8d} {t_build:8.2f} {t_fuse:11.2f} {1e6 * t_fuse / n:6.1f} {t_conv:10.2f} "
              f"{1e6 * t_conv / n:6.1f} {t_fold:8.2f} {1e6 * t_fold / n:6.1f}", flush=True)
    if not args.no_models:
        reference_graphs()


def reference_graphs():
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from relay_models import bert_layer_text, count_kernels, count_ops, resnet_text

    from tvmd.ir.pass_manager import PassManager, instantiate, parse_pipeline
    from tvmd.ir.registry import PRESETS, get_pass_class
    from tvmd.parser import parse_module

    def run(text, pipeline):
        m = parse_module(text)
        t0 = time.perf_counter()
        PassManager(instantiate(parse_pipeline(pipeline), get_pass_class)).run(m)
        return m, time.perf_counter() - t0

    print(f"\n{'graph':<34} {'pipeline':<34} {'ops':>5} {'kernels':>8} {'drop':>6} {'s':>6}")
    o3 = ",".join(PRESETS["O3"])
    for label, text in (("BERT-base layer (seq 128)", bert_layer_text()),
                        ("BERT-base layer, ONNX MatMul form", bert_layer_text(matmul="flatten")),
                        ("ResNet-style CNN, 224x224", resnet_text(size=224, width=64))):
        n = count_ops(parse_module(text))
        for pipe in ("fuse-ops{reduce-epilogue=false}", "fuse-ops", o3):
            m, dt = run(text, pipe)
            k = count_kernels(m)
            name = "-O3" if pipe == o3 else pipe
            print(f"{label:<34} {name:<34} {n:5d} {k:8d} {1 - k / n:6.1%} {dt:6.2f}", flush=True)
    m, _ = run(resnet_text(size=224, width=64, batch_norm=False), "convert-layout{nn.conv2d=NHWC},fold-constant")
    left = sum(1 for op in m.walk() if op.name == "relay.layout_transform")
    print(f"\nResNet-style CNN --convert-layout='nn.conv2d=NHWC' --fold-constant: {left} layout transforms left")


if __name__ == "__main__":
    main()
