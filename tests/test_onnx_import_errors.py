"""Broken ONNX models get a clean, located error from the importer: an
OnnxImportError (UnsupportedOpError for what is valid but beyond the
importer) whose message names the node, tensor or value and what is wrong;
tvm-translate --import-onnx prints it and exits 1, with no traceback.
Every model is built here with onnx.helper.  Also: unrolling is bounded
and an LSTM imports in time linear in its sequence length."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as oh  # noqa: E402
from onnx import numpy_helper  # noqa: E402

from tvmd.frontend.onnx import OnnxImportError, UnsupportedOpError, from_onnx  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from tools import run_tool  # noqa: E402

X = oh.make_tensor_value_info("x", TP.FLOAT, [2, 3])
Y = oh.make_tensor_value_info("y", TP.FLOAT, [2, 3])


def model(nodes, inputs=(X,), outputs=(Y,), inits=(), opset=17):
    g = oh.make_graph(nodes, "g", list(inputs), list(outputs), initializer=list(inits))
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", opset)])


def relu(inp="x", out="y", name="r"):
    return oh.make_node("Relu", [inp], [out], name=name)


def raw_short():
    t = numpy_helper.from_array(np.zeros((2, 3), np.float32), "w")
    t.raw_data = b"\0" * 8
    return t


def typed_short():
    t = oh.make_tensor("w", TP.FLOAT, [1, 2], [1.0, 2.0])
    t.dims[:] = [2, 3]
    return t


def negative_dims():
    t = oh.make_tensor("w", TP.FLOAT, [1, 2], [1.0, 2.0])
    t.dims[:] = [2, -1]
    return t


def ones_w():
    return numpy_helper.from_array(np.ones((2, 3), np.float32), "w")


def add_w(w):
    return model([oh.make_node("Add", ["x", "w"], ["y"], name="add")], inits=[w])


def constant_node(t):
    return model([oh.make_node("Constant", [], ["c"], name="c", value=t),
                  oh.make_node("Add", ["x", "c"], ["y"], name="add")])


def bad_attr_type():
    n = oh.make_node("Transpose", ["x"], ["y"], name="t")
    n.attribute.append(oh.make_attribute("perm", "1,0"))
    return model([n], outputs=[oh.make_tensor_value_info("y", TP.FLOAT, [3, 2])])


def loop_model(trip, with_cond, grow=False):
    """A Loop whose trip count M is a constant `trip`; the body passes its
    condition (true) through and adds 1 to a carried value (`grow`: appends
    a row to it, so it changes shape each iteration and the loop is unrolled)."""
    inc = (oh.make_node("Concat", ["v_in", "one"], ["v_out"], name="inc", axis=0) if grow
           else oh.make_node("Add", ["v_in", "one"], ["v_out"], name="inc"))
    vshape = None if grow else [2, 3]
    body = oh.make_graph(
        [oh.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"), inc], "body",
        [oh.make_tensor_value_info("i", TP.INT64, []), oh.make_tensor_value_info("cond_in", TP.BOOL, []),
         oh.make_tensor_value_info("v_in", TP.FLOAT, vshape)],
        [oh.make_tensor_value_info("cond_out", TP.BOOL, []), oh.make_tensor_value_info("v_out", TP.FLOAT, vshape)])
    inits = [numpy_helper.from_array(np.array(trip, np.int64), "M"),
             numpy_helper.from_array(np.array(True), "cond"),
             numpy_helper.from_array(np.ones((1, 3) if grow else (), np.float32), "one")]
    loop = oh.make_node("Loop", ["M", "cond" if with_cond else "", "x"], ["y"], name="loop", body=body)
    return model([loop], inits=inits)


def loop_body_reads(name):
    """A 2-iteration Loop whose body's Add reads `name`."""
    m = loop_model(2, False)
    m.graph.node[0].attribute[0].g.node[1].input[1] = name
    return m


def lstm_model(seq, hidden=4, inp=3):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((1, 4 * hidden, inp)).astype(np.float32), "W")
    r = numpy_helper.from_array(rng.standard_normal((1, 4 * hidden, hidden)).astype(np.float32), "R")
    n = oh.make_node("LSTM", ["x", "W", "R"], ["y"], hidden_size=hidden, name="lstm")
    return model([n], [oh.make_tensor_value_info("x", TP.FLOAT, [seq, 1, inp])],
                 [oh.make_tensor_value_info("y", TP.FLOAT, None)], [w, r], opset=14)


