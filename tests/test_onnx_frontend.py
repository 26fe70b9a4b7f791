"""The ONNX frontend: hand-built models for each converter family, imported
with from_onnx, run by the relay interpreter and compared with
onnxruntime on random inputs; plus the importer's contract (weights as
named constants in the resource section, node names as locations, dynamic
dimensions, parameters, unsupported ops as located errors), the text round
trip, the backend interface and tvm-translate --import-onnx."""

from __future__ import annotations

import itertools
import os
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as oh  # noqa: E402

from tvmd.dialects.relay.interpreter import run_function  # noqa: E402
from tvmd.frontend.onnx import UnsupportedOpError, from_onnx  # noqa: E402
from tvmd.ir.location import NameLoc  # noqa: E402
from tvmd.ir.printer import print_module  # noqa: E402
from tvmd.parser import parse_module  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from tools import run_tool  # noqa: E402

RNG = np.random.default_rng(0)
ELEM = {np.dtype("float32"): TP.FLOAT, np.dtype("float64"): TP.DOUBLE, np.dtype("float16"): TP.FLOAT16,
        np.dtype("int64"): TP.INT64, np.dtype("int32"): TP.INT32, np.dtype("int8"): TP.INT8,
        np.dtype("uint8"): TP.UINT8, np.dtype("bool"): TP.BOOL}


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def ints(low, high, *shape, dtype=np.int64):
    return RNG.integers(low, high, shape).astype(dtype)


def init(name, arr):
    return onnx.numpy_helper.from_array(np.asarray(arr), name)


def make_model(nodes, inputs, outputs, inits=(), opset=17, functions=()):
    """inputs: {name: array}; outputs: [(name, TensorProto elem type)]."""
    vis = [oh.make_tensor_value_info(n, ELEM[a.dtype], a.shape) for n, a in inputs.items()]
    outs = [oh.make_tensor_value_info(n, t, None) for n, t in outputs]
    graph = oh.make_graph(nodes, "test", vis, outs, list(inits))
    opsets = [oh.make_opsetid("", opset)] + [oh.make_opsetid(f.domain, 1) for f in functions]
    return oh.make_model(graph, opset_imports=opsets, functions=list(functions), ir_version=10)


def run_ort(model, inputs):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)


def run_tvmd(model, inputs, **kw):
    module, _ = from_onnx(model, **kw)
    out = run_function(module, "main", *inputs.values())
    return list(out) if isinstance(out, tuple) else [out]


def check(nodes, inputs, outputs=(("y", TP.FLOAT),), inits=(), opset=17, rtol=1e-5, atol=1e-5, **kw):
    model = make_model(nodes, inputs, outputs, inits, opset)
    want = run_ort(model, inputs)
    got = run_tvmd(model, inputs, **kw)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return model


_names = itertools.count()


def node(op, ins, outs=("y",), **attrs):
    return oh.make_node(op, list(ins), list(outs), name=f"{op.lower()}_{next(_names)}", **attrs)


# -- math -------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean"])
def test_binary_broadcast(op):
    a, b = rand(2, 3, 4), np.abs(rand(3, 1)) + 0.5
    if op == "Pow":
        a = np.abs(a)
    check([node(op, ["a", "b"])], {"a": a, "b": b})


@pytest.mark.parametrize("op,out", [("Equal", TP.BOOL), ("Less", TP.BOOL), ("Greater", TP.BOOL),
                                    ("LessOrEqual", TP.BOOL), ("GreaterOrEqual", TP.BOOL)])
def test_comparisons(op, out):
    check([node(op, ["a", "b"])], {"a": ints(0, 3, 3, 4), "b": ints(0, 3, 4)}, [("y", out)])


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logical(op):
    check([node(op, ["a", "b"]), node("Not", ["y"], ["z"])],
          {"a": ints(0, 2, 5).astype(bool), "b": ints(0, 2, 5).astype(bool)}, [("z", TP.BOOL)])


@pytest.mark.parametrize("op", ["Abs", "Neg", "Exp", "Log", "Sqrt", "Floor", "Ceil", "Round", "Sign", "Erf",
                                "Sin", "Cos", "Tan", "Atan", "Sinh", "Cosh", "Tanh", "Sigmoid", "Reciprocal",
                                "Relu", "Asinh"])
