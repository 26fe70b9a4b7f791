"""The compile driver (runtime/build.py), the planned executor (runtime/program.py)
and static memory planning (runtime/memory_plan.py).

Numerics are checked against numpy written out here, never against our own
output."""

import io

import numpy as np
import pytest

from tvmd.runtime.build import BuildError, TtyProgress, build
from tvmd.runtime.memory_plan import plan_memory
from tvmd.runtime.program import Profile

CHAIN = """
relay.func @main(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %0 = nn.relu(%x) : tensor<16x64xf32>
  %1 = exp(%0) : tensor<16x64xf32>
  %2 = negative(%1) : tensor<16x64xf32>
  %3 = add(%2, %x) : tensor<16x64xf32>
  %4 = sigmoid(%3) : tensor<16x64xf32>
  return %4
}
"""


def chain_ref(x):
    y = -np.exp(np.maximum(x, 0)) + x
    return 1 / (1 + np.exp(-y))


def rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# -- the planner on its own -------------------------------------------------------------

def test_plan_reuses_freed_blocks_best_fit():
    # a chain: b0 -> b1 -> b2 -> b3 (returned); each read only by the next step
    steps = [([("b0", 1000)], ["x"], "v0", "kernel"),
             ([("b1", 1000)], ["v0"], "v1", "kernel"),
             ([("b2", 500)], ["v1"], "v2", "kernel"),
             ([("b3", 1000)], ["v2"], "v3", "kernel")]
    plan = plan_memory(steps, ["v3"])
    assert plan.block_of["b3"] is None and plan.escaping == {"b3"}
    # b0 is freed after step 1, so b2 (smaller) takes its block; b1's inputs are never its outputs
    assert plan.block_of["b0"] != plan.block_of["b1"]
    assert plan.block_of["b2"] == plan.block_of["b0"]
    assert len(plan.block_sizes) == 2
    assert plan.planned_bytes < plan.unplanned_bytes


def test_plan_keeps_buffers_alive_through_views():
    # v1 is an interpreted view (reshape) of b0: b0 stays live until v1's last use
    steps = [([("b0", 256)], ["x"], "v0", "kernel"),
             ([], ["v0"], "v1", "interpreted"),
             ([("b1", 256)], ["x"], "v2", "kernel"),
             ([("b2", 256)], ["v1", "v2"], "v3", "kernel")]
    plan = plan_memory(steps, ["v3"])
    assert plan.block_of["b1"] != plan.block_of["b0"]


def test_plan_outputs_viewed_by_a_returned_value_escape():
    steps = [([("b0", 64)], ["x"], "v0", "kernel"),
             ([], ["v0"], "v1", "interpreted")]
    plan = plan_memory(steps, ["v1"])
    assert plan.escaping == {"b0"} and plan.block_of["b0"] is None


# -- build + run --------------------------------------------------------------------------

def test_build_compiles_and_matches_numpy():
    cm = build(CHAIN, progress=False)
    assert cm.mode == "compiled" and cm.kernels and not cm.interpreted
    x = rand((16, 64))
    np.testing.assert_allclose(cm.run(x), chain_ref(x), rtol=1e-5, atol=1e-6)
    assert set(cm.phase_times) == {"parse", "graph", "lower", "codegen", "plan"}


def test_planned_memory_is_smaller_and_outputs_are_owned_by_the_caller():
    cm = build(CHAIN, opt_level=0, progress=False)     # opt-level 0: one kernel per op
    assert len(cm.kernels) == 5
    plan = cm.memory_plan
    assert plan.planned_bytes < plan.unplanned_bytes
    assert "planned vs" in cm.summary()
    x1, x2 = rand((16, 64), 1), rand((16, 64), 2)
    y1 = cm.run(x1)
    keep = y1.copy()
    y2 = cm.run(x2)
    # the second run neither wrote into the first output nor returned the same buffer
    assert not np.shares_memory(y1, y2)
    np.testing.assert_array_equal(y1, keep)
    np.testing.assert_allclose(y2, chain_ref(x2), rtol=1e-5, atol=1e-6)
    for blk in cm.executor.program.blocks:
        assert not np.shares_memory(y2, blk)