def cast_to(to, opset=17):
    n = oh.make_node("Cast", ["x"], ["y"], name="cast")
    n.attribute.append(oh.make_attribute("to", to))
    return model([n], opset=opset)


def typed_input(elem):
    return model([relu()], inputs=[oh.make_tensor_value_info("x", elem, [2, 3])])


def empty_graph_outputs():
    m = model([relu()])
    del m.graph.output[:]
    return m


def non_utf8_op_type():
    """protobuf hands a string that is not valid UTF-8 over as bytes."""
    m = model([relu()])
    raw = m.SerializeToString().replace(b"Relu", b"Rel\xe1", 1)
    return onnx.load_from_string(raw)


def op_before_its_opset(op, inputs, opset, **attrs):
    """`op` in a model whose opset is older than the op (the schema check,
    which the op's converter relies on, had no schema to check against)."""
    inits = [numpy_helper.from_array(np.array(1.0, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.uint8), "z")]
    return model([oh.make_node(op, inputs, ["y"], name="n", **attrs)], opset=opset, inits=inits,
                 outputs=[oh.make_tensor_value_info("y", TP.FLOAT, None)])


def group_norm(groups, c=4, opset=18):
    scale = numpy_helper.from_array(np.ones(groups if groups > 0 else 1, np.float32), "s")
    bias = numpy_helper.from_array(np.zeros(groups if groups > 0 else 1, np.float32), "b")
    return model([oh.make_node("GroupNormalization", ["x", "s", "b"], ["y"], name="gn", num_groups=groups)],
                 inputs=[oh.make_tensor_value_info("x", TP.FLOAT, [1, c, 2, 2])],
                 outputs=[oh.make_tensor_value_info("y", TP.FLOAT, None)], inits=[scale, bias], opset=opset)


def gru_model(x_dims, hidden=4, inp=3, w_dims=None, **attrs):
    h = max(hidden, 1)
    w = numpy_helper.from_array(np.zeros(w_dims or (1, 3 * h, inp), np.float32), "W")
    r = numpy_helper.from_array(np.zeros((1, 3 * h, h), np.float32), "R")
    n = oh.make_node("GRU", ["x", "W", "R"], ["y"], hidden_size=hidden, name="gru", **attrs)
    return model([n], [oh.make_tensor_value_info("x", TP.FLOAT, x_dims)],
                 [oh.make_tensor_value_info("y", TP.FLOAT, None)], [w, r], opset=14)


def lstm_x(dims):
    m = lstm_model(4)
    shape = m.graph.input[0].type.tensor_type.shape
    del shape.dim[:]
    for d in dims:
        shape.dim.add().dim_value = d
    return m


def layer_norm_no_bias():
    s = numpy_helper.from_array(np.ones(3, np.float32), "s")
    return model([oh.make_node("LayerNormalization", ["x", "s"], ["y"], name="ln")], inits=[s])


def undeclared_attribute():
    """An attribute the op's schema does not declare (LSTM's layout is new
    in opset 14) is not read, whatever its type."""
    m = lstm_model(2)
    m.opset_import[0].version = 7
    m.graph.node[0].attribute.append(oh.make_attribute("layout", "batch"))
    return m


def undefined_attribute_type():
    n = oh.make_node("Transpose", ["x"], ["y"], name="t")
    n.attribute.append(onnx.AttributeProto(name="perm", type=onnx.AttributeProto.UNDEFINED))
    return model([n], outputs=[oh.make_tensor_value_info("y", TP.FLOAT, [3, 2])])


def nested_loops(outer, inner):
    """A Loop of `outer` iterations whose body is a Loop of `inner`, both
    unrolled (their state grows)."""
    m = loop_model(outer, False, grow=True)
    inner_m = loop_model(inner, False, grow=True)
    inner_loop = inner_m.graph.node[0]
    inner_loop.name = "inner"
    inner_loop.input[:] = ["N", "", "v_in"]
    inner_loop.output[:] = ["v_out"]
    body = m.graph.node[0].attribute[0].g
    del body.node[1]
    body.node.append(inner_loop)
    m.graph.initializer.append(numpy_helper.from_array(np.array(inner, np.int64), "N"))
    return m


