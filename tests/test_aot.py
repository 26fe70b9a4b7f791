"""The entry function compiled to one native call (runtime/aot.py): no
Python between kernels, numpy's answers, and a clear line when a model
cannot have one."""

import numpy as np
import pytest

from tvmd.runtime.build import build
from tvmd.runtime.program import Profile

RNG = np.random.default_rng(11)

MLP = """relay.func @main(%x: tensor<16x32xf32>, %w1: tensor<32x48xf32>, %w2: tensor<48x8xf32>) -> tensor<16x8xf32> {
  %0 = nn.matmul(%x, %w1) : tensor<16x48xf32>
  %1 = nn.relu(%0) : tensor<16x48xf32>
  %2 = nn.matmul(%1, %w2) : tensor<16x8xf32>
  %3 = nn.softmax(%2) {axis = 1} : tensor<16x8xf32>
  return %3
}"""


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def mlp_ref(x, w1, w2):
    h = np.maximum(x.astype(np.float64) @ w1, 0) @ w2
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_entry_calls_every_kernel_natively():
    """With every kernel's Python entry point made to fail, a run still
    works: the compiled entry calls the kernels' code directly.  A profiled
    run (kernel by kernel from Python, for the per-kernel table) does hit
    them."""
    cm = build(MLP, progress=False)
    prog = cm.executor.program
    assert prog.entry is not None and "one native function" in cm.summary()
    assert len(cm.kernels) >= 3
    x, w1, w2 = randn(16, 32), randn(32, 48), randn(48, 8)
    want = mlp_ref(x, w1, w2)
    np.testing.assert_allclose(cm.run(x, w1, w2), want, rtol=1e-4, atol=1e-6)

    def fail(env):
        raise AssertionError("a kernel was called from Python")
    prog.steps = [(fail, label, shapes) for _, label, shapes in prog.steps]
    for _ in range(3):
        np.testing.assert_allclose(cm.run(x, w1, w2), want, rtol=1e-4, atol=1e-6)
    with pytest.raises(AssertionError, match="from Python"):
        cm.run_list(x, w1, w2, profile=Profile())


def test_entry_results_inputs_returned_twice_and_out():
    text = """relay.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = exp(%x) : tensor<4x8xf32>
  return %0, %x, %0
}"""
    cm = build(text, progress=False)
    assert cm.executor.program.entry is not None
    x = randn(4, 8)
    a, b, c = cm.run(x)
    np.testing.assert_allclose(a, np.exp(x), rtol=1e-6)
    np.testing.assert_array_equal(b, x)
    np.testing.assert_array_equal(c, a)
    assert not np.shares_memory(b, x) and not np.shares_memory(a, c)
    outs = [np.empty((4, 8), np.float32) for _ in range(3)]
    got = cm.run(x, out=outs)
    assert all(g is o for g, o in zip(got, outs))
    np.testing.assert_allclose(outs[0], np.exp(x), rtol=1e-6)
    np.testing.assert_array_equal(outs[1], x)
    np.testing.assert_array_equal(outs[2], outs[0])


def test_two_models_with_kernels_of_one_name_each_keep_their_own():
    """Kernel symbols are per entry: two models whose kernels share names
    (fused_nn_relu...) in one process each call their own."""
    t1 = MLP
    t2 = MLP.replace("nn.softmax(%2) {axis = 1}", "nn.relu(%2)")
    cm1, cm2 = build(t1, progress=False), build(t2, progress=False)
    assert cm1.executor.program.entry is not None and cm2.executor.program.entry is not None
    x, w1, w2 = randn(16, 32), randn(32, 48), randn(48, 8)
    np.testing.assert_allclose(cm1.run(x, w1, w2), mlp_ref(x, w1, w2), rtol=1e-4, atol=1e-6)
    h = np.maximum(np.maximum(x.astype(np.float64) @ w1, 0) @ w2, 0)
    np.testing.assert_allclose(cm2.run(x, w1, w2), h, rtol=1e-4, atol=1e-5)


def test_an_interpreted_function_keeps_python_steps_and_is_said_once(monkeypatch, capsys):
    from tvmd.conversion.relay_to_te import strategies
    monkeypatch.delitem(strategies.STRATEGIES, "nn.softmax")
    cm = build(MLP, progress=False)
    prog = cm.executor.program
    assert prog.entry is None and "interpreter" in prog.entry_why
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "runs in the interpreter" in err[0], err
    x, w1, w2 = randn(16, 32), randn(32, 48), randn(48, 8)
    np.testing.assert_allclose(cm.run(x, w1, w2), mlp_ref(x, w1, w2), rtol=1e-4, atol=1e-6)


def test_a_tuple_result_keeps_python_steps_with_a_line(capsys):
    text = """relay.func @main(%x: tensor<4x12xf32>) -> tuple<tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>> {
  %0 = exp(%x) : tensor<4x12xf32>
  %1 = split(%0) {indices_or_sections = 3, axis = 1} : tuple<tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>>
  return %1
}"""
    cm = build(text, progress=False)
    prog = cm.executor.program
    err = capsys.readouterr().err
    assert prog.entry is None and "tuple" in prog.entry_why
    assert "kernel by kernel from Python" in err and "tuple" in err
    assert "kernel by kernel from Python" in cm.summary()
    x = randn(4, 12)
    got = cm.run(x)
    for g, w in zip(got, np.split(np.exp(x), 3, axis=1)):
        np.testing.assert_allclose(g, w, rtol=1e-6)
