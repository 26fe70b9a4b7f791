"""--qnn-legalize: qnn.dense / qnn.conv2d over i8 constant weights as int8
nn products (vpdpbusd where the CPU has it), exact against numpy's
integers, and onnxruntime's dynamic quantization through the backend."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

from tvmd.frontend.onnx import from_onnx  # noqa: E402
from tvmd.runtime.build import build  # noqa: E402
from tvmd.testing import onnx_zoo  # noqa: E402


def matmul_integer(m, k, n, a_dtype, zero_point_input):
    """MatMulInteger(a, b) with an i8 constant b and a's zero point a
    constant or a graph input (as DynamicQuantizeLinear makes it)."""
    rng = np.random.default_rng(m * k + n)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    at = TensorProto.UINT8 if a_dtype == np.uint8 else TensorProto.INT8
    inputs = [helper.make_tensor_value_info("a", at, [m, k])]
    inits = [onnx.numpy_helper.from_array(b, "b")]
    if zero_point_input:
        inputs.append(helper.make_tensor_value_info("za", at, []))
    else:
        inits.append(onnx.numpy_helper.from_array(np.array(131 if a_dtype == np.uint8 else -3, a_dtype), "za"))
    node = helper.make_node("MatMulInteger", ["a", "b", "za"], ["y"])
    g = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.INT32, [m, n])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), b


@pytest.mark.parametrize("m,k,n", [(5, 64, 48), (1, 768, 96), (33, 40, 200)])
@pytest.mark.parametrize("a_dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("zero_point_input", [False, True])
def test_matmul_integer_is_exact(m, k, n, a_dtype, zero_point_input):
    model, b = matmul_integer(m, k, n, a_dtype, zero_point_input)
    module, _ = from_onnx(model)
    cm = build(module, progress=False, fallback=False)
    assert cm.stats["qnn-legalize"]["products-legalized"] == 1
    rng = np.random.default_rng(7)
    info = np.iinfo(a_dtype)
    a = rng.integers(info.min, info.max + 1, (m, k)).astype(a_dtype)
    za = np.array(140 if a_dtype == np.uint8 else 5, a_dtype) if zero_point_input else None
    z = int(za) if zero_point_input else (131 if a_dtype == np.uint8 else -3)
    want = ((a.astype(np.int64) - z) @ b.astype(np.int64)).astype(np.int32)
    got = cm.run(a, za) if zero_point_input else cm.run(a)
    np.testing.assert_array_equal(got, want)


def test_dynamic_quantization_of_a_transformer_layer(tmp_path):
    """onnxruntime's quantize_dynamic on a BERT layer: DynamicQuantizeLinear
    (ui8 data, run-time zero points) and MatMulInteger by int8 weights; the
    six products legalized, close to onnxruntime's answer."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process
    model = onnx_zoo.bert_layer_onnx(seq=16, hidden=64, heads=2, ffn=128)
    model = model[0] if isinstance(model, tuple) else model
    onnx.save(model, str(tmp_path / "raw.onnx"))
    quant_pre_process(str(tmp_path / "raw.onnx"), str(tmp_path / "f32.onnx"))
    quantize_dynamic(str(tmp_path / "f32.onnx"), str(tmp_path / "q.onnx"), weight_type=QuantType.QInt8)
    q = onnx.load(str(tmp_path / "q.onnx"))
    assert sum(n.op_type == "MatMulInteger" for n in q.graph.node) == 6
    module, _ = from_onnx(q)
    cm = build(module, progress=False, fallback=False)
    assert cm.stats["qnn-legalize"]["products-legalized"] == 6
    rng = np.random.default_rng(11)
    feeds = {i.name: (rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
                      if i.name != "mask" else np.zeros([d.dim_value for d in i.type.tensor_type.shape.dim],
                                                        np.float32)) for i in model.graph.input}
    s = ort.InferenceSession(q.SerializeToString(), providers=["CPUExecutionProvider"])
    want = s.run(None, feeds)[0]
    np.testing.assert_allclose(cm.run(*feeds.values()), want, rtol=0, atol=1e-2 * np.abs(want).max())


def test_matmul_integer_over_rows_known_at_run_time():
    """A transformer's MatMulInteger: 3-d activations ('?' sequence) by a 2-d
    weight import as one qnn.dense (no batch broadcast), legalized; one
    build serves every length, exact against numpy."""
    rng = np.random.default_rng(3)
    b = rng.integers(-128, 128, (32, 24)).astype(np.int8)
    node = helper.make_node("MatMulInteger", ["a", "b", "za"], ["y"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.UINT8, [1, "seq", 32]),
                                        helper.make_tensor_value_info("za", TensorProto.UINT8, [])],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, [1, "seq", 24])],
                          [onnx.numpy_helper.from_array(b, "b")])
    module, _ = from_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
    assert "qnn.dense" in str(module) and "qnn.batch_matmul" not in str(module)
    cm = build(module, progress=False, fallback=False)
    assert cm.stats["qnn-legalize"]["products-legalized"] == 1
    for n in (1, 9, 40):
        a = rng.integers(0, 256, (1, n, 32)).astype(np.uint8)
        za = np.array(117, np.uint8)
        np.testing.assert_array_equal(cm.run(a, za), ((a.astype(np.int64) - 117) @ b.astype(np.int64)).astype(np.int32))