def test_unary(op):
    x = np.abs(rand(3, 5)) + 0.1 if op in ("Log", "Sqrt", "Reciprocal") else rand(3, 5)
    check([node(op, ["x"])], {"x": x}, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fmod", [0, 1])
def test_mod(fmod):
    a, b = ints(-20, 20, 12, dtype=np.int32), ints(1, 6, 12, dtype=np.int32) * np.where(ints(0, 2, 12), 1, -1)
    check([node("Mod", ["a", "b"], fmod=fmod)], {"a": a, "b": b.astype(np.int32)}, [("y", TP.INT32)])


def test_clip_cast_where():
    x = rand(4, 5)
    nodes = [node("Clip", ["x", "lo", "hi"], ["c"]), node("Cast", ["c"], ["i"], to=TP.INT32),
             node("Greater", ["x", "zero"], ["m"]), node("Where", ["m", "x", "c"], ["y"])]
    check(nodes, {"x": x}, [("y", TP.FLOAT), ("i", TP.INT32)],
          [init("lo", np.float32(-0.5)), init("hi", np.float32(0.7)), init("zero", np.float32(0))])


def test_legacy_broadcast_opset6():
    """Opset 6 Add with broadcast = 1 aligns B at `axis`, not from the right."""
    a, b = rand(2, 3, 4, 5), rand(3, 4)
    model = make_model([node("Add", ["a", "b"], broadcast=1, axis=1)], {"a": a, "b": b}, [("y", TP.FLOAT)],
                       opset=6)
    got = run_tvmd(model, {"a": a, "b": b})[0]
    np.testing.assert_allclose(got, a + b[None, :, :, None], rtol=1e-6)


# -- activations ---------------------------------------------------------------------------

@pytest.mark.parametrize("op,attrs", [
    ("LeakyRelu", {"alpha": 0.2}), ("Elu", {"alpha": 0.7}), ("Selu", {}), ("Celu", {"alpha": 1.5}),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}), ("HardSwish", {}), ("Softplus", {}), ("Softsign", {}),
    ("ThresholdedRelu", {"alpha": 0.3}), ("Shrink", {"lambd": 0.4, "bias": 0.1}),
    ("Softmax", {"axis": 1}), ("LogSoftmax", {"axis": -1}), ("Hardmax", {"axis": 2}),
])
def test_activations(op, attrs):
    check([node(op, ["x"], **attrs)], {"x": rand(2, 3, 4)}, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_axis_semantics(opset):
    """Before opset 13 softmax normalises everything from `axis` on."""
    check([node("Softmax", ["x"], axis=1)], {"x": rand(2, 3, 4)}, opset=opset)


def test_gelu_mish_opset20():
    check([node("Gelu", ["x"], ["g"], approximate="tanh"), node("Mish", ["g"], ["y"])], {"x": rand(3, 4)},
          opset=20, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("slope_shape", [(5,), (3, 1, 1), (1,), (4, 5)])
def test_prelu(slope_shape):
    check([node("PRelu", ["x", "s"])], {"x": rand(2, 3, 4, 5)}, inits=[init("s", rand(*slope_shape))])


# -- nn --------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,kernel,attrs", [
    ((1, 3, 9), (4, 3, 3), {"pads": [1, 2], "strides": [2]}),
    ((2, 4, 8, 7), (6, 2, 3, 3), {"pads": [1, 0, 2, 1], "group": 2, "dilations": [1, 2]}),
    ((1, 3, 7, 7), (5, 3, 2, 2), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 3, 7, 7), (5, 3, 3, 3), {"auto_pad": "SAME_LOWER"}),
    ((1, 2, 5, 5, 5), (3, 2, 3, 3, 3), {"pads": [1, 1, 1, 0, 0, 0]}),
    ((1, 4, 6, 6), (4, 1, 3, 3), {"group": 4, "pads": [1, 1, 1, 1]}),   # depthwise
])
def test_conv(shape, kernel, attrs):
    check([node("Conv", ["x", "w", "b"], **attrs)], {"x": rand(*shape)},
          inits=[init("w", rand(*kernel)), init("b", rand(kernel[0]))], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("attrs", [
    {"strides": [2, 2]},
    {"strides": [2, 2], "pads": [1, 0, 1, 0], "output_padding": [1, 1]},
    {"strides": [2, 2], "output_shape": [9, 10]},
    {"group": 2, "dilations": [2, 1]},
])
def test_conv_transpose(attrs):
    check([node("ConvTranspose", ["x", "w", "b"], **attrs)], {"x": rand(1, 4, 4, 5)},
          inits=[init("w", rand(4, 3, 3, 3)), init("b", rand(3 * attrs.get("group", 1)))], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ta,tb,c_shape", [(0, 0, (5,)), (1, 0, (3, 5)), (0, 1, (1, 5)), (1, 1, ())])
def test_gemm(ta, tb, c_shape):
    a = rand(4, 3) if ta else rand(3, 4)
    b = rand(5, 4) if tb else rand(4, 5)
    check([node("Gemm", ["a", "b", "c"], alpha=0.5, beta=2.0, transA=ta, transB=tb)], {"a": a},
          inits=[init("b", b), init("c", rand(*c_shape))], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)),
                                   ((2, 1, 3, 4), (5, 4, 6)), ((2, 3, 4), (2, 4, 2))])
