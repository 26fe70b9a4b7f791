"""Unsigned integers through compiled code: max, min, comparisons and
division read uiN bits as unsigned (arith.maxui / minui / divui / remui and
the u-predicates of cmpi), wherever the te builder makes them, in pooling
windows and reductions as in elementwise ops.  A QOperator model max-pools
its uint8 activations: read as signed, every value past 127 lost to the
others (ResNet-18's outputs were 11 steps off onnxruntime's).  Checked
against onnxruntime on values spread over the whole range."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from tvmd.frontend.onnx import from_onnx
from tvmd.runtime.build import build

TYPES = {"uint8": TensorProto.UINT8, "uint32": TensorProto.UINT32, "int8": TensorProto.INT8}


def _compare(node, shapes, dtype, out_type=None, seed=0, inits=()):
    t = TYPES[dtype]
    ins = [helper.make_tensor_value_info(n, t, s) for n, s in shapes.items()]
    out = helper.make_tensor_value_info("y", out_type or t, None)
    model = helper.make_model(helper.make_graph([node], "u", ins, [out], initializer=list(inits)),
                              opset_imports=[helper.make_opsetid("", 17)])
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    feeds = {n: rng.integers(max(info.min, 1 if n == "b" else info.min), info.max, s, endpoint=True).astype(dtype)
             for n, s in shapes.items()}
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    module, _ = from_onnx(model)
    got = build(module, progress=False, fallback=False).run(*feeds.values())
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("attrs", [dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                                   dict(kernel_shape=[2, 2], strides=[2, 2])])
def test_max_pool(dtype, attrs):
    _compare(helper.make_node("MaxPool", ["x"], ["y"], **attrs), {"x": [1, 16, 13, 13]}, dtype)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_reduce(op):
    _compare(helper.make_node(op, ["x"], ["y"], axes=[1, 2], keepdims=0), {"x": [3, 17, 5]}, "uint8")


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_reduce(op):
    _compare(helper.make_node(op, ["x"], ["y"], axis=1), {"x": [4, 37]}, "uint8", TensorProto.INT64)


@pytest.mark.parametrize("op,dtype", [("Div", "uint8"), ("Div", "uint32"), ("Mod", "uint8"), ("Max", "uint8"),
                                      ("Min", "uint32")])
def test_binary(op, dtype):
    _compare(helper.make_node(op, ["a", "b"], ["y"]), {"a": [8, 32], "b": [32]}, dtype)


def test_clip():
    bounds = [helper.make_tensor(n, TensorProto.UINT8, [], [v]) for n, v in (("lo", 100), ("hi", 200))]
    _compare(helper.make_node("Clip", ["x", "lo", "hi"], ["y"]), {"x": [4, 33]}, "uint8", inits=bounds)
