"""--fake-quantization-to-integer: an ONNX QDQ model (onnxruntime's
quantizer, its default format) has its convolutions computed on the int8
values, and gives onnxruntime's answer (which computes them on int8 too)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")

from tvmd.frontend.onnx import from_onnx  # noqa: E402
from tvmd.runtime.build import build  # noqa: E402
from tvmd.testing import onnx_zoo  # noqa: E402


def qdq_resnet(tmp_path, size=32, width=8, activation="QUInt8", per_channel=True, model=None, fmt="QDQ"):
    """A small ResNet-18 (basic blocks, BN) quantized by onnxruntime (QDQ,
    or `fmt` "QOperator": QLinearConv, QLinearAdd, ...; int8 weights), and
    its input name; `model`: another float model, whose BNs onnxruntime's
    pre-processing folds first."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    f32, q = tmp_path / "f32.onnx", tmp_path / "q.onnx"
    if model is None:
        model = onnx_zoo.resnet18(size=size, width=width, classes=10)[0]
        onnx.save(model, str(f32))
    else:
        from onnxruntime.quantization.shape_inference import quant_pre_process
        onnx.save(model, str(tmp_path / "raw.onnx"))
        quant_pre_process(str(tmp_path / "raw.onnx"), str(f32))
    name = model.graph.input[0].name

    class Calibration(CalibrationDataReader):
        def __init__(self):
            self.n = 0

        def get_next(self):
            self.n += 1
            if self.n > 4:
                return None
            return {name: np.random.default_rng(self.n).standard_normal((1, 3, size, size)).astype(np.float32)}
    quantize_static(str(f32), str(q), Calibration(), quant_format=getattr(QuantFormat, fmt),
                    activation_type=getattr(QuantType, activation), weight_type=QuantType.QInt8,
                    per_channel=per_channel)
    return onnx.load(str(q)), name


def ort_run(model, feeds):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)[0]


def last_scale(model):
    """The scale of the DequantizeLinear that makes the graph's output."""
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
    out = model.graph.output[0].name
    producers = {o: n for n in model.graph.node for o in n.output}
    node = producers[out]
    while node.op_type != "DequantizeLinear":
        node = producers[node.input[0]]
    return float(np.asarray(inits[node.input[1]]).max())


@pytest.mark.parametrize("activation, per_channel", [("QUInt8", True), ("QInt8", True), ("QUInt8", False)])
def test_a_qdq_cnn_runs_its_convs_on_int8_and_equals_onnxruntime(tmp_path, activation, per_channel):
    model, name = qdq_resnet(tmp_path, activation=activation, per_channel=per_channel)
    products = sum(n.op_type in ("Conv", "Gemm") for n in model.graph.node)   # 20 convs, the classifier
    module, _ = from_onnx(model)
    cm = build(module, progress=False, fallback=False)
    assert cm.stats["fake-quantization-to-integer"]["products-on-integers"] == products
    step = last_scale(model)
    for seed in range(3):
        x = np.random.default_rng(100 + seed).standard_normal((1, 3, 32, 32)).astype(np.float32)
        want = ort_run(model, {name: x})
        got = cm.run(x)
        # both sum the int8 products exactly; a requantization tie may round
        # the other way, one step of the output's scale
        np.testing.assert_allclose(got, want, rtol=0, atol=1.01 * step)
        assert np.mean(got == want) > 0.9


def test_the_rewrite_keeps_the_float_answer_where_the_pass_is_off(tmp_path):
    """The int8 form against the same model built with the pass disabled
    (float products between the quantize / dequantize pairs): equal up to
    one output step where a float sum's rounding crossed a tie."""
    model, name = qdq_resnet(tmp_path)
    module, _ = from_onnx(model)
    ints = build(module, progress=False)
    module, _ = from_onnx(model)
    floats = build(module, progress=False, disabled_passes=["fake-quantization-to-integer"])
    assert "fake-quantization-to-integer" not in floats.stats
    x = np.random.default_rng(7).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.testing.assert_allclose(ints.run(x), floats.run(x), rtol=0, atol=1.01 * last_scale(model))


def test_depthwise_convs_of_a_mobilenet(tmp_path):
    """MobileNet-v2 (BN folded by onnxruntime's pre-processing: depthwise
    3x3, pointwise 1x1, Relu6 folded into the quantization): every product
    on int8, the outputs onnxruntime's within one step."""
    model, name = qdq_resnet(tmp_path, model=onnx_zoo.mobilenet_v2(size=32, width=0.25, max_repeats=1, classes=10)[0])
    products = sum(n.op_type in ("Conv", "Gemm") for n in model.graph.node)
    assert any(a.name == "group" and a.i > 1 for n in model.graph.node if n.op_type == "Conv" for a in n.attribute)
    module, _ = from_onnx(model)
    cm = build(module, progress=False, fallback=False)
    assert cm.stats["fake-quantization-to-integer"]["products-on-integers"] == products
    x = np.random.default_rng(3).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.testing.assert_allclose(cm.run(x), ort_run(model, {name: x}), rtol=0, atol=1.01 * last_scale(model))


def test_a_qdq_transformer_layer_runs_its_gemms_on_int8(tmp_path):
    """A BERT layer quantized by onnxruntime (Gemm and MatMul, QDQ): the six
    Gemms' weights reach nn.dense through the importer's transpose, which
    the pass makes at compile time on the int8 values; the activation x
    activation MatMuls stay float. Close to onnxruntime's answer (which
    rounds its own requantizations)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process
    model = onnx_zoo.bert_layer_onnx(seq=16, hidden=64, heads=2, ffn=128)
    model = model[0] if isinstance(model, tuple) else model
    onnx.save(model, str(tmp_path / "raw.onnx"))
    quant_pre_process(str(tmp_path / "raw.onnx"), str(tmp_path / "f32.onnx"))
    shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input}

    def feeds(seed):
        rng = np.random.default_rng(seed)
        return {n: rng.standard_normal(s).astype(np.float32) if n != "mask" else np.zeros(s, np.float32)
                for n, s in shapes.items()}

    class Calibration(CalibrationDataReader):
        def __init__(self):
            self.n = 0

        def get_next(self):
            self.n += 1
            return None if self.n > 4 else feeds(self.n)
    quantize_static(str(tmp_path / "f32.onnx"), str(tmp_path / "q.onnx"), Calibration(),
                    quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    per_channel=True, op_types_to_quantize=["MatMul", "Gemm"])
    q = onnx.load(str(tmp_path / "q.onnx"))
    module, _ = from_onnx(q)
    cm = build(module, progress=False, fallback=False)
    assert cm.stats["fake-quantization-to-integer"]["products-on-integers"] == \
        sum(n.op_type == "Gemm" for n in q.graph.node) == 6
    f = feeds(50)
    want = ort_run(q, f)
    np.testing.assert_allclose(cm.run(*f.values()), want, rtol=0, atol=1e-2 * np.abs(want).max())