def test_matmul(sa, sb):
    check([node("MatMul", ["a", "b"])], {"a": rand(*sa), "b": rand(*sb)}, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op,attrs", [
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}),
    ("MaxPool", {"kernel_shape": [3, 2], "auto_pad": "SAME_UPPER", "strides": [2, 1]}),
    ("MaxPool", {"kernel_shape": [3, 2], "pads": [1, 0, 1, 1], "dilations": [1, 2]}),
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2], "ceil_mode": 1}),
    ("LpPool", {"kernel_shape": [2, 2], "p": 3}),
    ("GlobalAveragePool", {}), ("GlobalMaxPool", {}),
    ("LRN", {"size": 3, "alpha": 1e-3, "beta": 0.7, "bias": 1.5}),
])
def test_pooling(op, attrs):
    check([node(op, ["x"], **attrs)], {"x": rand(2, 3, 7, 8)}, rtol=1e-4, atol=1e-5)


def test_pool_1d_3d():
    check([node("MaxPool", ["x"], kernel_shape=[3], strides=[2])], {"x": rand(1, 2, 9)})
    check([node("AveragePool", ["x"], kernel_shape=[2, 2, 2])], {"x": rand(1, 2, 4, 4, 4)}, rtol=1e-5)


def test_dropout_is_identity_with_a_true_mask():
    check([node("Dropout", ["x"], ["y", "mask"])], {"x": rand(3, 4)}, [("y", TP.FLOAT), ("mask", TP.BOOL)],
          opset=13)


# -- normalisations --------------------------------------------------------------------------

