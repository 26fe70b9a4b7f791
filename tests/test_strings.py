"""String tensors (dialects/relay/ops/strings.py): the ops against Python's
own string methods, the text form, ONNX models where text meets numbers
against onnxruntime, and the build running such a model in the
interpreter, saying so."""

import numpy as np
import pytest

from tvmd.dialects.relay.interpreter import Interpreter
from tvmd.ir.printer import print_module
from tvmd.parser import parse_module
from tvmd.runtime.build import build

TEXT = """relay.func @main(%x: tensor<4xstring>, %y: tensor<4xstring>) -> (tensor<4xstring>, tensor<4xi1>, tensor<?xstring>, tensor<4x?xstring>, tensor<4xi64>, tensor<4xi1>) {
  %c = strings.concat(%x, %y) : tensor<4xstring>
  %m = strings.regex_full_match(%c) {pattern = "[a-z]+-?[a-z]*"} : tensor<4xi1>
  %n = strings.normalize(%x) {case_change_action = "UPPER", stopwords = ["The"]} : tensor<?xstring>
  %s = strings.split(%c) {delimiter = "-", maxsplit = 1} : tuple<tensor<4x?xstring>, tensor<4xi64>>
  %s0 = get_item(%s) {index = 0} : tensor<4x?xstring>
  %s1 = get_item(%s) {index = 1} : tensor<4xi64>
  %e = equal(%x, %y) : tensor<4xi1>
  return %c, %m, %n, %s0, %s1, %e
}"""


def strings(*xs):
    return np.array(xs, dtype=object)


def test_ops_against_python_and_the_text_round_trip():
    import re
    m = parse_module(TEXT, "t.relay")
    assert print_module(m).strip() == TEXT.strip()
    x, y = strings("ab", "the", "Q-r", "z"), strings("-cd", "x", "-s-t", "z")
    interp = Interpreter(m)
    c, mt, n, s0, s1, e = interp.call(interp.functions["main"], [x, y], None)
    want_c = [a + b for a, b in zip(x, y)]
    assert list(c) == want_c
    assert list(mt) == [re.fullmatch("[a-z]+-?[a-z]*", s) is not None for s in want_c]
    assert list(n) == ["AB", "Q-R", "Z"]      # "the" is a stopword (case-insensitive)
    pieces = [s.split("-", 1) for s in want_c]
    assert list(s1) == [len(p) for p in pieces]
    assert [list(row[:k]) for row, k in zip(s0, s1)] == pieces
    assert all(v == "" for row, k in zip(s0, s1) for v in row[k:])
    assert list(e) == [a == b for a, b in zip(x, y)]


def test_a_model_with_strings_runs_in_the_interpreter_and_says_so(capfd):
    cm = build(TEXT)
    assert cm.mode == "interpreter" and "string tensors" in cm.reason
    assert "runs in the relay interpreter: it holds string tensors" in capfd.readouterr().err
    c = cm.run(strings("a", "b", "c", "d"), strings("1", "2", "3", "4"))[0]
    assert list(c) == ["a1", "b2", "c3", "d4"]


def test_type_errors():
    from tvmd.ir.diagnostics import DiagnosticError
    bad = """relay.func @main(%x: tensor<2xf32>) -> tensor<2xstring> {
  %c = strings.concat(%x, %x) : tensor<2xstring>
  return %c
}"""
    with pytest.raises(DiagnosticError, match="expects a string tensor lhs"):
        parse_module(bad, "t.relay")
    regex = """relay.func @main(%x: tensor<2xstring>) -> tensor<2xi1> {
  %c = strings.regex_full_match(%x) {pattern = "(a"} : tensor<2xi1>
  return %c
}"""
    with pytest.raises(DiagnosticError, match="not a regular expression"):
        parse_module(regex, "t.relay")


def test_onnx_text_meets_numbers_as_onnxruntime_computes():
    """Normalize words, keep those matching a pattern, count them per row:
    strings in, numbers out."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto as TP
    from onnx import helper as oh

    from tvmd.frontend import onnx_backend
    nodes = [
        oh.make_node("StringNormalizer", ["x"], ["n"], case_change_action="LOWER", stopwords=["and", "the"],
                     locale="C"),   # onnxruntime's default, en_US.UTF-8, needs the machine's locale installed
        oh.make_node("RegexFullMatch", ["n"], ["m"], pattern="[a-z]+ing"),
        oh.make_node("Cast", ["m"], ["f"], to=TP.FLOAT),
        oh.make_node("ReduceSum", ["f"], ["count"], keepdims=0),
        oh.make_node("StringConcat", ["n", "n"], ["twice"]),
        oh.make_node("StringSplit", ["x"], ["parts", "lens"], delimiter="i"),
    ]
    g = oh.make_graph(nodes, "g", [oh.make_tensor_value_info("x", TP.STRING, [6])],
                      [oh.make_tensor_value_info("count", TP.FLOAT, []),
                       oh.make_tensor_value_info("twice", TP.STRING, [None]),
                       oh.make_tensor_value_info("parts", TP.STRING, [6, None]),
                       oh.make_tensor_value_info("lens", TP.INT64, [6])])
    model = oh.make_model(g, opset_imports=[oh.make_opsetid("", 20)])
    x = strings("Sing", "and", "RUNNING", "the", "swim", "Thinking")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})
    for mode in ("compiled", "interpreter"):
        got = onnx_backend.prepare(model, mode=mode).run([x])
        assert float(got[0]) == float(want[0]) == 3.0
        for g_, w in zip(got[1:], want[1:]):
            assert g_.shape == w.shape and list(np.asarray(g_).reshape(-1)) == list(np.asarray(w).reshape(-1))


def test_arithmetic_is_not_defined_on_strings():
    from tvmd.ir.diagnostics import DiagnosticError
    for op in ("add(%x, %x)", "negative(%x)", "maximum(%x, %x)"):
        text = f"""relay.func @main(%x: tensor<2xstring>) -> tensor<2xstring> {{
  %c = {op} : tensor<2xstring>
  return %c
}}"""
        with pytest.raises(DiagnosticError, match="not defined on strings"):
            parse_module(text, "t.relay")
