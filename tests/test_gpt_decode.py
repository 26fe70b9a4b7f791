"""Greedy decoding with a KV cache: one build of a decoder with dynamic
sequence and past lengths serves the prompt and every one-token step, and
its 20 tokens equal onnxruntime's (logits compared at each step too)."""

import numpy as np
import onnxruntime as ort

import tvmd.frontend.onnx_backend as backend
from tvmd.testing.gpt_decoder import decoder, generate


def test_twenty_greedy_tokens_equal_onnxruntime():
    model = decoder(layers=2, hidden=64, heads=2, vocab=100)
    rep = backend.prepare(model)
    compiled = rep._dynamic.run.compiled
    assert not compiled.interpreted, compiled.summary()
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    steps = []

    def ours(feeds):
        got = dict(zip(rep.output_names, rep.run(feeds)))
        want = dict(zip(names, sess.run(None, feeds)))
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-4, err_msg=k)
        steps.append(feeds["input_ids"].shape[1])
        return got
    prompt = [3, 14, 15, 92, 65, 35, 89, 79]
    got = generate(ours, model, prompt, 20)
    want = generate(lambda feeds: dict(zip(names, sess.run(None, feeds))), model, prompt, 20)
    assert got == want
    assert steps == [8] + [1] * 19
    assert rep.builds == 1