def test_batch_and_instance_norm():
    c = 4
    stats = [init("s", rand(c)), init("b", rand(c)), init("m", rand(c)), init("v", np.abs(rand(c)) + 0.5)]
    check([node("BatchNormalization", ["x", "s", "b", "m", "v"], ["bn"], epsilon=1e-3),
           node("InstanceNormalization", ["bn", "s", "b"], ["y"])], {"x": rand(2, c, 5, 5)}, inits=stats,
          rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("axis", [-1, 1])
def test_layer_norm(axis):
    x = rand(2, 3, 6)
    shape = x.shape[axis % 3:]
    check([node("LayerNormalization", ["x", "s", "b"], axis=axis, epsilon=1e-4)], {"x": x},
          inits=[init("s", rand(*shape)), init("b", rand(*shape))], rtol=1e-4, atol=1e-4)


def test_group_norm_opset21():
    check([node("GroupNormalization", ["x", "s", "b"], num_groups=2)], {"x": rand(2, 6, 3, 3)},
          inits=[init("s", rand(6)), init("b", rand(6))], opset=21, rtol=1e-4, atol=1e-4)


def test_lp_and_mean_variance_norm():
    check([node("LpNormalization", ["x"], ["l"], axis=1, p=2), node("MeanVarianceNormalization", ["l"], ["y"])],
          {"x": rand(2, 3, 4, 5)}, rtol=1e-4, atol=1e-4)


# -- reductions -------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                                "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reductions_opset18(op, keepdims):
    check([node(op, ["x", "axes"], keepdims=keepdims)], {"x": rand(3, 4, 5)},
          inits=[init("axes", np.array([0, -1], np.int64))], opset=18, rtol=1e-5, atol=1e-5)


def test_reduce_all_axes_opset13():
    check([node("ReduceMean", ["x"], axes=[1]), ], {"x": rand(3, 4)}, opset=13)
    check([node("ReduceSum", ["x"], keepdims=0)], {"x": rand(3, 4)}, opset=13)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_reductions(op):
    x = ints(0, 3, 4, 5).astype(np.float32)     # ties: the first index wins, or the last
    check([node(op, ["x"], ["a"], axis=1), node(op, ["x"], ["b"], axis=0, keepdims=0, select_last_index=1)],
          {"x": x}, [("a", TP.INT64), ("b", TP.INT64)])


# -- shapes ------------------------------------------------------------------------------------

def test_reshape_flatten_squeeze_unsqueeze_transpose():
    nodes = [node("Reshape", ["x", "shape"], ["r"]), node("Flatten", ["r"], ["f"], axis=2),
             node("Unsqueeze", ["f", "ax"], ["u"]), node("Squeeze", ["u", "ax"], ["s"]),
             node("Transpose", ["s"], ["y"], perm=[1, 0])]
    check(nodes, {"x": rand(2, 3, 4)}, inits=[init("shape", np.array([0, -1, 2], np.int64)),
                                               init("ax", np.array([0, 3], np.int64))])


def test_shape_arithmetic_folds_away():
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape (what exporters
    write for x.view(x.size(0), -1)) leaves a single reshape."""
    nodes = [node("Shape", ["x"], ["s"]), node("Gather", ["s", "zero"], ["n"], axis=0),
             node("Unsqueeze", ["n", "ax0"], ["n1"]), node("Concat", ["n1", "minus1"], ["shape"], axis=0),
             node("Reshape", ["x", "shape"], ["y"])]
    inits = [init("zero", np.array(0, np.int64)), init("ax0", np.array([0], np.int64)),
             init("minus1", np.array([-1], np.int64))]
    model = check(nodes, {"x": rand(2, 3, 4)}, inits=inits)
    module, _ = from_onnx(model)
    ops = [op.name for op in module.body.ops.__next__().body.ops]
    assert ops == ["relay.reshape", "relay.return"]


def test_concat_split_slice():
    nodes = [node("Concat", ["a", "b"], ["c"], axis=1),
             node("Split", ["c", "sizes"], ["s0", "s1", "s2"], axis=1),
             node("Slice", ["s2", "starts", "ends", "axes", "steps"], ["y"])]
    inits = [init("sizes", np.array([1, 2, 4], np.int64)), init("starts", np.array([-1, 3], np.int64)),
             init("ends", np.array([-100, 0], np.int64)), init("axes", np.array([2, 1], np.int64)),
             init("steps", np.array([-2, -1], np.int64))]
    check(nodes, {"a": rand(2, 3, 5), "b": rand(2, 4, 5)}, [("s0", TP.FLOAT), ("s1", TP.FLOAT), ("y", TP.FLOAT)],
          inits=inits)


def test_split_num_outputs_opset18():
    check([node("Split", ["x"], ["a", "b", "c"], axis=0, num_outputs=3)], {"x": rand(7, 2)},
          [("a", TP.FLOAT), ("b", TP.FLOAT), ("c", TP.FLOAT)], opset=18)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad(mode):
    check([node("Pad", ["x", "pads", "v"], mode=mode)], {"x": rand(2, 3, 4)},
          inits=[init("pads", np.array([0, 1, 2, 0, 2, 1], np.int64)), init("v", np.float32(1.5))])


def test_pad_negative_crops():
    check([node("Pad", ["x", "pads"])], {"x": rand(4, 5)}, inits=[init("pads", np.array([-1, 2, 1, -2], np.int64))])


def test_expand_tile_depth_space():
    nodes = [node("Expand", ["x", "shape"], ["e"]), node("Tile", ["e", "reps"], ["t"]),
             node("DepthToSpace", ["t"], ["d"], blocksize=2, mode="CRD"), node("SpaceToDepth", ["d"], ["y"], blocksize=2)]
    check(nodes, {"x": rand(1, 4, 1, 3)}, inits=[init("shape", np.array([2, 1, 2, 1], np.int64)),
                                               init("reps", np.array([1, 2, 1, 2], np.int64))])


# -- indexing -----------------------------------------------------------------------------------

def test_gather_family():
    x = rand(4, 5, 6)
    nodes = [node("Gather", ["x", "i"], ["g"], axis=1),                       # negative indices
             node("GatherElements", ["x", "ie"], ["ge"], axis=2),
             node("GatherND", ["x", "ind"], ["gn"])]
    inits = [init("i", np.array([[0, -1], [2, -5]], np.int64)), init("ie", ints(-6, 6, 4, 5, 2)),
             init("ind", np.array([[0, 1], [3, -1]], np.int64))]
    check(nodes, {"x": x}, [("g", TP.FLOAT), ("ge", TP.FLOAT), ("gn", TP.FLOAT)], inits=inits)


def test_gather_with_runtime_indices():
    check([node("Gather", ["x", "i"], axis=0)], {"x": rand(5, 3), "i": np.array([-1, 0, 3], np.int64)})


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_scatter_elements(reduction):
    check([node("ScatterElements", ["x", "i", "u"], axis=1, reduction=reduction)], {"x": rand(3, 5)},
          inits=[init("i", np.array([[1, 3], [0, 4], [2, 2]], np.int64)), init("u", rand(3, 2))], opset=18)


def test_one_hot_topk_cumsum():
    nodes = [node("OneHot", ["i", "depth", "vals"], ["oh"], axis=1),
             node("TopK", ["x", "k"], ["v", "ix"], axis=-1),
             node("CumSum", ["x", "ax"], ["cs"], exclusive=1, reverse=1)]
    inits = [init("depth", np.array(5, np.int64)), init("vals", np.array([-1.0, 2.0], np.float32)),
             init("k", np.array([2], np.int64)), init("ax", np.array(1, np.int64))]
    check(nodes, {"i": np.array([0, -1, 3], np.int64), "x": rand(3, 6)},
          [("oh", TP.FLOAT), ("v", TP.FLOAT), ("ix", TP.INT64), ("cs", TP.FLOAT)], inits=inits, rtol=1e-5)


# -- generators, images, quantization -------------------------------------------------------------

def test_generators():
    value = oh.make_tensor("v", TP.INT32, [1], [7])
    nodes = [node("Constant", [], ["c"], value=oh.make_tensor("c", TP.FLOAT, [2], [1.5, -2.0])),
             node("Add", ["x", "c"], ["y"]), node("ConstantOfShape", ["shape"], ["f"], value=value),
             node("Range", ["start", "limit", "delta"], ["r"]), node("EyeLike", ["x"], ["e"], k=1)]
    inits = [init("shape", np.array([2, 3], np.int64)), init("start", np.float32(1)),
             init("limit", np.float32(4)), init("delta", np.float32(0.5))]
    check(nodes, {"x": rand(2, 2)}, [("y", TP.FLOAT), ("f", TP.INT32), ("r", TP.FLOAT), ("e", TP.FLOAT)],
          inits=inits)


@pytest.mark.parametrize("mode,coord", [("nearest", "asymmetric"), ("linear", "half_pixel"),
                                        ("linear", "align_corners"), ("cubic", "pytorch_half_pixel")])
def test_resize(mode, coord):
    check([node("Resize", ["x", "", "scales"], mode=mode, coordinate_transformation_mode=coord)],
          {"x": rand(1, 2, 4, 5)}, inits=[init("scales", np.array([1, 1, 2, 1.6], np.float32))],
          rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode,coord,exclude,scales", [
    ("linear", "half_pixel", 0, [1, 1, 0.6, 0.35]), ("cubic", "half_pixel", 0, [1, 1, 0.5, 0.7]),
    ("cubic", "pytorch_half_pixel", 1, [1, 1, 0.4, 1.0]), ("linear", "align_corners", 0, [1, 1, 0.75, 0.3]),
    ("linear", "asymmetric", 1, [1, 1, 1.5, 0.45])])
def test_resize_antialias(mode, coord, exclude, scales):
    """A downscale stretches the kernel by 1 / scale (one dense per axis).
    Against onnx's reference evaluator; onnxruntime too, except with
    align_corners, where its antialiasing maps coordinates otherwise than
    the reference does (it differs from the reference at even scales)."""
    from onnx.reference import ReferenceEvaluator
    nodes = [node("Resize", ["x", "", "scales"], mode=mode, coordinate_transformation_mode=coord, antialias=1,
                  exclude_outside=exclude)]
    inputs, inits = {"x": rand(2, 3, 10, 13)}, [init("scales", np.array(scales, np.float32))]
    model = make_model(nodes, inputs, (("y", TP.FLOAT),), inits, 18)
    (got,) = run_tvmd(model, inputs)
    np.testing.assert_allclose(got, ReferenceEvaluator(model).run(None, inputs)[0], rtol=1e-4, atol=1e-5)
    if coord != "align_corners":
        np.testing.assert_allclose(got, run_ort(model, inputs)[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n_mel,dft,rate,lo,hi", [(8, 16, 8192, 0.0, 4096.0), (20, 512, 16000, 80.0, 7600.0),
                                                 (5, 64, 22050, 300.0, 3000.0)])
def test_mel_weight_matrix(n_mel, dft, rate, lo, hi):
    """Built at import from known inputs; against onnx's reference evaluator."""
    from onnx.reference import ReferenceEvaluator
    inputs = {"n": np.int32(n_mel), "d": np.int32(dft), "r": np.int32(rate), "lo": np.float32(lo),
              "hi": np.float32(hi)}
    model = make_model([node("MelWeightMatrix", ["n", "d", "r", "lo", "hi"])], {},
                       (("y", TP.FLOAT),), [init(k, v) for k, v in inputs.items()], 17)
    (got,) = run_tvmd(model, {})
    np.testing.assert_allclose(got, ReferenceEvaluator(model).run(None, {})[0], rtol=1e-6, atol=1e-7)


def test_quantize_dequantize_per_channel():
    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
             node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1)]
    check(nodes, {"x": rand(2, 3, 4) * 3}, [("q", TP.UINT8), ("y", TP.FLOAT)],
          inits=[init("s", np.array([0.02, 0.05, 0.1], np.float32)), init("z", np.array([120, 128, 10], np.uint8))])


