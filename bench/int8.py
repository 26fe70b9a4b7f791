"""int8 against fp32, same run, through build(...).run: the BERT layer's
GEMMs (an int8 dense of constant weights, i8 x i8 -> i32, as --quantize
leaves it, against the f32 dense; numpy's f32 GEMM beside), and a
ResNet-style CNN quantized with TVM's defaults (kl_divergence,
per-channel weights) against its fp32 build, with the int8 model's error;
and ONNX QDQ models (ResNet-18 / ResNet-50 of tvmd/testing/onnx_zoo.py,
BN folded by onnxruntime's pre-processing, quantized by onnxruntime's
quantize_static: ui8 activations, per-channel i8 weights; in its QDQ
format, and in its QOperator one of QLinearConv, QLinearAdd, QGemm, ...,
--qdq-format) through the ONNX
backend against onnxruntime at equal threads, with the largest difference
of their outputs in steps of the output's scale; and the BERT layer of
bench/models.py quantized by onnxruntime (quantize_dynamic:
DynamicQuantizeLinear + MatMulInteger; quantize_static, QDQ and
QOperator: --bert-quant) against onnxruntime.

    .venv/bin/python bench/int8.py [--shapes 128x768x768,128x768x3072,128x3072x768,1x768x3072]
                                   [--cnn-width 64] [--cnn-batch 8] [--threads 2] [--repeat 12]
                                   [--qdq resnet18,resnet50] [--qdq-size 224] [--qdq-format QDQ,QOperator]
                                   [--dynamic-seq 128] [--bert-quant dynamic,QDQ,QOperator]

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


def calibration(feeds, count):
    """onnxruntime's CalibrationDataReader over feeds(1) .. feeds(count)."""
    from onnxruntime.quantization import CalibrationDataReader

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.n = 0

        def get_next(self):
            self.n += 1
            return feeds(self.n) if self.n <= count else None
    return Reader()


def qdq_model(name, size, folder, fmt="QDQ"):
    """`name` from onnx_zoo at `size`, BN folded and quantized by
    onnxruntime in format `fmt` (QDQ: QuantizeLinear / DequantizeLinear
    pairs around f32 ops; QOperator: QLinearConv, QLinearAdd, ... on the
    integers); (model, input name, output scale)."""
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process
    from tvmd.testing import onnx_zoo
    model = getattr(onnx_zoo, name)(size=size)[0]
    f32, pre, q = (os.path.join(folder, f"{name}_{t}.onnx") for t in ("f32", "pre", fmt))
    onnx.save(model, f32)
    quant_pre_process(f32, pre)          # folds BN into the convs, as an exported model has them
    x_name = model.graph.input[0].name

    reader = calibration(lambda n: {x_name: np.random.default_rng(n).standard_normal((1, 3, size, size))
                                    .astype(np.float32)}, 8)
    quantize_static(pre, q, reader, quant_format=getattr(QuantFormat, fmt), activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8, per_channel=True)
    qm = onnx.load(q)
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in qm.graph.initializer}
    producers = {o: n for n in qm.graph.node for o in n.output}
    node = producers[qm.graph.output[0].name]
    while node.op_type != "DequantizeLinear":
        node = producers[node.input[0]]
    return qm, x_name, float(np.asarray(inits[node.input[1]]).max())


def bench_qdq(names, size, threads, repeat, formats=("QDQ",)):
    import logging
    import tempfile
    import onnxruntime as ort
    from tvmd.frontend.onnx_backend import TvmdBackend
    logging.getLogger().setLevel(logging.ERROR)    # the quantizer's advice, per tensor
    with tempfile.TemporaryDirectory() as folder:
        for name, fmt in [(n, f) for n in names for f in formats]:
            model, x_name, step = qdq_model(name, size, folder, fmt)
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
            rep = TvmdBackend.prepare(model)
            x = np.random.default_rng(99).standard_normal((1, 3, size, size)).astype(np.float32)
            want, got = sess.run(None, {x_name: x})[0], rep.run([x])[0]
            steps = float(np.abs(got - want).max() / step)
            times = interleaved_times([lambda: sess.run(None, {x_name: x}), lambda: rep.run([x])], repeat)
            med = [float(np.median(t)) for t in times]
            print(f"{name} {fmt} {size}x{size}: onnxruntime {med[0] * 1e3:.2f} ms, tvmd {med[1] * 1e3:.2f} ms, "
                  f"tvmd/onnxruntime {med[1] / med[0]:.2f}; spread {spread_pct(times[0]):.0f}%/"
                  f"{spread_pct(times[1]):.0f}%; outputs differ by at most {steps:.0f} step(s) of the "
                  f"output's scale, equal at {np.mean(got == want):.0%} of them", flush=True)