def test_returned_constant_and_input_are_copies():
    text = """
relay.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c = constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = add(%x, %c) : tensor<4xf32>
  return %0, %c, %x
}
"""
    cm = build(text, progress=False)
    x = np.arange(4, dtype=np.float32)
    s, c, xx = cm.run(x)
    np.testing.assert_array_equal(s, x + [1, 2, 3, 4])
    assert not np.shares_memory(xx, x)
    c[...] = 0      # the caller owns it: the bound constant is untouched
    np.testing.assert_array_equal(cm.run(x)[1], [1, 2, 3, 4])


def test_ops_without_a_compute_fall_back_to_the_interpreter(monkeypatch, capsys):
    from tvmd.conversion.relay_to_te import strategies
    monkeypatch.delitem(strategies.STRATEGIES, "exp")
    cm = build(CHAIN, opt_level=0, progress=False)
    err = capsys.readouterr().err.splitlines()   # one line per interpreted function, with the reason
    assert len(err) == 1 and "runs in the interpreter" in err[0] and "no TE compute" in err[0], err
    names = [n for n, _ in cm.interpreted]
    assert len(names) == 1 and "exp" in names[0]
    assert "no TE compute" in cm.interpreted[0][1]
    assert len(cm.kernels) == 4
    x = rand((16, 64), 3)
    np.testing.assert_allclose(cm.run(x), chain_ref(x), rtol=1e-5, atol=1e-6)
    prof = Profile()
    cm.run_list(x, profile=prof)
    table = prof.table()
    assert "(interpreted)" in table and table.splitlines()[-1].startswith("total")
    with pytest.raises(Exception, match="no TE compute"):
        build(CHAIN, opt_level=0, progress=False, fallback=False)


def test_dynamic_shapes_without_a_rule_fall_back():
    text = """
relay.func @main(%x: tensor<?x8xf32>, %y: tensor<4x8xf32>) -> (tensor<?x4xf32>, tensor<4x8xf32>) {
  %c = reshape(%x) {newshape = [-1, 4]} : tensor<?x4xf32>
  %0 = nn.relu(%c) : tensor<?x4xf32>
  %1 = multiply(%y, %y) : tensor<4x8xf32>
  return %0, %1
}
"""
    cm = build(text, progress=False)
    assert len(cm.interpreted) == 1 and len(cm.kernels) == 1
    x, y = rand((3, 8)), rand((4, 8), 1)
    a, b = cm.run(x, y)
    np.testing.assert_allclose(a, np.maximum(x.reshape(-1, 4), 0))
    np.testing.assert_allclose(b, y * y, rtol=1e-6)


def test_control_flow_runs_on_the_interpreter(capsys):
    text = """
relay.func @main(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %r = if %c : tensor<4xf32> {
    %a = nn.relu(%x) : tensor<4xf32>
    yield %a
  } else {
    %b = negative(%x) : tensor<4xf32>
    yield %b
  }
  return %r
}
"""
    cm = build(text, progress=False)
    assert cm.mode == "interpreter" and "not straight-line" in cm.reason
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "relay interpreter" in err[0] and "not straight-line" in err[0], err
    x = rand((4,))
    np.testing.assert_allclose(cm.run(np.array(False), x), -x)
    with pytest.raises(BuildError, match="not straight-line"):
        build(text, progress=False, fallback=False)


def test_progress_on_a_terminal_only():
    class Tty(io.StringIO):
        def isatty(self):
            return True
    seen = []
    build(CHAIN, opt_level=0, progress=lambda phase, i, n, name: seen.append((phase, i, n)))
    lowered = [s for s in seen if s[0] == "lower"]
    assert [(s[1], s[2]) for s in lowered] == [(i, 5) for i in range(1, 6)]
    t = Tty()
    p = TtyProgress(t)
    p("lower", 1, 2, "fused_a")
    p("lower", 2, 2, "b")
    p.done()
    out = t.getvalue()
    assert out.startswith("\rtvmd: lower [1/2] fused_a") and out.endswith("\r")
    # piped (not a tty): build writes nothing to stderr
    import contextlib
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        build(CHAIN, progress=None)
    assert err.getvalue() == ""


