"""Relay functions with '?' dimensions compile once and run at any size.

One build of a function over tensor<?x...> gives compiled kernels (none
left to the interpreter) whose results equal numpy at every length; no
compile happens after the build; sizes that a kernel requires equal are
checked before it runs; an op with no rule for its dynamic sizes falls
back to the interpreter, saying why.
"""

import numpy as np
import pytest

from tvmd.runtime.build import build

FFN = """relay.func @main(%x: tensor<1x?x64xf32>, %w1: tensor<128x64xf32>, %b1: tensor<128xf32>,
                      %w2: tensor<64x128xf32>, %g: tensor<64xf32>, %beta: tensor<64xf32>) -> tensor<1x?x64xf32> {
  %h = nn.dense(%x, %w1) : tensor<1x?x128xf32>
  %hb = add(%h, %b1) : tensor<1x?x128xf32>
  %a = nn.relu(%hb) : tensor<1x?x128xf32>
  %o = nn.dense(%a, %w2) : tensor<1x?x64xf32>
  %r = add(%o, %x) : tensor<1x?x64xf32>
  %n = nn.layer_norm(%r, %g, %beta) {axis = -1, epsilon = 1e-5} : tensor<1x?x64xf32>
  %s = nn.softmax(%n) {axis = -1} : tensor<1x?x64xf32>
  return %s
}
"""