def bench_bert(seq, threads, repeat, how):
    """The BERT layer of bench/models.py quantized by onnxruntime, `how`:
    "dynamic" (quantize_dynamic: DynamicQuantizeLinear + MatMulInteger),
    or quantize_static in its "QDQ" or "QOperator" format (QGemm,
    QLinearMatMul, QLinearSoftmax, ...: the attention's products on
    integers too), against onnxruntime running that model."""
    import logging
    import tempfile
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import (QuantFormat, QuantType, quantize_dynamic,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process
    from tvmd.frontend.onnx_backend import TvmdBackend
    from tvmd.testing import onnx_zoo
    logging.getLogger().setLevel(logging.ERROR)
    model = onnx_zoo.bert_layer_onnx(seq)
    model = model[0] if isinstance(model, tuple) else model

    def feeds(seed):
        rng = np.random.default_rng(seed)
        return {i.name: rng.standard_normal([x.dim_value for x in i.type.tensor_type.shape.dim]).astype(np.float32)
                if i.name != "mask" else np.zeros([x.dim_value for x in i.type.tensor_type.shape.dim], np.float32)
                for i in model.graph.input}
    with tempfile.TemporaryDirectory() as d:
        raw, f32, q = (os.path.join(d, f) for f in ("raw.onnx", "f32.onnx", "q.onnx"))
        onnx.save(model, raw)
        quant_pre_process(raw, f32)
        if how == "dynamic":
            quantize_dynamic(f32, q, weight_type=QuantType.QInt8)
        else:
            quantize_static(f32, q, calibration(lambda n: feeds(100 + n), 4), quant_format=getattr(QuantFormat, how),
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True)
        q = onnx.load(q)
    inputs = feeds(3)
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    sess = ort.InferenceSession(q.SerializeToString(), so, providers=["CPUExecutionProvider"])
    rep = TvmdBackend.prepare(q)
    args = list(inputs.values())
    want, got = sess.run(None, inputs)[0], rep.run(args)[0]
    times = interleaved_times([lambda: sess.run(None, inputs), lambda: rep.run(args)], repeat)
    med = [float(np.median(t)) for t in times]
    label = "quantize_dynamic (MatMulInteger)" if how == "dynamic" else f"quantize_static {how}"
    print(f"BERT layer seq {seq}, {label}: onnxruntime {med[0] * 1e3:.2f} ms, "
          f"tvmd {med[1] * 1e3:.2f} ms, tvmd/onnxruntime {med[1] / med[0]:.2f}; spread {spread_pct(times[0]):.0f}%/"
          f"{spread_pct(times[1]):.0f}%; largest difference {np.abs(got - want).max():.4f} of |{np.abs(want).max():.2f}|",
          flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="128x768x768,128x768x3072,128x3072x768,1x768x3072")
    ap.add_argument("--cnn-width", type=int, default=64)
    ap.add_argument("--cnn-batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=int(os.environ.get("TVMD_NUM_THREADS", "2")))
    ap.add_argument("--repeat", type=int, default=12)
    ap.add_argument("--qdq", default="resnet18,resnet50", help="onnx_zoo models quantized by onnxruntime "
                    "(QDQ) to run against it ('' skips)")
    ap.add_argument("--qdq-size", type=int, default=224)
    ap.add_argument("--qdq-format", default="QDQ,QOperator",
                    help="onnxruntime's quantized formats: QDQ (Q/DQ pairs) and QOperator (QLinearConv, ...)")
    ap.add_argument("--dynamic-seq", type=int, default=128, help="the quantized BERT layer's "
                    "sequence (0 skips it)")
    ap.add_argument("--bert-quant", default="dynamic,QDQ,QOperator",
                    help="how onnxruntime quantizes the BERT layer: dynamic, and quantize_static's QDQ / QOperator")
    ap.add_argument("--skip", default="", help="sections to skip: gemms, cnn")
    a = ap.parse_args(argv)
    os.environ["TVMD_NUM_THREADS"] = str(a.threads)
    import machine
    from tvmd.backend.spec import parse_target
    vnni = parse_target("llvm").vector_unit().vnni_lanes
    int8 = machine.peak_int8_gops(a.threads)
    print(f"{machine.describe(a.threads)}; int8 limit "
          + (f"{int8:.0f} GOP/s on vpdpbusd (VNNI, {vnni[0] * 32} bits)" if int8 else "none measured: no VNNI"))
    skip = set(a.skip.split(","))
    if "gemms" not in skip:
        bench_gemms(a.shapes.split(","), a.repeat)
    if "cnn" not in skip:
        bench_cnn(a.cnn_width, a.cnn_batch, a.repeat)
    if a.qdq:
        bench_qdq(a.qdq.split(","), a.qdq_size, a.threads, a.repeat, a.qdq_format.split(","))
    if a.dynamic_seq:
        for how in a.bert_quant.split(","):
            bench_bert(a.dynamic_seq, a.threads, a.repeat, how)


if __name__ == "__main__":
    main()
