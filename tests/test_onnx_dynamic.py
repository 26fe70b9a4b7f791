"""The ONNX backend keeps a declared dynamic axis dynamic: one build serves
every sequence length, checked against onnxruntime; a model whose dynamic
import needs static sizes says so once and builds per input shape."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import tvmd.frontend.onnx_backend as backend
from tvmd.testing import onnx_zoo as z


def bert_layer(hidden=64, heads=2, ffn=128):
    g = z.GraphBuilder(2)
    out = z.bert_encoder_layer(g, "h", "mask", -1, hidden, heads, ffn)   # reshapes to [1, -1, ...]
    return g.model([z.tensor_info("h", [1, "seq", hidden]), z.tensor_info("mask", [1, 1, 1, "seq"])],
                   [z.tensor_info(out, None)])


def test_one_build_serves_every_sequence_length():
    model = bert_layer()
    rep = backend.prepare(model)
    assert rep.builds == 1
    assert not rep._dynamic.run.compiled.interpreted, rep._dynamic.run.compiled.summary()
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for n in (1, 7, 64, 300):
        h = rng.standard_normal((1, n, 64)).astype(np.float32)
        mask = np.where(rng.random((1, 1, 1, n)) < 0.2, -10000.0, 0.0).astype(np.float32)
        got = rep.run([h, mask])[0]
        want = sess.run(None, {"h": h, "mask": mask})[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert rep.builds == 1


def test_a_run_time_broadcast_gets_a_build_of_its_own(capsys):
    """Add of two [?, 4] inputs where one has 1 row: numpy broadcasting the
    dynamic kernels do not do; that call is imported for its shapes."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["m", 4])
    out = helper.make_tensor_value_info("z", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"])], "g", [x, y], [out]))
    rep = backend.prepare(model)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(rep.run([a, a])[0], a + a)
    assert rep.builds == 1
    b = np.ones((1, 4), np.float32)
    np.testing.assert_array_equal(rep.run([a, b])[0], a + b)
    assert rep.builds == 2
    assert "built on their own" in capsys.readouterr().err


def test_a_range_over_a_computed_size_is_read_at_run_time(capsys):
    """Range up to a size read from Shape, by 2: its length (half the
    size) is no dimension, so it is dyn.arange, read when it runs (by 1 it
    is arange_like: below): one build for every shape, which says once
    what runs on numpy."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
             helper.make_node("Range", ["zero", "n", "step"], ["r"]),
             helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT)]
    inits = [helper.make_tensor("one", TensorProto.INT64, [], [1]),
             helper.make_tensor("zero", TensorProto.INT64, [], [0]),
             helper.make_tensor("step", TensorProto.INT64, [], [2])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "n"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    rep = backend.prepare(model)
    err = capsys.readouterr().err
    assert "dyn.arange" in err and err.count("dyn.arange") == 1
    for n in (3, 6, 1):
        a = np.ones((2, n), np.float32)
        np.testing.assert_array_equal(rep.run([a])[0], np.arange(0, n, 2, dtype=np.float32))
    assert rep.builds == 1


@pytest.mark.parametrize("n", [1, 9])
def test_tvm_run_takes_any_length(tmp_path, n):
    import subprocess
    import sys
    path = tmp_path / "bert.onnx"
    onnx.save(bert_layer(), path)
    h, m = tmp_path / "h.npy", tmp_path / "m.npy"
    np.save(h, np.random.default_rng(n).standard_normal((1, n, 64)).astype(np.float32))
    np.save(m, np.zeros((1, 1, 1, n), np.float32))
    out = tmp_path / "y.npy"
    r = subprocess.run([sys.executable, "-c", "import sys; from tvmd.tools.run_main import main; sys.exit(main())", str(path), "--input", f"h={h}", "--input",
                        f"mask={m}", "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"h": np.load(h), "mask": np.load(m)})[0]
    np.testing.assert_allclose(np.load(out), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n,kernel", [(96, "contrib_dense_pack"), (100, "contrib_dense_pack"), ("half", "matmul")])
def test_a_dense_with_dynamic_rows_packs_its_weight(n, kernel):
    """A MatMul by a constant with a '?' row count: the weight packed in
    column panels (padded to whole panels when no panel width divides N,
    the kernel writing only the N columns; transposed to K x N when N is
    narrow: half a vector register of this host), so that the columns are
    the vector axis for one row or many."""
    if n == "half":
        from tvmd.backend.spec import parse_target
        n = parse_target("llvm").vector_unit().lanes // 2
    g = z.GraphBuilder(3)
    y = g.node("Relu", [z.dense(g, "x", 64, n)])
    model = g.model([z.tensor_info("x", [1, "seq", 64])], [z.tensor_info(y, None)])
    rep = backend.prepare(model)
    compiled = rep._dynamic.run.compiled
    assert not compiled.interpreted and any(kernel in k for k in compiled.kernels), compiled.kernels
    assert not any("strided_slice" in k for k in compiled.kernels), compiled.kernels
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(n)
    for rows in (1, 5, 33):
        x = rng.standard_normal((1, rows, 64)).astype(np.float32)
        np.testing.assert_allclose(rep.run([x])[0], sess.run(None, {"x": x})[0], rtol=1e-4, atol=1e-5)
    assert rep.builds == 1


def attention_model(heads=2, dh=16):
    """softmax(q k^T) v over a dynamic sequence, with the transposes an
    exporter writes: K^T as Transpose(k, perm=[0, 2, 3, 1]), V as
    Transpose(v, perm=[0, 2, 1, 3])."""
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, "seq", heads, dh]) for n in "qkv"]
    nodes = [helper.make_node("Transpose", ["q"], ["qh"], perm=[0, 2, 1, 3]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 3, 1]),
             helper.make_node("Transpose", ["v"], ["vh"], perm=[0, 2, 1, 3]),
             helper.make_node("MatMul", ["qh", "kt"], ["s"]),
             helper.make_node("Softmax", ["s"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "vh"], ["o"])]
    out = helper.make_tensor_value_info("o", TensorProto.FLOAT, None)
    return helper.make_model(helper.make_graph(nodes, "attention", ins, [out]),
                             opset_imports=[helper.make_opsetid("", 17)])


def test_k_transpose_folds_into_batch_matmul_transpose_b():
    """Q K^T reads K's rows (head_dim contiguous) through transpose_b rather
    than a materialised K^T; P V keeps its plain form.  Equal to
    onnxruntime at every length, one build."""
    from tvmd.frontend.onnx import from_onnx
    model = attention_model()
    mod, _ = from_onnx(model)
    ops = list(mod.walk())
    assert [op.attributes["transpose_b"] for op in ops if op.name == "relay.nn.batch_matmul"] == [True, False]
    assert [0, 2, 3, 1] not in [list(op.attributes["axes"]) for op in ops if op.name == "relay.transpose"], mod
    rep = backend.prepare(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    for n in (1, 7, 33, 130):
        feeds = {name: rng.standard_normal((1, n, 2, 16)).astype(np.float32) for name in "qkv"}
        np.testing.assert_allclose(rep.run(feeds)[0], sess.run(None, feeds)[0], rtol=1e-4, atol=1e-5)
    assert rep.builds == 1


def test_a_range_over_a_dynamic_length_compiles_once():
    """Position ids as exporters compute them, Range(0, Shape(x)[1], 1),
    over a '?' sequence: arange_like of x's axis 1, one build for every
    length (it used to import per shape: arange takes its stop as an
    attribute)."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
             helper.make_node("Range", ["start", "n", "step"], ["r"]),
             helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["x", "rf"], ["y"])]
    g = helper.make_graph(nodes, "positions", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "seq"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, "seq"])],
                          [helper.make_tensor("one", TensorProto.INT64, [], [1]),
                           helper.make_tensor("start", TensorProto.INT64, [], [0]),
                           helper.make_tensor("step", TensorProto.INT64, [], [1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    rep = backend.prepare(m)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(4)
    for n in (1, 7, 64, 300):
        x = rng.standard_normal((2, n)).astype(np.float32)
        want = sess.run(None, {"x": x})[0]
        np.testing.assert_allclose(rep.run([x])[0], want, rtol=0, atol=0)
        np.testing.assert_allclose(want, x + np.arange(n, dtype=np.float32))
    assert rep.builds == 1 and not rep._dynamic.run.compiled.interpreted
    assert "arange_like" in str(rep._dynamic.module)


def _one_node(nodes, ins, outs):
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes, "dyn", [vi(n, t, s) for n, t, s in ins], [vi(n, t, s) for n, t, s in outs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])


VALUE_SHAPED = {
    # a run-time k: dyn.topk, then a compiled kernel over its '?' axis
    "topk": (_one_node([helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1),
                        helper.make_node("Exp", ["v"], ["e"])],
                       [("x", TensorProto.FLOAT, [3, "n"]), ("k", TensorProto.INT64, [1])],
                       [("e", TensorProto.FLOAT, [3, None]), ("i", TensorProto.INT64, [3, None])]),
             [{"x": (3, 10), "k": np.array([k], np.int64)} for k in (1, 4, 10, 0)]),
    # run-time bounds: dyn.arange
    "range": (_one_node([helper.make_node("Range", ["s", "l", "d"], ["y"])],
                        [(n, TensorProto.FLOAT, []) for n in "sld"], [("y", TensorProto.FLOAT, [None])]),
              [{"s": np.array(a, np.float32), "l": np.array(b, np.float32), "d": np.array(c, np.float32)}
               for a, b, c in ((0, 5, 1), (1.5, 7, 0.5), (3, -4, -2), (2, 1, 1))]),
    # run-time slice bounds: dyn.slice
    "slice": (_one_node([helper.make_node("Constant", [], ["a"], value=helper.make_tensor("a", TensorProto.INT64,
                                                                                          [2], [1, 0])),
                         helper.make_node("Slice", ["x", "b", "e", "a"], ["y"]), helper.make_node("Neg", ["y"], ["z"])],
                        [("x", TensorProto.FLOAT, [4, 6]), ("b", TensorProto.INT64, [2]),
                         ("e", TensorProto.INT64, [2])], [("z", TensorProto.FLOAT, [None, None])]),
              [{"x": (4, 6), "b": np.array(b, np.int64), "e": np.array(e, np.int64)}
               for b, e in (([0, 1], [2, 5]), ([-3, 0], [9, -1]), ([1, 2], [1, 3]))]),
    # a run-time shape (not made from the input's own dimensions): dyn.reshape
    "reshape": (_one_node([helper.make_node("Reshape", ["x", "s"], ["y"]), helper.make_node("Relu", ["y"], ["z"])],
                          [("x", TensorProto.FLOAT, [4, 6]), ("s", TensorProto.INT64, [3])],
                          [("z", TensorProto.FLOAT, [None, None, None])]),
                [{"x": (4, 6), "s": np.array(s, np.int64)} for s in ([2, -1, 3], [0, 3, 2], [24, 1, 1])]),
}


@pytest.mark.parametrize("case", sorted(VALUE_SHAPED))
def test_a_value_that_shapes_the_output_is_read_at_run_time_one_build(case):
    """TopK's k, Range's and Slice's bounds, Reshape's shape as graph inputs: one build
    (the dyn.* op runs on numpy, the rest compiled) gives onnxruntime's
    results for every value; a value that does not fit is an error naming
    the op, not a traceback from inside."""
    model, feeds = VALUE_SHAPED[case]
    rep = backend.prepare(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(4)
    for f in feeds:
        f = {k: rng.standard_normal(v).astype(np.float32) if isinstance(v, tuple) else v for k, v in f.items()}
        got, want = rep.run(f), sess.run(None, f)
        for a, b in zip(got, want):
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    assert rep.builds == 1
    if case == "topk":
        from tvmd.ir.diagnostics import DiagnosticError
        with pytest.raises(DiagnosticError, match=r"k = 11 is outside \[0, 10\]"):
            rep.run({"x": np.zeros((3, 10), np.float32), "k": np.array([11], np.int64)})