def dropout_mask(dims):
    n = oh.make_node("Dropout", ["x"], ["y", "mask"], name="drop")
    return model([n], inputs=[oh.make_tensor_value_info("x", TP.FLOAT, dims)],
                 outputs=[oh.make_tensor_value_info("y", TP.FLOAT, None),
                          oh.make_tensor_value_info("mask", TP.BOOL, None)])


def trilu_big():
    return model([oh.make_node("Trilu", ["x"], ["y"], name="tri")],
                 inputs=[oh.make_tensor_value_info("x", TP.FLOAT, [2 ** 20, 2 ** 20])],
                 outputs=[oh.make_tensor_value_info("y", TP.FLOAT, None)])


def recursive_function():
    f = oh.make_function("loc", "F", ["a"], ["b"], [oh.make_node("F", ["a"], ["b"], domain="loc")],
                         [oh.make_opsetid("", 17), oh.make_opsetid("loc", 1)])
    m = model([oh.make_node("F", ["x"], ["y"], name="f", domain="loc")])
    m.opset_import.append(oh.make_opsetid("loc", 1))
    m.functions.append(f)
    return m


def loop_trip_tensor(values):
    """A Loop whose trip count M holds `values` (it must hold one)."""
    m = loop_model(2, False)
    m.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.array(values, np.int64), "M"))
    return m


def scan_num_inputs(m):
    body = oh.make_graph([oh.make_node("Identity", ["s"], ["so"], name="id")], "body",
                         [oh.make_tensor_value_info("s", TP.FLOAT, [3])],
                         [oh.make_tensor_value_info("so", TP.FLOAT, [3])])
    return model([oh.make_node("Scan", ["x"], ["y"], name="scan", body=body, num_scan_inputs=m)])


BIG = 2 ** 40

# id -> (model builder, error class, facts the message must hold)
def matmul_batches(a, b):
    A = oh.make_tensor_value_info("a", TP.FLOAT, a)
    B = oh.make_tensor_value_info("b", TP.FLOAT, b)
    Yo = oh.make_tensor_value_info("y", TP.FLOAT, None)
    return model([oh.make_node("MatMul", ["a", "b"], ["y"], name="mm")], inputs=(A, B), outputs=(Yo,))


def clip_vector_max():
    hi = numpy_helper.from_array(np.full((3,), 6.0, np.float32), "hi")
    return model([oh.make_node("Clip", ["x", "", "hi"], ["y"], name="c")], inits=[hi])


def conv_transpose_short_attr():
    X4 = oh.make_tensor_value_info("x", TP.FLOAT, [1, 2, 4, 4])
    Yo = oh.make_tensor_value_info("y", TP.FLOAT, None)
    w = numpy_helper.from_array(np.ones((2, 3, 3, 3), np.float32), "w")
    node = oh.make_node("ConvTranspose", ["x", "w"], ["y"], name="ct", strides=[2], auto_pad="SAME_UPPER")
    return model([node], inputs=(X4,), outputs=(Yo,), inits=[w])


def sequence_map_of_a_tensor():
    body = oh.make_graph([oh.make_node("Relu", ["e"], ["r"])], "body",
                         [oh.make_tensor_value_info("e", TP.FLOAT, [2, 3])],
                         [oh.make_tensor_value_info("r", TP.FLOAT, [2, 3])])
    Yo = oh.make_tensor_value_info("y", TP.FLOAT, None)
    node = oh.make_node("SequenceMap", ["x"], ["y"], name="sm", body=body)
    return model([node], outputs=(Yo,))


def resize_infinite_scale():
    X4 = oh.make_tensor_value_info("x", TP.FLOAT, [1, 1, 2, 2])
    Yo = oh.make_tensor_value_info("y", TP.FLOAT, None)
    scales = numpy_helper.from_array(np.array([np.inf, 1, 2, 2], np.float32), "scales")
    node = oh.make_node("Resize", ["x", "", "scales"], ["y"], name="rs", mode="nearest")
    return model([node], inputs=(X4,), outputs=(Yo,), inits=[scales])


def split_to_sequence_2d_split():
    split = numpy_helper.from_array(np.ones((2, 2), np.int64), "split")
    Yo = oh.make_tensor_sequence_value_info("y", TP.FLOAT, None)
    node = oh.make_node("SplitToSequence", ["x", "split"], ["y"], name="sts", axis=1)
    return model([node], outputs=(Yo,), inits=[split])