def test_onnx_backend_compiles_by_default():
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from tvmd.frontend import onnx_backend
    g = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["s", "x"], ["y"])],
                          "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    x = rand((2, 5))
    want = x / (1 + np.exp(-x))
    rep = onnx_backend.prepare(model)
    (imp,) = rep._imports.values()
    assert rep.mode == "compiled" and imp.run.compiled.kernels
    np.testing.assert_allclose(rep.run([x])[0], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rep.run([x + 1])[0], (x + 1) / (1 + np.exp(-x - 1)), rtol=1e-5, atol=1e-6)
    rep_i = onnx_backend.prepare(model, mode="interpreter")
    np.testing.assert_allclose(rep_i.run([x])[0], want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="unknown mode"):
        onnx_backend.prepare(model, mode="jit")


def test_zero_d_results_and_one_element_tuples_keep_their_types():
    text = """
relay.func @main(%x: tensor<f32>, %y: tensor<f32>) -> (tensor<f32>, tuple<tensor<f32>>) {
  %0 = add(%x, %y) : tensor<f32>
  %1 = multiply(%0, %x) : tensor<f32>
  %2 = tuple(%1) : tuple<tensor<f32>>
  return %0, %2
}
"""
    cm = build(text, progress=False)
    s, t = cm.run(np.array(2.0, np.float32), np.array(3.0, np.float32))
    assert isinstance(s, np.ndarray) and s.shape == () and s == 5.0
    assert isinstance(t, tuple) and len(t) == 1 and t[0].shape == () and t[0] == 10.0


class _DLPackOnly:
    """A foreign array: nothing but the DLPack protocol (as a torch tensor
    on the CPU offers it)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_run_writes_results_into_the_callers_arrays():
    """run(..., out=...): the last kernel writes straight into the caller's
    array (no allocation of the result's size per run), which is returned."""
    import tracemalloc
    n = 1 << 18
    text = f"""relay.func @main(%x: tensor<{n}xf32>, %y: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %0 = add(%x, %y) : tensor<{n}xf32>
  %1 = nn.relu(%0) : tensor<{n}xf32>
  return %1
}}"""
    cm = build(text, progress=False)
    x, y = rand((n,), 1), rand((n,), 2)
    out = np.full(n, np.nan, np.float32)
    assert cm.run(x, y, out=out) is out
    np.testing.assert_allclose(out, np.maximum(x + y, 0), rtol=1e-6)
    tracemalloc.start()
    try:
        cm.run(x, y, out=[out])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < n * 4 // 2, f"a run with out= allocated {peak} bytes"


def test_out_with_several_results_and_a_returned_input():
    text = """relay.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = exp(%x) : tensor<4x8xf32>
  return %0, %x
}"""
    cm = build(text, progress=False)
    x = rand((4, 8), 3)
    a, b = np.empty((4, 8), np.float32), np.empty((4, 8), np.float32)
    got = cm.run(x, out=(a, b))
    assert got[0] is a and got[1] is b and not np.shares_memory(b, x)
    np.testing.assert_allclose(a, np.exp(x), rtol=1e-6)
    np.testing.assert_array_equal(b, x)


def test_out_is_checked():
    cm = build(CHAIN, opt_level=0, progress=False)
    x = rand((16, 64), 3)
    shape = cm.run(x).shape
    with pytest.raises(Exception, match="shape"):
        cm.run(x, out=np.empty((shape[0] + 1,) + shape[1:], np.float32))
    with pytest.raises(Exception, match="dtype"):
        cm.run(x, out=np.empty(shape, np.float64))
    with pytest.raises(Exception, match="1 result"):
        cm.run(x, out=[np.empty(shape, np.float32)] * 2)
    with pytest.raises(Exception, match="C-contiguous"):
        cm.run(x, out=np.empty(shape[::-1], np.float32).T)
    if shape == x.shape:
        with pytest.raises(Exception, match="shares memory with input 0"):
            cm.run(x, out=x)


def test_dlpack_in_and_out():
    """A DLPack producer goes in without a copy; results are numpy arrays,
    themselves DLPack producers."""
    text = """relay.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = multiply(%x, %y) : tensor<4x8xf32>
  return %0
}"""
    cm = build(text, progress=False)
    x, y = rand((4, 8), 4), rand((4, 8), 5)
    r = cm.run(_DLPackOnly(x), _DLPackOnly(y))
    np.testing.assert_allclose(r, x * y, rtol=1e-6)
    np.testing.assert_array_equal(np.from_dlpack(_DLPackOnly(r)), r)
    out = np.empty((4, 8), np.float32)
    cm.run(_DLPackOnly(x), y, out=_DLPackOnly(out))
    np.testing.assert_allclose(out, x * y, rtol=1e-6)