@pytest.mark.parametrize("block,dtype", [(2, TP.INT8), (3, TP.UINT8), (4, TP.INT4)])
def test_blocked_quantize_dequantize(block, dtype):
    """block_size B: each scale / zero point covers B elements along the axis
    (the last block shorter when B does not divide it)."""
    x = rand(2, 7, 3) * 4
    nb = -(-7 // block)
    s = (np.abs(rand(2, nb, 3)) + 0.05).astype(np.float32)
    zdt = {TP.INT8: np.int8, TP.UINT8: np.uint8, TP.INT4: np.int8}[dtype]
    z = ints(-3 if dtype != TP.UINT8 else 0, 4, 2, nb, 3, dtype=zdt)
    zinit = oh.make_tensor("z", dtype, z.shape, z.reshape(-1).tolist())
    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1, block_size=block),
             node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1, block_size=block)]
    model = make_model(nodes, {"x": x}, [("q", dtype), ("y", TP.FLOAT)], [init("s", s), zinit], 21)
    from onnx.reference import ReferenceEvaluator
    want = ReferenceEvaluator(model).run(None, {"x": x})
    got = run_tvmd(model, {"x": x})
    np.testing.assert_array_equal(got[0].astype(np.int32), want[0].astype(np.int32))
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=1e-6)
    if dtype != TP.INT4:    # onnxruntime's CPU kernels take blocked 8-bit types
        ort_out = run_ort(model, {"x": x})
        np.testing.assert_array_equal(got[0], ort_out[0])
        np.testing.assert_allclose(got[1], ort_out[1], rtol=1e-6, atol=1e-6)