def hardmax_of_a_scalar():
    S = oh.make_tensor_value_info("x", TP.FLOAT, [])
    So = oh.make_tensor_value_info("y", TP.FLOAT, [])
    return model([oh.make_node("Hardmax", ["x"], ["y"], name="hm")], inputs=(S,), outputs=(So,))


def initializer_rank_65():
    w = numpy_helper.from_array(np.ones((1,), np.float32), "w")
    w.dims[:] = [1] * 65
    return model([oh.make_node("Add", ["x", "w"], ["y"], name="a")], inits=[w])


CASES = {
    "add_one_input": (lambda: model([oh.make_node("Add", ["x"], ["y"], name="add")]), OnnxImportError,
                      ["node 'add' (Add)", "required input 1 ('B') is missing"]),
    "conv_no_inputs": (lambda: model([oh.make_node("Conv", [], ["y"], name="conv")]), OnnxImportError,
                       ["node 'conv' (Conv)", "required input 0 ('X') is missing"]),
    "gemm_empty_names": (lambda: model([oh.make_node("Gemm", ["", "", ""], ["y"], name="gemm")]), OnnxImportError,
                         ["node 'gemm' (Gemm)", "required input 0 ('A') is missing (its name is empty)"]),
    "gemm_empty_b": (lambda: model([oh.make_node("Gemm", ["x", "", "x"], ["y"], name="gemm")]), OnnxImportError,
                     ["node 'gemm' (Gemm)", "required input 1 ('B')"]),
    "too_many_inputs": (lambda: model([oh.make_node("Relu", ["x", "x"], ["y"], name="r")]), OnnxImportError,
                        ["node 'r' (Relu)", "at most 1 input(s), given 2"]),
    "too_many_outputs": (lambda: model([oh.make_node("Relu", ["x"], ["y", "z"], name="r")]), OnnxImportError,
                         ["node 'r' (Relu)", "2 output(s)"]),
    "missing_attribute": (lambda: model([oh.make_node("Concat", ["x", "x"], ["y"], name="cat")]), OnnxImportError,
                          ["node 'cat' (Concat)", "required attribute 'axis' is missing"]),
    "attribute_type": (bad_attr_type, OnnxImportError,
                       ["node 't' (Transpose)", "attribute 'perm' must be INTS, got STRING"]),
    "initializer_raw_length": (lambda: add_w(raw_short()), OnnxImportError,
                               ["initializer 'w'", "[2, 3]", "24 bytes", "raw_data holds 8 bytes"]),
    "initializer_typed_length": (lambda: add_w(typed_short()), OnnxImportError,
                                 ["initializer 'w'", "[2, 3]", "6 elements", "float_data holds 2 values"]),
    "initializer_negative_dims": (lambda: add_w(negative_dims()), OnnxImportError,
                                  ["initializer 'w'", "negative dimension in [2, -1]"]),
    "initializer_unused_bad": (lambda: model([relu()], inits=[raw_short()]), OnnxImportError,
                               ["initializer 'w'", "raw_data holds 8 bytes"]),
    "initializer_undefined": (lambda: add_w(onnx.TensorProto(name="w", dims=[2, 3])), OnnxImportError,
                              ["initializer 'w'", "no element type (UNDEFINED)"]),
    "initializer_complex": (lambda: add_w(oh.make_tensor("w", TP.COMPLEX64, [1], [1 + 2j])), UnsupportedOpError,
                            ["node 'add' (Add)", "'w' is COMPLEX64 tensors"]),
    "initializer_string_raw": (lambda: model([relu()], inits=[onnx.TensorProto(name="w", data_type=TP.STRING,
                                                                              raw_data=b"\x05" + bytes(7))]),
                               OnnxImportError, ["initializer 'w'", "STRING tensor with raw_data"]),
    "initializer_string_count": (lambda: model([relu()], inits=[onnx.TensorProto(name="w", data_type=TP.STRING, dims=[3],
                                                                                string_data=[b"a", b"b"])]),
                                 OnnxImportError, ["initializer 'w'", "[3] (3 elements)", "string_data holds 2"]),
    "constant_raw_length": (lambda: constant_node(raw_short()), OnnxImportError,
                            ["node 'c' (Constant)", "'value' tensor has dims [2, 3]", "raw_data holds 8 bytes"]),
    "constant_typed_length": (lambda: constant_node(typed_short()), OnnxImportError,
                              ["node 'c' (Constant)", "float_data holds 2 values"]),
    "constant_negative_dims": (lambda: constant_node(negative_dims()), OnnxImportError,
                               ["node 'c' (Constant)", "negative dimension"]),
    "no_graph": (lambda: onnx.ModelProto(), OnnxImportError, ["not an ONNX model", "no graph"]),
    "no_outputs": (empty_graph_outputs, OnnxImportError, ["graph 'g' has no outputs"]),
    "opset_0": (lambda: model([relu()], opset=0), OnnxImportError, ["opset version 0", "ai.onnx"]),
    "opset_negative": (lambda: model([relu()], opset=-1), OnnxImportError, ["opset version -1"]),
    "opset_too_new": (lambda: model([relu()], opset=99999), OnnxImportError,
                      ["unsupported opset version 99999", f"1 to {onnx.defs.onnx_opset_version()}"]),
    "input_negative_dim": (lambda: model([relu()], inputs=[oh.make_tensor_value_info("x", TP.FLOAT, [2, -3])]),
                           OnnxImportError, ["graph input 'x'", "negative dimension in [2, -3]"]),
    "output_negative_dim": (lambda: model([relu()], outputs=[oh.make_tensor_value_info("y", TP.FLOAT, ["n", -1])]),
                            OnnxImportError, ["graph output 'y'", "negative dimension in [n, -1]"]),
    "input_huge_dims": (lambda: model([relu()], inputs=[oh.make_tensor_value_info("x", TP.FLOAT, [BIG, BIG])],
                                      outputs=[oh.make_tensor_value_info("y", TP.FLOAT, None)]),
                        OnnxImportError, ["graph input 'x'", f"[{BIG}, {BIG}]", "more than int64 can count"]),
    "huge_constant": (lambda: model([oh.make_node("EyeLike", ["x"], ["y"], name="eye")],
                                    inputs=[oh.make_tensor_value_info("x", TP.FLOAT, [2 ** 31, 2 ** 31])],
                                    outputs=[oh.make_tensor_value_info("y", TP.FLOAT, None)]),
                      UnsupportedOpError, ["node 'eye' (EyeLike)", "a constant too large"]),
    "duplicate_outputs": (lambda: model([relu()], outputs=[Y, Y]), OnnxImportError, ["lists output 'y' twice"]),
    "duplicate_inputs": (lambda: model([relu()], inputs=[X, X]), OnnxImportError, ["lists input 'x' twice"]),
    "duplicate_initializers": (lambda: model([relu()], inits=[ones_w(), ones_w()]), OnnxImportError,
                               ["two initializers named 'w'"]),
    "value_defined_twice": (lambda: model([relu("x", "y", "r1"), relu("x", "y", "r2")]), OnnxImportError,
                            ["node 'r2' (Relu)", "output 'y' is already defined by node 'r1' (Relu)"]),
    "node_redefines_input": (lambda: model([relu("x", "x", "r1"), relu("x", "y", "r2")]), OnnxImportError,
                             ["node 'r1' (Relu)", "output 'x' is already defined by a graph input"]),
    "undefined_input": (lambda: model([relu("z")]), OnnxImportError,
                        ["node 'r' (Relu)", "input 'z' is not defined"]),
    "not_topological": (lambda: model([relu("a", "y", "late"), relu("x", "a", "early")]), OnnxImportError,
                        ["node 'late' (Relu)", "input 'a' is produced by node 'early' (Relu)", "topological order"]),
    "cycle": (lambda: model([relu("b", "a", "r1"), relu("a", "b", "r2"), relu("a", "y", "r3")]), OnnxImportError,
              ["node 'r1' (Relu)", "input 'b' is produced by node 'r2' (Relu)"]),
    "unknown_op": (lambda: model([oh.make_node("FooBar", ["x"], ["y"], name="foo")]), UnsupportedOpError,
                   ["node 'foo' (FooBar)", "unsupported ONNX op type: FooBar"]),
    "unknown_domain": (lambda: model([oh.make_node("Relu", ["x"], ["y"], name="r", domain="com.example")]),
                       UnsupportedOpError, ["node 'r' (Relu)", "unsupported ONNX op type: com.example.Relu"]),
    "cast_unknown_dtype": (lambda: cast_to(99), OnnxImportError, ["node 'cast' (Cast)", "unknown element type 99"]),
    "cast_undefined": (lambda: cast_to(0), OnnxImportError, ["node 'cast' (Cast)", "UNDEFINED"]),
    "cast_v1_unknown_name": (lambda: cast_to("NOPE", opset=5), OnnxImportError,
                             ["node 'cast' (Cast)", "unknown element type 'NOPE'"]),
    "input_undefined_dtype": (lambda: typed_input(TP.UNDEFINED), OnnxImportError,
                              ["graph input 'x'", "no element type (UNDEFINED)"]),
    "input_unknown_dtype": (lambda: typed_input(99), OnnxImportError, ["graph input 'x'", "unknown element type 99"]),
    "subgraph_undefined_input": (lambda: loop_body_reads("nope"), OnnxImportError,
                                 ["node 'inc' (Add)", "input 'nope' is not defined"]),
    "loop_static_trip": (lambda: loop_model(10 ** 9, False, grow=True), UnsupportedOpError,
                         ["node 'loop' (Loop)", "1000000000 iterations", "at most 1024"]),
    "loop_static_trip_cond": (lambda: loop_model(10 ** 9, True, grow=True), UnsupportedOpError,
                              ["node 'loop' (Loop)", "more than 1024 iterations", "M is 1000000000"]),
    # fuzz findings: each was a Python exception out of the importer
    "non_utf8_op_type": (non_utf8_op_type, OnnxImportError, ["node 'r'", "op_type", "not valid UTF-8"]),
    "op_before_its_opset": (lambda: op_before_its_opset("QuantizeLinear", ["", "s", "z"], 1), OnnxImportError,
                            ["node 'n' (QuantizeLinear)", "not in opset 1", "first appears in opset 10"]),
    "op_before_its_opset_no_inputs": (lambda: op_before_its_opset("CumProd", ["x"], 17), OnnxImportError,
                                      ["node 'n' (CumProd)", "not in opset 17"]),
    "group_norm_old_opset": (lambda: group_norm(2, opset=17), OnnxImportError,
                             ["node 'gn' (GroupNormalization)", "not in opset 17", "opset 18"]),
    "group_norm_groups_divide": (lambda: group_norm(3), OnnxImportError,
                                 ["node 'gn' (GroupNormalization)", "num_groups", "divide the 4 channels"]),
    "group_norm_groups_zero": (lambda: group_norm(0), OnnxImportError,
                               ["node 'gn' (GroupNormalization)", "num_groups must be positive"]),
    "gru_x_rank_2": (lambda: gru_model([1, 2]), OnnxImportError,
                     ["node 'gru' (GRU)", "input X must be 3-d", "tensor<1x2xf32>"]),
    "lstm_x_rank_4": (lambda: lstm_x([4, 1, 3, 1]), OnnxImportError,
                      ["node 'lstm' (LSTM)", "input X must be 3-d"]),
    "gru_w_shape": (lambda: gru_model([2, 1, 3], w_dims=(1, 12, 5)), OnnxImportError,
                    ["node 'gru' (GRU)", "W must have shape [1, 12, 3]", "tensor<1x12x5xf32>"]),
    "gru_hidden_negative": (lambda: gru_model([2, 1, 3], hidden=-2, w_dims=(1, 3, 3)), OnnxImportError,
                            ["node 'gru' (GRU)", "hidden_size must be positive, got -2"]),
    "gru_activations_count": (lambda: gru_model([2, 1, 3], activations=["Sigmoid"]), OnnxImportError,
                              ["node 'gru' (GRU)", "activations must name 2 function(s) per direction"]),
    "attribute_undefined_type": (undefined_attribute_type, OnnxImportError,
                                 ["node 't' (Transpose)", "attribute 'perm' must be INTS, got UNDEFINED"]),
    "dropout_mask_too_large": (lambda: dropout_mask([2 ** 20, 2 ** 20]), UnsupportedOpError,
                               ["node 'drop' (Dropout)", "the mask", "a constant too large",
                                "TVMD_MAX_CONSTANT_BYTES"]),
    "trilu_mask_too_large": (trilu_big, UnsupportedOpError,
                             ["node 'tri' (Trilu)", "a constant too large"]),
    "function_recursion": (recursive_function, OnnxImportError, ["function 'loc.F' calls itself"]),
    "loop_trip_empty": (lambda: loop_trip_tensor([]), OnnxImportError,
                        ["node 'loop' (Loop)", "trip count M must hold one value", "tensor<0xi64>"]),
    "scan_num_scan_inputs": (lambda: scan_num_inputs(3), OnnxImportError,
                             ["node 'scan' (Scan)", "num_scan_inputs must be 1 to its 1", "got 3"]),
    # found by bench/fuzz: numpy's ValueError escaped from each
    "matmul_batches_do_not_broadcast": (lambda: matmul_batches([4, 2, 3, 5], [1, 4, 5, 2]), OnnxImportError,
                                        ["node 'mm' (MatMul)", "batch dimensions [4, 2] and [1, 4] do not broadcast"]),
    "clip_vector_bound": (clip_vector_max, OnnxImportError, ["node 'c' (Clip)", "max must be a scalar",
                                                             "tensor<3xf32>"]),
    "conv_transpose_short_strides": (conv_transpose_short_attr, OnnxImportError,
                                     ["node 'ct' (ConvTranspose)", "do not match 2 spatial axes"]),
    "sequence_map_of_a_tensor": (sequence_map_of_a_tensor, OnnxImportError,
                                 ["node 'sm' (SequenceMap)", "its first input must be a sequence"]),
    "resize_infinite_scale": (resize_infinite_scale, OnnxImportError,
                              ["node 'rs' (Resize)", "scales must be positive and finite"]),
    "split_to_sequence_2d_split": (split_to_sequence_2d_split, OnnxImportError,
                                   ["node 'sts' (SplitToSequence)", "split must be a scalar or 1-D"]),
    "hardmax_of_a_scalar": (hardmax_of_a_scalar, OnnxImportError, ["node 'hm' (Hardmax)", "input is a scalar"]),
    "initializer_rank_65": (initializer_rank_65, OnnxImportError,
                            ["initializer 'w' has 65 dimensions, more than the 64"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_import_error(case):
    build, cls, facts = CASES[case]
    with pytest.raises(cls) as info:
        from_onnx(build())
    msg = info.value.diagnostics[0].message
    for fact in facts:
        assert fact in msg, (fact, msg)


def test_empty_bytes():
    with pytest.raises(OnnxImportError, match="not an ONNX model"):
        from_onnx(b"")


def test_valid_neighbours_still_import():
    """What the checks must let through: an optional input omitted by an
    empty name, an initializer repeated as a graph input, a small loop, a
    symbolic dimension."""
    w = numpy_helper.from_array(np.ones((3, 2), np.float32), "w")
    gemm = model([oh.make_node("Gemm", ["x", "w", ""], ["y"], name="gemm")],
                 inputs=[X, oh.make_tensor_value_info("w", TP.FLOAT, [3, 2])],
                 outputs=[oh.make_tensor_value_info("y", TP.FLOAT, [2, 2])], inits=[w])
    from_onnx(gemm)
    from_onnx(loop_model(3, True))
    from_onnx(loop_model(3, False))
    from_onnx(model([relu()], inputs=[oh.make_tensor_value_info("x", TP.FLOAT, ["n", 3])],
                    outputs=[oh.make_tensor_value_info("y", TP.FLOAT, ["n", 3])]))


def test_valid_neighbours_of_fuzz_findings():
    """LayerNormalization without B (its zero bias was built with a dtype
    the tvmd type has no attribute for); an attribute the op's schema does
    not declare is ignored, whatever its type."""
    from_onnx(layer_norm_no_bias())
    from_onnx(undeclared_attribute())
    from_onnx(group_norm(2))
    from_onnx(gru_model([2, 1, 3]))


def test_nested_unrolling_has_one_budget(monkeypatch):
    """Each Loop stays under its own bound (1024 iterations), but nested
    they multiply: one budget for the whole import stops them, naming the
    node whose unrolling passes it."""
    from tvmd.frontend.onnx import importer
    from_onnx(nested_loops(8, 8))
    monkeypatch.setattr(importer, "MAX_UNROLLED_NODES", 200)
    with pytest.raises(UnsupportedOpError) as info:
        from_onnx(nested_loops(30, 30))
    msg = info.value.diagnostics[0].message
    assert "node 'inner' (Loop)" in msg and "unrolling" in msg and "past 200 in all" in msg, msg


def test_recurrent_layer_is_one_loop_whatever_its_length():
    """A recurrent layer is a relay loop, not unrolled: a million steps
    import as one loop op (it was an UnsupportedOpError past 16384)."""
    from tvmd.dialects.relay.ops.loop import LoopOp
    module, _ = from_onnx(lstm_model(10 ** 6))
    loops = [op for op in module.walk() if isinstance(op, LoopOp)]
    assert [op.trip_count for op in loops] == [10 ** 6]


@pytest.mark.parametrize("with_cond", [False, True])
def test_long_loop_with_a_fixed_state_is_one_relay_loop(with_cond):
    """A Loop of a billion iterations whose state keeps its type is a relay
    loop, not unrolled (it was an UnsupportedOpError past 1024)."""
    from tvmd.dialects.relay.ops.loop import LoopOp
    module, _ = from_onnx(loop_model(10 ** 9, with_cond))
    assert [op.trip_count for op in module.walk() if isinstance(op, LoopOp)] == [10 ** 9]


def test_constant_limit_is_the_projects(monkeypatch):
    """Converters check the one limit (TVMD_MAX_CONSTANT_BYTES) before they
    allocate: a 1 KiB limit stops a 2 KiB Dropout mask."""
    from_onnx(dropout_mask([32, 64]))
    monkeypatch.setenv("TVMD_MAX_CONSTANT_BYTES", "1024")
    with pytest.raises(UnsupportedOpError) as info:
        from_onnx(dropout_mask([32, 64]))
    msg = info.value.diagnostics[0].message
    assert "node 'drop' (Dropout)" in msg and "2048 bytes" in msg and "limit of 1024" in msg, msg


# -- tvm-translate --import-onnx ----------------------------------------------------------------------

CLI_CASES = ["add_one_input", "gemm_empty_names", "initializer_raw_length", "opset_0", "duplicate_outputs",
             "loop_static_trip", "non_utf8_op_type", "op_before_its_opset", "gru_x_rank_2", "group_norm_groups_zero"]


@pytest.mark.parametrize("case", CLI_CASES)
def test_cli_error(case, tmp_path):
    build, _, facts = CASES[case]
    path = tmp_path / f"{case}.onnx"
    path.write_bytes(build().SerializeToString())
    _check_cli(path, facts)


def test_cli_error_from_a_relay_op(tmp_path):
    """A node the importer converts but whose relay op refuses its
    attributes: located on the command line like the importer's own errors
    (found by bench/fuzz: it printed without a location)."""
    path = tmp_path / "perm.onnx"
    m = model([oh.make_node("Transpose", ["x"], ["y"], name="t", perm=[0, 7])])
    path.write_bytes(m.SerializeToString())
    _check_cli(path, ["node 't' (Transpose)", "out of range for rank 2"])


def test_cli_empty_file(tmp_path):
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    _check_cli(path, ["is not an ONNX model: empty file"])


def _check_cli(path, facts):
    r = run_tool("tvm-translate", "tvmd.tools.translate_main", ["--import-onnx", str(path), "-o",
                                                               str(path.with_suffix(".relay"))])
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    # located at the model's path on the command line (a binary file has no lines)
    assert r.stderr.startswith("<command line>:1:"), r.stderr
    line, caret = r.stderr.splitlines()[1:3]
    assert line[caret.index("^"):].startswith(str(path)), r.stderr
    for fact in facts:
        assert fact in r.stderr, (fact, r.stderr)
    assert not path.with_suffix(".relay").exists()


# -- linear-time LSTM import ---------------------------------------------------------------------------

def _python_calls(m):
    """How many Python function calls importing `m` makes: a deterministic
    measure of work, unlike time."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event == "call":
            count += 1
    sys.setprofile(profile)
    try:
        from_onnx(m)
    finally:
        sys.setprofile(None)
    return count


def test_lstm_import_does_not_grow_with_sequence_length():
    """4x the steps, the same work: the steps are a loop's body, built once
    (unrolled, it was 4x)."""
    from_onnx(lstm_model(3))          # lazy imports and caches first
    small, large = _python_calls(lstm_model(100)), _python_calls(lstm_model(400))
    assert large / small < 1.1, (small, large)