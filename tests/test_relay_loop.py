"""relay's counted ``loop``: its text, its types, the interpreter, and the
compiled model (kernels called from one native loop in the entry function,
and from Python when profiled), checked against numpy; recurrent ONNX
layers become loops and match onnxruntime."""

import numpy as np
import pytest

from tvmd.dialects.relay.interpreter import run_function
from tvmd.ir.diagnostics import DiagnosticError
from tvmd.parser import parse_module
from tvmd.runtime.build import build
from tvmd.runtime.program import Profile

RNG = np.random.default_rng(5)

# h_{i+1} = tanh(x_i + h_i W); each step's h stacked
RECURRENCE = """relay.func @main(%xs: tensor<7x2x5xf32>, %h0: tensor<2x5xf32>, %w: tensor<5x5xf32>) \
-> (tensor<2x5xf32>, tensor<7x2x5xf32>) {
  %r = loop (%i < 7, %h = %h0) {
    %x = take(%xs, %i) {axis = 0} : tensor<2x5xf32>
    %m = nn.matmul(%h, %w) : tensor<2x5xf32>
    %a = add(%x, %m) : tensor<2x5xf32>
    %t = tanh(%a) : tensor<2x5xf32>
    yield %t, %t
  }
  %last = get_item(%r) {index = 0} : tensor<2x5xf32>
  %all = get_item(%r) {index = 1} : tensor<7x2x5xf32>
  return %last, %all
}"""


