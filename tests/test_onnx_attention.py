"""ONNX's Attention (opset 23) imported as one nn.attention
(frontend/onnx/converters/attention.py), checked against onnxruntime: 4-d
and 3-d operands, causal masks with and without a KV cache (whose
presents are outputs), bool and float masks (a row that sees no key is 0,
as ONNX defines it), grouped-query heads (read in place, no repeat), a
scale; one build serves every
sequence length; what it leaves to the op's function body says so."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import tvmd.frontend.onnx_backend as backend
from tvmd.frontend.onnx import from_onnx
from tvmd.frontend.onnx.errors import OnnxImportError

F = TensorProto.FLOAT


def attention_model(rank, causal=False, mask=None, past=False, qh=4, kh=4, dyn=True, **attrs):
    """One Attention node over Q, K, V (head size 8, batch 2) with '?'
    sequence lengths (s, the past p, the mask's total t) when `dyn`."""
    s, p, t = ("s", "p", "t") if dyn else (5, 3, 8 if past else 5)
    if rank == 4:
        shapes = [[2, qh, s, 8], [2, kh, s, 8], [2, kh, s, 8]]
    else:
        shapes = [[2, s, qh * 8], [2, s, kh * 8], [2, s, kh * 8]]
        attrs.update(q_num_heads=qh, kv_num_heads=kh)
    ins = [helper.make_tensor_value_info(n, F, sh) for n, sh in zip("qkv", shapes)]
    names = ["q", "k", "v", ""]
    if mask is not None:
        ins.append(helper.make_tensor_value_info("m", TensorProto.BOOL if mask == "bool" else F, [s, t]))
        names[3] = "m"
    outs = ["y"]
    if past:
        ins += [helper.make_tensor_value_info(n, F, [2, kh, p, 8]) for n in ("pk", "pv")]
        names += ["pk", "pv"]
        outs += ["present_k", "present_v"]
    while names[-1] == "":
        names.pop()
    node = helper.make_node("Attention", names, outs, is_causal=int(causal), **attrs)
    graph = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info(n, F, None) for n in outs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])


def feeds_for(model, s, past, rng, empty_row=False):
    sizes = {"s": s, "p": 3, "t": s + (3 if past else 0)}
    feeds = {}
    for vi in model.graph.input:
        dims = [d.dim_value or sizes[d.dim_param] for d in vi.type.tensor_type.shape.dim]
        if vi.type.tensor_type.elem_type == TensorProto.BOOL:
            m = rng.random(dims) > 0.4
            if empty_row:
                m[1] = False   # query 1 sees no key
            feeds[vi.name] = m
        else:
            feeds[vi.name] = rng.standard_normal(dims).astype(np.float32)
    return feeds


CASES = {
    "4d": dict(rank=4),
    "4d-causal": dict(rank=4, causal=True),
    "3d-causal": dict(rank=3, causal=True),
    "cache-causal": dict(rank=4, causal=True, past=True),
    "bool-mask": dict(rank=4, mask="bool"),
    "float-mask-causal": dict(rank=4, causal=True, mask="float"),
    "gqa": dict(rank=4, causal=True, kh=2),
    "3d-mqa-cache": dict(rank=3, causal=True, past=True, kh=1),
    "scale": dict(rank=4, scale=0.3),
}


@pytest.mark.parametrize("case", CASES)
def test_attention_equals_onnxruntime_at_every_length(case):
    c = CASES[case]
    model = attention_model(**c)
    relay = str(from_onnx(model))
    assert relay.count("nn.attention(") == 1 and "nn.softmax" not in relay and "repeat(" not in relay
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rep = backend.prepare(model)
    rng = np.random.default_rng(len(case))
    for s in (5, 9, 1):
        feeds = feeds_for(model, s, c.get("past"), rng)
        for got, want in zip(rep.run(feeds), sess.run(None, feeds)):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert rep.builds == 1


def test_a_row_that_sees_no_key_is_zero():
    model = attention_model(4, mask="bool")
    feeds = feeds_for(model, 6, False, np.random.default_rng(5), empty_row=True)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = backend.prepare(model).run(feeds)[0]
    assert np.all(want[:, :, 1] == 0) and np.all(got[:, :, 1] == 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_softcap_goes_through_the_function_body_and_says_so(capfd):
    model = attention_model(4, causal=True, dyn=False, softcap=2.0)
    relay = str(from_onnx(model))
    assert "nn.attention(" not in relay and "tanh" in relay
    assert capfd.readouterr().err.count("Attention nodes with softcap are converted through") == 1
    feeds = feeds_for(model, 5, False, np.random.default_rng(0))
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(backend.prepare(model).run(feeds)[0], want[0], rtol=1e-5, atol=1e-5)


def test_three_d_operands_need_their_head_counts():
    model = attention_model(3)
    node = model.graph.node[0]
    del node.attribute[:]
    with pytest.raises(OnnxImportError, match="3-d Q, K and V need the q_num_heads and kv_num_heads"):
        from_onnx(model)
