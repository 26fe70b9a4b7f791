"""onnxruntime's quantized operators (com.microsoft QGemm, QLinearAdd, ...,
the QOperator format of its quantizer) through the ONNX importer and
build, against onnxruntime itself: one node each, and a ResNet quantized
by quantize_static in the QOperator format, whose convs and classifier
are int8 products (packed for vpdpbusd on a VNNI CPU).  And ONNX's own
QuantizeLinear of a float8 input, against numpy."""

import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from tvmd.frontend.onnx import from_onnx
from tvmd.runtime.build import build

sys.path.insert(0, os.path.dirname(__file__))
from test_fake_quantization import qdq_resnet  # noqa: E402
from test_vnni import HOST_VNNI  # noqa: E402

MS = "com.microsoft"
NP = {TensorProto.UINT8: np.uint8, TensorProto.INT8: np.int8}


def _model(nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, "q", inputs, outputs, initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])


def _const(name, v, t=None):
    v = np.asarray(v)
    return helper.make_tensor(name, t or onnx.helper.np_dtype_to_tensor_dtype(v.dtype), v.shape, v.flatten().tolist())


def _qparams(prefix, scale, zp, t):
    return [_const(prefix + "_s", np.float32(scale)), _const(prefix + "_zp", np.array(zp, NP[t]))]


def _compare(model, feeds, steps=1, equal=0.9):
    """tvmd's output against onnxruntime's: within `steps` of the integer
    output everywhere (a requantization tie may round the other way), and
    the same at `equal` of the elements at least."""
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    module, _ = from_onnx(model)
    got = build(module, progress=False, fallback=False).run(*feeds.values())
    assert got.dtype == want.dtype and got.shape == want.shape
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    assert diff.max() <= steps, diff.max()
    assert np.mean(diff == 0) >= equal
    return got


def _rand(shape, t, seed):
    info = np.iinfo(NP[t])
    return np.random.default_rng(seed).integers(info.min, info.max + 1, shape).astype(NP[t])


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("t", [TensorProto.UINT8, TensorProto.INT8])
def test_qlinear_binary_broadcasts_and_requantizes(op, t):
    a_shape, b_shape = (2, 3, 4, 5), (3, 1, 5)
    zp = 128 if t == TensorProto.UINT8 else 3
    inits = _qparams("a", 0.05, zp, t) + _qparams("b", 0.02, zp - 1, t) + _qparams("c", 0.07 if op == "QLinearAdd" else 0.3, zp + 2, t)
    node = helper.make_node(op, ["A", "a_s", "a_zp", "B", "b_s", "b_zp", "c_s", "c_zp"], ["C"], domain=MS)
    m = _model([node], [helper.make_tensor_value_info("A", t, a_shape), helper.make_tensor_value_info("B", t, b_shape)],
               [helper.make_tensor_value_info("C", t, a_shape)], inits)
    _compare(m, {"A": _rand(a_shape, t, 1), "B": _rand(b_shape, t, 2)})


@pytest.mark.parametrize("op, attrs", [("QLinearSigmoid", {}), ("QLinearLeakyRelu", {"alpha": 0.1}),
                                       ("QLinearGlobalAveragePool", {"channels_last": 0}),
                                       ("QLinearGlobalAveragePool", {"channels_last": 1}),
                                       ("QLinearAveragePool", {"kernel_shape": [3, 3], "strides": [2, 2],
                                                               "pads": [1, 1, 1, 1], "channels_last": 0}),
                                       ("QLinearAveragePool", {"kernel_shape": [2, 2], "strides": [2, 2],
                                                               "channels_last": 1}),
                                       ("QLinearSoftmax", {"axis": -1, "opset": 13}),
                                       ("QLinearSoftmax", {"axis": 1, "opset": 12})])
def test_qlinear_unary(op, attrs):
    t = TensorProto.UINT8
    shape = (1, 6, 8, 8)
    pooled = {"QLinearGlobalAveragePool": (1, 6, 1, 1), "QLinearAveragePool": (1, 6, 4, 4)}
    out = pooled.get(op, shape)
    if attrs.get("channels_last"):
        shape = (1, 8, 8, 6)
        out = (out[0], out[2], out[3], out[1])
    y_s = 1 / 256 if op in ("QLinearSigmoid", "QLinearSoftmax") else 0.04
    inits = _qparams("x", 0.05, 120, t) + _qparams("y", y_s, 0 if y_s < 0.01 else 110, t)
    node = helper.make_node(op, ["X", "x_s", "x_zp", "y_s", "y_zp"], ["Y"], domain=MS, **attrs)
    m = _model([node], [helper.make_tensor_value_info("X", t, shape)], [helper.make_tensor_value_info("Y", t, out)],
               inits)
    _compare(m, {"X": _rand(shape, t, 3)})


def test_qlinear_concat_requantizes_each_input():
    t = TensorProto.UINT8
    inits = (_qparams("y", 0.05, 128, t) + _qparams("x1", 0.03, 100, t) + _qparams("x2", 0.08, 140, t))
    node = helper.make_node("QLinearConcat", ["y_s", "y_zp", "X1", "x1_s", "x1_zp", "X2", "x2_s", "x2_zp"], ["Y"],
                            domain=MS, axis=1)
    m = _model([node], [helper.make_tensor_value_info("X1", t, (2, 3, 4)), helper.make_tensor_value_info("X2", t, (2, 5, 4))],
               [helper.make_tensor_value_info("Y", t, (2, 8, 4))], inits)
    _compare(m, {"X1": _rand((2, 3, 4), t, 4), "X2": _rand((2, 5, 4), t, 5)})