def test_qlinear_matmul_and_conv():
    a = ints(0, 255, 2, 3, 4, dtype=np.uint8)
    nodes = [node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["m"]),
             node("QLinearConv", ["x", "as", "az", "w", "ws", "wz", "ys", "yz", "bias"], ["c"], pads=[1, 1, 1, 1])]
    inits = [init("as", np.float32(0.05)), init("az", np.uint8(128)), init("b", ints(0, 255, 4, 5, dtype=np.uint8)),
             init("bs", np.float32(0.03)), init("bz", np.uint8(100)), init("ys", np.float32(0.2)),
             init("yz", np.uint8(64)), init("w", ints(0, 255, 2, 1, 3, 3, dtype=np.uint8)),
             init("ws", np.array([0.01, 0.02], np.float32)), init("wz", np.array([128, 120], np.uint8)),
             init("bias", np.array([100, -50], np.int32))]
    check(nodes, {"a": a, "x": ints(0, 255, 1, 1, 5, 5, dtype=np.uint8)}, [("m", TP.UINT8), ("c", TP.UINT8)],
          inits=inits, atol=1)


# -- control flow and functions --------------------------------------------------------------------

def _branch(name, op, k):
    return oh.make_graph([oh.make_node(op, ["x", k], [name + "_out"])], name, [],
                         [oh.make_tensor_value_info(name + "_out", TP.FLOAT, None)])


@pytest.mark.parametrize("flag", [True, False])
def test_if_with_runtime_condition(flag):
    nodes = [oh.make_node("If", ["c"], ["y"], then_branch=_branch("t", "Add", "k"),
                          else_branch=_branch("e", "Mul", "k"))]
    check(nodes, {"c": np.array(flag), "x": rand(3)}, inits=[init("k", np.float32(3))])
    module, _ = from_onnx(make_model(nodes, {"c": np.array(flag), "x": rand(3)}, [("y", TP.FLOAT)],
                                     [init("k", np.float32(3))]))
    assert "if %c" in print_module(module)


def test_model_local_function_and_schema_function():
    """A model's own function, and an op with no converter that ONNX defines
    by a function body, are both expanded."""
    f = oh.make_function("custom", "AddRelu", ["a", "b"], ["o"],
                         [oh.make_node("Add", ["a", "b"], ["t"]), oh.make_node("Relu", ["t"], ["o"])],
                         [oh.make_opsetid("", 17)])
    model = make_model([oh.make_node("AddRelu", ["x", "z"], ["s"], domain="custom", name="fused"),
                        node("Swish", ["s"], ["y"], alpha=0.5)],
                       {"x": rand(4), "z": rand(4)}, [("y", TP.FLOAT)], opset=24, functions=[f])
    x, z = rand(4), rand(4)
    got = run_tvmd(model, {"x": x, "z": z})[0]
    s = np.maximum(x + z, 0)
    np.testing.assert_allclose(got, s / (1 + np.exp(-0.5 * s)), rtol=1e-5)


def test_scan_and_loop_are_unrolled():
    body = oh.make_graph([oh.make_node("Add", ["s_in", "x_t"], ["s_out"]), oh.make_node("Mul", ["s_out", "x_t"], ["y_t"])],
                         "body", [oh.make_tensor_value_info("s_in", TP.FLOAT, [2]),
                                  oh.make_tensor_value_info("x_t", TP.FLOAT, [2])],
                         [oh.make_tensor_value_info("s_out", TP.FLOAT, [2]), oh.make_tensor_value_info("y_t", TP.FLOAT, [2])])
    check([oh.make_node("Scan", ["s0", "xs"], ["s", "ys"], name="scan", body=body, num_scan_inputs=1,
                        scan_input_directions=[1])],
          {"s0": rand(2), "xs": rand(4, 2)}, [("s", TP.FLOAT), ("ys", TP.FLOAT)], opset=16)
    lbody = oh.make_graph([oh.make_node("Identity", ["c_in"], ["c_out"]), oh.make_node("Cast", ["i"], ["f"], to=TP.FLOAT),
                           oh.make_node("Add", ["acc_in", "f"], ["acc_out"]), oh.make_node("Identity", ["acc_out"], ["scan_out"])],
                          "loop", [oh.make_tensor_value_info("i", TP.INT64, []), oh.make_tensor_value_info("c_in", TP.BOOL, []),
                                   oh.make_tensor_value_info("acc_in", TP.FLOAT, [3])],
                          [oh.make_tensor_value_info("c_out", TP.BOOL, []), oh.make_tensor_value_info("acc_out", TP.FLOAT, [3]),
                           oh.make_tensor_value_info("scan_out", TP.FLOAT, [3])])
    check([oh.make_node("Loop", ["n", "cond", "a"], ["acc", "all"], name="loop", body=lbody)], {"a": rand(3)},
          [("acc", TP.FLOAT), ("all", TP.FLOAT)], inits=[init("n", np.array(4, np.int64)), init("cond", np.array(True))],
          opset=16)


