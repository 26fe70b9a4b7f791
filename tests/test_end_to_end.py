"""Relay text to machine code: random programs through the whole pipeline.

Each random well-typed relay program goes through text (print, parse) and
then fuse-ops -> lower-relay-to-te -> apply-schedule -> lower-te-to-tir ->
tir-simplify -> LLVM JIT; the compiled result must equal the numpy
reference interpreter run on the original program.
"""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tvmd.dialects.relay.interpreter import run_function
from tvmd.testing.relay_programs import relay_programs
from tvmd.ir.pass_manager import PassContext
from tvmd.ir.printer import print_module
from tvmd.ir.registry import get_pass_class
from tvmd.ir.verifier import verify
from tvmd.parser import parse_module
from tvmd.runtime.executor import Executor

PIPELINE = ["infer-type", "fuse-ops", "lower-relay-to-te", "apply-schedule", "lower-te-to-tir", "tir-simplify"]


def lower(module, extra=()):
    ctx = PassContext()
    for name in list(extra) + PIPELINE:
        get_pass_class(name)().run(module, ctx)
        verify(module)
    return module


def compile_and_run(text, inputs, extra=()):
    m = lower(parse_module(text), extra)
    # the lowered module is text too: run what a user would get from the file
    m = parse_module(print_module(m))
    return Executor(m).run(*inputs)


@settings(max_examples=300 if os.environ.get("TVMD_FUZZ") else 12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(relay_programs(max_ops=6))
def test_random_programs_compile_to_the_reference_result(prog):
    text, inputs = prog
    m = parse_module(text)
    assert print_module(parse_module(print_module(m))) == print_module(m)
    want = run_function(parse_module(text), "main", *inputs)
    got = compile_and_run(text, inputs)
    np.testing.assert_allclose(got if not isinstance(got, (list, tuple)) else got[0],
                               want if not isinstance(want, (list, tuple)) else want[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_example_cnn_matches_numpy(layout):
    path = os.path.join(os.path.dirname(__file__), "..", "examples", "cnn.relay")
    text = open(path).read()
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    m = parse_module(text)
    if layout == "NHWC":
        get_pass_class("convert-layout").from_options("nn.conv2d=NHWC").run(m, PassContext())
        get_pass_class("fold-constant")().run(m, PassContext())
    got = Executor(lower(m)).run(x)
    want = run_function(parse_module(text), "main", x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_dense_mlp_matches_numpy():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 32)).astype(np.float32)
    w1 = rng.standard_normal((64, 32)).astype(np.float32) / 6
    b1 = rng.standard_normal(64).astype(np.float32)
    w2 = rng.standard_normal((10, 64)).astype(np.float32) / 8
    text = """relay.func @main(%x: tensor<4x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>, %w2: tensor<10x64xf32>) {
  %d = nn.dense(%x, %w1)
  %b = nn.bias_add(%d, %b1)
  %r = nn.relu(%b)
  %o = nn.dense(%r, %w2)
  return %o
}"""
    got = compile_and_run(text, [x, w1, b1, w2])
    want = np.maximum(x @ w1.T + b1, 0) @ w2.T      # numpy directly, not our interpreter
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_one_element_constant_as_a_dense_weight():
    """fuse-ops clones one-element constants into the kernel, where they are
    splats; dense must still get its weight as a tensor (found by the fuzzer)."""
    text = """relay.func @main(%x1: tensor<1x1xf32>) {
  %c5 = constant dense<[[3.0]]> : tensor<1x1xf32>
  %t6 = nn.dense(%x1, %c5)
  return %t6
}"""
    x = np.array([[2.0]], np.float32)
    np.testing.assert_array_equal(compile_and_run(text, [x]), x * 3.0)


def test_thread_bound_schedule_runs_right_in_the_tir_interpreter():
    """The GPU schedule of test/lit/translate/te-bind-cuda.te, lowered, gives
    numpy's numbers when the TIR interpreter runs its thread loops."""
    from tvmd.dialects.tir.interpreter import run
    path = os.path.join(os.path.dirname(__file__), "..", "test", "lit", "translate", "te-bind-cuda.te")
    m = parse_module(open(path).read())
    ctx = PassContext()
    for name in ("apply-schedule", "lower-te-to-tir", "tir-simplify"):
        get_pass_class(name)().run(m, ctx)
    f = m.lookup("add_relu")
    assert f.name == "tir.func"
    assert any(op.attributes.get("thread") == "threadIdx.x" for op in f.walk() if op.name == "tir.for")
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 4096)).astype(np.float32)
    c = np.empty(4096, np.float32)
    run(f, a, b, c)
    np.testing.assert_array_equal(c, np.maximum(a + b, 0))