@pytest.mark.parametrize("quantized_out", [True, False])
@pytest.mark.parametrize("trans_b", [0, 1])
def test_qgemm_bias_alpha_and_per_column_weights(quantized_out, trans_b):
    """u8 activations by per-column s8 weights, an int32 bias, alpha; the
    output requantized to u8, or float without y_scale."""
    m_, k, n = 4, 32, 16
    rng = np.random.default_rng(6)
    w = rng.integers(-127, 128, (n, k) if trans_b else (k, n)).astype(np.int8)
    inits = [_const("a_s", np.float32(0.02)), _const("a_zp", np.uint8(130)), _const("W", w),
             _const("b_s", rng.uniform(0.005, 0.02, n).astype(np.float32)), _const("b_zp", np.zeros(n, np.int8)),
             _const("C", rng.integers(-2000, 2000, n).astype(np.int32))]
    ins = ["A", "a_s", "a_zp", "W", "b_s", "b_zp", "C"]
    out_t = TensorProto.FLOAT
    if quantized_out:
        inits += [_const("y_s", np.float32(0.5)), _const("y_zp", np.uint8(120))]
        ins += ["y_s", "y_zp"]
        out_t = TensorProto.UINT8
    node = helper.make_node("QGemm", ins, ["Y"], domain=MS, transB=trans_b, alpha=0.75)
    m = _model([node], [helper.make_tensor_value_info("A", TensorProto.UINT8, (m_, k))],
               [helper.make_tensor_value_info("Y", out_t, (m_, n))], inits)
    feeds = {"A": _rand((m_, k), TensorProto.UINT8, 7)}
    if quantized_out:
        _compare(m, feeds)
    else:
        want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        module, _ = from_onnx(m)
        np.testing.assert_allclose(build(module, progress=False).run(feeds["A"]), want, rtol=1e-5, atol=1e-4)


def test_a_qoperator_resnet_runs_on_int8_and_equals_onnxruntime(tmp_path):
    """ResNet-18 (small) quantized by onnxruntime in the QOperator format:
    QLinearConv, QLinearAdd, QLinearGlobalAveragePool, QGemm.  Its 20 convs
    and the classifier are integer products (packed for vpdpbusd where
    the CPU has VNNI); the output is onnxruntime's: within one step (a
    requantization tie may round the other way), equal nearly everywhere.
    Its MaxPool runs on uint8: read as signed, values past 127 lost."""
    qm, name = qdq_resnet(tmp_path, fmt="QOperator")
    ops = {n.op_type for n in qm.graph.node}
    assert {"QLinearConv", "QLinearAdd", "QGemm"} <= ops, ops
    module, _ = from_onnx(qm)
    cm = build(module, progress=False, fallback=False)
    convs = [n for n in qm.graph.node if n.op_type == "QLinearConv"]
    assert cm.stats["qnn-legalize"]["products-legalized"] == len(convs) + 1   # and the QGemm
    if HOST_VNNI:
        # packed for vpdpbusd: every conv whose output channels fill its 16 i32 lanes
        weights = {i.name: i.dims for i in qm.graph.initializer}
        assert cm.stats["alter-op-layout"]["int8-conv-pack"] == sum(weights[n.input[3]][0] % 16 == 0 for n in convs)
        assert cm.stats["alter-op-layout"]["int8-dense-pack"] == 1
    out = qm.graph.output[0].name
    producer = {o: n for n in qm.graph.node for o in n.output}[out]
    assert producer.op_type == "DequantizeLinear"
    step = float(onnx.numpy_helper.to_array(next(i for i in qm.graph.initializer if i.name == producer.input[1])))
    sess = ort.InferenceSession(qm.SerializeToString(), providers=["CPUExecutionProvider"])
    for seed in range(2):
        x = np.random.default_rng(100 + seed).standard_normal((1, 3, 32, 32)).astype(np.float32)
        steps = np.abs(cm.run(x) - sess.run(None, {name: x})[0]) / step
        assert steps.max() <= 1.01 and np.mean(steps < 0.01) >= 0.99, (steps.max(), np.mean(steps < 0.01))


def test_quantize_linear_of_a_float8_input():
    """QuantizeLinear of a float8 input (a fuzz finding: qnn.quantize had
    rounded the float8's storage bytes, llvm.roundeven on i8, IR that did
    not verify): computed from the f32 value, as numpy does."""
    import ml_dtypes
    s, z = _const("s", np.float32(0.05)), _const("z", np.uint8(3))
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
    m = helper.make_model(helper.make_graph(nodes, "f8", [helper.make_tensor_value_info("x", TensorProto.FLOAT8E5M2FNUZ, (2, 4))],
                                            [helper.make_tensor_value_info("y", TensorProto.FLOAT, (2, 4))], [s, z]),
                          opset_imports=[helper.make_opsetid("", 21)])
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32).astype(ml_dtypes.float8_e5m2fnuz)
    module, _ = from_onnx(m)
    got = build(module, progress=False, fallback=False).run(x)
    q = np.clip(np.round(x.astype(np.float32) / np.float32(0.05)) + 3, 0, 255)
    np.testing.assert_allclose(got, ((q - 3) * np.float32(0.05)).astype(np.float32), rtol=1e-6)
