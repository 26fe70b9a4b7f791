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

The models are built in code with onnx.helper (random weights, seeded).
Latency is measured at each of --threads (default 1 and 2): tvmd's pool
gets TVMD_NUM_THREADS=N (read at every call), onnxruntime a session with
intra_op_num_threads=N and sequential execution.  After one warm-up each,
the two run in alternating blocks (--repeat runs each in all), so that a
busy machine slows both alike; the table gives each one's median and their
ratio tvmd/ort (below 1: tvmd is faster).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


# -- ONNX builders ---------------------------------------------------------------------

class _G:
    """A graph under construction: nodes, initializers, fresh names."""

    def __init__(self, seed=0):
        self.nodes, self.inits, self.n = [], [], 0
        self.rng = np.random.default_rng(seed)

    def name(self, p):
        self.n += 1
        return f"{p}{self.n}"

    def weight(self, shape, scale=None):
        from onnx import numpy_helper
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        scale = scale if scale is not None else (2.0 / fan_in) ** 0.5
        name = self.name("w")
        self.inits.append(numpy_helper.from_array((self.rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def const(self, array):
        from onnx import numpy_helper
        name = self.name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op, inputs, **attrs):
        from onnx import helper
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def model(self, inputs, outputs):
        from onnx import helper
        g = helper.make_graph(self.nodes, "bench", inputs, outputs, self.inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _conv_bn(g, x, cin, cout, k, stride=1, relu=True):
    w = g.weight((cout, cin, k, k))
    y = g.node("Conv", [x, w], kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4)
    scale = g.const((1 + 0.1 * g.rng.standard_normal(cout)).astype(np.float32))
    bias = g.const((0.1 * g.rng.standard_normal(cout)).astype(np.float32))
    mean = g.const((0.1 * g.rng.standard_normal(cout)).astype(np.float32))
    var = g.const((1 + 0.1 * g.rng.random(cout)).astype(np.float32))
    y = g.node("BatchNormalization", [y, scale, bias, mean, var], epsilon=1e-5)
    return g.node("Relu", [y]) if relu else y


def _basic(g, x, cin, cout, stride):
    y = _conv_bn(g, x, cin, cout, 3, stride)
    y = _conv_bn(g, y, cout, cout, 3, 1, relu=False)
    sc = x if stride == 1 and cin == cout else _conv_bn(g, x, cin, cout, 1, stride, relu=False)
    return g.node("Relu", [g.node("Add", [y, sc])])


def _bottleneck(g, x, cin, mid, stride):
    cout = mid * 4
    y = _conv_bn(g, x, cin, mid, 1)
    y = _conv_bn(g, y, mid, mid, 3, stride)
    y = _conv_bn(g, y, mid, cout, 1, 1, relu=False)
    sc = x if stride == 1 and cin == cout else _conv_bn(g, x, cin, cout, 1, stride, relu=False)
    return g.node("Relu", [g.node("Add", [y, sc])])


def _head(g, x, c, classes=1000):
    y = g.node("GlobalAveragePool", [x])
    y = g.node("Flatten", [y], axis=1)
    return g.node("Gemm", [y, g.weight((classes, c)), g.const(np.zeros(classes, np.float32))], transB=1)


def mobilenet_onnx(size=224):
    """MobileNet-v1-shaped: a 3x3/2 stem, eight depthwise 3x3 + pointwise
    1x1 (BN, ReLU) blocks from 32 to 1024 channels down to 7x7, global
    average pool, Gemm to 1000 classes."""
    from onnx import TensorProto, helper
    g = _G(5)
    x = _conv_bn(g, "x", 3, 32, 3, 2)
    for cin, cout, s in [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1),
                         (256, 512, 2), (512, 512, 1), (512, 1024, 2)]:
        y = g.node("Conv", [x, g.weight((cin, 1, 3, 3))], kernel_shape=[3, 3], strides=[s, s], pads=[1] * 4,
                   group=cin)
        x = _conv_bn(g, g.node("Relu", [y]), cin, cout, 1)
    y = _head(g, x, 1024)
    return g.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
                   [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 1000])])


def resnet_onnx(size=224):
    """The ResNet-style CNN of the module docstring; input 'x' 1x3xSIZExSIZE."""
    from onnx import TensorProto, helper
    g = _G(0)
    y = _conv_bn(g, "x", 3, 64, 7, 2)
    y = g.node("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    y = _basic(g, y, 64, 64, 1)
    y = _basic(g, y, 64, 64, 1)
    y = _basic(g, y, 64, 128, 2)
    y = _basic(g, y, 128, 128, 1)
    y = _head(g, y, 128)
    return g.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
                   [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)])


