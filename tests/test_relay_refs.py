"""References (dialects/relay/ops/ref.py): mutable cells in the relay
interpreter, against numpy; the passes respect their effects; type errors;
classic TVM's Relay text (ref, ref_read, ref_write, ref(T)) both ways."""

import numpy as np
import pytest

from tvmd.dialects.relay.interpreter import Interpreter
from tvmd.ir.diagnostics import DiagnosticError
from tvmd.ir.printer import print_module
from tvmd.parser import parse_module
from tvmd.runtime.build import build

# a closure that adds its argument to a counter cell, called three times
COUNTER = """relay.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %zero = constant dense<0.0> : tensor<3xf32>
  %r = ref_create(%zero) : !relay.ref<tensor<3xf32>>
  %bump = fn (%v: tensor<3xf32>) -> tuple<> {
    %old = ref_read(%r) : tensor<3xf32>
    %new = add(%old, %v) : tensor<3xf32>
    %u = ref_write(%r, %new) : tuple<>
    return %u
  }
  %a = call %bump(%x) : tuple<>
  %seen = ref_read(%r) : tensor<3xf32>
  %b = call %bump(%x) : tuple<>
  %twice = multiply(%x, %x) : tensor<3xf32>
  %c = call %bump(%twice) : tuple<>
  %total = ref_read(%r) : tensor<3xf32>
  return %seen, %total
}"""


def run(text, *args):
    interp = Interpreter(parse_module(text, "t.relay"))
    return interp.call(interp.functions["main"], list(args), None)


def test_a_closure_updates_a_cell_between_reads():
    x = np.array([1.0, -2.0, 0.5], np.float32)
    seen, total = run(COUNTER, x)
    np.testing.assert_allclose(seen, x)
    np.testing.assert_allclose(total, 2 * x + x * x)


def test_build_runs_it_in_the_interpreter_and_says_so(capfd):
    cm = build(COUNTER)
    assert cm.mode == "interpreter" and "references" in cm.reason
    assert "runs in the relay interpreter: it holds references" in capfd.readouterr().err
    x = np.array([3.0, 0.0, -1.0], np.float32)
    np.testing.assert_allclose(cm.run(x)[1], 2 * x + x * x)


def test_passes_keep_the_effects():
    """dce keeps a write nobody reads the result of; cse does not merge the
    reads around a write; fold-constant runs none of them."""
    from tvmd.ir.pass_manager import PassManager, instantiate, parse_pipeline
    from tvmd.ir.registry import get_pass_class
    m = parse_module(COUNTER, "t.relay")
    PassManager(instantiate(parse_pipeline("dce,cse,fold-constant"), get_pass_class)).run(m)
    text = print_module(m)
    assert text.count("ref_write") == 1 and text.count("ref_read") == 3 and "ref_create(%zero)" in text
    x = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_allclose(run(text, x)[1], 2 * x + x * x)


def test_type_errors():
    bad_write = """relay.func @main(%x: tensor<3xf32>) -> tuple<> {
  %r = ref_create(%x) : !relay.ref<tensor<3xf32>>
  %y = constant dense<1> : tensor<3xi32>
  %u = ref_write(%r, %y) : tuple<>
  return %u
}"""
    with pytest.raises(DiagnosticError, match="writes a tensor<3xi32> into a reference to tensor<3xf32>"):
        parse_module(bad_write, "t.relay")
    bad_read = """relay.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %v = ref_read(%x) : tensor<3xf32>
  return %v
}"""
    with pytest.raises(DiagnosticError, match="expects a reference"):
        parse_module(bad_read, "t.relay")


def test_tvm_relay_text_both_ways():
    from tvmd.frontend.tvm_relay import import_tvm_relay as read_tvm_relay
    from tvmd.frontend.tvm_relay.writer import export_tvm_relay as write_tvm_relay
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  let %r: ref(Tensor[(3), float32]) = ref(%x);
  %0 = ref_read(%r);
  %1 = add(%0, %0);
  %2 = ref_write(%r, %1);
  %3 = ref_read(%r);
  add(%3, %0)
}
"""
    m = read_tvm_relay(text, "m.txt")
    x = np.array([1.0, 2.0, -4.0], np.float32)
    np.testing.assert_allclose(run(print_module(m), x)[0], 3 * x)
    back = write_tvm_relay(m)
    assert "ref(%x)" in back and "ref_write(" in back and "ref(Tensor[(3), float32])" in back
    np.testing.assert_allclose(run(print_module(read_tvm_relay(back, "b.txt")), x)[0], 3 * x)