@pytest.mark.parametrize("op,gates,attrs", [
    ("LSTM", 4, {"direction": "bidirectional"}), ("GRU", 3, {"linear_before_reset": 1}),
    ("GRU", 3, {"direction": "reverse"}), ("RNN", 1, {"activations": ["Relu"]}),
])
def test_recurrent_layers(op, gates, attrs):
    seq, batch, inp, hidden = 4, 2, 3, 5
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    outs = ["y", "y_h"] + (["y_c"] if op == "LSTM" else [])
    check([oh.make_node(op, ["x", "w", "r", "b"], outs, name="rnn", hidden_size=hidden, **attrs)],
          {"x": rand(seq, batch, inp)}, [(o, TP.FLOAT) for o in outs],
          inits=[init("w", rand(dirs, gates * hidden, inp)), init("r", rand(dirs, gates * hidden, hidden)),
                 init("b", rand(dirs, 2 * gates * hidden))], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op,gates,direction", [("LSTM", 4, "bidirectional"), ("GRU", 3, "reverse"),
                                                ("RNN", 1, "forward")])
def test_recurrent_layers_with_sequence_lengths(op, gates, direction):
    """Per-batch lengths (an input, so known only when the model runs): past
    its length a sequence's output is 0 and its state stays; a reverse
    direction starts at its own last step."""
    seq, batch, inp, hidden = 5, 3, 3, 4
    dirs = 2 if direction == "bidirectional" else 1
    outs = ["y", "y_h"] + (["y_c"] if op == "LSTM" else [])
    check([oh.make_node(op, ["x", "w", "r", "b", "lens"], outs, name="rnn", hidden_size=hidden, direction=direction)],
          {"x": rand(seq, batch, inp), "lens": np.array([5, 2, 3], np.int32)}, [(o, TP.FLOAT) for o in outs],
          inits=[init("w", rand(dirs, gates * hidden, inp)), init("r", rand(dirs, gates * hidden, hidden)),
                 init("b", rand(dirs, 2 * gates * hidden))], rtol=1e-4, atol=1e-5)


def test_sequences_are_tuples():
    nodes = [oh.make_node("SplitToSequence", ["x"], ["seq"], name="split", axis=1),
             oh.make_node("SequenceErase", ["seq", "zero"], ["rest"], name="erase"),
             oh.make_node("SequenceLength", ["rest"], ["n"], name="len"),
             oh.make_node("ConcatFromSequence", ["rest"], ["y"], name="cat", axis=0, new_axis=1)]
    check(nodes, {"x": rand(2, 4)}, [("y", TP.FLOAT), ("n", TP.INT64)], inits=[init("zero", np.array(0, np.int64))])


def test_dynamic_batch_reshape_is_followed_symbolically():
    """x.view(x.size(0), x.size(1), 12, 64) with a dynamic batch and
    sequence: relay's reshape codes copy the dynamic dimensions."""
    nodes = [node("Shape", ["x"], ["s"]), node("Gather", ["s", "i0"], ["b"], axis=0),
             node("Gather", ["s", "i1"], ["t"], axis=0), node("Unsqueeze", ["b", "ax"], ["b1"]),
             node("Unsqueeze", ["t", "ax"], ["t1"]), node("Concat", ["b1", "t1", "heads"], ["shp"], axis=0),
             node("Reshape", ["x", "shp"], ["h"]), node("Mul", ["b", "t"], ["bt"]),
             node("Unsqueeze", ["bt", "ax"], ["bt1"]), node("Concat", ["bt1", "hid"], ["shp2"], axis=0),
             node("Reshape", ["h", "shp2"], ["y"])]
    inits = [init("i0", np.array(0, np.int64)), init("i1", np.array(1, np.int64)), init("ax", np.array([0], np.int64)),
             init("heads", np.array([12, 64], np.int64)), init("hid", np.array([768], np.int64))]
    graph = oh.make_graph(nodes, "g", [oh.make_tensor_value_info("x", TP.FLOAT, ["B", "S", 768])],
                          [oh.make_tensor_value_info("y", TP.FLOAT, None)], inits)
    module, _ = from_onnx(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)]))
    text = print_module(module)
    assert "relay.func @main(%x: tensor<?x?x768xf32>) -> tensor<?x768xf32>" in text
    assert "{newshape = [0, 0, 12, 64]}" in text and "{newshape = [-1, 768]}" in text
    assert "shape_of" not in text
    x = rand(2, 3, 768)
    np.testing.assert_array_equal(run_function(module, "main", x), x.reshape(6, 768))


# -- the importer's contract -------------------------------------------------------------------

def _mlp():
    w = rand(8, 4)
    nodes = [oh.make_node("Gemm", ["x", "fc.weight", "fc.bias"], ["h"], name="fc1", transB=1),
             oh.make_node("Relu", ["h"], ["y"], name="relu1")]
    graph = oh.make_graph(nodes, "mlp", [oh.make_tensor_value_info("x", TP.FLOAT, ["batch", 4])],
                          [oh.make_tensor_value_info("y", TP.FLOAT, ["batch", 8])],
                          [init("fc.weight", w), init("fc.bias", rand(8))])
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)])


