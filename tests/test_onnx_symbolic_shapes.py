"""Shapes computed in the graph from Shape ops stay symbolic: the exporters'
ConstantOfShape, Expand, Reshape, Range and Gather over '?' dimensions
(transformers' GPT-2 masks and views) compile once, with nothing left to
numpy or the interpreter, and equal onnxruntime at every length."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import tvmd.frontend.onnx_backend as backend

F, I64 = TensorProto.FLOAT, TensorProto.INT64
N = helper.make_node


def _model(nodes, ins, outs, inits=()):
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes, "sym", [vi(n, t, s) for n, t, s in ins], [vi(n, t, None) for n, t in outs],
                          initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _dim(x, axis, out):
    """Shape(x)[axis] as a 1-element tensor, as exporters spell x.size(axis)."""
    return [N("Shape", [x], [out + "_s"]), N("Gather", [out + "_s", out + "_i"], [out + "_g"], axis=0),
            N("Unsqueeze", [out + "_g", "zero"], [out])], [(out + "_i", np.array(axis, np.int64))]


def _cases():
    zero = [("zero", np.array([0], np.int64))]
    # ConstantOfShape(Shape(ids)): ones_like(ids), HF's default attention mask
    yield "constant_of_shape", _model(
        [N("Shape", ["ids"], ["s"]),
         N("ConstantOfShape", ["s"], ["ones"], value=numpy_helper.from_array(np.array([1], np.int64))),
         N("Add", ["ids", "ones"], ["y"])],
        [("ids", I64, [1, "seq"])], [("y", I64)]), lambda n, r: {"ids": r.integers(0, 9, (1, n))}
    # Gather of a position counted from the end of a '?' axis
    yield "gather_negative", _model(
        [N("Gather", ["x", "idx"], ["y"], axis=1)],
        [("x", F, [2, "seq", 3]), ("idx", I64, [4])], [("y", F)]), \
        lambda n, r: {"x": r.standard_normal((2, n, 3)).astype(np.float32),
                      "idx": r.integers(-n, n, 4)}
    # Expand to where(s == -1, 1, s) of a shape made of dims (HF's causal mask)
    d0, i0 = _dim("x", 1, "d0")
    yield "expand", _model(
        d0 + [N("Concat", ["one", "one", "d0", "d0"], ["s"], axis=0),
              N("Equal", ["s", "minus"], ["eq"]), N("Where", ["eq", "ones4", "s"], ["t"]),
              N("Expand", ["b", "t"], ["e"]), N("Cast", ["e"], ["y"], to=F)],
        [("x", F, [1, "seq", 4]), ("b", TensorProto.BOOL, [1, 1, 1, "seq"])], [("y", F)],
        zero + i0 + [("one", np.array([1], np.int64)), ("minus", -np.ones(4, np.int64)),
                     ("ones4", np.ones(4, np.int64))]), \
        lambda n, r: {"x": r.standard_normal((1, n, 4)).astype(np.float32), "b": r.random((1, 1, 1, n)) < 0.5}
    # Range to a static size of a tensor with '?' dims (the batch of 1)
    d0, i0 = _dim("x", 0, "d0")
    yield "range_static_dim", _model(
        d0 + [N("Squeeze", ["d0", "zero"], ["lim"]), N("Range", ["start", "lim", "step"], ["r"]),
              N("Cast", ["r"], ["rf"], to=F), N("Add", ["x", "rf"], ["y"])],
        [("x", F, [1, "seq"])], [("y", F)],
        zero + i0 + [("start", np.array(0, np.int64)), ("step", np.array(1, np.int64))]), \
        lambda n, r: {"x": r.standard_normal((1, n)).astype(np.float32)}
    # V viewed with the sizes of K, a sibling of one split (GPT-2's c_attn)
    d0, i0 = _dim("k", 1, "d0")
    yield "split_siblings", _model(
        [N("Split", ["x"], ["q", "k", "v"], axis=2)] + d0 +
        [N("Concat", ["one", "d0", "minus1", "two"], ["s"], axis=0), N("Reshape", ["v", "s"], ["v4"]),
         N("Transpose", ["v4"], ["y"], perm=[0, 2, 1, 3])],
        [("x", F, [1, "seq", 12])], [("y", F)],
        zero + i0 + [("one", np.array([1], np.int64)), ("minus1", np.array([-1], np.int64)),
                     ("two", np.array([2], np.int64))]), \
        lambda n, r: {"x": r.standard_normal((1, n, 12)).astype(np.float32)}


    # MatMul of (?, ?, K) rows by a weight: nn.dense over the rows as they are
    yield "matmul_rows", _model(
        [N("MatMul", ["x", "w"], ["y"])], [("x", F, ["b", "seq", 8])], [("y", F)],
        [("w", np.arange(32, dtype=np.float32).reshape(8, 4) / 32)]), \
        lambda n, r: {"x": r.standard_normal((1 + n % 3, n, 8)).astype(np.float32)}
    # GatherElements along a '?' axis, negative indices counted from its end
    yield "gather_elements", _model(
        [N("GatherElements", ["x", "idx"], ["y"], axis=1)],
        [("x", F, [2, "seq"]), ("idx", I64, [2, "k"])], [("y", F)]), \
        lambda n, r: {"x": r.standard_normal((2, n)).astype(np.float32), "idx": r.integers(-n, n, (2, 5))}


CASES = {name: (model, feeds) for name, model, feeds in _cases()}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_shape_made_of_dimensions_compiles_once(case):
    model, feeds = CASES[case]
    rep = backend.prepare(model)
    assert rep.builds == 1 and rep._dynamic is not None
    compiled = rep._dynamic.run.compiled
    assert not compiled.interpreted, compiled.summary()
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    for n in (1, 7, 64):
        f = feeds(n, rng)
        got, want = rep.run(f), sess.run(None, f)
        for a, b in zip(got, want):
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    assert rep.builds == 1
    assert not [op.name for op in rep._dynamic.module.walk() if op.name.startswith("relay.dyn.")], \
        "a shape read from values at run time"


def _export(model, call, inputs, output):
    """ONNX bytes of `call(model, *inputs)` through torch.onnx.export
    (TorchScript), every input's and the output's axis 1 dynamic ("seq")."""
    import io
    import warnings

    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *xs):
            return call(self.model, *xs)
    buf = io.BytesIO()
    names = list(inputs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Wrapped(), tuple(inputs.values()), buf, input_names=names, output_names=[output],
                          dynamic_axes={n: {1: "seq"} for n in names + [output]}, opset_version=17, dynamo=False)
    return buf.getvalue()


def _prepare(model):
    import onnx
    rep = backend.prepare(onnx.load_from_string(model))
    assert rep._dynamic is not None
    return rep, rep._dynamic.run.compiled, ort.InferenceSession(model, providers=["CPUExecutionProvider"])


def test_transformers_gpt2_exported_with_a_dynamic_sequence_compiles_once():
    """transformers' GPT-2 (two layers, random weights) through
    torch.onnx.export with a dynamic sequence axis: its masks (arange
    compares, Expand, index arithmetic on the padding mask) and views stay
    symbolic, both attentions fuse, one build serves every length."""
    torch = pytest.importorskip("torch")
    tf = pytest.importorskip("transformers")
    cfg = tf.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=97, n_positions=512, bos_token_id=0,
                        eos_token_id=0)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    model = _export(tf.GPT2LMHeadModel(cfg).eval(),
                    lambda lm, ids: lm(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False).logits,
                    {"ids": torch.zeros(1, 5, dtype=torch.int64)}, "logits")
    rep, compiled, sess = _prepare(model)
    assert not compiled.interpreted, compiled.summary()
    rng = np.random.default_rng(2)
    for n in (1, 7, 64, 300):
        ids = rng.integers(0, 97, (1, n)).astype(np.int64)
        np.testing.assert_allclose(rep.run({"ids": ids})[0], sess.run(None, {"ids": ids})[0], rtol=1e-4, atol=1e-4)
    assert rep.builds == 1
    assert compiled.stats["fuse-attention"]["attentions-fused"] == 2   # both layers' softmax(Q Kᵀ + mask) V


def test_transformers_bert_exported_with_a_dynamic_sequence_compiles_once():
    """transformers' BERT (two layers, random weights) the same way: its
    position_ids[:, :seq] slice of a buffer is dyn.slice (numpy, said
    once), the rest compiled (the token types gathered along a '?' axis,
    the attention's products followed through batch_matmul); both
    attentions fused; one build; padding masks equal onnxruntime."""
    torch = pytest.importorskip("torch")
    tf = pytest.importorskip("transformers")
    cfg = tf.BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128,
                        vocab_size=97)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    ids = torch.zeros(1, 5, dtype=torch.int64)
    model = _export(tf.BertModel(cfg).eval(), lambda bert, i, m: bert(input_ids=i, attention_mask=m).last_hidden_state,
                    {"ids": ids, "mask": torch.ones_like(ids)}, "h")
    rep, compiled, sess = _prepare(model)
    assert [name for name, _ in compiled.interpreted] == ["fused_dyn_slice"], compiled.summary()
    assert compiled.stats["fuse-attention"]["attentions-fused"] == 2
    rng = np.random.default_rng(3)
    for n in (1, 7, 64, 300):
        f = {"ids": rng.integers(0, 97, (1, n)), "mask": (rng.random((1, n)) < 0.8).astype(np.int64)}
        f["mask"][0, 0] = 1
        np.testing.assert_allclose(rep.run(f)[0], sess.run(None, f)[0], rtol=1e-4, atol=1e-4)
    assert rep.builds == 1