def recurrence_ref(xs, h, w):
    hs = []
    for x in xs:
        h = np.tanh(x + h @ w)
        hs.append(h)
    return h, np.stack(hs)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def check(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_text_round_trips():
    m = parse_module(RECURRENCE)
    text = str(m)
    assert "loop (%i < 7, %h = %h0) : tuple<tensor<2x5xf32>, tensor<7x2x5xf32>> {" in text
    assert str(parse_module(text)) == text


@pytest.mark.parametrize("body, message", [
    ("yield", "yields 0 value(s); the 'loop' carries 1"),
    ("%z = zeros() {shape = [3], dtype = \"float32\"} : tensor<3xf32>\n    yield %z",
     "carried value #0 is tensor<2x5xf32>, but its yielded value is tensor<3xf32>"),
    ("return %h", "the body of a 'loop' must end with 'yield', not 'relay.return'"),
])
def test_type_errors_are_located(body, message):
    text = f"""relay.func @main(%h0: tensor<2x5xf32>) -> tensor<2x5xf32> {{
  %r = loop (%i < 3, %h = %h0) {{
    {body}
  }}
  %a = get_item(%r) {{index = 0}} : tensor<2x5xf32>
  return %a
}}"""
    with pytest.raises(DiagnosticError) as info:
        m = parse_module(text)
        m.verify()
    assert message in str(info.value)
    assert info.value.diagnostics[0].loc.line >= 2


def test_interpreter_matches_numpy():
    xs, h0, w = randn(7, 2, 5), randn(2, 5), randn(5, 5) * 0.5
    out = run_function(parse_module(RECURRENCE), "main", xs, h0, w)
    assert len(out) == 2
    check(out, recurrence_ref(xs, h0, w))


def test_compiled_loop_is_one_native_function_and_matches_numpy():
    xs, h0, w = randn(7, 2, 5), randn(2, 5), randn(5, 5) * 0.5
    cm = build(RECURRENCE, fallback=False, progress=False)
    assert cm.executor.program.entry is not None, cm.summary()
    want = recurrence_ref(xs, h0, w)
    check(cm.run(xs, h0, w), want)
    # a second run starts again from the new inputs, not the last state
    xs2 = randn(7, 2, 5)
    check(cm.run(xs2, h0, w), recurrence_ref(xs2, h0, w))
    # kernel by kernel from Python, as --profile runs it: the same numbers, and each step's kernels counted
    prof = Profile()
    check(cm.executor.program.run([xs, h0, w], profile=prof), want)
    assert max(r[0] for r in prof.rows.values()) == 7


SWAP = """relay.func @main(%a0: tensor<4xf32>, %b0: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<5x4xf32>) {
  %r = loop (%i < 5, %a = %a0, %b = %b0) {
    %s = add(%a, %b) : tensor<4xf32>
    yield %b, %s, %a
  }
  %x = get_item(%r) {index = 0} : tensor<4xf32>
  %y = get_item(%r) {index = 1} : tensor<4xf32>
  %z = get_item(%r) {index = 2} : tensor<5x4xf32>
  return %x, %y, %z
}"""


def test_carried_values_passed_around_are_not_clobbered():
    """(a, b) <- (b, a + b): the new a is the old b, read after the new b is
    computed, so the entry must not overwrite b's array before copying it."""
    a0, b0 = randn(4), randn(4)
    a, b, seen = a0, b0, []
    for _ in range(5):
        seen.append(a)
        a, b = b, a + b
    cm = build(SWAP, fallback=False, progress=False)
    assert cm.executor.program.entry is not None
    check(cm.run(a0, b0), [a, b, np.stack(seen)])


NESTED = """relay.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %r = loop (%i < 4, %acc = %x) {
    %q = loop (%j < 3, %v = %acc) {
      %c = cast(%j) {dtype = "float32"} : tensor<f32>
      %w = add(%v, %c) : tensor<3xf32>
      yield %w
    }
    %v2 = get_item(%q) {index = 0} : tensor<3xf32>
    %d = multiply(%v2, %v2) : tensor<3xf32>
    %e = sqrt(%d) : tensor<3xf32>
    yield %e
  }
  %out = get_item(%r) {index = 0} : tensor<3xf32>
  return %out
}"""


def test_nested_loops_and_the_step_index():
    x = np.abs(randn(3))
    want = x.astype(np.float64)
    for _ in range(4):
        want = want + 0 + 1 + 2
    cm = build(NESTED, fallback=False, progress=False)
    assert cm.executor.program.entry is not None
    np.testing.assert_allclose(cm.run(x), want, rtol=1e-5)


def test_zero_steps_give_the_initial_state_and_an_empty_stack():
    text = RECURRENCE.replace("7x2x5", "0x2x5").replace("%i < 7", "%i < 0")
    h0 = randn(2, 5)
    cm = build(text, fallback=False, progress=False)
    last, allh = cm.run(np.zeros((0, 2, 5), np.float32), h0, randn(5, 5))
    np.testing.assert_array_equal(last, h0)
    assert allh.shape == (0, 2, 5)


def test_exported_library_runs_the_loop(tmp_path):
    from tvmd.runtime.export import load_library
    xs, h0, w = randn(7, 2, 5), randn(2, 5), randn(5, 5) * 0.5
    cm = build(RECURRENCE, fallback=False, progress=False)
    cm.export_library(tmp_path / "rnn.so")
    check(load_library(tmp_path / "rnn.so").run(xs, h0, w), recurrence_ref(xs, h0, w))


@pytest.mark.parametrize("op, direction, layout", [
    ("LSTM", "forward", 0), ("LSTM", "bidirectional", 1), ("GRU", "reverse", 0), ("RNN", "bidirectional", 0)])
def test_recurrent_onnx_layers_are_loops_and_match_onnxruntime(op, direction, layout):
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    from tvmd.dialects.relay.ops.loop import LoopOp
    from tvmd.frontend.onnx import from_onnx
    seq, batch, inp, hid = 9, 3, 6, 5
    nd = 2 if direction == "bidirectional" else 1
    g = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    inits = [numpy_helper.from_array(randn(*s) * 0.4, n)
             for n, s in (("W", (nd, g * hid, inp)), ("R", (nd, g * hid, hid)), ("B", (nd, 2 * g * hid)))]
    outs = ["y", "yh", "yc"][:3 if op == "LSTM" else 2]
    node = helper.make_node(op, ["x", "W", "R", "B"], outs, hidden_size=hid, direction=direction, layout=layout)
    xshape = [batch, seq, inp] if layout else [seq, batch, inp]
    graph = helper.make_graph([node], "rnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, xshape)],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    x = randn(*xshape)
    # onnxruntime runs only layout 0: the batch-major reference is its
    # sequence-major run on the transposed input, outputs transposed back
    ref_node = helper.make_node(op, ["x", "W", "R", "B"], outs, hidden_size=hid, direction=direction)
    ref_graph = helper.make_graph([ref_node], "rnn", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [seq, batch, inp])], list(graph.output), inits)
    ref = helper.make_model(ref_graph, opset_imports=[helper.make_opsetid("", 14)])
    sess = ort.InferenceSession(ref.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x.transpose(1, 0, 2) if layout else x})
    if layout:
        want = [want[0].transpose(2, 0, 1, 3)] + [w.transpose(1, 0, 2) for w in want[1:]]
    module, _ = from_onnx(model)
    assert sum(isinstance(o, LoopOp) for o in module.walk()) == nd
    cm = build(module, fallback=False, progress=False)
    assert cm.executor.program.entry is not None, cm.summary()
    for got, w in zip(cm.run(x), want):
        np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-5)


