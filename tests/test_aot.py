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


DYN = """relay.func @main(%x: tensor<1x?x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>, %g: tensor<64xf32>,
                      %past: tensor<1x?x64xf32>) -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<?x32xf32>) {
  %d = nn.dense(%x, %w) : tensor<1x?x64xf32>
  %a = nn.bias_add(%d, %b) {axis = -1} : tensor<1x?x64xf32>
  %n = nn.layer_norm(%a, %g, %b) {axis = -1, epsilon = 1e-5} : tensor<1x?x64xf32>
  %r = reshape(%n) {newshape = [-1, 64]} : tensor<?x64xf32>
  %s = split(%r) {indices_or_sections = 2, axis = 1} : tuple<tensor<?x32xf32>, tensor<?x32xf32>>
  %s0 = get_item(%s) {index = 0} : tensor<?x32xf32>
  %s1 = get_item(%s) {index = 1} : tensor<?x32xf32>
  %m = multiply(%s0, %s1) : tensor<?x32xf32>
  %c = concatenate(%past, %a) {axis = 1} : tensor<1x?x64xf32>
  %e = exp(%c) : tensor<1x?x64xf32>
  return %c, %e, %m
}"""


def dyn_ref(x, w, b, g, past):
    a = x.astype(np.float64) @ w.T.astype(np.float64) + b
    mu, var = a.mean(-1, keepdims=True), a.var(-1, keepdims=True)
    n = (a - mu) / np.sqrt(var + 1e-5) * g + b
    r = n.reshape(-1, 64)
    c = np.concatenate([past, a], axis=1)
    return c, np.exp(c), r[:, :32] * r[:, 32:]


def test_a_dynamic_model_is_one_native_call_at_every_length():
    """'?' sizes: the entry is one native call (no kernel called from
    Python), numpy's results at several lengths, the appended cache fed
    back grows in place.  (A size the kernels require equal fails with the
    error that names it: tests/test_relay_dynamic.py, through this entry.)"""
    cm = build(DYN, fallback=False)
    prog = cm.executor.program
    assert prog.entry is None and prog.dynamic_entry is not None
    assert "one native function calling the kernels, sized per call" in cm.summary()

    def fail(env):
        raise AssertionError("a kernel was called from Python")
    steps = prog.steps
    prog.steps = [(fail, label, shapes) for _, label, shapes in prog.steps]
    w, b, g = randn(64, 32), randn(64), randn(64)
    past = np.zeros((1, 0, 64), np.float32)
    for n in (5, 1, 1, 17):
        x = randn(1, n, 32)
        got = cm.run(x, w, b, g, past)
        for y, want in zip(got, dyn_ref(x, w, b, g, past)):
            np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
        if n == 1 and past.shape[1] == 6:
            assert got[0].ctypes.data == past.ctypes.data   # the cache grew in place
        past = got[0]
    prog.steps = steps


def test_the_dynamic_entry_matches_the_python_steps_on_a_decoder():
    """The GPT-style decoder: every output of a prompt and of decoding
    steps equal through the native entry and through the steps from Python
    (a profiled run), bit for bit: the same kernels in the same order."""
    import tvmd.frontend.onnx_backend as backend
    from tvmd.testing.gpt_decoder import decoder, empty_cache, next_cache, step_feeds
    model = decoder(layers=2, hidden=64, heads=2, vocab=100)
    rep = backend.prepare(model)
    imp = rep._dynamic
    prog = imp.run.compiled.executor.program
    assert prog.dynamic_entry is not None
    past = empty_cache(model)
    for n in (7, 1, 1):
        feeds = step_feeds(list(range(1, n + 1)), next(iter(past.values())).shape[1], past)
        arrays = [feeds[k] for k in imp.params]
        native = prog.run(arrays)
        steps = prog.run(arrays, profile=Profile())
        for a, c in zip(native, steps):
            np.testing.assert_array_equal(a, c)
        past = next_cache(dict(zip(rep.output_names, native)))