def test_weights_are_named_resources_and_dynamic_dims_print_as_question_marks():
    module, params = from_onnx(_mlp())
    assert params is None
    text = print_module(module)
    assert "relay.func @main(%x: tensor<?x4xf32>) -> tensor<?x8xf32>" in text
    assert "%fc.weight = constant dense_resource<fc.weight> : tensor<8x4xf32>" in text
    assert 'fc.weight: "0x04000000' in text
    again = print_module(parse_module(text))
    assert again == text


def test_node_names_are_locations():
    module, _ = from_onnx(_mlp())
    locs = {op.name: op.loc for op in module.body.first.body.ops}
    assert locs["relay.nn.relu"] == NameLoc("relu1")
    assert locs["relay.nn.dense"] == NameLoc("fc1")


def test_shape_override_and_unfrozen_params():
    module, params = from_onnx(_mlp(), shape={"x": (2, 4)}, freeze_params=False)
    func = module.body.first
    assert [str(a.type) for a in func.body.args] == ["tensor<2x4xf32>", "tensor<8x4xf32>", "tensor<8xf32>"]
    assert sorted(params) == ["fc.bias", "fc.weight"]
    x = rand(2, 4)
    want = np.maximum(x @ params["fc.weight"].T + params["fc.bias"], 0)
    np.testing.assert_allclose(run_function(module, "main", x, params["fc.weight"], params["fc.bias"]), want,
                               rtol=1e-5)


def test_unsupported_op_is_a_located_error():
    model = make_model([node("Relu", ["x"], ["r"]), oh.make_node("Frobnicate", ["r"], ["y"], name="frob")],
                       {"x": rand(3)}, [("y", TP.FLOAT)])
    with pytest.raises(UnsupportedOpError) as info:
        from_onnx(model)
    e = info.value
    assert e.op_types == ("Frobnicate",) and e.loc == NameLoc("frob")
    assert "node 'frob' (Frobnicate)" in str(e)


def test_runtime_shape_input_is_read_when_it_runs_or_bound():
    """A Reshape whose shape is a graph input: dyn.reshape, read when the
    model runs; given the input's value at import, a static reshape."""
    model = make_model([node("Reshape", ["x", "s"])], {"x": rand(6), "s": np.array([2, 3], np.int64)},
                       [("y", TP.FLOAT)])
    module, _ = from_onnx(model)
    assert "dyn.reshape(%x, %s) : tensor<?x?xf32>" in print_module(module)
    module, _ = from_onnx(model, input_values={"s": np.array([2, 3], np.int64)})
    assert "reshape(%x) {newshape = [2, 3]}" in print_module(module)


# -- the backend interface --------------------------------------------------------------------------

def test_backend_prepare_run_and_run_node():
    from tvmd.frontend import onnx_backend as backend
    assert backend.supports_device("CPU") and not backend.supports_device("CUDA")
    model = _mlp()
    rep = backend.prepare(model, "CPU")
    x = rand(3, 4)
    (y,) = rep.run([x])
    (y2,) = rep.run({"x": x})
    np.testing.assert_array_equal(y, y2)
    np.testing.assert_allclose(y, run_ort(model, {"x": x})[0], rtol=1e-5, atol=1e-6)
    out = backend.run_node(node("Add", ["a", "b"]), [np.ones(2, np.float32), np.ones(2, np.float32)])
    np.testing.assert_array_equal(out["y"], [2, 2])
    with pytest.raises(ValueError, match="unknown mode"):
        backend.prepare(model, mode="warp-drive")


def test_backend_reimports_when_a_value_it_read_changes():
    from tvmd.frontend import onnx_backend as backend
    model = make_model([node("Reshape", ["x", "s"])], {"x": rand(6), "s": np.array([2, 3], np.int64)},
                       [("y", TP.FLOAT)])
    rep = backend.prepare(model)
    x = rand(6)
    assert rep.run([x, np.array([2, 3], np.int64)])[0].shape == (2, 3)
    assert rep.run([x, np.array([3, 2], np.int64)])[0].shape == (3, 2)


# -- tvm-translate --import-onnx ---------------------------------------------------------------------

def test_translate_import_onnx(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(_mlp(), str(path))
    r = run_tool("tvm-translate", "tvmd.tools.translate_main", ["--import-onnx", str(path)])
    assert r.returncode == 0, r.stderr
    assert "nn.dense(%x, %fc.weight)" in r.stdout and 'fc.weight: "0x' in r.stdout
    bad = tmp_path / "bad.onnx"
    onnx.save(make_model([oh.make_node("Frobnicate", ["x"], ["y"], name="frob")], {"x": rand(3)},
                         [("y", TP.FLOAT)]), str(bad))
    r = run_tool("tvm-translate", "tvmd.tools.translate_main", ["--import-onnx", str(bad)])
    assert r.returncode == 1
    assert "error: cannot import" in r.stderr and "node 'frob' (Frobnicate): unsupported ONNX op type: Frobnicate" in r.stderr
    assert "Traceback" not in r.stderr
