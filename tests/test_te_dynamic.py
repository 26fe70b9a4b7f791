"""Symbolic dimensions: a te.func over tensor<?x8xf32> with its size as an
index parameter lowers to a tir.func over a dynamic memref, compiles once
with LLVM and runs for any size; a split of the symbolic axis gets a tail
guard.  Numbers against numpy."""

import numpy as np
import pytest

from tvmd.conversion.te_to_tir.apply_schedule import apply_to_func
from tvmd.dialects.te.interpreter import run
from tvmd.dialects.tir.interpreter import run as run_tir
from tvmd.ir.diagnostics import DiagnosticError
from tvmd.ir.pass_manager import PassManager
from tvmd.ir.printer import print_module
from tvmd.ir.registry import get_pass_class
from tvmd.parser import parse_module

SOFTPLUS = """te.func @softplus(%X: tensor<?x8xf32>, %n: index, %W: tensor<8x4xf32>) -> tensor<?x4xf32> {
  %E = te.compute [%i, %j] (%n) : tensor<?x8xf32> {
    %x = te.read %X[%i, %j] : f32
    %e = te.intrin "exp"(%x) : f32
    yield %e
  }
  %Y = te.compute [%i, %o] (%n) reduce [%k: 8] "sum" : tensor<?x4xf32> {
    %e = te.read %E[%i, %k] : f32
    %w = te.read %W[%k, %o] : f32
    %m = arith.mulf %e, %w : f32
    yield %m
  }
  te.compute_inline %E
SCHEDULE
  return %Y
}
"""

SPLIT = """  %i, %o, %k = te.axes %Y
  %io, %ii = te.split %i {factor = 4}
  te.parallel %io
  te.vectorize %o"""


def want(x, w):
    return np.exp(x) @ w


def lowered(sched):
    m = parse_module(SOFTPLUS.replace("SCHEDULE", sched), "d.te")
    PassManager([(None, get_pass_class("lower-te-to-tir")())]).run(m)
    return m


@pytest.mark.parametrize("sched", ["", SPLIT, SPLIT.replace("factor = 4", "nparts = 3")])
def test_symbolic_rows_through_both_interpreters(sched):
    rng = np.random.default_rng(3)
    w = rng.standard_normal((8, 4)).astype(np.float32)
    m = parse_module(SOFTPLUS.replace("SCHEDULE", sched), "d.te")
    f = m.body.first
    for n in (1, 6, 9):
        x = rng.standard_normal((n, 8)).astype(np.float32)
        np.testing.assert_allclose(run(f, x, n, w)[0], want(x, w), rtol=1e-5, atol=1e-5)
    apply_to_func(f)
    text = print_module(m)
    assert "%Y = te.realize (%n) : tensor<?x4xf32>" in text
    assert print_module(parse_module(text)) == text
    tir = lowered(sched)
    g = tir.body.first
    assert str(g.body.args[0].type) == "memref<?x8xf32>" and str(g.body.args[3].type) == "memref<?x4xf32>"
    for n in (1, 6, 9):
        x = rng.standard_normal((n, 8)).astype(np.float32)
        np.testing.assert_allclose(run(f, x, n, w)[0], want(x, w), rtol=1e-5, atol=1e-5)
        y = np.zeros((n, 4), np.float32)
        run_tir(g, x, n, w, y)
        np.testing.assert_allclose(y, want(x, w), rtol=1e-5, atol=1e-5)


def test_split_of_a_symbolic_axis_has_a_tail_guard():
    text = print_module(lowered(SPLIT))
    assert "arith.floordivsi" in text   # (n + 3) floordiv 4 outer iterations
    assert "arith.cmpi slt" in text and "tir.if" in text


def test_compiled_once_runs_for_any_size():
    from tvmd.backend.llvm import jit
    lib = jit.compile(lowered(SPLIT))
    rng = np.random.default_rng(4)
    w = rng.standard_normal((8, 4)).astype(np.float32)
    for n in (1, 3, 4, 17, 64):
        x = rng.standard_normal((n, 8)).astype(np.float32)
        y = np.full((n, 4), np.nan, np.float32)
        lib["softplus"](x, n, w, y)
        np.testing.assert_allclose(y, want(x, w), rtol=1e-5, atol=1e-5)


def test_dynamic_intermediate_is_a_diagnostic():
    m = parse_module(SOFTPLUS.replace("  te.compute_inline %E\n", "").replace("SCHEDULE", ""), "d.te")
    with pytest.raises(DiagnosticError, match="a stage of dynamic shape must be an output of the function or inlined"):
        apply_to_func(m.body.first)


def test_size_count_is_checked():
    bad = SOFTPLUS.replace("SCHEDULE", "").replace("[%i, %o] (%n)", "[%i, %o]")
    with pytest.raises(DiagnosticError, match=r"tensor<\?x4xf32> has 1 dynamic dimension\(s\) but 0 size\(s\)"):
        parse_module(bad)


ROWSUM = """te.func @rowsum(%X: tensor<4x?xf32>, %n: index) -> tensor<4xf32> {
  %S = te.compute [%i] (%n) reduce [%k: ?] "sum" : tensor<4xf32> {
    %x = te.read %X[%i, %k] : f32
    yield %x
  }
  return %S
}
"""


def test_a_reduce_extent_known_at_run_time():
    """``reduce [%k: ?]``: the extent is the compute's size operand after
    those of its '?' dimensions; it prints back, and both interpreters and
    the lowered loops sum over it."""
    m = parse_module(ROWSUM, "r.te")
    assert print_module(m) == ROWSUM
    f = m.body.first
    rng = np.random.default_rng(4)
    for n in (1, 5, 17):
        x = rng.standard_normal((4, n)).astype(np.float32)
        np.testing.assert_allclose(run(f, x, n)[0], x.sum(1), rtol=1e-5, atol=1e-6)
    g = lowered_text(ROWSUM).body.first
    for n in (1, 5, 17):
        x = rng.standard_normal((4, n)).astype(np.float32)
        y = np.zeros(4, np.float32)
        run_tir(g, x, n, y)
        np.testing.assert_allclose(y, x.sum(1), rtol=1e-5, atol=1e-6)


def test_a_run_time_reduce_extent_needs_its_size_operand():
    bad = ROWSUM.replace("(%n) reduce", "reduce")
    with pytest.raises(DiagnosticError, match="1 dynamic reduce extent"):
        parse_module(bad, "r.te")


def lowered_text(text):
    m = parse_module(text, "d.te")
    PassManager([(None, get_pass_class("lower-te-to-tir")())]).run(m)
    return m
