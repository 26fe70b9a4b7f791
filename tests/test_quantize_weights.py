"""Weight-only int8 (--quantize-weights, build(quantize_weights="int8")):
the weights rounded as their definition says, the compiled product equal
to numpy's over the dequantized weights at every row count, one build for
'?' rows, and a GPT-style decoder equal to onnxruntime running the same
dequantized weights."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tvmd.dialects.relay.passes.alter_op_layout import pack_panels
from tvmd.dialects.relay.passes.quantize_weights import quantize_rows
from tvmd.runtime.build import build


def dequantized(w):
    """w (N x K) through the definition, written out here: per row, scale
    max|w| / 127 (1 for a zero row), the weights rounded to nearest even."""
    w = np.asarray(w, np.float64)
    out = np.empty_like(w)
    for j, row in enumerate(w):
        s = np.float32(np.float32(np.abs(row).max()) / np.float32(127)) if np.abs(row).max() > 0 else 1.0
        out[j] = np.rint(row.astype(np.float32) / np.float32(s)) * np.float64(np.float32(s))
    return out


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 9), st.integers(1, 40), st.integers(0, 2 ** 31 - 1))
def test_each_row_rounds_to_127_steps_of_its_largest(n, k, seed):
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((n, k)) * 10.0 ** rng.uniform(-3, 3)).astype(np.float32)
    w[rng.random(n) < 0.2] = 0.0
    q, s = quantize_rows(w)
    assert q.dtype == np.int8 and s.dtype == np.float32 and s.shape == (n,)
    assert np.abs(q.astype(int)).max(initial=0) <= 127
    for j in range(n):
        if np.abs(w[j]).max() > 0:
            assert np.abs(q[j].astype(int)).max() == 127
            assert np.all(np.abs(w[j] - q[j] * s[j].astype(np.float64)) <= s[j] * (0.5 + 1e-6))
        else:
            assert s[j] == 1 and not q[j].any()
    np.testing.assert_array_equal(q * s[:, None].astype(np.float64), dequantized(w))


def test_panels_hold_each_column_contiguous_per_k():
    q = np.arange(5 * 3, dtype=np.int8).reshape(5, 3)
    p = pack_panels(q, 4)
    assert p.shape == (2, 3, 4)
    for j in range(8):
        for k in range(3):
            assert p[j // 4, k, j % 4] == (q[j, k] if j < 5 else 0)


def _model(rows, k, n, matmul=False, bias=True):
    from tvmd.ir.attributes import DenseAttr
    from tvmd.parser import parse_module
    wshape = f"{k}x{n}" if matmul else f"{n}x{k}"
    prod = (f"nn.matmul(%x, %w) : tensor<{rows}x{n}xf32>" if matmul
            else f"nn.dense(%x, %w) : tensor<{rows}x{n}xf32>")
    text = (f"relay.func @main(%x: tensor<{rows}x{k}xf32>, %b: tensor<{n}xf32>) -> tensor<{rows}x{n}xf32> {{\n"
            f"  %w = constant dense<0.0> : tensor<{wshape}xf32>\n  %y = {prod}\n"
            + (f"  %z = nn.bias_add(%y, %b) {{axis = -1}} : tensor<{rows}x{n}xf32>\n  %r = nn.relu(%z) : "
               f"tensor<{rows}x{n}xf32>\n  return %r\n}}\n" if bias else "  return %y\n}\n"))
    m = parse_module(text)
    rng = np.random.default_rng(k * n)
    w = rng.standard_normal((n, k)).astype(np.float32)
    c = next(op for op in m.lookup("main").body.ops if op.name == "relay.constant")
    c.attributes["value"] = DenseAttr(np.ascontiguousarray(w.T) if matmul else w, c.results[0].type)
    return m, w


def _reference(x, w, b):
    return np.maximum(x.astype(np.float64) @ dequantized(w).T + b, 0)


def test_one_build_serves_every_row_count_with_the_rounded_weights():
    """'?' rows: one build, at 1, 7, 64 and 300 rows equal to numpy over
    the dequantized weight (and not the float32 one); 100 columns (no
    panel divides: padded, units leaves them off); the scale, bias and
    relu fused into the product's kernel."""
    m, w = _model("?", 96, 100)
    cm = build(m, quantize_weights="int8", fallback=False)
    assert cm.stats["quantize-weights"]["weights-quantized"] == 1
    assert [f.sym_name for f in cm.module.body.ops if f.name == "tir.func"] == \
        ["fused_nn_contrib_dense_pack_multiply_nn_bias_add_nn_relu"]
    rng = np.random.default_rng(3)
    b = rng.standard_normal(100).astype(np.float32)
    for rows in (1, 7, 64, 300):
        x = rng.standard_normal((rows, 96)).astype(np.float32)
        got = cm.run(x, b)
        want = _reference(x, w, b)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
        assert np.abs(got - np.maximum(x @ w.T + b, 0)).max() > 1e-3   # the int8 weights, not float32's