def _onnx_model(nodes, inputs, outputs, inits=(), opset=16):
    from onnx import helper
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _ort_and_ours(model, feeds):
    """(onnxruntime's outputs, ours compiled, the number of relay loops)."""
    ort = pytest.importorskip("onnxruntime")
    from tvmd.dialects.relay.ops.loop import LoopOp
    from tvmd.frontend.onnx import from_onnx
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    module, _ = from_onnx(model)
    loops = sum(isinstance(o, LoopOp) for o in module.walk())
    cm = build(module, fallback=False, progress=False)
    got = cm.run(*feeds.values())
    return want, (got if isinstance(got, (list, tuple)) else [got]), loops


@pytest.mark.parametrize("in_dir, out_dir, out_axis", [(0, 0, 0), (1, 0, 1), (0, 1, -1), (1, 1, 0)])
def test_onnx_scan_is_one_loop_and_matches_onnxruntime(in_dir, out_dir, out_axis):
    """A cumulative sum and a running product over axis 1, both directions,
    the scan output on another axis."""
    from onnx import TensorProto, helper
    f = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
         helper.make_node("Mul", ["s_out", "x_t"], ["y_t"])], "body",
        [helper.make_tensor_value_info("s_in", f, [3]), helper.make_tensor_value_info("x_t", f, [3])],
        [helper.make_tensor_value_info("s_out", f, [3]), helper.make_tensor_value_info("y_t", f, [3])])
    node = helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1,
                            scan_input_axes=[1], scan_input_directions=[in_dir],
                            scan_output_axes=[out_axis], scan_output_directions=[out_dir])
    model = _onnx_model([node], [helper.make_tensor_value_info("s0", f, [3]),
                                 helper.make_tensor_value_info("xs", f, [3, 11])],
                        [helper.make_tensor_value_info("s", f, None), helper.make_tensor_value_info("ys", f, None)])
    want, got, loops = _ort_and_ours(model, {"s0": randn(3), "xs": randn(3, 11)})
    assert loops == 1
    check(got, want)


def test_onnx_loop_with_a_static_trip_count_is_one_loop():
    from onnx import TensorProto, helper
    f = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Cast", ["i"], ["fi"], to=f),
         helper.make_node("Mul", ["a_in", "fi"], ["t"]),
         helper.make_node("Add", ["t", "a_in"], ["a_out"]),
         helper.make_node("Tanh", ["a_out"], ["y"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("a_in", f, [4])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("a_out", f, [4]), helper.make_tensor_value_info("y", f, [4])])
    from onnx import numpy_helper
    inits = [numpy_helper.from_array(np.array(6, np.int64), "M"), numpy_helper.from_array(np.array(True), "c")]
    node = helper.make_node("Loop", ["M", "c", "a0"], ["a", "ys"], body=body)
    model = _onnx_model([node], [helper.make_tensor_value_info("a0", f, [4])],
                        [helper.make_tensor_value_info("a", f, None), helper.make_tensor_value_info("ys", f, None)],
                        inits)
    want, got, loops = _ort_and_ours(model, {"a0": randn(4) * 0.1})
    assert loops == 1
    check(got, want)


def test_onnx_loop_whose_state_grows_is_unrolled_and_says_so(capfd):
    """A carried value that changes shape every iteration cannot be a relay
    loop's state: it is unrolled, with one line saying why."""
    from onnx import TensorProto, helper, numpy_helper
    f = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Concat", ["a_in", "x"], ["a_out"], axis=0)], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("a_in", f, None)],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), helper.make_tensor_value_info("a_out", f, None)])
    inits = [numpy_helper.from_array(np.array(3, np.int64), "M"), numpy_helper.from_array(np.array(True), "c")]
    node = helper.make_node("Loop", ["M", "c", "x"], ["a"], body=body)
    model = _onnx_model([node], [helper.make_tensor_value_info("x", f, [2])],
                        [helper.make_tensor_value_info("a", f, None)], inits)
    want, got, loops = _ort_and_ours(model, {"x": randn(2)})
    assert loops == 0
    check(got, want)
    err = capfd.readouterr().err
    assert err.count("is unrolled, not a relay loop") == 1, err
    assert "carried value #0" in err