def resnet50_onnx(size=224):
    """ResNet-50's layout: stem, bottleneck stacks [3, 4, 6, 3], head."""
    from onnx import TensorProto, helper
    g = _G(1)
    y = _conv_bn(g, "x", 3, 64, 7, 2)
    y = g.node("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for mid, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for b in range(blocks):
            y = _bottleneck(g, y, cin, mid, stride if b == 0 else 1)
            cin = mid * 4
    y = _head(g, y, cin)
    return g.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
                   [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)])


def bert_layer_onnx(seq=128, hidden=768, heads=12, ffn=3072):
    """One BERT-base encoder layer; inputs 'h' 1xSEQxHIDDEN and 'mask' 1x1x1xSEQ (additive)."""
    from onnx import TensorProto, helper
    g = _G(2)
    dh = hidden // heads

    def dense(x, n_in, n_out):
        return g.node("Add", [g.node("MatMul", [x, g.weight((n_in, n_out), 0.02)]),
                              g.const(np.zeros(n_out, np.float32))])

    def split_heads(x, perm):
        r = g.node("Reshape", [x, g.const(np.array([1, seq, heads, dh], np.int64))])
        return g.node("Transpose", [r], perm=perm)

    def layer_norm(x):
        return g.node("LayerNormalization", [x, g.const(np.ones(hidden, np.float32)),
                                             g.const(np.zeros(hidden, np.float32))], axis=-1, epsilon=1e-12)

    q = split_heads(dense("h", hidden, hidden), [0, 2, 1, 3])
    k = split_heads(dense("h", hidden, hidden), [0, 2, 3, 1])
    v = split_heads(dense("h", hidden, hidden), [0, 2, 1, 3])
    s = g.node("Div", [g.node("MatMul", [q, k]), g.const(np.array(dh ** 0.5, np.float32))])
    p = g.node("Softmax", [g.node("Add", [s, "mask"])], axis=-1)
    ctx = g.node("Transpose", [g.node("MatMul", [p, v])], perm=[0, 2, 1, 3])
    ctx = g.node("Reshape", [ctx, g.const(np.array([1, seq, hidden], np.int64))])
    h1 = layer_norm(g.node("Add", [dense(ctx, hidden, hidden), "h"]))
    f = dense(h1, hidden, ffn)
    erf = g.node("Erf", [g.node("Div", [f, g.const(np.array(2 ** 0.5, np.float32))])])
    gelu = g.node("Mul", [g.node("Mul", [f, g.node("Add", [erf, g.const(np.array(1, np.float32))])]),
                          g.const(np.array(0.5, np.float32))])
    out = layer_norm(g.node("Add", [dense(gelu, ffn, hidden), h1]))
    return g.model([helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, seq, hidden]),
                    helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 1, 1, seq])],
                   [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])


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


def paired_ms(f, g, repeat, rounds=4):
    """(median ms of f, median ms of g, their ratio), f and g timed in
    alternating blocks of repeat/rounds runs, each block after a warm-up
    run.  (Blocks, not single runs: onnxruntime's threads spin on after a
    run and would steal the cores from the next run of f; a pause before
    each block lets them go back to sleep.)"""
    tf, tg = [], []
    block = max(1, repeat // rounds)
    for _ in range(rounds):
        for fn, ts in ((f, tf), (g, tg)):
            time.sleep(0.2)
            fn()
            for _ in range(block):
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
    mf, mg = float(np.median(tf)) * 1e3, float(np.median(tg)) * 1e3
    return mf, mg, mf / mg


def latency_rows(name, model, inputs, repeat, threads=(1, 2)):
    cm, t_import = compile_onnx(model)
    feeds = dict(inputs)
    arrays = [feeds[n] for n in cm.input_names]
    compile_s = t_import + sum(cm.phase_times.values())
    rows = []
    saved = os.environ.get("TVMD_NUM_THREADS")
    try:
        for n in threads:
            os.environ["TVMD_NUM_THREADS"] = str(n)
            sess = ort_session(model, n)
            got = cm.run(*arrays)
            want = sess.run(None, feeds)[0]
            err = float(np.max(np.abs(got - want)) / max(1e-30, float(np.max(np.abs(want)))))
            t_tvmd, t_ort, ratio = paired_ms(lambda: cm.run(*arrays), lambda: sess.run(None, feeds), repeat)
            rows.append((name, n, t_tvmd, t_ort, ratio, err, compile_s, len(cm.kernels), len(cm.interpreted)))
    finally:
        if saved is None:
            os.environ.pop("TVMD_NUM_THREADS", None)
        else:
            os.environ["TVMD_NUM_THREADS"] = saved
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