def ffn_reference(x, w1, b1, w2, g, beta):
    a = np.maximum(x @ w1.T + b1, 0)
    r = a @ w2.T + x
    mu = r.mean(-1, keepdims=True)
    var = r.var(-1, keepdims=True)
    n = (r - mu) / np.sqrt(var + 1e-5) * g + beta
    e = np.exp(n - n.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def weights(rng):
    def f(*s):
        return (rng.standard_normal(s) * 0.2).astype(np.float32)
    return f(128, 64), f(128), f(64, 128), f(64), f(64)


def test_one_build_serves_every_length(monkeypatch):
    m = build(FFN, progress=False)
    assert not m.interpreted and m.kernels, m.summary()
    from tvmd.backend.llvm import jit
    compiles = []
    real = jit.compile
    monkeypatch.setattr(jit, "compile", lambda *a, **k: compiles.append(a) or real(*a, **k))
    rng = np.random.default_rng(0)
    w = weights(rng)
    for n in (1, 7, 64, 300):
        x = rng.standard_normal((1, n, 64)).astype(np.float32)
        y = m.run(x, *w)
        assert y.shape == (1, n, 64)
        np.testing.assert_allclose(y, ffn_reference(x, *w), rtol=1e-4, atol=1e-5)
    assert compiles == []


def test_sizes_that_must_match_are_checked_before_the_kernel_runs():
    m = build("""relay.func @main(%x: tensor<?x16xf32>, %y: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %0 = add(%x, %y) : tensor<?x16xf32>
  %1 = exp(%0) : tensor<?x16xf32>
  return %1
}
""", progress=False)
    assert not m.interpreted
    x = np.ones((5, 16), np.float32)
    np.testing.assert_allclose(m.run(x, x), np.exp(x + x), rtol=1e-6)
    with pytest.raises(ValueError, match="does not broadcast"):
        m.run(x, np.ones((1, 16), np.float32))
    with pytest.raises(ValueError, match="must equal"):
        m.run(x, np.ones((4, 16), np.float32))


def test_transpose_and_reshape_keep_the_dynamic_dimension():
    m = build("""relay.func @main(%x: tensor<?x4x16xf32>) -> tensor<4x?x16xf32> {
  %0 = reshape(%x) {newshape = [-1, 64]} : tensor<?x64xf32>
  %1 = sigmoid(%0) : tensor<?x64xf32>
  %2 = reshape(%1) {newshape = [-1, 4, 16]} : tensor<?x4x16xf32>
  %3 = transpose(%2) {axes = [1, 0, 2]} : tensor<4x?x16xf32>
  return %3
}
""", progress=False)
    assert not m.interpreted, m.summary()
    rng = np.random.default_rng(1)
    for n in (1, 3, 33):
        x = rng.standard_normal((n, 4, 16)).astype(np.float32)
        np.testing.assert_allclose(m.run(x), (1 / (1 + np.exp(-x))).transpose(1, 0, 2), rtol=1e-5, atol=1e-6)


def test_an_op_without_a_dynamic_rule_falls_back_and_says_why(capsys):
    m = build("""relay.func @main(%x: tensor<?x8xf32>) -> tensor<?x4xf32> {
  %0 = reshape(%x) {newshape = [-1, 4]} : tensor<?x4xf32>
  %1 = exp(%0) : tensor<?x4xf32>
  return %1
}
""")
    assert m.interpreted
    why = " ".join(w for _, w in m.interpreted)
    assert "reshape" in why and "not one input size" in why
    assert "interpreter" in capsys.readouterr().err
    x = np.arange(24, dtype=np.float32).reshape(3, 8) / 8
    np.testing.assert_allclose(m.run(x), np.exp(x.reshape(-1, 4)), rtol=1e-6)


ATTENTION = """relay.func @main(%q: tensor<2x?x32xf32>, %k: tensor<2x?x32xf32>, %v: tensor<2x?x32xf32>) -> tensor<2x?x32xf32> {
  %s = nn.batch_matmul(%q, %k) {transpose_b = true} : tensor<2x?x?xf32>
  %c = constant dense<0.17677669> : tensor<f32>
  %t = multiply(%s, %c) : tensor<2x?x?xf32>
  %p = nn.softmax(%t) {axis = -1} : tensor<2x?x?xf32>
  %o = nn.batch_matmul(%p, %v) {transpose_b = false} : tensor<2x?x32xf32>
  return %o
}
"""


def test_attention_over_a_dynamic_sequence_reduces_over_run_time_extents():
    """softmax over the '?' key axis and p @ v summing over it: reductions
    whose extents are sizes known at run time."""
    m = build(ATTENTION, progress=False)
    # q and v viewed 4-d, the key transposed to Kᵀ per head, the attention, the view back
    assert not m.interpreted and len(m.kernels) == 4, m.summary()
    rng = np.random.default_rng(2)
    for n in (1, 7, 64, 300):
        q, k, v = (rng.standard_normal((2, n, 32)).astype(np.float32) for _ in range(3))
        s = q @ k.transpose(0, 2, 1) * np.float32(0.17677669)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        np.testing.assert_allclose(m.run(q, k, v), p @ v, rtol=1e-4, atol=1e-5)


def test_a_reshape_of_run_time_size_is_a_view_not_a_copy():
    """A kernel that only reshapes a '?' tensor (GPT-2's logits to
    1 x seq x vocab) is not run: its result is the input reshaped.  Each
    call's result is its own (the view is of that call's fresh product),
    and the values are numpy's."""
    text = """relay.func @main(%x: tensor<?x16xf32>, %w: tensor<24x16xf32>) -> tensor<1x?x24xf32> {
  %d = nn.dense(%x, %w) : tensor<?x24xf32>
  %r = reshape(%d) {newshape = [1, -1, 24]} : tensor<1x?x24xf32>
  return %r
}"""
    cm = build(text, fallback=False)
    views = [op.sym_name for op in cm.module.body.ops if "reshape_view" in op.attributes]
    assert views and all("reshape" in name for name in views), views
    rng = np.random.default_rng(3)
    w = rng.standard_normal((24, 16)).astype(np.float32)
    results = []
    for rows in (5, 5, 9):
        x = rng.standard_normal((rows, 16)).astype(np.float32)
        y = cm.run(x, w)
        np.testing.assert_allclose(y, (x @ w.T)[None], rtol=1e-5, atol=1e-5)
        results.append((y, (x @ w.T)[None]))
    for y, want in results:   # earlier results untouched by later calls
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_a_value_sized_per_call_is_let_go_after_its_last_use():
    """A chain of '?' products (each a kernel of its own), run step by step
    from Python (a profiled run, or a model the native entry cannot take): while it runs,
    at most the step's inputs and outputs are held -- each intermediate is
    released after its last reader, so a deep model's peak is a layer's
    activations, not all of them -- and the results are numpy's; a value
    read again later (the residual) stays until then."""
    depth = 6
    lines = ["relay.func @main(%x: tensor<?x32xf32>, %w: tensor<32x32xf32>) -> tensor<?x32xf32> {"]
    cur = "%x"
    for i in range(depth):
        lines.append(f"  %d{i} = nn.dense({cur}, %w) : tensor<?x32xf32>")
        cur = f"%d{i}"
    lines += [f"  %r = add({cur}, %d0) : tensor<?x32xf32>", "  return %r", "}"]
    cm = build("\n".join(lines), fallback=False)
    prog = cm.executor.program
    live = []
    first = prog.n_inputs

    def counting(run):
        def step(env):
            run(env)
            live.append(sum(1 for v in env[first:] if isinstance(v, np.ndarray)))
        return step
    prog.steps = [(counting(run), label, shapes) for run, label, shapes in prog.steps]
    prog.dynamic_entry = None   # the steps from Python (as a profiled run takes them)
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((7, 32)).astype(np.float32), (rng.standard_normal((32, 32)) / 6).astype(np.float32)
    want = x
    for _ in range(depth):
        want = want @ w.T
    d0 = x @ w.T
    np.testing.assert_allclose(cm.run(x, w), want + d0, rtol=1e-4, atol=1e-4)
    assert len(live) == depth   # (the add fuses into the last product)
    # held as each step ends: its input, its output and d0 (read by the
    # last step): 3, not the 6 intermediates of the run
    assert live[:2] == [1, 2] and max(live) == 3, live


def test_a_whole_tensor_reduction_into_a_scalar_over_run_time_sizes():
    """min / max of a '?' tensor into a scalar (DynamicQuantizeLinear's
    range): the kernel's result is static, its loops are not, so it takes
    the sizes per call like a kernel with a '?' result; its scalar is
    intermediate storage of static size."""
    text = """relay.func @main(%x: tensor<1x?x8xf32>) -> (tensor<f32>, tensor<1x?x8xf32>) {
  %0 = min(%x) : tensor<f32>
  %1 = constant dense<0.0> : tensor<f32>
  %2 = minimum(%0, %1) : tensor<f32>
  %3 = max(%x) : tensor<f32>
  %4 = subtract(%3, %2) : tensor<f32>
  %5 = divide(%x, %4) : tensor<1x?x8xf32>
  return %2, %5
}"""
    cm = build(text, progress=False, fallback=False)
    for n in (1, 5, 37):
        x = np.random.default_rng(n).standard_normal((1, n, 8)).astype(np.float32) + 0.5
        low, scaled = cm.run(x)
        want = min(float(x.min()), 0.0)
        np.testing.assert_allclose(low, want, rtol=1e-6)
        np.testing.assert_allclose(scaled, x / (x.max() - want), rtol=1e-5)
