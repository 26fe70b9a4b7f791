"""A GPT-style decoder with a KV cache, as an ONNX model built in code, and
greedy generation through any engine.

The model (``decoder(...)``) takes

    input_ids       int64   [1, seq]            the new tokens
    position_ids    int64   [1, seq]            their positions (past .. past + seq - 1)
    attention_mask  float32 [1, 1, seq, total]  additive: 0 to attend, float32's lowest
                                                not (causal, as GPT-2's code masks)
    past_k{i}, past_v{i}  float32 [1, past, heads, head_dim]   per layer

and returns ``logits`` [1, seq, vocab] and ``present_k{i}``, ``present_v{i}``
[1, total, heads, head_dim] (total = past + seq): the past with the new
keys and values appended (Concat along the sequence axis).  ``seq``,
``past`` and ``total`` are dynamic (``dim_param``): one model serves the
prompt (prefill: many tokens, no past) and each decoding step (one token).
The cache keeps the sequence axis before the heads, so that the past is
the leading part of the present.

Each block is pre-LayerNorm: x + proj(attention(LN(x))), then
x + MLP(LN(x)) with GELU's tanh form; the LM head is tied to the token
embedding.  ``generate(run, model_inputs, prompt, n)`` decodes greedily
with ``run(feeds) -> {name: array}`` (tvmd's ONNX backend or
onnxruntime).
"""

from __future__ import annotations

import numpy as np

from .onnx_zoo import GraphBuilder, dense, gelu_tanh, layer_norm, tensor_info


def decoder(layers=2, hidden=64, heads=2, vocab=100, max_pos=128, seed=0):
    g = GraphBuilder(seed, True)
    dh = hidden // heads
    wte = (g.rng.standard_normal((vocab, hidden)) * 0.1).astype(np.float32)
    x = g.node("Gather", [g.const(wte), "input_ids"], axis=0)
    x = g.node("Add", [x, g.node("Gather", [g.weight((max_pos, hidden), 0.05), "position_ids"], axis=0)])
    inputs = [tensor_info("input_ids", [1, "seq"], np.int64), tensor_info("position_ids", [1, "seq"], np.int64),
              tensor_info("attention_mask", [1, 1, "seq", "total"])]
    outputs = []
    for i in range(layers):
        qkv = dense(g, layer_norm(g, x, hidden), hidden, 3 * hidden)
        q, k, v = (g.node("Reshape", [t, g.ints([1, -1, heads, dh])])
                   for t in g.nodes_out("Split", [qkv, g.ints([hidden] * 3)], 3, axis=-1))
        pk, pv = f"past_k{i}", f"past_v{i}"
        inputs += [tensor_info(pk, [1, "past", heads, dh]), tensor_info(pv, [1, "past", heads, dh])]
        k = g.node("Concat", [pk, k], axis=1)
        v = g.node("Concat", [pv, v], axis=1)
        outputs += [(k, f"present_k{i}"), (v, f"present_v{i}")]
        qh = g.node("Transpose", [q], perm=[0, 2, 1, 3])            # [1, heads, seq, dh]
        kt = g.node("Transpose", [k], perm=[0, 2, 3, 1])            # [1, heads, dh, total]
        s = g.node("Mul", [g.node("MatMul", [qh, kt]), g.scalar(dh ** -0.5)])
        p = g.node("Softmax", [g.node("Add", [s, "attention_mask"])], axis=-1)
        ctx = g.node("MatMul", [p, g.node("Transpose", [v], perm=[0, 2, 1, 3])])
        ctx = g.node("Reshape", [g.node("Transpose", [ctx], perm=[0, 2, 1, 3]), g.ints([1, -1, hidden])])
        x = g.node("Add", [x, dense(g, ctx, hidden, hidden)])
        f = dense(g, gelu_tanh(g, dense(g, layer_norm(g, x, hidden), hidden, 4 * hidden)), 4 * hidden, hidden)
        x = g.node("Add", [x, f])
    logits = g.node("MatMul", [layer_norm(g, x, hidden), g.const(np.ascontiguousarray(wte.T))])
    # the graph's outputs under their names, through an Identity each
    g.nodes.append(_identity(logits, "logits"))
    outs = [tensor_info("logits", [1, "seq", vocab])]
    for src, name in outputs:
        g.nodes.append(_identity(src, name))
        outs.append(tensor_info(name, [1, "total", heads, dh]))
    return g.model(inputs, outs)


def _identity(src, name):
    from onnx import helper
    return helper.make_node("Identity", [src], [name])


def shapes(model):
    """(layers, heads, head_dim) read back from the model's inputs."""
    ks = [vi for vi in model.graph.input if vi.name.startswith("past_k")]
    d = ks[0].type.tensor_type.shape.dim
    return len(ks), d[2].dim_value, d[3].dim_value


def step_feeds(tokens, past, cache):
    """The feeds of one step: `tokens` new ids after `past` cached ones."""
    n = len(tokens)
    total = past + n
    mask = np.zeros((1, 1, n, total), np.float32)
    mask[0, 0][np.arange(total)[None, :] > past + np.arange(n)[:, None]] = np.finfo(np.float32).min
    feeds = {"input_ids": np.array([tokens], np.int64),
             "position_ids": np.arange(past, total, dtype=np.int64)[None],
             "attention_mask": mask}
    feeds.update(cache)
    return feeds


def empty_cache(model):
    """The past of a first step: every layer's keys and values, no rows."""
    layers, heads, dh = shapes(model)
    empty = np.zeros((1, 0, heads, dh), np.float32)
    return {f"past_{kv}{i}": empty for i in range(layers) for kv in "kv"}


def next_cache(outputs):
    """The next step's past: a step's present keys and values (`outputs`
    by name)."""
    return {k.replace("present_", "past_", 1): v for k, v in outputs.items() if k.startswith("present_")}


def generate(run, model, prompt, n):
    """Greedy decoding: the prompt in one step, then one token a step; the
    present keys and values of each step are the next step's past.
    Returns the `n` new token ids."""
    cache = empty_cache(model)
    tokens, past, out = list(prompt), 0, []
    for _ in range(n):
        res = run(step_feeds(tokens, past, cache))
        nxt = int(np.argmax(res["logits"][0, -1]))
        out.append(nxt)
        past += len(tokens)
        cache = next_cache(res)
        tokens = [nxt]
    return out
