"""Write a tiny ONNX model for the import-onnx lit tests.

    python make_onnx.py KIND OUT.onnx

KIND: cnn (Conv + BatchNormalization + Relu + MaxPool + Flatten + Gemm, a
dynamic batch), unsupported (an op type no converter knows, twice), shapes
(Shape / Gather / Concat / Reshape arithmetic that folds away).
Weights are deterministic so the resource section can be checked.
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as oh
from onnx import numpy_helper


def tensor(name, shape, scale=0.1):
    n = int(np.prod(shape))
    return numpy_helper.from_array((np.arange(n, dtype=np.float32) * scale).reshape(shape), name)


def cnn():
    nodes = [
        oh.make_node("Conv", ["image", "conv1.weight", "conv1.bias"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        oh.make_node("BatchNormalization", ["c1", "bn.scale", "bn.bias", "bn.mean", "bn.var"], ["b1"], name="bn1"),
        oh.make_node("Relu", ["b1"], ["r1"], name="relu1"),
        oh.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        oh.make_node("Flatten", ["p1"], ["f1"], name="flatten"),
        oh.make_node("Gemm", ["f1", "fc.weight", "fc.bias"], ["logits"], name="fc", transB=1),
    ]
    inits = [tensor("conv1.weight", (4, 3, 3, 3)), tensor("conv1.bias", (4,)), tensor("bn.scale", (4,)),
             tensor("bn.bias", (4,)), tensor("bn.mean", (4,)), tensor("bn.var", (4,), 1.0),
             tensor("fc.weight", (10, 64), 0.01), tensor("fc.bias", (10,))]
    graph = oh.make_graph(nodes, "cnn", [oh.make_tensor_value_info("image", TP.FLOAT, ["N", 3, 8, 8])],
                          [oh.make_tensor_value_info("logits", TP.FLOAT, ["N", 10])], inits)
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)])


def unsupported():
    nodes = [oh.make_node("Relu", ["x"], ["r"], name="relu"),
             oh.make_node("Frobnicate", ["r"], ["f"], name="frob1"),
             oh.make_node("Frobnicate", ["f"], ["g"], name="frob2"),
             oh.make_node("Twiddle", ["g"], ["y"], name="twiddle")]
    graph = oh.make_graph(nodes, "bad", [oh.make_tensor_value_info("x", TP.FLOAT, [4])],
                          [oh.make_tensor_value_info("y", TP.FLOAT, [4])])
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)])


def shapes():
    nodes = [oh.make_node("Shape", ["x"], ["s"], name="shape"),
             oh.make_node("Gather", ["s", "zero"], ["n"], name="batch", axis=0),
             oh.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsqueeze"),
             oh.make_node("Concat", ["n1", "minus_one"], ["newshape"], name="concat", axis=0),
             oh.make_node("Reshape", ["x", "newshape"], ["y"], name="view")]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array([0], np.int64), "axes"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus_one")]
    graph = oh.make_graph(nodes, "view", [oh.make_tensor_value_info("x", TP.FLOAT, [2, 3, 4])],
                          [oh.make_tensor_value_info("y", TP.FLOAT, [2, 12])], inits)
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)])


if __name__ == "__main__":
    kind, out = sys.argv[1], sys.argv[2]
    onnx.save({"cnn": cnn, "unsupported": unsupported, "shapes": shapes}[kind](), out)
