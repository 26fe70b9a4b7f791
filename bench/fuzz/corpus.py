"""Seeds for the fuzzer: the repository's own IR files, and small ONNX models.

IR seeds are every ``.relay``, ``.te``, ``.tir`` and ``.mlir`` file under
``test/lit`` and ``examples``, split at ``// -----`` lines (each chunk is a
seed of its own), with each seed's dialect taken from its text.

ONNX seeds are built here with ``onnx.helper``: the layers real models are
made of (conv/batch-norm/pool/gemm, attention pieces and opset 23's
Attention, LSTM and GRU, Loop and If, resize/pad/reductions,
quantize/dequantize), each a few nodes on small shapes so that a mutant
imports and compiles in well under a second.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IR_SUFFIXES = (".relay", ".te", ".tir", ".mlir")


@dataclass
class Seed:
    name: str          # where it came from, e.g. test/lit/relay/cse.relay#2
    dialect: str       # relay, te, tir, mlir or onnx
    data: bytes


def dialect_of(text: str, suffix: str) -> str:
    if "relay.func" in text or suffix == ".relay":
        return "relay"
    if "te.func" in text:
        return "te"
    if "tir.func" in text:
        return "tir"
    return "mlir"


def ir_seeds(root: str = ROOT) -> list[Seed]:
    out = []
    for base in ("test/lit", "examples"):
        for dirpath, dirs, files in os.walk(os.path.join(root, base)):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for f in sorted(files):
                suffix = os.path.splitext(f)[1]
                if suffix not in IR_SUFFIXES:
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
                rel = os.path.relpath(path, root)
                for k, chunk in enumerate(text.split("\n// -----\n")):
                    if chunk.strip():
                        out.append(Seed(f"{rel}#{k}", dialect_of(chunk, suffix), chunk.encode()))
    return out


# -- ONNX seeds ----------------------------------------------------------------

def _models():
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    F = TensorProto.FLOAT
    rng = np.random.default_rng(0)

    def w(name, *shape, dtype=np.float32):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(dtype), name)

    def i64(name, values):
        return numpy_helper.from_array(np.array(values, dtype=np.int64), name)

    def vi(name, shape, t=F):
        return helper.make_tensor_value_info(name, t, shape)

    def model(name, nodes, inputs, outputs, inits=(), opset=17):
        g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
        return name, helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])

    N = helper.make_node
    yield model("cnn", [
        N("Conv", ["x", "cw", "cb"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1], name="conv"),
        N("BatchNormalization", ["c", "g", "b", "m", "v"], ["bn"], epsilon=1e-5),
        N("Relu", ["bn"], ["r"]),
        N("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        N("GlobalAveragePool", ["p"], ["gp"]),
        N("Flatten", ["gp"], ["f"], axis=1),
        N("Gemm", ["f", "fw", "fb"], ["y0"], transB=1),
        N("Softmax", ["y0"], ["y"], axis=-1),
    ], [vi("x", [1, 3, 8, 8])], [vi("y", [1, 5])],
        [w("cw", 4, 3, 3, 3), w("cb", 4), w("g", 4), w("b", 4), w("m", 4),
         numpy_helper.from_array(np.ones(4, np.float32), "v"), w("fw", 5, 4), w("fb", 5)])
    yield model("depthwise", [
        N("Conv", ["x", "dw"], ["d"], group=4, pads=[1, 1, 1, 1], name="dw"),
        N("Clip", ["d", "lo", "hi"], ["c"]),
        N("Conv", ["c", "pw"], ["p"], kernel_shape=[1, 1]),
        N("AveragePool", ["p"], ["a"], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0]),
        N("Add", ["a", "bias"], ["y"]),
    ], [vi("x", [1, 4, 6, 6])], [vi("y", [1, 8, 3, 3])],
        [w("dw", 4, 1, 3, 3), w("pw", 8, 4, 1, 1), w("bias", 8, 1, 1),
         numpy_helper.from_array(np.array(0, np.float32), "lo"),
         numpy_helper.from_array(np.array(6, np.float32), "hi")])
    yield model("attention", [
        N("MatMul", ["x", "wq"], ["q"]), N("MatMul", ["x", "wk"], ["k"]), N("MatMul", ["x", "wv"], ["v"]),
        N("Reshape", ["q", "shp"], ["q4"]), N("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
        N("Reshape", ["k", "shp"], ["k4"]), N("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
        N("Reshape", ["v", "shp"], ["v4"]), N("Transpose", ["v4"], ["vt"], perm=[0, 2, 1, 3]),
        N("MatMul", ["qt", "kt"], ["s"]), N("Div", ["s", "scale"], ["ss"]),
        N("Add", ["ss", "mask"], ["sm"]), N("Softmax", ["sm"], ["pr"], axis=-1),
        N("MatMul", ["pr", "vt"], ["o"]), N("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
        N("Reshape", ["ot", "shp3"], ["o3"]),
        N("LayerNormalization", ["o3", "lg", "lb"], ["ln"], axis=-1, epsilon=1e-5),
        N("Erf", ["ln"], ["y"]),
    ], [vi("x", [1, 4, 8])], [vi("y", [1, 4, 8])],
        [w("wq", 8, 8), w("wk", 8, 8), w("wv", 8, 8), i64("shp", [1, 4, 2, 4]), i64("shp3", [1, 4, 8]),
         numpy_helper.from_array(np.array(2.0, np.float32), "scale"),
         numpy_helper.from_array(np.triu(np.full((4, 4), -1e4, np.float32), 1), "mask"),
         w("lg", 8), w("lb", 8)])
    yield model("attention23", [   # ONNX's Attention: a KV cache, grouped heads, a bool mask, causal
        N("Attention", ["q", "k", "v", "mask", "pk", "pv"], ["y", "presk", "presv"], is_causal=1),
        N("Sigmoid", ["y"], ["ys"]),
    ], [vi("q", [1, 4, 3, 8]), vi("k", [1, 2, 3, 8]), vi("v", [1, 2, 3, 8]),
        vi("mask", [1, 1, 3, 5], TensorProto.BOOL), vi("pk", [1, 2, 2, 8]), vi("pv", [1, 2, 2, 8])],
        [vi("ys", [1, 4, 3, 8]), vi("presk", [1, 2, 5, 8]), vi("presv", [1, 2, 5, 8])], opset=23)
    yield model("shapes", [
        N("Split", ["x", "sp"], ["a", "b"], axis=1),
        N("Concat", ["b", "a"], ["c"], axis=1),
        N("Slice", ["c", "st", "en", "ax"], ["s"]),
        N("Gather", ["s", "idx"], ["g"], axis=1),
        N("Unsqueeze", ["g", "ax"], ["u"]),
        N("Squeeze", ["u", "ax"], ["q"]),
        N("Expand", ["q", "es"], ["e"]),
        N("Where", ["cond", "e", "zero"], ["y"]),
    ], [vi("x", [2, 6])], [vi("y", [2, 2])],
        [i64("sp", [2, 4]), i64("st", [1]), i64("en", [5]), i64("ax", [1]), i64("idx", [0, 3]),
         i64("es", [2, 2]), numpy_helper.from_array(np.array([[True, False], [False, True]]), "cond"),
         numpy_helper.from_array(np.zeros((2, 2), np.float32), "zero")])
    yield model("reduce", [
        N("Pad", ["x", "pads"], ["p"], mode="reflect"),
        N("Resize", ["p", "", "scales"], ["r"], mode="nearest"),
        N("ReduceMean", ["r"], ["m"], axes=[2, 3], keepdims=1),
        N("Sub", ["r", "m"], ["d"]),
        N("Cast", ["d"], ["c"], to=TensorProto.DOUBLE),
        N("Cast", ["c"], ["y0"], to=TensorProto.FLOAT),
        N("ReduceMax", ["y0"], ["y"], axes=[1], keepdims=0),
    ], [vi("x", [1, 2, 4, 4])], [vi("y", [1, 12, 12])],
        [i64("pads", [0, 0, 1, 1, 0, 0, 1, 1]),
         numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")], opset=13)
    yield model("lstm", [
        N("LSTM", ["x", "W", "R", "B"], ["Y", "Yh", "Yc"], hidden_size=3),
        N("Squeeze", ["Y", "one"], ["y"]),
    ], [vi("x", [4, 1, 2])], [vi("y", [4, 1, 3])],
        [w("W", 1, 12, 2), w("R", 1, 12, 3), w("B", 1, 24), i64("one", [1])])
    yield model("gru", [
        N("GRU", ["x", "W", "R", "B"], ["Y", "Yh"], hidden_size=3, direction="bidirectional"),
    ], [vi("x", [3, 1, 2])], [vi("Yh", [2, 1, 3])],
        [w("W", 2, 9, 2), w("R", 2, 9, 3), w("B", 2, 18)])
    body = helper.make_graph(
        [N("Add", ["acc", "step"], ["acc2"]), N("Identity", ["cond"], ["cond2"])], "body",
        [vi("i", [], TensorProto.INT64), vi("cond", [], TensorProto.BOOL), vi("acc", [2])],
        [vi("cond2", [], TensorProto.BOOL), vi("acc2", [2])],
        initializer=[numpy_helper.from_array(np.ones(2, np.float32), "step")])
    yield model("loop", [
        N("Loop", ["trip", "true", "x"], ["y"], body=body),
    ], [vi("x", [2])], [vi("y", [2])],
        [i64("trip", 5), numpy_helper.from_array(np.array(True), "true")])
    then_g = helper.make_graph([N("Relu", ["x"], ["t"])], "then", [], [vi("t", [3])])
    else_g = helper.make_graph([N("Neg", ["x"], ["e"])], "else", [], [vi("e", [3])])
    yield model("if", [
        N("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
    ], [vi("x", [3])], [vi("y", [3])], [numpy_helper.from_array(np.array(True), "c")])
    yield model("qdq", [
        N("QuantizeLinear", ["x", "s", "z"], ["q"]),
        N("DequantizeLinear", ["q", "s", "z"], ["d"]),
        N("MatMul", ["d", "mw"], ["y"]),
    ], [vi("x", [2, 4])], [vi("y", [2, 3])],
        [numpy_helper.from_array(np.array(0.05, np.float32), "s"),
         numpy_helper.from_array(np.array(3, np.uint8), "z"), w("mw", 4, 3)])


def onnx_seeds() -> list[Seed]:
    try:
        import onnx  # noqa: F401
    except ImportError:
        return []
    return [Seed(f"onnx:{name}", "onnx", m.SerializeToString()) for name, m in _models()]