@pytest.mark.parametrize("rows,k,n,matmul", [(1, 64, 48, False), (3, 40, 17, False), (20, 128, 64, False),
                                             (5, 32, 96, True), (16, 256, 1000, True)])
def test_static_rows_and_matmul_forms(rows, k, n, matmul):
    m, w = _model(rows, k, n, matmul)
    cm = build(m, quantize_weights="int8", fallback=False)
    assert cm.stats["quantize-weights"]["weights-quantized"] == 1
    rng = np.random.default_rng(rows)
    x, b = rng.standard_normal((rows, k)).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    np.testing.assert_allclose(cm.run(x, b), _reference(x, w, b), rtol=1e-5, atol=1e-4)


def test_the_interpreter_agrees():
    """The relay after the pass, run by the relay interpreter (the op's
    compute over the int8 weight), equals numpy."""
    from tvmd.dialects.relay.interpreter import run_function
    from tvmd.dialects.relay.passes.quantize_weights import QuantizeWeights
    from tvmd.ir.pass_manager import PassContext
    m, w = _model(2, 24, 40)
    QuantizeWeights().run(m, PassContext())
    names = [op.name for op in m.lookup("main").body.ops]
    assert "relay.nn.contrib_dense_pack" in names and "relay.nn.dense" not in names
    rng = np.random.default_rng(9)
    x, b = rng.standard_normal((2, 24)).astype(np.float32), rng.standard_normal(40).astype(np.float32)
    got = run_function(m, "main", x, b)
    np.testing.assert_allclose(np.asarray(got), _reference(x, w, b), rtol=1e-5, atol=1e-5)


def test_bad_options_are_errors():
    m, _ = _model(2, 8, 8)
    with pytest.raises(ValueError, match="'int8', not 'int4'"):
        build(m, quantize_weights="int4")
    with pytest.raises(ValueError, match="do not combine"):
        build(m, quantize_weights="int8", mixed_precision="bfloat16")
    with pytest.raises(ValueError, match="needs an llvm target"):
        build(m, target="cuda", quantize_weights="int8")


def test_a_decoder_with_int8_weights_equals_onnxruntime_on_the_same_weights():
    """The GPT-style decoder through the ONNX backend with quantize_weights:
    one build for a prompt and three decoding steps, nothing interpreted,
    the logits and caches equal to onnxruntime's for the model whose
    MatMul weights are replaced by their dequantized values (the weight
    [K, N]: one scale per output column)."""
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    import tvmd.frontend.onnx_backend as backend
    from tvmd.testing.gpt_decoder import decoder, empty_cache, next_cache, step_feeds
    model = decoder(layers=2, hidden=64, heads=2, vocab=100)
    ref = onnx.ModelProto()
    ref.CopyFrom(model)
    inits = {i.name for i in ref.graph.initializer if len(i.dims) == 2}
    weights = {n.input[1] for n in ref.graph.node if n.op_type == "MatMul"} & inits
    for init in ref.graph.initializer:
        a = numpy_helper.to_array(init)
        if init.name in weights and a.ndim == 2:
            init.CopyFrom(numpy_helper.from_array(dequantized(a.T).T.astype(np.float32), init.name))
    rep = backend.prepare(model, compile_options={"quantize_weights": "int8", "fallback": False})
    sess = ort.InferenceSession(ref.SerializeToString(), providers=["CPUExecutionProvider"])
    plain = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    past = empty_cache(model)
    rng = np.random.default_rng(2)
    for n in (9, 1, 1, 1):
        feeds = step_feeds([int(t) for t in rng.integers(0, 100, n)], next(iter(past.values())).shape[1], past)
        got, want = rep.run(feeds), sess.run(None, feeds)
        for g, r in zip(got, want):
            np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4)
        assert np.abs(got[0] - plain.run(None, feeds)[0]).max() > 1e-4   # not the float32 weights
        past = next_cache(got._asdict())
    assert rep.builds == 1
    assert rep._dynamic.run.compiled.stats["quantize-weights"]["weights-quantized"] == len(weights)
